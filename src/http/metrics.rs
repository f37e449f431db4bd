//! HTTP metrics for `/metrics`: requests answered, by route and status, and their latency, by
//! route (until the answer's head is ready); WebSocket and TCP connections open, those closed
//! at the connection cap, and those each timer closed.
//!
//! Invariant: recording a request takes no lock. Each route's handles are registered the first
//! time it answers with a status, and kept; the routes are the router's own paths, and
//! `unmatched` for any other, so a client cannot grow the label set.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use metrics::{Counter, Gauge, Histogram};

use crate::telemetry::Metrics;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 30.0,
];

const REQUESTS: &str = "tablegraph_http_requests_total";
const SECONDS: &str = "tablegraph_http_request_seconds";
const CONNECTIONS: &str = "tablegraph_websocket_connections";
const TCP_CONNECTIONS: &str = "tablegraph_connections_open";
const SHED: &str = "tablegraph_connections_shed_total";
const CLOSED: &str = "tablegraph_connections_closed_total";

/// The route label of a request no route matched.
const UNMATCHED: &str = "unmatched";

/// The status codes a counter slot exists for; HTTP has no others.
const STATUSES: std::ops::Range<u16> = 100..600;

/// Which connection the cap closed.
#[derive(Debug, Clone, Copy)]
pub(super) enum Shed {
    /// The oldest idle one, to make room.
    Idle,
    /// The one just accepted: none was idle.
    New,
}

/// Which timer closed a connection.
#[derive(Debug, Clone, Copy)]
pub(super) enum Closed {
    /// The header read timeout: no byte came, or a request's head did not come whole.
    HeaderTimeout,
    /// The idle timeout: a kept-alive connection sent no next request.
    IdleTimeout,
}

/// Shared by every clone of the router.
#[derive(Clone)]
pub struct HttpMetrics {
    inner: Arc<Inner>,
}

struct Inner {
    metrics: Metrics,
    connections: Gauge,
    tcp_connections: Gauge,
    /// Connections closed at the cap: the oldest idle one, or the new one when none is idle.
    shed_idle: Counter,
    shed_new: Counter,
    /// Connections closed by the header read timeout, and by the idle timeout.
    closed_header: Counter,
    closed_idle: Counter,
    /// The router's paths, then [`UNMATCHED`].
    routes: Vec<RouteMetrics>,
}

struct RouteMetrics {
    route: &'static str,
    seconds: OnceLock<Histogram>,
    /// One slot per status of [`STATUSES`].
    requests: Box<[OnceLock<Counter>]>,
}

impl HttpMetrics {
    /// Metrics for a router with these paths.
    pub fn new(routes: &[&'static str]) -> HttpMetrics {
        let metrics = Metrics::new(&BUCKETS);
        metrics.describe_counter(REQUESTS, "HTTP requests answered, by route and status.");
        metrics.describe_histogram(
            SECONDS,
            "HTTP request latency until the answer's head, by route.",
        );
        let routes = routes
            .iter()
            .chain(&[UNMATCHED])
            .map(|route| RouteMetrics {
                route,
                seconds: OnceLock::new(),
                requests: STATUSES.map(|_| OnceLock::new()).collect(),
            })
            .collect();
        metrics.describe_gauge(CONNECTIONS, "GraphQL WebSocket connections open now.");
        metrics.describe_gauge(TCP_CONNECTIONS, "TCP connections open now.");
        metrics.describe_counter(
            SHED,
            "Connections closed at --max-connections: the oldest idle one (which=idle), or \
             the new one when none was idle (which=new).",
        );
        metrics.describe_counter(
            CLOSED,
            "Connections closed by a timer: the header read timeout (cause=header_timeout: no \
             byte, or a request's head not whole in time) or the idle timeout \
             (cause=idle_timeout: no next request on a kept-alive connection).",
        );
        HttpMetrics {
            inner: Arc::new(Inner {
                closed_header: metrics.counter(CLOSED, &[("cause", "header_timeout")]),
                closed_idle: metrics.counter(CLOSED, &[("cause", "idle_timeout")]),
                connections: metrics.gauge(CONNECTIONS, &[]),
                tcp_connections: metrics.gauge(TCP_CONNECTIONS, &[]),
                shed_idle: metrics.counter(SHED, &[("which", "idle")]),
                shed_new: metrics.counter(SHED, &[("which", "new")]),
                metrics,
                routes,
            }),
        }
    }

    /// Records how many WebSocket connections are open now.
    pub(super) fn websocket_connections(&self, open: usize) {
        self.inner.connections.set(open as f64);
    }

    /// Records how many TCP connections are open now.
    pub(super) fn tcp_connections(&self, open: usize) {
        self.inner.tcp_connections.set(open as f64);
    }

    /// Counts a connection closed at the cap.
    pub(super) fn connection_shed(&self, which: Shed) {
        match which {
            Shed::Idle => self.inner.shed_idle.increment(1),
            Shed::New => self.inner.shed_new.increment(1),
        }
    }

    /// Counts a connection a timer closed.
    pub(super) fn connection_closed(&self, by: Closed) {
        match by {
            Closed::HeaderTimeout => self.inner.closed_header.increment(1),
            Closed::IdleTimeout => self.inner.closed_idle.increment(1),
        }
    }

    /// The index of the route whose path a request matched.
    fn route(&self, matched: Option<&str>) -> usize {
        let unmatched = self.inner.routes.len() - 1;
        matched
            .and_then(|path| {
                self.inner
                    .routes
                    .iter()
                    .position(|route| route.route == path)
            })
            .unwrap_or(unmatched)
    }

    fn observe(&self, route: usize, status: StatusCode, took: Duration) {
        let metrics = &self.inner.metrics;
        let entry = &self.inner.routes[route];
        entry
            .seconds
            .get_or_init(|| metrics.histogram(SECONDS, &[("route", entry.route)]))
            .record(took.as_secs_f64());
        let status = status.as_u16();
        if let Some(slot) = entry.requests.get(usize::from(status - STATUSES.start)) {
            slot.get_or_init(|| {
                let code = status.to_string();
                metrics.counter(REQUESTS, &[("route", entry.route), ("status", &code)])
            })
            .increment(1);
        }
    }

    /// The metrics in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        self.inner.metrics.render()
    }
}

/// Counts the request and its latency under the route it matched.
pub async fn record(State(metrics): State<HttpMetrics>, request: Request, next: Next) -> Response {
    let route = metrics.route(
        request
            .extensions()
            .get::<MatchedPath>()
            .map(MatchedPath::as_str),
    );
    let started = Instant::now();
    let response = next.run(request).await;
    metrics.observe(route, response.status(), started.elapsed());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_route_and_status() {
        let metrics = HttpMetrics::new(&["/graphql", "/healthz"]);
        let graphql = metrics.route(Some("/graphql"));
        metrics.observe(graphql, StatusCode::OK, Duration::from_millis(3));
        metrics.observe(graphql, StatusCode::OK, Duration::from_millis(30));
        metrics.observe(graphql, StatusCode::BAD_REQUEST, Duration::from_millis(1));
        let unmatched = metrics.route(None);
        metrics.observe(unmatched, StatusCode::NOT_FOUND, Duration::from_millis(1));
        let text = metrics.render();
        for line in [
            "tablegraph_http_requests_total{route=\"/graphql\",status=\"200\"} 2",
            "tablegraph_http_requests_total{route=\"/graphql\",status=\"400\"} 1",
            "tablegraph_http_requests_total{route=\"unmatched\",status=\"404\"} 1",
            "tablegraph_http_request_seconds_bucket{route=\"/graphql\",le=\"0.005\"} 2",
            "tablegraph_http_request_seconds_count{route=\"/graphql\"} 3",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(!text.contains("/healthz"), "{text}");
    }
}
