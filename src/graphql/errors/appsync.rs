//! AppSync's error shapes, built here for every transport and every refusal: an `errors` entry
//! with its message and `extensions.errorType` (what GraphQL clients read); the same with
//! `errorType` and `errorInfo` beside the message too (what Amplify's clients read, in
//! Amplify's API); and the entries of AppSync's real-time protocol, `errorType` beside the
//! message, with `errorCode` for a refusal of the protocol itself.
//!
//! Invariant: an entry's `errorType` is the one its error named, or [`GRAPHQL_ERROR`].

use async_graphql::{ErrorExtensionValues, Response, ServerError};
use serde_json::{Value, json};

use super::GRAPHQL_ERROR;

/// An `errors` entry: `message` with `extensions.errorType`.
pub fn error_entry(message: &str, error_type: &str) -> Value {
    json!({ "message": message, "extensions": { "errorType": error_type } })
}

/// A whole answer of one error that nothing ran for: `{"errors": [entry]}`.
pub fn error_body(message: &str, error_type: &str) -> Value {
    json!({ "errors": [error_entry(message, error_type)] })
}

/// An error of `error_type` raised outside a resolver (a transport ending an operation).
pub fn server_error(message: &str, error_type: &str) -> ServerError {
    let mut error = ServerError::new(message, None);
    let mut extensions = ErrorExtensionValues::default();
    extensions.set("errorType", error_type);
    error.extensions = Some(extensions);
    error
}

/// The `errorType` `error` names, or [`GRAPHQL_ERROR`].
pub fn error_type(error: &ServerError) -> String {
    match error.extensions.as_ref().and_then(|x| x.get("errorType")) {
        Some(async_graphql::Value::String(kind)) => kind.clone(),
        _ => GRAPHQL_ERROR.to_owned(),
    }
}

/// A serialized answer with each error's `errorType` and `errorInfo` (and `data`, where it
/// carries some) beside its message as well as in `extensions`, as AppSync answers Amplify's
/// clients.
pub fn with_error_fields(body: &mut Value) {
    let Some(errors) = body.get_mut("errors").and_then(|e| e.as_array_mut()) else {
        return;
    };
    for error in errors.iter_mut().filter_map(|e| e.as_object_mut()) {
        let extensions = error.get("extensions");
        let Some(error_type) = extensions.and_then(|x| x.get("errorType")).cloned() else {
            continue;
        };
        let error_info = extensions
            .and_then(|x| x.get("errorInfo"))
            .cloned()
            .unwrap_or(Value::Null);
        // What the error carries of the data (a conflict's stored node), as `$util.error`'s
        // `data` is carried.
        let data = extensions.and_then(|x| x.get("data")).cloned();
        error.insert("errorType".to_owned(), error_type);
        error.insert("errorInfo".to_owned(), error_info);
        if let Some(data) = data {
            error.insert("data".to_owned(), data);
        }
    }
}

/// A response's errors as AppSync's real-time protocol sends them: each with its `errorType`
/// beside its message, and its locations and path when it has them.
pub fn realtime_errors(response: &Response) -> Vec<Value> {
    response
        .errors
        .iter()
        .map(|error| {
            let mut entry = realtime_entry(&error.message, &error_type(error));
            if !error.locations.is_empty() {
                entry["locations"] = json!(
                    error
                        .locations
                        .iter()
                        .map(|at| json!({ "line": at.line, "column": at.column }))
                        .collect::<Vec<_>>()
                );
            }
            if !error.path.is_empty() {
                entry["path"] = serde_json::to_value(&error.path).unwrap_or(Value::Null);
            }
            entry
        })
        .collect()
}

/// An entry of AppSync's real-time protocol: `errorType` beside the message.
pub fn realtime_entry(message: &str, error_type: &str) -> Value {
    json!({ "errorType": error_type, "message": message })
}

/// A refusal of AppSync's real-time protocol itself (a handshake, a `start`): its entry with
/// the `errorCode` AppSync gives it.
pub fn realtime_refusal(error_type: &str, code: u16, message: &str) -> Value {
    json!({ "errorType": error_type, "errorCode": code, "message": message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplify_s_clients_find_the_error_type_beside_the_message() {
        let mut body = json!({ "errors": [
            { "message": "taken", "extensions": { "errorType": "ConditionalCheckFailed" } },
            { "message": "untyped" },
        ] });
        with_error_fields(&mut body);
        assert_eq!(body["errors"][0]["errorType"], "ConditionalCheckFailed");
        assert_eq!(body["errors"][0]["errorInfo"], Value::Null);
        assert!(body["errors"][1].get("errorType").is_none());
    }

    #[test]
    fn a_real_time_error_without_a_type_is_a_graphql_error() {
        let response = Response::from_errors(vec![ServerError::new("no", None)]);
        assert_eq!(
            realtime_errors(&response),
            vec![json!({ "errorType": "GraphQLError", "message": "no" })]
        );
        let typed = Response::from_errors(vec![server_error("expired", "UnauthorizedException")]);
        assert_eq!(
            realtime_errors(&typed)[0]["errorType"],
            "UnauthorizedException"
        );
    }
}
