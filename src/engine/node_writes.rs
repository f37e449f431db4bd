//! Creating, updating and deleting nodes, each one transaction: the node, the unique-value items
//! it takes or frees, a check of each node it points to and, for a delete, the removal of every
//! edge that touches it.
//!
//! Updates and deletes read the node first (strongly consistent) and write on condition that
//! its version has not moved; when another writer got there first they read again, unless the
//! client pinned an expected version.

use std::sync::Arc;

use super::change::Change;
use super::derive::{check_limits, set_slot_attributes};
use super::edge_writes::{detach, edges_touching};
use super::error::EngineError;
use super::nodes::{Node, read_node_consistent};
use super::plan::{
    Plan, Purpose, check_references, check_version, commit, free_unique_values, refused, remember,
    take_unique_values, version_is,
};
use super::scalars::now;
use super::scope::RequestScope;
use crate::keys;
use crate::model::{FieldKind, Model, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, MAX_TRANSACTION_ITEMS, Write};

/// How often an update or delete re-reads after losing a race to another writer.
const WRITE_ATTEMPTS: usize = 5;
/// Edges removed per transaction when a node has too many to delete in one: each edge is a
/// delete and at most one edge-set update, so this stays under the 100-item limit.
const EDGES_PER_STEP: usize = 40;

/// The stored fields a client sets, by name: a value, or `None` for an explicit null. Fields
/// left out are not listed.
pub type FieldValues = Vec<(String, Option<AttrValue>)>;

/// Creates a node of `type_def` with a new id.
pub async fn create_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    fields: &FieldValues,
) -> Result<Node, EngineError> {
    let id = keys::new_id();
    let now = now();
    let mut item = Item::from([
        ("PK".to_owned(), AttrValue::S(keys::node_key(&id))),
        ("SK".to_owned(), AttrValue::S(keys::node_key(&id))),
        ("__typename".to_owned(), AttrValue::S(type_def.name.clone())),
        ("id".to_owned(), AttrValue::S(id.clone())),
        ("createdAt".to_owned(), AttrValue::S(now.clone())),
        ("updatedAt".to_owned(), AttrValue::S(now)),
        ("version".to_owned(), AttrValue::N("1".to_owned())),
    ]);
    apply_fields(type_def, fields, &mut item)?;
    set_slot_attributes(model, type_def, &mut item);
    check_limits(type_def, &item)?;

    let item = Arc::new(item);
    let mut plan = Plan::default();
    plan.push(
        Write::Put {
            item: (*item).clone(),
            condition: vec![Clause::NotExists],
        },
        Purpose::Node,
    );
    take_unique_values(type_def, None, &item, &mut plan);
    check_references(model, type_def, None, &item, &mut plan)?;
    plan.changes(Change::node(None, Some(item.clone())));
    match commit(scope, plan).await? {
        Ok(()) => {
            remember(scope, &id, Some(item.clone()));
            Ok(Node {
                typename: type_def.name.clone(),
                item,
            })
        }
        Err(Purpose::Node | Purpose::FreeUnique) => {
            tracing::error!(%id, "a new node's id or unique items already existed");
            Err(EngineError::Internal)
        }
        Err(purpose) => Err(refused(type_def, purpose)),
    }
}

/// Changes the given fields of the node `id` of `type_def`; fields left out keep their values.
/// With `expected`, only if the node's version is still that one.
pub async fn update_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    fields: &FieldValues,
    expected: Option<i64>,
) -> Result<Node, EngineError> {
    keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("id: {e}")))?;
    for _ in 0..WRITE_ATTEMPTS {
        let Some(current) = read_node_consistent(scope, &type_def.name, id).await? else {
            return Err(EngineError::bad_input(format!(
                "there is no {} with id {id}",
                type_def.name
            )));
        };
        let version = check_version(&current, expected)?;
        let mut next = current.clone();
        apply_fields(type_def, fields, &mut next)?;
        next.insert(
            "version".to_owned(),
            AttrValue::N((version + 1).to_string()),
        );
        next.insert("updatedAt".to_owned(), AttrValue::S(now()));
        set_slot_attributes(model, type_def, &mut next);
        check_limits(type_def, &next)?;

        let next = Arc::new(next);
        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: (*next).clone(),
                condition: vec![version_is(version)],
            },
            Purpose::Node,
        );
        take_unique_values(type_def, Some(&current), &next, &mut plan);
        check_references(model, type_def, Some(&current), &next, &mut plan)?;
        plan.changes(Change::node(Some(Arc::new(current)), Some(next.clone())));
        match commit(scope, plan).await? {
            Ok(()) => {
                remember(scope, id, Some(next.clone()));
                return Ok(Node {
                    typename: type_def.name.clone(),
                    item: next,
                });
            }
            // Another writer changed the node since it was read: read again.
            Err(Purpose::Node) => continue,
            Err(Purpose::FreeUnique) => return Err(unique_item_owned_elsewhere(type_def, id)),
            Err(purpose) => return Err(refused(type_def, purpose)),
        }
    }
    tracing::warn!(%id, "update gave up after losing every race to other writers");
    Err(EngineError::StorageUnavailable)
}

/// Deletes the node `id` of `type_def`, frees its unique values and removes every edge that
/// touches it; `None` when there is no such node. With `expected`, only if the node's version
/// is still that one.
pub async fn delete_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    expected: Option<i64>,
) -> Result<Option<Node>, EngineError> {
    keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("id: {e}")))?;
    // The client's expectation is about the node as it is now. Steps that remove edges move
    // the version themselves, so after the first step it no longer applies.
    let mut expected = expected;
    let mut lost_races = 0;
    while lost_races < WRITE_ATTEMPTS {
        let Some(current) = read_node_consistent(scope, &type_def.name, id).await? else {
            return Ok(None);
        };
        let version = check_version(&current, expected)?;
        let edges = edges_touching(scope, model, type_def, id).await?;
        let current = Arc::new(current);
        let mut plan = Plan::default();
        plan.push(
            Write::Delete {
                key: Key::same(keys::node_key(id)),
                condition: vec![version_is(version)],
            },
            Purpose::Node,
        );
        free_unique_values(type_def, &current, id, &mut plan);
        plan.append(detach(model, &edges, Some(id)));
        plan.changes(Change::node(Some(current.clone()), None));
        if plan.len() > MAX_TRANSACTION_ITEMS {
            // Too many edges for one transaction: remove some in a step of their own, which
            // keeps every edge set equal to its edges, then look again. A delete that stops
            // midway leaves a consistent node with fewer edges; deleting it again resumes.
            let step: Vec<_> = edges.into_iter().take(EDGES_PER_STEP).collect();
            let plan = detach(model, &step, None);
            match commit(scope, plan).await? {
                Ok(()) => expected = None,
                Err(Purpose::Node | Purpose::Edge) => lost_races += 1,
                Err(_) => return Err(EngineError::Internal),
            }
            continue;
        }
        match commit(scope, plan).await? {
            Ok(()) => {
                remember(scope, id, None);
                return Ok(Some(Node {
                    typename: type_def.name.clone(),
                    item: current,
                }));
            }
            Err(Purpose::Node | Purpose::Edge) => lost_races += 1,
            Err(Purpose::FreeUnique) => return Err(unique_item_owned_elsewhere(type_def, id)),
            Err(purpose) => return Err(refused(type_def, purpose)),
        }
    }
    tracing::warn!(%id, "delete gave up after losing every race to other writers");
    Err(EngineError::StorageUnavailable)
}

/// Writes the given stored fields into `item`. An explicit null removes a field, unless the
/// field is non-null.
fn apply_fields(
    type_def: &TypeDef,
    fields: &FieldValues,
    item: &mut Item,
) -> Result<(), EngineError> {
    for field in &type_def.fields {
        let FieldKind::Scalar { required, .. } = &field.kind else {
            continue;
        };
        let Some((_, value)) = fields.iter().find(|(name, _)| *name == field.name) else {
            continue;
        };
        match value {
            Some(value) => {
                item.insert(field.name.clone(), value.clone());
            }
            None if *required => {
                return Err(EngineError::bad_input(format!(
                    "{} must not be null",
                    field.name
                )));
            }
            None => {
                item.remove(&field.name);
            }
        }
    }
    Ok(())
}

/// A unique value the node holds is reserved for another node: the table broke an invariant.
fn unique_item_owned_elsewhere(type_def: &TypeDef, id: &str) -> EngineError {
    tracing::error!(
        type_name = %type_def.name,
        %id,
        "integrity: a unique value of this node is reserved by another node"
    );
    EngineError::Internal
}
