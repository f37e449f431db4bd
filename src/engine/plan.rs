//! Write plans: the writes of one operation, each with the reason it is there, committed as one
//! transaction. A failed condition comes back as the reason of the write that failed, so an
//! operation can tell a lost race (read again) from a taken unique value or a missing target.
//!
//! Invariant: a plan commits whole or not at all, and its changes are recorded on the request's
//! scope only once it has committed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::error::EngineError;
use super::rules::{Access, within_limits};
use super::scope::RequestScope;
use crate::changes::Change;
use crate::keys;

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
    writes: Vec<Write>,
    purposes: Vec<Purpose>,
    /// The part of the operation each write belongs to: a member of a batch; 0 otherwise.
    parts: Vec<usize>,
    /// What the writes change, recorded when they commit.
    changes: Vec<Change>,
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
        self.changes.extend(other.changes);
    }

    /// Appends `other`'s writes as part `part` of this plan.
    pub fn append_as(&mut self, other: Plan, part: usize) {
        self.parts
            .extend(std::iter::repeat_n(part, other.writes.len()));
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

    /// The plan with the writes on one item folded into one, as one transaction needs them:
    /// checks and updates of one node merge (their conditions joined, their changes in one
    /// update expression when no attribute is named twice), a check or an addition to the
    /// counts of a node the plan puts whole goes into that put when its conditions hold on the
    /// put item, additions to the counts and edge set of a node the plan deletes are dropped,
    /// one edge deleted from both ends is deleted once, and a unique value one node frees and
    /// another takes changes hands in one put. Any other pair is a [`Clash`].
    pub fn folded(self) -> Result<Plan, Clash> {
        let mut folded = Plan {
            changes: self.changes,
            ..Plan::default()
        };
        let mut at: HashMap<Key, usize> = HashMap::new();
        let writes = self.writes.into_iter().zip(self.purposes).zip(self.parts);
        for ((write, purpose), part) in writes {
            let key = write.key();
            let Some(&index) = at.get(&key) else {
                at.insert(key, folded.writes.len());
                folded.writes.push(write);
                folded.purposes.push(purpose);
                folded.parts.push(part);
                continue;
            };
            let earlier = (
                folded.writes[index].clone(),
                folded.purposes[index].clone(),
                folded.parts[index],
            );
            let later_purpose = purpose.clone();
            let Some((write, purpose, part)) = fold(earlier, (write, purpose, part)) else {
                return Err(Clash {
                    first: folded.parts[index],
                    second: part,
                    purpose: later_purpose,
                });
            };
            folded.writes[index] = write;
            folded.purposes[index] = purpose;
            folded.parts[index] = part;
        }
        Ok(folded)
    }
}

type Planned = (Write, Purpose, usize);

/// Two writes on one item as one write, if they fold (see [`Plan::folded`]).
fn fold(earlier: Planned, later: Planned) -> Option<Planned> {
    use Write::{Check, Delete, Put, Tally, Update};
    let joined = |a: &[Clause], b: &[Clause]| {
        let mut condition = a.to_vec();
        condition.extend(b.iter().filter(|clause| !a.contains(clause)).cloned());
        condition
    };
    let changes_of = |write: &Write| match write {
        Update { changes, .. } => Some(changes.clone()),
        _ => None,
    };
    match (&earlier.0, &later.0) {
        (
            Check { key, condition: a }
            | Update {
                key, condition: a, ..
            },
            Check { condition: b, .. } | Update { condition: b, .. },
        ) => {
            // Two references that want different types of one node cannot both hold: the
            // later one is refused for what it is, not the earlier for what the later wants.
            if !types_meet(a, b) {
                return None;
            }
            let changes = match (changes_of(&earlier.0), changes_of(&later.0)) {
                (Some(a), Some(b)) => Some(a.merged(&b)?),
                (a, b) => a.or(b),
            };
            let condition = joined(a, b);
            let key = key.clone();
            let write = match changes {
                Some(changes) => Update {
                    key,
                    changes,
                    condition,
                },
                None => Check { key, condition },
            };
            // The node's own write (an update on its version) speaks for the merged one: when
            // it fails, another writer changed the node, and the operation reads again. (The
            // node exists, being written; a count or reference on it that failed with it is
            // decided on that read.)
            if matches!(later.1, Purpose::Node) && !matches!(earlier.1, Purpose::Node) {
                return Some((write, later.1, later.2));
            }
            Some((write, earlier.1, earlier.2))
        }
        (
            Put {
                item,
                condition: put,
            },
            Check { condition, .. } | Update { condition, .. },
        ) if implied(&later.0, item, condition) => {
            let write = Put {
                item: counted(item, &later.0),
                condition: put.clone(),
            };
            Some((write, earlier.1, earlier.2))
        }
        (
            Check { condition, .. } | Update { condition, .. },
            Put {
                item,
                condition: put,
            },
        ) if implied(&earlier.0, item, condition) => {
            let write = Put {
                item: counted(item, &earlier.0),
                condition: put.clone(),
            };
            Some((write, later.1, later.2))
        }
        // Counts and edge-set entries of a node the plan deletes go with it.
        (Delete { .. }, Update { changes, .. })
            if changes.only_adds_and_takes()
                && matches!(later.1, Purpose::Node | Purpose::Count { .. }) =>
        {
            Some(earlier)
        }
        (Update { changes, .. }, Delete { .. })
            if changes.only_adds_and_takes()
                && matches!(earlier.1, Purpose::Node | Purpose::Count { .. }) =>
        {
            Some(later)
        }
        (
            Tally {
                key,
                typename,
                counts: a,
            },
            Tally { counts: b, .. },
        ) => {
            let mut counts = a.clone();
            add_counts(&mut counts, b);
            let write = Tally {
                key: key.clone(),
                typename: typename.clone(),
                counts,
            };
            Some((write, earlier.1, earlier.2))
        }
        (Delete { condition: a, .. }, Delete { condition: b, .. }) if a == b => Some(earlier),
        // One edge deleted from both ends, read at different times: both reads must still
        // hold, or the edge changed and the operation reads again.
        (Delete { key, condition: a }, Delete { condition: b, .. })
            if matches!((&earlier.1, &later.1), (Purpose::Edge, Purpose::Edge)) =>
        {
            let write = Delete {
                key: key.clone(),
                condition: joined(a, b),
            };
            Some((write, earlier.1, earlier.2))
        }
        (Delete { condition, .. }, Put { item, .. })
            if matches!(earlier.1, Purpose::FreeUnique)
                && matches!(later.1, Purpose::TakeUnique { .. }) =>
        {
            let write = Put {
                item: item.clone(),
                condition: condition.clone(),
            };
            Some((write, later.1, later.2))
        }
        (Put { item, .. }, Delete { condition, .. })
            if matches!(earlier.1, Purpose::TakeUnique { .. })
                && matches!(later.1, Purpose::FreeUnique) =>
        {
            let write = Put {
                item: item.clone(),
                condition: condition.clone(),
            };
            Some((write, earlier.1, earlier.2))
        }
        _ => None,
    }
}

/// Adds `more` to `counts`, attribute by attribute.
fn add_counts(counts: &mut Vec<(String, i64)>, more: &[(String, i64)]) {
    for (attribute, delta) in more {
        match counts.iter_mut().find(|(name, _)| name == attribute) {
            Some((_, total)) => *total += delta,
            None => counts.push((attribute.clone(), *delta)),
        }
    }
}

/// `item` with the counts of `write` (an update of that item that only adds to them) added.
fn counted(item: &Item, write: &Write) -> Item {
    let mut item = item.clone();
    if let Write::Update { changes, .. } = write {
        changes.apply(&mut item);
    }
    item
}

/// Whether the `__typename` two conditions allow can be one type.
fn types_meet(a: &[Clause], b: &[Clause]) -> bool {
    let allowed = |condition: &[Clause]| -> Option<Vec<AttrValue>> {
        condition.iter().find_map(|clause| match clause {
            Clause::Equals(attribute, value) if attribute == "__typename" => {
                Some(vec![value.clone()])
            }
            Clause::OneOf(attribute, values) if attribute == "__typename" => Some(values.clone()),
            _ => None,
        })
    };
    match (allowed(a), allowed(b)) {
        (Some(a), Some(b)) => a.iter().any(|t| b.contains(t)),
        _ => true,
    }
}

/// Whether a check or an update (`write`, with `condition`) of an item the plan puts whole says
/// nothing the put does not: it only adds to counts, and its condition holds on the item as
/// put.
fn implied(write: &Write, item: &Item, condition: &[Clause]) -> bool {
    if let Write::Update { changes, .. } = write
        && !changes.only_adds_numbers()
    {
        return false;
    }
    condition.iter().all(|clause| match clause {
        Clause::Exists => true,
        Clause::NotExists => false,
        Clause::Missing(attribute) => item.get(attribute).is_none(),
        Clause::Count(attribute, count) => {
            item.get(attribute).and_then(AttrValue::as_i64).unwrap_or(0) == *count
        }
        Clause::Equals(attribute, value) | Clause::AbsentOrEquals(attribute, value) => {
            item.get(attribute) == Some(value)
        }
        Clause::OneOf(attribute, values) => item
            .get(attribute)
            .is_some_and(|value| values.contains(value)),
        Clause::Holds(filter) => filter.matches(item),
    })
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
        Ok(()) => {
            scope.record_changes(plan.changes);
            Ok(Ok(()))
        }
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
                    Clause::OneOf(attribute, values) if attribute == "__typename" => values
                        .iter()
                        .filter_map(AttrValue::as_str)
                        .map(str::to_owned)
                        .collect(),
                    Clause::Equals(attribute, value) if attribute == "__typename" => {
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

pub fn version_is(version: i64) -> Clause {
    Clause::Equals("version".to_owned(), AttrValue::N(version.to_string()))
}

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
        pk: super::derive::text(current, "PK").to_owned(),
        sk: super::derive::text(current, "SK").to_owned(),
    };
    let mut changes = Changes::default();
    for (name, value) in next.iter() {
        if matches!(name.as_str(), "PK" | "SK") || current.get(name) == Some(value) {
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
    if changes.is_empty() {
        return Write::Check { key, condition };
    }
    Write::Update {
        key,
        changes,
        condition,
    }
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
    let key = Key::same(keys::node_key(id));
    let changes = Changes {
        add: counts,
        add_to_set: set(added),
        take_from_set: set(taken),
        ..Changes::default()
    };
    if changes.is_empty() {
        return Write::Check { key, condition };
    }
    Write::Update {
        key,
        changes,
        condition,
    }
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
                    item: Item::from_iter([
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
                .map_or("", |item| super::derive::text(item, "id"));
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
                        "__typename".to_owned(),
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

/// The attribute of a type index shard's counter item that holds its count.
pub const LIST_COUNT: &str = "count";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, typename: &str) -> Item {
        Item::from_iter([
            ("PK".to_owned(), AttrValue::S(keys::node_key(id))),
            ("SK".to_owned(), AttrValue::S(keys::node_key(id))),
            ("__typename".to_owned(), AttrValue::S(typename.to_owned())),
            ("id".to_owned(), AttrValue::S(id.to_owned())),
        ])
    }

    fn is_type(typename: &str) -> Vec<Clause> {
        vec![Clause::OneOf(
            "__typename".to_owned(),
            vec![AttrValue::S(typename.to_owned())],
        )]
    }

    fn reference() -> Purpose {
        Purpose::Reference {
            field: "farmId".to_owned(),
            target: "Farm".to_owned(),
            id: "f".to_owned(),
        }
    }

    fn bump(id: &str, removed: &[&str]) -> Write {
        adjust_node(
            id,
            Vec::new(),
            Vec::new(),
            removed.iter().map(|entry| (*entry).to_owned()).collect(),
            vec![Clause::Exists],
        )
    }

    #[test]
    fn counts_on_one_item_add_up_and_go_into_a_put_of_it() {
        let counting = |id: &str, delta: i64| {
            adjust_node(
                id,
                vec![("count#GSI01#Cow".to_owned(), delta)],
                Vec::new(),
                Vec::new(),
                vec![Clause::Exists],
            )
        };
        let tally = |delta: i64| Write::Tally {
            key: Key::same(keys::list_count_key("Cow", 1)),
            typename: keys::list_count_typename("Cow"),
            counts: vec![(LIST_COUNT.to_owned(), delta)],
        };
        let mut plan = Plan::default();
        plan.push(counting("a", 1), Purpose::Node);
        plan.push(counting("a", 1), Purpose::Count { id: "a".to_owned() });
        plan.push(tally(1), Purpose::Node);
        plan.push(tally(-1), Purpose::Node);
        plan.push(tally(1), Purpose::Node);
        let folded = plan.folded().expect("folds");
        let [
            Write::Update {
                changes: Changes { add: bumped, .. },
                ..
            },
            Write::Tally {
                counts: tallied, ..
            },
        ] = folded.writes.as_slice()
        else {
            panic!("one bump and one tally: {:?}", folded.writes);
        };
        assert_eq!(bumped, &[("count#GSI01#Cow".to_owned(), 2)]);
        assert_eq!(tallied, &[(LIST_COUNT.to_owned(), 1)]);

        // A node that is its own parent: the count goes into the node as put.
        let mut own = node("f", "Farm");
        own.insert("count#GSI01#Cow".to_owned(), AttrValue::N("4".to_owned()));
        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: own,
                condition: vec![version_is(3)],
            },
            Purpose::Node,
        );
        plan.push(counting("f", -1), Purpose::Count { id: "f".to_owned() });
        let folded = plan.folded().expect("folds");
        let [Write::Put { item, .. }] = folded.writes.as_slice() else {
            panic!("one put: {:?}", folded.writes);
        };
        assert_eq!(
            item.get("count#GSI01#Cow"),
            Some(&AttrValue::N("3".to_owned()))
        );
        // Counted down on a node the plan deletes: the delete is all.
        let mut plan = Plan::default();
        plan.push(
            Write::Delete {
                key: Key::same(keys::node_key("f")),
                condition: vec![version_is(3)],
            },
            Purpose::Node,
        );
        plan.push(counting("f", -1), Purpose::Count { id: "f".to_owned() });
        let folded = plan.folded().expect("folds");
        assert!(matches!(folded.writes.as_slice(), [Write::Delete { .. }]));
    }

    #[test]
    fn a_check_of_a_node_put_in_the_same_plan_is_implied_only_when_its_type_matches() {
        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: node("f", "Farm"),
                condition: vec![Clause::NotExists],
            },
            Purpose::Node,
        );
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("f")),
                condition: is_type("Farm"),
            },
            reference(),
        );
        let folded = plan.folded().expect("folds");
        assert_eq!(folded.len(), 1);
        assert!(matches!(folded.writes[0], Write::Put { .. }));

        let mut plan = Plan::default();
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("f")),
                condition: is_type("Image"),
            },
            reference(),
        );
        plan.push(
            Write::Put {
                item: node("f", "Farm"),
                condition: vec![Clause::NotExists],
            },
            Purpose::Node,
        );
        assert!(plan.folded().is_err(), "a Farm is no Image");
    }

    #[test]
    fn bumps_and_checks_of_one_node_merge_their_removals_and_conditions() {
        let mut plan = Plan::default();
        plan.push(bump("g", &["A#1"]), Purpose::Node);
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("g")),
                condition: is_type("Goal"),
            },
            reference(),
        );
        plan.push(bump("g", &["A#2"]), Purpose::Node);
        let folded = plan.folded().expect("folds");
        let [
            Write::Update {
                changes, condition, ..
            },
        ] = folded.writes.as_slice()
        else {
            panic!("one bump: {:?}", folded.writes);
        };
        assert_eq!(
            changes.take_from_set,
            [(
                EDGE_SET.to_owned(),
                vec!["A#1".to_owned(), "A#2".to_owned()]
            )]
        );
        assert_eq!(
            condition.len(),
            2,
            "Exists once, and the type: {condition:?}"
        );
    }

    #[test]
    fn a_deleted_node_needs_no_bump_and_an_edge_deleted_from_both_ends_is_deleted_once() {
        let edge = Key {
            pk: keys::node_key("a"),
            sk: keys::edge_sort_key("Friend", "b"),
        };
        let delete = |key: &Key| Write::Delete {
            key: key.clone(),
            condition: vec![Clause::Equals(
                "updatedAt".to_owned(),
                AttrValue::S("t".to_owned()),
            )],
        };
        let mut plan = Plan::default();
        plan.push(delete(&Key::same(keys::node_key("a"))), Purpose::Node);
        plan.push(delete(&edge), Purpose::Edge);
        plan.append_as(
            {
                let mut other = Plan::default();
                other.push(bump("a", &["Friend#b"]), Purpose::Node);
                other.push(delete(&edge), Purpose::Edge);
                other
            },
            1,
        );
        let folded = plan.folded().expect("folds");
        assert_eq!(folded.len(), 2);
        assert!(
            folded
                .writes
                .iter()
                .all(|write| matches!(write, Write::Delete { .. }))
        );
    }

    #[test]
    fn a_unique_value_freed_by_one_part_and_taken_by_another_changes_hands_in_one_put() {
        let key = Key::same("UNIQUE#Farm#name#alpha".to_owned());
        let take = Write::Put {
            item: Item::from_iter([
                ("PK".to_owned(), AttrValue::S(key.pk.clone())),
                ("SK".to_owned(), AttrValue::S(key.sk.clone())),
                ("id".to_owned(), AttrValue::S("b".to_owned())),
            ]),
            condition: vec![Clause::NotExists],
        };
        let taking = Purpose::TakeUnique {
            type_name: "Farm".to_owned(),
            field: "name".to_owned(),
        };
        let free = Write::Delete {
            key,
            condition: vec![Clause::AbsentOrEquals(
                "id".to_owned(),
                AttrValue::S("a".to_owned()),
            )],
        };
        let mut plan = Plan::default();
        plan.push(take.clone(), taking.clone());
        plan.append_as(
            {
                let mut other = Plan::default();
                other.push(free, Purpose::FreeUnique);
                other
            },
            1,
        );
        let folded = plan.folded().expect("folds");
        let [Write::Put { item, condition }] = folded.writes.as_slice() else {
            panic!("one put: {:?}", folded.writes);
        };
        assert_eq!(item.get("id"), Some(&AttrValue::S("b".to_owned())));
        assert_eq!(
            condition,
            &[Clause::AbsentOrEquals(
                "id".to_owned(),
                AttrValue::S("a".to_owned())
            )]
        );
        assert_eq!(folded.parts, [0], "the taker's part answers for it");

        let mut plan = Plan::default();
        plan.push(take.clone(), taking.clone());
        plan.append_as(
            {
                let mut other = Plan::default();
                other.push(take, taking);
                other
            },
            1,
        );
        let clash = plan.folded().err().expect("one value taken twice");
        assert_eq!((clash.first, clash.second), (0, 1));
        assert!(matches!(clash.purpose, Purpose::TakeUnique { .. }));
    }

    #[test]
    fn one_edge_read_twice_at_different_times_is_deleted_once_on_both_conditions() {
        let edge = Key {
            pk: keys::node_key("a"),
            sk: keys::edge_sort_key("Friend", "b"),
        };
        let read_at = |time: &str| Write::Delete {
            key: edge.clone(),
            condition: vec![Clause::Equals(
                "updatedAt".to_owned(),
                AttrValue::S(time.to_owned()),
            )],
        };
        let mut plan = Plan::default();
        plan.push(read_at("t1"), Purpose::Edge);
        plan.push(read_at("t2"), Purpose::Edge);
        let folded = plan.folded().expect("folds");
        let [Write::Delete { condition, .. }] = folded.writes.as_slice() else {
            panic!("one delete: {:?}", folded.writes);
        };
        assert_eq!(
            condition.len(),
            2,
            "fails, and is read again, unless both hold"
        );
    }

    #[test]
    fn references_wanting_different_types_or_a_put_over_edge_set_removals_clash() {
        let mut plan = Plan::default();
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("u")),
                condition: is_type("User"),
            },
            reference(),
        );
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("u")),
                condition: is_type("Goal"),
            },
            Purpose::Reference {
                field: "parentId".to_owned(),
                target: "Goal".to_owned(),
                id: "u".to_owned(),
            },
        );
        let clash = plan.folded().err().expect("no node is both");
        assert!(
            matches!(&clash.purpose, Purpose::Reference { field, .. } if field == "parentId"),
            "the later reference is the one refused: {clash:?}"
        );

        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: node("g", "Goal"),
                condition: vec![Clause::NotExists],
            },
            Purpose::Node,
        );
        plan.push(bump("g", &["A#1"]), Purpose::Node);
        assert!(plan.folded().is_err(), "the put would keep the entry");
    }

    #[test]
    fn bumps_that_add_to_an_edge_set_merge_but_never_with_ones_that_take_from_it() {
        let adding = |entry: &str| {
            adjust_node(
                "g",
                Vec::new(),
                vec![entry.to_owned()],
                Vec::new(),
                vec![Clause::Exists],
            )
        };
        let mut plan = Plan::default();
        plan.push(adding("A#1"), Purpose::Node);
        plan.push(adding("A#2"), Purpose::Node);
        let folded = plan.folded().expect("folds");
        let [Write::Update { changes, .. }] = folded.writes.as_slice() else {
            panic!("one bump: {:?}", folded.writes);
        };
        assert_eq!(
            changes.add_to_set,
            [(
                EDGE_SET.to_owned(),
                vec!["A#1".to_owned(), "A#2".to_owned()]
            )]
        );

        let mut plan = Plan::default();
        plan.push(adding("A#1"), Purpose::Node);
        plan.push(bump("g", &["A#2"]), Purpose::Node);
        assert!(plan.folded().is_err(), "one update cannot do both");
    }

    #[test]
    fn a_node_update_writes_what_changed_and_holds_replaced_counts_to_their_read() {
        let mut current = node("f", "Farm");
        current.insert("name".to_owned(), AttrValue::S("Hill".to_owned()));
        current.insert("logoId".to_owned(), AttrValue::S("l".to_owned()));
        current.insert("count#in#Likes".to_owned(), AttrValue::N("2".to_owned()));
        let mut next = current.clone();
        next.insert("name".to_owned(), AttrValue::S("Vale".to_owned()));
        next.remove("logoId");
        let Write::Update {
            changes, condition, ..
        } = node_update(&current, &next, vec![version_is(1)])
        else {
            panic!("an update");
        };
        assert_eq!(
            changes.set,
            [("name".to_owned(), AttrValue::S("Vale".to_owned()))]
        );
        assert_eq!(changes.remove, ["logoId"]);
        assert_eq!(condition, [version_is(1)], "no count is replaced");

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

    /// A batch moves a node out of a parent (part 0) and updates that parent (part 1): the
    /// count taken from it and its update are one write, and a failure of it is the update's,
    /// a lost race to read again, not the parent gone (which would drop the count for good).
    #[test]
    fn a_count_and_the_update_of_one_node_fail_as_the_update() {
        let mut current = node("p", "Farm");
        current.insert("version".to_owned(), AttrValue::N("3".to_owned()));
        let mut next = current.clone();
        next.insert("name".to_owned(), AttrValue::S("x".to_owned()));
        let counting = adjust_node(
            "p",
            vec![("count#GSI01#Cow".to_owned(), -1)],
            Vec::new(),
            Vec::new(),
            vec![Clause::Exists],
        );
        let mut first = Plan::default();
        first.push(counting, Purpose::Count { id: "p".to_owned() });
        let mut second = Plan::default();
        second.push(
            node_update(&current, &next, vec![version_is(3)]),
            Purpose::Node,
        );
        let folded = join(vec![first, second], true).expect("folds");
        assert_eq!(folded.writes.len(), 1);
        assert!(
            matches!(folded.purposes[0], Purpose::Node),
            "{:?}",
            folded.purposes
        );
        assert_eq!(folded.parts[0], 1);
    }
}
