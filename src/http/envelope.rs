//! What every request passes through once, in one middleware: its request id, a tracing span
//! that carries it, the time limit, panic capture, and CORS.
//!
//! # Why one middleware and not a stack of tower-http layers
//!
//! Each layer wraps the request's future and the response's body once more, and each costs
//! its own allocations and polls. Seven of them (request id, its propagation, trace, panic
//! capture, compression, CORS, timeout) took about a quarter of the CPU of a `{ __typename }`
//! request (BENCHMARKS.md, "Profile"). Here each concern is a few lines around one future;
//! compression happens where the body is made ([`super::graphql::Answer`]).
//!
//! Invariants: every response carries `x-request-id` (the client's, or a new one) and
//! `access-control-allow-origin: *`; a request over the time limit answers 408, and a panic
//! 500, both with the request id in a GraphQL error body and nothing of what was running.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt as _;
use tracing::Instrument as _;

use super::graphql::Answer;

const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The request headers a browser on another origin may send (answered to CORS preflights).
const ALLOWED_HEADERS: &str = "content-type, authorization, x-api-key, x-tablegraph-storage-calls";
/// What a CORS answer depends on, so that caches keep one answer per variant.
const CORS_VARY: &str = "origin, access-control-request-method, access-control-request-headers";

/// The envelope's settings, shared by every request.
pub struct Envelope {
    timeout: Duration,
    ids: RequestIds,
}

impl Envelope {
    pub fn new(timeout: Duration) -> Arc<Envelope> {
        Arc::new(Envelope {
            timeout,
            ids: RequestIds::new(),
        })
    }
}

/// Request ids: a random prefix per process and a counter, unique without asking the kernel
/// for randomness on every request (a UUIDv4 per request showed in the profile).
struct RequestIds {
    prefix: String,
    next: AtomicU64,
}

impl RequestIds {
    fn new() -> RequestIds {
        RequestIds {
            prefix: format!("{:016x}", fastrand::u64(..)),
            next: AtomicU64::new(0),
        }
    }

    fn next(&self) -> HeaderValue {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{}-{n:08x}", self.prefix))
            .expect("hex digits and a dash are a valid header value")
    }
}

pub async fn envelope(
    State(envelope): State<Arc<Envelope>>,
    mut request: Request,
    next: Next,
) -> Response {
    let id = match request.headers().get(REQUEST_ID_HEADER) {
        Some(id) => id.clone(),
        None => {
            let id = envelope.ids.next();
            request.headers_mut().insert(REQUEST_ID_HEADER, id.clone());
            id
        }
    };
    let mut response = if is_preflight(&request) {
        preflight()
    } else {
        let started = std::time::Instant::now();
        let id_text = id.to_str().unwrap_or_default();
        let span = tracing::info_span!(
            "request",
            method = %request.method(),
            uri = %request.uri(),
            request_id = %id_text,
        );
        // Kept for the error answers: the request itself moves into the handler.
        let answer = Answer::for_request(request.headers());
        let handled = AssertUnwindSafe(next.run(request)).catch_unwind();
        let response = match tokio::time::timeout(envelope.timeout, handled)
            .instrument(span.clone())
            .await
        {
            Ok(Ok(response)) => response,
            Ok(Err(_panic)) => {
                // The panic hook has logged the panic itself, inside the span.
                span.in_scope(|| tracing::error!("the request panicked; answered 500"));
                error_response(
                    answer,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    format!(
                        "internal error; the operator can find it in the logs under request id {id_text}"
                    ),
                    id_text,
                )
            }
            Err(_elapsed) => {
                let limit = envelope.timeout.as_secs_f64();
                span.in_scope(|| {
                    tracing::warn!(limit, "the request ran out of time; answered 408")
                });
                error_response(
                    answer,
                    StatusCode::REQUEST_TIMEOUT,
                    "RequestTimeout",
                    format!("the request did not finish within {limit} s and was stopped"),
                    id_text,
                )
            }
        };
        // The access log, at debug level (RUST_LOG=tablegraph=debug).
        tracing::debug!(
            parent: &span,
            status = response.status().as_u16(),
            elapsed_us = started.elapsed().as_micros() as u64,
            "answered"
        );
        response
    };
    let headers = response.headers_mut();
    headers.insert(REQUEST_ID_HEADER, id);
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.append(header::VARY, HeaderValue::from_static(CORS_VARY));
    response
}

/// A browser asking whether it may send a cross-origin request; any `OPTIONS` request gets the
/// same answer, the CORS headers of what the API allows, as it did from tower-http's layer.
fn is_preflight(request: &Request) -> bool {
    request.method() == Method::OPTIONS
}

/// Any origin may `GET` and `POST` with the API's headers; browsers may cache that for 10
/// minutes.
fn preflight() -> Response {
    (
        StatusCode::OK,
        [
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST"),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOWED_HEADERS),
            (header::ACCESS_CONTROL_MAX_AGE, "600"),
        ],
    )
        .into_response()
}

fn error_response(
    answer: Answer,
    status: StatusCode,
    error_type: &str,
    message: String,
    request_id: &str,
) -> Response {
    let body = serde_json::json!({ "errors": [{
        "message": message,
        "extensions": { "errorType": error_type, "requestId": request_id },
    }] });
    answer.json(status, &body)
}
