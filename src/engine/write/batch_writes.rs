//! Batches of updates or deletes of one node type, all or nothing in one transaction: each
//! member is planned as its single write would be (unique items, reference checks, cascaded
//! edges, events), the plans are joined and folded, and the whole is committed once. (Batches
//! of creates are in `creates`.)
//!
//! Folding lets members touch one item where their writes combine: two deleted nodes joined by
//! an edge delete it once, edges of one source take their entries out of its set in one update,
//! and a unique value one member frees another may take. Refused before anything is sent: a
//! batch whose writes exceed one transaction (`TransactionTooLarge`, naming how many it
//! needed), and two members writing one item in ways that do not combine (one unique value
//! taken twice: `UniqueConstraintViolation` on the later one). A member that fails (a taken
//! unique value, a version or condition that does not hold, a missing node or reference) fails
//! the batch with its error, carrying the member's position.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::try_join_all;

use super::drive::{Attempt, Driver};
use super::edge_writes::edges_touching;
use super::node_writes::{FieldValues, Guard, Planned, plan_delete, plan_update, read_to_change};
use super::plan::{Plan, join, remember};
use crate::engine::error::EngineError;
use crate::engine::read::Node;
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::model::{Model, Operation, TypeDef};

/// One member of a batch of updates.
#[derive(Debug, Clone)]
pub struct UpdateMember {
    pub id: String,
    pub fields: FieldValues,
    pub guard: Guard,
}

/// Changes the given fields of each member's node, all or none; each only if its node is as its
/// guard expects.
pub async fn update_nodes(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    members: &[UpdateMember],
) -> Result<Vec<Node>, EngineError> {
    for (index, member) in members.iter().enumerate() {
        keys::validate_id(&member.id)
            .map_err(|e| EngineError::bad_input(format!("id: {e}")).in_batch(index))?;
    }
    refuse_repeated_ids(members.iter().map(|member| member.id.as_str()))?;
    let guards = members
        .iter()
        .enumerate()
        .map(|(index, member)| {
            member
                .guard
                .ruled(scope, type_def, Operation::Update, &member.fields)
                .map_err(|error| error.in_batch(index))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ids: Vec<String> = members.iter().map(|member| member.id.clone()).collect();
    let guards = &guards;
    let planned =
        Driver::new(scope, "batch update")
            .batch(true)
            .freeing(type_def, &ids)
            .run(move |learned| async move {
                let reads = members.iter().zip(guards).enumerate().map(
                    |(index, (member, guard))| async move {
                        read_to_change(scope, type_def, &member.id, guard)
                            .await
                            .map_err(|error| error.in_batch(index))
                    },
                );
                let current = try_join_all(reads).await?;
                let mut planned = members
                    .iter()
                    .zip(current)
                    .zip(guards)
                    .enumerate()
                    .map(|(index, ((member, current), guard))| {
                        plan_update(
                            model,
                            type_def,
                            current,
                            &member.fields,
                            guard,
                            &learned.absent,
                        )
                        .map_err(|error| error.in_batch(index))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let plan = join(take_plans(&mut planned), true)?;
                Ok(Attempt::Write(plan, planned))
            })
            .await?;
    Ok(committed(scope, type_def, planned))
}

/// Deletes each node of `ids`, frees its unique values and removes every edge that touches it,
/// all or none; an id with no such node fails the batch. A batch whose nodes have more edges
/// than one transaction holds is refused (delete those nodes one by one).
pub async fn delete_nodes(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    ids: &[String],
) -> Result<Vec<Node>, EngineError> {
    for (index, id) in ids.iter().enumerate() {
        keys::validate_id(id)
            .map_err(|e| EngineError::bad_input(format!("id: {e}")).in_batch(index))?;
    }
    refuse_repeated_ids(ids.iter().map(String::as_str))?;
    let guard = &Guard::default().ruled(scope, type_def, Operation::Delete, &FieldValues::new())?;
    let planned = Driver::new(scope, "batch delete")
        .batch(true)
        .freeing(type_def, ids)
        .run(move |learned| async move {
            let reads = ids.iter().enumerate().map(|(index, id)| async move {
                let current = read_to_change(scope, type_def, id, guard)
                    .await
                    .map_err(|error| error.in_batch(index))?;
                let edges = edges_touching(scope, model, type_def, id)
                    .await
                    .map_err(|error| error.in_batch(index))?;
                Ok::<_, EngineError>((Arc::new(current), edges))
            });
            let found = try_join_all(reads).await?;
            let mut planned = Vec::new();
            let mut agree = true;
            for (index, (id, (current, edges))) in ids.iter().zip(found).enumerate() {
                let version = guard
                    .check(&current)
                    .map_err(|error| error.in_batch(index))?;
                let (plan, agrees) = plan_delete(
                    model,
                    type_def,
                    (&current, version),
                    guard,
                    &edges,
                    &learned,
                );
                agree &= agrees;
                planned.push(Planned {
                    id: id.clone(),
                    item: current,
                    plan,
                });
            }
            let plan = join(take_plans(&mut planned), true)?;
            if !agree {
                return Ok(Attempt::Again);
            }
            Ok(Attempt::Write(plan, planned))
        })
        .await?;
    for member in &planned {
        remember(scope, &member.id, None);
    }
    Ok(planned
        .into_iter()
        .map(|member| Node::new(type_def.name.clone(), member.item))
        .collect())
}

/// The members' plans, taken out of them.
fn take_plans(planned: &mut [Planned]) -> Vec<Plan> {
    planned
        .iter_mut()
        .map(|member| std::mem::take(&mut member.plan))
        .collect()
}

/// Refuses a batch that names one id twice.
fn refuse_repeated_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Result<(), EngineError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, id) in ids.enumerate() {
        if let Some(first) = seen.insert(id, index) {
            return Err(EngineError::bad_input(format!(
                "id {id} is also member {first} of the batch; name each node once"
            ))
            .in_batch(index));
        }
    }
    Ok(())
}

/// The nodes a committed batch wrote, made visible to the rest of the request.
fn committed(scope: &RequestScope, type_def: &TypeDef, planned: Vec<Planned>) -> Vec<Node> {
    planned
        .into_iter()
        .map(|member| {
            remember(scope, &member.id, Some(member.item.clone()));
            Node::new(type_def.name.clone(), member.item)
        })
        .collect()
}
