//! Storage calls depend on the shape of a query, not on list sizes or concurrent requests.

use std::sync::Arc;

use serde_json::json;
use tablegraph::loaders::ItemLoader;
use tablegraph::store::CallLog;

use crate::helpers::{TestApp, id_at, spawn_app};

async fn farm_with_logo(app: &TestApp, name: &str) -> String {
    let body = app
        .graphql(
            "mutation { createImage(input: { url: \"logo.png\" }) { id } }",
            json!({}),
        )
        .await;
    let logo = id_at(&body, "/data/createImage/id");
    let body = app
        .graphql(
            "mutation($n: String!, $l: ID!) { createFarm(input: { name: $n, logoId: $l }) { id } }",
            json!({ "n": name, "l": logo }),
        )
        .await;
    id_at(&body, "/data/createFarm/id")
}

const COWS_WITH_FARM_AND_LOGO: &str = "query($ids: [ID!]!) {
    nodes(ids: $ids) { ... on Cow { name farm { name logo { url } } } }
}";

#[tokio::test]
async fn fifty_cows_with_their_farms_and_logos_cost_one_batch_per_level() {
    let app = spawn_app().await;
    let mut farms = Vec::new();
    for n in 0..5 {
        farms.push(farm_with_logo(&app, &format!("Farm {n}")).await);
    }
    let mut cows = Vec::new();
    for n in 0..50 {
        cows.push(
            app.create_animal("Cow", &format!("Cow {n}"), &farms[n % 5])
                .await,
        );
    }
    let (body, calls) = app
        .graphql_counted(COWS_WITH_FARM_AND_LOGO, json!({ "ids": cows }))
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(body["data"]["nodes"][7]["farm"]["logo"]["url"], "logo.png");
    assert_eq!(calls, ["BatchGetItem", "BatchGetItem", "BatchGetItem"]);
    let keys: Vec<u64> = body["extensions"]["storageCalls"]
        .as_array()
        .map(|calls| calls.iter().filter_map(|c| c["keys"].as_u64()).collect())
        .unwrap_or_default();
    assert_eq!(keys, [50, 5, 5], "cows, then their farms, then the logos");
    // As a page of the list, the cows' level is one Query per shard of its type index (four):
    // six calls, as the README says.
    let (body, calls) = app
        .graphql_counted(
            "{ listCows(first: 50) { edges { node { name farm { name logo { url } } } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["listCows"]["edges"].as_array().map(Vec::len),
        Some(50),
        "{body}"
    );
    let mut sorted = calls.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "BatchGetItem",
            "BatchGetItem",
            "Query:GSI03",
            "Query:GSI03",
            "Query:GSI03",
            "Query:GSI03"
        ],
        "{calls:?}"
    );
}

#[tokio::test]
async fn a_page_of_fifty_cows_costs_one_query_then_one_batch_per_level() {
    let app = spawn_app().await;
    let farm = farm_with_logo(&app, "Big Herd").await;
    for n in 0..60 {
        app.create_animal("Cow", &format!("Cow {n:02}"), &farm)
            .await;
    }
    let (body, calls) = app
        .graphql_counted(
            "query($farm: ID!) { farm(id: $farm) {
                cows(first: 50) { edges { node { name farm { name logo { url } } } } }
            } }",
            json!({ "farm": farm }),
        )
        .await;
    let edges = body["data"]["farm"]["cows"]["edges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(edges.len(), 50, "{body}");
    assert_eq!(edges[49]["node"]["farm"]["logo"]["url"], "logo.png");
    // The farm, the page, then the logo; every cow's farm is the one already read.
    assert_eq!(calls, ["BatchGetItem", "Query:GSI01", "BatchGetItem"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_do_not_change_a_query_s_calls() {
    let app = spawn_app().await;
    let mut farms = Vec::new();
    for n in 0..4 {
        farms.push(farm_with_logo(&app, &format!("Concurrent {n}")).await);
    }
    let mut cows = Vec::new();
    for n in 0..40 {
        cows.push(
            app.create_animal("Cow", &format!("C{n}"), &farms[n % 4])
                .await,
        );
    }
    let requests =
        (0..16).map(|_| app.graphql_counted(COWS_WITH_FARM_AND_LOGO, json!({ "ids": cows })));
    for (body, calls) in futures::future::join_all(requests).await {
        assert!(body["errors"].is_null(), "{body}");
        assert_eq!(calls, ["BatchGetItem", "BatchGetItem", "BatchGetItem"]);
    }
}

/// The `name` of each item a load answered, in order.
fn names(items: &[Option<Arc<tablegraph::store::Item>>]) -> Vec<Option<&str>> {
    items
        .iter()
        .map(|item| item.as_ref().and_then(|item| item.get("name")?.as_str()))
        .collect()
}

#[tokio::test]
async fn a_key_repeated_in_one_load_is_read_once_and_answered_at_each_place() {
    let app = spawn_app().await;
    let first = app.create_farm("Repeated").await;
    let second = app.create_farm("Once").await;
    let calls = Arc::new(CallLog::with_budget(10));
    let loader = ItemLoader::new(app.store.recording(calls.clone()));
    let (a, b) = (format!("NODE#{first}"), format!("NODE#{second}"));
    let missing = "NODE#no-such-node".to_owned();
    let keys = [&a, &b, &a, &missing, &a, &missing];
    let expected = [
        Some("Repeated"),
        Some("Once"),
        Some("Repeated"),
        None,
        Some("Repeated"),
        None,
    ];
    let items = loader.load_many(&keys).await.expect("the store answers");
    assert_eq!(names(&items), expected);
    let asked: Vec<Option<usize>> = calls.calls().iter().map(|call| call.keys).collect();
    assert_eq!(
        asked,
        [Some(3)],
        "one BatchGetItem of the three distinct keys"
    );
    // Each of them, the missing one included, is the request's now: no further call.
    let again = loader.load_many(&keys).await.expect("cached");
    assert_eq!(names(&again), expected);
    assert_eq!(calls.calls().len(), 1);
}
