//! The HTTP server: routes, the tower-http layers every request passes, and shared state.
//!
//! Invariant: `/healthz` answers without touching the store; `/readyz` answers 200 only when
//! the store answers; `/metrics` reports every storage call the process made. Only `/graphql`
//! needs credentials, when any are configured. A panic in a handler answers 500 with the
//! request id and nothing of the panic's text.

mod graphql;
mod guard;
mod health;

use std::sync::Arc;

use async_graphql::dynamic::Schema;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Method, StatusCode, header};
use axum::routing::get;
use tower::ServiceBuilder;
use tower_http::compression::CompressionLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::auth::{API_KEY_HEADER, Authenticator};
use crate::config::HttpConfig;
use crate::store::Store;

/// The header a client sets to get the storage calls of its request in `extensions`.
pub const STORAGE_CALLS_HEADER: &str = "x-tablegraph-storage-calls";

/// What every handler shares; built once at start-up.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<StateInner>,
}

struct StateInner {
    schema: Schema,
    store: Store,
    auth: Option<Authenticator>,
    graphiql: Option<String>,
    expose_storage_calls: bool,
    max_storage_calls: usize,
}

impl AppState {
    pub fn new(
        schema: Schema,
        store: Store,
        auth: Option<Authenticator>,
        config: &HttpConfig,
    ) -> AppState {
        let graphiql = config
            .graphiql
            .then(|| graphiql_page(!config.auth.api_keys.is_empty()));
        AppState {
            inner: Arc::new(StateInner {
                schema,
                store,
                auth,
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

/// Request ids: a random prefix per process and a counter, unique without asking the kernel
/// for randomness on every request (a UUIDv4 per request showed in the profile).
#[derive(Clone)]
struct RequestIds {
    prefix: Arc<str>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

impl RequestIds {
    fn new() -> RequestIds {
        RequestIds {
            prefix: Arc::from(format!("{:016x}", fastrand::u64(..))),
            next: Arc::default(),
        }
    }
}

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        axum::http::HeaderValue::from_str(&format!("{}-{n:08x}", self.prefix))
            .ok()
            .map(RequestId::new)
    }
}

/// The application's routes under its layers.
pub fn router(state: AppState, config: &HttpConfig) -> Router {
    let graphql = Router::new()
        .route(
            "/graphql",
            get(graphql::graphql_get).post(graphql::graphql_post),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::authenticate,
        ));
    let router = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .merge(graphql)
        .with_state(state);
    with_layers(router, config)
}

/// Wraps `router` in the layers every request passes: request id, tracing, panic capture,
/// compression, CORS, body limit and timeout.
pub fn with_layers(router: Router, config: &HttpConfig) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(request_id.clone(), RequestIds::new()))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &axum::http::Request<_>| {
                let id = request
                    .headers()
                    .get("x-request-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
            }),
        )
        .layer(PropagateRequestIdLayer::new(request_id))
        .layer(axum::middleware::from_fn(guard::catch_panics))
        .layer(CompressionLayer::new())
        .layer(
            CorsLayer::new()
                .allow_origin(Any)
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([
                    header::CONTENT_TYPE,
                    header::AUTHORIZATION,
                    HeaderName::from_static(API_KEY_HEADER),
                    HeaderName::from_static(STORAGE_CALLS_HEADER),
                ]),
        )
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.request_timeout,
        ));
    router.layer(layers)
}
