//! The errors clients see, in AppSync's style: a message and `extensions.errorType`, made from
//! the engine's [`EngineError`].
//!
//! Invariant: every error a resolver answers goes through [`graphql_error`], so each carries its
//! `errorType`; store details never reach a client (the engine keeps them out).

pub mod appsync;
pub(in crate::graphql) mod denied_fields;
pub(in crate::graphql) mod field_errors;

use async_graphql::ErrorExtensions as _;
use async_graphql::ServerError;

use crate::engine::EngineError;

/// The GraphQL error of an engine error, with AppSync's `errorType` and what a client needs to
/// act on it (`field` of a taken unique value, `currentVersion` of a version mismatch).
pub(in crate::graphql) fn graphql_error(error: EngineError) -> async_graphql::Error {
    let error_type = error.error_type();
    async_graphql::Error::new(error.message()).extend_with(|_, extensions| {
        extensions.set("errorType", error_type);
        // A batch's member is named by its position; what else the member's error carries
        // is its own.
        let error = match &error {
            EngineError::InBatch { index, error } => {
                extensions.set("index", *index as u64);
                error.as_ref()
            }
            error => error,
        };
        match error {
            EngineError::UniqueConstraintViolation { field, .. } => {
                extensions.set("field", field.as_str());
            }
            EngineError::VersionMismatch { actual, .. } => {
                extensions.set("currentVersion", *actual);
            }
            _ => {}
        }
    })
}

/// An error of `error_type` that is not the engine's (a function's, a transport's limit).
pub(in crate::graphql) fn typed_error(
    message: impl Into<String>,
    error_type: &str,
) -> async_graphql::Error {
    let error_type = error_type.to_owned();
    async_graphql::Error::new(message)
        .extend_with(move |_, extensions| extensions.set("errorType", error_type.as_str()))
}

/// Argument access errors: the schema has already checked argument types, so what is left is
/// the client's to fix.
impl From<async_graphql::Error> for EngineError {
    fn from(error: async_graphql::Error) -> EngineError {
        EngineError::BadUserInput(error.message)
    }
}

/// The `errorType` of a document that does not parse (graphql-java's name, which AppSync's
/// messages carry: "Invalid Syntax").
pub const INVALID_SYNTAX: &str = "InvalidSyntax";
/// The `errorType` of a document or variables the schema refuses (an unknown field, a value
/// of the wrong type): graphql-java's `ValidationError`, as AppSync's "Validation error of
/// type FieldUndefined" messages name it.
pub const VALIDATION_ERROR: &str = "ValidationError";
/// The `errorType` of any other error that did not name one.
pub const GRAPHQL_ERROR: &str = "GraphQLError";

/// `error` with `error_type`, unless it already names one.
pub(in crate::graphql) fn with_type(mut error: ServerError, error_type: &str) -> ServerError {
    set_type(&mut error, error_type);
    error
}

fn set_type(error: &mut ServerError, error_type: &str) {
    let extensions = error.extensions.get_or_insert_with(Default::default);
    if extensions.get("errorType").is_none() {
        extensions.set("errorType", error_type);
    }
}

/// `response` with every error naming its `errorType`: one with no path is the request's
/// (validation, variables: [`VALIDATION_ERROR`]), one with a path a field's
/// ([`GRAPHQL_ERROR`]). Every answer of the API passes here, on every transport.
pub(in crate::graphql) fn typed(mut response: async_graphql::Response) -> async_graphql::Response {
    for error in &mut response.errors {
        let error_type = match error.path.is_empty() {
            true => VALIDATION_ERROR,
            false => GRAPHQL_ERROR,
        };
        set_type(error, error_type);
    }
    response
}

/// AppSync's name, in Amplify's API, of a failed `condition`: DynamoDB's exception.
pub const CONDITION_FAILED_IN_APPSYNC: &str = "DynamoDB:ConditionalCheckFailedException";

/// `response` with its errors named as AppSync names them where Amplify's client looks: a
/// failed condition is `DynamoDB:ConditionalCheckFailedException`, "The conditional request
/// failed".
pub(in crate::graphql) fn as_appsync(
    mut response: async_graphql::Response,
) -> async_graphql::Response {
    for error in &mut response.errors {
        let Some(extensions) = &mut error.extensions else {
            continue;
        };
        let failed_condition = matches!(
            extensions.get("errorType"),
            Some(async_graphql::Value::String(kind)) if kind == "ConditionalCheckFailed"
        );
        if failed_condition {
            extensions.set("errorType", CONDITION_FAILED_IN_APPSYNC);
            error.message = format!("The conditional request failed: {}", error.message);
        }
    }
    response
}
