//! Bad input gets a clear error and changes nothing: never a 500, never a partial write.

use serde_json::{Value, json};

use crate::helpers::{error_message, error_type, spawn_app};

const COWS: &str = "query($farm: ID!, $first: Int, $after: String, $last: Int) {
    farm(id: $farm) { cows(first: $first, after: $after, last: $last) { edges { cursor node { name } } } }
}";

#[tokio::test]
async fn malformed_graphql_is_a_request_error() {
    let app = spawn_app().await;
    for query in [
        "{ farm(id: ",
        "{ tractor { id } }",
        "mutation { createFarm }",
        "",
    ] {
        let body = app.graphql(query, json!({})).await;
        assert!(body["errors"][0]["message"].is_string(), "{query}: {body}");
        assert_eq!(body["data"], Value::Null, "{query}: {body}");
    }
}

#[tokio::test]
async fn unknown_ids_answer_null() {
    let app = spawn_app().await;
    let body = app
        .graphql(
            "{ farm(id: \"01000000-0000-7000-8000-000000000000\") { id } cow(id: \"not-an-id-at-all\") { id } }",
            json!({}),
        )
        .await;
    assert_eq!(body["data"], json!({ "farm": null, "cow": null }));
    assert!(body["errors"].is_null(), "{body}");
}

#[tokio::test]
async fn ids_containing_a_hash_are_refused() {
    let app = spawn_app().await;
    for query in [
        "{ farm(id: \"Farm#name#x\") { id } }",
        "{ node(id: \"1#2\") { id } }",
        "{ nodes(ids: [\"ok\", \"NODE#1\"]) { id } }",
        "mutation { deleteFarm(id: \"a#b\") { id } }",
        "mutation { createCow(input: { name: \"x\", farmId: \"a#b\" }) { id } }",
    ] {
        let body = app.graphql(query, json!({})).await;
        assert_eq!(error_type(&body), "BadUserInput", "{query}: {body}");
        assert!(
            error_message(&body).contains('#'),
            "the message says what is wrong: {body}"
        );
    }
}

#[tokio::test]
async fn a_reference_to_a_missing_node_or_a_node_of_another_type_is_refused() {
    let app = spawn_app().await;
    let farm = app.create_farm("Real").await;
    let cow = app.create_animal("Cow", "Bessie", &farm).await;
    for farm_id in [cow.as_str(), "01000000-0000-7000-8000-000000000000"] {
        let body = app
            .graphql(
                "mutation($farm: ID!) { createCow(input: { name: \"Orphan\", farmId: $farm }) { id } }",
                json!({ "farm": farm_id }),
            )
            .await;
        assert_eq!(error_type(&body), "BadUserInput", "{body}");
        assert!(error_message(&body).contains("no Farm"), "{body}");
    }
    // Nothing was written: the farm still has only Bessie.
    let body = app.graphql(COWS, json!({ "farm": farm })).await;
    let edges = body["data"]["farm"]["cows"]["edges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(edges.len(), 1, "{body}");
    // Moving a cow onto a missing farm fails the same way and leaves it where it was.
    let body = app
        .graphql(
            "mutation($id: ID!) { updateCow(input: { id: $id, farmId: \"01000000-0000-7000-8000-000000000000\" }) { id } }",
            json!({ "id": cow }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    let body = app
        .graphql(
            "query($id: ID!) { cow(id: $id) { farm { name } version } }",
            json!({ "id": cow }),
        )
        .await;
    assert_eq!(
        body["data"]["cow"],
        json!({ "farm": { "name": "Real" }, "version": 1 })
    );
}

#[tokio::test]
async fn forged_and_foreign_cursors_are_refused() {
    let app = spawn_app().await;
    let farm = app.create_farm("Cursor Farm").await;
    let other = app.create_farm("Other Farm").await;
    for name in ["a", "b"] {
        app.create_animal("Cow", name, &farm).await;
        app.create_animal("Cow", name, &other).await;
    }
    let body = app
        .graphql(COWS, json!({ "farm": other, "first": 1 }))
        .await;
    let foreign = body["data"]["farm"]["cows"]["edges"][0]["cursor"].clone();
    assert!(foreign.is_string(), "{body}");
    for cursor in [
        foreign,
        json!("not-a-cursor"),
        json!("YzE6RmFybS5jb3dzOngKeCN5"),
        json!(""),
    ] {
        let body = app
            .graphql(COWS, json!({ "farm": farm, "first": 1, "after": cursor }))
            .await;
        assert_eq!(error_type(&body), "BadUserInput", "{cursor}: {body}");
    }
}

#[tokio::test]
async fn page_sizes_outside_the_limits_are_refused() {
    let app = spawn_app().await;
    let farm = app.create_farm("Big").await;
    for vars in [
        json!({ "farm": farm, "first": 1000 }),
        json!({ "farm": farm, "first": -1 }),
        json!({ "farm": farm, "last": 101 }),
        json!({ "farm": farm, "first": 1, "last": 1 }),
    ] {
        let body = app.graphql(COWS, vars.clone()).await;
        assert_eq!(error_type(&body), "BadUserInput", "{vars}: {body}");
    }
    let body = app
        .graphql(COWS, json!({ "farm": farm, "first": 100 }))
        .await;
    assert!(body["errors"].is_null(), "{body}");
}

#[tokio::test]
async fn empty_and_oversized_names_are_refused_before_anything_is_written() {
    let app = spawn_app().await;
    let farm = app.create_farm("Sized").await;
    let huge = "x".repeat(500 * 1024);
    for (query, vars) in [
        (
            "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
            json!({ "n": "" }),
        ),
        (
            "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
            json!({ "n": "   " }),
        ),
        (
            "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
            json!({ "n": huge }),
        ),
        (
            "mutation($n: String!, $f: ID!) { createCow(input: { name: $n, farmId: $f }) { id } }",
            json!({ "n": huge, "f": farm }),
        ),
        (
            "mutation($n: String!, $f: ID!) { updateFarm(input: { id: $f, name: $n }) { id } }",
            json!({ "n": huge, "f": farm }),
        ),
    ] {
        let (body, calls) = app.graphql_counted(query, vars).await;
        assert_eq!(error_type(&body), "BadUserInput", "{body}");
        let writes: Vec<&String> = calls.iter().filter(|c| !c.starts_with("GetItem")).collect();
        assert!(writes.is_empty(), "nothing reaches the store: {calls:?}");
    }
    let body = app
        .graphql(
            "query($f: ID!) { farm(id: $f) { name version } }",
            json!({ "f": farm }),
        )
        .await;
    assert_eq!(
        body["data"]["farm"],
        json!({ "name": "Sized", "version": 1 })
    );
}

#[tokio::test]
async fn a_null_for_a_required_field_in_an_update_is_refused() {
    let app = spawn_app().await;
    let farm = app.create_farm("Named").await;
    let body = app
        .graphql(
            "mutation($f: ID!) { updateFarm(input: { id: $f, name: null }) { name } }",
            json!({ "f": farm }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
}

#[tokio::test]
async fn too_many_ids_for_nodes_are_refused() {
    let app = spawn_app().await;
    let ids: Vec<String> = (0..101).map(|n| format!("id-{n}")).collect();
    let body = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": ids }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
}

#[tokio::test]
async fn a_name_too_long_for_a_unique_key_is_refused_and_never_looked_up() {
    let app = spawn_app().await;
    let farm = app.create_farm("Modest").await;
    let long = "n".repeat(1500);
    for (query, vars) in [
        (
            "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
            json!({ "n": long }),
        ),
        (
            "mutation($n: String!, $f: ID!) { updateFarm(input: { id: $f, name: $n }) { id } }",
            json!({ "n": long, "f": farm }),
        ),
    ] {
        let body = app.graphql(query, vars).await;
        assert_eq!(error_type(&body), "BadUserInput", "{body}");
    }
    // A lookup of such a name finds nothing, and does not spoil the reads beside it.
    let body = app
        .graphql(
            "query($n: String!, $f: ID!) { farmByName(name: $n) { id } farm(id: $f) { name } }",
            json!({ "n": long, "f": farm }),
        )
        .await;
    assert_eq!(
        body["data"],
        json!({ "farmByName": null, "farm": { "name": "Modest" } }),
        "{body}"
    );
}

#[tokio::test]
async fn a_request_that_fans_out_past_its_call_budget_is_refused() {
    let app = crate::helpers::spawn_app_scoped(tablegraph::engine::ScopeSettings {
        max_storage_calls: 3,
        ..Default::default()
    })
    .await;
    let mut farms = Vec::new();
    for n in 0..4 {
        farms.push(app.create_farm(&format!("Fan {n}")).await);
    }
    // One BatchGetItem for the farms, then a Query per farm: five calls.
    let body = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Farm { cows { edges { cursor } } } } }",
            json!({ "ids": farms }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert!(error_message(&body).contains("storage calls"), "{body}");
}

/// A document: `head`, then `part(n)` for n = 0, 1, … `count` times, then `tail`.
fn repeated(head: &str, part: impl Fn(usize) -> String, tail: &str, count: usize) -> String {
    let mut document = String::from(head);
    for n in 0..count {
        document.push_str(&part(n));
    }
    document.push_str(tail);
    document
}

#[tokio::test]
async fn a_small_request_never_makes_a_large_answer() {
    let app = spawn_app().await;
    let long_name = "a".repeat(500 * 1024);
    // Each shape within the token limit but past its own; then one past the token limit.
    let shapes = [
        (
            "arguments",
            repeated("{ farm(", |_| "id: \"x\" ".into(), ") { id } }", 1000),
        ),
        (
            "arguments",
            repeated(
                "{ farm(id: \"x\" ",
                |n| format!("a{n}: 1 "),
                ") { id } }",
                1000,
            ),
        ),
        (
            "variables",
            repeated(
                "query(",
                |n| format!("$v{n}: Int "),
                ") { __typename }",
                1000,
            ),
        ),
        (
            "directives",
            repeated("{ __typename ", |_| "@skip(if: false) ".into(), "}", 1000),
        ),
        (
            "definitions",
            repeated(
                "{ __typename } ",
                |n| format!("fragment f{n} on Query {{ __typename }} "),
                "",
                1500,
            ),
        ),
        ("nameLength", format!("{{ {long_name} }}")),
        (
            "nameLength",
            format!("{{ farm(id: \"x\") {{ id }} }} fragment {long_name} on Farm {{ id }}"),
        ),
        (
            "tokens",
            repeated("{ farm(", |_| "id: \"x\" ".into(), ") { id } }", 80_000),
        ),
    ];
    for (limit, document) in shapes {
        let body = app.graphql(&document, json!({})).await;
        let answer = body.to_string();
        assert_eq!(
            error_type(&body),
            "QueryLimitExceeded",
            "{limit}: {}",
            &answer[..answer.len().min(500)]
        );
        assert_eq!(body["errors"][0]["extensions"]["limit"], limit);
        assert_eq!(body["errors"].as_array().map(Vec::len), Some(1));
        assert!(answer.len() < 1024, "{limit}: {} bytes", answer.len());
        assert!(!answer.contains("aaaaaaaa"), "nothing echoed");
    }
}

#[tokio::test]
async fn an_int_variable_is_refused_where_an_id_belongs_and_an_integer_id_is_its_string() {
    let app = spawn_app().await;
    // "Variables in allowed positions": an Int variable is not an ID, at the root or inside a
    // list or an input object.
    for query in [
        "query($id: Int!) { farm(id: $id) { id } }",
        "query($id: Int!) { nodes(ids: [$id]) { id } }",
        "mutation($id: Int!) { createCow(input: { name: \"c\", farmId: $id }) { id } }",
    ] {
        let body = app.graphql(query, json!({ "id": 5 })).await;
        assert!(body.get("data").is_none(), "{query}: {body}");
        let message = error_message(&body);
        assert!(
            message.contains("$id") && !message.contains("internal"),
            "{query}: {body}"
        );
    }
    // An integer given for an ID variable, or written as a literal, is coerced to its string.
    let id = app.create_farm("Coerced").await;
    for (query, variables) in [
        (
            "query($id: ID!) { farm(id: $id) { id } }",
            json!({ "id": 5 }),
        ),
        ("{ farm(id: 5) { id } }", json!({})),
        (
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": [5] }),
        ),
    ] {
        let body = app.graphql(query, variables).await;
        let answer = body.to_string();
        assert!(!answer.contains("internal"), "{query}: {answer}");
        assert!(
            body["errors"].is_null() || error_type(&body) == "BadUserInput",
            "{query}: {answer}"
        );
    }
    let body = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": [id, 5] }),
        )
        .await;
    assert_eq!(body["data"]["nodes"][0]["id"], json!(id), "{body}");
}

#[tokio::test]
async fn a_body_nested_past_json_s_limit_is_told_so() {
    let app = spawn_app().await;
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let response = reqwest::Client::new()
        .post(app.url("/graphql"))
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"query": "{{ __typename }}", "variables": {{"a": {deep}}}}}"#
        ))
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(
        error_message(&body),
        "the body nests arrays and objects deeper than 128 levels, the most a JSON body may"
    );
}

#[tokio::test]
async fn an_operation_name_is_held_to_the_length_of_any_other_name() {
    let app = spawn_app().await;
    let long_name = "a".repeat(500 * 1024);
    let body: Value = reqwest::Client::new()
        .post(app.url("/graphql"))
        .json(&json!({ "query": "{ __typename }", "operationName": long_name }))
        .send()
        .await
        .expect("an answer")
        .json()
        .await
        .expect("JSON");
    let answer = body.to_string();
    assert_eq!(
        error_type(&body),
        "QueryLimitExceeded",
        "{}",
        &answer[..answer.len().min(300)]
    );
    assert_eq!(body["errors"][0]["extensions"]["limit"], "nameLength");
    assert!(
        answer.len() < 1024,
        "nothing echoed: {} bytes",
        answer.len()
    );
}

#[tokio::test]
async fn an_answer_carries_at_most_a_hundred_errors_and_counts_the_rest() {
    let app = spawn_app().await;
    let document = repeated("{ farm(id: \"x\") { ", |n| format!("a{n} "), "} }", 5000);
    let fields = document.matches(" a").count();
    let body = app.graphql(&document, json!({})).await;
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 101, "{}", &body.to_string()[..300]);
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("a0"))
    );
    let last = &errors[100];
    assert_eq!(last["extensions"]["errorType"], "TooManyErrors", "{last}");
    assert_eq!(last["extensions"]["leftOut"], json!(fields - 100));
    assert!(body.to_string().len() < 100 * 1024);
}

#[tokio::test]
async fn an_int_outside_32_bits_is_refused_wherever_it_is_given() {
    let app = spawn_app().await;
    let farm = app.create_farm("Ints").await;
    for (query, variables) in [
        (
            "query($farm: ID!) { farm(id: $farm) { cows(first: -2147483649) { edges { cursor } } } }",
            json!({ "farm": farm }),
        ),
        (COWS, json!({ "farm": farm, "first": 2_147_483_648_i64 })),
        (
            "query($farm: ID!, $page: [Int]) { farm(id: $farm) { cows(first: 1) { edges { cursor } } } }",
            json!({ "farm": farm, "page": [1, 9_007_199_254_740_993_i64] }),
        ),
    ] {
        let body = app.graphql(query, variables).await;
        assert_eq!(error_type(&body), "BadUserInput", "{body}");
        assert!(
            error_message(&body).contains("Int cannot represent"),
            "{body}"
        );
        assert!(body.get("data").is_none(), "refused before it ran: {body}");
    }
    // A variable's default counts; another operation's variable of the same name does not.
    let body = app
        .graphql(
            "query($farm: ID!, $first: Int = 3000000000) { farm(id: $farm) { cows(first: $first) { edges { cursor } } } }",
            json!({ "farm": farm }),
        )
        .await;
    assert!(
        error_message(&body).contains("Int cannot represent"),
        "{body}"
    );
    let two = "query A($x: Int) { farm(id: \"a\") { cows(first: $x) { edges { cursor } } } }
        query B($x: Float) { __typename }";
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": two, "operationName": "B", "variables": { "x": 3e10 } }))
        .send()
        .await
        .expect("the server answers");
    let body: Value = response.json().await.expect("JSON");
    assert!(
        !error_message(&body).contains("Int cannot represent"),
        "{body}"
    );
    // At the edge of 32 bits it is an Int; the page size limit then speaks.
    let body = app
        .graphql(COWS, json!({ "farm": farm, "first": 2_147_483_647_i64 }))
        .await;
    assert!(
        !error_message(&body).contains("Int cannot represent"),
        "{body}"
    );
}

/// Every error a client is answered names its AppSync `errorType`: a document that does not
/// parse or validate, a bad scalar in a literal or a variable, a body that is no GraphQL
/// request, and the same over GET.
#[tokio::test]
async fn every_error_names_its_error_type() {
    let app = spawn_app().await;
    let post = |body: String| {
        app.client
            .post(app.url("/graphql"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let request = |query: &str, variables: Value| {
        json!({ "query": query, "variables": variables }).to_string()
    };
    let cases = [
        (
            "unknown field",
            request("{ listFarms { edges { node { nam } } } }", json!({})),
            "ValidationError",
        ),
        ("syntax", request("{ farm(id: ", json!({})), "InvalidSyntax"),
        (
            "AWSEmail literal",
            request(
                "mutation { createUser(input: { name: \"A\", email: \"not-an-email\" }) { id } }",
                json!({}),
            ),
            "ValidationError",
        ),
        (
            "AWSEmail variable",
            request(
                "mutation($input: CreateUserInput!) { createUser(input: $input) { id } }",
                json!({ "input": { "name": "A", "email": "not-an-email" } }),
            ),
            "ValidationError",
        ),
        (
            "missing query",
            json!({ "variables": {} }).to_string(),
            "BadRequestException",
        ),
        ("not JSON", "{ nope".to_owned(), "BadRequestException"),
    ];
    for (case, body, expected) in cases {
        let response = post(body).await.expect("an answer");
        assert!(response.status().as_u16() < 500, "{case}");
        let body: Value = response.json().await.expect("JSON");
        let errors = body["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("{case}: {body}"));
        assert!(!errors.is_empty(), "{case}: {body}");
        for error in errors {
            assert_eq!(error["extensions"]["errorType"], expected, "{case}: {body}");
        }
    }
    let response = app
        .client
        .get(app.url("/graphql?variables=%7B%7D"))
        .send()
        .await
        .expect("an answer");
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"], "BadRequestException",
        "{body}"
    );
    // Nothing was written.
    let body = app.graphql("{ listUsers { totalCount } }", json!({})).await;
    assert_eq!(body["data"]["listUsers"]["totalCount"], 0, "{body}");
}
