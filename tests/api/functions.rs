//! The schema's own queries and mutations, resolved by functions: a real HTTP server in this
//! test binary plays the functions, records each event it is sent and answers as a Lambda
//! function answers AppSync.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::routing::post;
use serde_json::{Value, json};
use tablegraph::functions::FunctionsConfig;

use crate::helpers::{TestApp, error_type, run_tablegraph, scratch, spawn_app_with_functions};

const SCHEMA: &str = "tests/fixtures/functions/schema.graphql";

/// The events each function was sent, in order: (function, event).
type Events = Arc<Mutex<Vec<(String, Value)>>>;

/// What the heaviest-cow and herd functions answer: cows as the table holds them.
type Cows = Arc<Mutex<Vec<Value>>>;

/// Calls of the record function running now, and the most that ever ran at once.
type Running = Arc<(AtomicUsize, AtomicUsize)>;

struct Functions {
    events: Events,
    cows: Cows,
    running: Running,
    config: FunctionsConfig,
}

/// Starts the functions on a free port, each at `/<name>`, and the settings that reach them.
async fn functions() -> Functions {
    let events: Events = Arc::default();
    let cows: Cows = Arc::default();
    let running: Running = Arc::default();
    let app = axum::Router::new()
        .route("/{name}", post(answer))
        .with_state((events.clone(), cows.clone(), running.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let endpoint = |name: &str| (name.to_owned(), format!("http://{address}/{name}"));
    let config = FunctionsConfig {
        endpoints: vec![
            endpoint("sensor-dev"),
            endpoint("mood"),
            endpoint("heaviest"),
            endpoint("herd"),
            endpoint("double"),
            endpoint("broken"),
            endpoint("slow"),
            endpoint("record"),
            endpoint("sensor"),
            endpoint("diaries"),
            endpoint("diary"),
            endpoint("weigh"),
            endpoint("passports"),
            endpoint("dawdle"),
        ],
        env: Some("dev".to_owned()),
        timeout: Duration::from_secs(1),
        batch: vec![("passports".to_owned(), 2)],
        ..FunctionsConfig::default()
    };
    Functions {
        events,
        cows,
        running,
        config,
    }
}

async fn answer(
    State((events, cows, running)): State<(Events, Cows, Running)>,
    Path(name): Path<String>,
    Json(event): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    events
        .lock()
        .expect("the events")
        .push((name.clone(), event.clone()));
    let arguments = &event["arguments"];
    let answer = match name.as_str() {
        "sensor-dev" => json!({ "sensorId": arguments["id"], "celsius": 21.5, "tags": ["barn"] }),
        "diaries" => json!([
            { "id": "d-ann", "text": "mine", "owner": "ann" },
            { "id": "d-bob", "text": "his", "owner": "bob" },
        ]),
        "diary" => json!({ "id": "d-bob", "text": "his", "owner": "bob" }),
        "weigh" => json!(if event["arguments"]["unit"] == "lb" { 1322.8 } else { 600.0 }),
        // BatchInvoke: a list of events, answered in order; a cow named Bad is an error.
        "passports" => Value::Array(
            event
                .as_array()
                .map(|events| {
                    events
                        .iter()
                        .map(|event| match event["source"]["name"].as_str() {
                            Some("Bad") => json!({ "errorMessage": "no passport", "errorType": "NotFound" }),
                            name => json!({ "number": format!("P-{}", name.unwrap_or("?")), "cowName": name }),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        "sensor" => {
            let id = arguments["id"]
                .as_str()
                .or(arguments["input"]["id"].as_str());
            json!({ "id": id, "celsius": if event["typeName"] == "Mutation" { 0.0 } else { 18.0 } })
        }
        "mood" => json!("RESTLESS"),
        "heaviest" => cows.lock().expect("the cows")[0].clone(),
        "herd" => Value::Array(cows.lock().expect("the cows").clone()),
        "double" => {
            let n = event["prev"]["result"]
                .as_i64()
                .or_else(|| arguments["n"].as_i64())
                .unwrap_or_default();
            json!(n * 2)
        }
        "broken" => {
            json!({ "errorMessage": "the sensor is offline", "errorType": "SensorOffline" })
        }
        // Never answers: the call times out.
        "slow" => std::future::pending().await,
        // Answers after 0.6 s, within a call's timeout (1 s); twice is past it.
        "dawdle" => {
            tokio::time::sleep(Duration::from_millis(600)).await;
            json!(1)
        }
        // A slow function: calls made at once would overlap here, and `running` would see it.
        "record" => {
            let now = running.0.fetch_add(1, Ordering::SeqCst) + 1;
            running.1.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            running.0.fetch_sub(1, Ordering::SeqCst);
            json!({ "sensorId": arguments["input"]["sensorId"], "celsius": arguments["input"]["celsius"] })
        }
        _ => return axum::http::StatusCode::NOT_FOUND.into_response(),
    };
    Json(answer).into_response()
}

async fn app_with_functions() -> (TestApp, Functions) {
    let functions = functions().await;
    let app = spawn_app_with_functions(SCHEMA, functions.config.clone()).await;
    (app, functions)
}

/// The functions, and a server that lets in the API key `functions-key` and the tokens
/// `user_token` makes.
async fn app_with_functions_and_credentials() -> (TestApp, Functions) {
    let functions = functions().await;
    let app = crate::helpers::spawn_app_with_functions_and(
        SCHEMA,
        crate::helpers::api_key_and_tokens("functions-key"),
        functions.config.clone(),
    )
    .await;
    (app, functions)
}

/// Starts `serve` on a fresh in-memory store with `schema` and `more` flags, which must stop
/// it: what it printed.
async fn serve_refused(schema: &str, more: &[&str]) -> String {
    let dir = scratch("functions-refused");
    let mut args = vec![
        "serve",
        "--memory",
        "--schema",
        schema,
        "--listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(more);
    let (ok, _, stderr) = run_tablegraph(&args, &dir).await;
    assert!(!ok, "start-up should stop: {stderr}");
    stderr
}

/// A scratch directory named `name` holding `schema.graphql` with `text`; the schema's path.
fn scratch_schema(name: &str, text: &str) -> std::path::PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(&dir).expect("a directory");
    let schema = dir.join("schema.graphql");
    std::fs::write(&schema, text).expect("a schema");
    schema
}

fn sent(events: &Events, function: &str) -> Vec<Value> {
    events
        .lock()
        .expect("the events")
        .iter()
        .filter(|(name, _)| name == function)
        .map(|(_, event)| event.clone())
        .collect()
}

#[tokio::test]
async fn a_query_of_the_schemas_own_calls_its_function_with_amplifys_event() {
    let (app, functions) = app_with_functions().await;
    let body = app
        .graphql(
            "query($id: ID!) { getSensorData(id: $id) { sensorId celsius tags } }",
            json!({ "id": "s-7" }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        body["data"]["getSensorData"],
        json!({ "sensorId": "s-7", "celsius": 21.5, "tags": ["barn"] })
    );
    // `${env}` in the name is the environment given.
    let events = sent(&functions.events, "sensor-dev");
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event["typeName"], "Query");
    assert_eq!(event["fieldName"], "getSensorData");
    assert_eq!(event["arguments"], json!({ "id": "s-7" }));
    // An open API: no identity.
    assert_eq!(event["identity"], Value::Null);
    assert_eq!(event["source"], Value::Null);
    assert_eq!(event["prev"], Value::Null);
    assert_eq!(
        event["request"]["headers"]["content-type"], "application/json",
        "{event}"
    );
}

#[tokio::test]
async fn a_function_answering_a_model_type_resolves_its_relations_through_the_loaders() {
    let (app, functions) = app_with_functions().await;
    let farm = app.create_farm("Hillside").await;
    let daisy = app.create_animal("Cow", "Daisy", &farm).await;
    let bella = app.create_animal("Cow", "Bella", &farm).await;
    for (id, name) in [(&daisy, "Daisy"), (&bella, "Bella")] {
        functions
            .cows
            .lock()
            .expect("the cows")
            .push(json!({ "id": id, "name": name, "farmId": farm }));
    }
    let (body, calls) = app
        .graphql_counted(
            "query($farm: ID!) { heaviestCow(farmId: $farm) { id name farm { name } } \
             herd { name farm { id name } } }",
            json!({ "farm": farm }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        body["data"]["heaviestCow"],
        json!({ "id": daisy, "name": "Daisy", "farm": { "name": "Hillside" } })
    );
    assert_eq!(
        body["data"]["herd"],
        json!([
            { "name": "Daisy", "farm": { "id": farm, "name": "Hillside" } },
            { "name": "Bella", "farm": { "id": farm, "name": "Hillside" } },
        ])
    );
    // The farm of three cows is one batched read, shared by both fields.
    assert_eq!(calls, ["BatchGetItem"]);
}

#[tokio::test]
async fn functions_named_twice_run_in_order_each_given_the_last_ones_result() {
    let (app, functions) = app_with_functions().await;
    let body = app.graphql("{ twice(n: 3) }", json!({})).await;
    assert_eq!(body["data"]["twice"], 12, "{body}");
    let events = sent(&functions.events, "double");
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["prev"], Value::Null);
    assert_eq!(events[1]["prev"], json!({ "result": 6 }));
}

#[tokio::test]
async fn enums_mutations_and_input_types_pass_through_a_function() {
    let (app, functions) = app_with_functions().await;
    let body = app
        .graphql(
            "mutation { recordReading(input: { sensorId: \"s-1\", celsius: 19.5 }) { sensorId celsius } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["recordReading"],
        json!({ "sensorId": "s-1", "celsius": 19.5 }),
        "{body}"
    );
    let events = sent(&functions.events, "record");
    assert_eq!(events[0]["typeName"], "Mutation");
    assert_eq!(
        events[0]["arguments"],
        json!({ "input": { "sensorId": "s-1", "celsius": 19.5 } })
    );
    let body = app.graphql("{ moodOf(cowId: \"c\") }", json!({})).await;
    assert_eq!(body["data"]["moodOf"], "RESTLESS", "{body}");
}

#[tokio::test]
async fn a_failing_function_is_its_fields_error_and_the_rest_of_the_answer_stands() {
    let (app, _functions) = app_with_functions().await;
    let body = app
        .graphql(
            "{ broken getSensorData(id: \"s-2\") { sensorId } }",
            json!({}),
        )
        .await;
    assert_eq!(body["data"]["broken"], Value::Null, "{body}");
    assert_eq!(body["data"]["getSensorData"]["sensorId"], "s-2", "{body}");
    assert_eq!(error_type(&body), "SensorOffline");
    assert_eq!(body["errors"][0]["message"], "the sensor is offline");
    assert_eq!(body["errors"][0]["path"], json!(["broken"]));

    let body = app.graphql("{ slow }", json!({})).await;
    assert_eq!(body["data"]["slow"], Value::Null, "{body}");
    assert_eq!(error_type(&body), "Lambda:Unhandled");
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("slow did not answer within 1 s"),
        "{message}"
    );
    assert!(
        !message.contains("127.0.0.1"),
        "no address reaches a client: {message}"
    );

    // The field's pipeline has one deadline: two calls within it each are past it together.
    let body = app.graphql("{ dawdling }", json!({})).await;
    assert_eq!(body["data"]["dawdling"], Value::Null, "{body}");
    assert_eq!(
        body["errors"][0]["message"],
        "Query.dawdling's functions did not answer within 1 s"
    );

    let body = app.graphql("{ unresolved }", json!({})).await;
    assert_eq!(body["data"]["unresolved"], Value::Null, "{body}");
    assert_eq!(error_type(&body), "MissingResolver");
}

/// A local server answering Lambda's `Invoke` API (`POST
/// /2015-03-31/functions/{name}/invocations`) as Lambda does: a function's value as the
/// payload, a function's error as the payload with `X-Amz-Function-Error: Unhandled`. It keeps
/// each call's function name, `Authorization` header and payload.
async fn lambda_api() -> (String, Events) {
    async fn invoke(
        State(calls): State<Events>,
        Path(name): Path<String>,
        headers: axum::http::HeaderMap,
        payload: axum::body::Bytes,
    ) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        // The SDK sends the payload as bytes, without a JSON content type.
        let event: Value = serde_json::from_slice(&payload).unwrap_or_default();
        let signed = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        calls.lock().expect("the calls").push((
            name.clone(),
            json!({ "authorization": signed, "event": event }),
        ));
        match name.as_str() {
            "sensor-dev" => Json(json!({ "sensorId": event["arguments"]["id"], "celsius": 3.5 }))
                .into_response(),
            "broken" => (
                [("x-amz-function-error", "Unhandled")],
                Json(json!({ "errorMessage": "the probe fell in the trough", "errorType": "ProbeLost", "stackTrace": [] })),
            )
                .into_response(),
            _ => (
                axum::http::StatusCode::NOT_FOUND,
                [("x-amzn-errortype", "ResourceNotFoundException")],
                Json(json!({ "Type": "User", "message": format!("Function not found: arn:aws:lambda:us-east-1:123456789012:function:{name}") })),
            )
                .into_response(),
        }
    }
    let calls: Events = Arc::default();
    let app = axum::Router::new()
        .route("/2015-03-31/functions/{name}/invocations", post(invoke))
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), calls)
}

#[tokio::test]
async fn a_lambda_function_is_invoked_through_the_sdk_with_the_same_event() {
    let (endpoint, calls) = lambda_api().await;
    let mut functions = functions().await;
    for (name, address) in &mut functions.config.endpoints {
        match name.as_str() {
            "sensor-dev" | "broken" => *address = format!("lambda:{name}"),
            "mood" => {
                *address = "lambda:arn:aws:lambda:us-east-1:123456789012:function:gone".to_owned()
            }
            _ => {}
        }
    }
    functions.config.lambda_endpoint = Some(endpoint);
    let app = spawn_app_with_functions(SCHEMA, functions.config.clone()).await;
    let body = app
        .graphql(
            "{ getSensorData(id: \"s-9\") { sensorId celsius } broken moodOf(cowId: \"c\") }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["getSensorData"],
        json!({ "sensorId": "s-9", "celsius": 3.5 }),
        "{body}"
    );
    // A function's error, as Lambda reports it, is the field's error with its type.
    let errors = body["errors"].as_array().cloned().unwrap_or_default();
    let of = |field: &str| {
        errors
            .iter()
            .find(|e| e["path"] == json!([field]))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        of("broken")["extensions"]["errorType"],
        "ProbeLost",
        "{body}"
    );
    assert_eq!(of("broken")["message"], "the probe fell in the trough");
    // A function Lambda does not have is the field's error, naming the function, not the ARN's
    // account or Lambda's own message.
    assert_eq!(
        of("moodOf")["extensions"]["errorType"],
        "Lambda:Unhandled",
        "{body}"
    );
    let message = of("moodOf")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(message, "function mood does not exist in Lambda");
    let calls = calls.lock().expect("the calls").clone();
    let names: Vec<&str> = calls.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for name in [
        "sensor-dev",
        "broken",
        "arn:aws:lambda:us-east-1:123456789012:function:gone",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for (name, call) in &calls {
        // Signed by the SDK, as Lambda requires.
        let authorization = call["authorization"].as_str().unwrap_or_default();
        assert!(
            authorization.starts_with("AWS4-HMAC-SHA256 Credential="),
            "{name}: {authorization}"
        );
        assert!(
            authorization.contains("/lambda/aws4_request"),
            "{authorization}"
        );
    }
    // The same event an HTTP function gets.
    let (_, sensor) = calls
        .iter()
        .find(|(name, _)| name == "sensor-dev")
        .expect("called");
    assert_eq!(sensor["event"]["typeName"], "Query");
    assert_eq!(sensor["event"]["fieldName"], "getSensorData");
    assert_eq!(sensor["event"]["arguments"], json!({ "id": "s-9" }));
}

#[tokio::test]
async fn a_function_that_is_not_configured_stops_start_up_naming_the_flag() {
    let stderr = serve_refused(SCHEMA, &[]).await;
    assert!(stderr.contains("--env"), "{stderr}");
    let stderr = serve_refused(SCHEMA, &["--env", "dev"]).await;
    assert!(
        stderr.contains("Query.getSensorData calls function sensor-dev, which is not configured: give --function sensor-dev=URL"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_field_of_its_own_named_as_a_generated_one_is_refused() {
    let schema = scratch_schema(
        "functions-clash",
        "type Farm @model { name: String! }\ntype Query { getFarm(id: ID!): Farm }\n",
    );
    let stderr = serve_refused(schema.to_str().expect("UTF-8"), &[]).await;
    assert!(stderr.contains("2:14: Query.getFarm is a generated field; give yours another name (`tablegraph schema` prints the generated ones)"), "{stderr}");
}

#[test]
fn plan_shows_each_function_a_field_calls_in_order() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args(["plan", "--schema", SCHEMA])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("TABLEGRAPH_SCHEMA")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let twice = stdout
        .split("\nQuery.twice(n)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    let calls: Vec<&str> = twice
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().nth(1))
        .collect();
    assert_eq!(calls, ["double", "double"], "{stdout}");
    assert!(
        stdout.contains("Mutation.recordReading(input)\n  function"),
        "{stdout}"
    );
}

#[tokio::test]
async fn mutation_fields_call_their_functions_one_after_another_in_document_order() {
    let (app, functions) = app_with_functions().await;
    let body = app
        .graphql(
            "mutation { \
               b: recordReading(input: { sensorId: \"second\" }) { sensorId } \
               a: recordReading(input: { sensorId: \"first\" }) { sensorId } \
               c: recordReading(input: { sensorId: \"third\" }) { sensorId } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    let order: Vec<Value> = sent(&functions.events, "record")
        .iter()
        .map(|event| event["arguments"]["input"]["sensorId"].clone())
        .collect();
    assert_eq!(order, [json!("second"), json!("first"), json!("third")]);
    assert_eq!(
        functions.running.1.load(Ordering::SeqCst),
        1,
        "one call at a time"
    );
}

#[tokio::test]
async fn a_plain_appsync_schema_without_model_types_serves_its_own_fields() {
    let functions = functions().await;
    let app = spawn_app_with_functions(
        "tests/fixtures/functions-only/schema.graphql",
        functions.config.clone(),
    )
    .await;
    let body = app
        .graphql(
            "{ getSensor(id: \"s-9\") { id celsius } __schema { subscriptionType { name } } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        body["data"]["getSensor"],
        json!({ "id": "s-9", "celsius": 18.0 })
    );
    // Nothing to subscribe to: no subscription root, rather than one without fields.
    assert_eq!(body["data"]["__schema"]["subscriptionType"], Value::Null);
    let body = app
        .graphql(
            "mutation { resetSensor(input: { id: \"s-9\" }) { id celsius } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["resetSensor"],
        json!({ "id": "s-9", "celsius": 0.0 }),
        "{body}"
    );
}

/// A node a function answers reaches the caller only under the caller's read rules, as every
/// node does: a list leaves out the others', a single one is `Unauthorized`.
#[tokio::test]
async fn nodes_a_function_answers_are_held_to_the_callers_read_rules() {
    let (app, functions) = app_with_functions_and_credentials().await;
    let ann = format!("Bearer {}", crate::helpers::user_token("ann", &[]));
    let (_, body) = app
        .graphql_with(
            &[("authorization", &ann)],
            "{ myDiaries { id text } bobsDiary { id text } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["myDiaries"],
        json!([{ "id": "d-ann", "text": "mine" }]),
        "{body}"
    );
    assert_eq!(body["data"]["bobsDiary"], Value::Null, "{body}");
    assert_eq!(error_type(&body), "Unauthorized");
    assert_eq!(body["errors"][0]["path"], json!(["bobsDiary"]));
    // The event tells the function who asks.
    let events = sent(&functions.events, "diary");
    assert_eq!(events[0]["identity"]["sub"], "ann", "{}", events[0]);
    assert_eq!(events[0]["identity"]["claims"]["sub"], "ann");
}

/// A `@function` field of a type is given its node as `source`, without the table's keys; a
/// function configured for BatchInvoke gets a level's calls together (at most its MAX a call),
/// one for another function.
#[tokio::test]
async fn a_levels_function_fields_are_one_batch_call_for_a_batched_function() {
    let (app, functions) = app_with_functions().await;
    let farm = app.create_farm("Hillside").await;
    for name in ["Ada", "Bo", "Bad"] {
        app.create_animal("Cow", name, &farm).await;
    }
    let body = app
        .graphql(
            "query($farm: ID!) { farm(id: $farm) { name } \
             listCows(first: 10) { edges { node { name weight(unit: \"lb\") passport { number cowName } } } } }",
            json!({ "farm": farm }),
        )
        .await;
    let edges = body["data"]["listCows"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .clone();
    assert_eq!(edges.len(), 3, "{body}");
    for edge in &edges {
        let node = &edge["node"];
        assert_eq!(node["weight"], 1322.8, "{body}");
        match node["name"].as_str() {
            Some("Bad") => assert_eq!(node["passport"], Value::Null, "{body}"),
            Some(name) => assert_eq!(
                node["passport"],
                json!({ "number": format!("P-{name}"), "cowName": name })
            ),
            None => panic!("{body}"),
        }
    }
    assert_eq!(error_type(&body), "NotFound", "{body}");
    // Three cows: three calls of the plain function, and the batched one's events in calls
    // of at most two.
    assert_eq!(sent(&functions.events, "weigh").len(), 3);
    let batches = sent(&functions.events, "passports");
    let sizes: Vec<usize> = batches
        .iter()
        .map(|batch| batch.as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(sizes, [2, 1], "{batches:?}");
    let event = &batches[0][0];
    assert_eq!(event["typeName"], "Cow");
    assert_eq!(event["fieldName"], "passport");
    assert_eq!(event["source"]["farmId"], json!(farm));
    let source = event["source"].as_object().expect("a source");
    assert!(
        source.contains_key("id") && source.contains_key("version"),
        "{event}"
    );
    assert!(
        source
            .keys()
            .all(|name| name != "PK" && name != "SK" && !name.starts_with("PK0")),
        "no key of the table in a source: {event}"
    );
}

/// AppSync's directives on a field of the schema's own name who may ask for it: another
/// caller is refused before any function is called.
#[tokio::test]
async fn appsync_directives_on_a_functions_field_name_who_may_ask_for_it() {
    let (app, functions) = app_with_functions_and_credentials().await;
    let ask = |credentials: (&'static str, String)| {
        let app = &app;
        async move {
            app.graphql_with(
                &[(credentials.0, &credentials.1)],
                "{ adminReading(id: \"s-3\") { sensorId } }",
                json!({}),
            )
            .await
            .1
        }
    };
    let bearer = |groups: &[&str]| {
        (
            "authorization",
            format!("Bearer {}", crate::helpers::user_token("ann", groups)),
        )
    };
    for refused in [
        ask(("x-api-key", "functions-key".to_owned())).await,
        ask(bearer(&["Staff"])).await,
    ] {
        assert_eq!(refused["data"]["adminReading"], Value::Null, "{refused}");
        assert_eq!(error_type(&refused), "Unauthorized", "{refused}");
        assert_eq!(
            refused["errors"][0]["message"],
            "Not Authorized to access adminReading on type Query"
        );
    }
    assert!(sent(&functions.events, "sensor-dev").is_empty());
    let admitted = ask(bearer(&["Admin"])).await;
    assert_eq!(
        admitted["data"]["adminReading"],
        json!({ "sensorId": "s-3" }),
        "{admitted}"
    );
}

#[tokio::test]
async fn a_function_timeout_not_under_the_request_timeout_stops_start_up() {
    let stderr = serve_refused(
        "tests/fixtures/functions-only/schema.graphql",
        &[
            "--function",
            "sensor=http://127.0.0.1:9/",
            "--function-timeout-secs",
            "30",
            "--request-timeout-secs",
            "30",
        ],
    )
    .await;
    assert!(
        stderr.contains("--function-timeout-secs (30) must be under --request-timeout-secs (30)"),
        "{stderr}"
    );
}

#[tokio::test]
async fn functions_toml_beside_the_schema_and_type_fields_are_checked_at_start_up() {
    let path = scratch_schema(
        "functions-file",
        "type Cow @model { name: String!\n  passport: String @function(name: \"p\") }\n",
    );
    let schema = path.to_str().expect("UTF-8");
    let stderr = serve_refused(schema, &[]).await;
    assert!(
        stderr.contains("Cow.passport calls function p, which is not configured"),
        "{stderr}"
    );
    std::fs::write(
        path.with_file_name("functions.toml"),
        "[p]\nurl = \"http://127.0.0.1:9/\"\nmaxBatchSize = 2\n",
    )
    .expect("a functions file");
    let stderr = serve_refused(schema, &[]).await;
    assert!(
        stderr.contains("functions.toml: unknown field `maxBatchSize`"),
        "{stderr}"
    );
}
