//! Creating, updating and deleting nodes, each one transaction: the node, the unique-value items
//! it takes or frees, a check of each node it points to and, for a delete, the removal of every
//! edge that touches it.
//!
//! Updates and deletes read the node first (strongly consistent) and write on condition that
//! its version has not moved; when another writer got there first they read again, unless the
//! client pinned an expected version.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use super::drive::{Attempt, Driver, Learned};
use super::edge_writes::{detach, edge_count_attributes, edge_counts_held, edges_touching};
pub use super::guard::Guard;
use super::plan::{
    Plan, Purpose, check_references, count_members, free_unique_values, node_update, remember,
    take_unique_values, version_is,
};
use crate::engine::derive::{check_limits, set_slot_attributes, version_attribute};
use crate::engine::error::EngineError;
use crate::engine::formats::now;
use crate::engine::read::{Node, read_node_consistent};
use crate::engine::scope::RequestScope;
use crate::engine::sync;
use crate::keys;
use crate::keys::TYPENAME;
use crate::model::{FieldKind, Model, Operation, ScalarType, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, MAX_TRANSACTION_ITEMS, Write};

/// Edges removed per transaction when a node has too many to delete in one: each edge is a
/// delete and at most one edge-set update, so this stays under the 100-item limit.
const EDGES_PER_STEP: usize = 40;

/// The stored fields a client sets, by name: a value, or `None` for an explicit null. Fields
/// left out are not listed.
pub type FieldValues = Vec<(String, Option<AttrValue>)>;

/// What a write makes of one node, before it is committed: the node's id, its item after the
/// write (before it, for a delete) and the writes.
pub(super) struct Planned {
    pub id: String,
    pub item: Arc<Item>,
    pub plan: Plan,
}

/// A new node's item: its id, times and version, the `@default`s of fields left out, the given
/// fields and its relation slots; an error when a required field has no value.
pub(super) fn new_item(
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    fields: &FieldValues,
) -> Result<Item, EngineError> {
    let now = now();
    let mut item = Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(keys::node_key(id))),
        (keys::SK.to_owned(), AttrValue::S(keys::node_key(id))),
        (TYPENAME.to_owned(), AttrValue::S(type_def.name.clone())),
        ("id".to_owned(), AttrValue::S(id.to_owned())),
        (
            version_attribute(type_def).to_owned(),
            AttrValue::N("1".to_owned()),
        ),
    ]);
    let times = &type_def.timestamps;
    for name in [&times.created, &times.updated].into_iter().flatten() {
        item.insert(name.clone(), AttrValue::S(now.clone()));
    }
    apply_defaults(type_def, fields, &mut item);
    apply_fields(type_def, fields, &mut item)?;
    apply_times(type_def, fields, &mut item);
    sync::stamp(type_def, &mut item);
    check_required(type_def, &item)?;
    set_slot_attributes(model, type_def, &mut item);
    Ok(item)
}

/// The writes that create `item`, a new node of `type_def`: the node, the unique-value items
/// it takes and a check of each node it points to.
pub(super) fn plan_new_item(
    model: &Model,
    type_def: &TypeDef,
    item: &Arc<Item>,
) -> Result<Plan, EngineError> {
    check_limits(type_def, item)?;
    let mut plan = Plan::default();
    plan.push(
        Write::Put {
            item: (**item).clone(),
            condition: vec![Clause::NotExists],
        },
        Purpose::Node,
    );
    take_unique_values(type_def, None, item, &mut plan);
    check_references(model, type_def, None, item, &mut plan)?;
    record_delta(model, type_def, item, &mut plan);
    count_members(
        model,
        type_def,
        None,
        Some(item),
        &BTreeSet::new(),
        &mut plan,
    );
    Ok(plan)
}

/// Changes the given fields of the node `id` of `type_def`; fields left out keep their values.
/// Only if the node is as `guard` expects.
pub async fn update_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    fields: &FieldValues,
    guard: &Guard,
) -> Result<Node, EngineError> {
    keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("id: {e}")))?;
    guard.validate()?;
    let guard = &guard.ruled(scope, type_def, Operation::Update, fields)?;
    let ids = [id.to_owned()];
    let next = Driver::new(scope, "update")
        .freeing(type_def, &ids)
        .run(move |learned| async move {
            let current = read_to_change(scope, type_def, id, guard).await?;
            guard.check_rule(&current)?;
            let (fields, guard) = match &type_def.conflict {
                Some(handler) => {
                    let (fields, stored) =
                        sync::resolve_update(handler, &current, guard.expected, fields)?;
                    (Cow::Owned(fields), Cow::Owned(guard.expecting(stored)))
                }
                None => (Cow::Borrowed(fields), Cow::Borrowed(guard)),
            };
            let Planned {
                item: next, plan, ..
            } = plan_update(model, type_def, current, &fields, &guard, &learned.absent)?;
            Ok(Attempt::Write(plan, next))
        })
        .await?;
    remember(scope, id, Some(next.clone()));
    Ok(Node::new(type_def.name.clone(), next))
}

/// The node `id` of `type_def`, read to be changed under `guard`; an error when there is none.
pub(super) async fn read_to_change(
    scope: &RequestScope,
    type_def: &TypeDef,
    id: &str,
    guard: &Guard,
) -> Result<Item, EngineError> {
    read_node_consistent(scope, &type_def.name, id)
        .await?
        .ok_or_else(|| guard.missing(type_def, id))
}

/// The writes that change `fields` of `current`, a node of `type_def`, if it is as `guard`
/// expects; the nodes of `absent` are known to be gone (see `plan::count_members`).
pub(super) fn plan_update(
    model: &Model,
    type_def: &TypeDef,
    current: Item,
    fields: &FieldValues,
    guard: &Guard,
    absent: &BTreeSet<String>,
) -> Result<Planned, EngineError> {
    let version = guard.check(&current)?;
    let id = crate::engine::derive::text(&current, "id").to_owned();
    let mut next = current.clone();
    apply_fields(type_def, fields, &mut next)?;
    written_now(type_def, (&current, version), &mut next);
    apply_times(type_def, fields, &mut next);
    set_slot_attributes(model, type_def, &mut next);
    check_limits(type_def, &next)?;

    let next = Arc::new(next);
    let mut plan = Plan::default();
    plan.push(node_write(&current, &next, version, guard), Purpose::Node);
    record_delta(model, type_def, &next, &mut plan);
    take_unique_values(type_def, Some(&current), &next, &mut plan);
    check_references(model, type_def, Some(&current), &next, &mut plan)?;
    count_members(
        model,
        type_def,
        Some(&current),
        Some(&next),
        absent,
        &mut plan,
    );
    Ok(Planned {
        id,
        item: next,
        plan,
    })
}

/// `next`, the node `current` at `version` after a write: its version bumped, its update time
/// now (Amplify's API may then set a time the client gives) and, under conflict detection,
/// stamped as written now.
fn written_now(type_def: &TypeDef, (current, version): (&Item, i64), next: &mut Item) {
    next.insert(
        current.version_attribute().to_owned(),
        AttrValue::N((version + 1).to_string()),
    );
    if let Some(updated) = &type_def.timestamps.updated {
        next.insert(updated.clone(), AttrValue::S(now()));
    }
    sync::stamp(type_def, next);
}

/// The write of a node from `current` (read at `version`) to `next`, on condition that it is
/// still at that version and holds what `guard` needs: DynamoDB checks it on the stored item,
/// so a writer outside the API that changed a field but not the version is caught as well.
/// Only what changed is written: a child created or an edge added meanwhile (which add to the
/// node's counts and edge set without moving its version) stays.
fn node_write(current: &Item, next: &Item, version: i64, guard: &Guard) -> Write {
    let mut condition = vec![version_is(current, version)];
    condition.extend(guard.clauses());
    node_update(current, next, condition)
}

/// What a delete answers when the node `id` is not there: under a rule, the rule's error (see
/// [`Guard::missing`]); else nothing.
fn nothing_to_delete<T>(
    guard: &Guard,
    type_def: &TypeDef,
    id: &str,
) -> Result<Attempt<Option<T>>, EngineError> {
    match guard.rule {
        Some(_) => Err(guard.missing(type_def, id)),
        None => Ok(Attempt::Answer(None)),
    }
}

/// Deletes the node `id` of `type_def`, frees its unique values and removes every edge that
/// touches it; `None` when there is no such node. Only if the node is as `guard` expects.
pub async fn delete_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    guard: &Guard,
) -> Result<Option<Node>, EngineError> {
    keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("id: {e}")))?;
    // Room for the edge counts the delete holds beside the client's condition.
    guard.validate_beside(edge_count_attributes(model, type_def))?;
    // Steps that remove edges leave the node's version as it is (they change only its counts
    // and edge set), so the client's expected version holds through them.
    let guard = &guard.ruled(scope, type_def, Operation::Delete, &FieldValues::new())?;
    if type_def.conflict.is_some() {
        return delete_to_tombstone(scope, model, type_def, id, guard).await;
    }
    remove_node(scope, model, type_def, id, guard).await
}

/// Removes a tombstone past its `_ttl` as a delete removes a node: with its unique values,
/// its edges and its place in its parents' counts. False when there is no such tombstone (it
/// is gone, or not yet due).
pub async fn purge_tombstone(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
) -> Result<bool, EngineError> {
    let Some(current) = read_node_consistent(scope, &type_def.name, id).await? else {
        return Ok(false);
    };
    let now = sync::now_millis() / 1000;
    if !sync::expired_tombstone(&current, now) {
        return Ok(false);
    }
    // A tombstone takes no writes: the version read is the one removed.
    let guard = Guard::version(Some(sync::stored_version(&current)));
    let removed = remove_node(scope, model, type_def, id, &guard).await?;
    Ok(removed.is_some())
}

/// [`delete_node`]'s removal of the node, its unique values and its edges, under `guard` (the
/// caller's rules already in it).
async fn remove_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    guard: &Guard,
) -> Result<Option<Node>, EngineError> {
    let ids = [id.to_owned()];
    let deleted = Driver::new(scope, "delete")
        .freeing(type_def, &ids)
        .run(move |learned| async move {
            let Some(current) = read_node_consistent(scope, &type_def.name, id).await? else {
                return nothing_to_delete(guard, type_def, id);
            };
            let version = guard.check(&current)?;
            let edges = edges_touching(scope, model, type_def, id).await?;
            let current = Arc::new(current);
            let (plan, agree) = plan_delete(
                model,
                type_def,
                (&current, version),
                guard,
                &edges,
                &learned,
            );
            if plan.len() > MAX_TRANSACTION_ITEMS {
                // Too many edges for one transaction: remove some in a step of their own, which
                // keeps every edge set equal to its edges, then look again. A delete that stops
                // midway leaves a consistent node with fewer edges; deleting it again resumes.
                let step: Vec<_> = edges.into_iter().take(EDGES_PER_STEP).collect();
                return Ok(Attempt::Step(detach_step(model, id, &step, guard)));
            }
            if !agree {
                return Ok(Attempt::Again);
            }
            Ok(Attempt::Write(plan, Some(current)))
        })
        .await?;
    if deleted.is_some() {
        remember(scope, id, None);
    }
    Ok(deleted.map(|item| Node::new(type_def.name.clone(), item)))
}

/// The delete of a node of a type that detects conflicts: the node becomes a tombstone
/// (`_deleted`, its version bumped), which keeps its unique values, edges and counts until
/// it is removed (see `engine::sync`); `None` when there is no such node.
async fn delete_to_tombstone(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
    guard: &Guard,
) -> Result<Option<Node>, EngineError> {
    let ids = [id.to_owned()];
    let deleted = Driver::new(scope, "delete")
        .freeing(type_def, &ids)
        .run(move |_| async move {
            let Some(current) = read_node_consistent(scope, &type_def.name, id).await? else {
                return nothing_to_delete(guard, type_def, id);
            };
            guard.check_rule(&current)?;
            let guard = guard.expecting(sync::resolve_delete(&current, guard.expected)?);
            let version = guard.check(&current)?;
            let mut next = sync::tombstone(&current);
            written_now(type_def, (&current, version), &mut next);
            let mut plan = Plan::default();
            plan.push(node_write(&current, &next, version, &guard), Purpose::Node);
            record_delta(model, type_def, &next, &mut plan);
            Ok(Attempt::Write(plan, Some(Arc::new(next))))
        })
        .await?;
    if let Some(item) = &deleted {
        remember(scope, id, Some(item.clone()));
    }
    Ok(deleted.map(|item| Node::new(type_def.name.clone(), item)))
}

/// Adds the record of `item`'s write to its type's delta record, if its type detects conflicts.
fn record_delta(model: &Model, type_def: &TypeDef, item: &Item, plan: &mut Plan) {
    if let Some(record) = sync::delta_record(model, type_def, item) {
        // A record is new each time (its key holds the version written): it cannot fail.
        plan.push(record, Purpose::Node);
    }
}

/// The writes of a step of a delete that removes `step`, some of the edges of the node `id`:
/// on condition that the node still holds what `guard` needs of it (the caller's rules, the
/// client's condition), so that a step never removes edges of a node the delete may no longer
/// delete. (A node changed since it was read fails the step as a lost race: it is read again.)
fn detach_step(model: &Model, id: &str, step: &[Arc<Item>], guard: &Guard) -> Plan {
    let mut plan = detach(model, step, None);
    let condition: Vec<Clause> = guard.clauses().collect();
    if !condition.is_empty() {
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key(id)),
                condition,
            },
            Purpose::Node,
        );
    }
    plan
}

/// The writes that delete `current`, a node of `type_def` at `version` that satisfies the
/// `guard`'s condition, with `edges`, the edges that touch it, holding its edge counts to them
/// (see [`edge_counts_held`]), with what earlier attempts `learned`; and whether its counts
/// agree with `edges` (when not, the plan is no delete to commit: read again).
pub(super) fn plan_delete(
    model: &Model,
    type_def: &TypeDef,
    (current, version): (&Arc<Item>, i64),
    guard: &Guard,
    edges: &[Arc<Item>],
    learned: &Learned,
) -> (Plan, bool) {
    let id = crate::engine::derive::text(current, "id");
    let held = edge_counts_held(model, type_def, current, edges, learned.last_attempt());
    let agree = held.is_some();
    let mut condition = vec![version_is(current, version)];
    condition.extend(guard.clauses());
    condition.extend(held.unwrap_or_default());
    let mut plan = Plan::default();
    plan.push(
        Write::Delete {
            key: Key::same(keys::node_key(id)),
            condition,
        },
        Purpose::Node,
    );
    free_unique_values(type_def, current, id, &mut plan);
    count_members(
        model,
        type_def,
        Some(current),
        None,
        &learned.absent,
        &mut plan,
    );
    plan.append(detach(model, edges, Some(id)));
    (plan, agree)
}

/// Writes the `@default` of each field the client left out into a new node's `item`.
fn apply_defaults(type_def: &TypeDef, fields: &FieldValues, item: &mut Item) {
    for (name, scalar, default) in type_def.defaults() {
        if fields.iter().any(|(given, _)| given == name) {
            continue;
        }
        let value = match scalar {
            ScalarType::Int | ScalarType::Float | ScalarType::AwsTimestamp => {
                AttrValue::N(default.trim().to_owned())
            }
            ScalarType::Boolean => AttrValue::Bool(default == "true"),
            _ => AttrValue::S(default.to_owned()),
        };
        item.insert(name.to_owned(), value);
    }
}

/// Writes the given stored fields into `item`. An explicit null removes a field, unless the
/// field is non-null.
/// The times given among `fields` (Amplify's API takes the times a schema declares): each
/// replaces the server's; a null keeps it.
fn apply_times(type_def: &TypeDef, fields: &FieldValues, item: &mut Item) {
    for (name, value) in fields {
        if let (true, Some(value)) = (type_def.timestamps.is(name), value) {
            item.insert(name.clone(), value.clone());
        }
    }
}

fn apply_fields(
    type_def: &TypeDef,
    fields: &FieldValues,
    item: &mut Item,
) -> Result<(), EngineError> {
    for field in &type_def.fields {
        let Some(required) = field.stored() else {
            continue;
        };
        let Some((_, value)) = fields.iter().find(|(name, _)| *name == field.name) else {
            continue;
        };
        match value {
            Some(value) => {
                item.insert(field.name.clone(), value.clone());
            }
            None if required => {
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

/// Refuses a new node without a value for a required field. A foreign key a client may also
/// give through its `@belongsTo` field (`create` or `link`) is named with it.
fn check_required(type_def: &TypeDef, item: &Item) -> Result<(), EngineError> {
    for field in &type_def.fields {
        if field.stored() != Some(true) || item.contains_key(&field.name) {
            continue;
        }
        let relation = type_def.fields.iter().find(|other| {
            matches!(&other.kind, FieldKind::BelongsTo { foreign_key, .. } if *foreign_key == field.name)
        });
        return Err(EngineError::bad_input(match relation {
            Some(relation) => format!(
                "{}.{} is required: give {} or {}",
                type_def.name, field.name, field.name, relation.name
            ),
            None => format!("{}.{} is required", type_def.name, field.name),
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::plan::commit;
    use super::*;
    use crate::store::{Filter, Test};

    /// Creates a node `ids` of `farm` each, named Hill, as a create would.
    async fn create_farms(scope: &RequestScope, model: &Model, farm: &TypeDef, ids: &[&str]) {
        for id in ids {
            let fields = vec![("name".to_owned(), Some(AttrValue::S("Hill".into())))];
            let item = Arc::new(new_item(model, farm, id, &fields).expect("an item"));
            let plan = plan_new_item(model, farm, &item).expect("a plan");
            assert!(matches!(commit(scope, plan).await, Ok(Ok(()))));
        }
    }

    /// A step that removes some of a node's edges before it is deleted holds the node to the
    /// caller's rules: an owner changed since the read fails the step, and no edge goes.
    #[tokio::test]
    async fn a_step_of_a_delete_removes_edges_only_while_the_rules_hold() {
        let model = Model::parse(
            "s.graphql",
            "type Farm @model { name: String! }\n\
             type Likes @edge(from: \"Farm\", to: \"Farm\")",
        )
        .expect("a schema");
        let store = crate::store::loopback_store_indexed("delete-steps", &model.indexes).await;
        let farm = model.type_def("Farm").expect("Farm");
        let scope = RequestScope::new(&store, 100);
        create_farms(&scope, &model, farm, &["a", "b"]).await;
        let likes = model.edge_def("Likes").expect("Likes");
        super::super::edge_writes::add_edge(&scope, &model, likes, "a", "b", &Item::default())
            .await
            .expect("an edge");
        let edges = edges_touching(&scope, &model, farm, "a")
            .await
            .expect("the edges");
        assert_eq!(edges.len(), 1);
        let hill = Filter::Field {
            field: "name".into(),
            test: Test::Eq(AttrValue::S("Hill".into())),
        };
        let ruled = Guard {
            rule: Some((hill, EngineError::Unauthorized("no".into()))),
            ..Guard::default()
        };
        // Someone renames the farm: the rule the delete was allowed by no longer holds.
        let mut renamed = read_to_change(&scope, farm, "a", &Guard::default())
            .await
            .expect("the farm");
        renamed.insert("name".into(), AttrValue::S("Dale".into()));
        store
            .transact_write(vec![Write::Put {
                item: renamed,
                condition: Vec::new(),
            }])
            .await
            .expect("a write");
        let step = detach_step(&model, "a", &edges, &ruled);
        assert!(matches!(
            commit(&scope, step).await,
            Ok(Err(Purpose::Node | Purpose::Edge))
        ));
        let still = edges_touching(&scope, &model, farm, "a")
            .await
            .expect("the edges");
        assert_eq!(still.len(), 1, "no edge was removed");
    }

    /// A writer outside the API changes a field but not the version after the update read the
    /// node: the condition, which held on the read, no longer holds on the stored item, and
    /// DynamoDB refuses the write. The same holds of what the caller's rules need (an owner
    /// changed outside the API).
    #[tokio::test]
    async fn a_condition_is_checked_by_dynamodb_on_the_stored_item_not_only_on_the_read() {
        let store = crate::store::loopback_store("conditions").await;
        let model =
            Model::parse("s.graphql", "type Farm @model { name: String! }").expect("a schema");
        let farm = model.type_def("Farm").expect("Farm");
        let scope = RequestScope::new(&store, 100);
        let hill = Filter::Field {
            field: "name".into(),
            test: Test::Eq(AttrValue::S("Hill".into())),
        };
        let by_condition = Guard::version(None).with_condition(Some(hill.clone()));
        let by_rule = Guard {
            rule: Some((hill, EngineError::Unauthorized("no".into()))),
            ..Guard::default()
        };
        for (id, guard) in [("f", by_condition), ("g", by_rule)] {
            create_farms(&scope, &model, farm, &[id]).await;

            let read = read_to_change(&scope, farm, id, &Guard::default())
                .await
                .expect("the farm");
            let mut outside = read.clone();
            outside.insert("name".into(), AttrValue::S("Dale".into()));
            let write = Write::Put {
                item: outside,
                condition: Vec::new(),
            };
            store.transact_write(vec![write]).await.expect("a write");

            let change = vec![("name".to_owned(), Some(AttrValue::S("Vale".into())))];
            let planned = plan_update(&model, farm, read, &change, &guard, &BTreeSet::new())
                .expect("holds on the read");
            assert!(matches!(
                commit(&scope, planned.plan).await,
                Ok(Err(Purpose::Node))
            ));
            let stored = store
                .get_item_consistent(&Key::same(keys::node_key(id)))
                .await
                .expect("a read")
                .expect("the farm");
            assert_eq!(
                stored.get("name"),
                Some(&AttrValue::S("Dale".into())),
                "{id}"
            );
        }
    }

    /// An update planned from a read, committed after a child was created under the node and
    /// an edge added from it: the update writes only the fields it changes, so the count and
    /// the edge-set entry written meanwhile stay, and the version it read still holds.
    #[tokio::test]
    async fn an_update_keeps_counts_and_edge_set_entries_written_after_its_read() {
        let model = Model::parse(
            "s.graphql",
            "type Farm @model { name: String! cows: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\") likes: [Farm] @outgoing(edge: \"Likes\") }\n\
             type Cow @model { name: String! farmId: ID farm: Farm @belongsTo(field: \"farmId\") }\n\
             type Likes @edge(from: \"Farm\", to: \"Farm\")",
        )
        .expect("a schema");
        let store = crate::store::loopback_store_indexed("narrow-updates", &model.indexes).await;
        let (farm, cow) = (
            model.type_def("Farm").expect("Farm"),
            model.type_def("Cow").expect("Cow"),
        );
        let scope = RequestScope::new(&store, 100);
        create_farms(&scope, &model, farm, &["a", "b"]).await;
        let read = read_to_change(&scope, farm, "a", &Guard::default())
            .await
            .expect("the farm");

        let fields = vec![
            ("name".to_owned(), Some(AttrValue::S("Daisy".into()))),
            ("farmId".to_owned(), Some(AttrValue::S("a".into()))),
        ];
        let item = Arc::new(new_item(&model, cow, "c", &fields).expect("an item"));
        let plan = plan_new_item(&model, cow, &item).expect("a plan");
        assert!(matches!(commit(&scope, plan).await, Ok(Ok(()))));
        let likes = model.edge_def("Likes").expect("Likes");
        super::super::edge_writes::add_edge(&scope, &model, likes, "a", "b", &Item::default())
            .await
            .expect("an edge");

        let change = vec![("name".to_owned(), Some(AttrValue::S("Vale".into())))];
        let guard = Guard::version(Some(1));
        let planned = plan_update(&model, farm, read, &change, &guard, &BTreeSet::new())
            .expect("the version read is the version stored");
        assert!(matches!(commit(&scope, planned.plan).await, Ok(Ok(()))));
        let stored = store
            .get_item_consistent(&Key::same(keys::node_key("a")))
            .await
            .expect("a read")
            .expect("the farm");
        assert_eq!(stored.get("name"), Some(&AttrValue::S("Vale".into())));
        assert_eq!(stored.get("version"), Some(&AttrValue::N("2".into())));
        let count = |attribute: String| stored.get(&attribute).and_then(AttrValue::as_i64);
        assert_eq!(count(keys::members_count_attribute(1, "Cow")), Some(1));
        assert_eq!(count(keys::edges_count_attribute("Likes", true)), Some(1));
        assert!(
            matches!(stored.get("edges"), Some(AttrValue::Ss(set)) if set.len() == 1),
            "{stored:?}"
        );
    }

    /// A delete planned from a read of a node and its edges, committed after an edge to or
    /// from it was added: the edge moved no version, but the node's count of its edges is no
    /// longer the number the delete read, so it fails as a lost race and nothing is written.
    /// The same when the node was read, then one edge removed and another added before its
    /// edges were read: the count is as read, but not the number of edges read.
    #[tokio::test]
    async fn a_delete_that_read_the_edges_before_one_was_added_reads_them_again() {
        let model = Model::parse(
            "s.graphql",
            "type Farm @model { name: String! }\n\
             type Likes @edge(from: \"Farm\", to: \"Farm\")",
        )
        .expect("a schema");
        let store = crate::store::loopback_store_indexed("stale-deletes", &model.indexes).await;
        let farm = model.type_def("Farm").expect("Farm");
        let scope = RequestScope::new(&store, 100);
        create_farms(&scope, &model, farm, &["a", "b", "c", "d"]).await;
        let likes = model.edge_def("Likes").expect("Likes");
        let (empty, unguarded) = (Item::default(), Guard::default());
        let add = |from: &'static str, to: &'static str| {
            super::super::edge_writes::add_edge(&scope, &model, likes, from, to, &empty)
        };
        let read = |id: &'static str| read_to_change(&scope, farm, id, &unguarded);
        let stale_delete = |id: &'static str, current: Item, edges: Vec<Arc<Item>>| {
            let (plan, agree) = plan_delete(
                &model,
                farm,
                (&Arc::new(current), 1),
                &unguarded,
                &edges,
                &Learned::default(),
            );
            assert!(agree, "the counts as read are the edges read");
            let scope = &scope;
            async move {
                assert!(
                    matches!(commit(scope, plan).await, Ok(Err(Purpose::Node))),
                    "{id}"
                );
                assert!(
                    read_node_consistent(scope, "Farm", id)
                        .await
                        .expect("a read")
                        .is_some(),
                    "{id} stays"
                );
            }
        };
        // An edge out of "a", and one into "c", added after their edges were read.
        for (deleted, from, to) in [("a", "a", "b"), ("c", "b", "c")] {
            let current = read(deleted).await.expect("the farm");
            let edges = edges_touching(&scope, &model, farm, deleted)
                .await
                .expect("the edges");
            add(from, to).await.expect("an edge");
            stale_delete(deleted, current, edges).await;
        }
        // "d" is read with one edge in (a → d); it goes and another comes (b → d) around the
        // read of d's edges, so d's count is as read but d's edges are not: the delete does not
        // commit on them, it reads again (only a last attempt that still finds them apart takes
        // the counts as read, as broken data).
        add("a", "d").await.expect("an edge");
        let current = read("d").await.expect("the farm");
        super::super::edge_writes::remove_edge(&scope, &model, "Likes", "a", "d")
            .await
            .expect("a removal");
        let edges = edges_touching(&scope, &model, farm, "d")
            .await
            .expect("the edges");
        add("b", "d").await.expect("an edge");
        assert_eq!(
            edge_counts_held(&model, farm, &current, &edges, false),
            None
        );
        let held = edge_counts_held(&model, farm, &current, &edges, true).expect("held as read");
        assert!(held.contains(&Clause::Equals(
            keys::edges_count_attribute("Likes", false),
            AttrValue::N("1".into())
        )));
        // Read again, they agree, and the delete takes d's edge with it.
        delete_node(&scope, &model, farm, "d", &Guard::default())
            .await
            .expect("a delete")
            .expect("d was there");
        let left = edges_touching(&scope, &model, farm, "b")
            .await
            .expect("the edges");
        assert!(
            !left
                .iter()
                .any(|edge| edge.get("to") == Some(&AttrValue::S("d".into()))),
            "{left:?}"
        );
    }
}
