//! GraphQL over HTTP: POST with a JSON body, GET with query parameters (never a mutation), and
//! GraphiQL for browsers. A request that did not parse or validate answers 400 without `data`
//! when the client accepts `application/graphql-response+json`; anything that ran answers 200
//! with `data`.
//!
//! A POST body is read into an `async_graphql::Request` by async-graphql's own
//! [`receive_body`](async_graphql::http::receive_body), the parser async-graphql-axum's
//! `GraphQLRequest` extractor runs. It reads a body without `query` as an empty query (a
//! GraphQL error, 200 to a JSON client) where the spec wants the 400 of a malformed request, so
//! the handler looks for the member when the query is empty.
//!
//! # Why not async-graphql-axum
//!
//! Each part of it breaks a contract this server keeps (`conformance/run.sh`,
//! `tests/api/http.rs`):
//!
//! - its extractor parses any content type (`text/plain` as JSON, `multipart/form-data` as an
//!   upload), which a browser may post cross-origin without a preflight; we answer 415 to
//!   anything but `application/json` before reading the body;
//! - it reads the body through a stream whose errors it turns into text, so a streamed body
//!   over the limit answers 400 instead of 413, and its rejections are plain-text bodies;
//! - for GET it calls `parse_query_string`, which reads an `operation_name` parameter instead
//!   of `operationName`, so a GET naming one of several operations fails;
//! - its `GraphQLResponse` always answers `application/graphql-response+json` with 200, while
//!   a client that accepts only `application/json` must get that type, and a request error
//!   must answer 400 in the other.

use async_graphql::ParseRequestError;
use async_graphql::parser::types::OperationType;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::answer::{Answer, GRAPHQL_RESPONSE_JSON, JSON, accepts, is_over_limit, request_error};
use super::state::{AppState, STORAGE_CALLS_HEADER, request_headers};
use crate::auth::Caller;
use crate::graphql::Admitted;

/// The parameters of a GET request.
#[derive(Debug, Deserialize)]
pub struct GetParams {
    query: Option<String>,
    #[serde(rename = "operationName")]
    operation_name: Option<String>,
    variables: Option<String>,
    extensions: Option<String>,
    /// A graphql-sse reservation's token, for a browser's `EventSource` (it cannot send the
    /// header).
    token: Option<String>,
}

pub async fn graphql_get(
    State(state): State<AppState>,
    Query(params): Query<GetParams>,
    request: Request,
) -> Response {
    let (mut parts, _) = request.into_parts();
    if super::websocket::is_upgrade(&parts.headers) {
        // AppSync's clients bring their credentials with the upgrade, in its own way.
        if super::realtime::carries_credentials(&parts) {
            return super::realtime::upgrade(state, parts).await;
        }
        // Credentials come over the socket (`connection_init`), not with the upgrade.
        return super::websocket::upgrade(state, parts).await;
    }
    let headers = parts.headers;
    if accepts(&headers, "text/event-stream")
        && let Some(token) = super::sse::token_of(&headers, None).or(params.token)
    {
        return super::sse::open(&state, &token);
    }
    let sent_query = params.query.is_some();
    let mut request = async_graphql::Request::new(params.query.unwrap_or_default());
    request.operation_name = params.operation_name;
    for (name, text) in [
        ("variables", &params.variables),
        ("extensions", &params.extensions),
    ] {
        let Some(text) = text else { continue };
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) if name == "variables" => {
                request.variables = async_graphql::Variables::from_json(value);
            }
            Ok(value) => {
                if let Ok(extensions) = serde_json::from_value(value) {
                    request.extensions = extensions;
                }
            }
            Err(_) => {
                return request_error(
                    &headers,
                    StatusCode::BAD_REQUEST,
                    &format!("{name} is not JSON"),
                );
            }
        }
    }
    // A persisted query's hash may stand for the query (Apollo's APQ: a URL a CDN caches).
    if !sent_query && !request.extensions.contains_key("persistedQuery") {
        if let (Some(page), true) = (&state.inner.graphiql, accepts(&headers, "text/html")) {
            return (
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                page.clone(),
            )
                .into_response();
        }
        return request_error(&headers, StatusCode::BAD_REQUEST, "missing query parameter");
    }
    // Anything that runs needs the caller the credentials layer checked.
    let caller = match caller_of(&state, &mut parts.extensions) {
        Ok(caller) => caller,
        Err(refusal) => return refusal(&headers),
    };
    let mut admitted = match state.inner.api.admit(request) {
        Ok(admitted) => admitted,
        Err(error) => return refused(&state, &headers, &caller, error),
    };
    if admitted.operation_type() == Some(OperationType::Mutation) {
        let mut response = request_error(
            &headers,
            StatusCode::METHOD_NOT_ALLOWED,
            "mutations must be sent with POST",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    execute(&state, &headers, admitted, caller).await
}

pub async fn graphql_post(State(state): State<AppState>, request: Request) -> Response {
    // Taken apart rather than extracted, so that neither the headers nor the caller is copied.
    let (mut parts, body) = request.into_parts();
    let headers = parts.headers;
    let caller = match caller_of(&state, &mut parts.extensions) {
        Ok(caller) => caller,
        Err(refusal) => return refusal(&headers),
    };
    // graphql-sse's single connection mode: the request carries its reservation's token.
    let token = super::sse::token_of(&headers, parts.uri.query());
    if let Some(token) = &token
        && accepts(&headers, "text/event-stream")
    {
        return super::sse::open(&state, token);
    }
    // Matched as a media type: any case, parameters allowed, no other subtype.
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|media| media.essence_str() == JSON);
    if !json {
        return request_error(
            &headers,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the request as application/json",
        );
    }
    // The body limit is the layer's (see `layers`); a body that declared no length meets it here.
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(error) if is_over_limit(&error) => {
            return StatusCode::PAYLOAD_TOO_LARGE.into_response();
        }
        Err(_) => {
            return request_error(
                &headers,
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
    };
    let request = match async_graphql::http::receive_body(
        Some(JSON),
        &body[..],
        async_graphql::http::MultipartOptions::default(),
    )
    .await
    {
        Ok(request)
            if request.query.is_empty()
                && !has_query_member(&body)
                && !request.extensions.contains_key("persistedQuery") =>
        {
            return request_error(&headers, StatusCode::BAD_REQUEST, "missing query");
        }
        Ok(request) => request,
        Err(error) => {
            return request_error(&headers, StatusCode::BAD_REQUEST, refusal(&error));
        }
    };
    // Over SSE, the transport admits the request: a refusal is the operation's `next`.
    if let Some(token) = token {
        return super::sse::run(&state, caller, &token, request);
    }
    if accepts(&headers, "text/event-stream") {
        return super::sse::answer(&state, caller, request);
    }
    match state.inner.api.admit(request) {
        Ok(admitted) => execute(&state, &headers, admitted, caller).await,
        Err(error) => refused(&state, &headers, &caller, error),
    }
}

/// `PUT /graphql`: reserves a graphql-sse stream (single connection mode).
pub async fn graphql_put(State(state): State<AppState>, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    let caller = match caller_of(&state, &mut parts.extensions) {
        Ok(caller) => caller,
        Err(refusal) => return refusal(&parts.headers),
    };
    state.inner.sse.reserve(&caller)
}

/// `DELETE /graphql?operationId=`: stops an operation of a graphql-sse stream.
pub async fn graphql_delete(State(state): State<AppState>, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    let caller = match caller_of(&state, &mut parts.extensions) {
        Ok(caller) => caller,
        Err(refusal) => return refusal(&parts.headers),
    };
    let query = parts.uri.query();
    let Some(token) = super::sse::token_of(&parts.headers, query) else {
        return request_error(
            &parts.headers,
            StatusCode::NOT_FOUND,
            "Stream not found: send the reservation's token in x-graphql-event-stream-token",
        );
    };
    let id = super::sse::query_parameter(query, "operationId");
    super::sse::stop(&state, &caller, &token, id.as_deref())
}

/// Whether a JSON body has a `query` member. async-graphql reads a missing one as `""`, but the
/// two differ: without `query` the body is not a GraphQL request (400), while `""` is a
/// document that does not parse (a GraphQL error, 200 to a JSON client). Only asked when the
/// query is empty.
fn has_query_member(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Members {
        query: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Members>(body).is_ok_and(|members| members.query.is_some())
}

/// What a client is told about a body that is not a GraphQL request.
fn refusal(error: &ParseRequestError) -> &'static str {
    match error {
        ParseRequestError::UnsupportedBatch => "batched requests are not supported",
        ParseRequestError::InvalidRequest(error)
            if error
                .downcast_ref::<serde_json::Error>()
                .is_some_and(is_too_deep) =>
        {
            "the body nests arrays and objects deeper than 128 levels, the most a JSON body may"
        }
        ParseRequestError::InvalidRequest(error)
            if error
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.is_syntax() || e.is_eof()) =>
        {
            "the body is not valid JSON"
        }
        _ => {
            "the body is not a GraphQL request: a JSON object with a string `query`, and \
             optionally `operationName` (a string), `variables` and `extensions` (objects)"
        }
    }
}

/// Whether serde_json stopped at its nesting limit (128), which it reports as a syntax error.
fn is_too_deep(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

/// The caller the credentials layer attached; anonymous only when the server checks no
/// credentials at all. Otherwise how to refuse: a request the layer let through unchecked
/// (a GET that asked to run nothing) is told it needs credentials, and one that reached the
/// handler without passing the layer at all is a server fault.
fn caller_of(
    state: &AppState,
    extensions: &mut axum::http::Extensions,
) -> Result<Caller, fn(&HeaderMap) -> Response> {
    match extensions.remove::<Caller>() {
        Some(caller) => Ok(caller),
        None if state.inner.auth.is_none() => Ok(Caller::Anonymous),
        None if extensions.get::<super::credentials::Unchecked>().is_some() => {
            Err(super::credentials::needs_credentials)
        }
        None => Err(unguarded),
    }
}

/// A request that reached the handler without passing the credentials layer: a route the
/// layer does not cover. Nothing runs.
fn unguarded(headers: &HeaderMap) -> Response {
    tracing::error!("a /graphql request reached its handler without a credentials check");
    request_error(headers, StatusCode::INTERNAL_SERVER_ERROR, "internal error")
}

/// The answer to `caller`'s request the admission refused: a request error, private to a
/// caller with credentials as any answer is.
fn refused(
    state: &AppState,
    headers: &HeaderMap,
    caller: &Caller,
    error: async_graphql::ServerError,
) -> Response {
    let response = state
        .inner
        .transport
        .refused(error, reports_storage_calls(state, headers));
    answer(
        state,
        headers,
        response,
        !matches!(caller, Caller::Anonymous),
    )
}

async fn execute(
    state: &AppState,
    headers: &HeaderMap,
    admitted: Admitted,
    caller: Caller,
) -> Response {
    // An answer to a caller with credentials is that caller's alone: no shared cache keeps it.
    let private = !matches!(caller, Caller::Anonymous);
    // The headers are a function's `request.headers`: copied only where a function may ask.
    let function_headers = state
        .inner
        .api
        .calls_functions()
        .then(|| request_headers(headers));
    let transport = &state.inner.transport;
    let (admitted, reads) = transport.prepare(admitted, caller, function_headers);
    let response = transport.api().execute(admitted).await;
    let response = reads.tell(response, reports_storage_calls(state, headers));
    answer(state, headers, response, private)
}

/// Whether the client asked for its request's storage calls, and the server tells them.
fn reports_storage_calls(state: &AppState, headers: &HeaderMap) -> bool {
    state.inner.expose_storage_calls && headers.contains_key(STORAGE_CALLS_HEADER)
}

/// `response` in the client's media type: `400` for a request error to a client that accepts
/// `application/graphql-response+json`, AppSync's error fields in Amplify's shape.
fn answer(
    state: &AppState,
    headers: &HeaderMap,
    response: async_graphql::Response,
    private: bool,
) -> Response {
    // A request error (the document did not parse, validate or pass the limits) has no data
    // and no paths; an error raised while the request ran always has a path (see
    // `graphql::field_errors`) and comes with `data`, even `"data": null`.
    let request_failed = response.data == async_graphql::Value::Null
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty());
    let answer = Answer::for_request(headers);
    let status = if request_failed && answer.media == GRAPHQL_RESPONSE_JSON {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let appsync = state.inner.api.amplify_shape() && !response.errors.is_empty();
    if !request_failed && !appsync {
        return with_cache_control(answer.json(status, &response), private);
    }
    let mut body = serde_json::to_value(&response).unwrap_or_default();
    if appsync {
        crate::graphql::appsync::with_error_fields(&mut body);
    }
    // Nothing ran: a request error has no `data` entry at all, not `"data": null`.
    if let (Some(fields), true) = (body.as_object_mut(), request_failed) {
        fields.remove("data");
    }
    with_cache_control(answer.json(status, &body), private)
}

/// `response`, marked `Cache-Control: private, no-store` when it answers a caller with
/// credentials.
fn with_cache_control(mut response: Response, private: bool) -> Response {
    if private {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-store"),
        );
    }
    response
}
