//! What the server answers while it starts, before its API serves: the store is opened, the
//! table checked, stored formats upgraded (minutes, on a large table), the API built. The
//! process already listens, so that an orchestrator sees it alive.
//!
//! Invariant: `/healthz` answers 200 `starting` (the process is up: liveness, the container's
//! HEALTHCHECK); `/readyz` answers 503 with what start-up waits for; any other request 503 with
//! a GraphQL error saying so and `Retry-After`.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

/// Seconds a client is told to wait before it asks again.
const RETRY_AFTER_SECS: &str = "2";

/// The routes of a starting server; `phase` says what start-up is doing now.
pub fn starting_router(phase: watch::Receiver<String>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "starting" }))
        .route("/readyz", get(readyz))
        .fallback(unavailable)
        .with_state(phase)
}

async fn readyz(State(phase): State<watch::Receiver<String>>) -> (StatusCode, String) {
    let phase = phase.borrow().clone();
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("starting: {phase}"),
    )
}

async fn unavailable(State(phase): State<watch::Receiver<String>>) -> Response {
    let phase = phase.borrow().clone();
    let body = crate::graphql::appsync::error_body(
        &format!("the server is starting ({phase}); try again shortly"),
        "ServiceUnavailable",
    );
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_SECS),
    );
    response
}
