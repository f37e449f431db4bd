//! Middleware that guards handlers: credentials before `/graphql`, and a panic turned into a
//! 500 that names the request id and nothing else.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::FutureExt as _;

use super::AppState;
use super::graphql::{json_response, response_media_type};
use crate::auth::{API_KEY_HEADER, Caller};

/// Lets a request through to `/graphql` with its [`Caller`] attached, or answers 401.
///
/// A GET without a `query` runs nothing (it is the GraphiQL page, or a 400), so it passes
/// without credentials: a browser cannot send headers when it opens a page.
pub async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(auth) = &state.inner.auth else {
        request.extensions_mut().insert(Caller::Anonymous);
        return next.run(request).await;
    };
    // Decoded as the handler decodes them: `%71uery=` is a query too.
    let runs_nothing = request.method() == axum::http::Method::GET
        && axum::extract::Query::<HashMap<String, String>>::try_from_uri(request.uri())
            .is_ok_and(|params| !params.contains_key("query"));
    if runs_nothing {
        request.extensions_mut().insert(Caller::Anonymous);
        return next.run(request).await;
    }
    let headers = request.headers();
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match auth.authenticate(value(header::AUTHORIZATION.as_str()), value(API_KEY_HEADER)) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(reason) => {
            tracing::info!(%reason, "refused a request without valid credentials");
            let body = serde_json::json!({ "errors": [{
                "message": reason.to_string(),
                "extensions": { "errorType": "UnauthorizedException" },
            }] });
            let mut response = json_response(
                StatusCode::UNAUTHORIZED,
                response_media_type(request.headers()),
                &body,
            );
            if auth.accepts_tokens() {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"tablegraph\""),
                );
            }
            response
        }
    }
}

/// Answers 500 with the request id when the handler panics. The panic itself is logged by the
/// panic hook (see `telemetry`), inside the request's span, so once and with the request id.
pub async fn catch_panics(request: Request, next: Next) -> Response {
    let request_id = request_id(request.headers());
    let media = response_media_type(request.headers());
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(_) => {
            tracing::error!(request_id = %request_id, "the request panicked; answered 500");
            let body = serde_json::json!({ "errors": [{
                "message": format!("internal error; the operator can find it in the logs under request id {request_id}"),
                "extensions": { "errorType": "InternalError", "requestId": request_id },
            }] });
            json_response(StatusCode::INTERNAL_SERVER_ERROR, media, &body)
        }
    }
}

fn request_id(headers: &HeaderMap) -> String {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
