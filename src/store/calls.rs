//! Storage-call accounting: every call a request makes, in order, so tests and clients can see
//! that a query costs what its shape says; and each call's span in exported traces.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemOutput;
use aws_sdk_dynamodb::operation::describe_table::DescribeTableOutput;
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::scan::ScanOutput;
use aws_sdk_dynamodb::types::ConsumedCapacity;
use tracing::Span;
use tracing::field::Empty;

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
    /// Reads the read cache answered instead of the store, each as the call it saved.
    hits: Mutex<Vec<CallRecord>>,
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
            hits: Mutex::default(),
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

    /// Records a read the cache answered: not a storage call, and not counted against the
    /// budget.
    pub fn record_hit(&self, hit: CallRecord) {
        self.hits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(hit);
    }

    /// The reads the cache answered, in order.
    pub fn hits(&self) -> Vec<CallRecord> {
        self.hits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
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

/// The span of one storage call (one attempt), a child of the request's span, named after the
/// operation with OpenTelemetry's attributes for DynamoDB. A `DEBUG` span: unless traces are
/// exported (see `telemetry`) its call site is disabled, and the cached check of that is all
/// a call pays; and left out for calls no span encloses
/// (leases and other background upkeep), which would each start a trace of their own.
pub(super) fn call_span(
    operation: &'static str,
    table: &str,
    index: Option<&str>,
    keys: Option<usize>,
) -> Span {
    let enabled = tracing::enabled!(
        kind: tracing::metadata::Kind::SPAN,
        target: "tablegraph::store",
        tracing::Level::DEBUG
    );
    if !enabled || Span::current().is_none() {
        return Span::none();
    }
    tracing::debug_span!(
        target: "tablegraph::store",
        "storage call",
        otel.name = operation,
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_message = Empty,
        rpc.system = "aws-api",
        rpc.service = "DynamoDB",
        rpc.method = operation,
        db.system.name = "aws.dynamodb",
        aws.dynamodb.table_names = table,
        aws.dynamodb.index_name = index,
        tablegraph.keys = keys,
        tablegraph.items = Empty,
        tablegraph.consumed_capacity = Empty,
    )
}

/// Writes into a call's span what its answer says: items read and capacity consumed, or the
/// failure.
pub(super) fn close_call_span<T: CallAnswer>(span: &Span, result: &Result<T, StoreError>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(answer) => {
            if let Some(items) = answer.items() {
                span.record("tablegraph.items", items);
            }
            if let Some(units) = answer.consumed_capacity() {
                span.record("tablegraph.consumed_capacity", units);
            }
        }
        Err(error) => {
            span.record("otel.status_code", "error");
            span.record("otel.status_message", error.to_string());
        }
    }
}

/// What an answer says about the call, for its span.
pub(super) trait CallAnswer {
    /// Items the call returned, for reads.
    fn items(&self) -> Option<usize> {
        None
    }
    /// Capacity units the store reported.
    fn consumed_capacity(&self) -> Option<f64> {
        None
    }
}

impl CallAnswer for GetItemOutput {
    fn items(&self) -> Option<usize> {
        Some(usize::from(self.item.is_some()))
    }
    fn consumed_capacity(&self) -> Option<f64> {
        capacity(self.consumed_capacity.as_ref())
    }
}

impl CallAnswer for BatchGetItemOutput {
    fn items(&self) -> Option<usize> {
        Some(
            self.responses
                .iter()
                .flat_map(|r| r.values())
                .map(Vec::len)
                .sum(),
        )
    }
    fn consumed_capacity(&self) -> Option<f64> {
        total_capacity(self.consumed_capacity.as_deref())
    }
}

impl CallAnswer for QueryOutput {
    fn items(&self) -> Option<usize> {
        Some(self.items.as_ref().map_or(0, Vec::len))
    }
    fn consumed_capacity(&self) -> Option<f64> {
        capacity(self.consumed_capacity.as_ref())
    }
}

impl CallAnswer for ScanOutput {
    fn items(&self) -> Option<usize> {
        Some(self.items.as_ref().map_or(0, Vec::len))
    }
    fn consumed_capacity(&self) -> Option<f64> {
        capacity(self.consumed_capacity.as_ref())
    }
}

impl CallAnswer for DescribeTableOutput {}

/// A transaction's answer: the capacity it consumed.
impl CallAnswer for Option<f64> {
    fn consumed_capacity(&self) -> Option<f64> {
        *self
    }
}
