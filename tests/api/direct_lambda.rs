//! Fields bound to functions in `resolvers/` (AppSync's resolver map, outside the schema): a
//! real HTTP server in this test binary plays the functions and records each event, which is
//! AppSync's direct Lambda resolver event.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::routing::post;
use serde_json::{Value, json};
use tablegraph::functions::FunctionsConfig;

use crate::helpers::{TestApp, run_tablegraph, scratch, spawn_app_with_functions};

const SCHEMA: &str = "tests/fixtures/direct-lambda/schema.graphql";

type Events = Arc<Mutex<Vec<(String, Value)>>>;

async fn app() -> (TestApp, Events) {
    async fn answer(
        State(events): State<Events>,
        Path(name): Path<String>,
        Json(event): Json<Value>,
    ) -> Json<Value> {
        events
            .lock()
            .expect("events")
            .push((name.clone(), event.clone()));
        Json(match name.as_str() {
            "readings-dev" => json!({
                "sensorId": event["arguments"]["sensorId"],
                "celsius": 4.5,
                "unit": "C",
                "place": { "name": "Long barn", "barn": 2 },
            }),
            // Passes the reading on, marked.
            "audit" => {
                let mut reading = event["prev"]["result"].clone();
                reading["celsius"] = json!(reading["celsius"].as_f64().unwrap_or_default() + 0.5);
                reading
            }
            "passports" => json!(format!(
                "P-{}",
                event["source"]["name"].as_str().unwrap_or("?")
            )),
            "weather" => json!(format!(
                "dry over {}",
                event["source"]["name"].as_str().unwrap_or("?")
            )),
            _ => Value::Null,
        })
    }
    let events: Events = Arc::default();
    let router = axum::Router::new()
        .route("/{name}", post(answer))
        .with_state(events.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    let endpoint = |name: &str| (name.to_owned(), format!("http://{address}/{name}"));
    let functions = FunctionsConfig {
        endpoints: vec![
            endpoint("readings-dev"),
            endpoint("audit"),
            endpoint("passports"),
            endpoint("weather"),
        ],
        env: Some("dev".to_owned()),
        ..FunctionsConfig::default()
    };
    (spawn_app_with_functions(SCHEMA, functions).await, events)
}

fn sent(events: &Events, function: &str) -> Vec<Value> {
    events
        .lock()
        .expect("events")
        .iter()
        .filter(|(name, _)| name == function)
        .map(|(_, event)| event.clone())
        .collect()
}

#[tokio::test]
async fn a_bound_field_gets_appsyncs_direct_event_with_its_selection() {
    let (app, events) = app().await;
    let body = app
        .graphql(
            "query Latest($id: ID!) { latestReading(sensorId: $id) { sensorId t: celsius ...Where } } \
             fragment Where on Reading { place { name } unit }",
            json!({ "id": "s-1" }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        body["data"]["latestReading"],
        json!({ "sensorId": "s-1", "t": 4.5, "place": { "name": "Long barn" }, "unit": "C" })
    );
    let event = sent(&events, "readings-dev").pop().expect("called");
    assert_eq!(event["arguments"], json!({ "sensorId": "s-1" }));
    assert_eq!(event["identity"], Value::Null);
    assert_eq!(event["source"], Value::Null);
    assert_eq!(event["prev"], Value::Null);
    assert_eq!(event["stash"], json!({}));
    assert_eq!(
        event["request"]["headers"]["content-type"],
        "application/json"
    );
    assert!(event["request"].get("domainName").is_some(), "{event}");
    let info = &event["info"];
    assert_eq!(info["fieldName"], "latestReading");
    assert_eq!(info["parentTypeName"], "Query");
    assert_eq!(info["variables"], json!({ "id": "s-1" }));
    // By name, not alias; fragments spread; nested as parent/child.
    assert_eq!(
        info["selectionSetList"],
        json!(["sensorId", "celsius", "place", "place/name", "unit"])
    );
    assert_eq!(
        info["selectionSetGraphQL"],
        "{\n  sensorId\n  t: celsius\n  place {\n    name\n  }\n  unit\n}"
    );
    // Amplify's event's own keys are not there.
    assert!(event.get("typeName").is_none(), "{event}");
}

#[tokio::test]
async fn bound_functions_run_in_order_and_a_model_types_field_is_given_its_node() {
    let (app, events) = app().await;
    let body = app
        .graphql(
            "mutation { calibrate(sensorId: \"s-2\", offset: 0.5) { celsius } }",
            json!({}),
        )
        .await;
    assert_eq!(body["data"]["calibrate"]["celsius"], 5.0, "{body}");
    let audit = sent(&events, "audit").pop().expect("called");
    assert_eq!(audit["prev"]["result"]["celsius"], 4.5, "{audit}");
    assert_eq!(audit["info"]["parentTypeName"], "Mutation");

    let cow = app
        .graphql(
            "mutation { createCow(input: { name: \"Daisy\" }) { id } }",
            json!({}),
        )
        .await;
    let id = cow["data"]["createCow"]["id"]
        .as_str()
        .expect("created")
        .to_owned();
    let body = app
        .graphql(
            "query($id: ID!) { getCow(id: $id) { passport } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(body["data"]["getCow"]["passport"], "P-Daisy", "{body}");
    let event = sent(&events, "passports").pop().expect("called");
    assert_eq!(event["source"]["name"], "Daisy");
    assert_eq!(event["info"]["parentTypeName"], "Cow");
    assert_eq!(event["info"]["fieldName"], "passport");
}

#[tokio::test]
async fn a_field_of_a_type_without_model_is_given_the_value_it_is_a_field_of() {
    let (app, events) = app().await;
    // In a value a function answered.
    let body = app
        .graphql(
            "{ latestReading(sensorId: \"s-3\") { place { name weather } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["latestReading"]["place"],
        json!({ "name": "Long barn", "weather": "dry over Long barn" }),
        "{body}"
    );
    let event = sent(&events, "weather").pop().expect("called");
    assert_eq!(event["source"], json!({ "name": "Long barn", "barn": 2 }));
    assert_eq!(event["info"]["parentTypeName"], "Place");
    // In a value stored in a node: the input has no such field, and reading calls it.
    let body = app
        .graphql(
            "mutation { createCow(input: { name: \"Bella\", home: { name: \"Hill barn\" } }) { home { name weather } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["createCow"]["home"],
        json!({ "name": "Hill barn", "weather": "dry over Hill barn" }),
        "{body}"
    );
    let refused = app
        .graphql(
            "mutation { createCow(input: { name: \"Bad\", home: { weather: \"wet\" } }) { id } }",
            json!({}),
        )
        .await;
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("weather"),
        "{refused}"
    );
}

/// A copy of the fixture in a scratch directory, with `resolvers/<name>` holding `text` (or
/// removed when `None`); the schema's path.
fn fixture_with(file: &str, text: Option<&str>, schema_extra: &str) -> std::path::PathBuf {
    let dir = scratch("direct-lambda");
    std::fs::create_dir_all(dir.join("resolvers")).expect("a directory");
    let fixture = crate::helpers::repository_file("tests/fixtures/direct-lambda");
    for name in [
        "Query.latestReading.toml",
        "Mutation.calibrate.toml",
        "Cow.passport.toml",
        "Place.weather.toml",
    ] {
        std::fs::copy(
            fixture.join("resolvers").join(name),
            dir.join("resolvers").join(name),
        )
        .expect("copied");
    }
    match text {
        Some(text) => std::fs::write(dir.join("resolvers").join(file), text).expect("written"),
        None => std::fs::remove_file(dir.join("resolvers").join(file)).expect("removed"),
    }
    let schema = std::fs::read_to_string(fixture.join("schema.graphql")).expect("the schema");
    std::fs::write(dir.join("schema.graphql"), schema + schema_extra).expect("written");
    dir.join("schema.graphql")
}

#[tokio::test]
async fn a_binding_that_names_no_field_or_a_field_resolved_twice_stops_start_up() {
    let cases = [
        (
            fixture_with(
                "Query.nothing.toml",
                Some("function = \"readings-${env}\"\n"),
                "",
            ),
            "Query.nothing is not a field of type Query, type Mutation or an object type",
        ),
        (
            fixture_with(
                "Query.latestReading.toml",
                Some("function = \"a\"\ntimeout = 3\n"),
                "",
            ),
            "has no key timeout",
        ),
        (
            fixture_with(
                "Query.other.toml",
                Some("function = \"audit\"\n"),
                "extend type Query { other: Reading @function(name: \"audit\") }\n",
            ),
            "Query.other is resolved by its directive and by resolvers/Query.other.toml",
        ),
    ];
    for (schema, says) in cases {
        let schema = schema.to_str().expect("a UTF-8 path").to_owned();
        let dir = scratch("direct-lambda-refused");
        let (ok, _, stderr) = run_tablegraph(
            &[
                "serve",
                "--memory",
                "--schema",
                &schema,
                "--listen",
                "127.0.0.1:0",
                "--env",
                "dev",
            ],
            &dir,
        )
        .await;
        assert!(!ok && stderr.contains(says), "{says}: {stderr}");
    }
    // Without its binding file, the field loads and answers MissingResolver.
    let schema = fixture_with("Query.latestReading.toml", None, "");
    let plan = std::process::Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args(["plan", "--schema", schema.to_str().expect("UTF-8")])
        .output()
        .expect("runs");
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan.contains("no resolver: answers MissingResolver"),
        "{plan}"
    );
    assert!(plan.contains("readings-${env}"), "{plan}");
    // A field of a type without @model that a function answers is in the plan too.
    let weather = plan
        .split("\nPlace.weather\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(
        weather
            .lines()
            .next()
            .is_some_and(|line| line.contains("weather")),
        "{plan}"
    );
}
