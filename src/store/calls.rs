//! Storage-call accounting: every call a request makes, in order, so tests and clients can see
//! that a query costs what its shape says.

use std::sync::Mutex;

/// One storage call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CallRecord {
    /// The DynamoDB operation, e.g. `BatchGetItem`.
    pub operation: &'static str,
    /// The index a Query read, if not the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// Keys asked for (reads by key) or items written (writes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<usize>,
    /// Items returned, for reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<usize>,
}

/// The calls of one request. Shared by the request's resolvers and loaders.
#[derive(Debug, Default)]
pub struct CallLog {
    calls: Mutex<Vec<CallRecord>>,
}

impl CallLog {
    pub fn record(&self, call: CallRecord) {
        self.calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(call);
    }

    pub fn calls(&self) -> Vec<CallRecord> {
        self.calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}
