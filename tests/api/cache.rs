//! The read cache (`store::cache`): what a warm page costs, and that what it answers is what
//! the table holds, whoever wrote it: this process, another replica, or a program with the SDK.
//! Nothing here sleeps: a test that must see another writer's change waits until the process
//! has read the change stream past the moment the write was acknowledged.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tablegraph::store::CacheSettings;

use crate::goals::{KOAN_PAGE, koan_company};
use crate::helpers::{
    TestApp, api_key_and_tokens, spawn_app_cached, spawn_cached_with, spawn_replica, user_token,
};
use crate::network::{run, start_dynoxide};
use crate::subscriptions::raw_client;

/// A cache that does not fall behind within a test on a slow machine: what it answers is then
/// decided by evictions alone, not by a bypass. (Another replica learns how far the stream was
/// read every quarter of this, or at least every three seconds, with the default lease.)
fn on(bytes: u64) -> CacheSettings {
    CacheSettings {
        bytes,
        max_lag: Duration::from_secs(4),
    }
}

/// Waits until `app` has read the change stream past every write acknowledged so far.
async fn caught_up(app: &TestApp) {
    let cache = app.store.cache().expect("the cache is on").clone();
    let now = Instant::now();
    tokio::time::timeout(Duration::from_secs(30), cache.until_caught_up(now))
        .await
        .expect("the change stream is read within 30 s");
}

async fn farm_name(app: &TestApp, id: &str) -> (Value, Vec<String>) {
    let (body, _, hits) = app
        .graphql_cached(
            "query($id: ID!) { farm(id: $id) { name } }",
            json!({ "id": id }),
        )
        .await;
    (body["data"]["farm"]["name"].clone(), hits)
}

#[tokio::test]
async fn a_warm_koan_page_makes_no_storage_call_and_a_write_is_read_back_at_once() {
    let app = spawn_app_cached("schema.graphql", on(64 << 20)).await;
    caught_up(&app).await;
    let growth = koan_company(&app, 5).await;
    // The stream read past the company's writes: none of their records voids the pages the
    // cold read fills.
    caught_up(&app).await;
    let variables = json!({ "team": growth, "first": 5 });
    let (cold, calls, _) = app.graphql_cached(KOAN_PAGE, variables.clone()).await;
    // Cold but for the users and teams the mutations' answers read.
    assert_eq!(calls[..2], ["Query:GSI01", "BatchGetItem"], "cold");
    let (warm, calls, hits) = app.graphql_cached(KOAN_PAGE, variables.clone()).await;
    assert_eq!(warm["data"], cold["data"]);
    assert_eq!(
        calls,
        Vec::<String>::new(),
        "warm: every read is the cache's"
    );
    assert_eq!(hits, ["Query:GSI01", "BatchGetItem", "BatchGetItem"]);

    // Read-your-writes: the goal renamed here is read from the store by the next page, with the
    // index page (which items it changed is not known to a commit) and nothing else.
    let goal = cold["data"]["team"]["goals"]["edges"][2]["node"]["title"].clone();
    let id = app
        .graphql(
            "query($t: ID!) { team(id: $t) { goals(first: 5) { edges { node { id title } } } } }",
            json!({ "t": growth }),
        )
        .await["data"]["team"]["goals"]["edges"][2]["node"]["id"]
        .as_str()
        .expect("a goal's id")
        .to_owned();
    let renamed = app
        .graphql(
            "mutation($id: ID!) { updateGoal(input: { id: $id, title: \"Renamed\" }) { title } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        renamed["data"]["updateGoal"]["title"], "Renamed",
        "{renamed}"
    );
    let (after, calls, _) = app.graphql_cached(KOAN_PAGE, variables).await;
    assert_eq!(
        after["data"]["team"]["goals"]["edges"][2]["node"]["title"], "Renamed",
        "was {goal}"
    );
    assert_eq!(calls, ["Query:GSI01", "BatchGetItem"]);
    let single = &after["extensions"]["storageCalls"][1]["keys"];
    assert_eq!(single, 1, "only the renamed goal is read again");
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_cache_of_one_kilobyte_thrashes_and_still_answers_what_the_table_holds() {
    let app = spawn_app_cached("schema.graphql", on(1024)).await;
    caught_up(&app).await;
    let growth = koan_company(&app, 8).await;
    let variables = json!({ "team": growth, "first": 8 });
    let first = app.graphql(KOAN_PAGE, variables.clone()).await;
    for round in 0..5 {
        let again = app.graphql(KOAN_PAGE, variables.clone()).await;
        assert_eq!(again["data"], first["data"], "round {round}");
    }
    // Items larger than the whole cache: refused by it, answered by the store.
    let long = "n".repeat(4 * 1024);
    let mut ids = Vec::new();
    for n in 0..4 {
        let title = format!("Large {n} {long}");
        ids.push(
            app.create("Goal", json!({ "title": title, "kind": "OBJECTIVE" }))
                .await,
        );
    }
    for _ in 0..3 {
        let page = app
            .graphql(
                "{ listGoals(first: 20) { edges { node { title } } } }",
                json!({}),
            )
            .await;
        let edges = page["data"]["listGoals"]["edges"]
            .as_array()
            .expect("a page")
            .clone();
        assert_eq!(edges.len(), 12, "{page}");
        let large = edges.iter().filter(|edge| {
            edge["node"]["title"]
                .as_str()
                .is_some_and(|t| t.ends_with(long.as_str()))
        });
        assert_eq!(large.count(), 4);
        for (n, id) in ids.iter().enumerate() {
            let goal = app
                .graphql(
                    "query($id: ID!) { goal(id: $id) { title } }",
                    json!({ "id": id }),
                )
                .await;
            assert_eq!(goal["data"]["goal"]["title"], format!("Large {n} {long}"));
        }
        let cache = app.store.cache().expect("on");
        assert!(
            cache.weight() <= cache.capacity(),
            "{} bytes",
            cache.weight()
        );
    }
    app.assert_table_consistent().await;
}

/// The caller's rules apply to what the cache answers as to what the store does: a note its
/// owner has read (so it is cached) is still refused to a caller the rules keep out.
#[tokio::test]
async fn the_cache_never_hands_a_caller_a_node_its_rules_forbid() {
    let app = spawn_cached_with(
        "examples/notes/schema.graphql",
        api_key_and_tokens("notes-key"),
        on(8 << 20),
    )
    .await;
    caught_up(&app).await;
    let as_user = |sub: &str| format!("Bearer {}", user_token(sub, &[]));
    let ann = as_user("ann");
    let (_, created) = app
        .graphql_with(
            &[("authorization", &ann)],
            r#"mutation { createNote(input: { title: "Plan", team: "blue" }) { id } }"#,
            json!({}),
        )
        .await;
    let id = created["data"]["createNote"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let read = "query($id: ID!) { note(id: $id) { title } }";
    for _ in 0..2 {
        let (_, body) = app
            .graphql_with(
                &[("authorization", &ann), ("x-tablegraph-storage-calls", "1")],
                read,
                json!({ "id": id }),
            )
            .await;
        assert_eq!(body["data"]["note"]["title"], "Plan", "{body}");
    }
    let (_, warm) = app
        .graphql_with(
            &[("authorization", &ann), ("x-tablegraph-storage-calls", "1")],
            read,
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        warm["extensions"]["cacheHits"][0]["operation"], "BatchGetItem",
        "{warm}"
    );
    let dan = as_user("dan");
    let (_, refused) = app
        .graphql_with(&[("authorization", &dan)], read, json!({ "id": id }))
        .await;
    assert_eq!(refused["data"]["note"], Value::Null, "{refused}");
    assert!(!refused.to_string().contains("Plan"), "{refused}");
    let (_, listed) = app
        .graphql_with(
            &[("authorization", &dan)],
            "{ listNotes(first: 10) { edges { node { title } } } }",
            json!({}),
        )
        .await;
    assert!(!listed.to_string().contains("Plan"), "{listed}");
}

/// The metrics say what the cache did, and a response tells its hits from its calls.
#[tokio::test]
async fn metrics_count_hits_misses_and_evictions() {
    let app = spawn_app_cached("schema.graphql", on(8 << 20)).await;
    caught_up(&app).await;
    let id = app.create_farm("Metered").await;
    farm_name(&app, &id).await;
    let (name, hits) = farm_name(&app, &id).await;
    assert_eq!(
        (name, hits),
        (json!("Metered"), vec!["BatchGetItem".to_owned()])
    );
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("the server answers")
        .text()
        .await
        .expect("text");
    let value = |line: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(line)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{line} in\n{metrics}"))
    };
    assert!(value("tablegraph_cache_hits_total{read=\"item\"}") >= 1.0);
    assert!(value("tablegraph_cache_misses_total{read=\"item\"}") >= 1.0);
    assert!(value("tablegraph_cache_evictions_total{cause=\"write\"}") >= 1.0);
    assert!(value("tablegraph_cache_bytes") > 0.0);
}

/// Three replicas on one table, each with its cache warm: a write through any of them, and a
/// write made with the SDK outside the API, is read by every replica once its process has read
/// the stream past it: the holder of the stream's shard by its own reads, the others by what it
/// relays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_and_writes_outside_the_api_are_seen_through_every_cache() {
    let endpoint = start_dynoxide().await;
    let (ok, _, stderr) = run(&["migrate", "--dynamodb-endpoint", &endpoint]).await;
    assert!(ok, "migrate: {stderr}");
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(spawn_replica(&endpoint, on(16 << 20)).await);
    }
    let id = replicas[0].create_farm("Shared").await;
    for replica in &replicas {
        caught_up(replica).await;
        farm_name(replica, &id).await;
        let (name, hits) = farm_name(replica, &id).await;
        assert_eq!(name, "Shared");
        assert_eq!(hits, ["BatchGetItem"], "the second read is the cache's");
    }
    for (writer, name) in ["One", "Two", "Three"].iter().enumerate() {
        let renamed = replicas[writer]
            .graphql(
                "mutation($id: ID!, $name: String!) { updateFarm(input: { id: $id, name: $name }) { name } }",
                json!({ "id": id, "name": name }),
            )
            .await;
        assert_eq!(renamed["data"]["updateFarm"]["name"], *name, "{renamed}");
        for (n, replica) in replicas.iter().enumerate() {
            caught_up(replica).await;
            let (read, _) = farm_name(replica, &id).await;
            assert_eq!(
                read, *name,
                "replica {n} after a write through replica {writer}"
            );
            // And it is warm again.
            assert_eq!(farm_name(replica, &id).await.1, ["BatchGetItem"]);
        }
    }

    use aws_sdk_dynamodb::types::AttributeValue as A;
    let sdk = raw_client(&endpoint);
    let key =
        |update: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder| {
            update
                .table_name("tablegraph")
                .key("PK", A::S(format!("NODE#{id}")))
                .key("SK", A::S(format!("NODE#{id}")))
        };
    key(sdk.update_item())
        .update_expression("SET #n = :n")
        .expression_attribute_names("#n", "name")
        .expression_attribute_values(":n", A::S("Outside".into()))
        .send()
        .await
        .expect("a raw UpdateItem");
    for (n, replica) in replicas.iter().enumerate() {
        caught_up(replica).await;
        assert_eq!(farm_name(replica, &id).await.0, "Outside", "replica {n}");
    }
    sdk.delete_item()
        .table_name("tablegraph")
        .key("PK", A::S(format!("NODE#{id}")))
        .key("SK", A::S(format!("NODE#{id}")))
        .send()
        .await
        .expect("a raw DeleteItem");
    for (n, replica) in replicas.iter().enumerate() {
        caught_up(replica).await;
        assert_eq!(farm_name(replica, &id).await.0, Value::Null, "replica {n}");
    }
}
