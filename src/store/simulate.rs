//! Simulated latency and injected faults, for tests and benchmarks: a wrapper around the SDK's
//! own HTTP client, so everything above it (the SDK's serialization and error parsing, the
//! store's retries, the resolvers) runs unchanged.
//!
//! - A round trip like DynamoDB's: a call's answer comes back no sooner than the latency after
//!   it was sent. The store works on the request during that wait (as DynamoDB does on its own
//!   side of the round trip), so its own time is hidden in the latency instead of added to it;
//!   only a call that takes longer than the latency comes back later.
//! - A [`FaultPlan`] answers chosen calls with DynamoDB's own error bodies (throttling, a
//!   transaction conflict) without sending them; or sends them and then loses the answer (a
//!   timeout after the store applied the request); or sends them and moves part of the answer
//!   to `UnprocessedKeys`.
//!
//! Nothing here is installed unless [`StoreTuning`] asks for it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpClient, SharedHttpConnector, http_client_fn,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;

/// Settings of the store's HTTP client that only tests and benchmarks change.
#[derive(Debug, Clone, Default)]
pub struct StoreTuning {
    /// The least time from sending a request to its answer (see the module doc).
    pub latency: Option<Duration>,
    /// Faults to inject into chosen calls.
    pub faults: Option<Arc<FaultPlan>>,
}

impl StoreTuning {
    pub fn is_default(&self) -> bool {
        self.latency.is_none() && self.faults.is_none()
    }
}

/// A fault DynamoDB can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `ThrottlingException`, before the request reaches the store.
    Throttle,
    /// `TransactionCanceledException` with a `TransactionConflict` reason, before the request
    /// reaches the store.
    TransactionConflict,
    /// The store answers, then half of the items it read come back as `UnprocessedKeys`.
    UnprocessedKeys,
    /// The store applies the request, then its answer is lost as if the connection timed out.
    LoseResponse,
}

/// Which calls get which fault: per operation (`"TransactWriteItems"`), a queue of faults for
/// its next calls. Also counts every request sent per operation, faulted or not.
#[derive(Debug, Default)]
pub struct FaultPlan {
    state: Mutex<PlanState>,
}

#[derive(Debug, Default)]
struct PlanState {
    queued: Vec<(String, VecDeque<Fault>)>,
    sent: Vec<(String, usize)>,
}

impl FaultPlan {
    pub fn new() -> Arc<FaultPlan> {
        Arc::new(FaultPlan::default())
    }

    /// Answers the next `times` calls of `operation` with `fault`.
    pub fn inject(&self, operation: &str, fault: Fault, times: usize) {
        let mut state = self.lock();
        let queue = match state.queued.iter_mut().find(|(op, _)| op == operation) {
            Some((_, queue)) => queue,
            None => {
                state.queued.push((operation.to_owned(), VecDeque::new()));
                &mut state.queued.last_mut().expect("just pushed").1
            }
        };
        queue.extend(std::iter::repeat_n(fault, times));
    }

    /// Drops every queued fault.
    pub fn clear(&self) {
        self.lock().queued.clear();
    }

    /// Requests of `operation` that reached the client, faulted or not.
    pub fn sent(&self, operation: &str) -> usize {
        self.lock()
            .sent
            .iter()
            .find(|(op, _)| op == operation)
            .map_or(0, |(_, n)| *n)
    }

    fn next(&self, operation: &str) -> Option<Fault> {
        let mut state = self.lock();
        match state.sent.iter_mut().find(|(op, _)| op == operation) {
            Some((_, n)) => *n += 1,
            None => state.sent.push((operation.to_owned(), 1)),
        }
        state
            .queued
            .iter_mut()
            .find(|(op, _)| op == operation)
            .and_then(|(_, queue)| queue.pop_front())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PlanState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Wraps `base` so that its requests follow `tuning`.
pub(super) fn wrap(base: SharedHttpClient, tuning: StoreTuning) -> SharedHttpClient {
    http_client_fn(move |settings, components| {
        use aws_smithy_runtime_api::client::http::HttpClient as _;
        SharedHttpConnector::new(Simulated {
            inner: base.http_connector(settings, components),
            tuning: tuning.clone(),
        })
    })
}

#[derive(Debug)]
struct Simulated {
    inner: SharedHttpConnector,
    tuning: StoreTuning,
}

impl HttpConnector for Simulated {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|target| target.rsplit('.').next())
            .unwrap_or_default()
            .to_owned();
        let fault = self
            .tuning
            .faults
            .as_ref()
            .and_then(|plan| plan.next(&operation));
        let latency = self.tuning.latency;
        let inner = self.inner.clone();
        HttpConnectorFuture::new(async move {
            let sent = std::time::Instant::now();
            let answer = match fault {
                None => inner.call(request).await,
                Some(Fault::Throttle) => Ok(error_response(
                    "ThrottlingException",
                    "Rate of requests exceeds the allowed throughput.",
                    "",
                )),
                Some(Fault::TransactionConflict) => Ok(error_response(
                    "TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
                    r#","CancellationReasons":[{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}]"#,
                )),
                Some(Fault::LoseResponse) => match inner.call(request).await {
                    Ok(_applied) => Err(ConnectorError::timeout(
                        "injected: the answer was lost after the store applied the request".into(),
                    )),
                    Err(error) => Err(error),
                },
                Some(Fault::UnprocessedKeys) => match inner.call(request).await {
                    Ok(response) => leave_keys_unprocessed(response).await,
                    Err(error) => Err(error),
                },
            };
            if let Some(remaining) = latency.and_then(|latency| latency.checked_sub(sent.elapsed()))
            {
                // A thread's sleep is precise to tens of microseconds; the runtime's timer
                // would round every call up to its next millisecond tick.
                let _ = tokio::task::spawn_blocking(move || std::thread::sleep(remaining)).await;
            }
            answer
        })
    }
}

fn error_response(code: &str, message: &str, extra: &str) -> HttpResponse {
    let body = format!(
        r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{code}","message":"{message}"{extra}}}"#
    );
    let mut response = HttpResponse::new(
        StatusCode::try_from(400).expect("400 is a status code"),
        SdkBody::from(body),
    );
    response
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    response
}

/// Keeps the first half of each table's items in `Responses` and returns the keys of the rest
/// as `UnprocessedKeys`, as DynamoDB does when it runs out of capacity mid-batch.
async fn leave_keys_unprocessed(
    mut response: HttpResponse,
) -> Result<HttpResponse, ConnectorError> {
    let status = response.status();
    let bytes = ByteStream::new(response.take_body())
        .collect()
        .await
        .map_err(|e| ConnectorError::io(e.into()))?
        .into_bytes();
    let Ok(mut body) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Ok(HttpResponse::new(status, SdkBody::from(bytes)));
    };
    let mut unprocessed = serde_json::Map::new();
    if let Some(tables) = body
        .get_mut("Responses")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (table, items) in tables.iter_mut() {
            let Some(items) = items.as_array_mut() else {
                continue;
            };
            let rest = items.split_off(items.len() / 2);
            let keys: Vec<serde_json::Value> = rest
                .iter()
                .map(|item| serde_json::json!({ "PK": item["PK"], "SK": item["SK"] }))
                .collect();
            if !keys.is_empty() {
                unprocessed.insert(table.clone(), serde_json::json!({ "Keys": keys }));
            }
        }
    }
    body["UnprocessedKeys"] = serde_json::Value::Object(unprocessed);
    let mut rewritten = HttpResponse::new(status, SdkBody::from(body.to_string()));
    rewritten
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    Ok(rewritten)
}
