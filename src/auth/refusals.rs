//! Refused credentials, told without flooding the log: a probe loop sends thousands a minute.
//! The first refusal after a quiet minute is logged at INFO with its reason; the others of
//! that minute at DEBUG only (`RUST_LOG=tablegraph=debug` shows each), and summed into one
//! INFO line when the next refusal comes after the minute. Every refusal is counted in
//! `/metrics`, `tablegraph_auth_refused_total{transport="http"|"websocket"|"realtime"}`.
//!
//! A count and a timestamp under one lock, taken only on a refusal: `tracing` has no rate
//! limit of its own, and a limiter crate (`governor`) would drop lines where this sums them.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::telemetry::Metrics;

const REFUSED: &str = "tablegraph_auth_refused_total";

/// How often refusals are summarized at INFO at most.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// Where a refused request came.
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    /// A request to `/graphql` (or an upgrade's headers).
    Http,
    /// A graphql-ws or graphql-transport-ws `connection_init`.
    WebSocket,
    /// AppSync's real-time protocol.
    Realtime,
}

impl Transport {
    const ALL: [Transport; 3] = [Transport::Http, Transport::WebSocket, Transport::Realtime];

    fn label(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::WebSocket => "websocket",
            Transport::Realtime => "realtime",
        }
    }
}

/// The refusals of one server (see the module's doc).
pub(super) struct Refusals {
    metrics: Metrics,
    counters: [metrics::Counter; 3],
    every: Duration,
    /// When the minute began, and the refusals in it after its first.
    window: Mutex<Option<(Instant, [u64; 3])>>,
}

impl Refusals {
    pub(super) fn new(every: Duration) -> Refusals {
        let metrics = Metrics::new(&[1.0]);
        metrics.describe_counter(
            REFUSED,
            "Requests and connections refused for their credentials, by transport.",
        );
        Refusals {
            counters: Transport::ALL.map(|t| metrics.counter(REFUSED, &[("transport", t.label())])),
            metrics,
            every,
            window: Mutex::new(None),
        }
    }

    pub(super) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Counts and tells a refusal on `transport` for `reason`.
    pub(super) fn refused(&self, transport: Transport, reason: &dyn std::fmt::Display) {
        self.counters[transport as usize].increment(1);
        let transport_label = transport.label();
        let now = Instant::now();
        let mut window = self
            .window
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((began, counts)) = window.as_mut()
            && now.duration_since(*began) < self.every
        {
            counts[transport as usize] += 1;
            tracing::debug!(transport = transport_label, %reason, "refused credentials");
            return;
        }
        if let Some((began, counts)) = window.take() {
            summarize(now.duration_since(began), &counts);
        }
        tracing::info!(
            transport = transport_label,
            %reason,
            "refused a request without valid credentials (more in the next minute are summed \
             in one line; each at DEBUG)"
        );
        *window = Some((now, [0; 3]));
    }
}

/// The INFO line of the refusals of a minute after its first, if any.
fn summarize(took: Duration, counts: &[u64; 3]) {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return;
    }
    let by: Vec<String> = Transport::ALL
        .iter()
        .zip(counts)
        .filter(|(_, count)| **count > 0)
        .map(|(transport, count)| format!("{} {count}", transport.label()))
        .collect();
    tracing::info!(
        "refused {total} more requests or connections for their credentials in the last {} s \
         ({})",
        took.as_secs(),
        by.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_counted_by_its_transport() {
        let refusals = Refusals::new(SUMMARY_EVERY);
        for _ in 0..3 {
            refusals.refused(Transport::Http, &"no key");
        }
        refusals.refused(Transport::Realtime, &"expired");
        let text = refusals.metrics().render();
        assert!(
            text.contains("tablegraph_auth_refused_total{transport=\"http\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("tablegraph_auth_refused_total{transport=\"realtime\"} 1"),
            "{text}"
        );
        let window = refusals.window.lock().expect("a lock");
        let (_, counts) = window.expect("a minute began");
        assert_eq!(counts, [2, 0, 1], "the first is told, the rest summed");
    }
}
