//! Write plans: the writes of one operation, each with the reason it is there, committed as one
//! transaction. A failed condition comes back as the reason of the write that failed, so an
//! operation can tell a lost race (read again) from a taken unique value or a missing target.
//!
//! Invariant: a plan commits whole or not at all, and its changes are recorded on the request's
//! scope only once it has committed.

use std::sync::Arc;

use super::change::Change;
use super::error::EngineError;
use super::scope::RequestScope;
use crate::keys;
use crate::model::{FieldKind, Model, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, MAX_TRANSACTION_ITEMS, StoreError, Write};

/// Why a write is in a plan: what a failed condition on it means.
#[derive(Debug, Clone)]
pub enum Purpose {
    /// A node, conditioned on the version that was read: another writer got there first.
    Node,
    TakeUnique(String),
    FreeUnique,
    Reference {
        field: String,
        target: String,
        id: String,
    },
    /// An edge item, conditioned on what was read of it: another writer got there first.
    Edge,
}

#[derive(Default)]
pub struct Plan {
    writes: Vec<Write>,
    purposes: Vec<Purpose>,
    /// What the writes change, recorded when they commit.
    changes: Vec<Change>,
}

impl Plan {
    pub fn push(&mut self, write: Write, purpose: Purpose) {
        self.writes.push(write);
        self.purposes.push(purpose);
    }

    pub fn append(&mut self, other: Plan) {
        self.writes.extend(other.writes);
        self.purposes.extend(other.purposes);
        self.changes.extend(other.changes);
    }

    /// Notes a change the plan's writes make.
    pub fn changes(&mut self, change: Change) {
        self.changes.push(change);
    }

    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// The writes' keys and purposes, in order.
    pub fn keys(&self) -> impl Iterator<Item = (Key, &Purpose)> {
        self.writes.iter().map(Write::key).zip(&self.purposes)
    }
}

/// Commits a plan as one transaction; a failed condition comes back as the purpose of the
/// write that failed. A plan over DynamoDB's 100 items is refused before anything is sent.
pub async fn commit(scope: &RequestScope, plan: Plan) -> Result<Result<(), Purpose>, EngineError> {
    Ok(commit_at(scope, plan)
        .await?
        .map_err(|(_, purpose)| purpose))
}

/// The same, answering also the position in the plan of the write that failed.
pub async fn commit_at(
    scope: &RequestScope,
    plan: Plan,
) -> Result<Result<(), (usize, Purpose)>, EngineError> {
    if plan.writes.len() > MAX_TRANSACTION_ITEMS {
        return Err(EngineError::TransactionTooLarge(format!(
            "this change needs {} writes; one transaction holds at most {MAX_TRANSACTION_ITEMS}",
            plan.writes.len()
        )));
    }
    match scope.store.transact_write(plan.writes).await {
        Ok(()) => {
            scope.record_changes(plan.changes);
            Ok(Ok(()))
        }
        Err(StoreError::ConditionFailed { index }) => plan
            .purposes
            .get(index)
            .cloned()
            .map(|purpose| Err((index, purpose)))
            .ok_or(EngineError::Internal),
        Err(e) => Err(EngineError::from_store(&e)),
    }
}

/// What a failed condition tells the client.
pub fn refused(type_def: &TypeDef, purpose: Purpose) -> EngineError {
    match purpose {
        Purpose::TakeUnique(field) => EngineError::UniqueConstraintViolation {
            type_name: type_def.name.clone(),
            field,
        },
        Purpose::Reference { field, target, id } => {
            EngineError::bad_input(format!("{field}: there is no {target} with id {id}"))
        }
        Purpose::Node | Purpose::FreeUnique | Purpose::Edge => EngineError::Internal,
    }
}

pub fn version_is(version: i64) -> Clause {
    Clause::Equals("version".to_owned(), AttrValue::N(version.to_string()))
}

/// A node item's next state: the next version, and the version it had.
pub fn next_version(node: Item) -> (Item, i64) {
    let version = node.get("version").and_then(AttrValue::as_i64).unwrap_or(0);
    let mut node = node;
    node.insert(
        "version".to_owned(),
        AttrValue::N((version + 1).to_string()),
    );
    (node, version)
}

/// The node's version, refused when the client expected another.
pub fn check_version(current: &Item, expected: Option<i64>) -> Result<i64, EngineError> {
    let version = current
        .get("version")
        .and_then(AttrValue::as_i64)
        .unwrap_or(0);
    match expected {
        Some(expected) if expected != version => Err(EngineError::VersionMismatch {
            expected,
            actual: version,
        }),
        _ => Ok(version),
    }
}

/// Adds the unique-value items `next` takes and `current` frees.
pub fn take_unique_values(
    type_def: &TypeDef,
    current: Option<&Item>,
    next: &Item,
    plan: &mut Plan,
) {
    let id = super::derive::text(next, "id").to_owned();
    for field in type_def.unique_fields() {
        let key_of =
            |item: &Item| super::derive::unique_item_key(&type_def.name, &field.name, item);
        let old_key = current.and_then(key_of);
        let new_key = key_of(next);
        if old_key == new_key {
            continue;
        }
        if let Some(old_key) = old_key {
            plan.push(free_unique(old_key, &id), Purpose::FreeUnique);
        }
        if let Some(new_key) = new_key {
            plan.push(
                Write::Put {
                    item: Item::from([
                        ("PK".to_owned(), AttrValue::S(new_key.clone())),
                        ("SK".to_owned(), AttrValue::S(new_key)),
                        (
                            "__typename".to_owned(),
                            AttrValue::S(keys::unique_typename(&type_def.name, &field.name)),
                        ),
                        ("id".to_owned(), AttrValue::S(id.clone())),
                    ]),
                    condition: vec![Clause::NotExists],
                },
                Purpose::TakeUnique(field.name.clone()),
            );
        }
    }
}

/// Adds the deletes of every unique-value item `current` holds.
pub fn free_unique_values(type_def: &TypeDef, current: &Item, id: &str, plan: &mut Plan) {
    for field in type_def.unique_fields() {
        if let Some(key) = super::derive::unique_item_key(&type_def.name, &field.name, current) {
            plan.push(free_unique(key, id), Purpose::FreeUnique);
        }
    }
}

/// Deletes a unique-value item, but only the owner's: a value some other node holds stays.
fn free_unique(key: String, owner: &str) -> Write {
    Write::Delete {
        key: Key::same(key),
        condition: vec![Clause::AbsentOrEquals(
            "id".to_owned(),
            AttrValue::S(owner.to_owned()),
        )],
    }
}

/// Adds a check that each node `next` points to (through a `@belongsTo` key that is new or
/// changed) exists and has a type the relation allows.
pub fn check_references(
    model: &Model,
    type_def: &TypeDef,
    current: Option<&Item>,
    next: &Item,
    plan: &mut Plan,
) -> Result<(), EngineError> {
    let own_id = super::derive::text(next, "id");
    for field in &type_def.fields {
        let FieldKind::BelongsTo {
            target,
            foreign_key,
            ..
        } = &field.kind
        else {
            continue;
        };
        let Some(target_id) = next.get(foreign_key).and_then(AttrValue::as_str) else {
            continue;
        };
        if current.and_then(|c| c.get(foreign_key)) == next.get(foreign_key) {
            continue;
        }
        let allowed = model.possible_types(target);
        if target_id == own_id {
            // DynamoDB refuses two operations on one item; the node's own type is known.
            if allowed.contains(&type_def.name.as_str()) {
                continue;
            }
            return Err(EngineError::bad_input(format!(
                "{foreign_key}: there is no {target} with id {target_id}"
            )));
        }
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key(target_id)),
                condition: vec![Clause::OneOf(
                    "__typename".to_owned(),
                    allowed
                        .iter()
                        .map(|t| AttrValue::S((*t).to_owned()))
                        .collect(),
                )],
            },
            Purpose::Reference {
                field: foreign_key.clone(),
                target: target.clone(),
                id: target_id.to_owned(),
            },
        );
    }
    Ok(())
}

/// Makes a written node visible to the rest of the request (or its absence, for `None`).
pub fn remember(scope: &RequestScope, id: &str, item: Option<Arc<Item>>) {
    scope.loader.prime(&keys::node_key(id), item);
}
