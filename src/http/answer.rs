//! How an answer reaches the client before or around GraphQL: in the media type it accepts
//! (`application/graphql-response+json` when it lists it, else `application/json`), and the
//! errors of a request that never reached the API (a body over the limit, a body that is no
//! GraphQL request). Shared by the GraphQL handlers, the credentials layer and the tower-http
//! layers' own answers.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub(super) const GRAPHQL_RESPONSE_JSON: &str = "application/graphql-response+json";
pub(super) const JSON: &str = "application/json";

/// Whether reading a body failed on the body limit (its error sits somewhere in the chain).
pub(super) fn is_over_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = source {
        if error.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// Whether the client's `Accept` lists `media`.
pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains(media))
}

/// How a client wants its answers: `application/graphql-response+json` when it lists it, else
/// `application/json`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answer {
    pub media: &'static str,
}

impl Answer {
    pub fn for_request(headers: &HeaderMap) -> Answer {
        Answer {
            media: if accepts(headers, GRAPHQL_RESPONSE_JSON) {
                GRAPHQL_RESPONSE_JSON
            } else {
                JSON
            },
        }
    }

    /// `body` as JSON in the client's media type.
    pub fn json(self, status: StatusCode, body: &impl serde::Serialize) -> Response {
        let body = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
        (
            status,
            [(header::CONTENT_TYPE, HeaderValue::from_static(self.media))],
            body,
        )
            .into_response()
    }
}

/// An error answered before any GraphQL ran.
pub(super) fn request_error(headers: &HeaderMap, status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "errors": [{ "message": message }] });
    Answer::for_request(headers).json(status, &body)
}
