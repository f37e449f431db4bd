//! `StoreError`: what went wrong at the storage boundary, named after DynamoDB's exceptions.
//! SDK error types stop here; their text is kept only for the log.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A write's condition did not hold. `index` is the position of the failing write in the
    /// list given to [`super::Store::transact_write`].
    #[error("the condition of write {index} failed")]
    ConditionFailed { index: usize },
    /// Other transactions kept touching the same items until the retry budget was spent.
    #[error("transaction conflict persisted after retries")]
    TransactionConflict,
    #[error("throttled by the store after retries: {0}")]
    Throttled(String),
    #[error("the store could not be reached: {0}")]
    Unavailable(String),
    /// The request was sent and no answer came (a timeout, a broken connection): it may have
    /// been applied.
    #[error("no answer from the store: {0}")]
    NoAnswer(String),
    #[error("the table does not exist: {0}")]
    TableMissing(String),
    #[error("the store refused the request: {0}")]
    Validation(String),
    #[error("unexpected store error: {0}")]
    Other(String),
    /// Another process runs the embedded store on this data directory.
    #[error(
        "the data directory {0} is in use by another tablegraph process; stop it, or give this \
         one another --data-dir"
    )]
    DataDirInUse(String),
    /// The AWS environment gives no credentials for an endpoint that needs them.
    #[error(
        "no AWS credentials for {0}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or \
         AWS_PROFILE), or run where an instance or container role provides them"
    )]
    NoCredentials(String),
    /// The request has made as many storage calls as it may.
    #[error("the request spent its budget of {budget} storage calls")]
    CallBudgetSpent { budget: usize },
}

impl StoreError {
    /// True when the caller may succeed by trying again later.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::TransactionConflict
                | StoreError::Throttled(_)
                | StoreError::Unavailable(_)
                | StoreError::NoAnswer(_)
        )
    }
}

/// Classifies any SDK error by its transport failure or AWS error code.
pub(super) fn classify<E, R>(error: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let detail = format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(&error));
    match &error {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => StoreError::NoAnswer(detail),
        _ => match error.code() {
            Some("ConditionalCheckFailedException") => StoreError::ConditionFailed { index: 0 },
            Some("TransactionConflictException") => StoreError::TransactionConflict,
            Some(
                "ProvisionedThroughputExceededException"
                | "ThrottlingException"
                | "RequestLimitExceeded",
            ) => StoreError::Throttled(detail),
            Some("ResourceNotFoundException") => StoreError::TableMissing(detail),
            Some("ValidationException") => StoreError::Validation(detail),
            // The same client token's transaction is still running: ask again, same token.
            Some(
                "InternalServerError" | "ServiceUnavailable" | "TransactionInProgressException",
            ) => StoreError::Unavailable(detail),
            _ => StoreError::Other(detail),
        },
    }
}
