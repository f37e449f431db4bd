//! Logging, traces and metrics. Logs: structured `tracing` events to stderr, filtered by
//! `RUST_LOG` (default [`DEFAULT_LOG_FILTER`]: `info`, and only errors of the AWS SDK's
//! configuration loader, whose provider chain warns several KB for each place it found no
//! region or credentials: the store says in one line what to set); panics are logged as events too, inside the span that panicked,
//! so a request's panic is logged once and carries its request id. Traces: when `serve` is given
//! an OTLP endpoint ([`TraceExport`]), the request spans and the storage-call spans below them
//! go to it over OTLP/HTTP. Metrics: [`Metrics`], a registry rendered in Prometheus' text format
//! for `/metrics`.
//!
//! # Traces cost nothing when off
//!
//! A storage call's span is a `DEBUG` span: with no exporter, the stderr layer's filter
//! (`info`) disables its call site, and a call pays one cached check of that. The request span's
//! trace fields (`otel.name`, the operation, the status) are declared empty and recorded only
//! while [`traces_on`], so the stderr layer formats nothing more. With an exporter, its own
//! filter takes the spans of `tablegraph` at every level and its warnings as span events; the
//! SDK batches spans on its own thread (`OTEL_BSP_*` tune it) and sends them with a blocking
//! HTTP client there, never on the request path.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, Label, Recorder as _};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Context, Filter, Layer as _, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

/// The target of the embedded store's HTTP server's events.
const EMBEDDED_STORE_SERVER: &str = "dynoxide::server";

/// Where `serve` sends traces: the OTLP/HTTP endpoint of `--otlp-endpoint`, or the one the
/// standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` variables name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceExport {
    /// The collector's base URL (`http://collector:4318`); spans go to its `/v1/traces`. `None`
    /// leaves the endpoint to the `OTEL_*` variables.
    pub base_url: Option<String>,
}

impl TraceExport {
    /// Traces are exported when `--otlp-endpoint` is given or an `OTEL_EXPORTER_OTLP_*`
    /// endpoint variable is set, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
    pub fn from_flag_and_env(flag: Option<String>) -> Option<TraceExport> {
        Self::decide(flag, |name| std::env::var(name).ok())
    }

    fn decide(flag: Option<String>, var: impl Fn(&str) -> Option<String>) -> Option<TraceExport> {
        let set = |name: &str| var(name).is_some_and(|value| !value.trim().is_empty());
        let is = |name: &str, value: &str| {
            var(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
        };
        if is("OTEL_SDK_DISABLED", "true") || is("OTEL_TRACES_EXPORTER", "none") {
            return None;
        }
        let flag = flag.filter(|url| !url.trim().is_empty());
        if flag.is_none()
            && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            && !set("OTEL_EXPORTER_OTLP_ENDPOINT")
        {
            return None;
        }
        Some(TraceExport { base_url: flag })
    }

    /// The URL spans are posted to, when the flag gave one.
    fn traces_url(&self) -> Option<String> {
        let base = self.base_url.as_deref()?.trim().trim_end_matches('/');
        Some(format!("{base}/v1/traces"))
    }
}

/// Whether spans are exported: the request span records its trace fields only then.
static TRACES_ON: AtomicBool = AtomicBool::new(false);

pub fn traces_on() -> bool {
    TRACES_ON.load(Ordering::Relaxed)
}

/// How long the spans not yet sent may take to leave when the process ends.
const LAST_SPANS_WAIT: Duration = Duration::from_secs(2);

/// What [`init`] started that must be finished before the process ends.
#[must_use = "call shutdown() before the process ends, or the last spans are lost"]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Sends the spans not sent yet and stops the exporter, giving them at most
    /// [`LAST_SPANS_WAIT`] (a container has 10 s between SIGTERM and SIGKILL, and requests may
    /// have used some). Blocks: call it outside the async runtime, once the work is done.
    pub fn shutdown(self) {
        if let Some(provider) = self.traces
            && let Err(error) = provider.shutdown_with_timeout(LAST_SPANS_WAIT)
        {
            eprintln!("tablegraph: the last traces were not sent: {error}");
        }
    }
}

/// What is logged when `RUST_LOG` is not set.
pub const DEFAULT_LOG_FILTER: &str = "info,aws_config=error";

/// Starts logging to stderr and, when `traces` says so, exporting spans. Call it outside an
/// async runtime: the trace exporter's HTTP client is a blocking one, made here.
pub fn init(traces: Option<TraceExport>) -> anyhow::Result<Telemetry> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(tracing_subscriber::filter::FilterExt::and(
            filter,
            ExpectedStoreRefusals,
        ));
    let provider = traces.map(|export| tracer_provider(&export)).transpose()?;
    let spans = provider.as_ref().map(|provider| {
        let ours = |metadata: &Metadata<'_>| {
            metadata.target().starts_with("tablegraph")
                && (metadata.is_span() || *metadata.level() <= Level::WARN)
        };
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("tablegraph"))
            .with_filter(tracing_subscriber::filter::filter_fn(ours))
    });
    // A second init (tests start many apps in one process) keeps the first subscriber.
    let installed = tracing_subscriber::registry()
        .with(stderr)
        .with(spans)
        .try_init()
        .is_ok();
    if installed && provider.is_some() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        TRACES_ON.store(true, Ordering::Relaxed);
    }
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
    Ok(Telemetry { traces: provider })
}

/// The SDK's tracer provider for `export`: OTLP over HTTP with protobuf, spans batched on the
/// SDK's thread. The `OTEL_*` variables the SDK reads (headers, timeout, sampler, batch sizes,
/// `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) apply; the service is `tablegraph` unless
/// they name one.
fn tracer_provider(export: &TraceExport) -> anyhow::Result<SdkTracerProvider> {
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};
    for variable in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Ok(protocol) = std::env::var(variable)
            && !protocol.trim().is_empty()
            && protocol.trim() != "http/protobuf"
        {
            anyhow::bail!(
                "{variable}={protocol}: tablegraph exports traces over OTLP/HTTP with protobuf \
                 (http/protobuf), to the collector's HTTP port (usually 4318)"
            );
        }
    }
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(url) = export.traces_url() {
        exporter = exporter.with_endpoint(url);
    }
    let exporter = exporter
        .build()
        .map_err(|e| anyhow::anyhow!("cannot export traces: {e}"))?;
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="));
    let mut resource = opentelemetry_sdk::Resource::builder().with_attribute(
        opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    );
    if !named {
        resource = resource.with_service_name("tablegraph");
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// Renames `span` in exported traces. Its `otel.name` field cannot: a span's name is fixed in
/// the SDK once the span has been entered.
pub fn rename_span(span: &tracing::Span, name: String) {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if traces_on() {
        span.context().span().update_name(name);
    }
}

/// Makes `span` (a request's) a child of the trace its client's W3C `traceparent` (and
/// `tracestate`) headers name, when spans are exported.
pub fn follow_remote_parent(
    span: &tracing::Span,
    traceparent: Option<&str>,
    tracestate: Option<&str>,
) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let Some(traceparent) = traceparent.filter(|_| traces_on()) else {
        return;
    };
    let mut carrier =
        std::collections::HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_owned(), state.to_owned());
    }
    let parent =
        opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&carrier));
    let _ = span.set_parent(parent);
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
    use std::collections::HashMap;

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
    fn traces_are_exported_when_an_endpoint_is_named_and_not_turned_off() {
        let decide = |flag: Option<&str>, vars: &[(&str, &str)]| {
            let vars: HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            TraceExport::decide(flag.map(str::to_owned), |name| vars.get(name).cloned())
        };
        let flagged = Some(TraceExport {
            base_url: Some("http://c:4318".to_owned()),
        });
        let from_env = Some(TraceExport { base_url: None });
        assert_eq!(decide(None, &[]), None);
        assert_eq!(decide(Some(" "), &[]), None);
        assert_eq!(decide(Some("http://c:4318"), &[]), flagged);
        assert_eq!(
            decide(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
            from_env
        );
        assert_eq!(
            decide(
                None,
                &[(
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://c:4318/v1/traces"
                )]
            ),
            from_env
        );
        assert_eq!(decide(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")]), None);
        assert_eq!(
            decide(Some("http://c:4318"), &[("OTEL_SDK_DISABLED", "TRUE")]),
            None
        );
        assert_eq!(
            decide(Some("http://c:4318"), &[("OTEL_TRACES_EXPORTER", "none")]),
            None
        );
        assert_eq!(
            flagged.and_then(|export| export.traces_url()).as_deref(),
            Some("http://c:4318/v1/traces")
        );
        let slash = TraceExport {
            base_url: Some("http://c:4318/".to_owned()),
        };
        assert_eq!(
            slash.traces_url().as_deref(),
            Some("http://c:4318/v1/traces")
        );
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
