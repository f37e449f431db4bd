//! AppSync's scalars, lists of scalars and of enums, and AppSync's directives, as clients of an
//! AppSync API send and read them.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with_schema};

async fn post(app: &TestApp, query: &str, variables: Value) -> Value {
    app.client
        .post(format!("http://{}/graphql", app.address))
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("a JSON body")
}

const CREATE: &str = "mutation ($input: CreateReadingInput!) { createReading(input: $input) { \
    takenAt day at recorded contact source phone from payload phones levels } }";

fn reading(taken_at: i64) -> Value {
    json!({
        "takenAt": taken_at,
        "day": "2024-02-29",
        "at": "12:30:24.500+05:30",
        "recorded": "2024-02-29T12:30:24Z",
        "contact": "ann@example.com",
        "source": "https://example.com/readings/1",
        "phone": "+1 555-0100 123",
        "from": "2001:db8::1",
        "payload": "{\"celsius\": 21.5, \"tags\": [\"a\"]}",
        "phones": ["+441234567890", "555 0100 123"],
        "levels": ["LOW", "HIGH"],
    })
}

#[tokio::test]
async fn appsync_scalars_and_lists_read_back_as_written() {
    let app = spawn_app_with_schema("tests/fixtures/appsync-scalars/schema.graphql").await;
    let input = reading(1_700_000_000);
    let answer = post(&app, CREATE, json!({ "input": input })).await;
    assert!(answer.get("errors").is_none(), "{answer}");
    assert_eq!(answer["data"]["createReading"], input);
}

#[tokio::test]
async fn a_value_out_of_its_scalars_format_is_refused_and_nothing_is_written() {
    let app = spawn_app_with_schema("tests/fixtures/appsync-scalars/schema.graphql").await;
    for (field, bad) in [
        ("takenAt", json!("yesterday")),
        ("takenAt", json!(1.5)),
        ("at", json!("25:00")),
        ("source", json!("example.com")),
        ("phone", json!("CALL-ME")),
        ("from", json!("10.0.0.300")),
        ("payload", json!("{not json}")),
        ("phones", json!(["+1 555-0100 123", "nope"])),
        ("levels", json!(["MEDIUM"])),
        ("levels", json!(["LOW", null])),
    ] {
        let mut input = reading(1);
        input[field] = bad.clone();
        let answer = post(&app, CREATE, json!({ "input": input })).await;
        assert!(answer["data"].is_null(), "{field} {bad}: {answer}");
        assert!(answer["errors"][0]["message"].is_string(), "{answer}");
    }
    let count = post(&app, "{ listReadings { totalCount } }", json!({})).await;
    assert_eq!(count["data"]["listReadings"]["totalCount"], 0, "{count}");
}

#[tokio::test]
async fn timestamps_sort_as_numbers() {
    let app = spawn_app_with_schema("tests/fixtures/appsync-scalars/schema.graphql").await;
    for taken_at in [100, 9, 1_000] {
        let answer = post(&app, CREATE, json!({ "input": reading(taken_at) })).await;
        assert!(answer.get("errors").is_none(), "{answer}");
    }
    let answer = post(
        &app,
        "{ listReadings(takenAt: { gt: 9 }) { edges { node { takenAt } } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        answer["data"]["listReadings"]["edges"],
        json!([{ "node": { "takenAt": 100 } }, { "node": { "takenAt": 1000 } }]),
        "{answer}"
    );
}
