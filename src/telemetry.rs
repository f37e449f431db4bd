//! Logging and metrics. Logs: structured `tracing` events to stderr, filtered by `RUST_LOG`
//! (default `info`); panics are logged as events too, inside the span that panicked, so a
//! request's panic is logged once and carries its request id. Metrics: [`Metrics`], a registry
//! rendered in Prometheus' text format for `/metrics`.
//!
//! Invariant: a warning is something for an operator to look at. DynamoDB's refusals that the
//! store expects and handles (a table not created yet, a failed condition on a unique value)
//! are not logged as warnings; a storage failure is logged once, where it is handled (`store`,
//! `graphql::errors`).
//!
//! # Why a filter on dynoxide's events
//!
//! The embedded store's HTTP server (`dynoxide::server`) logs every error answer at WARN with
//! its status, and has no setting for it: the `DescribeTable` of every first start and the
//! `TransactWriteItems` of every refused duplicate showed as warnings. A level directive for
//! its target would hide its 5xx answers too, so [`ExpectedStoreRefusals`] drops only the
//! WARN events whose `status` is a 4xx, whatever `RUST_LOG` says.
//!
//! # Why `metrics` and not `prometheus-client`
//!
//! Both render the same text. `prometheus-client` takes a lock on every histogram
//! observation and on every labelled lookup; `metrics-exporter-prometheus` counts in atomics
//! and records histogram samples in a lock-free bucket that rendering drains, and the handles
//! of the `metrics` facade can be kept, so recording a request or a storage call takes no
//! lock. Each [`Metrics`] is its own registry rather than the facade's global recorder: tests
//! run many servers in one process, and each one's `/metrics` counts its own calls.

use std::fmt;
use std::io::IsTerminal as _;
use std::sync::{Arc, Weak};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, Label, Recorder as _};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Context, Filter, Layer as _, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

/// The target of the embedded store's HTTP server's events.
const EMBEDDED_STORE_SERVER: &str = "dynoxide::server";

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(tracing_subscriber::filter::FilterExt::and(
            filter,
            ExpectedStoreRefusals,
        ));
    // A second init (tests start many apps in one process) keeps the first subscriber.
    let _ = tracing_subscriber::registry().with(stderr).try_init();
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(panic = %message, %location, "panicked");
    }));
}

/// Lets every event through but the embedded store's warnings about the 4xx answers it gives
/// (see the module doc).
struct ExpectedStoreRefusals;

impl<S> Filter<S> for ExpectedStoreRefusals {
    fn enabled(&self, _: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _: &Context<'_, S>) -> bool {
        let metadata = event.metadata();
        let status = || {
            let mut status = StatusField(String::new());
            event.record(&mut status);
            status.0
        };
        !is_expected_refusal(metadata.target(), *metadata.level(), status)
    }
}

/// Whether an event is the embedded store's warning about a 4xx answer. `status` gives the
/// event's `status` field as written (`400 Bad Request`); it is only read for such warnings.
fn is_expected_refusal(target: &str, level: Level, status: impl FnOnce() -> String) -> bool {
    target == EMBEDDED_STORE_SERVER && level == Level::WARN && status().starts_with('4')
}

/// The `status` field of an event, as text.
struct StatusField(String);

impl Visit for StatusField {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "status" {
            self.0 = format!("{value:?}");
        }
    }
}

/// A registry of counters and histograms, rendered in Prometheus' text format. Cheap to clone;
/// clones share the registry. Handles taken from it ([`Metrics::counter`],
/// [`Metrics::histogram`]) record without a lock; keep them rather than asking again.
#[derive(Clone)]
pub struct Metrics {
    recorder: Arc<PrometheusRecorder>,
}

/// How often histogram samples are folded into their buckets when nobody scrapes: they are
/// kept until then, so this bounds their memory.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Where a metric was registered from, as the `metrics` facade wants it; not rendered.
static METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

impl Metrics {
    /// A registry whose histograms count into `buckets` (upper bounds, ascending). Inside a
    /// tokio runtime it also starts the upkeep that folds histogram samples into their buckets
    /// every few seconds; the task ends with the registry.
    pub fn new(buckets: &[f64]) -> Metrics {
        let recorder = PrometheusBuilder::new()
            .set_buckets(buckets)
            .expect("histogram buckets are a non-empty constant")
            .build_recorder();
        let metrics = Metrics {
            recorder: Arc::new(recorder),
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(upkeep(Arc::downgrade(&metrics.recorder)));
        }
        metrics
    }

    /// Gives the counter `name` its `# HELP` line.
    pub fn describe_counter(&self, name: &'static str, help: &'static str) {
        self.recorder
            .describe_counter(name.into(), None, help.into());
    }

    /// Gives the gauge `name` its `# HELP` line.
    pub fn describe_gauge(&self, name: &'static str, help: &'static str) {
        self.recorder.describe_gauge(name.into(), None, help.into());
    }

    /// Gives the histogram `name` its `# HELP` line.
    pub fn describe_histogram(&self, name: &'static str, help: &'static str) {
        self.recorder
            .describe_histogram(name.into(), None, help.into());
    }

    /// The counter `name` with these labels (created at zero the first time).
    pub fn counter(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Counter {
        self.recorder
            .register_counter(&key(name, labels), &METADATA)
    }

    /// The gauge `name` with these labels (created at zero the first time).
    pub fn gauge(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Gauge {
        self.recorder.register_gauge(&key(name, labels), &METADATA)
    }

    /// The histogram `name` with these labels.
    pub fn histogram(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Histogram {
        self.recorder
            .register_histogram(&key(name, labels), &METADATA)
    }

    /// Every metric in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        self.recorder.handle().render()
    }
}

fn key(name: &'static str, labels: &[(&'static str, &str)]) -> Key {
    let labels: Vec<Label> = labels
        .iter()
        .map(|(label, value)| Label::new(*label, (*value).to_owned()))
        .collect();
    Key::from_parts(name, labels)
}

async fn upkeep(recorder: Weak<PrometheusRecorder>) {
    let mut every = tokio::time::interval(UPKEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(recorder) = recorder.upgrade() else {
            return;
        };
        recorder.handle().run_upkeep();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_renders_its_counters_and_histograms() {
        let metrics = Metrics::new(&[0.1, 1.0]);
        metrics.describe_counter("calls_total", "Calls made.");
        metrics.describe_histogram("call_seconds", "How long calls took.");
        let calls = metrics.counter("calls_total", &[("operation", "Query")]);
        calls.increment(2);
        let seconds = metrics.histogram("call_seconds", &[("operation", "Query")]);
        seconds.record(0.05);
        seconds.record(0.5);
        let text = metrics.render();
        for line in [
            "# HELP calls_total Calls made.",
            "# HELP call_seconds How long calls took.",
            "# TYPE call_seconds histogram",
            "calls_total{operation=\"Query\"} 2",
            "call_seconds_bucket{operation=\"Query\",le=\"0.1\"} 1",
            "call_seconds_bucket{operation=\"Query\",le=\"1\"} 2",
            "call_seconds_bucket{operation=\"Query\",le=\"+Inf\"} 2",
            "call_seconds_count{operation=\"Query\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }

    #[test]
    fn only_the_embedded_stores_warnings_about_4xx_answers_are_expected() {
        for (target, level, status, expected) in [
            ("dynoxide::server", Level::WARN, "400 Bad Request", true),
            ("dynoxide::server", Level::WARN, "404 Not Found", true),
            (
                "dynoxide::server",
                Level::WARN,
                "500 Internal Server Error",
                false,
            ),
            (
                "dynoxide::server",
                Level::WARN,
                "501 Not Implemented",
                false,
            ),
            ("dynoxide::server", Level::WARN, "", false),
            ("dynoxide::server", Level::ERROR, "400 Bad Request", false),
            ("tablegraph::store", Level::WARN, "400 Bad Request", false),
        ] {
            assert_eq!(
                is_expected_refusal(target, level, || status.to_owned()),
                expected,
                "{target} {level} {status}"
            );
        }
    }
}
