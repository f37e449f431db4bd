//! The HTTP server: routes, the middleware every request passes, and shared state.
//!
//! Invariant: `/healthz` answers without touching the store; `/readyz` answers 200 only when
//! the store answers; `/metrics` reports every storage call the process made. Only `/graphql`
//! needs credentials, when any are configured. Every request passes the tower-http [`layers`]:
//! request id, span, CORS, compression, time limit, panic capture, body limit.

mod graphql;
mod guard;
mod health;
mod layers;
mod metrics;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;

use crate::auth::Authenticator;
use crate::config::HttpConfig;
use crate::graphql::Api;
use crate::store::Store;

pub use layers::with_layers;
pub use metrics::HttpMetrics;

/// The header a client sets to get the storage calls of its request in `extensions`.
pub const STORAGE_CALLS_HEADER: &str = "x-tablegraph-storage-calls";

/// What every handler shares; built once at start-up.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<StateInner>,
}

struct StateInner {
    api: Api,
    store: Store,
    auth: Option<Arc<Authenticator>>,
    metrics: HttpMetrics,
    graphiql: Option<String>,
    expose_storage_calls: bool,
    max_storage_calls: usize,
}

impl AppState {
    pub fn new(
        api: Api,
        store: Store,
        auth: Option<Authenticator>,
        config: &HttpConfig,
    ) -> AppState {
        let graphiql = config
            .graphiql
            .then(|| graphiql_page(!config.auth.api_keys.is_empty()));
        AppState {
            inner: Arc::new(StateInner {
                api,
                store,
                auth: auth.map(Arc::new),
                metrics: HttpMetrics::new(&ROUTES),
                graphiql,
                expose_storage_calls: config.expose_storage_calls,
                max_storage_calls: config.graphql.max_storage_calls,
            }),
        }
    }
}

/// GraphiQL, with the headers editor open and an empty `x-api-key` to fill in when the API
/// needs one (kept in the browser's storage between visits).
fn graphiql_page(needs_api_key: bool) -> String {
    let page = async_graphql::http::GraphiQLSource::build()
        .endpoint("/graphql")
        .title("tablegraph")
        .finish();
    if !needs_api_key {
        return page;
    }
    page.replacen(
        "defaultEditorToolsVisibility: true,",
        r#"defaultEditorToolsVisibility: "headers",
          defaultHeaders: '{ "x-api-key": "" }',
          shouldPersistHeaders: true,"#,
        1,
    )
}

/// The paths the router serves.
const ROUTES: [&str; 4] = ["/graphql", "/healthz", "/readyz", "/metrics"];

/// The application's routes under the [`layers`].
pub fn router(state: AppState, config: &HttpConfig) -> Router {
    let [graphql_path, healthz, readyz, metrics] = ROUTES;
    let mut graphql = Router::new().route(
        graphql_path,
        get(graphql::graphql_get).post(graphql::graphql_post),
    );
    // Without credentials to check, the handler's caller is anonymous and nothing runs here.
    if let Some(auth) = &state.inner.auth {
        graphql = graphql.route_layer(axum::middleware::from_fn_with_state(
            auth.clone(),
            guard::authenticate,
        ));
    }
    let http_metrics = state.inner.metrics.clone();
    let router = Router::new()
        .route(healthz, get(health::healthz))
        .route(readyz, get(health::readyz))
        .route(metrics, get(health::metrics))
        .merge(graphql)
        .with_state(state);
    with_layers(router, config, &http_metrics)
}
