//! Write plans: the writes of one operation, each with the reason it is there, committed as one
//! transaction. A failed condition comes back as the reason of the write that failed, so an
//! operation can tell a lost race (read again) from a taken unique value or a missing target.
//! Before it is sent, the writes on one item are folded into one (`fold`).
//!
//! Invariant: a plan commits whole or not at all, and its changes are recorded on the request's
//! scope only once it has committed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::engine::derive::LIST_COUNT;
use crate::engine::error::EngineError;
use crate::engine::rules::{Access, within_limits};
use crate::engine::scope::RequestScope;
use crate::keys;

use crate::keys::TYPENAME;
use crate::model::{FieldKind, Model, Operation, SlotDef, TypeDef};
use crate::store::{
    AttrValue, Changes, Clause, Filter, Item, Key, MAX_TRANSACTION_ITEMS, StoreError, Write,
};

/// Why a write is in a plan: what a failed condition on it means.
#[derive(Debug, Clone)]
pub enum Purpose {
    /// A node, conditioned on the version that was read: another writer got there first.
    Node,
    TakeUnique {
        type_name: String,
        field: String,
    },
    FreeUnique,
    Reference {
        field: String,
        target: String,
        id: String,
    },
    /// An edge item, conditioned on what was read of it: another writer got there first.
    Edge,
    /// A count taken from the node `id` (a former parent), on condition that it exists: it is
    /// gone, and its counts with it.
    Count {
        id: String,
    },
}

#[derive(Default)]
pub struct Plan {
    pub(super) writes: Vec<Write>,
    pub(super) purposes: Vec<Purpose>,
    /// The part of the operation each write belongs to: a member of a batch; 0 otherwise.
    pub(super) parts: Vec<usize>,
}

/// Two writes of a plan on one item that do not fold into one write, which DynamoDB would
/// refuse in one transaction: the parts of the earlier and the later, and the later's purpose.
#[derive(Debug)]
pub struct Clash {
    pub first: usize,
    pub second: usize,
    pub purpose: Purpose,
}

impl Plan {
    pub fn push(&mut self, write: Write, purpose: Purpose) {
        self.writes.push(write);
        self.purposes.push(purpose);
        self.parts.push(0);
    }

    pub fn append(&mut self, other: Plan) {
        self.writes.extend(other.writes);
        self.purposes.extend(other.purposes);
        self.parts.extend(other.parts);
    }

    /// Appends `other`'s writes as part `part` of this plan.
    pub fn append_as(&mut self, other: Plan, part: usize) {
        self.parts
            .extend(std::iter::repeat_n(part, other.writes.len()));
        self.writes.extend(other.writes);
        self.purposes.extend(other.purposes);
    }

    pub fn len(&self) -> usize {
        self.writes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Frees each unique value of `held_at` (a key as values are compared today → the key the
    /// node holds it at) at the key the node holds it at.
    pub fn free_at(&mut self, held_at: &HashMap<String, String>) {
        for (write, purpose) in self.writes.iter_mut().zip(&self.purposes) {
            if matches!(purpose, Purpose::FreeUnique)
                && let Write::Delete { key, .. } = write
                && let Some(held) = held_at.get(&key.pk)
            {
                *key = Key::same(held.clone());
            }
        }
    }
}

/// The plans of an operation's parts (the members of a batch, or the one change) as one plan,
/// folded; refused before anything is sent when its writes exceed one transaction
/// (`TransactionTooLarge`) or two parts write one item in ways that do not fold (a unique value
/// taken twice: `UniqueConstraintViolation`).
pub fn join(parts: Vec<Plan>, batch: bool) -> Result<Plan, EngineError> {
    let mut plan = Plan::default();
    for (index, part) in parts.into_iter().enumerate() {
        plan.append_as(part, index);
    }
    let plan = plan.folded().map_err(|clash| clash_error(clash, batch))?;
    if plan.len() > MAX_TRANSACTION_ITEMS {
        return Err(EngineError::TransactionTooLarge(format!(
            "this {} needs {} writes; one transaction holds at most {MAX_TRANSACTION_ITEMS} (a \
             node takes one, and one more for each unique value, reference and edge it changes)",
            if batch { "batch" } else { "change" },
            plan.len()
        )));
    }
    Ok(plan)
}

/// What two writes on one item tell the client.
fn clash_error(clash: Clash, batch: bool) -> EngineError {
    let Clash {
        first,
        second,
        purpose,
    } = clash;
    let error = match purpose {
        Purpose::TakeUnique { .. } | Purpose::Reference { .. } => refused(purpose),
        _ if batch && first != second => EngineError::bad_input(format!(
            "this member changes an item that member {first} changes too; change it in a \
             batch of its own"
        )),
        _ => EngineError::bad_input("this input names one node or edge twice; name each once"),
    };
    if batch { error.in_batch(second) } else { error }
}

/// Commits a plan as one transaction, for tests that race a plan against another writer; a
/// failed condition comes back as the purpose of the write that failed.
#[cfg(test)]
pub async fn commit(scope: &RequestScope, plan: Plan) -> Result<Result<(), Purpose>, EngineError> {
    Ok(commit_at(scope, plan)
        .await?
        .map_err(|(_, purpose)| purpose))
}

/// Commits a plan as one transaction; a failed condition comes back as the purpose of the
/// write that failed and the part of the plan it belongs to. A plan over DynamoDB's 100 items
/// is refused before anything is sent.
pub async fn commit_at(
    scope: &RequestScope,
    mut plan: Plan,
) -> Result<Result<(), (usize, Purpose)>, EngineError> {
    plan.readable_references(scope)?;
    let plan = plan.folded().map_err(|clash| {
        tracing::error!(?clash, "a plan writes one item twice");
        EngineError::Internal
    })?;
    if plan.writes.len() > MAX_TRANSACTION_ITEMS {
        return Err(EngineError::TransactionTooLarge(format!(
            "this change needs {} writes; one transaction holds at most {MAX_TRANSACTION_ITEMS}",
            plan.writes.len()
        )));
    }
    match scope.store.transact_write(plan.writes).await {
        Ok(()) => Ok(Ok(())),
        Err(StoreError::ConditionFailed { index }) => plan
            .purposes
            .get(index)
            .cloned()
            .map(|purpose| Err((plan.parts[index], purpose)))
            .ok_or(EngineError::Internal),
        Err(e) => Err(EngineError::from_store(&e)),
    }
}

impl Plan {
    /// Makes each node the plan refers to (a `@belongsTo` key, a parent counted, an edge's
    /// end) one the caller may read: its read rules join the reference's condition, so that a
    /// node the caller may not read fails it exactly as a node that is not there, and nothing
    /// is written. A reference is a write whose condition names the types the node may be
    /// (`__typename`), whatever purpose it kept when writes of one item were folded together.
    fn readable_references(&mut self, scope: &RequestScope) -> Result<(), EngineError> {
        for (index, purpose) in self.purposes.iter().enumerate() {
            // The node's own write: the caller's rules for it are its guard's.
            if matches!(purpose, Purpose::Node) {
                continue;
            }
            let Some(condition) = self.writes[index].condition_mut() else {
                continue;
            };
            let types: Vec<String> = condition
                .iter()
                .flat_map(|clause| match clause {
                    Clause::OneOf(attribute, values) if attribute == TYPENAME => values
                        .iter()
                        .filter_map(AttrValue::as_str)
                        .map(str::to_owned)
                        .collect(),
                    Clause::Equals(attribute, value) if attribute == TYPENAME => {
                        value.as_str().map(str::to_owned).into_iter().collect()
                    }
                    _ => Vec::new(),
                })
                .collect();
            if types.is_empty() {
                continue;
            }
            let types: Vec<&str> = types.iter().map(String::as_str).collect();
            let access = scope.read_access(&types);
            match within_limits(access, Operation::Read, &types.join(" or "))? {
                Access::All => {}
                Access::Where(filter) => condition.push(Clause::Holds(filter)),
                // Never holds: fails as a node that is not there does.
                Access::Denied => condition.push(Clause::Holds(Filter::Any(Vec::new()))),
            }
        }
        Ok(())
    }
}

/// What a failed condition tells the client.
pub fn refused(purpose: Purpose) -> EngineError {
    match purpose {
        Purpose::TakeUnique { type_name, field } => {
            EngineError::UniqueConstraintViolation { type_name, field }
        }
        Purpose::Reference { field, target, id } => {
            EngineError::bad_input(format!("{field}: there is no {target} with id {id}"))
        }
        Purpose::Node | Purpose::FreeUnique | Purpose::Edge | Purpose::Count { .. } => {
            EngineError::Internal
        }
    }
}

pub use crate::engine::derive::version_is;

/// A condition that `attribute` is as it was read: `value`, or missing.
pub fn as_read(attribute: &str, value: Option<&AttrValue>) -> Clause {
    match value {
        Some(value) => Clause::Equals(attribute.to_owned(), value.clone()),
        None => Clause::Missing(attribute.to_owned()),
    }
}

/// The write that turns the stored node `current` into `next`, on `condition`: it sets what
/// changed and removes what is gone, and leaves every other attribute as it is stored. So
/// additions to the node's counts and edge set (a child created, an edge added), which do not
/// move its version, commute with it. Where it does replace a count or the edge set itself (a
/// repair), it holds on that attribute being as read.
pub fn node_update(current: &Item, next: &Item, mut condition: Vec<Clause>) -> Write {
    let key = Key {
        pk: crate::engine::derive::text(current, keys::PK).to_owned(),
        sk: crate::engine::derive::text(current, keys::SK).to_owned(),
    };
    let mut changes = Changes::default();
    for (name, value) in next.iter() {
        if matches!(name.as_str(), keys::PK | keys::SK) || current.get(name) == Some(value) {
            continue;
        }
        changes.set.push((name.clone(), value.clone()));
    }
    changes.remove = current
        .keys()
        .filter(|name| !next.contains_key(name))
        .cloned()
        .collect();
    let replaced = changes
        .set
        .iter()
        .map(|(name, _)| name)
        .chain(&changes.remove)
        .filter(|name| is_link_attribute(name));
    for name in replaced {
        let clause = as_read(name, current.get(name));
        if !condition.contains(&clause) {
            condition.push(clause);
        }
    }
    Write::update(key, changes, condition)
}

/// Whether a node attribute is one that other nodes' writes add to without reading the node:
/// a count, or the edge set.
fn is_link_attribute(name: &str) -> bool {
    name == EDGE_SET || keys::is_count_attribute(name)
}

/// The attribute of a node that holds its edge set.
pub const EDGE_SET: &str = "edges";

/// A write that adds `counts` to the node `id`'s counts and puts `added` into (or takes
/// `taken` out of) its edge set, without reading it and without moving its version: it
/// commutes with every other such write and with updates of the node's fields. With nothing
/// to change, it only checks `condition`.
pub fn adjust_node(
    id: &str,
    counts: Vec<(String, i64)>,
    added: Vec<String>,
    taken: Vec<String>,
    condition: Vec<Clause>,
) -> Write {
    let set = |entries: Vec<String>| {
        if entries.is_empty() {
            Vec::new()
        } else {
            vec![(EDGE_SET.to_owned(), entries)]
        }
    };
    let changes = Changes {
        add: counts,
        add_to_set: set(added),
        take_from_set: set(taken),
        ..Changes::default()
    };
    Write::update(Key::same(keys::node_key(id)), changes, condition)
}

/// The node's version, refused when the client expected another.
pub fn check_version(current: &Item, expected: Option<i64>) -> Result<i64, EngineError> {
    let version = crate::engine::derive::version(current);
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
    let id = crate::engine::derive::text(next, "id").to_owned();
    for field in type_def.unique_fields() {
        let key_of =
            |item: &Item| crate::engine::derive::unique_item_key(&type_def.name, &field.name, item);
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
                    item: Item::from_iter([
                        (keys::PK.to_owned(), AttrValue::S(new_key.clone())),
                        (keys::SK.to_owned(), AttrValue::S(new_key)),
                        (
                            TYPENAME.to_owned(),
                            AttrValue::S(keys::unique_typename(&type_def.name, &field.name)),
                        ),
                        ("id".to_owned(), AttrValue::S(id.clone())),
                    ]),
                    condition: vec![Clause::NotExists],
                },
                Purpose::TakeUnique {
                    type_name: type_def.name.clone(),
                    field: field.name.clone(),
                },
            );
        }
    }
}

/// Adds the deletes of every unique-value item `current` holds.
pub fn free_unique_values(type_def: &TypeDef, current: &Item, id: &str, plan: &mut Plan) {
    for field in type_def.unique_fields() {
        if let Some(key) =
            crate::engine::derive::unique_item_key(&type_def.name, &field.name, current)
        {
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
    let own_id = crate::engine::derive::text(next, "id");
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
                    TYPENAME.to_owned(),
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

/// Adds what a node's write changes in counts (`totalCount`), from `current` (none for a
/// create) to `next` (none for a delete): the counter of its type index shard, once created or
/// deleted, and the member counts of each `@hasMany` it joins or leaves through its keys. A
/// parent it joins must exist and have a type that owns the relation; a parent it leaves is
/// counted down only if it still exists (the operation learns otherwise from a failed
/// `Purpose::Count` and plans again with it in `absent`).
pub fn count_members(
    model: &Model,
    type_def: &TypeDef,
    current: Option<&Item>,
    next: Option<&Item>,
    absent: &BTreeSet<String>,
    plan: &mut Plan,
) {
    if let Some(list) = type_def.list {
        let delta = match (current, next) {
            (None, Some(_)) => 1,
            (Some(_), None) => -1,
            _ => 0,
        };
        if delta != 0 {
            let id = current
                .or(next)
                .map_or("", |item| crate::engine::derive::text(item, "id"));
            plan.push(
                Write::Tally {
                    key: Key::same(keys::list_count_key(
                        &type_def.name,
                        keys::list_shard(id, list.shards),
                    )),
                    typename: keys::list_count_typename(&type_def.name),
                    counts: vec![(LIST_COUNT.to_owned(), delta)],
                },
                Purpose::Node,
            );
        }
    }
    for slot in &type_def.slots {
        let key_of = |item: Option<&Item>| {
            item.and_then(|item| item.get(&slot.foreign_key))
                .and_then(AttrValue::as_str)
                .map(str::to_owned)
        };
        let (old, new) = (key_of(current), key_of(next));
        if old == new {
            continue;
        }
        let attribute = keys::members_count_attribute(slot.slot, &slot.element);
        if let Some(old) = old.filter(|old| !absent.contains(old)) {
            plan.push(
                adjust_node(
                    &old,
                    vec![(attribute.clone(), -1)],
                    Vec::new(),
                    Vec::new(),
                    vec![Clause::Exists],
                ),
                Purpose::Count { id: old },
            );
        }
        if let Some(new) = new {
            let owners = relation_owners(model, slot);
            plan.push(
                adjust_node(
                    &new,
                    vec![(attribute, 1)],
                    Vec::new(),
                    Vec::new(),
                    vec![Clause::OneOf(
                        TYPENAME.to_owned(),
                        owners
                            .iter()
                            .map(|t| AttrValue::S((*t).to_owned()))
                            .collect(),
                    )],
                ),
                Purpose::Reference {
                    field: slot.foreign_key.clone(),
                    target: owners.join(" or "),
                    id: new,
                },
            );
        }
    }
}

/// The types with a `@hasMany` over `slot`: the types a node's key in it may name.
fn relation_owners<'m>(model: &'m Model, slot: &SlotDef) -> Vec<&'m str> {
    model
        .types
        .iter()
        .filter(|owner| {
            owner.fields.iter().any(|field| {
                matches!(&field.kind, FieldKind::HasMany(has_many)
                    if has_many.slot == slot.slot && has_many.element == slot.element)
            })
        })
        .map(|owner| owner.name.as_str())
        .collect()
}

/// Makes a written node visible to the rest of the request (or its absence, for `None`).
pub fn remember(scope: &RequestScope, id: &str, item: Option<Arc<Item>>) {
    scope.loader.prime(&keys::node_key(id), item);
}

/// A node item with nothing but its key, type and id: for tests of plans.
#[cfg(test)]
pub(super) fn bare_node(id: &str, typename: &str) -> Item {
    Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(keys::node_key(id))),
        (keys::SK.to_owned(), AttrValue::S(keys::node_key(id))),
        (TYPENAME.to_owned(), AttrValue::S(typename.to_owned())),
        ("id".to_owned(), AttrValue::S(id.to_owned())),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_update_writes_what_changed_and_holds_replaced_counts_to_their_read() {
        let mut current = bare_node("f", "Farm");
        current.insert("name".to_owned(), AttrValue::S("Hill".to_owned()));
        current.insert("logoId".to_owned(), AttrValue::S("l".to_owned()));
        current.insert("count#in#Likes".to_owned(), AttrValue::N("2".to_owned()));
        let mut next = current.clone();
        next.insert("name".to_owned(), AttrValue::S("Vale".to_owned()));
        next.remove("logoId");
        let Write::Update {
            changes, condition, ..
        } = node_update(&current, &next, vec![version_is(&current, 1)])
        else {
            panic!("an update");
        };
        assert_eq!(
            changes.set,
            [("name".to_owned(), AttrValue::S("Vale".to_owned()))]
        );
        assert_eq!(changes.remove, ["logoId"]);
        assert_eq!(condition, [version_is(&current, 1)], "no count is replaced");

        // A repair that sets a count and the edge set holds on both as read.
        next.insert("count#in#Likes".to_owned(), AttrValue::N("3".to_owned()));
        next.insert(
            EDGE_SET.to_owned(),
            AttrValue::Ss(["A#1".to_owned()].into()),
        );
        let Write::Update { condition, .. } = node_update(&current, &next, Vec::new()) else {
            panic!("an update");
        };
        assert!(condition.contains(&Clause::Equals(
            "count#in#Likes".to_owned(),
            AttrValue::N("2".to_owned())
        )));
        assert!(condition.contains(&Clause::Missing(EDGE_SET.to_owned())));
        assert!(matches!(
            node_update(&current, &current, Vec::new()),
            Write::Check { .. }
        ));
    }
}
