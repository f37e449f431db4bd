//! The HTTP server: the accept loop that bounds connections (`serve`), routes over the shared
//! state (`state`), and the layers every request passes.
//!
//! Invariant: `/healthz` answers without touching the store; `/readyz` answers 200 only when
//! the store answers; `/metrics` reports every storage call the process made. Only `/graphql`
//! needs credentials, when any are configured. Every request passes the tower-http [`layers`]:
//! request id, span, CORS, compression, time limit, panic capture, body limit. `/graphql` also
//! speaks GraphQL over WebSocket (`websocket`) and over Server-Sent Events in both of
//! graphql-sse's modes (`sse`: a `PUT` reserves a stream, a `DELETE` stops one of its
//! operations), and serves GraphiQL from the binary (`graphiql`). `/graphql/realtime` (and
//! `/graphql`, for a socket carrying AppSync's credentials) speaks AppSync's real-time
//! protocol (`realtime`).

mod answer;
mod credentials;
mod graphiql;
mod graphql;
mod health;
mod layers;
mod metrics;
mod pending;
mod realtime;
mod serve;
mod sse;
mod sse_reservations;
mod starting;
mod state;
mod tls;
mod websocket;

use axum::Router;
use axum::routing::get;

use crate::config::HttpConfig;

use state::{REALTIME, ROUTES};

pub use layers::with_layers;
pub use metrics::HttpMetrics;
pub use serve::{connection_cap, serve};
pub use starting::starting_router;
pub use state::{AppState, STORAGE_CALLS_HEADER};
pub use tls::{Tls, TlsError, WATCH_INTERVAL};

/// The application's routes under the [`layers`].
pub fn router(state: AppState, config: &HttpConfig) -> Router {
    let [
        graphql_path,
        healthz,
        readyz,
        metrics,
        root,
        graphiql_assets,
    ] = ROUTES;
    let mut graphql = Router::new().route(
        graphql_path,
        get(graphql::graphql_get)
            .post(graphql::graphql_post)
            .put(graphql::graphql_put)
            .delete(graphql::graphql_delete),
    );
    // Without credentials to check, the handler's caller is anonymous and nothing runs here.
    if let Some(auth) = &state.inner.auth {
        graphql = graphql.route_layer(axum::middleware::from_fn_with_state(
            auth.clone(),
            credentials::authenticate,
        ));
    }
    let http_metrics = state.inner.metrics.clone();
    let router = Router::new()
        .route(healthz, get(health::healthz))
        .route(readyz, get(health::readyz))
        .route(metrics, get(health::metrics))
        .route(root, get(graphiql::root))
        // AppSync's real-time endpoint: the socket checks its own credentials.
        .route(REALTIME, get(realtime::realtime))
        .route(graphiql_assets, get(graphiql::asset))
        .merge(graphql)
        .with_state(state);
    with_layers(router, config, &http_metrics)
}
