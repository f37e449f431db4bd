//! Nodes brought from elsewhere (an Amplify app's tables, `tablegraph import
//! --amplify-tables`): each written as a create writes it, in one transaction through the write
//! driver (the node, its unique values, its type index count and its parents' relation
//! counts), keeping the id and the times it came with.
//!
//! A node that is already there is left as it is, so an import that stopped can run again. A
//! key naming a parent that is not there waits for it (it may come later in the import), or,
//! once nothing more comes (Amplify keeps keys of deleted parents), is left out of the node and
//! said: a stored key always names a node here.

use std::sync::Arc;

use super::drive::{Attempt, Driver};
use super::node_writes::{FieldValues, new_item, plan_new_item};
use crate::engine::{EngineError, RequestScope};
use crate::keys;
use crate::model::{FieldKind, Model, TypeDef};
use crate::store::AttrValue;

/// What became of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    Written,
    /// A node with its id is there already (an earlier run wrote it): nothing was written.
    AlreadyThere,
    /// Written without these keys, whose parents are not there.
    WithoutKeys(Vec<String>),
    /// Not written: these keys' parents are not there yet (asked with [`Missing::Wait`]).
    Waiting(Vec<String>),
}

/// What to do with a key whose parent is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Write nothing yet: the parent may come later in the import.
    Wait,
    /// Write the node without the key.
    Drop,
}

/// Writes the node `id` of `type_def` with `fields`, created and last updated at `times`
/// (`createdAt`, `updatedAt`; now where `None`). An id a node of another type holds is
/// refused (`BadUserInput`).
pub async fn import_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    fields: &FieldValues,
    times: (Option<&str>, Option<&str>),
    missing: Missing,
) -> Result<Imported, EngineError> {
    keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("id: {e}")))?;
    let mut fields = fields.clone();
    let mut dropped: Vec<String> = Vec::new();
    loop {
        let attempt = Driver::new(scope, "import")
            .run(|_| {
                let fields = &fields;
                async move {
                    match crate::engine::read::node_type(scope, id).await? {
                        Some(held) if held == type_def.name => return Ok(Attempt::Answer(false)),
                        Some(held) => {
                            return Err(EngineError::bad_input(format!(
                                "its id is a {held}'s already"
                            )));
                        }
                        None => {}
                    }
                    let mut item = new_item(model, type_def, id, fields)?;
                    let names = &type_def.timestamps;
                    for (name, time) in [(&names.created, times.0), (&names.updated, times.1)] {
                        if let (Some(name), Some(time)) = (name, time) {
                            item.insert(name.clone(), AttrValue::S(time.to_owned()));
                        }
                    }
                    let plan = plan_new_item(model, type_def, &Arc::new(item))?;
                    Ok(Attempt::Write(plan, true))
                }
            })
            .await;
        match attempt {
            Ok(true) if dropped.is_empty() => return Ok(Imported::Written),
            Ok(true) => return Ok(Imported::WithoutKeys(dropped)),
            Ok(false) => return Ok(Imported::AlreadyThere),
            // A key naming no node: find which, leave it out, and write again.
            Err(EngineError::BadUserInput(message)) => {
                let parents = missing_parents(scope, type_def, &fields).await?;
                if parents.is_empty() {
                    return Err(EngineError::BadUserInput(message));
                }
                if missing == Missing::Wait {
                    return Ok(Imported::Waiting(parents));
                }
                fields.retain(|(name, _)| !parents.contains(name));
                dropped.extend(parents);
            }
            Err(error) => return Err(error),
        }
    }
}

/// The keys among `fields` of `type_def` whose nodes are not there.
async fn missing_parents(
    scope: &RequestScope,
    type_def: &TypeDef,
    fields: &FieldValues,
) -> Result<Vec<String>, EngineError> {
    let mut keys: Vec<&str> = type_def
        .fields
        .iter()
        .filter_map(|field| match &field.kind {
            FieldKind::BelongsTo { foreign_key, .. } => Some(foreign_key.as_str()),
            _ => None,
        })
        .collect();
    keys.extend(type_def.slots.iter().map(|slot| slot.foreign_key.as_str()));
    let mut missing = Vec::new();
    for (name, value) in fields {
        let Some(AttrValue::S(parent)) = value else {
            continue;
        };
        if keys.contains(&name.as_str())
            && !missing.contains(name)
            && crate::engine::read::node_type(scope, parent)
                .await?
                .is_none()
        {
            missing.push(name.clone());
        }
    }
    Ok(missing)
}
