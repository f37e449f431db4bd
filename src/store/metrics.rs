//! Storage-call metrics for `/metrics`: calls, failures and latency per DynamoDB operation, in
//! Prometheus' text format. Shared by every clone of the store.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Default)]
pub struct StoreMetrics {
    operations: Mutex<BTreeMap<&'static str, OperationStats>>,
}

#[derive(Debug, Default, Clone)]
struct OperationStats {
    calls: u64,
    failures: u64,
    /// Calls per bucket (not cumulative; summed when rendered).
    buckets: [u64; BUCKETS.len()],
    seconds: f64,
}

impl StoreMetrics {
    pub fn observe(&self, operation: &'static str, took: Duration, ok: bool) {
        let mut operations = self
            .operations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let stats = operations.entry(operation).or_default();
        stats.calls += 1;
        stats.failures += u64::from(!ok);
        let seconds = took.as_secs_f64();
        stats.seconds += seconds;
        if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            stats.buckets[bucket] += 1;
        }
    }

    /// The metrics in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        let operations = self
            .operations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP tablegraph_storage_calls_total Storage calls made, by DynamoDB operation."
        );
        let _ = writeln!(out, "# TYPE tablegraph_storage_calls_total counter");
        for (operation, stats) in &operations {
            let _ = writeln!(
                out,
                "tablegraph_storage_calls_total{{operation=\"{operation}\"}} {}",
                stats.calls
            );
        }
        let _ = writeln!(
            out,
            "# HELP tablegraph_storage_call_failures_total Storage calls that failed, by DynamoDB operation."
        );
        let _ = writeln!(out, "# TYPE tablegraph_storage_call_failures_total counter");
        for (operation, stats) in &operations {
            let _ = writeln!(
                out,
                "tablegraph_storage_call_failures_total{{operation=\"{operation}\"}} {}",
                stats.failures
            );
        }
        let _ = writeln!(
            out,
            "# HELP tablegraph_storage_call_seconds Storage call latency, by DynamoDB operation."
        );
        let _ = writeln!(out, "# TYPE tablegraph_storage_call_seconds histogram");
        for (operation, stats) in &operations {
            let mut cumulative = 0;
            for (bound, count) in BUCKETS.iter().zip(stats.buckets) {
                cumulative += count;
                let _ = writeln!(
                    out,
                    "tablegraph_storage_call_seconds_bucket{{operation=\"{operation}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "tablegraph_storage_call_seconds_bucket{{operation=\"{operation}\",le=\"+Inf\"}} {}",
                stats.calls
            );
            let _ = writeln!(
                out,
                "tablegraph_storage_call_seconds_sum{{operation=\"{operation}\"}} {}",
                stats.seconds
            );
            let _ = writeln!(
                out,
                "tablegraph_storage_call_seconds_count{{operation=\"{operation}\"}} {}",
                stats.calls
            );
        }
        out
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
        assert!(
            text.contains("tablegraph_storage_calls_total{operation=\"Query\"} 2"),
            "{text}"
        );
        assert!(text.contains("tablegraph_storage_call_failures_total{operation=\"Query\"} 1"));
        assert!(text.contains(
            "tablegraph_storage_call_seconds_bucket{operation=\"Query\",le=\"0.001\"} 1"
        ));
        assert!(
            text.contains(
                "tablegraph_storage_call_seconds_bucket{operation=\"Query\",le=\"0.05\"} 2"
            )
        );
        assert!(
            text.contains(
                "tablegraph_storage_call_seconds_bucket{operation=\"Query\",le=\"+Inf\"} 2"
            )
        );
        assert!(text.contains("tablegraph_storage_call_seconds_count{operation=\"Query\"} 2"));
    }
}
