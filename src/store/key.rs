//! What a call names: an item's primary key, the bounds of a sort-key range, a Query of one
//! partition, and DynamoDB's limits on a call.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

/// DynamoDB's limit of keys per BatchGetItem.
pub const MAX_BATCH_GET_KEYS: usize = 100;
/// DynamoDB's limit of items per TransactWriteItems.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
/// DynamoDB's limit on one item's size.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// The primary key of an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub pk: String,
    pub sk: String,
}

impl Key {
    /// The key of an item whose `PK` and `SK` are equal: nodes and unique values.
    pub fn same(key: String) -> Key {
        Key {
            sk: key.clone(),
            pk: key,
        }
    }
}

/// One end of a sort-key range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    pub value: String,
    pub inclusive: bool,
}

impl Bound {
    pub fn inclusive(value: impl Into<String>) -> Bound {
        Bound {
            value: value.into(),
            inclusive: true,
        }
    }

    pub fn exclusive(value: impl Into<String>) -> Bound {
        Bound {
            value: value.into(),
            inclusive: false,
        }
    }
}

/// A Query of one partition: of the table (`index: None`, the items of one node's partition)
/// or of a slot's index, between optional bounds on the sort key, optionally keeping only the
/// items whose attribute `filter.0` lies within `filter.1..filter.2`.
#[derive(Debug, Clone)]
pub struct RangeQuery<'a> {
    pub index: Option<u8>,
    pub partition: &'a str,
    pub lower: Option<Bound>,
    pub upper: Option<Bound>,
    pub filter: Option<(String, Option<Bound>, Option<Bound>)>,
    /// Ascending sort order when true.
    pub forward: bool,
    pub limit: usize,
    /// A strongly consistent read (of the table only; indexes are eventually consistent): for
    /// tools that rewrite what they read.
    pub consistent: bool,
}

pub(super) fn key_map(key: &Key) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("PK".to_owned(), AttributeValue::S(key.pk.clone())),
        ("SK".to_owned(), AttributeValue::S(key.sk.clone())),
    ])
}
