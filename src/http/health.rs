//! Liveness, readiness and metrics.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::state::AppState;

/// HTTP requests and storage calls, counts and latency histograms, the change stream's events
/// and the Lambda authorizer's failures, in Prometheus' text format.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut text = state.inner.metrics.render();
    text.push_str(&state.inner.store.metrics().render());
    if let Some(cache) = state.inner.store.cache() {
        text.push_str(&cache.render_metrics());
    }
    text.push_str(&state.inner.events.render_metrics());
    if let Some(auth) = &state.inner.auth {
        text.push_str(&auth.render_metrics());
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// The process is up and serving HTTP.
pub async fn healthz() -> &'static str {
    "ok"
}

/// The store answers and the table is ACTIVE: the replica can take traffic.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    match state.inner.store.describe_table().await {
        Ok(Some(status)) if status.active => (StatusCode::OK, "ready"),
        Ok(_) => (StatusCode::SERVICE_UNAVAILABLE, "table not ready"),
        Err(error) => {
            tracing::warn!(%error, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "store unreachable")
        }
    }
}
