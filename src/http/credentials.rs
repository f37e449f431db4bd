//! Credentials before `/graphql`, when the server is configured to need any.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::graphql::Answer;
use crate::auth::{API_KEY_HEADER, Authenticator, Caller};

/// Lets a request through to `/graphql` with its [`Caller`] attached, or answers 401.
///
/// A GET without a `query` runs nothing (it is the GraphiQL page, or a 400), so it passes
/// without credentials: a browser cannot send headers when it opens a page.
pub async fn authenticate(
    State(auth): State<Arc<Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    // Decoded as the handler decodes them: `%71uery=` is a query too.
    let runs_nothing = request.method() == axum::http::Method::GET
        && axum::extract::Query::<HashMap<String, String>>::try_from_uri(request.uri())
            .is_ok_and(|params| !params.contains_key("query"));
    if runs_nothing {
        request.extensions_mut().insert(Caller::Anonymous);
        return next.run(request).await;
    }
    let headers = request.headers();
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (authorization, api_key) = (value(header::AUTHORIZATION.as_str()), value(API_KEY_HEADER));
    match auth
        .authenticate(authorization.as_deref(), api_key.as_deref())
        .await
    {
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
            let mut response =
                Answer::for_request(request.headers()).json(StatusCode::UNAUTHORIZED, &body);
            // Refused before its body was read: hyper closes the connection rather than read
            // the body, so the client is told not to send another request on it.
            let has_body = request
                .headers()
                .get(header::CONTENT_LENGTH)
                .is_some_and(|length| length.as_bytes() != b"0")
                || request.headers().contains_key(header::TRANSFER_ENCODING);
            if has_body {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
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
