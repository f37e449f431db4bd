//! What every handler shares, built once at start-up: the API, the store, credentials, the
//! request metrics and the GraphiQL page.

use std::sync::Arc;

use crate::auth::Authenticator;
use crate::changes::EventHub;
use crate::config::HttpConfig;
use crate::engine::ScopeSource;
use crate::graphql::Api;
use crate::graphql::Transport;
use crate::store::Store;

use super::metrics::HttpMetrics;

/// The header a client sets to get the storage calls of its request in `extensions`.
pub const STORAGE_CALLS_HEADER: &str = "x-tablegraph-storage-calls";

/// What every handler shares; built once at start-up.
#[derive(Clone)]
pub struct AppState {
    pub(super) inner: Arc<StateInner>,
}

pub(super) struct StateInner {
    pub(super) api: Arc<Api>,
    pub(super) store: Store,
    /// What subscriptions read; only its metrics are needed here.
    pub(super) events: EventHub,
    pub(super) auth: Option<Arc<Authenticator>>,
    pub(super) metrics: HttpMetrics,
    pub(super) graphiql: Option<String>,
    pub(super) expose_storage_calls: bool,
    /// The API as each transport runs it, with each request in a scope of its own.
    pub(super) transport: Transport,
    pub(super) max_subscriptions_per_connection: usize,
    /// Turns `true` when the server shuts down: WebSocket connections close themselves.
    pub(super) closing: tokio::sync::watch::Sender<bool>,
    /// WebSocket connections open now.
    pub(super) sockets: tokio::sync::watch::Sender<usize>,
    /// graphql-sse's reservations (single connection mode).
    pub(super) sse: super::sse_reservations::Reservations,
    /// WebSockets waiting for `connection_init`.
    pub(super) pending: Arc<super::pending::PendingSockets>,
    /// The largest WebSocket message a client may send: the body limit of HTTP requests.
    pub(super) max_message_bytes: usize,
}

impl AppState {
    pub fn new(
        api: Api,
        scopes: ScopeSource,
        store: Store,
        events: EventHub,
        auth: Option<Authenticator>,
        config: &HttpConfig,
    ) -> AppState {
        let graphiql = config
            .graphiql
            .then(|| super::graphiql::page(!config.auth.api_keys.is_empty(), api.example_query()));
        let api = Arc::new(api);
        AppState {
            inner: Arc::new(StateInner {
                transport: Transport::new(api.clone(), scopes),
                api,
                events,
                auth: auth.map(Arc::new),
                metrics: HttpMetrics::new(&ROUTES),
                graphiql,
                expose_storage_calls: config.expose_storage_calls,
                store,
                max_subscriptions_per_connection: config.max_subscriptions_per_connection,
                closing: tokio::sync::watch::Sender::new(false),
                sockets: tokio::sync::watch::Sender::new(0),
                sse: super::sse_reservations::Reservations::new(
                    config.sse_reservation_ttl,
                    config.graphql.max_subscriptions,
                ),
                pending: super::pending::PendingSockets::new(config.max_pending_sockets),
                max_message_bytes: config.max_body_bytes,
            }),
        }
    }
}

impl AppState {
    /// The metrics `/metrics` renders, for the accept loop's connection counts.
    pub fn http_metrics(&self) -> HttpMetrics {
        self.inner.metrics.clone()
    }

    /// Closes every WebSocket connection (`1012`, service restart); the server is shutting down.
    pub fn close_connections(&self) {
        self.inner.closing.send_replace(true);
    }

    /// The API as the WebSocket and SSE transports drive it.
    pub(super) fn transport(&self) -> Transport {
        self.inner.transport.clone()
    }

    /// Resolves once no WebSocket connection is open.
    pub async fn connections_closed(&self) {
        let mut sockets = self.inner.sockets.subscribe();
        // The sender lives as long as `self`, so the wait cannot fail.
        let _ = sockets.wait_for(|open| *open == 0).await;
    }
}

/// AppSync's real-time endpoint: the GraphQL endpoint's path and `/realtime`, where
/// `aws-amplify` connects its subscriptions.
pub(super) const REALTIME: &str = "/graphql/realtime";

/// The paths the router serves.
pub(super) const ROUTES: [&str; 6] = [
    "/graphql",
    "/healthz",
    "/readyz",
    "/metrics",
    "/",
    super::graphiql::ASSETS_ROUTE,
];

/// The request's headers as a function's event passes them on (`request.headers`): each name
/// in lower case, with its value as text.
pub(super) fn request_headers(headers: &axum::http::HeaderMap) -> crate::graphql::RequestHeaders {
    crate::graphql::RequestHeaders(
        headers
            .iter()
            .filter_map(|(name, value)| {
                let value = value.to_str().ok()?;
                Some((name.as_str().to_owned(), serde_json::Value::from(value)))
            })
            .collect(),
    )
}
