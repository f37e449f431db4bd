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
    /// Adds one to the item's `version`, and puts `add_to_edges` into its edge set (`edges`) or
    /// takes `remove_from_edges` out of it (not both), without reading it: concurrent writers
    /// of the item then fail their version condition and read again, while other bumps commute
    /// with it.
    Bump {
        key: Key,
        add_to_edges: Vec<String>,
        remove_from_edges: Vec<String>,
        /// Numbers added to the item's count attributes (negative to take away).
        counts: Vec<(String, i64)>,
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
            | Write::Bump { key, .. }
            | Write::Check { key, .. }
            | Write::Tally { key, .. } => key.clone(),
        }
    }

    /// The clauses its condition joins with AND; `None` for a write without one.
    pub fn condition_mut(&mut self) -> Option<&mut Vec<Clause>> {
        match self {
            Write::Put { condition, .. }
            | Write::Delete { condition, .. }
            | Write::Bump { condition, .. }
            | Write::Check { condition, .. } => Some(condition),
            Write::Tally { .. } => None,
        }
    }
}

/// A clause of a write's condition; clauses are joined with AND.
#[derive(Debug, Clone, PartialEq)]
pub enum Clause {
    NotExists,
    Exists,
    Equals(String, AttrValue),
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
        Write::Bump {
            key,
            add_to_edges,
            remove_from_edges,
            counts,
            condition,
        } => {
            let (text, names, values) = condition_parts(condition);
            let mut names = names.unwrap_or_default();
            let mut values = values.unwrap_or_default();
            names.insert("#version".to_owned(), "version".to_owned());
            values.insert(":one".to_owned(), AttributeValue::N("1".to_owned()));
            let mut expression = "ADD #version :one".to_owned();
            for (n, (attribute, delta)) in counts.iter().enumerate() {
                names.insert(format!("#count{n}"), attribute.clone());
                values.insert(format!(":count{n}"), AttributeValue::N(delta.to_string()));
                expression.push_str(&format!(", #count{n} :count{n}"));
            }
            if !add_to_edges.is_empty() {
                names.insert("#edges".to_owned(), "edges".to_owned());
                values.insert(
                    ":added".to_owned(),
                    AttributeValue::Ss(add_to_edges.clone()),
                );
                expression.push_str(", #edges :added");
            }
            if !remove_from_edges.is_empty() {
                names.insert("#edges".to_owned(), "edges".to_owned());
                values.insert(
                    ":removed".to_owned(),
                    AttributeValue::Ss(remove_from_edges.clone()),
                );
                expression.push_str(" DELETE #edges :removed");
            }
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(key_map(key)))
                .update_expression(expression)
                .set_condition_expression(text)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .build()
                .map_err(build_error)?;
            TransactWriteItem::builder().update(update).build()
        }
        Write::Tally {
            key,
            typename,
            counts,
        } => {
            let mut names = HashMap::from([("#t".to_owned(), "__typename".to_owned())]);
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
                "__typename".into(),
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
        assert_eq!(names["#a1"], "__typename");
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
}
