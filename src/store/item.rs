//! Items as the rest of the server sees them: plain Rust values, converted to and from the SDK's
//! `AttributeValue` only here.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;

/// One stored item: attribute name → value.
pub type Item = HashMap<String, AttrValue>;

/// The attribute value types tablegraph writes.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    S(String),
    /// A number, kept in DynamoDB's decimal text form so nothing is lost in transit.
    N(String),
    Bool(bool),
    /// A String Set (the node's edge set).
    Ss(BTreeSet<String>),
    L(Vec<AttrValue>),
    M(HashMap<String, AttrValue>),
    Null,
}

impl AttrValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::S(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            AttrValue::N(n) => n.parse().ok(),
            _ => None,
        }
    }
}

pub(super) fn to_sdk(value: &AttrValue) -> AttributeValue {
    match value {
        AttrValue::S(s) => AttributeValue::S(s.clone()),
        AttrValue::N(n) => AttributeValue::N(n.clone()),
        AttrValue::Bool(b) => AttributeValue::Bool(*b),
        AttrValue::Ss(set) => AttributeValue::Ss(set.iter().cloned().collect()),
        AttrValue::L(list) => AttributeValue::L(list.iter().map(to_sdk).collect()),
        AttrValue::M(map) => AttributeValue::M(item_to_sdk(map)),
        AttrValue::Null => AttributeValue::Null(true),
    }
}

pub(super) fn item_to_sdk(item: &Item) -> HashMap<String, AttributeValue> {
    item.iter().map(|(k, v)| (k.clone(), to_sdk(v))).collect()
}

/// Converts a stored value; types tablegraph never writes (binary, number sets) read as null.
pub(super) fn from_sdk(value: AttributeValue) -> AttrValue {
    match value {
        AttributeValue::S(s) => AttrValue::S(s),
        AttributeValue::N(n) => AttrValue::N(n),
        AttributeValue::Bool(b) => AttrValue::Bool(b),
        AttributeValue::Ss(set) => AttrValue::Ss(set.into_iter().collect()),
        AttributeValue::L(list) => AttrValue::L(list.into_iter().map(from_sdk).collect()),
        AttributeValue::M(map) => AttrValue::M(item_from_sdk(map)),
        _ => AttrValue::Null,
    }
}

pub(super) fn item_from_sdk(item: HashMap<String, AttributeValue>) -> Item {
    item.into_iter().map(|(k, v)| (k, from_sdk(v))).collect()
}

/// DynamoDB's size of an item, as it counts towards the 400 KB limit: attribute names plus
/// values (numbers approximated by their text length, which never underestimates by much).
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &AttrValue) -> usize {
    match value {
        AttrValue::S(s) | AttrValue::N(s) => s.len(),
        AttrValue::Bool(_) | AttrValue::Null => 1,
        AttrValue::Ss(set) => set.iter().map(String::len).sum(),
        AttrValue::L(list) => 3 + list.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttrValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_the_sdk() {
        let item: Item = HashMap::from([
            ("s".to_owned(), AttrValue::S("x".into())),
            ("n".to_owned(), AttrValue::N("-1.5".into())),
            ("b".to_owned(), AttrValue::Bool(true)),
            (
                "ss".to_owned(),
                AttrValue::Ss(["a".to_owned(), "b".to_owned()].into()),
            ),
            ("l".to_owned(), AttrValue::L(vec![AttrValue::Null])),
            (
                "m".to_owned(),
                AttrValue::M(HashMap::from([("k".to_owned(), AttrValue::S("v".into()))])),
            ),
        ]);
        assert_eq!(item_from_sdk(item_to_sdk(&item)), item);
    }

    #[test]
    fn size_counts_names_and_values() {
        let item: Item = HashMap::from([("name".to_owned(), AttrValue::S("Bessie".into()))]);
        assert_eq!(item_size(&item), 10);
    }
}
