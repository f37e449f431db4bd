//! Credentials before `/graphql`, when the server is configured to need any.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::answer::{Answer, is_over_limit};
use crate::auth::{API_KEY_HEADER, Authenticator, RequestContext, SignedRequest};

/// What the credentials layer attaches to a request it let through unchecked: a GET that asks
/// to run nothing. It is no [`Caller`](crate::auth::Caller), so nothing can run with it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unchecked;

/// Lets a request through to `/graphql` with its [`Caller`](crate::auth::Caller) attached, or
/// answers 401.
///
/// A GET with neither a `query` nor `extensions` (where a persisted query's hash stands for a
/// query) runs nothing: it is the GraphiQL page, a WebSocket's upgrade (whose credentials come
/// over the socket), an SSE stream opened by its reservation's token, or a 400. It passes
/// without credentials, since a browser cannot send headers when it opens a page, marked
/// [`Unchecked`] rather than with a caller.
pub async fn authenticate(
    State(auth): State<Arc<Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    // Decoded as the handler decodes them: `%71uery=` is a query too.
    let runs_nothing = request.method() == axum::http::Method::GET
        && axum::extract::Query::<HashMap<String, String>>::try_from_uri(request.uri()).is_ok_and(
            |params| !params.contains_key("query") && !params.contains_key("extensions"),
        );
    if runs_nothing {
        request.extensions_mut().insert(Unchecked);
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
    // A SigV4 signature covers the body, and a Lambda authorizer is told what the request
    // asks: the body is read for them (within the body limit) and handed on unchanged.
    let context = if auth.reads_request(authorization.as_deref()) {
        let (parts, body) = request.into_parts();
        let body = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(body) => body,
            Err(error) if is_over_limit(&error) => {
                return axum::response::IntoResponse::into_response(StatusCode::PAYLOAD_TOO_LARGE);
            }
            Err(_) => {
                return axum::response::IntoResponse::into_response(StatusCode::BAD_REQUEST);
            }
        };
        let context = request_context(&parts, &body);
        request = Request::from_parts(parts, axum::body::Body::from(body));
        context
    } else {
        RequestContext::default()
    };
    match auth
        .authenticate(authorization.as_deref(), api_key.as_deref(), &context)
        .await
    {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(reason) => {
            auth.refused(crate::auth::Transport::Http, &reason);
            let mut response = unauthorized(request.headers(), &reason.to_string());
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

/// The 401 of a request refused for its credentials, as AppSync answers it.
fn unauthorized(headers: &axum::http::HeaderMap, message: &str) -> Response {
    let body = crate::graphql::appsync::error_body(message, "UnauthorizedException");
    let mut response = Answer::for_request(headers).json(StatusCode::UNAUTHORIZED, &body);
    // As AppSync names it: AWS clients (aws-amplify) read the error's name here.
    response.headers_mut().insert(
        "x-amzn-errortype",
        HeaderValue::from_static("UnauthorizedException"),
    );
    response
}

/// The answer to a request that would run something but came through [`Unchecked`].
pub(super) fn needs_credentials(headers: &axum::http::HeaderMap) -> Response {
    unauthorized(headers, &crate::auth::Unauthorized::Missing.to_string())
}

/// What a request asks, for the Lambda authorizer: its id, query, operation name and
/// variables (from the JSON body of a POST, or the parameters of a GET) and its headers; and
/// the request as signed, for IAM.
fn request_context(parts: &axum::http::request::Parts, body: &axum::body::Bytes) -> RequestContext {
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Asked {
        #[serde(default)]
        query: String,
        operation_name: Option<String>,
        #[serde(default)]
        variables: serde_json::Value,
    }
    let asked = if parts.method == axum::http::Method::GET {
        let params = axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map(|params| params.0)
            .unwrap_or_default();
        Asked {
            query: params.get("query").cloned().unwrap_or_default(),
            operation_name: params.get("operationName").cloned(),
            variables: params
                .get("variables")
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_default(),
        }
    } else {
        serde_json::from_slice(body).unwrap_or_default()
    };
    let headers = parts
        .headers
        .iter()
        .filter_map(|(name, value)| {
            let value = value.to_str().ok()?;
            Some((name.as_str().to_owned(), serde_json::Value::from(value)))
        })
        .collect();
    RequestContext {
        request_id: parts
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        query: asked.query,
        operation_name: asked.operation_name,
        variables: asked.variables,
        headers,
        signed: SignedRequest {
            method: parts.method.as_str().to_owned(),
            path_and_query: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned()),
            authority: parts.uri.authority().map(|a| a.as_str().to_owned()),
            headers: parts
                .headers
                .iter()
                .filter_map(|(name, value)| {
                    Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                })
                .collect(),
            body: body.clone(),
        },
    }
}
