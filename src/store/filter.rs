//! Filters on a node's or an edge's stored fields, with AppSync's operators (`eq`, `ne`, `lt`,
//! `le`, `gt`, `ge`, `contains`, `notContains`, `beginsWith`, `in`, `notIn`, `between`,
//! `attributeExists`, `attributeType`, `size`) and `and`/`or`/`not`: evaluated here on an item (what a subscription
//! checks before it resolves an event), or written as a DynamoDB condition expression for
//! DynamoDB to evaluate on the stored item (a write's condition).
//!
//! Comparisons follow DynamoDB's: numbers as numbers, strings by their bytes, booleans only
//! equal or not; values of different types are never equal and never ordered. An attribute the
//! item lacks satisfies `ne`, `notContains` and `notIn` only. A test runs each operator both
//! ways, here and in the embedded store, and checks they agree.

use std::cmp::Ordering;
use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{AttrValue, Item, to_sdk};
use crate::keys::TYPENAME;

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
    /// The attribute's size (a string's length in UTF-16 code units, a set's, list's or map's
    /// elements) passes the comparison (`Eq`…`Between` of numbers); an attribute without a
    /// size (a number, a boolean, none) is compared as a missing one.
    Size(Box<Test>),
    /// The attribute is of DynamoDB's type (`S`, `N`, `BOOL`, `NULL`, `L`, `M`, `SS`, `NS`,
    /// `B`, `BS`).
    Type(String),
}

impl Filter {
    /// The attributes the filter tests.
    pub fn fields(&self) -> std::collections::BTreeSet<&str> {
        let mut fields = std::collections::BTreeSet::new();
        let mut stack = vec![self];
        while let Some(filter) = stack.pop() {
            match filter {
                Filter::All(filters) | Filter::Any(filters) => stack.extend(filters),
                Filter::Not(filter) => stack.push(filter),
                Filter::Field { field, .. } => {
                    fields.insert(field.as_str());
                }
            }
        }
        fields
    }

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

impl Filter {
    /// The filter as a DynamoDB expression; its attribute names and values go into `names` and
    /// `values` under placeholders that start with `prefix`.
    pub(super) fn expression(
        &self,
        prefix: &str,
        names: &mut HashMap<String, String>,
        values: &mut HashMap<String, AttributeValue>,
    ) -> String {
        let mut expression = Expression {
            prefix,
            names,
            values,
        };
        expression.of(self)
    }
}

/// What DynamoDB takes in one expression: values in one `IN`, the expression's length (with
/// its placeholders), and operators and functions.
const MAX_IN_VALUES: usize = 100;
const MAX_EXPRESSION_BYTES: usize = 4096;
const MAX_OPERATORS: usize = 300;
/// Room for the clauses a write adds to a condition (`#a0 = :v0 AND `, and more).
const OWN_CLAUSES_BYTES: usize = 64;
/// Room for each further clause of a write's own: `(attribute_not_exists(#a12) OR #a12 = :v12)
/// AND `, a function and three operators.
const OWN_CLAUSE_BYTES_EACH: usize = 56;
const OWN_CLAUSE_OPERATORS_EACH: usize = 4;

impl Filter {
    /// Why DynamoDB would refuse the filter as a condition expression, if it would.
    pub fn beyond_limits(&self) -> Option<String> {
        self.beyond_limits_beside(0)
    }

    /// The same, beside `clauses` more clauses of the write's own (a delete's edge counts, each
    /// `(attribute_not_exists(#a9) OR #a9 = :v9)` at most).
    pub fn beyond_limits_beside(&self, clauses: usize) -> Option<String> {
        let (mut names, mut values) = (HashMap::new(), HashMap::new());
        let text = self.expression("c0_", &mut names, &mut values);
        // The write's own clauses (its version, and `clauses`) go in front of it.
        let length = text.len() + OWN_CLAUSES_BYTES + clauses * OWN_CLAUSE_BYTES_EACH;
        if length > MAX_EXPRESSION_BYTES {
            return Some(format!(
                "too large: it makes an expression of {length} bytes, and DynamoDB takes at \
                 most {MAX_EXPRESSION_BYTES}"
            ));
        }
        let operators = self.operators() + clauses * OWN_CLAUSE_OPERATORS_EACH;
        if operators > MAX_OPERATORS {
            return Some(format!(
                "too large: it has {operators} operators, and DynamoDB takes at most \
                 {MAX_OPERATORS}"
            ));
        }
        self.longest_in().filter(|n| *n > MAX_IN_VALUES).map(|n| {
            format!("an in or notIn lists {n} values; DynamoDB takes at most {MAX_IN_VALUES}")
        })
    }

    /// Its operators and functions, as DynamoDB counts them (about).
    fn operators(&self) -> usize {
        match self {
            Filter::All(filters) | Filter::Any(filters) => {
                filters.len() + filters.iter().map(Filter::operators).sum::<usize>()
            }
            Filter::Not(filter) => 1 + filter.operators(),
            Filter::Field { test, .. } => match test {
                Test::NotContains(_) | Test::NotIn(_) | Test::Size(_) => 2,
                _ => 1,
            },
        }
    }

    fn longest_in(&self) -> Option<usize> {
        match self {
            Filter::All(filters) | Filter::Any(filters) => {
                filters.iter().filter_map(Filter::longest_in).max()
            }
            Filter::Not(filter) => filter.longest_in(),
            Filter::Field {
                test: Test::In(values) | Test::NotIn(values),
                ..
            } => Some(values.len()),
            Filter::Field { .. } => None,
        }
    }
}

/// A filter being written as an expression.
struct Expression<'a> {
    prefix: &'a str,
    names: &'a mut HashMap<String, String>,
    values: &'a mut HashMap<String, AttributeValue>,
}

impl Expression<'_> {
    fn of(&mut self, filter: &Filter) -> String {
        // An empty `and` always holds and an empty `or` never does, said of `__typename`,
        // which every item has (a Query's filter may not name the key it reads by).
        let always = |this: &mut Self, holds: bool| {
            let pk = this.name(TYPENAME);
            if holds {
                format!("(attribute_exists({pk}) OR attribute_not_exists({pk}))")
            } else {
                format!("(attribute_exists({pk}) AND attribute_not_exists({pk}))")
            }
        };
        match filter {
            Filter::All(filters) if filters.is_empty() => always(self, true),
            Filter::Any(filters) if filters.is_empty() => always(self, false),
            // DynamoDB refuses parentheses around parentheses.
            Filter::All(filters) | Filter::Any(filters) if filters.len() == 1 => {
                self.of(&filters[0])
            }
            Filter::All(filters) => self.joined(filters, " AND "),
            Filter::Any(filters) => self.joined(filters, " OR "),
            Filter::Not(filter) => format!("(NOT {})", self.of(filter)),
            Filter::Field { field, test } => self.test(field, test),
        }
    }

    fn joined(&mut self, filters: &[Filter], operator: &str) -> String {
        let parts: Vec<String> = filters.iter().map(|filter| self.of(filter)).collect();
        format!("({})", parts.join(operator))
    }

    fn test(&mut self, field: &str, test: &Test) -> String {
        // No value can be in an empty list; DynamoDB refuses `IN ()`.
        match test {
            Test::In(values) if values.is_empty() => return self.of(&Filter::Any(Vec::new())),
            Test::NotIn(values) if values.is_empty() => return self.of(&Filter::All(Vec::new())),
            _ => {}
        }
        let a = self.name(field);
        match test {
            Test::Size(test) => self.compared(&format!("size({a})"), test),
            Test::Type(kind) => {
                format!(
                    "attribute_type({a}, {})",
                    self.value(&AttrValue::S(kind.clone()))
                )
            }
            test => self.compared(&a, test),
        }
    }

    /// `test` of the operand `a` (an attribute's placeholder, or `size(...)` of one).
    fn compared(&mut self, a: &str, test: &Test) -> String {
        let compare = |this: &mut Self, operator: &str, value: &AttrValue| {
            format!("{a} {operator} {}", this.value(value))
        };
        match test {
            Test::Eq(value) => compare(self, "=", value),
            Test::Ne(value) => compare(self, "<>", value),
            Test::Lt(value) => compare(self, "<", value),
            Test::Le(value) => compare(self, "<=", value),
            Test::Gt(value) => compare(self, ">", value),
            Test::Ge(value) => compare(self, ">=", value),
            Test::Contains(value) => format!("contains({a}, {})", self.value(value)),
            Test::NotContains(value) => format!("(NOT contains({a}, {}))", self.value(value)),
            Test::BeginsWith(prefix) => {
                format!(
                    "begins_with({a}, {})",
                    self.value(&AttrValue::S(prefix.clone()))
                )
            }
            Test::In(values) => format!("{a} IN ({})", self.values(values)),
            Test::NotIn(values) => format!("(NOT {a} IN ({}))", self.values(values)),
            Test::Between(low, high) => {
                format!("{a} BETWEEN {} AND {}", self.value(low), self.value(high))
            }
            Test::Exists(true) => format!("attribute_exists({a})"),
            Test::Exists(false) => format!("attribute_not_exists({a})"),
            // Made by `test`, never nested.
            Test::Size(_) | Test::Type(_) => unreachable!("size and type are tests of a field"),
        }
    }

    /// The placeholder of an attribute name, one per name.
    fn name(&mut self, attribute: &str) -> String {
        if let Some((placeholder, _)) = self.names.iter().find(|(_, name)| *name == attribute) {
            return placeholder.clone();
        }
        let placeholder = format!("#{}{}", self.prefix, self.names.len());
        self.names.insert(placeholder.clone(), attribute.to_owned());
        placeholder
    }

    /// A new placeholder for a value.
    fn value(&mut self, value: &AttrValue) -> String {
        let placeholder = format!(":{}{}", self.prefix, self.values.len());
        self.values.insert(placeholder.clone(), to_sdk(value));
        placeholder
    }

    fn values(&mut self, values: &[AttrValue]) -> String {
        let placeholders: Vec<String> = values.iter().map(|value| self.value(value)).collect();
        placeholders.join(", ")
    }
}

impl Test {
    fn holds(&self, value: Option<&AttrValue>) -> bool {
        let equal = |other: &AttrValue| {
            value.and_then(|value| compare(value, other)) == Some(Ordering::Equal)
        };
        // Booleans are equal or not, never ordered: not even `true <= true`.
        let order = |other: &AttrValue| {
            value
                .and_then(|value| compare(value, other))
                .filter(|_| !matches!(other, AttrValue::Bool(_)))
        };
        match self {
            Test::Eq(other) => equal(other),
            Test::Ne(other) => !equal(other),
            Test::Lt(other) => order(other) == Some(Ordering::Less),
            Test::Le(other) => matches!(order(other), Some(Ordering::Less | Ordering::Equal)),
            Test::Gt(other) => order(other) == Some(Ordering::Greater),
            Test::Ge(other) => matches!(order(other), Some(Ordering::Greater | Ordering::Equal)),
            Test::Contains(other) => contains(value, other),
            Test::NotContains(other) => !contains(value, other),
            Test::BeginsWith(prefix) => {
                matches!(value, Some(AttrValue::S(s)) if s.starts_with(prefix.as_str()))
            }
            Test::In(values) => values.iter().any(equal),
            Test::NotIn(values) => !values.iter().any(equal),
            Test::Between(low, high) => {
                matches!(order(low), Some(Ordering::Greater | Ordering::Equal))
                    && matches!(order(high), Some(Ordering::Less | Ordering::Equal))
            }
            Test::Exists(wanted) => value.is_some() == *wanted,
            // A value without a size is compared as a missing one: only `ne` holds.
            Test::Size(test) => test.holds(size(value).as_ref()),
            Test::Type(kind) => value.is_some_and(|value| type_code(value) == kind),
        }
    }
}

/// What DynamoDB's `size()` answers of a value, if it has a size.
fn size(value: Option<&AttrValue>) -> Option<AttrValue> {
    let size = match value? {
        AttrValue::S(text) => text.encode_utf16().count(),
        AttrValue::Ss(set) => set.len(),
        AttrValue::L(list) => list.len(),
        AttrValue::M(map) => map.len(),
        AttrValue::N(_) | AttrValue::Bool(_) | AttrValue::Null => return None,
    };
    Some(AttrValue::N(size.to_string()))
}

/// DynamoDB's name of a value's type.
fn type_code(value: &AttrValue) -> &'static str {
    match value {
        AttrValue::S(_) => "S",
        AttrValue::N(_) => "N",
        AttrValue::Bool(_) => "BOOL",
        AttrValue::Ss(_) => "SS",
        AttrValue::L(_) => "L",
        AttrValue::M(_) => "M",
        AttrValue::Null => "NULL",
    }
}

/// How two stored values compare, when they can, as DynamoDB compares them: text by its bytes,
/// numbers as numbers, booleans only as equal or not.
pub fn compare(value: &AttrValue, other: &AttrValue) -> Option<Ordering> {
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
        Item::from_iter([
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
        assert!(
            !holds("milked", Test::Le(AttrValue::Bool(true))),
            "never ordered"
        );
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
    fn size_and_type_read_as_dynamodb_reads_them() {
        let cow = cow();
        let holds = |field: &str, test: Test| on(field, test).matches(&cow);
        assert!(holds("name", Test::Size(Box::new(Test::Eq(n("5"))))));
        assert!(holds(
            "name",
            Test::Size(Box::new(Test::Between(n("1"), n("5"))))
        ));
        // A number has no size, and neither has a missing attribute: compared as missing, only
        // `ne` holds.
        assert!(holds("age", Test::Size(Box::new(Test::Ne(n("1"))))));
        assert!(!holds("age", Test::Size(Box::new(Test::Ge(n("0"))))));
        assert!(holds("color", Test::Size(Box::new(Test::Ne(n("1"))))));
        assert!(!holds("color", Test::Size(Box::new(Test::Eq(n("0"))))));
        assert!(holds("age", Test::Type("N".to_owned())));
        assert!(holds("milked", Test::Type("BOOL".to_owned())));
        assert!(!holds("name", Test::Type("N".to_owned())));
        assert!(!holds("color", Test::Type("S".to_owned())));
        let mut emoji = Item::default();
        emoji.insert("name".to_owned(), s("🐄"));
        assert!(on("name", Test::Size(Box::new(Test::Eq(n("2"))))).matches(&emoji));
    }

    #[test]
    fn attribute_exists_tells_a_present_field_from_a_missing_one() {
        let cow = cow();
        assert!(on("name", Test::Exists(true)).matches(&cow));
        assert!(!on("name", Test::Exists(false)).matches(&cow));
        assert!(on("color", Test::Exists(false)).matches(&cow));
        assert!(!on("color", Test::Exists(true)).matches(&cow));
    }

    /// Every operator, on present, missing and differently typed attributes, and `and`, `or`,
    /// `not` (empty ones too): the embedded store, evaluating the written expression on the
    /// stored item, agrees with [`Filter::matches`] every time.
    #[tokio::test]
    async fn dynamodb_evaluates_each_written_filter_as_matches_does() {
        use super::super::client::loopback_store;
        use super::super::error::StoreError;
        use super::super::key::Key;
        use super::super::write::{Clause, Write};

        let store = loopback_store("filters").await;
        let mut item = cow();
        item.insert("PK".into(), s("NODE#cow"));
        item.insert("SK".into(), s("NODE#cow"));
        item.insert(
            "tags".into(),
            AttrValue::Ss(["brown".to_owned(), "calm".to_owned()].into()),
        );
        let write = Write::Put {
            item: item.clone(),
            condition: Vec::new(),
        };
        store.transact_write(vec![write]).await.expect("a write");
        let mut filters = Vec::new();
        for (field, value) in [
            ("name", s("Daisy")),
            ("name", s("Bella")),
            ("name", n("4")),
            ("age", n("4")),
            ("age", n("10")),
            ("age", n("3.5")),
            ("age", s("4")),
            ("milked", AttrValue::Bool(true)),
            ("color", s("brown")),
            ("tags", s("calm")),
        ] {
            for test in [
                Test::Eq(value.clone()),
                Test::Ne(value.clone()),
                Test::Lt(value.clone()),
                Test::Le(value.clone()),
                Test::Gt(value.clone()),
                Test::Ge(value.clone()),
                Test::Contains(value.clone()),
                Test::NotContains(value.clone()),
                Test::In(vec![value.clone(), s("x")]),
                Test::NotIn(vec![value.clone()]),
                Test::Between(value.clone(), value.clone()),
            ] {
                filters.push(on(field, test));
            }
        }
        for field in ["name", "color", "tags"] {
            filters.push(on(field, Test::BeginsWith("Da".into())));
            filters.push(on(field, Test::Exists(true)));
            filters.push(on(field, Test::Exists(false)));
            filters.push(on(field, Test::In(Vec::new())));
            filters.push(on(field, Test::NotIn(Vec::new())));
        }
        filters.push(on("age", Test::Between(n("1"), n("9"))));
        // Sizes (of a string, a set, a number that has none, a missing attribute) and types.
        for field in ["name", "tags", "age", "color"] {
            for size in [n("2"), n("5")] {
                for test in [
                    Test::Eq(size.clone()),
                    Test::Ne(size.clone()),
                    Test::Lt(size.clone()),
                    Test::Ge(size.clone()),
                    Test::Between(n("1"), size.clone()),
                ] {
                    filters.push(on(field, Test::Size(Box::new(test))));
                }
            }
            for kind in ["S", "N", "BOOL", "SS", "NULL"] {
                filters.push(on(field, Test::Type(kind.to_owned())));
            }
        }
        filters.push(on("milked", Test::Type("BOOL".to_owned())));
        let daisy = on("name", Test::Eq(s("Daisy")));
        let old = on("age", Test::Gt(n("10")));
        filters.extend([
            Filter::All(vec![daisy.clone(), old.clone()]),
            Filter::Any(vec![daisy.clone(), old.clone()]),
            Filter::Not(Box::new(daisy.clone())),
            Filter::All(Vec::new()),
            Filter::Any(Vec::new()),
            Filter::Not(Box::new(Filter::Any(Vec::new()))),
            Filter::Any(vec![Filter::All(vec![daisy, Filter::Not(Box::new(old))])]),
        ]);
        let mut held = 0;
        for filter in &filters {
            let check = Write::Check {
                key: Key::same("NODE#cow".to_owned()),
                condition: vec![Clause::Holds(filter.clone())],
            };
            let dynamodb = match store.transact_write(vec![check]).await {
                Ok(()) => true,
                Err(StoreError::ConditionFailed { .. }) => false,
                Err(error) => panic!("{filter:?} was refused: {error:?}"),
            };
            assert_eq!(dynamodb, filter.matches(&item), "{filter:?}");
            held += usize::from(dynamodb);
        }
        assert!(
            held > 20 && held < filters.len() - 20,
            "{held} of {}",
            filters.len()
        );
    }

    /// A filter whose own expression fits DynamoDB's 4 KB, but not with the write's version
    /// clause in front of it, is refused before it is sent.
    #[test]
    fn the_limit_leaves_room_for_the_writes_own_clauses() {
        let n_of = |k: usize| n(&k.to_string());
        let mut tests = Vec::new();
        let length = |tests: &Vec<Filter>| {
            let (mut names, mut values) = (HashMap::new(), HashMap::new());
            Filter::Any(tests.clone())
                .expression("c0_", &mut names, &mut values)
                .len()
        };
        // Long `in` lists, as few operators as can make 4 KB.
        let hundred: Vec<AttrValue> = (0..100).map(n_of).collect();
        while length(&tests) + 1000 <= MAX_EXPRESSION_BYTES {
            tests.push(on("name", Test::In(hundred.clone())));
        }
        while length(&tests) + OWN_CLAUSES_BYTES / 2 <= MAX_EXPRESSION_BYTES {
            tests.push(on("name", Test::Eq(s("x"))));
        }
        assert!(length(&tests) <= MAX_EXPRESSION_BYTES);
        let filter = Filter::Any(tests);
        assert!(
            filter.operators() < MAX_OPERATORS,
            "refused for its length alone"
        );
        let why = filter.beyond_limits().expect("refused");
        assert!(why.contains("bytes"), "{why}");
    }

    #[test]
    fn a_delete_keeps_room_for_its_edge_counts() {
        let eq = |n: usize| Filter::Field {
            field: format!("f{n}"),
            test: Test::Eq(AttrValue::S("x".into())),
        };
        // As many clauses as fit beside the version alone, then two edge counts more.
        let mut tests = vec![eq(0)];
        while Filter::All(tests.clone()).beyond_limits().is_none() {
            tests.push(eq(tests.len()));
        }
        tests.pop();
        let filter = Filter::All(tests);
        assert!(filter.beyond_limits().is_none());
        assert!(filter.beyond_limits_beside(2).is_some());
    }
}
