//! Amplify's composite keys: an `@index` with several sort key fields, queried with its
//! composite key condition (`statusPlacedAt: { eq: { status } }`), and `@primaryKey` with
//! sort key fields, whose fields name the node in `get`, `update` and `delete`.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with_schema};

const SCHEMA: &str = "tests/fixtures/amplify-composite-keys/schema.graphql";

fn no_errors(body: &Value) {
    assert!(body.get("errors").is_none(), "{body}");
}

async fn place(app: &TestApp, customer: &str, status: &str, placed_at: &str, total: f64) {
    let body = app
        .graphql(
            "mutation($input: CreateOrderInput!) { createOrder(input: $input) { id } }",
            json!({ "input": {
                "customerId": customer, "status": status, "placedAt": placed_at, "total": total
            } }),
        )
        .await;
    no_errors(&body);
}

/// The totals of `customer`'s orders that `condition` admits, in the order read, and the
/// storage calls it took.
async fn totals(
    app: &TestApp,
    customer: &str,
    condition: Value,
    direction: &str,
) -> (Vec<f64>, Vec<String>) {
    let (body, calls) = app
        .graphql_counted(
            "query OrdersByCustomer($customerId: ID!, $statusPlacedAt: ModelOrderByCustomerCompositeKeyConditionInput, $sortDirection: ModelSortDirection) {
               ordersByCustomer(customerId: $customerId, statusPlacedAt: $statusPlacedAt, sortDirection: $sortDirection) {
                 items { total } nextToken
               }
             }",
            json!({ "customerId": customer, "statusPlacedAt": condition, "sortDirection": direction }),
        )
        .await;
    no_errors(&body);
    let totals = body["data"]["ordersByCustomer"]["items"]
        .as_array()
        .expect("a page")
        .iter()
        .map(|item| item["total"].as_f64().expect("a total"))
        .collect();
    (totals, calls)
}

#[tokio::test]
async fn an_index_with_two_sort_key_fields_sorts_by_both_and_takes_their_conditions() {
    let app = spawn_app_with_schema(SCHEMA).await;
    // Placed out of order, so that the order read is the key's and not the creation's.
    for (status, at, total) in [
        ("SHIPPED", "2026-03-02T10:00:00Z", 4.0),
        ("OPEN", "2026-03-05T10:00:00Z", 2.0),
        ("DELIVERED", "2026-01-01T10:00:00Z", 6.0),
        ("OPEN", "2026-03-01T10:00:00Z", 1.0),
        ("SHIPPED", "2026-02-01T10:00:00Z", 3.0),
        ("OPEN", "2026-04-01T10:00:00Z", 5.0),
    ] {
        place(&app, "c1", status, at, total).await;
    }
    place(&app, "c2", "OPEN", "2026-03-03T10:00:00Z", 99.0).await;

    // No condition: by status (as text: DELIVERED, OPEN, SHIPPED), then by placedAt; one Query.
    let (all, calls) = totals(&app, "c1", Value::Null, "ASC").await;
    assert_eq!(all, [6.0, 1.0, 2.0, 5.0, 3.0, 4.0]);
    assert_eq!(calls, ["Query:GSI02"], "one Query of the index");
    let (down, _) = totals(&app, "c1", Value::Null, "DESC").await;
    assert_eq!(down, [4.0, 3.0, 5.0, 2.0, 1.0, 6.0]);

    // The first field alone: every key that starts with it.
    let (open, calls) = totals(&app, "c1", json!({ "eq": { "status": "OPEN" } }), "ASC").await;
    assert_eq!(open, [1.0, 2.0, 5.0]);
    assert_eq!(calls, ["Query:GSI02"]);
    // Both fields.
    let (one, _) = totals(
        &app,
        "c1",
        json!({ "eq": { "status": "OPEN", "placedAt": "2026-03-05T10:00:00Z" } }),
        "ASC",
    )
    .await;
    assert_eq!(one, [2.0]);
    // A range of the second field under the first.
    let (between, _) = totals(
        &app,
        "c1",
        json!({ "between": [
            { "status": "OPEN", "placedAt": "2026-03-02T00:00:00Z" },
            { "status": "OPEN", "placedAt": "2026-12-31T00:00:00Z" }
        ] }),
        "ASC",
    )
    .await;
    assert_eq!(between, [2.0, 5.0]);
    // beginsWith: the first field equal, the second starting with the text given.
    let (march, _) = totals(
        &app,
        "c1",
        json!({ "beginsWith": { "status": "OPEN", "placedAt": "2026-03" } }),
        "ASC",
    )
    .await;
    assert_eq!(march, [1.0, 2.0]);
    // gt and le compare whole keys as tuples.
    let (after, _) = totals(
        &app,
        "c1",
        json!({ "gt": { "status": "OPEN", "placedAt": "2026-03-05T10:00:00Z" } }),
        "ASC",
    )
    .await;
    assert_eq!(after, [5.0, 3.0, 4.0]);
    let (up_to, _) = totals(&app, "c1", json!({ "le": { "status": "OPEN" } }), "ASC").await;
    assert_eq!(up_to, [6.0, 1.0, 2.0, 5.0]);
    let (before, _) = totals(&app, "c1", json!({ "lt": { "status": "OPEN" } }), "DESC").await;
    assert_eq!(before, [6.0]);

    // An update that changes a sort key field moves the node in the index.
    let (body, _) = app
        .graphql_counted(
            "query { ordersByCustomer(customerId: \"c1\", statusPlacedAt: { eq: { status: \"DELIVERED\" } }) { items { id } } }",
            json!({}),
        )
        .await;
    let delivered = body["data"]["ordersByCustomer"]["items"][0]["id"].clone();
    let moved = app
        .graphql(
            "mutation($id: ID!) { updateOrder(input: { id: $id, status: OPEN }) { id } }",
            json!({ "id": delivered }),
        )
        .await;
    no_errors(&moved);
    let (open, _) = totals(&app, "c1", json!({ "eq": { "status": "OPEN" } }), "ASC").await;
    assert_eq!(open, [6.0, 1.0, 2.0, 5.0]);
}

#[tokio::test]
async fn a_composite_key_condition_with_a_gap_or_a_wrong_type_is_refused() {
    let app = spawn_app_with_schema(SCHEMA).await;
    place(&app, "c1", "OPEN", "2026-03-01T10:00:00Z", 1.0).await;
    let query = "query($c: ModelOrderByCustomerCompositeKeyConditionInput) {
                   ordersByCustomer(customerId: \"c1\", statusPlacedAt: $c) { items { id } }
                 }";
    for (condition, said) in [
        (
            json!({ "eq": { "placedAt": "2026-03-01T10:00:00Z" } }),
            "statusPlacedAt: give the key's first fields, in order (status, placedAt), with no gap",
        ),
        (
            json!({ "eq": {} }),
            "statusPlacedAt: give the key's first fields, in order (status, placedAt), with no gap",
        ),
        (
            json!({ "eq": { "status": "OPEN" }, "gt": { "status": "OPEN" } }),
            "statusPlacedAt: give one key-condition operator, not 2",
        ),
        (
            json!({ "between": [{ "status": "OPEN" }] }),
            "statusPlacedAt: between takes two values, the lowest and the highest",
        ),
    ] {
        let body = app.graphql(query, json!({ "c": condition })).await;
        assert!(body["data"]["ordersByCustomer"].is_null(), "{body}");
        let message = body["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(said), "{condition}: {body}");
    }
    // A value of the wrong type fails validation, as any other.
    let body = app
        .graphql(query, json!({ "c": { "eq": { "status": 5 } } }))
        .await;
    assert!(body["errors"].is_array(), "{body}");
    assert!(body.get("data").is_none_or(Value::is_null), "{body}");
}

async fn read(app: &TestApp, device: &str, day: &str, seq: i64, value: f64) {
    let body = app
        .graphql(
            "mutation CreateReading($input: CreateReadingInput!) {
               createReading(input: $input) { deviceId day seq value }
             }",
            json!({ "input": { "deviceId": device, "day": day, "seq": seq, "value": value } }),
        )
        .await;
    no_errors(&body);
}

/// The values of `listReadings` with `arguments` (a fragment of its arguments), in order.
async fn values(app: &TestApp, variables: Value) -> (Vec<f64>, Vec<String>) {
    let (body, calls) = app
        .graphql_counted(
            "query ListReadings($deviceId: String, $daySeq: ModelReadingPrimaryCompositeKeyConditionInput, $sortDirection: ModelSortDirection, $limit: Int) {
               listReadings(deviceId: $deviceId, daySeq: $daySeq, sortDirection: $sortDirection, limit: $limit) {
                 items { value } nextToken
               }
             }",
            variables,
        )
        .await;
    no_errors(&body);
    let values = body["data"]["listReadings"]["items"]
        .as_array()
        .expect("a page")
        .iter()
        .map(|item| item["value"].as_f64().expect("a value"))
        .collect();
    (values, calls)
}

#[tokio::test]
async fn a_composite_primary_key_names_its_node_and_lists_one_key_value_sorted_by_the_others() {
    let app = spawn_app_with_schema(SCHEMA).await;
    for (device, day, seq, value) in [
        ("dev-1", "2026-03-02", 1, 3.0),
        ("dev-1", "2026-03-01", 10, 2.0),
        ("dev-1", "2026-03-01", 9, 1.0),
        ("dev-1", "2026-03-03", 1, 4.0),
        ("dev:2", "2026-03-01", 1, 50.0),
    ] {
        read(&app, device, day, seq, value).await;
    }
    // The key's values name the node: the same key again is taken, as in Amplify.
    let again = app
        .graphql(
            "mutation { createReading(input: { deviceId: \"dev-1\", day: \"2026-03-01\", seq: 9, value: 7 }) { value } }",
            json!({}),
        )
        .await;
    assert_eq!(
        again["errors"][0]["errorType"], "DynamoDB:ConditionalCheckFailedException",
        "{again}"
    );
    let get = "query GetReading($deviceId: String!, $day: AWSDate!, $seq: Int!) {
                 getReading(deviceId: $deviceId, day: $day, seq: $seq) { deviceId day seq value }
               }";
    let got = app
        .graphql(
            get,
            json!({ "deviceId": "dev-1", "day": "2026-03-01", "seq": 9 }),
        )
        .await;
    assert_eq!(
        got["data"]["getReading"],
        json!({ "deviceId": "dev-1", "day": "2026-03-01", "seq": 9, "value": 1.0 })
    );
    // A `:` (the separator of the id's parts) in a value is escaped.
    let got = app
        .graphql(
            get,
            json!({ "deviceId": "dev:2", "day": "2026-03-01", "seq": 1 }),
        )
        .await;
    assert_eq!(got["data"]["getReading"]["value"], 50.0, "{got}");

    // One device's readings, by day then by seq (as a number: 9 before 10); one Query.
    let (all, calls) = values(&app, json!({ "deviceId": "dev-1" })).await;
    assert_eq!(all, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(calls, ["Query:GSI02"]);
    let (down, _) = values(
        &app,
        json!({ "deviceId": "dev-1", "sortDirection": "DESC" }),
    )
    .await;
    assert_eq!(down, [4.0, 3.0, 2.0, 1.0]);
    let (day, _) = values(
        &app,
        json!({ "deviceId": "dev-1", "daySeq": { "eq": { "day": "2026-03-01" } } }),
    )
    .await;
    assert_eq!(day, [1.0, 2.0]);
    let (from, _) = values(
        &app,
        json!({ "deviceId": "dev-1", "daySeq": { "ge": { "day": "2026-03-01", "seq": 10 } } }),
    )
    .await;
    assert_eq!(from, [2.0, 3.0, 4.0]);
    // Pages of one key value, with nextToken, under a condition and both ways.
    for (direction, expected) in [("ASC", [2.0, 3.0, 4.0]), ("DESC", [4.0, 3.0, 2.0])] {
        let mut read = Vec::new();
        let mut token = Value::Null;
        loop {
            let body = app
                .graphql(
                    "query($t: String, $d: ModelSortDirection) {
                       listReadings(deviceId: \"dev-1\", daySeq: { ge: { day: \"2026-03-01\", seq: 10 } },
                                    sortDirection: $d, limit: 2, nextToken: $t) {
                         items { value } nextToken
                       }
                     }",
                    json!({ "t": token, "d": direction }),
                )
                .await;
            no_errors(&body);
            let page = &body["data"]["listReadings"];
            read.extend(
                page["items"]
                    .as_array()
                    .expect("items")
                    .iter()
                    .map(|i| i["value"].clone()),
            );
            token = page["nextToken"].clone();
            if token.is_null() {
                break;
            }
        }
        assert_eq!(read, expected.map(|v| json!(v)), "{direction}");
    }
    // Without the first key field, every reading; a condition without it is refused.
    let (every, _) = values(&app, json!({})).await;
    assert_eq!(every.len(), 5);
    let body = app
        .graphql(
            "query { listReadings(daySeq: { eq: { day: \"2026-03-01\" } }) { items { value } } }",
            json!({}),
        )
        .await;
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("listReadings: a condition on daySeq needs deviceId, the key's first field"),
        "{body}"
    );

    // Update and delete name the node by every key field.
    let updated = app
        .graphql(
            "mutation { updateReading(input: { deviceId: \"dev-1\", day: \"2026-03-01\", seq: 9, value: 1.5 }) { value } }",
            json!({}),
        )
        .await;
    assert_eq!(updated["data"]["updateReading"]["value"], 1.5, "{updated}");
    let missing = app
        .graphql(
            "mutation { deleteReading(input: { deviceId: \"dev-1\", day: \"2026-03-01\", seq: 8 }) { value } }",
            json!({}),
        )
        .await;
    assert_eq!(
        missing["errors"][0]["errorType"], "DynamoDB:ConditionalCheckFailedException",
        "{missing}"
    );
    let deleted = app
        .graphql(
            "mutation { deleteReading(input: { deviceId: \"dev-1\", day: \"2026-03-01\", seq: 9 }) { value } }",
            json!({}),
        )
        .await;
    assert_eq!(deleted["data"]["deleteReading"]["value"], 1.5, "{deleted}");
    let (left, _) = values(&app, json!({ "deviceId": "dev-1" })).await;
    assert_eq!(left, [2.0, 3.0, 4.0]);
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_primary_key_with_one_sort_key_field_takes_its_key_condition() {
    let app = spawn_app_with_schema(SCHEMA).await;
    for (building, number) in [("north", 12), ("north", 3), ("south", 1), ("north", 7)] {
        let body = app
            .graphql(
                "mutation($b: String!, $n: Int!) { createRoom(input: { building: $b, number: $n }) { number } }",
                json!({ "b": building, "n": number }),
            )
            .await;
        no_errors(&body);
    }
    let body = app
        .graphql(
            "query { listRooms(building: \"north\", number: { lt: 12 }) { items { number } } }",
            json!({}),
        )
        .await;
    no_errors(&body);
    assert_eq!(
        body["data"]["listRooms"]["items"],
        json!([{ "number": 3 }, { "number": 7 }])
    );
    let got = app
        .graphql(
            "query { getRoom(building: \"north\", number: 7) { building number } }",
            json!({}),
        )
        .await;
    assert_eq!(got["data"]["getRoom"]["number"], 7, "{got}");
}

#[tokio::test]
async fn a_key_is_compared_as_stored_and_text_with_separators_keeps_its_place() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let visit = "mutation($p: String!, $at: AWSDateTime!, $n: String) {
                   createVisit(input: { place: $p, at: $at, note: $n }) { place at }
                 }";
    let body = app
        .graphql(
            visit,
            json!({ "p": "barn #2", "at": "2026-03-01T10:00:00Z", "n": "first" }),
        )
        .await;
    no_errors(&body);
    assert_eq!(
        body["data"]["createVisit"]["at"],
        "2026-03-01T10:00:00.000Z"
    );
    // The same instant written another way names the same node.
    let again = app
        .graphql(
            visit,
            json!({ "p": "barn #2", "at": "2026-03-01T11:00:00+01:00" }),
        )
        .await;
    assert_eq!(
        again["errors"][0]["errorType"], "DynamoDB:ConditionalCheckFailedException",
        "{again}"
    );
    for at in ["2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00Z"] {
        let got = app
            .graphql(
                "query($at: AWSDateTime!) { getVisit(place: \"barn #2\", at: $at) { note } }",
                json!({ "at": at }),
            )
            .await;
        assert_eq!(got["data"]["getVisit"]["note"], "first", "{at}: {got}");
    }
    // Text holding spaces and `#` sorts in its place in a composite sort key, and a value's
    // condition does not take in the values that start with it.
    for (author, title) in [
        ("Anna", "e"),
        ("Ann 2", "c"),
        ("Ann", "a"),
        ("ann b", "d"),
        ("Ann #2", "b"),
    ] {
        let body = app
            .graphql(
                "mutation($a: String!, $t: String!) {
                   createBook(input: { shelf: \"s1\", author: $a, title: $t }) { id }
                 }",
                json!({ "a": author, "t": title }),
            )
            .await;
        no_errors(&body);
    }
    let titles = |condition: Value| {
        let app = &app;
        async move {
            let body = app
                .graphql(
                    "query($c: ModelBookByShelfCompositeKeyConditionInput) {
                       booksByShelf(shelf: \"s1\", authorTitle: $c) { items { title } }
                     }",
                    json!({ "c": condition }),
                )
                .await;
            no_errors(&body);
            body["data"]["booksByShelf"]["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|item| item["title"].as_str().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(titles(Value::Null).await, ["a", "b", "c", "d", "e"]);
    assert_eq!(titles(json!({ "eq": { "author": "ann" } })).await, ["a"]);
    assert_eq!(
        titles(json!({ "eq": { "author": "Ann #2", "title": "b" } })).await,
        ["b"]
    );
    assert_eq!(
        titles(json!({ "beginsWith": { "author": "Ann" } })).await,
        ["a", "b", "c", "d", "e"]
    );
    assert_eq!(
        titles(json!({ "beginsWith": { "author": "Ann " } })).await,
        ["b", "c", "d"]
    );
    assert_eq!(
        titles(json!({ "gt": { "author": "Ann" } })).await,
        ["b", "c", "d", "e"]
    );
}
