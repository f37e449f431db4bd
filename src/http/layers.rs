//! The layers every request passes, from tower-http: its request id (the client's, or one made
//! here) echoed on the answer, a tracing span that carries it, CORS, gzip, the time limit,
//! panic capture and the body limit; and two of ours: the request's count and latency in
//! `/metrics` (`super::metrics`), and [`explain_failures`], which gives the answers the layers
//! make themselves (408, 413, 500) the GraphQL error body every other failure has.
//!
//! Invariants: every response carries `x-request-id` and `access-control-allow-origin: *`;
//! every `OPTIONS` request is answered as a CORS preflight; a request over the time limit
//! answers 408, a body over the limit 413 and a panic 500, each with a GraphQL error naming
//! the request id and nothing of what was running.
//!
//! # Why the standard layers
//!
//! For a while one hand-written middleware did all of this: the profile (`bench/PROFILE.md`)
//! had these layers at 8 of W0's 28 µs of CPU per request. They are what every axum and
//! async-graphql server runs, maintained and reviewed by others, so they are back, and the B1
//! baseline of the benchmark carries the same stack: W0 against B1 compares the GraphQL work,
//! not the middleware. tower-http's own answers have no body (or a plain-text one), so
//! [`explain_failures`] stays: clients get a GraphQL error from every failure.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate as _, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};
use tower_http::cors::{Any as AnyOrigin, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;

use super::answer::Answer;
use super::metrics::HttpMetrics;
use super::sse::SSE_TOKEN_HEADER;
use super::state::STORAGE_CALLS_HEADER;
use crate::auth::API_KEY_HEADER;
use crate::config::HttpConfig;

const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Answers smaller than this are sent as they are: compressing them saves less than it costs.
const COMPRESS_FROM_BYTES: u16 = 1024;

/// Wraps `router` in the layers every request passes, outermost first; each request is counted
/// in `metrics`.
pub fn with_layers(router: Router, config: &HttpConfig, metrics: &HttpMetrics) -> Router {
    let layers = ServiceBuilder::new()
        .layer(axum::middleware::map_request(drop_unusable_request_id))
        .layer(SetRequestIdLayer::new(REQUEST_ID_HEADER, RequestIds::new()))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID_HEADER))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_request(())
                .on_response(log_answer)
                .on_body_chunk(())
                .on_eos(())
                // A failure is logged where it is answered: below, or by the handler.
                .on_failure(()),
        )
        .layer(axum::middleware::from_fn_with_state(
            metrics.clone(),
            super::metrics::record,
        ))
        .layer(cors(&config.cors_allow_headers))
        .layer(
            CompressionLayer::new()
                .quality(CompressionLevel::Fastest)
                .compress_when(DefaultPredicate::new().and(SizeAbove::new(COMPRESS_FROM_BYTES))),
        )
        .layer(axum::middleware::from_fn_with_state(
            config.request_timeout,
            explain_failures,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.request_timeout,
        ))
        .layer(CatchPanicLayer::custom(panic_answer))
        .layer(RequestBodyLimitLayer::new(config.max_body_bytes));
    router.layer(layers)
}

/// The longest `x-request-id` a client may choose; a longer one, or one with other than
/// visible ASCII, is replaced by one of ours rather than echoed and logged.
const MAX_REQUEST_ID_BYTES: usize = 128;

async fn drop_unusable_request_id(
    mut request: axum::http::Request<axum::body::Body>,
) -> axum::http::Request<axum::body::Body> {
    let usable = |id: &HeaderValue| {
        id.len() <= MAX_REQUEST_ID_BYTES && id.as_bytes().iter().all(u8::is_ascii_graphic)
    };
    let headers = request.headers_mut();
    if !headers.get_all(REQUEST_ID_HEADER).iter().all(usable) {
        headers.remove(REQUEST_ID_HEADER);
    }
    request
}

/// Request ids: a random prefix per process and a counter, unique without asking the kernel
/// for randomness on every request (a UUIDv4 per request showed in the profile).
#[derive(Clone)]
struct RequestIds {
    prefix: Arc<str>,
    next: Arc<AtomicU64>,
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
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = HeaderValue::from_str(&format!("{}-{n:08x}", self.prefix))
            .expect("hex digits and a dash are a valid header value");
        Some(RequestId::new(id))
    }
}

fn request_id(headers: &axum::http::HeaderMap) -> &str {
    headers
        .get(REQUEST_ID_HEADER)
        .and_then(|id| id.to_str().ok())
        .unwrap_or_default()
}

/// The span every event of a request is logged in, and the request's span in exported traces.
/// Its trace fields are recorded only while traces are exported (see `telemetry`); the
/// GraphQL layer names the operation.
fn request_span(request: &Request) -> Span {
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        uri = %request.uri(),
        request_id = %request_id(request.headers()),
        otel.name = tracing::field::Empty,
        otel.kind = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        http.request.method = tracing::field::Empty,
        url.path = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        graphql.operation.type = tracing::field::Empty,
        graphql.operation.name = tracing::field::Empty,
    );
    if crate::telemetry::traces_on() && !span.is_disabled() {
        let method = request.method().as_str();
        let path = request.uri().path();
        span.record("otel.name", format!("{method} {path}"));
        span.record("otel.kind", "server");
        span.record("http.request.method", method);
        span.record("url.path", path);
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        crate::telemetry::follow_remote_parent(&span, header("traceparent"), header("tracestate"));
    }
    span
}

/// The access log, at debug level (`RUST_LOG=tablegraph=debug`); the status goes into the
/// request's span when traces are exported.
fn log_answer<B>(response: &axum::http::Response<B>, took: Duration, span: &Span) {
    if crate::telemetry::traces_on() {
        let status = response.status();
        span.record("http.response.status_code", status.as_u16());
        if status.is_server_error() {
            span.record("otel.status_code", "error");
        }
    }
    tracing::debug!(
        parent: span,
        status = response.status().as_u16(),
        elapsed_us = took.as_micros() as u64,
        "answered"
    );
}

/// The request headers a browser's script may send: the API's own, and those the clients in
/// use send on every request: W3C trace context, a request id, Apollo Client's name and
/// version, Amplify's user agent, date and session token, and graphql-sse's stream token.
pub const CORS_ALLOW_HEADERS: [&str; 14] = [
    "content-type",
    "authorization",
    API_KEY_HEADER,
    STORAGE_CALLS_HEADER,
    "traceparent",
    "tracestate",
    "x-request-id",
    "apollographql-client-name",
    "apollographql-client-version",
    "x-amz-user-agent",
    "x-amz-date",
    "x-amz-security-token",
    SSE_TOKEN_HEADER,
    "accept",
];

/// Any origin may `GET`, `POST`, `PUT` and `DELETE` (graphql-sse's reservations) with the
/// headers of [`CORS_ALLOW_HEADERS`] and those configured (`extra`), and read `x-request-id`
/// and `x-amzn-errortype` (AppSync's name of a refusal, which aws-amplify reads) on the
/// answer; browsers may cache that for 10 minutes. Every `OPTIONS` request gets this
/// answer, whatever it asks.
fn cors(extra: &[String]) -> CorsLayer {
    let headers: Vec<HeaderName> = CORS_ALLOW_HEADERS
        .iter()
        .map(|name| HeaderName::from_static(name))
        // Checked as header names when the flags were read (`cli`).
        .chain(extra.iter().filter_map(|name| name.parse().ok()))
        .collect();
    CorsLayer::new()
        .allow_origin(AnyOrigin)
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
        .allow_headers(headers)
        .expose_headers([
            REQUEST_ID_HEADER,
            HeaderName::from_static("x-amzn-errortype"),
        ])
        .max_age(Duration::from_secs(600))
}

/// Marks the answer [`CatchPanicLayer`] gives a panicking request. The panic hook (see
/// `telemetry`) has logged the panic itself, inside the request's span.
#[derive(Clone, Copy)]
struct Panicked;

fn panic_answer(_panic: Box<dyn Any + Send + 'static>) -> Response {
    let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
    response.extensions_mut().insert(Panicked);
    response
}

/// Gives the bare answers of the layers below (time limit, panic, body limit) a GraphQL error
/// body in the client's media type, with the request id; lets every other answer through.
async fn explain_failures(
    axum::extract::State(timeout): axum::extract::State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let answer = Answer::for_request(request.headers());
    let id = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static(""));
    let response = next.run(request).await;
    let id = id.to_str().unwrap_or_default();
    let (status, error_type, message) = match response.status() {
        _ if response.extensions().get::<Panicked>().is_some() => {
            tracing::error!("the request panicked; answered 500");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                format!(
                    "internal error; the operator can find it in the logs under request id {id}"
                ),
            )
        }
        // Handlers never answer 408: this is the time limit's.
        StatusCode::REQUEST_TIMEOUT => {
            let limit = timeout.as_secs_f64();
            tracing::warn!(limit, "the request ran out of time; answered 408");
            (
                StatusCode::REQUEST_TIMEOUT,
                "RequestTimeout",
                format!("the request did not finish within {limit} s and was stopped"),
            )
        }
        // Refused by the body limit: before the handler when the request declared its length,
        // or by the handler when a streamed body ran past it.
        StatusCode::PAYLOAD_TOO_LARGE => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "PayloadTooLarge",
            "the request body is larger than the server accepts".to_owned(),
        ),
        _ => return response,
    };
    let mut entry = crate::graphql::appsync::error_entry(&message, error_type);
    entry["extensions"]["requestId"] = id.into();
    let body = serde_json::json!({ "errors": [entry] });
    answer.json(status, &body)
}
