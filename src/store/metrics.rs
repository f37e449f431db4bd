//! Storage-call metrics for `/metrics`: calls, failures and latency per DynamoDB operation.
//! Shared by every clone of the store.
//!
//! Invariant: recording a call takes no lock. Each operation's handles are registered once,
//! the first time it is called, and kept.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{Counter, Histogram};

use crate::telemetry::Metrics;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

const CALLS: &str = "tablegraph_storage_calls_total";
const FAILURES: &str = "tablegraph_storage_call_failures_total";
const SECONDS: &str = "tablegraph_storage_call_seconds";

/// The operations the store calls; any other is registered on each call.
const OPERATIONS: [&str; 6] = [
    "BatchGetItem",
    "GetItem",
    "Query",
    "Scan",
    "TransactWriteItems",
    "DescribeTable",
];

pub struct StoreMetrics {
    metrics: Metrics,
    /// One entry per name of [`OPERATIONS`], filled the first time it is called.
    operations: [OnceLock<OperationMetrics>; OPERATIONS.len()],
}

struct OperationMetrics {
    calls: Counter,
    failures: Counter,
    seconds: Histogram,
}

impl Default for StoreMetrics {
    fn default() -> Self {
        let metrics = Metrics::new(&BUCKETS);
        metrics.describe_counter(CALLS, "Storage calls made, by DynamoDB operation.");
        metrics.describe_counter(
            FAILURES,
            "Storage calls that failed, by DynamoDB operation.",
        );
        metrics.describe_histogram(SECONDS, "Storage call latency, by DynamoDB operation.");
        StoreMetrics {
            metrics,
            operations: Default::default(),
        }
    }
}

impl StoreMetrics {
    pub fn observe(&self, operation: &'static str, took: Duration, ok: bool) {
        let register = || OperationMetrics {
            calls: self.metrics.counter(CALLS, &[("operation", operation)]),
            failures: self.metrics.counter(FAILURES, &[("operation", operation)]),
            seconds: self.metrics.histogram(SECONDS, &[("operation", operation)]),
        };
        let record = |handles: &OperationMetrics| {
            handles.calls.increment(1);
            if !ok {
                handles.failures.increment(1);
            }
            handles.seconds.record(took.as_secs_f64());
        };
        match OPERATIONS.iter().position(|known| *known == operation) {
            Some(index) => record(self.operations[index].get_or_init(register)),
            None => record(&register()),
        }
    }

    /// The metrics in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        self.metrics.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_land_in_cumulative_buckets() {
        let metrics = StoreMetrics::default();
        metrics.observe("Query", Duration::from_micros(800), true);
        metrics.observe("Query", Duration::from_millis(30), false);
        let text = metrics.render();
        for line in [
            "tablegraph_storage_calls_total{operation=\"Query\"} 2",
            "tablegraph_storage_call_failures_total{operation=\"Query\"} 1",
            "tablegraph_storage_call_seconds_bucket{operation=\"Query\",le=\"0.0005\"} 0",
            "tablegraph_storage_call_seconds_bucket{operation=\"Query\",le=\"0.001\"} 1",
            "tablegraph_storage_call_seconds_bucket{operation=\"Query\",le=\"0.05\"} 2",
            "tablegraph_storage_call_seconds_bucket{operation=\"Query\",le=\"+Inf\"} 2",
            "tablegraph_storage_call_seconds_count{operation=\"Query\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }

    #[test]
    fn an_operation_not_listed_is_counted_too() {
        let metrics = StoreMetrics::default();
        metrics.observe("UpdateTable", Duration::from_millis(2), true);
        metrics.observe("UpdateTable", Duration::from_millis(2), true);
        let text = metrics.render();
        assert!(
            text.contains("tablegraph_storage_calls_total{operation=\"UpdateTable\"} 2"),
            "{text}"
        );
    }
}
