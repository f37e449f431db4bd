//! Automatic persisted queries (Apollo's APQ): a hash the server does not hold is
//! `PersistedQueryNotFound`, a query sent with its hash is kept, and the hash alone then runs it
//! over POST or over a GET a CDN can cache; answers to a caller with credentials are private.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tablegraph::config::HttpConfig;
use tablegraph::graphql::{PersistedSettings, SchemaOptions};

use crate::helpers::{TestApp, api_key_and_tokens, spawn_app, spawn_app_with};

const QUERY: &str = "query Farms { listFarms(first: 1) { edges { node { name } } } }";

pub(crate) fn hash(query: &str) -> String {
    Sha256::digest(query.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) fn persisted(query: &str) -> Value {
    json!({ "persistedQuery": { "version": 1, "sha256Hash": hash(query) } })
}

async fn post(
    app: &TestApp,
    body: Value,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, Value) {
    let mut request = app.client.post(app.url("/graphql")).json(&body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    answer(request.send().await.expect("an answer")).await
}

async fn get(app: &TestApp, extensions: &Value) -> (u16, Option<String>, Value) {
    let response = app
        .client
        .get(app.url("/graphql"))
        .query(&[("extensions", extensions.to_string())])
        .send()
        .await
        .expect("an answer");
    answer(response).await
}

/// An answer's status, its `Cache-Control` and its body (`null` when it is not JSON).
async fn answer(response: reqwest::Response) -> (u16, Option<String>, Value) {
    let status = response.status().as_u16();
    let cache = response
        .headers()
        .get("cache-control")
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    (status, cache, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_query_sent_once_with_its_hash_runs_by_the_hash_alone_over_post_and_get() {
    let app = spawn_app().await;
    app.create_farm("Persisted Acres").await;
    let (status, _, unknown) = post(&app, json!({ "extensions": persisted(QUERY) }), &[]).await;
    assert_eq!(status, 200, "{unknown}");
    assert_eq!(unknown["errors"][0]["message"], "PersistedQueryNotFound");
    assert_eq!(
        unknown["errors"][0]["extensions"]["code"],
        "PERSISTED_QUERY_NOT_FOUND"
    );

    let (_, _, first) = post(
        &app,
        json!({ "query": QUERY, "extensions": persisted(QUERY) }),
        &[],
    )
    .await;
    let expected = json!({ "listFarms": { "edges": [{ "node": { "name": "Persisted Acres" } }] } });
    assert_eq!(first["data"], expected, "{first}");
    let (_, _, by_hash) = post(&app, json!({ "extensions": persisted(QUERY) }), &[]).await;
    assert_eq!(by_hash["data"], expected, "{by_hash}");
    // A GET of the hash alone: a URL a CDN may cache, marked private only for credentials.
    let (status, cache, got) = get(&app, &persisted(QUERY)).await;
    assert_eq!((status, cache), (200, None), "{got}");
    assert_eq!(got["data"], expected, "{got}");

    // A hash that is not the query's, and a version Apollo does not have.
    let (_, _, mismatch) = post(
        &app,
        json!({ "query": "{ __typename }", "extensions": persisted(QUERY) }),
        &[],
    )
    .await;
    assert_eq!(
        mismatch["errors"][0]["message"],
        "provided sha does not match query"
    );
    let (_, _, version) = post(
        &app,
        json!({ "extensions": { "persistedQuery": { "version": 2, "sha256Hash": hash(QUERY) } } }),
        &[],
    )
    .await;
    assert!(
        version["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("version 1")),
        "{version}"
    );
    // A mutation held by its hash still runs only over POST.
    let mutation = "mutation { createFarm(input: { name: \"By Hash\" }) { id } }";
    post(
        &app,
        json!({ "query": mutation, "extensions": persisted(mutation) }),
        &[],
    )
    .await;
    let (status, _, refused) = get(&app, &persisted(mutation)).await;
    assert_eq!(status, 405, "{refused}");
}

#[tokio::test]
async fn answers_to_a_caller_with_credentials_are_private_and_apq_can_be_turned_off() {
    let app = spawn_app_with(api_key_and_tokens("da2-persisted")).await;
    let (status, cache, body) = post(
        &app,
        json!({ "query": QUERY, "extensions": persisted(QUERY) }),
        &[("x-api-key", "da2-persisted")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(cache.as_deref(), Some("private, no-store"));

    let off = spawn_app_with(HttpConfig {
        graphql: SchemaOptions {
            persisted: PersistedSettings {
                most: 0,
                ..PersistedSettings::default()
            },
            ..SchemaOptions::default()
        },
        ..HttpConfig::default()
    })
    .await;
    let (_, _, body) = post(&off, json!({ "extensions": persisted(QUERY) }), &[]).await;
    assert_eq!(
        body["errors"][0]["message"], "PersistedQueryNotSupported",
        "{body}"
    );
    // Without the extension, a query runs as ever.
    let (_, _, plain) = post(&off, json!({ "query": QUERY }), &[]).await;
    assert!(plain.get("errors").is_none(), "{plain}");
}
