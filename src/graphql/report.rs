//! What a request tells of its own reads in its answer's `extensions`: the storage calls it
//! made (`storageCalls`, to a client that asks for them), the reads the read cache answered
//! instead (`cacheHits`), and what each filtered page read (`filters`).

use async_graphql::Value;
use serde_json::json;

use crate::engine::RequestScope;

/// Adds the scope's report to `response`: its storage calls and cache hits when
/// `storage_calls`, its filtered reads always.
pub(super) fn add(
    response: &mut async_graphql::Response,
    scope: &RequestScope,
    storage_calls: bool,
) {
    if storage_calls {
        let calls = serde_json::to_value(scope.calls.calls()).unwrap_or_default();
        response.extensions.insert(
            "storageCalls".to_owned(),
            Value::from_json(calls).unwrap_or_default(),
        );
        // The reads the read cache answered, each as the call it saved.
        let hits = scope.calls.hits();
        if !hits.is_empty() {
            let hits = serde_json::to_value(hits).unwrap_or_default();
            response.extensions.insert(
                "cacheHits".to_owned(),
                Value::from_json(hits).unwrap_or_default(),
            );
        }
    }
    let filter_reads = scope.filter_reads();
    if filter_reads.is_empty() {
        return;
    }
    let reads: Vec<serde_json::Value> = filter_reads
        .into_iter()
        .map(|(path, read)| {
            // Under the caller's rules the counts include nodes it may not read: they would
            // tell how many there are.
            if read.rules {
                return json!({
                    "path": path,
                    "budgetExhausted": read.budget_stop.is_some(),
                });
            }
            json!({
                "path": path,
                "itemsRead": read.evaluated,
                "itemsMatched": read.matched,
                "budgetExhausted": read.budget_stop.is_some(),
            })
        })
        .collect();
    response.extensions.insert(
        "filters".to_owned(),
        Value::from_json(serde_json::Value::Array(reads)).unwrap_or_default(),
    );
}

/// An empty report, for a request that nothing ran for: a client that asked for its storage
/// calls is told of none.
pub(super) fn none(response: &mut async_graphql::Response) {
    response
        .extensions
        .insert("storageCalls".to_owned(), Value::List(Vec::new()));
}
