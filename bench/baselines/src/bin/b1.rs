//! B1, the GraphQL ceiling: a static async-graphql schema (`{ hello }`) behind axum. The body is
//! deserialized as an `async_graphql::Request`, executed, and the `Response` serialized.
//!
//! Every request passes the tower-http layers tablegraph runs, written as an async-graphql user
//! writes them: a request id (UUIDv4) echoed on the answer, a tracing span at `info` that
//! carries it (logging to stderr at `info`, as tablegraph does), CORS open to every origin,
//! gzip from 1 KiB, a 30 s time limit answering 408, panic capture and a 1 MiB body limit. So
//! tablegraph's W0 against B1 compares the GraphQL work, not the middleware.

use std::time::Duration;

use async_graphql::{EmptyMutation, EmptySubscription, Object, Schema};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate as _, SizeAbove};
use tower_http::cors::CorsLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

struct Query;

#[Object]
impl Query {
    async fn hello(&self) -> String {
        "world".to_owned()
    }
}

type HelloSchema = Schema<Query, EmptyMutation, EmptySubscription>;

async fn graphql(State(schema): State<HelloSchema>, body: Bytes) -> Response {
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let response = schema.execute(request).await;
    match serde_json::to_vec(&response) {
        Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let address = tablegraph_bench_baselines::listen_address();
    let schema = Schema::new(Query, EmptyMutation, EmptySubscription);
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let id = request
                    .headers()
                    .get("x-request-id")
                    .and_then(|id| id.to_str().ok())
                    .unwrap_or_default();
                tracing::info_span!(
                    "request",
                    method = %request.method(),
                    uri = %request.uri(),
                    request_id = %id,
                )
            }),
        )
        .layer(CorsLayer::permissive())
        .layer(
            CompressionLayer::new()
                .compress_when(DefaultPredicate::new().and(SizeAbove::new(1024))),
        )
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .layer(CatchPanicLayer::new())
        .layer(RequestBodyLimitLayer::new(1024 * 1024));
    let app = Router::new()
        .route("/graphql", post(graphql))
        .with_state(schema)
        .layer(layers);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .expect("cannot bind the address");
    axum::serve(listener, app).await.expect("the server runs");
}
