//! The vocabulary of a plan: an [`Access`] (operation, target, key, batching), the
//! [`FieldPlan`] of one field, the batching notes the printed plan repeats, and the two
//! accesses most fields share (a node read through the loader, a Query of a relation slot).

use crate::keys;

/// One storage access of a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub operation: &'static str,
    /// `table` or an index, like `GSI01`.
    pub target: String,
    pub key: String,
    pub batching: &'static str,
}

/// The accesses of one field, in the order they happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPlan {
    /// `Type.field`.
    pub field: String,
    pub accesses: Vec<Access>,
}

pub(super) const PER_LEVEL: &str = "batched with its query level, ≤100 keys a call";
pub(super) const PER_PARENT: &str = "one per parent per page";
pub(super) const CONNECTION_PAGE: &str =
    "one per parent per page; with filter: a FilterExpression, read on until full or budget";
pub(super) const INDEX_PAGE: &str =
    "one per page; with filter: a FilterExpression, read on until full or budget";
pub(super) const LIST_PAGE: &str = "one per shard per page, sent together; with filter: a FilterExpression, \
     read on until full or budget";
pub(super) const NONE: &str = "no storage call";
pub(super) const FUNCTION_CALL: &str = "one HTTP call per field, in order (with --function-batch, one per \
     level); what it answers may load more";

pub(super) fn access(
    operation: &'static str,
    target: impl Into<String>,
    key: impl Into<String>,
    batching: &'static str,
) -> Access {
    Access {
        operation,
        target: target.into(),
        key: key.into(),
        batching,
    }
}

pub(super) fn node_read(key: &str) -> Access {
    access(
        "BatchGetItem",
        "table",
        format!("PK = SK = NODE#<{key}>"),
        PER_LEVEL,
    )
}

/// A Query of the slot partition `<element>#<parent.id>`.
pub(super) fn slot_query(slot: u8, element: &str) -> Access {
    access(
        "Query",
        keys::gsi_name(slot),
        format!(
            "{} = {}",
            keys::slot_partition_attribute(slot),
            keys::slot_partition(element, "<parent.id>")
        ),
        PER_PARENT,
    )
}
