//! Storage faults injected under the real SDK client (see `store::simulate`): throttling,
//! transaction conflicts, unprocessed keys and lost answers are retried within a fixed budget;
//! past it the client gets a clean `StorageUnavailable`; a transaction whose answer was lost is
//! applied once.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tablegraph::config::HttpConfig;
use tablegraph::loaders::ItemLoader;
use tablegraph::store::{Fault, FaultPlan, RETRY_ATTEMPTS, StoreError, StoreTuning};

use crate::helpers::{TestApp, error_message, error_type, id_at, spawn_app_tuned};

async fn app_with_faults() -> (TestApp, Arc<FaultPlan>) {
    let plan = FaultPlan::new();
    let tuning = StoreTuning {
        latency: None,
        faults: Some(plan.clone()),
    };
    (spawn_app_tuned(HttpConfig::default(), tuning).await, plan)
}

/// Asserts a clean `StorageUnavailable` that shows nothing of the store.
fn assert_unavailable(body: &Value) {
    assert_eq!(error_type(body), "StorageUnavailable", "{body}");
    assert_eq!(
        error_message(body),
        "the storage is unavailable at the moment; try again"
    );
    let text = body.to_string();
    for internal in [
        "Throttl",
        "Transaction",
        "injected",
        "tablegraph",
        "PK",
        "GSI",
    ] {
        assert!(!text.contains(internal), "{internal} leaked in {text}");
    }
}

const FARM: &str = "query($id: ID!) { farm(id: $id) { id name version } }";

#[tokio::test]
async fn throttled_reads_are_retried() {
    let (app, plan) = app_with_faults().await;
    let farm = app.create_farm("Throttled Acres").await;
    plan.inject("BatchGetItem", Fault::Throttle, 3);
    let before = plan.sent("BatchGetItem");
    let body = app.graphql(FARM, json!({ "id": farm })).await;
    assert_eq!(body["data"]["farm"]["name"], "Throttled Acres", "{body}");
    assert_eq!(
        plan.sent("BatchGetItem") - before,
        4,
        "three throttled, one answered"
    );
}

#[tokio::test]
async fn reads_throttled_past_the_budget_answer_storage_unavailable() {
    let (app, plan) = app_with_faults().await;
    let farm = app.create_farm("Busy Acres").await;
    plan.inject("BatchGetItem", Fault::Throttle, 100);
    let before = plan.sent("BatchGetItem");
    let body = app.graphql(FARM, json!({ "id": farm })).await;
    assert_unavailable(&body);
    assert_eq!(
        plan.sent("BatchGetItem") - before,
        RETRY_ATTEMPTS as usize + 1,
        "the first attempt and every retry of the budget, no more"
    );
    plan.clear();
    let body = app.graphql(FARM, json!({ "id": farm })).await;
    assert_eq!(body["data"]["farm"]["name"], "Busy Acres", "{body}");
}

#[tokio::test]
async fn a_read_that_failed_is_tried_again_by_the_next_load_of_the_request() {
    let (app, plan) = app_with_faults().await;
    let farm = app.create_farm("Second Try").await;
    let key = format!("NODE#{farm}");
    let loader = ItemLoader::new(app.store.clone());
    plan.inject("BatchGetItem", Fault::Throttle, RETRY_ATTEMPTS as usize + 1);
    let failed = loader.load(&key).await;
    assert!(
        matches!(
            failed.as_ref().map_err(|e| &**e),
            Err(StoreError::Throttled(_))
        ),
        "{failed:?}"
    );
    // The failure is an answer for that batch only: the next load asks the store again.
    let item = loader
        .load(&key)
        .await
        .expect("the store answers once the throttling ends")
        .expect("the farm exists");
    assert_eq!(
        item.get("name").and_then(|v| v.as_str()),
        Some("Second Try")
    );
    assert_eq!(plan.sent("BatchGetItem"), RETRY_ATTEMPTS as usize + 2);
    // Once read, it is the request's: no further call.
    loader.load(&key).await.expect("cached");
    assert_eq!(plan.sent("BatchGetItem"), RETRY_ATTEMPTS as usize + 2);
}

#[tokio::test]
async fn unprocessed_keys_are_asked_again_until_every_node_is_read() {
    let (app, plan) = app_with_faults().await;
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(app.create_farm(&format!("Farm {i}")).await);
    }
    plan.inject("BatchGetItem", Fault::UnprocessedKeys, 2);
    let (body, calls) = app
        .graphql_counted(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": ids }),
        )
        .await;
    let read: Vec<String> = (0..10)
        .map(|i| id_at(&body, &format!("/data/nodes/{i}/id")))
        .collect();
    assert_eq!(read, ids);
    // 10 keys asked, 5 left over; 5 asked, 3 left over; 3 asked and read.
    assert_eq!(calls, ["BatchGetItem", "BatchGetItem", "BatchGetItem"]);
    let keys: Vec<u64> = body["extensions"]["storageCalls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|call| call["keys"].as_u64().unwrap_or_default())
        .collect();
    assert_eq!(keys, [10, 5, 3]);
}

const CREATE: &str =
    "mutation($name: String!) { createFarm(input: { name: $name }) { id version } }";
const BY_NAME: &str = "query($name: String!) { farmByName(name: $name) { id } }";

#[tokio::test]
async fn conflicting_transactions_are_retried() {
    let (app, plan) = app_with_faults().await;
    plan.inject("TransactWriteItems", Fault::TransactionConflict, 2);
    let body = app.graphql(CREATE, json!({ "name": "Contested" })).await;
    let id = id_at(&body, "/data/createFarm/id");
    assert_eq!(plan.sent("TransactWriteItems"), 3);
    let body = app.graphql(BY_NAME, json!({ "name": "Contested" })).await;
    assert_eq!(body["data"]["farmByName"]["id"], id.as_str());
}

#[tokio::test]
async fn a_write_that_keeps_conflicting_answers_conflict_unhandled_and_writes_nothing() {
    let (app, plan) = app_with_faults().await;
    plan.inject("TransactWriteItems", Fault::TransactionConflict, 100);
    let body = app.graphql(CREATE, json!({ "name": "Never" })).await;
    assert_eq!(error_type(&body), "ConflictUnhandled", "{body}");
    assert!(
        error_message(&body).ends_with("nothing was written; try again"),
        "{body}"
    );
    assert_eq!(plan.sent("TransactWriteItems"), RETRY_ATTEMPTS as usize + 1);
    plan.clear();
    let body = app.graphql(BY_NAME, json!({ "name": "Never" })).await;
    assert!(body["data"]["farmByName"].is_null(), "{body}");
}

#[tokio::test]
async fn a_write_whose_answer_was_lost_is_applied_once() {
    let (app, plan) = app_with_faults().await;
    // A create: the retry must not meet its own unique name as someone else's.
    plan.inject("TransactWriteItems", Fault::LoseResponse, 1);
    let body = app.graphql(CREATE, json!({ "name": "Once" })).await;
    let id = id_at(&body, "/data/createFarm/id");
    assert_eq!(body["data"]["createFarm"]["version"], 1);
    assert_eq!(plan.sent("TransactWriteItems"), 2, "sent, lost, sent again");

    // An update without expectedVersion: applied twice, the version would be 3.
    plan.inject("TransactWriteItems", Fault::LoseResponse, 1);
    let body = app
        .graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"Once More\" }) { version } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(body["data"]["updateFarm"]["version"], 2, "{body}");
    let body = app.graphql(FARM, json!({ "id": id })).await;
    assert_eq!(body["data"]["farm"]["version"], 2, "{body}");
    assert_eq!(body["data"]["farm"]["name"], "Once More");
}

#[tokio::test]
async fn a_request_slower_than_the_timeout_answers_408() {
    let tuning = StoreTuning {
        latency: Some(Duration::from_millis(400)),
        faults: None,
    };
    let app = spawn_app_tuned(
        HttpConfig {
            request_timeout: Duration::from_millis(100),
            ..HttpConfig::default()
        },
        tuning,
    )
    .await;
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": "{ farmByName(name: \"Slow\") { id } }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 408);
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(!request_id.is_empty());
    let body: Value = response.json().await.expect("a GraphQL error body");
    let error = &body["errors"][0];
    assert_eq!(error["extensions"]["errorType"], "RequestTimeout", "{body}");
    assert_eq!(error["extensions"]["requestId"], request_id.as_str());
    assert!(body.get("data").is_none(), "{body}");
}

#[tokio::test]
async fn a_lost_answer_keeps_its_token_through_later_refusals() {
    let (app, plan) = app_with_faults().await;
    let id = app.create_farm("Steady").await;
    // Applied but unanswered, then throttled: the third attempt must still be the first
    // transaction, answered from DynamoDB's token cache, not a second one.
    plan.inject("TransactWriteItems", Fault::LoseResponse, 1);
    plan.inject("TransactWriteItems", Fault::Throttle, 1);
    let body = app
        .graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"Steadier\" }) { version } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(body["data"]["updateFarm"]["version"], 2, "{body}");
    let body = app.graphql(FARM, json!({ "id": id })).await;
    assert_eq!(body["data"]["farm"]["version"], 2, "{body}");
}
