//! The Grafana dashboard and the Prometheus alerts shipped in `deploy/` ask only for metrics the
//! server really exports, and the dashboard shows every one it exports. (`promtool test rules`
//! runs the alerts' own unit tests in CI.)

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use tablegraph::auth::LambdaAuthorizerConfig;

use crate::helpers::{TestApp, api_key_and_tokens, repository_file, spawn_cached_with};

const API_KEY: &str = "da2-dashboards";
const DASHBOARD: &str = "deploy/grafana/tablegraph.json";
const ALERTS: &str = "deploy/prometheus/alerts.yaml";

/// A server with its read cache on, API keys, tokens and a Lambda authorizer, after a query,
/// so that every metric family is exported.
async fn warmed() -> TestApp {
    let mut http = api_key_and_tokens(API_KEY);
    http.auth.lambda_authorizer = Some(LambdaAuthorizerConfig {
        // Nothing answers there: the dashboard needs the family, not a decision.
        address: "http://127.0.0.1:9/authorize".to_owned(),
        ttl: tablegraph::auth::DEFAULT_TTL,
        timeout: Duration::from_secs(1),
        lambda_endpoint: None,
    });
    let app = spawn_cached_with(
        "schema.graphql",
        http,
        tablegraph::store::CacheSettings {
            bytes: 1 << 20,
            max_lag: Duration::from_secs(1),
        },
    )
    .await;
    let (_, body) = app
        .graphql_with(
            &[("x-api-key", API_KEY)],
            "{ listFarms(first: 2) { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    app
}

/// The series names a scrape of `/metrics` holds: each family's name, and a histogram's
/// `_bucket`, `_count` and `_sum`.
async fn exported(app: &TestApp) -> BTreeSet<String> {
    let text = app.metrics().await;
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if let (Some("#"), Some("TYPE"), Some(name), Some(kind)) =
            (words.next(), words.next(), words.next(), words.next())
        {
            names.insert(name.to_owned());
            if kind == "histogram" {
                for suffix in ["_bucket", "_count", "_sum"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        }
    }
    names
}

/// Every `tablegraph_…` name in `text`.
fn named(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("tablegraph_") {
        let name: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        names.insert(name);
    }
    names
}

/// Every panel query's expression of the dashboard.
fn dashboard_expressions() -> Vec<String> {
    let text = std::fs::read_to_string(repository_file(DASHBOARD)).expect("the dashboard");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut expressions = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            expressions.push(target["expr"].as_str().expect("an expression").to_owned());
        }
    }
    expressions
}

#[tokio::test]
async fn the_dashboard_and_the_alerts_ask_for_exported_metrics_and_show_each_one() {
    let app = warmed().await;
    let exported = exported(&app).await;
    assert!(exported.len() > 20, "{exported:?}");
    let expressions = dashboard_expressions();
    let shown: BTreeSet<String> = expressions.iter().flat_map(|e| named(e)).collect();
    let unknown: Vec<&String> = shown.difference(&exported).collect();
    assert!(
        unknown.is_empty(),
        "the dashboard asks for {unknown:?}, which /metrics lacks"
    );
    let alerts = std::fs::read_to_string(repository_file(ALERTS)).expect("the alerts");
    let alerted = named(&alerts);
    let unknown: Vec<&String> = alerted.difference(&exported).collect();
    assert!(
        unknown.is_empty(),
        "the alerts ask for {unknown:?}, which /metrics lacks"
    );
    // Each family the server exports has a panel (a histogram through its buckets).
    let families = exported.iter().filter(|name| {
        !["_bucket", "_count", "_sum"].iter().any(|suffix| {
            name.ends_with(suffix) && exported.contains(&name[..name.len() - suffix.len()])
        })
    });
    let unshown: Vec<&String> = families
        .filter(|name| !shown.contains(*name) && !shown.contains(&format!("{name}_bucket")))
        .collect();
    assert!(unshown.is_empty(), "no panel shows {unshown:?}");
}
