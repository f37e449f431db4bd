//! The errors clients see, in AppSync's style: a message and `extensions.errorType`.
//!
//! Invariant: nothing from the store's own messages (SDK text, table or index names) reaches a
//! client. Store failures are logged here, once, with their detail, and answered with a fixed
//! message.

use async_graphql::ErrorExtensions as _;

use crate::store::StoreError;

/// An error a resolver answers. Deliberately not `Display`: async-graphql would turn any
/// `Display` into an error without extensions, so every conversion goes through
/// [`ApiError::into_graphql`].
#[derive(Debug)]
pub enum ApiError {
    BadUserInput(String),
    UniqueConstraintViolation { type_name: String, field: String },
    VersionMismatch { expected: i64, actual: i64 },
    TransactionTooLarge(String),
    StorageUnavailable,
    Internal,
}

impl ApiError {
    /// Classifies and logs a store failure that the resolver cannot answer more precisely.
    pub fn from_store(error: &StoreError) -> ApiError {
        if let StoreError::CallBudgetSpent { budget } = error {
            return ApiError::BadUserInput(format!(
                "this request needs more than {budget} storage calls; ask for fewer nodes or smaller pages"
            ));
        }
        if error.is_transient() {
            tracing::warn!(error = %error, "storage unavailable");
            ApiError::StorageUnavailable
        } else {
            tracing::error!(error = %error, "storage call failed");
            ApiError::Internal
        }
    }

    pub fn bad_input(message: impl Into<String>) -> ApiError {
        ApiError::BadUserInput(message.into())
    }

    fn error_type(&self) -> &'static str {
        match self {
            ApiError::BadUserInput(_) => "BadUserInput",
            ApiError::UniqueConstraintViolation { .. } => "UniqueConstraintViolation",
            ApiError::VersionMismatch { .. } => "VersionMismatch",
            ApiError::TransactionTooLarge(_) => "TransactionTooLarge",
            ApiError::StorageUnavailable => "StorageUnavailable",
            ApiError::Internal => "InternalError",
        }
    }

    pub fn message(&self) -> String {
        match self {
            ApiError::BadUserInput(message) | ApiError::TransactionTooLarge(message) => {
                message.clone()
            }
            ApiError::UniqueConstraintViolation { type_name, field } => {
                format!("another {type_name} already has this {field}")
            }
            ApiError::VersionMismatch { expected, actual } => {
                format!("expected version {expected}, but the current version is {actual}")
            }
            ApiError::StorageUnavailable => {
                "the storage is unavailable at the moment; try again".to_owned()
            }
            ApiError::Internal => "internal error".to_owned(),
        }
    }

    pub fn into_graphql(self) -> async_graphql::Error {
        let error_type = self.error_type();
        async_graphql::Error::new(self.message()).extend_with(|_, extensions| {
            extensions.set("errorType", error_type);
            match &self {
                ApiError::UniqueConstraintViolation { field, .. } => {
                    extensions.set("field", field.as_str());
                }
                ApiError::VersionMismatch { actual, .. } => {
                    extensions.set("currentVersion", *actual);
                }
                _ => {}
            }
        })
    }
}

impl From<async_graphql::Error> for ApiError {
    /// Argument access errors: the schema has already checked argument types, so what is left
    /// is the client's to fix.
    fn from(error: async_graphql::Error) -> ApiError {
        ApiError::BadUserInput(error.message)
    }
}
