//! The HTTP surface: health, GraphiQL, GraphQL over GET and POST, limits, request ids.

use serde_json::{Value, json};
use tablegraph::config::HttpConfig;

use crate::helpers::{spawn_app, spawn_app_with};

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = spawn_app().await;
    let health = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("healthz answers");
    assert_eq!(health.status(), 200);
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("readyz answers");
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.text().await.unwrap_or_default(), "ready");
}

#[tokio::test]
async fn a_browser_gets_graphiql() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html,application/xhtml+xml")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    let page = response.text().await.unwrap_or_default();
    assert!(page.contains("/graphiql/graphiql-4.0.3.min.js"), "{page}");
    assert!(
        !page.contains("https://"),
        "the page needs no internet: {page}"
    );

    // Its assets come from the binary, cacheable for good (their names carry their versions).
    let script = app
        .client
        .get(app.url("/graphiql/graphiql-4.0.3.min.js"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(script.status(), 200);
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(
        script.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(script.bytes().await.expect("a body").len() > 1_000_000);
    let missing = app
        .client
        .get(app.url("/graphiql/graphiql-9.min.js"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(missing.status(), 404);

    // `/` leads to the page.
    let root = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client")
        .get(app.url("/"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(root.status(), 307);
    assert_eq!(root.headers()["location"], "/graphql");
}

#[tokio::test]
async fn queries_work_over_get_and_mutations_do_not() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/graphql"))
        .query(&[("query", "{ __typename }")])
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["data"]["__typename"], "Query");

    let response = app
        .client
        .get(app.url("/graphql"))
        .query(&[(
            "query",
            "mutation { createFarm(input: { name: \"Via GET\" }) { id } }",
        )])
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let body = app
        .graphql("{ farmByName(name: \"Via GET\") { id } }", json!({}))
        .await;
    assert_eq!(
        body["data"]["farmByName"],
        Value::Null,
        "nothing was written"
    );
}

#[tokio::test]
async fn posts_that_are_not_json_are_refused() {
    let app = spawn_app().await;
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("content-type", "text/plain")
        .body(r#"{"query":"mutation { createFarm(input: { name: \"Plain\" }) { id } }"}"#)
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 415);
    for body in [
        "{ not json",
        r#"[{"query":"{ __typename }"}]"#,
        r#"{"variables":{}}"#,
    ] {
        let response = app
            .client
            .post(app.url("/graphql"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("the server answers");
        assert_eq!(response.status(), 400, "{body}");
        let answer: Value = response.json().await.expect("JSON");
        assert!(answer["errors"][0]["message"].is_string(), "{answer}");
    }
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_413() {
    let app = spawn_app_with(HttpConfig {
        max_body_bytes: 1024,
        ..HttpConfig::default()
    })
    .await;
    let name = "x".repeat(2048);
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": "mutation($n: String!) { createFarm(input: { name: $n }) { id } }", "variables": { "n": name } }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 413);
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .expect("text")
        .to_owned();
    let body: Value = response.json().await.expect("a GraphQL error body");
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"],
        "PayloadTooLarge"
    );
    assert_eq!(body["errors"][0]["extensions"]["requestId"], request_id);
}

#[tokio::test]
async fn a_streamed_body_over_the_limit_is_refused_with_413_too() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let app = spawn_app_with(HttpConfig {
        max_body_bytes: 1024,
        ..HttpConfig::default()
    })
    .await;
    // No Content-Length: the limit is met while the body is read.
    let body = format!(
        r#"{{"query":"{{ __typename }}","variables":{{"n":"{}"}}}}"#,
        "x".repeat(2048)
    );
    let request = format!(
        "POST /graphql HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         transfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        app.address,
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(app.address)
        .await
        .expect("a connection");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("the request is sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("PayloadTooLarge"), "{answer}");
}

#[tokio::test]
async fn a_get_names_the_operation_to_run() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/graphql"))
        .query(&[
            (
                "query",
                "query A { a: __typename } query B { b: __typename }",
            ),
            ("operationName", "B"),
        ])
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body, json!({ "data": { "b": "Query" } }));
}

#[tokio::test]
async fn the_request_id_is_echoed_or_made() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/healthz"))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.headers()["x-request-id"], "trace-me-42");
    let response = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("answer");
    assert!(!response.headers()["x-request-id"].is_empty());
}

#[tokio::test]
async fn responses_are_compressed_when_the_client_accepts_it() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html")
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.headers()["content-encoding"], "gzip");

    // A GraphQL answer of a few kilobytes: gzipped, and the same JSON once unzipped.
    let query = json!({ "query": "{ __schema { types { name } } }" });
    let post = |encoding: &'static str| {
        app.client
            .post(app.url("/graphql"))
            .header("accept-encoding", encoding)
            .json(&query)
            .send()
    };
    let plain = post("identity").await.expect("the server answers");
    assert!(!plain.headers().contains_key("content-encoding"));
    let plain: Value = plain.json().await.expect("JSON");
    let zipped = post("br, gzip;q=0.5").await.expect("the server answers");
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    assert_eq!(zipped.headers()["vary"], "accept-encoding");
    let bytes = zipped.bytes().await.expect("a body");
    let mut unzipped = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut unzipped)
        .expect("gzip");
    assert!(bytes.len() < unzipped.len());
    assert_eq!(
        serde_json::from_slice::<Value>(&unzipped).expect("JSON"),
        plain
    );

    // Refused with q=0 (however spelled, and whatever `*` says), and never for an answer too
    // small to gain from it; `x-gzip` is gzip too. `*` names no coding, so the answer goes as
    // it is, which every client accepts.
    for refusal in [
        "gzip;q=0",
        "gzip;Q=0",
        "gzip; q=0.0, *",
        "*;q=0",
        "gzip;q=x",
    ] {
        let refused = post(refusal).await.expect("the server answers");
        assert!(
            !refused.headers().contains_key("content-encoding"),
            "{refusal}"
        );
        assert_eq!(refused.headers()["vary"], "accept-encoding", "{refusal}");
    }
    let zipped = post("x-gzip").await.expect("the server answers");
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    for wildcard in ["*", "identity;q=0.5, *;q=0.1"] {
        let plain = post(wildcard).await.expect("the server answers");
        assert!(
            !plain.headers().contains_key("content-encoding"),
            "{wildcard}"
        );
    }
    let small = app
        .client
        .post(app.url("/graphql"))
        .header("accept-encoding", "gzip")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("the server answers");
    assert!(!small.headers().contains_key("content-encoding"));
    assert_eq!(
        small.json::<Value>().await.expect("JSON")["data"]["__typename"],
        "Query"
    );
}

#[tokio::test]
async fn metrics_are_compressed_for_scrapers_that_accept_it() {
    let app = spawn_app().await;
    app.graphql("{ __typename }", json!({})).await;
    let response = app
        .client
        .get(app.url("/metrics"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let bytes = response.bytes().await.expect("a body");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
        .expect("gzip");
    assert!(text.contains("# TYPE"), "{text}");
}

#[tokio::test]
async fn browsers_on_other_origins_may_call_the_api() {
    let app = spawn_app().await;
    let response = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/graphql"))
        .header("origin", "https://farm.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type, x-api-key")
        .send()
        .await
        .expect("the server answers");
    assert!(response.status().is_success());
    let headers = response.headers();
    assert_eq!(headers["access-control-allow-origin"], "*");
    let allowed = |name: &str| headers[name].to_str().unwrap_or_default().to_owned();
    assert!(allowed("access-control-allow-methods").contains("POST"));
    for header in ["content-type", "authorization", "x-api-key"] {
        assert!(allowed("access-control-allow-headers").contains(header));
    }
    assert!(!headers["x-request-id"].is_empty());

    // What Apollo Client, Amplify and trace-joining clients send on every request.
    let sent = [
        "traceparent",
        "tracestate",
        "x-request-id",
        "apollographql-client-name",
        "apollographql-client-version",
        "x-amz-user-agent",
        "x-amz-date",
        "x-amz-security-token",
    ];
    let response = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/graphql"))
        .header("origin", "https://farm.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", sent.join(","))
        .send()
        .await
        .expect("the server answers");
    let allowed = response.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    for header in sent {
        assert!(allowed.contains(header), "{header} not in {allowed}");
    }
    assert!(!allowed.contains("x-tenant"), "{allowed}");

    // Without the preflight headers, OPTIONS still answers what the API allows.
    let response = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/graphql"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["access-control-allow-methods"]
            .to_str()
            .unwrap_or_default()
            .contains("POST")
    );

    // The request itself, and its answer readable by the page.
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("origin", "https://farm.example")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    // The page's script may read the request id of the answer, and AppSync's error type.
    assert_eq!(
        response.headers()["access-control-expose-headers"],
        "x-request-id,x-amzn-errortype"
    );
    assert!(
        response.headers()["vary"]
            .to_str()
            .unwrap_or_default()
            .contains("origin")
    );
}

#[tokio::test]
async fn storage_calls_are_reported_only_when_allowed() {
    let app = spawn_app_with(HttpConfig {
        expose_storage_calls: false,
        ..HttpConfig::default()
    })
    .await;
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("x-tablegraph-storage-calls", "1")
        .json(&json!({ "query": "{ farm(id: \"x\") { id } }" }))
        .send()
        .await
        .expect("the server answers");
    let body: Value = response.json().await.expect("JSON");
    assert!(body["extensions"].is_null(), "{body}");
    let app = spawn_app().await;
    let (_, calls) = app
        .graphql_counted("{ farm(id: \"x\") { id } }", json!({}))
        .await;
    assert_eq!(calls, ["BatchGetItem"]);
}

#[tokio::test]
async fn metrics_count_storage_calls_by_operation_with_latencies() {
    let app = spawn_app().await;
    app.graphql(
        "mutation { createFarm(input: { name: \"Metered\" }) { id } }",
        json!({}),
    )
    .await;
    app.graphql("{ farmByName(name: \"metered\") { id } }", json!({}))
        .await;
    let response = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("metrics answer");
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("text");
    let count = |operation: &str| -> u64 {
        let prefix = format!("tablegraph_storage_calls_total{{operation=\"{operation}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(count("TransactWriteItems"), 1, "{text}");
    // The unique-value item, then the farm.
    assert_eq!(count("BatchGetItem"), 2, "{text}");
    assert!(
        text.contains(
            "tablegraph_storage_call_seconds_bucket{operation=\"BatchGetItem\",le=\"+Inf\"} 2"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn metrics_count_http_requests_by_route_and_status_with_latencies() {
    let app = spawn_app().await;
    app.graphql("{ __typename }", json!({})).await;
    app.graphql("{ __typename }", json!({})).await;
    let refused = app
        .client
        .post(app.url("/graphql"))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(refused.status(), 415);
    let missing = app
        .client
        .get(app.url("/no-such-page"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(missing.status(), 404);
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("text");
    for line in [
        "# TYPE tablegraph_http_requests_total counter",
        "tablegraph_http_requests_total{route=\"/graphql\",status=\"200\"} 2",
        "tablegraph_http_requests_total{route=\"/graphql\",status=\"415\"} 1",
        "tablegraph_http_requests_total{route=\"unmatched\",status=\"404\"} 1",
        "# TYPE tablegraph_http_request_seconds histogram",
        "tablegraph_http_request_seconds_bucket{route=\"/graphql\",le=\"+Inf\"} 3",
        "tablegraph_http_request_seconds_count{route=\"/graphql\"} 3",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
}

#[tokio::test]
async fn a_panic_answers_500_with_the_request_id_and_nothing_of_the_panic() {
    // The application's own layers around a handler that panics.
    let router = tablegraph::http::with_layers(
        axum::Router::new().route("/graphql", axum::routing::post(panicking_handler)),
        &HttpConfig::default(),
        &tablegraph::http::HttpMetrics::new(&["/graphql"]),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, router).await });

    let response = reqwest::Client::new()
        .post(format!("http://{address}/graphql"))
        .header("x-request-id", "req-4242")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers()["x-request-id"], "req-4242");
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"],
        "InternalError"
    );
    assert_eq!(body["errors"][0]["extensions"]["requestId"], "req-4242");
    let text = body.to_string();
    assert!(
        !text.contains("secret") && !text.contains("GSI01"),
        "{text}"
    );
}

async fn panicking_handler() -> &'static str {
    panic!("secret detail: table tablegraph, index GSI01");
}

#[tokio::test]
async fn the_content_type_is_matched_as_a_media_type() {
    let app = spawn_app().await;
    let body = r#"{"query":"{ __typename }"}"#;
    for (content_type, status) in [
        ("Application/JSON", 200),
        ("application/json; charset=utf-8", 200),
        ("APPLICATION/JSON;charset=UTF-8", 200),
        ("application/jsonx", 415),
        ("application/json-seq", 415),
        ("application/graphql", 415),
    ] {
        let response = app
            .client
            .post(app.url("/graphql"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("the server answers");
        assert_eq!(response.status(), status, "{content_type}");
    }
}

#[tokio::test]
async fn a_request_id_that_is_too_long_or_not_visible_ascii_is_replaced() {
    let app = spawn_app().await;
    let long = "x".repeat(60 * 1024);
    let exact = "y".repeat(128);
    for (sent, kept) in [
        (long.as_str(), false),
        ("has space", false),
        (exact.as_str(), true),
        ("trace-me-42", true),
    ] {
        let response = app
            .client
            .post(app.url("/graphql"))
            .header("x-request-id", sent)
            .json(&serde_json::json!({ "query": "{ __typename }" }))
            .send()
            .await
            .expect("the server answers");
        let answered = response.headers()["x-request-id"]
            .to_str()
            .expect("ASCII")
            .to_owned();
        assert_eq!(answered == sent, kept, "{}", &sent[..sent.len().min(40)]);
        assert!(answered.len() <= 128);
    }
}

#[tokio::test]
async fn an_operator_allows_more_request_headers() {
    let app = spawn_app_with(HttpConfig {
        cors_allow_headers: vec!["x-tenant".to_owned()],
        ..HttpConfig::default()
    })
    .await;
    let response = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/graphql"))
        .header("origin", "https://farm.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "x-tenant, x-api-key")
        .send()
        .await
        .expect("the server answers");
    let allowed = response.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    assert!(allowed.contains("x-tenant"), "{allowed}");
    assert!(
        allowed.contains("x-api-key"),
        "the defaults stay: {allowed}"
    );
}

/// The query GraphiQL's editor opens on, read from the page (`defaultQuery: "…"`).
async fn page_query(app: &crate::helpers::TestApp) -> String {
    let page = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("the server answers")
        .text()
        .await
        .expect("a page");
    let start = page
        .find("defaultQuery: ")
        .unwrap_or_else(|| panic!("no defaultQuery in {page}"))
        + "defaultQuery: ".len();
    let mut stream = serde_json::Deserializer::from_str(&page[start..]).into_iter::<String>();
    stream.next().expect("a string").expect("a JSON string")
}

/// GraphiQL opens on a query that works: the README's first for the default schema (on the demo
/// data it shows the Growth team's goals), a first page of a list for any other schema.
#[tokio::test]
async fn graphiql_opens_on_a_working_query_of_the_served_api() {
    let app = spawn_app().await;
    tablegraph::demo::load(&app.store, std::sync::Arc::new(app.model.clone()))
        .await
        .expect("the demo data loads");
    let query = page_query(&app).await;
    let readme =
        std::fs::read_to_string(crate::helpers::repository_file("README.md")).expect("the README");
    let first = readme
        .split("```graphql\n")
        .nth(1)
        .and_then(|block| block.split("\n```").next())
        .expect("a first block");
    assert_eq!(query, first, "the page opens on the README's first query");
    let body = app.graphql(&query, json!({})).await;
    assert!(body["errors"].is_null(), "{body}");
    assert!(
        body["data"]["teamByName"]["goals"]["edges"]
            .as_array()
            .is_some_and(|edges| !edges.is_empty()),
        "{body}"
    );
    for schema in [
        "examples/social/schema.graphql",
        "tests/fixtures/amplify-relations/schema.graphql",
    ] {
        let app = crate::helpers::spawn_app_with_schema(schema).await;
        let query = page_query(&app).await;
        assert!(
            query.contains("(first: 10)") || query.contains("(limit: 10)"),
            "{query}"
        );
        let body = app.graphql(&query, json!({})).await;
        assert!(
            body["errors"].is_null() && body["data"].is_object(),
            "{schema}: {body}"
        );
    }
}
