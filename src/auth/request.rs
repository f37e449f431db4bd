//! What checking a credential may need of the request itself: what it asks (for the Lambda
//! authorizer's event) and the request as it was signed (for IAM's SigV4 signatures).

use serde_json::{Map, Value};

/// What the request being authorized asks, as the authorizer's `requestContext` and
/// `requestHeaders` tell it, and the request as it was signed (for IAM).
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    pub request_id: String,
    pub query: String,
    pub operation_name: Option<String>,
    pub variables: Value,
    pub headers: Map<String, Value>,
    pub signed: SignedRequest,
}

/// What is signed: the request as it arrived.
#[derive(Debug, Clone, Default)]
pub struct SignedRequest {
    pub method: String,
    /// The path and query, as sent (still percent-encoded).
    pub path_and_query: String,
    /// The request's authority when its URI has one (HTTP/2's `:authority`, which stands for
    /// the `host` header HTTP/1.1 sends).
    pub authority: Option<String>,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: bytes::Bytes,
}
