//! Sorted connections as Amplify clients page them: `sortDirection: DESC` both ways, and key
//! conditions named after the sort field (`cows(name: { beginsWith: "ev" })`), each page still
//! one Query between key bounds.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_message, error_type, spawn_app};

/// Cow names, in the order the connection sorts them (case-insensitively).
const COWS: [&str; 8] = ["Ada", "bea", "Cid", "dot", "Eve", "Evelyn", "fay", "Gus"];

/// A farm with the cows of [`COWS`], created out of order.
async fn herd(app: &TestApp) -> String {
    let farm = app.create_farm("Sorted Acres").await;
    for name in ["fay", "Ada", "Evelyn", "dot", "Gus", "bea", "Eve", "Cid"] {
        app.create_animal("Cow", name, &farm).await;
    }
    farm
}

/// One page of the farm's cows with `arguments`: the names, the page info and the storage
/// calls it cost.
async fn cows(app: &TestApp, farm: &str, arguments: &str) -> (Vec<String>, Value, Vec<String>) {
    let arguments = if arguments.is_empty() {
        String::new()
    } else {
        format!("({arguments})")
    };
    let query = format!(
        "query($f: ID!) {{ farm(id: $f) {{ cows{arguments} {{
            edges {{ node {{ name }} }}
            pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
        }} }} }}"
    );
    let (body, calls) = app.graphql_counted(&query, json!({ "f": farm })).await;
    let connection = &body["data"]["farm"]["cows"];
    let names = connection["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{arguments}: {body}"))
        .iter()
        .map(|e| e["node"]["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    (names, connection["pageInfo"].clone(), calls)
}

fn queries(calls: &[String]) -> usize {
    calls.iter().filter(|c| c.starts_with("Query")).count()
}

#[tokio::test]
async fn sort_direction_desc_pages_down_the_sort_field_both_ways() {
    let app = spawn_app().await;
    let farm = herd(&app).await;
    let descending: Vec<&str> = COWS.iter().rev().copied().collect();

    // Forward through the descending order.
    let mut seen = Vec::new();
    let mut after = String::new();
    loop {
        let arguments = if after.is_empty() {
            "sortDirection: DESC, first: 3".to_owned()
        } else {
            format!("sortDirection: DESC, first: 3, after: \"{after}\"")
        };
        let (names, info, calls) = cows(&app, &farm, &arguments).await;
        assert_eq!(queries(&calls), 1, "one Query a page: {calls:?}");
        assert_eq!(info["hasPreviousPage"], !after.is_empty());
        seen.extend(names);
        if info["hasNextPage"] == false {
            break;
        }
        after = info["endCursor"].as_str().expect("a cursor").to_owned();
    }
    assert_eq!(seen, descending, "every cow once, from the last name down");

    // Backward from its end: each page in the connection's (descending) order.
    let (names, info, _) = cows(&app, &farm, "sortDirection: DESC, last: 3").await;
    assert_eq!(names, ["Cid", "bea", "Ada"]);
    assert_eq!(info["hasPreviousPage"], true);
    let before = info["startCursor"].as_str().expect("a cursor");
    let (names, info, _) = cows(
        &app,
        &farm,
        &format!("sortDirection: DESC, last: 3, before: \"{before}\""),
    )
    .await;
    assert_eq!(names, ["Evelyn", "Eve", "dot"]);
    assert_eq!(info["hasNextPage"], true);
    let before = info["startCursor"].as_str().expect("a cursor");
    let (names, info, _) = cows(
        &app,
        &farm,
        &format!("sortDirection: DESC, last: 3, before: \"{before}\""),
    )
    .await;
    assert_eq!(names, ["Gus", "fay"]);
    assert_eq!(info["hasPreviousPage"], false);

    // ASC is the default, and says so.
    let (asc, _, _) = cows(&app, &farm, "sortDirection: ASC").await;
    let (default, _, _) = cows(&app, &farm, "").await;
    assert_eq!(asc, COWS);
    assert_eq!(default, COWS);
}

#[tokio::test]
async fn key_conditions_bound_the_query_on_the_sort_field() {
    let app = spawn_app().await;
    let farm = herd(&app).await;
    for (condition, expected) in [
        ("eq: \"EVE\"", &["Eve"][..]),
        ("lt: \"Evelyn\"", &["Ada", "bea", "Cid", "dot", "Eve"]),
        ("le: \"eve\"", &["Ada", "bea", "Cid", "dot", "Eve"]),
        ("gt: \"eve\"", &["Evelyn", "fay", "Gus"]),
        ("ge: \"Eve\"", &["Eve", "Evelyn", "fay", "Gus"]),
        ("between: [\"BEA\", \"eve\"]", &["bea", "Cid", "dot", "Eve"]),
        ("between: [\"eve\", \"bea\"]", &[]),
        ("beginsWith: \"ev\"", &["Eve", "Evelyn"]),
        ("beginsWith: \"\"", &COWS),
        ("eq: \"Zed\"", &[]),
    ] {
        let (names, info, calls) = cows(&app, &farm, &format!("name: {{ {condition} }}")).await;
        assert_eq!(names, expected, "{condition}");
        assert_eq!(info["hasNextPage"], false, "{condition}");
        assert!(queries(&calls) <= 1, "{condition}: {calls:?}");
    }

    // With paging and DESC: pages stay full and end where the condition does.
    let (names, info, calls) = cows(&app, &farm, "name: { ge: \"c\" }, first: 2").await;
    assert_eq!(names, ["Cid", "dot"]);
    assert_eq!(queries(&calls), 1);
    let after = info["endCursor"].as_str().expect("a cursor");
    let (names, info, _) = cows(
        &app,
        &farm,
        &format!("name: {{ ge: \"c\" }}, first: 4, after: \"{after}\""),
    )
    .await;
    assert_eq!(names, ["Eve", "Evelyn", "fay", "Gus"]);
    assert_eq!(info["hasNextPage"], false);
    let (names, info, _) = cows(
        &app,
        &farm,
        "name: { beginsWith: \"E\" }, sortDirection: DESC, first: 1",
    )
    .await;
    assert_eq!(names, ["Evelyn"]);
    assert_eq!(info["hasNextPage"], true);
    let after = info["endCursor"].as_str().expect("a cursor");
    let (names, info, _) = cows(
        &app,
        &farm,
        &format!(
            "name: {{ beginsWith: \"E\" }}, sortDirection: DESC, first: 1, after: \"{after}\""
        ),
    )
    .await;
    assert_eq!(names, ["Eve"]);
    assert_eq!(info["hasNextPage"], false);
}

#[tokio::test]
async fn a_key_condition_with_other_than_one_operator_is_refused() {
    let app = spawn_app().await;
    let farm = herd(&app).await;
    for (condition, said) in [
        (
            "{ ge: \"a\", le: \"z\" }",
            "give one key-condition operator, not 2",
        ),
        ("{}", "give one key-condition operator, not 0"),
        ("{ between: [\"a\"] }", "between takes two values"),
    ] {
        let body = app
            .graphql(
                &format!("query($f: ID!) {{ farm(id: $f) {{ cows(name: {condition}) {{ edges {{ cursor }} }} }} }}"),
                json!({ "f": farm }),
            )
            .await;
        assert_eq!(error_type(&body), "BadUserInput", "{condition}: {body}");
        assert!(error_message(&body).contains(said), "{condition}: {body}");
    }
}

#[tokio::test]
async fn edge_connections_take_sort_direction_too() {
    let app = spawn_app().await;
    let ann = app
        .create("User", json!({ "name": "Ann", "email": "ann@example.com" }))
        .await;
    for (title, role) in [("A", "LEAD"), ("B", "CONTRIBUTOR"), ("C", "TEAM")] {
        let goal = app
            .create("Goal", json!({ "title": title, "kind": "OBJECTIVE" }))
            .await;
        let body = app
            .graphql(
                "mutation($g: ID!, $u: ID!, $r: GoalRole!) {
                    addGoalMembership(input: { from: $g, to: $u, role: $r }) { role }
                }",
                json!({ "g": goal, "u": ann, "r": role }),
            )
            .await;
        assert!(body["errors"].is_null(), "{body}");
    }
    let roles = |body: &Value| -> Vec<String> {
        body["data"]["user"]["goals"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|e| e["role"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let (up, calls) = app
        .graphql_counted(
            "query($u: ID!) { user(id: $u) { goals { edges { role } } } }",
            json!({ "u": ann }),
        )
        .await;
    assert_eq!(
        roles(&up),
        ["TEAM", "CONTRIBUTOR", "LEAD"],
        "ranked roles, lowest first"
    );
    assert_eq!(calls, ["Query:GSI01"]);
    let (down, calls) = app
        .graphql_counted(
            "query($u: ID!) { user(id: $u) { goals(sortDirection: DESC, minRole: CONTRIBUTOR) { edges { role } } } }",
            json!({ "u": ann }),
        )
        .await;
    assert_eq!(roles(&down), ["LEAD", "CONTRIBUTOR"], "highest rank first");
    assert_eq!(calls, ["Query:GSI01"]);
}

/// Books of one shelf as `(title, pages, weight)`: negative, zero and large numbers, and titles
/// with a space, `#` and `$`, which the sort encoding escapes.
const BOOKS: [(&str, i64, f64); 6] = [
    ("a b", -5, -1.5),
    ("a", 0, 0.0),
    ("a#", 7, 0.25),
    ("a$", 42, 2.5),
    ("ab", 1000, 10.0),
    ("b", 65_536, 1e6),
];

#[tokio::test]
async fn key_conditions_on_numbers_and_escaped_text() {
    let app = crate::helpers::spawn_app_with_schema("tests/fixtures/key-conditions.graphql").await;
    let shelf = app.create("Shelf", json!({ "name": "Mixed" })).await;
    for (title, pages, weight) in BOOKS {
        app.create(
            "Book",
            json!({ "shelfId": shelf, "title": title, "pages": pages, "weight": weight }),
        )
        .await;
    }
    let titles = |field: &'static str, arguments: &'static str| {
        let app = &app;
        let shelf = shelf.clone();
        async move {
            let (body, calls) = app
                .graphql_counted(
                    &format!(
                        "query($s: ID!) {{ shelf(id: $s) {{ {field}({arguments}) {{ edges {{ node {{ title }} }} }} }} }}"
                    ),
                    json!({ "s": shelf }),
                )
                .await;
            assert_eq!(queries(&calls), 1, "{field}({arguments}): {calls:?}");
            body["data"]["shelf"][field]["edges"]
                .as_array()
                .unwrap_or_else(|| panic!("{field}({arguments}): {body}"))
                .iter()
                .map(|e| e["node"]["title"].as_str().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
        }
    };
    for (field, arguments, expected) in [
        ("byPages", "pages: { lt: 0 }", &["a b"][..]),
        ("byPages", "pages: { ge: 0 }", &["a", "a#", "a$", "ab", "b"]),
        (
            "byPages",
            "pages: { between: [-5, 42] }",
            &["a b", "a", "a#", "a$"],
        ),
        ("byPages", "pages: { gt: 1000 }", &["b"]),
        ("byPages", "pages: { eq: 7 }", &["a#"]),
        (
            "byPages",
            "pages: { le: 42 }, sortDirection: DESC",
            &["a$", "a#", "a", "a b"],
        ),
        ("byWeight", "weight: { lt: 0.25 }", &["a b", "a"]),
        (
            "byWeight",
            "weight: { between: [0.25, 10] }",
            &["a#", "a$", "ab"],
        ),
        ("byWeight", "weight: { gt: 10 }", &["b"]),
        ("byTitle", "title: { eq: \"a\" }", &["a"]),
        (
            "byTitle",
            "title: { gt: \"a\" }",
            &["a b", "a#", "a$", "ab", "b"],
        ),
        ("byTitle", "title: { lt: \"a#\" }", &["a", "a b"]),
        (
            "byTitle",
            "title: { beginsWith: \"a\" }",
            &["a", "a b", "a#", "a$", "ab"],
        ),
        ("byTitle", "title: { beginsWith: \"a \" }", &["a b"]),
        (
            "byTitle",
            "title: { between: [\"a#\", \"ab\"] }",
            &["a#", "a$", "ab"],
        ),
    ] {
        assert_eq!(
            titles(field, arguments).await,
            expected,
            "{field}({arguments})"
        );
    }
}
