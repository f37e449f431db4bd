//! Amplify's `@searchable` queries answered from the table: OpenSearch's operators, sorting,
//! paging, totals and aggregates as Amplify's resolvers ask for them, the caller's budget of
//! items read, and clear errors for what cannot be asked.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with_schema, spawn_schema_scoped};

const SCHEMA: &str = "tests/fixtures/searchable/schema.graphql";

const BOOKS: [(&str, &str, &str, i64, &[&str]); 5] = [
    (
        "The Rust Programming Language",
        "Klabnik",
        "ESSAY",
        40,
        &["rust", "systems"],
    ),
    ("Rust for Rustaceans", "Gjengset", "ESSAY", 35, &["rust"]),
    ("Dune", "Herbert", "NOVEL", 10, &["desert"]),
    ("Programming Pearls", "Bentley", "ESSAY", 30, &[]),
    (
        "The Left Hand of Darkness",
        "Le Guin",
        "NOVEL",
        12,
        &["winter"],
    ),
];

async fn library() -> TestApp {
    fill(spawn_app_with_schema(SCHEMA).await).await
}

async fn fill(app: TestApp) -> TestApp {
    for (title, author, genre, price, tags) in BOOKS {
        let created = app
            .graphql(
                "mutation ($i: CreateBookInput!) { createBook(input: $i) { id } }",
                json!({ "i": { "title": title, "author": author, "genre": genre,
                               "price": price, "tags": tags } }),
            )
            .await;
        assert!(created["errors"].is_null(), "{created}");
    }
    app
}

async fn search(app: &TestApp, arguments: &str, variables: Value) -> Value {
    let mut declared = Vec::new();
    if arguments.contains("$f") {
        declared.push("$f: SearchableBookFilterInput");
    }
    if arguments.contains("$n") {
        declared.push("$n: String");
    }
    let declared = declared.join(", ");
    let query = format!(
        "query ({declared}) {{ searchBooks({arguments}) {{
            items {{ title price }} nextToken total
            aggregateItems {{ name result {{
                ... on SearchableAggregateScalarResult {{ value }}
                ... on SearchableAggregateBucketResult {{ buckets {{ key doc_count }} }} }} }} }} }}"
    );
    app.graphql(&query, variables).await
}

fn titles(answer: &Value) -> Vec<String> {
    answer["data"]["searchBooks"]["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item["title"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn full_text_operators_find_books_by_their_words() {
    let app = library().await;
    let cases = [
        (
            json!({ "title": { "match": "pearls dune" } }),
            vec!["Dune", "Programming Pearls"],
        ),
        (
            json!({ "title": { "matchPhrase": "programming language" } }),
            vec!["The Rust Programming Language"],
        ),
        (
            json!({ "title": { "matchPhrasePrefix": "rust for rust" } }),
            vec!["Rust for Rustaceans"],
        ),
        (
            json!({ "author": { "wildcard": "Le *" } }),
            vec!["The Left Hand of Darkness"],
        ),
        (
            json!({ "author": { "regexp": "[BG].*" } }),
            vec!["Programming Pearls", "Rust for Rustaceans"],
        ),
        (
            json!({ "tags": { "eq": "rust" }, "not": { "price": { "gt": 38 } } }),
            vec!["Rust for Rustaceans"],
        ),
        (
            json!({ "or": [{ "price": { "range": [10, 12] } }, { "genre": { "eq": "ESSAY" }, "tags": { "exists": false } }] }),
            vec!["Dune", "Programming Pearls", "The Left Hand of Darkness"],
        ),
    ];
    for (filter, expected) in cases {
        let answer = search(
            &app,
            "filter: $f, sort: [{ field: title, direction: asc }]",
            json!({ "f": filter }),
        )
        .await;
        assert!(answer["errors"].is_null(), "{filter}: {answer}");
        assert_eq!(titles(&answer), expected, "{filter}");
        assert_eq!(
            answer["data"]["searchBooks"]["total"],
            expected.len(),
            "{filter}"
        );
    }
}

#[tokio::test]
async fn a_search_pages_in_its_sort_order_and_aggregates_every_match() {
    let app = library().await;
    let arguments = "filter: $f, sort: [{ field: price, direction: desc }], limit: 2,
        nextToken: $n, aggregates: [
            { name: \"genres\", type: terms, field: genre },
            { name: \"mean\", type: avg, field: price },
            { name: \"cheapest\", type: min, field: price }]";
    let filter = json!({ "price": { "gte": 11 } });
    let first = search(&app, arguments, json!({ "f": filter })).await;
    assert!(first["errors"].is_null(), "{first}");
    assert_eq!(
        titles(&first),
        ["The Rust Programming Language", "Rust for Rustaceans"]
    );
    assert_eq!(first["data"]["searchBooks"]["total"], 4);
    assert_eq!(
        first["data"]["searchBooks"]["aggregateItems"],
        json!([
            { "name": "genres", "result": { "buckets": [
                { "key": "ESSAY", "doc_count": 3 }, { "key": "NOVEL", "doc_count": 1 }] } },
            { "name": "mean", "result": { "value": 29.25 } },
            { "name": "cheapest", "result": { "value": 12.0 } },
        ])
    );
    let token = first["data"]["searchBooks"]["nextToken"].clone();
    let second = search(&app, arguments, json!({ "f": filter, "n": token })).await;
    assert_eq!(
        titles(&second),
        ["Programming Pearls", "The Left Hand of Darkness"]
    );
    assert_eq!(second["data"]["searchBooks"]["nextToken"], Value::Null);
    // `from` skips as many matches.
    let from = search(
        &app,
        "filter: $f, sort: [{ field: price, direction: asc }], from: 3",
        json!({ "f": filter }),
    )
    .await;
    assert_eq!(titles(&from), ["The Rust Programming Language"]);
}

#[tokio::test]
async fn a_search_reads_the_type_index_once_per_shard() {
    let app = library().await;
    let (answer, calls) = app
        .graphql_counted("{ searchBooks { total } }", json!({}))
        .await;
    assert_eq!(answer["data"]["searchBooks"]["total"], 5, "{answer}");
    assert!(
        !calls.is_empty() && calls.iter().all(|call| call.starts_with("Query")),
        "{calls:?}"
    );
    let shards = app
        .model
        .type_def("Book")
        .and_then(|t| t.list)
        .map(|l| usize::from(l.shards));
    assert_eq!(
        Some(calls.len()),
        shards,
        "one Query per shard of the type index"
    );
    // `plan` says so.
    let (ok, plan, stderr) = crate::network::run(&["plan", "--schema", SCHEMA]).await;
    assert!(ok, "{stderr}");
    assert!(
        plan.contains("Query.searchBooks\n  Query               GSI01")
            && plan.contains("every node of the type"),
        "{plan}"
    );
}

#[tokio::test]
async fn what_a_search_cannot_ask_is_refused_clearly() {
    let app = library().await;
    let cases = [
        (
            "nextToken: \"forged\"",
            "nextToken is not one a search answered",
        ),
        (
            "filter: { author: { regexp: \"(\" } }",
            "author: regexp is not a valid expression",
        ),
        (
            "aggregates: [{ name: \"x\", type: sum, field: title }]",
            "works on a field of numbers",
        ),
        (
            "filter: { price: { range: [1] } }",
            "price: range takes [low, high]",
        ),
        ("limit: 5000", "limit is from 0 to"),
    ];
    for (arguments, message) in cases {
        let answer = app
            .graphql(
                &format!("{{ searchBooks({arguments}) {{ total }} }}"),
                json!({}),
            )
            .await;
        assert_eq!(
            answer["errors"][0]["extensions"]["errorType"], "BadUserInput",
            "{arguments}: {answer}"
        );
        assert!(
            answer["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains(message)),
            "{arguments}: {answer}"
        );
    }
}

/// A search reads every node of its type: past the items a request may read
/// (`--max-filter-read-items`) it is refused, not answered from part of the type.
#[tokio::test]
async fn a_search_of_more_nodes_than_a_request_may_read_is_refused() {
    let scopes = tablegraph::engine::ScopeSettings {
        filter_budget: 4,
        ..tablegraph::engine::ScopeSettings::default()
    };
    let app = fill(spawn_schema_scoped(SCHEMA, scopes).await).await;
    let answer = app.graphql("{ searchBooks { total } }", json!({})).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "LimitExceeded",
        "{answer}"
    );
    assert!(
        answer["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-filter-read-items")),
        "{answer}"
    );
}
