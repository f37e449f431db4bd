//! How an answer reaches the client before or around GraphQL: in the media type it accepts
//! (`application/graphql-response+json` when it names it, with a quality not below
//! `application/json`'s, else `application/json`; q-values honoured), and the
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

/// The quality (`q`, 0 to 1) the client's `Accept` gives `media` by a range that names it
/// (`text/event-stream;q=0.5`), not by a wildcard: the media types that change what is
/// answered (a stream, GraphiQL's page) are given only to a client that asks for them. `None`
/// when no range names it. Ranges are parsed by `mime`, as RFC 9110 writes them.
fn named_quality(headers: &HeaderMap, media: &str) -> Option<f32> {
    ranges(headers)
        .filter(|(range, _)| range.essence_str().eq_ignore_ascii_case(media))
        .map(|(_, quality)| quality)
        .reduce(f32::max)
}

/// The quality the client's `Accept` gives `media`, by the most specific range that matches
/// it (`*/*` included); 1 without an `Accept`, as HTTP reads a request without one.
fn quality(headers: &HeaderMap, media: &str) -> f32 {
    let Ok(wanted) = media.parse::<mime::Mime>() else {
        return 0.0;
    };
    let mut any = false;
    let mut best: Option<(u8, f32)> = None;
    for (range, quality) in ranges(headers) {
        any = true;
        let specificity = if range.essence_str() == wanted.essence_str() {
            2
        } else if range.type_() == wanted.type_() && range.subtype() == mime::STAR {
            1
        } else if range.type_() == mime::STAR && range.subtype() == mime::STAR {
            0
        } else {
            continue;
        };
        if best.is_none_or(|(found, _)| specificity > found) {
            best = Some((specificity, quality));
        }
    }
    match best {
        Some((_, quality)) => quality,
        None if any => 0.0,
        None => 1.0,
    }
}

/// The client's `Accept` ranges with their quality (1 without `q`); those that do not parse
/// are left out.
fn ranges(headers: &HeaderMap) -> impl Iterator<Item = (mime::Mime, f32)> + '_ {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|range| range.trim().parse::<mime::Mime>().ok())
        .map(|range| {
            let quality = range
                .get_param("q")
                .and_then(|q| q.as_str().parse::<f32>().ok())
                .map_or(1.0, |q| q.clamp(0.0, 1.0));
            (range, quality)
        })
}

/// Whether the client's `Accept` names `media` with a quality above 0 (`text/event-stream`,
/// `text/html`; see [`named_quality`]).
pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    named_quality(headers, media).is_some_and(|quality| quality > 0.0)
}

/// How a client wants its answers: `application/graphql-response+json` when it lists it, else
/// `application/json`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answer {
    pub media: &'static str,
}

impl Answer {
    pub fn for_request(headers: &HeaderMap) -> Answer {
        let preferred = named_quality(headers, GRAPHQL_RESPONSE_JSON)
            .is_some_and(|quality| quality > 0.0 && quality >= self::quality(headers, JSON));
        Answer {
            media: if preferred {
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

/// An error answered before any GraphQL ran, with the `errorType` AppSync gives its status:
/// `InternalFailure` for a server fault, `BadRequestException` otherwise.
pub(super) fn request_error(headers: &HeaderMap, status: StatusCode, message: &str) -> Response {
    let error_type = match status.is_server_error() {
        true => "InternalFailure",
        false => "BadRequestException",
    };
    let body = crate::graphql::appsync::error_body(message, error_type);
    Answer::for_request(headers).json(status, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_str(value).expect("a header"),
        );
        headers
    }

    #[test]
    fn a_media_type_refused_by_its_quality_is_not_accepted() {
        let refused = accept("text/event-stream;q=0, application/json");
        assert!(!accepts(&refused, "text/event-stream"));
        assert!(accepts(&accept("text/event-stream"), "text/event-stream"));
        assert!(accepts(
            &accept("Text/Event-Stream; q=0.2"),
            "text/event-stream"
        ));
        // A wildcard asks for no stream and no page.
        assert!(!accepts(&accept("*/*"), "text/event-stream"));
        assert!(!accepts(&accept("text/*"), "text/html"));
    }

    #[test]
    fn graphql_responses_go_to_clients_that_prefer_them() {
        let media = |value: &str| Answer::for_request(&accept(value)).media;
        assert_eq!(
            media("application/graphql-response+json, application/json"),
            GRAPHQL_RESPONSE_JSON
        );
        assert_eq!(
            media("application/graphql-response+json;q=0.5, application/json"),
            JSON
        );
        assert_eq!(
            media("application/json;q=0.5, application/graphql-response+json"),
            GRAPHQL_RESPONSE_JSON
        );
        assert_eq!(media("application/graphql-response+json;q=0, */*"), JSON);
        assert_eq!(
            media("application/graphql-response+json;q=0.9, */*;q=0.1"),
            GRAPHQL_RESPONSE_JSON
        );
        assert_eq!(media("*/*"), JSON);
        assert_eq!(Answer::for_request(&HeaderMap::new()).media, JSON);
    }
}
