//! Storage-call accounting: every call a request makes, in order, so tests and clients can see
//! that a query costs what its shape says.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::types::ConsumedCapacity;

use super::error::StoreError;

/// One storage call.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
    /// The capacity units the store reported the call consumed (`ReturnConsumedCapacity`).
    #[serde(rename = "consumedCapacity", skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<f64>,
}

/// The calls of one request, and how many it may make. Shared by the request's resolvers and
/// loaders.
#[derive(Debug)]
pub struct CallLog {
    calls: Mutex<Vec<CallRecord>>,
    /// Calls begun so far; counted before each call so concurrent resolvers cannot overshoot.
    begun: AtomicUsize,
    budget: usize,
}

impl CallLog {
    /// A log that refuses calls past `budget`: a query that fans out (a connection inside a
    /// list costs a Query per parent) fails instead of flooding the store.
    pub fn with_budget(budget: usize) -> CallLog {
        CallLog {
            calls: Mutex::default(),
            begun: AtomicUsize::new(0),
            budget,
        }
    }

    pub(super) fn begin(&self) -> Result<(), StoreError> {
        if self.begun.fetch_add(1, Ordering::Relaxed) < self.budget {
            Ok(())
        } else {
            Err(StoreError::CallBudgetSpent {
                budget: self.budget,
            })
        }
    }

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

/// The capacity units one answer reports.
pub(super) fn capacity(consumed: Option<&ConsumedCapacity>) -> Option<f64> {
    consumed.and_then(ConsumedCapacity::capacity_units)
}

/// The capacity units of an answer that reports them per table.
pub(super) fn total_capacity(consumed: Option<&[ConsumedCapacity]>) -> Option<f64> {
    let units: Vec<f64> = consumed?
        .iter()
        .filter_map(ConsumedCapacity::capacity_units)
        .collect();
    (!units.is_empty()).then(|| units.iter().sum())
}
