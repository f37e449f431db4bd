//! Limits on what one request may ask: depth, cost, aliases, root fields, batches. Each answers
//! a request error naming the limit, before any storage call.

use serde_json::{Value, json};
use tablegraph::config::HttpConfig;
use tablegraph::graphql::{QueryLimits, SchemaOptions};

use crate::helpers::{TestApp, error_message, error_type, spawn_app, spawn_app_with};

const UNKNOWN_TEAM: &str = "01000000-0000-7000-8000-000000000000";

/// Asserts `body` is a request error for `limit` and that nothing was read.
fn assert_refused(body: &Value, calls: &[String], limit: &str) {
    assert_eq!(error_type(body), "QueryLimitExceeded", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["limit"], limit, "{body}");
    assert!(
        body.get("data").is_none(),
        "a request error has no data: {body}"
    );
    assert!(calls.is_empty(), "nothing is read: {calls:?}");
}

fn assert_ran(body: &Value) {
    assert!(body["errors"].is_null(), "{body}");
    assert!(body["data"].is_object(), "{body}");
}

fn nested_parents(levels: usize) -> String {
    let mut query = String::from("id");
    for _ in 0..levels {
        query = format!("parent {{ {query} }}");
    }
    format!("{{ goal(id: \"{UNKNOWN_TEAM}\") {{ {query} }} }}")
}

fn with_limits(limits: QueryLimits) -> HttpConfig {
    HttpConfig {
        graphql: SchemaOptions {
            limits,
            ..SchemaOptions::default()
        },
        ..HttpConfig::default()
    }
}

#[tokio::test]
async fn depth_is_limited() {
    let app = spawn_app().await;
    // goal, 14 parents and id: 16 levels, the default limit.
    let (body, _) = app.graphql_counted(&nested_parents(14), json!({})).await;
    assert_ran(&body);
    let (body, calls) = app.graphql_counted(&nested_parents(15), json!({})).await;
    assert_refused(&body, &calls, "depth");
    assert_eq!(
        error_message(&body),
        "the query nests at least 17 levels deep; at most 16 are allowed"
    );
}

const TEAM_GOALS_MEMBERS: &str = "query($team: ID!, $n: Int) {
    team(id: $team) { goals(first: $n) { edges { node { members(first: 100) { edges { node { __typename } } } } } } }
}";

#[tokio::test]
async fn page_sizes_multiply_into_the_cost() {
    let app = spawn_app_with(with_limits(QueryLimits {
        max_cost: 1000,
        ..QueryLimits::default()
    }))
    .await;
    // team 1, goals 1, then per goal: edges, node, members, and 100 × (edges, node, __typename).
    // n = 3 costs 2 + 3 × 303 = 911.
    let (body, _) = app
        .graphql_counted(TEAM_GOALS_MEMBERS, json!({ "team": UNKNOWN_TEAM, "n": 3 }))
        .await;
    assert_ran(&body);
    let (body, calls) = app
        .graphql_counted(TEAM_GOALS_MEMBERS, json!({ "team": UNKNOWN_TEAM, "n": 4 }))
        .await;
    assert_refused(&body, &calls, "cost");
    assert!(
        error_message(&body).contains("costs at least 1214"),
        "{body}"
    );
    // The measure stops soon after the limit: what it tells is a bound it is sure of, never
    // a total it did not reach (n = 100 costs 2 + 100 × 303 = 30302).
    let (body, calls) = app
        .graphql_counted(
            TEAM_GOALS_MEMBERS,
            json!({ "team": UNKNOWN_TEAM, "n": 100 }),
        )
        .await;
    assert_refused(&body, &calls, "cost");
    let message = error_message(&body);
    let told: u64 = message
        .split("costs at least ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a bound in {message}"));
    assert!((1001..=30302).contains(&told), "{message}");
}

#[tokio::test]
async fn a_connection_without_a_page_size_costs_its_default_page() {
    let app = spawn_app_with(with_limits(QueryLimits {
        max_cost: 100,
        ..QueryLimits::default()
    }))
    .await;
    // team, goals, then 20 × (edges, node, title) = 62; with members' default page 20 inside:
    // 2 + 20 × (3 + 20 × 3) = 1262.
    let query = "query($team: ID!) { team(id: $team) { goals { edges { node { title } } } } }";
    let (body, _) = app
        .graphql_counted(query, json!({ "team": UNKNOWN_TEAM }))
        .await;
    assert_ran(&body);
    let query = "query($team: ID!) { team(id: $team) { goals { edges { node { members { edges { node { __typename } } } } } } } }";
    let (body, calls) = app
        .graphql_counted(query, json!({ "team": UNKNOWN_TEAM }))
        .await;
    assert_refused(&body, &calls, "cost");
}

fn aliased_typenames(count: usize) -> String {
    let fields: Vec<String> = (0..count).map(|i| format!("a{i}: __typename")).collect();
    format!("{{ {} }}", fields.join(" "))
}

#[tokio::test]
async fn aliases_are_limited_and_count_where_fragments_are_spread() {
    let app = spawn_app_with(with_limits(QueryLimits {
        max_root_fields: 100,
        ..QueryLimits::default()
    }))
    .await;
    let (body, _) = app.graphql_counted(&aliased_typenames(30), json!({})).await;
    assert_ran(&body);
    let (body, calls) = app.graphql_counted(&aliased_typenames(31), json!({})).await;
    assert_refused(&body, &calls, "aliases");

    // 8 aliases in a fragment, spread 4 times: 32 aliases.
    let query = "query($team: ID!) {
        t1: team(id: $team) { ...Names } t2: team(id: $team) { ...Names }
        t3: team(id: $team) { ...Names } t4: team(id: $team) { ...Names }
    }
    fragment Names on Team { a: name b: name c: name d: name e: name f: name g: name h: name }";
    let (body, calls) = app
        .graphql_counted(query, json!({ "team": UNKNOWN_TEAM }))
        .await;
    assert_refused(&body, &calls, "aliases");
}

#[tokio::test]
async fn root_fields_are_limited() {
    let app = spawn_app().await;
    let root = |count: usize| format!("{{ {} }}", vec!["__typename"; count].join(" "));
    let (body, _) = app.graphql_counted(&root(20), json!({})).await;
    assert_ran(&body);
    let (body, calls) = app.graphql_counted(&root(21), json!({})).await;
    assert_refused(&body, &calls, "rootFields");
}

/// A request error answers 400 without `data` to a client that accepts
/// `application/graphql-response+json`, and 200 without `data` to one that only knows JSON.
async fn post_raw(app: &TestApp, accept: &str, body: &Value) -> (u16, Value) {
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("accept", accept)
        .json(body)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

#[tokio::test]
async fn a_limit_is_a_request_error_in_both_media_types() {
    let app = spawn_app().await;
    let request = json!({ "query": nested_parents(20) });
    let (status, body) = post_raw(&app, "application/graphql-response+json", &request).await;
    assert_eq!(status, 400);
    assert!(body.get("data").is_none(), "{body}");
    let (status, body) = post_raw(&app, "application/json", &request).await;
    assert_eq!(status, 200);
    assert!(body.get("data").is_none(), "{body}");
    assert_eq!(error_type(&body), "QueryLimitExceeded");
}

#[tokio::test]
async fn batches_are_refused() {
    let app = spawn_app().await;
    let batch = json!([{ "query": "{ __typename }" }, { "query": "{ __typename }" }]);
    let (status, body) = post_raw(&app, "application/graphql-response+json", &batch).await;
    assert_eq!(status, 400);
    assert_eq!(error_message(&body), "batched requests are not supported");
}

#[tokio::test]
async fn the_full_introspection_query_of_graphiql_fits_the_default_limits() {
    // graphql-js 16's getIntrospectionQuery with every option on, as GraphiQL sends it.
    let query = include_str!("../fixtures/introspection.graphql");
    let app = spawn_app().await;
    let body = app.graphql(query, json!({})).await;
    assert_ran(&body);
    assert!(
        body["data"]["__schema"]["types"]
            .as_array()
            .is_some_and(|t| t.len() > 20)
    );
}

/// The HTTP settings `tablegraph serve` runs with, given these flags.
fn serve_flags(flags: &[&str]) -> HttpConfig {
    use clap::Parser as _;
    let argv = ["tablegraph", "serve"].iter().chain(flags);
    match tablegraph::cli::Cli::try_parse_from(argv)
        .expect("valid flags")
        .command
    {
        tablegraph::cli::Command::Serve(serve) => serve.config().http,
        other => panic!("parsed as {other:?}"),
    }
}

#[tokio::test]
async fn production_mode_hides_the_schema_graphiql_and_storage_calls() {
    let typo = "{ farmm(id: \"x\") { id } }";
    let open = spawn_app().await;
    let body = open.graphql(typo, json!({})).await;
    assert!(error_message(&body).contains("Did you mean"), "{body}");

    let app = spawn_app_with(serve_flags(&["--production"])).await;
    let body = app
        .graphql("{ __schema { types { name } } }", json!({}))
        .await;
    assert!(body.get("data").is_none(), "introspection is off: {body}");
    let body = app.graphql(typo, json!({})).await;
    assert!(!error_message(&body).contains("Did you mean"), "{body}");
    // Errors name nothing of the schema the client did not send (`Query`, `Farm`, `id`)...
    for (query, hidden) in [
        (typo, "Query"),
        ("{ farm(id: \"x\") { nope } }", "Farm"),
        // A guess in a comment or a string confirms nothing.
        ("{ farm(id: \"Farm\") { nope } } # Farm", "on type \"Farm\""),
        ("{ farm { name } }", "\"id\""),
    ] {
        let body = app.graphql(query, json!({})).await;
        let message = error_message(&body);
        assert!(!message.contains(hidden), "{message}");
        assert!(message.contains("does not fit this API"), "{message}");
        assert!(body["errors"][0]["locations"].is_array(), "{body}");
        let open_body = open.graphql(query, json!({})).await;
        assert!(error_message(&open_body).contains(hidden), "{open_body}");
    }
    // ...but say what is wrong with what it did send.
    let body = app
        .graphql("query($unused: Int) { __typename }", json!({}))
        .await;
    assert!(error_message(&body).contains("$unused"), "{body}");
    let page = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("answers");
    assert_ne!(page.status(), 200, "no GraphiQL");
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("x-tablegraph-storage-calls", "1")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("answers");
    let body: Value = response.json().await.expect("JSON");
    assert!(body["extensions"]["storageCalls"].is_null(), "{body}");
}

#[tokio::test]
async fn limits_come_from_flags() {
    let http = serve_flags(&["--max-depth", "3", "--max-aliases", "1"]);
    let app = spawn_app_with(http).await;
    let (body, calls) = app.graphql_counted(&nested_parents(2), json!({})).await;
    assert_refused(&body, &calls, "depth");
    let (body, calls) = app.graphql_counted(&aliased_typenames(2), json!({})).await;
    assert_refused(&body, &calls, "aliases");
}

#[tokio::test]
async fn a_page_size_from_a_variable_default_counts() {
    let app = spawn_app_with(with_limits(QueryLimits {
        max_cost: 1000,
        ..QueryLimits::default()
    }))
    .await;
    // n left out: its default 4 counts, 2 + 4 × 303 = 1214.
    let query = "query($team: ID!, $n: Int = 4) {
        team(id: $team) { goals(first: $n) { edges { node { members(first: 100) { edges { node { __typename } } } } } } }
    }";
    let (body, calls) = app
        .graphql_counted(query, json!({ "team": UNKNOWN_TEAM }))
        .await;
    assert_refused(&body, &calls, "cost");
    assert!(
        error_message(&body).contains("costs at least 1214"),
        "{body}"
    );
}

#[tokio::test]
async fn introspection_lists_nest_at_most_two_deep() {
    let app = spawn_app().await;
    let (body, _) = app
        .graphql_counted(
            "{ __schema { types { interfaces { possibleTypes { name } } } } }",
            json!({}),
        )
        .await;
    assert_ran(&body);
    let (body, calls) = app
        .graphql_counted(
            "{ __schema { types { interfaces { possibleTypes { interfaces { name } } } } } }",
            json!({}),
        )
        .await;
    assert_refused(&body, &calls, "introspectionDepth");
}

#[tokio::test]
async fn fragments_that_fan_out_exponentially_are_refused() {
    // F0 spreads F1 twice, F1 spreads F2 twice, …: 2^24 fields once expanded.
    let mut query = String::from("{ ...F0 }\n");
    for level in 0..24 {
        query.push_str(&format!(
            "fragment F{level} on Query {{ ...F{next} ...F{next} }}\n",
            next = level + 1
        ));
    }
    query.push_str("fragment F24 on Query { __typename }\n");
    let app = spawn_app().await;
    let (body, calls) = app.graphql_counted(&query, json!({})).await;
    assert_refused(&body, &calls, "rootFields");
}

#[tokio::test]
async fn a_long_chain_of_fragments_is_refused_and_the_server_lives_on() {
    // Each fragment spreads the next: 20 000 of them in one 800 KB document. A recursive walk
    // over it would overflow a worker's stack and abort the process.
    let chain = 20_000;
    let mut query = String::from("{ ...F0 }");
    for n in 0..chain {
        query.push_str(&format!(" fragment F{n} on Query {{ ...F{} }}", n + 1));
    }
    query.push_str(&format!(
        " fragment F{chain} on Query {{ nodes(ids: []) {{ id }} }}"
    ));
    let app = spawn_app().await;
    let (body, calls) = app.graphql_counted(&query, json!({})).await;
    assert!(!body["errors"].is_null(), "{body}");
    assert!(
        body.get("data").is_none(),
        "a request error has no data: {body}"
    );
    assert!(calls.is_empty(), "nothing is read: {calls:?}");
    let body = app.graphql("{ __typename }", json!({})).await;
    assert_eq!(body["data"]["__typename"], "Query", "{body}");
}

/// `createGoal` with an input whose sub-goals nest `levels` deep, written as a literal: three
/// brackets a level.
fn nested_goal_literal(levels: usize) -> String {
    let mut input = String::from("{ title: \"leaf\", kind: OBJECTIVE }");
    for _ in 0..levels {
        input = format!("{{ title: \"g\", kind: OBJECTIVE, children: {{ create: [{input}] }} }}");
    }
    format!("mutation {{ createGoal(input: {input}) {{ id }} }}")
}

#[tokio::test]
async fn brackets_nested_past_the_limit_are_refused_before_parsing_and_the_server_lives_on() {
    let app = spawn_app().await;
    // Inside the limit: a tree of 31 goals, one transaction.
    let (body, _) = app
        .graphql_counted(&nested_goal_literal(30), json!({}))
        .await;
    assert_ran(&body);
    assert_eq!(app.assert_table_consistent().await.nodes, 31);
    // Deep enough to overflow the parser's stack once; in strings and comments brackets do not
    // count.
    for query in [
        nested_goal_literal(45),
        nested_goal_literal(2000),
        format!("{{ a(x: {}1{}) }}", "[".repeat(3000), "]".repeat(3000)),
        // An unterminated block string is `""` and a string: what follows it counts.
        format!(
            "{{ a(x: [\"\"\"x\", {}1{}]) }}",
            "{a:".repeat(450),
            "}".repeat(450)
        ),
    ] {
        let (body, calls) = app.graphql_counted(&query, json!({})).await;
        assert_refused(&body, &calls, "nesting");
    }
    // A byte-order mark parts tokens as white space does.
    let bom = format!("{{ a(x: [{}1]) }}", "1\u{feff}".repeat(20_000));
    let (body, calls) = app.graphql_counted(&bom, json!({})).await;
    assert_refused(&body, &calls, "tokens");
    let quoted = format!(
        "# {open}\n{{ farmByName(name: \"{open}\\\"{open}\") {{ id }} f: farmByName(name: \"\"\"{open}\\\"\"\"{open}\"\"\") {{ id }} }}",
        open = "{".repeat(3000)
    );
    let (body, _) = app.graphql_counted(&quoted, json!({})).await;
    assert_ran(&body);
    let response = app
        .client
        .get(app.url("/graphql"))
        .query(&[(
            "query",
            format!("{{ a(x: {}1{}) }}", "[".repeat(1000), "]".repeat(1000)),
        )])
        .header("accept", "application/graphql-response+json")
        .send()
        .await
        .expect("the server answers");
    assert_ne!(response.status(), 500);
    assert_eq!(app.assert_table_consistent().await.nodes, 31);
}
