//! Conditional writes: the vocabulary of conditions tablegraph needs, and their translation into
//! DynamoDB condition expressions.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsInput,
};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update,
};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextMut;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

use super::calls::total_capacity;
use super::error::{StoreError, classify};
use super::filter::Filter;
use super::item::{AttrValue, Item, item_to_sdk, to_sdk};
use super::key::{Key, key_map};
use crate::keys::TYPENAME;

/// One write of an all-or-nothing group.
#[derive(Debug, Clone)]
pub enum Write {
    /// Writes the whole item (it carries its own `PK` and `SK`).
    Put {
        item: Item,
        condition: Vec<Clause>,
    },
    Delete {
        key: Key,
        condition: Vec<Clause>,
    },
    /// Changes some attributes of the item and leaves the others as they are, so that updates
    /// of different attributes (and additions to one) commute.
    Update {
        key: Key,
        changes: Changes,
        condition: Vec<Clause>,
    },
    /// Adds `counts` to the attributes of a counter item (one it makes, with `__typename`, if
    /// missing), unconditionally: additions commute.
    Tally {
        key: Key,
        typename: String,
        counts: Vec<(String, i64)>,
    },
    /// Writes nothing; fails the group unless the condition holds.
    Check {
        key: Key,
        condition: Vec<Clause>,
    },
}

impl Write {
    /// An update of the item `key` by `changes` on `condition`; with nothing to change (which
    /// DynamoDB refuses as an update), a check of `condition` alone.
    pub fn update(key: Key, changes: Changes, condition: Vec<Clause>) -> Write {
        if changes.is_empty() {
            return Write::Check { key, condition };
        }
        Write::Update {
            key,
            changes,
            condition,
        }
    }

    /// The key of the item the write is about.
    pub fn key(&self) -> Key {
        match self {
            Write::Put { item, .. } => {
                let text = |name: &str| {
                    item.get(name)
                        .and_then(AttrValue::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                Key {
                    pk: text("PK"),
                    sk: text("SK"),
                }
            }
            Write::Delete { key, .. }
            | Write::Update { key, .. }
            | Write::Check { key, .. }
            | Write::Tally { key, .. } => key.clone(),
        }
    }

    /// The clauses its condition joins with AND; `None` for a write without one.
    pub fn condition_mut(&mut self) -> Option<&mut Vec<Clause>> {
        match self {
            Write::Put { condition, .. }
            | Write::Delete { condition, .. }
            | Write::Update { condition, .. }
            | Write::Check { condition, .. } => Some(condition),
            Write::Tally { .. } => None,
        }
    }
}

/// What an update changes, in DynamoDB's four update actions. An attribute is named by at most
/// one action (DynamoDB refuses overlapping paths in one update expression).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    pub set: Vec<(String, AttrValue)>,
    pub remove: Vec<String>,
    /// Numbers added to attributes (negative to take away); a missing attribute counts from 0.
    pub add: Vec<(String, i64)>,
    /// Strings put into a String Set attribute (made when missing).
    pub add_to_set: Vec<(String, Vec<String>)>,
    /// Strings taken out of a String Set attribute (removed when it empties).
    pub take_from_set: Vec<(String, Vec<String>)>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
            && self.remove.is_empty()
            && self.add.is_empty()
            && self.add_to_set.is_empty()
            && self.take_from_set.is_empty()
    }

    /// Whether it only adds to numbers: it commutes with any other addition and reads nothing.
    pub fn only_adds_numbers(&self) -> bool {
        self.set.is_empty()
            && self.remove.is_empty()
            && self.add_to_set.is_empty()
            && self.take_from_set.is_empty()
    }

    /// Whether it only adds to numbers and sets or takes from sets (it replaces no value).
    pub fn only_adds_and_takes(&self) -> bool {
        self.set.is_empty() && self.remove.is_empty()
    }

    /// The attributes it names, each once per action that names it.
    fn attributes(&self) -> impl Iterator<Item = &str> {
        self.set
            .iter()
            .map(|(name, _)| name.as_str())
            .chain(self.remove.iter().map(String::as_str))
            .chain(self.add.iter().map(|(name, _)| name.as_str()))
            .chain(self.add_to_set.iter().map(|(name, _)| name.as_str()))
            .chain(self.take_from_set.iter().map(|(name, _)| name.as_str()))
    }

    /// Both changes as one update, if one update expression can hold them: numbers added to
    /// one attribute add up, strings put into (or taken from) one set join; `None` when an
    /// attribute is set or removed by both, or named by two actions. (Two writes that each
    /// replace a value read it before the other: they are two changes, not one.)
    pub fn merged(mut self, other: &Changes) -> Option<Changes> {
        self.set.extend(other.set.iter().cloned());
        self.remove.extend(other.remove.iter().cloned());
        for (name, delta) in &other.add {
            match self.add.iter_mut().find(|(added, _)| added == name) {
                Some((_, total)) => *total += delta,
                None => self.add.push((name.clone(), *delta)),
            }
        }
        for (mine, theirs) in [
            (&mut self.add_to_set, &other.add_to_set),
            (&mut self.take_from_set, &other.take_from_set),
        ] {
            for (name, entries) in theirs {
                let at = match mine.iter().position(|(set, _)| set == name) {
                    Some(at) => at,
                    None => {
                        mine.push((name.clone(), Vec::new()));
                        mine.len() - 1
                    }
                };
                for entry in entries {
                    if !mine[at].1.contains(entry) {
                        mine[at].1.push(entry.clone());
                    }
                }
            }
        }
        let mut named = std::collections::HashSet::new();
        let apart = self.attributes().all(|name| named.insert(name));
        apart.then_some(self)
    }

    /// `item` as the update leaves it.
    pub fn apply(&self, item: &mut Item) {
        for (name, value) in &self.set {
            item.insert(name.clone(), value.clone());
        }
        for name in &self.remove {
            item.remove(name);
        }
        for (name, delta) in &self.add {
            let total = item.get(name).and_then(AttrValue::as_i64).unwrap_or(0) + delta;
            item.insert(name.clone(), AttrValue::N(total.to_string()));
        }
        for (name, entries) in &self.add_to_set {
            let mut set = match item.get(name) {
                Some(AttrValue::Ss(set)) => set.clone(),
                _ => super::item::StringSet::new(),
            };
            set.extend(entries.iter().cloned());
            item.insert(name.clone(), AttrValue::Ss(set));
        }
        for (name, entries) in &self.take_from_set {
            if let Some(AttrValue::Ss(set)) = item.get(name) {
                let mut left = set.clone();
                left.retain(|entry| !entries.contains(entry));
                if left.is_empty() {
                    item.remove(name);
                } else {
                    item.insert(name.clone(), AttrValue::Ss(left));
                }
            }
        }
    }

    /// The update expression, with its names and values added to `names` and `values`.
    fn expression(&self, names: &mut NameMap, values: &mut ValueMap) -> String {
        let mut n = 0;
        let mut next = |name: &str, names: &mut NameMap| {
            n += 1;
            names.insert(format!("#u{n}"), name.to_owned());
            n
        };
        let mut actions = Vec::new();
        let mut set = Vec::new();
        for (name, value) in &self.set {
            let n = next(name, names);
            values.insert(format!(":u{n}"), to_sdk(value));
            set.push(format!("#u{n} = :u{n}"));
        }
        let remove: Vec<String> = self
            .remove
            .iter()
            .map(|name| format!("#u{}", next(name, names)))
            .collect();
        let mut add = Vec::new();
        for (name, delta) in &self.add {
            let n = next(name, names);
            values.insert(format!(":u{n}"), AttributeValue::N(delta.to_string()));
            add.push(format!("#u{n} :u{n}"));
        }
        let mut take = Vec::new();
        for (sets, into) in [
            (&self.add_to_set, &mut add),
            (&self.take_from_set, &mut take),
        ] {
            // DynamoDB refuses an empty set.
            for (name, entries) in sets.iter().filter(|(_, entries)| !entries.is_empty()) {
                let n = next(name, names);
                values.insert(format!(":u{n}"), AttributeValue::Ss(entries.clone()));
                into.push(format!("#u{n} :u{n}"));
            }
        }
        for (action, parts) in [
            ("SET", set),
            ("REMOVE", remove),
            ("ADD", add),
            ("DELETE", take),
        ] {
            if !parts.is_empty() {
                actions.push(format!("{action} {}", parts.join(", ")));
            }
        }
        actions.join(" ")
    }
}

/// A clause of a write's condition; clauses are joined with AND.
#[derive(Debug, Clone, PartialEq)]
pub enum Clause {
    NotExists,
    Exists,
    Equals(String, AttrValue),
    /// The item has no such attribute (or is missing).
    Missing(String),
    /// The number attribute is this count; a missing attribute counts as 0.
    Count(String, i64),
    /// The item is missing, or its attribute has this value.
    AbsentOrEquals(String, AttrValue),
    OneOf(String, Vec<AttrValue>),
    /// The stored item satisfies the filter.
    Holds(Filter),
}

struct Expression {
    text: String,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

type NameMap = HashMap<String, String>;
type ValueMap = HashMap<String, AttributeValue>;

/// The three optional parts every SDK builder with a condition takes.
fn condition_parts(clauses: &[Clause]) -> (Option<String>, Option<NameMap>, Option<ValueMap>) {
    match expression(clauses) {
        None => (None, None, None),
        Some(e) => {
            let values = (!e.values.is_empty()).then_some(e.values);
            (Some(e.text), Some(e.names), values)
        }
    }
}

fn expression(clauses: &[Clause]) -> Option<Expression> {
    if clauses.is_empty() {
        return None;
    }
    let mut names = HashMap::new();
    let mut values = HashMap::new();
    let mut parts = Vec::new();
    for (n, clause) in clauses.iter().enumerate() {
        match clause {
            Clause::NotExists => {
                names.insert("#PK".to_owned(), "PK".to_owned());
                parts.push("attribute_not_exists(#PK)".to_owned());
            }
            Clause::Exists => {
                names.insert("#PK".to_owned(), "PK".to_owned());
                parts.push("attribute_exists(#PK)".to_owned());
            }
            Clause::Equals(attribute, value) => {
                names.insert(format!("#a{n}"), attribute.clone());
                values.insert(format!(":v{n}"), to_sdk(value));
                parts.push(format!("#a{n} = :v{n}"));
            }
            Clause::Missing(attribute) => {
                names.insert(format!("#a{n}"), attribute.clone());
                parts.push(format!("attribute_not_exists(#a{n})"));
            }
            Clause::Count(attribute, count) => {
                names.insert(format!("#a{n}"), attribute.clone());
                values.insert(format!(":v{n}"), AttributeValue::N(count.to_string()));
                parts.push(if *count == 0 {
                    format!("(attribute_not_exists(#a{n}) OR #a{n} = :v{n})")
                } else {
                    format!("#a{n} = :v{n}")
                });
            }
            Clause::AbsentOrEquals(attribute, value) => {
                names.insert("#PK".to_owned(), "PK".to_owned());
                names.insert(format!("#a{n}"), attribute.clone());
                values.insert(format!(":v{n}"), to_sdk(value));
                parts.push(format!("(attribute_not_exists(#PK) OR #a{n} = :v{n})"));
            }
            Clause::OneOf(attribute, options) => {
                names.insert(format!("#a{n}"), attribute.clone());
                let placeholders: Vec<String> = options
                    .iter()
                    .enumerate()
                    .map(|(i, value)| {
                        values.insert(format!(":v{n}_{i}"), to_sdk(value));
                        format!(":v{n}_{i}")
                    })
                    .collect();
                parts.push(format!("#a{n} IN ({})", placeholders.join(", ")));
            }
            Clause::Holds(filter) => {
                parts.push(filter.expression(&format!("c{n}_"), &mut names, &mut values));
            }
        }
    }
    Some(Expression {
        text: parts.join(" AND "),
        names,
        values,
    })
}

/// Runs `writes` as one TransactWriteItems. Even a single write goes as a transaction: its
/// `token`, where answers can be lost, makes the store's retry after a lost answer idempotent,
/// so a write that committed is never applied twice or answered as a failed condition.
pub(super) async fn execute(
    client: &Client,
    table: &str,
    writes: &[Write],
    token: Option<&str>,
) -> Result<Option<f64>, StoreError> {
    if writes.is_empty() {
        return Ok(None);
    }
    let items = writes
        .iter()
        .map(|write| transact_item(table, write))
        .collect::<Result<Vec<_>, _>>()?;
    let request = client
        .transact_write_items()
        .set_transact_items(Some(items))
        .set_client_request_token(token.map(str::to_owned))
        .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total);
    let sent = match token {
        Some(_) => request.send().await,
        // The SDK fills in a token of its own where none is given; take it out again.
        None => request.customize().interceptor(NoClientToken).send().await,
    };
    sent.map(|output| total_capacity(output.consumed_capacity.as_deref()))
        .map_err(|error| {
            if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
                error.as_service_error()
            {
                return cancellation_error(cancelled.cancellation_reasons());
            }
            classify(error)
        })
}

/// Takes the client request token out of a TransactWriteItems, after the SDK put one in
/// (ClientRequestToken is an idempotency token in DynamoDB's model, which the SDK always fills):
/// for the store in this process, which loses no answers (`Store::connect_in_process`).
#[derive(Debug)]
struct NoClientToken;

impl Intercept for NoClientToken {
    fn name(&self) -> &'static str {
        "NoClientToken"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(input) = context
            .input_mut()
            .downcast_mut::<TransactWriteItemsInput>()
        {
            input.client_request_token = None;
        }
        Ok(())
    }
}

fn transact_item(table: &str, write: &Write) -> Result<TransactWriteItem, StoreError> {
    let build_error = |e: aws_sdk_dynamodb::error::BuildError| StoreError::Other(e.to_string());
    let item = match write {
        Write::Put { item, condition } => {
            let (text, names, values) = condition_parts(condition);
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(item_to_sdk(item)))
                .set_condition_expression(text)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .build()
                .map_err(build_error)?;
            TransactWriteItem::builder().put(put).build()
        }
        Write::Delete { key, condition } => {
            let (text, names, values) = condition_parts(condition);
            let delete = Delete::builder()
                .table_name(table)
                .set_key(Some(key_map(key)))
                .set_condition_expression(text)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .build()
                .map_err(build_error)?;
            TransactWriteItem::builder().delete(delete).build()
        }
        Write::Update {
            key,
            changes,
            condition,
        } => {
            if changes.is_empty() {
                return Err(StoreError::Other(
                    "an update that changes nothing".to_owned(),
                ));
            }
            let (text, names, values) = condition_parts(condition);
            let mut names = names.unwrap_or_default();
            let mut values = values.unwrap_or_default();
            let expression = changes.expression(&mut names, &mut values);
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(key_map(key)))
                .update_expression(expression)
                .set_condition_expression(text)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values((!values.is_empty()).then_some(values))
                .build()
                .map_err(build_error)?;
            TransactWriteItem::builder().update(update).build()
        }
        Write::Tally {
            key,
            typename,
            counts,
        } => {
            let mut names = HashMap::from([("#t".to_owned(), TYPENAME.to_owned())]);
            let mut values =
                HashMap::from([(":t".to_owned(), AttributeValue::S(typename.clone()))]);
            let mut added = Vec::new();
            for (n, (attribute, delta)) in counts.iter().enumerate() {
                names.insert(format!("#count{n}"), attribute.clone());
                values.insert(format!(":count{n}"), AttributeValue::N(delta.to_string()));
                added.push(format!("#count{n} :count{n}"));
            }
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(key_map(key)))
                .update_expression(format!("SET #t = :t ADD {}", added.join(", ")))
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .build()
                .map_err(build_error)?;
            TransactWriteItem::builder().update(update).build()
        }
        Write::Check { key, condition } => {
            let (text, names, values) = condition_parts(condition);
            let check = ConditionCheck::builder()
                .table_name(table)
                .set_key(Some(key_map(key)))
                .set_condition_expression(text)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .build()
                .map_err(build_error)?;
            TransactWriteItem::builder().condition_check(check).build()
        }
    };
    Ok(item)
}

/// Reads DynamoDB's per-item cancellation reasons: a failed condition wins (it is the caller's
/// answer), then conflicts and throttling (worth a retry).
fn cancellation_error(reasons: &[aws_sdk_dynamodb::types::CancellationReason]) -> StoreError {
    let code_at = |wanted: &str| reasons.iter().position(|r| r.code() == Some(wanted));
    if let Some(index) = code_at("ConditionalCheckFailed") {
        return StoreError::ConditionFailed { index };
    }
    if code_at("TransactionConflict").is_some() {
        return StoreError::TransactionConflict;
    }
    if code_at("ThrottlingError").is_some() || code_at("ProvisionedThroughputExceeded").is_some() {
        return StoreError::Throttled("transaction throttled".to_owned());
    }
    let codes: Vec<&str> = reasons.iter().filter_map(|r| r.code()).collect();
    StoreError::Validation(format!("transaction cancelled: {codes:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::CancellationReason;

    #[test]
    fn clauses_become_one_condition_expression() {
        let parts = condition_parts(&[
            Clause::Equals("version".into(), AttrValue::N("3".into())),
            Clause::OneOf(
                TYPENAME.into(),
                vec![AttrValue::S("Cow".into()), AttrValue::S("Chicken".into())],
            ),
            Clause::AbsentOrEquals("id".into(), AttrValue::S("x".into())),
        ]);
        assert_eq!(
            parts.0.as_deref(),
            Some(
                "#a0 = :v0 AND #a1 IN (:v1_0, :v1_1) AND (attribute_not_exists(#PK) OR #a2 = :v2)"
            )
        );
        let names = parts.1.expect("names");
        assert_eq!(names["#a1"], TYPENAME);
        assert_eq!(names["#PK"], "PK");
        assert_eq!(parts.2.expect("values").len(), 4);
        assert_eq!(condition_parts(&[Clause::NotExists]).2, None);
        assert_eq!(condition_parts(&[]).0, None);
    }

    #[test]
    fn a_cancelled_transaction_names_its_failed_condition() {
        let reason = |code: &str| CancellationReason::builder().code(code).build();
        let none = reason("None");
        assert!(matches!(
            cancellation_error(&[none.clone(), reason("ConditionalCheckFailed")]),
            StoreError::ConditionFailed { index: 1 }
        ));
        assert!(matches!(
            cancellation_error(&[reason("TransactionConflict"), none.clone()]),
            StoreError::TransactionConflict
        ));
        assert!(matches!(
            cancellation_error(&[reason("ThrottlingError")]),
            StoreError::Throttled(_)
        ));
        assert!(matches!(
            cancellation_error(&[reason("ValidationError")]),
            StoreError::Validation(_)
        ));
    }

    #[test]
    fn an_update_names_each_attribute_once_and_joins_additions() {
        let counting = |delta: i64, entry: &str| Changes {
            add: vec![("count#in#A".to_owned(), delta)],
            add_to_set: vec![("edges".to_owned(), vec![entry.to_owned()])],
            ..Changes::default()
        };
        let both = counting(1, "A#1")
            .merged(&counting(2, "A#2"))
            .expect("additions join");
        assert_eq!(both.add, [("count#in#A".to_owned(), 3)]);
        assert_eq!(
            both.add_to_set,
            [("edges".to_owned(), vec!["A#1".to_owned(), "A#2".to_owned()])]
        );
        let setting = Changes {
            set: vec![("name".to_owned(), AttrValue::S("x".into()))],
            ..Changes::default()
        };
        assert!(setting.clone().merged(&setting).is_none(), "set twice");
        let taking = Changes {
            take_from_set: vec![("edges".to_owned(), vec!["A#3".to_owned()])],
            ..Changes::default()
        };
        assert!(
            both.clone().merged(&taking).is_none(),
            "put into and taken from"
        );

        let mut names = HashMap::new();
        let mut values = HashMap::new();
        let all = setting
            .merged(&Changes {
                remove: vec!["old".to_owned()],
                ..both
            })
            .expect("apart")
            .merged(&Changes {
                take_from_set: vec![("other".to_owned(), vec!["B#1".to_owned()])],
                ..Changes::default()
            })
            .expect("apart");
        assert_eq!(
            all.expression(&mut names, &mut values),
            "SET #u1 = :u1 REMOVE #u2 ADD #u3 :u3, #u4 :u4 DELETE #u5 :u5"
        );
        assert_eq!(names["#u2"], "old");
        assert_eq!(values.len(), 4);

        let mut item = Item::from_iter([
            ("old".to_owned(), AttrValue::N("1".into())),
            ("other".to_owned(), AttrValue::Ss(["B#1".to_owned()].into())),
        ]);
        all.apply(&mut item);
        assert_eq!(item.get("old"), None);
        assert_eq!(item.get("other"), None, "a set emptied is removed");
        assert_eq!(item.get("count#in#A"), Some(&AttrValue::N("3".into())));
        assert_eq!(item.get("name"), Some(&AttrValue::S("x".into())));
    }
}
