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
    // Times are kept in UTC with milliseconds, the form that sorts as time does.
    let mut stored = input.clone();
    stored["at"] = json!("07:00:24.500Z");
    stored["recorded"] = json!("2024-02-29T12:30:24.000Z");
    assert_eq!(answer["data"]["createReading"], stored);
}

#[tokio::test]
async fn date_times_at_other_offsets_sort_and_compare_as_instants() {
    let app = spawn_app_with_schema("tests/fixtures/appsync-scalars/schema.graphql").await;
    // As written, the text order would be 09:00+05:00, 10:00Z, 11:00+03:00 — the reverse of
    // the instants (04:00Z, 08:00Z, 10:00Z).
    for (taken_at, recorded) in [
        (1, "2024-02-29T10:00:00Z"),
        (2, "2024-02-29T09:00:00+05:00"),
        (3, "2024-02-29T11:00:00+03:00"),
    ] {
        let mut input = reading(taken_at);
        input["recorded"] = json!(recorded);
        input["station"] = json!("north");
        let answer = post(&app, CREATE, json!({ "input": input })).await;
        assert!(answer.get("errors").is_none(), "{answer}");
    }
    let page = |condition: &str| {
        format!(
            "{{ readingsByStation(station: \"north\"{condition}) {{ edges {{ node {{ takenAt recorded }} }} }} }}"
        )
    };
    let answer = post(&app, &page(""), json!({})).await;
    assert_eq!(
        answer["data"]["readingsByStation"]["edges"],
        json!([
            { "node": { "takenAt": 2, "recorded": "2024-02-29T04:00:00.000Z" } },
            { "node": { "takenAt": 3, "recorded": "2024-02-29T08:00:00.000Z" } },
            { "node": { "takenAt": 1, "recorded": "2024-02-29T10:00:00.000Z" } },
        ]),
        "{answer}"
    );
    // A key condition's value at an offset compares as the instant it names (07:00Z).
    let answer = post(
        &app,
        &page(", recorded: { gt: \"2024-02-29T09:00:00+02:00\" }"),
        json!({}),
    )
    .await;
    let taken: Vec<&Value> = answer["data"]["readingsByStation"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("edges in {answer}"))
        .iter()
        .map(|e| &e["node"]["takenAt"])
        .collect();
    assert_eq!(taken, [&json!(3), &json!(1)], "{answer}");
    // So does a filter's.
    let answer = post(
        &app,
        "{ listReadings(filter: { recorded: { le: \"2024-02-29T12:00:00+04:00\" } }) { edges { node { takenAt } } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        answer["data"]["listReadings"]["edges"],
        json!([{ "node": { "takenAt": 2 } }, { "node": { "takenAt": 3 } }]),
        "{answer}"
    );
}

#[tokio::test]
async fn a_value_out_of_its_scalars_format_is_refused_and_nothing_is_written() {
    let app = spawn_app_with_schema("tests/fixtures/appsync-scalars/schema.graphql").await;
    for (field, bad) in [
        ("takenAt", json!("yesterday")),
        ("takenAt", json!(1.5)),
        ("at", json!("25:00")),
        ("at", json!("12:30:24.0001")),
        ("recorded", json!("2024-02-29T12:30:24.123456Z")),
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
        assert!(
            answer["data"]["createReading"].is_null(),
            "{field} {bad}: {answer}"
        );
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
