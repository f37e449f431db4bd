//! Filters on a node's or an edge's stored fields, with AppSync's operators (`eq`, `ne`, `lt`,
//! `le`, `gt`, `ge`, `contains`, `notContains`, `beginsWith`, `in`, `notIn`, `between`,
//! `attributeExists`) and `and`/`or`/`not`, evaluated on an item: what a subscription checks
//! before it resolves an event, and what a write's condition checks on the node it replaces.
//!
//! Comparisons follow DynamoDB's: numbers as numbers, strings by their bytes, booleans only
//! equal or not; values of different types are never equal and never ordered. An attribute the
//! item lacks satisfies `ne`, `notContains` and `notIn` only.

use std::cmp::Ordering;

use crate::store::{AttrValue, Item};

/// A condition on an item.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Every one holds (an empty list always holds).
    All(Vec<Filter>),
    /// One at least holds (an empty list never holds).
    Any(Vec<Filter>),
    /// It does not hold.
    Not(Box<Filter>),
    /// The attribute `field` satisfies `test`.
    Field { field: String, test: Test },
}

/// What one attribute is tested for.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    Eq(AttrValue),
    Ne(AttrValue),
    Lt(AttrValue),
    Le(AttrValue),
    Gt(AttrValue),
    Ge(AttrValue),
    /// A substring of a string.
    Contains(AttrValue),
    NotContains(AttrValue),
    BeginsWith(String),
    In(Vec<AttrValue>),
    NotIn(Vec<AttrValue>),
    /// Between both bounds, included.
    Between(AttrValue, AttrValue),
    /// The item has the attribute (`true`) or lacks it (`false`).
    Exists(bool),
}

impl Filter {
    /// Whether `item` satisfies the filter.
    pub fn matches(&self, item: &Item) -> bool {
        match self {
            Filter::All(filters) => filters.iter().all(|filter| filter.matches(item)),
            Filter::Any(filters) => filters.iter().any(|filter| filter.matches(item)),
            Filter::Not(filter) => !filter.matches(item),
            Filter::Field { field, test } => test.holds(item.get(field)),
        }
    }
}

impl Test {
    fn holds(&self, value: Option<&AttrValue>) -> bool {
        let order = |other: &AttrValue| value.and_then(|value| compare(value, other));
        match self {
            Test::Eq(other) => order(other) == Some(Ordering::Equal),
            Test::Ne(other) => order(other) != Some(Ordering::Equal),
            Test::Lt(other) => order(other) == Some(Ordering::Less),
            Test::Le(other) => matches!(order(other), Some(Ordering::Less | Ordering::Equal)),
            Test::Gt(other) => order(other) == Some(Ordering::Greater),
            Test::Ge(other) => matches!(order(other), Some(Ordering::Greater | Ordering::Equal)),
            Test::Contains(other) => contains(value, other),
            Test::NotContains(other) => !contains(value, other),
            Test::BeginsWith(prefix) => {
                matches!(value, Some(AttrValue::S(s)) if s.starts_with(prefix.as_str()))
            }
            Test::In(values) => values
                .iter()
                .any(|other| order(other) == Some(Ordering::Equal)),
            Test::NotIn(values) => values
                .iter()
                .all(|other| order(other) != Some(Ordering::Equal)),
            Test::Between(low, high) => {
                matches!(order(low), Some(Ordering::Greater | Ordering::Equal))
                    && matches!(order(high), Some(Ordering::Less | Ordering::Equal))
            }
            Test::Exists(wanted) => value.is_some() == *wanted,
        }
    }
}

/// How two stored values compare, when they can.
fn compare(value: &AttrValue, other: &AttrValue) -> Option<Ordering> {
    match (value, other) {
        (AttrValue::S(a), AttrValue::S(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (AttrValue::N(a), AttrValue::N(b)) => {
            let (a, b) = (a.parse::<f64>().ok()?, b.parse::<f64>().ok()?);
            a.partial_cmp(&b)
        }
        (AttrValue::Bool(a), AttrValue::Bool(b)) => (a == b).then_some(Ordering::Equal),
        _ => None,
    }
}

fn contains(value: Option<&AttrValue>, other: &AttrValue) -> bool {
    match (value, other) {
        (Some(AttrValue::S(s)), AttrValue::S(part)) => s.contains(part.as_str()),
        (Some(AttrValue::Ss(set)), AttrValue::S(member)) => set.contains(member),
        (Some(AttrValue::L(list)), other) => list
            .iter()
            .any(|value| compare(value, other) == Some(Ordering::Equal)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cow() -> Item {
        Item::from([
            ("name".to_owned(), AttrValue::S("Daisy".into())),
            ("age".to_owned(), AttrValue::N("4".into())),
            ("milked".to_owned(), AttrValue::Bool(true)),
        ])
    }

    fn on(field: &str, test: Test) -> Filter {
        Filter::Field {
            field: field.into(),
            test,
        }
    }

    fn s(text: &str) -> AttrValue {
        AttrValue::S(text.into())
    }

    fn n(number: &str) -> AttrValue {
        AttrValue::N(number.into())
    }

    #[test]
    fn each_operator_compares_as_dynamodb_does() {
        let cow = cow();
        let holds = |field: &str, test: Test| on(field, test).matches(&cow);
        assert!(holds("name", Test::Eq(s("Daisy"))));
        assert!(!holds("name", Test::Eq(s("daisy"))));
        assert!(holds("name", Test::Ne(s("Bella"))));
        assert!(holds("age", Test::Lt(n("10"))), "numbers, not text: 4 < 10");
        assert!(holds("age", Test::Le(n("4.0"))));
        assert!(holds("age", Test::Gt(n("3.5"))));
        assert!(!holds("age", Test::Ge(n("5"))));
        assert!(holds("name", Test::Contains(s("ais"))));
        assert!(holds("name", Test::NotContains(s("z"))));
        assert!(holds("name", Test::BeginsWith("Da".into())));
        assert!(holds("age", Test::In(vec![n("3"), n("4")])));
        assert!(holds("age", Test::NotIn(vec![n("3"), n("5")])));
        assert!(holds("age", Test::Between(n("4"), n("6"))));
        assert!(!holds("age", Test::Between(n("5"), n("6"))));
        assert!(holds("milked", Test::Eq(AttrValue::Bool(true))));
        assert!(!holds("milked", Test::Lt(AttrValue::Bool(true))));
    }

    #[test]
    fn values_of_another_type_never_match_and_missing_ones_only_negations() {
        let cow = cow();
        assert!(!on("age", Test::Eq(s("4"))).matches(&cow));
        assert!(on("age", Test::Ne(s("4"))).matches(&cow));
        assert!(!on("color", Test::Eq(s("brown"))).matches(&cow));
        assert!(on("color", Test::Ne(s("brown"))).matches(&cow));
        assert!(on("color", Test::NotIn(vec![s("brown")])).matches(&cow));
        assert!(!on("color", Test::BeginsWith(String::new())).matches(&cow));
    }

    #[test]
    fn and_or_combine() {
        let cow = cow();
        let daisy = on("name", Test::Eq(s("Daisy")));
        let old = on("age", Test::Gt(n("10")));
        assert!(!Filter::All(vec![daisy.clone(), old.clone()]).matches(&cow));
        assert!(Filter::Any(vec![daisy, old]).matches(&cow));
        assert!(Filter::All(vec![]).matches(&cow));
        assert!(!Filter::Any(vec![]).matches(&cow));
        let not_daisy = Filter::Not(Box::new(on("name", Test::Eq(s("Daisy")))));
        assert!(!not_daisy.matches(&cow));
    }

    #[test]
    fn attribute_exists_tells_a_present_field_from_a_missing_one() {
        let cow = cow();
        assert!(on("name", Test::Exists(true)).matches(&cow));
        assert!(!on("name", Test::Exists(false)).matches(&cow));
        assert!(on("color", Test::Exists(false)).matches(&cow));
        assert!(!on("color", Test::Exists(true)).matches(&cow));
    }
}
