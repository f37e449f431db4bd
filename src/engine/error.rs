//! The errors the engine answers, named as AppSync names its error types
//! (`extensions.errorType`): what a client did wrong, what it raced, or that the storage failed.
//!
//! Invariant: nothing from the store's own messages (SDK text, table or index names) is in an
//! [`EngineError`]. A store failure is logged here, once, with its detail, and becomes a fixed
//! message.

use crate::store::StoreError;

/// An error an operation answers. Deliberately not `Display`: front ends turn it into their
/// own error shape with [`EngineError::error_type`] and [`EngineError::message`].
#[derive(Debug, Clone, PartialEq)]
pub enum EngineError {
    BadUserInput(String),
    UniqueConstraintViolation {
        type_name: String,
        field: String,
    },
    VersionMismatch {
        expected: i64,
        actual: i64,
    },
    TransactionTooLarge(String),
    /// A write's `condition` did not hold on the node it would have changed.
    ConditionalCheckFailed,
    /// The caller's authorization rules (`@auth`) do not allow it. The message names the
    /// operation and the type, never a node.
    Unauthorized(String),
    /// A member of a batch failed: `index` is its position in the batch.
    InBatch {
        index: usize,
        error: Box<EngineError>,
    },
    StorageUnavailable,
    /// Other writers changed the same items every time this write tried (AppSync's name):
    /// nothing was written, and trying again may succeed.
    ConflictUnhandled,
    /// Conflict detection refused a write (a stale `_version`, a deleted node): AppSync's
    /// `ConflictUnhandled`, "Conflict resolver rejects mutation.", with the stored node.
    ConflictRejected(std::sync::Arc<crate::store::Item>),
    /// A `LAMBDA` conflict handler failed or answered what AppSync does not take (AppSync's
    /// `ConflictError`).
    ConflictError(String),
    /// A subscription fell behind the table's changes, or the change stream had to be read
    /// again: events between are lost to it, so it ends rather than go on with a gap.
    EventsMissed,
    /// The table's change stream is off, so there is nothing to subscribe to.
    SubscriptionsUnavailable,
    /// A limit of the server's (how many subscriptions it holds) was reached.
    LimitExceeded(String),
    Internal,
}

impl EngineError {
    /// Classifies and logs a store failure that the operation cannot answer more precisely.
    pub fn from_store(error: &StoreError) -> EngineError {
        if let StoreError::CallBudgetSpent { budget } = error {
            return EngineError::BadUserInput(format!(
                "this request needs more than {budget} storage calls; ask for fewer nodes or smaller pages"
            ));
        }
        if let StoreError::TransactionConflict = error {
            tracing::warn!("a transaction kept conflicting with other writers");
            return EngineError::ConflictUnhandled;
        }
        if error.is_transient() {
            tracing::warn!(error = %error, "storage unavailable");
            EngineError::StorageUnavailable
        } else {
            tracing::error!(error = %error, "storage call failed");
            EngineError::Internal
        }
    }

    pub fn bad_input(message: impl Into<String>) -> EngineError {
        EngineError::BadUserInput(message.into())
    }

    /// This error, as the failure of member `index` of a batch.
    pub fn in_batch(self, index: usize) -> EngineError {
        match self {
            // What fails the request as a whole is not the member's doing.
            EngineError::StorageUnavailable
            | EngineError::ConflictUnhandled
            | EngineError::Internal => self,
            error => EngineError::InBatch {
                index,
                error: Box::new(error),
            },
        }
    }

    /// AppSync's name for the kind of error.
    pub fn error_type(&self) -> &'static str {
        match self {
            EngineError::BadUserInput(_) => "BadUserInput",
            EngineError::UniqueConstraintViolation { .. } => "UniqueConstraintViolation",
            EngineError::VersionMismatch { .. } => "VersionMismatch",
            EngineError::TransactionTooLarge(_) => "TransactionTooLarge",
            EngineError::ConditionalCheckFailed => "ConditionalCheckFailed",
            EngineError::Unauthorized(_) => "Unauthorized",
            EngineError::InBatch { error, .. } => error.error_type(),
            EngineError::StorageUnavailable => "StorageUnavailable",
            EngineError::ConflictUnhandled | EngineError::ConflictRejected(_) => {
                "ConflictUnhandled"
            }
            EngineError::ConflictError(_) => "ConflictError",
            EngineError::EventsMissed => "EventsMissed",
            EngineError::SubscriptionsUnavailable => "SubscriptionsUnavailable",
            EngineError::LimitExceeded(_) => "LimitExceeded",
            EngineError::Internal => "InternalError",
        }
    }

    /// The message a client reads.
    pub fn message(&self) -> String {
        match self {
            EngineError::BadUserInput(message)
            | EngineError::TransactionTooLarge(message)
            | EngineError::LimitExceeded(message)
            | EngineError::ConflictError(message)
            | EngineError::Unauthorized(message) => message.clone(),
            EngineError::UniqueConstraintViolation { type_name, field } => {
                format!("another {type_name} already has this {field}")
            }
            EngineError::VersionMismatch { expected, actual } => {
                format!("expected version {expected}, but the current version is {actual}")
            }
            EngineError::StorageUnavailable => {
                "the storage is unavailable at the moment; try again".to_owned()
            }
            EngineError::ConflictRejected(_) => "Conflict resolver rejects mutation.".to_owned(),
            EngineError::ConflictUnhandled => {
                "other writers kept changing the same nodes or edges while this write was \
                 made, so nothing was written; try again"
                    .to_owned()
            }
            EngineError::EventsMissed => {
                "events were missed: this subscription fell behind the table's changes; \
                 subscribe again, then read what changed"
                    .to_owned()
            }
            EngineError::SubscriptionsUnavailable => {
                "subscriptions are unavailable: the table's change stream is off \
                 (`tablegraph migrate` turns it on)"
                    .to_owned()
            }
            EngineError::ConditionalCheckFailed => {
                "the condition did not hold on the stored node; nothing was written".to_owned()
            }
            EngineError::InBatch { index, error } => {
                format!("member {index} of the batch: {}", error.message())
            }
            EngineError::Internal => "internal error".to_owned(),
        }
    }
}
