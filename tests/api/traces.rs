//! Traces, from the process: `serve --otlp-endpoint` (or the `OTEL_*` variables) sends a span per
//! request, named after its GraphQL operation, with a child span per storage call, to an OTLP
//! receiver over HTTP. The receiver here is a small axum server on loopback that decodes what it
//! gets with the protocol's own message types.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, ChildStderr, Command};

/// One span as received, with its service's name.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    kind: i32,
    attributes: HashMap<String, String>,
    failed: bool,
}

type Inbox = Arc<Mutex<Vec<Received>>>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes
        .iter()
        .filter_map(|kv| {
            let value = match kv.value.as_ref()?.value.as_ref()? {
                AnyValue::StringValue(s) => s.clone(),
                AnyValue::IntValue(i) => i.to_string(),
                AnyValue::DoubleValue(d) => d.to_string(),
                AnyValue::BoolValue(b) => b.to_string(),
                other => format!("{other:?}"),
            };
            Some((kv.key.clone(), value))
        })
        .collect()
}

async fn receive(State(inbox): State<Inbox>, body: Bytes) -> Vec<u8> {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
    let mut inbox = inbox.lock().expect("inbox");
    for resource_spans in request.resource_spans {
        let resource = text(
            &resource_spans
                .resource
                .map(|r| r.attributes)
                .unwrap_or_default(),
        );
        let service = resource.get("service.name").cloned().unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                inbox.push(Received {
                    service: service.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    name: span.name.clone(),
                    kind: span.kind,
                    attributes: text(&span.attributes),
                    failed: span.status.is_some_and(|s| s.code == 2),
                });
            }
        }
    }
    // An empty ExportTraceServiceResponse: everything was accepted.
    Vec::new()
}

/// An OTLP/HTTP receiver on loopback: its base URL and what it has received.
async fn receiver() -> (String, Inbox) {
    let inbox = Inbox::default();
    let router = axum::Router::new()
        .route("/v1/traces", post(receive))
        .with_state(inbox.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, inbox)
}

/// `tablegraph serve --memory` with `args` and `env`; answers the process, the URL it listens on
/// and its log.
async fn serve(args: &[&str], env: &[(&str, &str)]) -> (Child, String, ChildStderr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tablegraph"));
    command
        .args(["serve", "--memory", "--listen", "127.0.0.1:0"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("TABLEGRAPH_DYNAMODB_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_SDK_DISABLED")
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("serve starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let url = loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).await.expect("readable log");
        assert!(read > 0, "serve exited before listening");
        if let Some(url) = line.split("listening on ").nth(1) {
            break url.trim().to_owned();
        }
    };
    (child, url, stderr.into_inner())
}

async fn graphql(url: &str, body: Value, traceparent: Option<&str>) -> Value {
    let mut request = reqwest::Client::new().post(url).json(&body);
    if let Some(parent) = traceparent {
        request = request.header("traceparent", parent);
    }
    request
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("JSON")
}

fn spans_named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn children<'a>(spans: &'a [Received], parent: &Received) -> Vec<&'a Received> {
    spans
        .iter()
        .filter(|s| s.parent_span_id == parent.span_id && s.trace_id == parent.trace_id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_span_per_operation_with_a_child_span_per_storage_call() {
    let (collector, inbox) = receiver().await;
    let (child, url, stderr) = serve(&["--otlp-endpoint", &collector], &[]).await;

    let created = graphql(
        &url,
        json!({ "query": "mutation AddFarm { createFarm(input: { name: \"Traced\" }) { id } }" }),
        None,
    )
    .await;
    let id = created["data"]["createFarm"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("created: {created}"))
        .to_owned();
    // A client that traces sends its span as `traceparent`: the request joins that trace.
    let client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let read = graphql(
        &url,
        json!({
            "query": "query FarmPage($id: ID!) { farm(id: $id) { name } } \
                      query Other { farmByName(name: \"Traced\") { id } }",
            "operationName": "FarmPage",
            "variables": { "id": id },
        }),
        Some(&format!("00-{client_trace}-{client_span}-01")),
    )
    .await;
    assert_eq!(read["data"]["farm"]["name"], "Traced", "{read}");
    // SIGTERM: the server sends its last spans before it exits.
    crate::logs::stop(child, stderr).await;

    let spans = inbox.lock().expect("inbox").clone();
    assert!(
        spans.iter().all(|s| s.service == "tablegraph"),
        "the service is named: {spans:#?}"
    );

    let [mutation] = spans_named(&spans, "mutation AddFarm")[..] else {
        panic!("one span for the mutation: {spans:#?}");
    };
    assert_eq!(mutation.kind, SpanKind::Server as i32);
    assert_eq!(mutation.attributes["graphql.operation.type"], "mutation");
    assert_eq!(mutation.attributes["graphql.operation.name"], "AddFarm");
    assert_eq!(mutation.attributes["http.request.method"], "POST");
    assert_eq!(mutation.attributes["url.path"], "/graphql");
    assert_eq!(mutation.attributes["http.response.status_code"], "200");
    assert!(mutation.parent_span_id.is_empty(), "a trace of its own");
    let writes = children(&spans, mutation);
    let write = writes
        .iter()
        .find(|s| s.name == "TransactWriteItems")
        .unwrap_or_else(|| panic!("the write is a child of the mutation: {writes:#?}"));
    assert_eq!(write.kind, SpanKind::Client as i32);
    assert_eq!(write.attributes["rpc.method"], "TransactWriteItems");
    assert_eq!(write.attributes["db.system.name"], "aws.dynamodb");
    // The farm, its unique name and its type index shard's counter.
    assert_eq!(write.attributes["tablegraph.keys"], "3", "{write:#?}");
    assert!(
        write
            .attributes
            .contains_key("tablegraph.consumed_capacity"),
        "{write:#?}"
    );

    let [query] = spans_named(&spans, "query FarmPage")[..] else {
        panic!("one span for the query: {spans:#?}");
    };
    assert_eq!(query.trace_id, client_trace, "the client's trace");
    assert_eq!(query.parent_span_id, client_span, "the client's span");
    assert_eq!(query.attributes["graphql.operation.name"], "FarmPage");
    let reads = children(&spans, query);
    let [read] = reads[..] else {
        panic!("one storage call for the farm: {reads:#?}");
    };
    assert_eq!(read.name, "BatchGetItem");
    assert_eq!(read.attributes["tablegraph.keys"], "1");
    assert_eq!(read.attributes["tablegraph.items"], "1");
    assert!(!read.attributes.contains_key("aws.dynamodb.index_name"));
    assert!(!read.failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standard_variables_turn_traces_on_and_name_the_service() {
    let (collector, inbox) = receiver().await;
    let (child, url, stderr) = serve(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str()),
            ("OTEL_SERVICE_NAME", "farm-api"),
        ],
    )
    .await;
    let created = graphql(
        &url,
        json!({ "query": "mutation { createFarm(input: { name: \"Env\" }) { id } }" }),
        None,
    )
    .await;
    assert!(created["errors"].is_null(), "{created}");
    let answer = graphql(
        &url,
        json!({ "query": "{ farmByName(name: \"env\") { cows(first: 2) { edges { node { id } } } } }" }),
        None,
    )
    .await;
    assert!(answer["errors"].is_null(), "{answer}");
    // SIGTERM: the server sends its last spans before it exits.
    crate::logs::stop(child, stderr).await;

    let spans = inbox.lock().expect("inbox").clone();
    let [query] = spans_named(&spans, "query")[..] else {
        panic!("one span for the anonymous query: {spans:#?}");
    };
    assert_eq!(query.service, "farm-api");
    assert!(!query.attributes.contains_key("graphql.operation.name"));
    let calls = children(&spans, query);
    let cows = calls
        .iter()
        .find(|c| c.name == "Query")
        .unwrap_or_else(|| panic!("the cows are read with a Query: {calls:#?}"));
    assert!(
        cows.attributes["aws.dynamodb.index_name"].starts_with("GSI"),
        "on a generic index: {cows:#?}"
    );
    assert_eq!(cows.attributes["tablegraph.items"], "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_stay_off_when_the_sdk_is_disabled() {
    let (collector, inbox) = receiver().await;
    let (child, url, stderr) = serve(
        &["--otlp-endpoint", &collector],
        &[("OTEL_SDK_DISABLED", "true")],
    )
    .await;
    let answer = graphql(
        &url,
        json!({ "query": "mutation Quiet { createFarm(input: { name: \"Quiet\" }) { id } }" }),
        None,
    )
    .await;
    assert!(answer["errors"].is_null(), "{answer}");
    // SIGTERM: the server sends its last spans before it exits.
    crate::logs::stop(child, stderr).await;
    assert!(inbox.lock().expect("inbox").is_empty(), "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_other_than_http_protobuf_is_refused_at_start() {
    let output = Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args(["serve", "--memory", "--listen", "127.0.0.1:0"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env_remove("OTEL_SDK_DISABLED")
        .output()
        .await
        .expect("the binary runs");
    assert!(!output.status.success(), "serve does not start");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc") && said.contains("http/protobuf"),
        "{said}"
    );
}
