//! The table's invariants, checked over a full scan: what `tablegraph check` reports.
//!
//! - every item is a node, a unique value, an edge or a migration record, with a `__typename`
//!   the model knows;
//! - each unique-value item belongs to a live node of its type whose current value it matches,
//!   and each unique field value of a node has its item;
//! - each node's relation slots (`PKnn`/`SKnn`) equal what the model derives from its fields;
//! - each edge starts at a live node of its `from` type and ends at one of its `to` types, and
//!   its inverse slot equals what the model derives;
//! - each node's edge set equals its edge items (for edge types kept in the set);
//! - each node's counts (`totalCount`) equal its live members and edges, and each type index
//!   shard's counter item equals the nodes in that shard.
//!
//! The derivations are the ones the resolvers write with, so a node the API wrote is valid by
//! construction and any difference is damage (a crash between steps, a manual edit). The scan
//! is not a snapshot: on a table taking writes, a write that lands mid-scan can look like
//! damage, so check a quiet table (or check again).
//!
//! [`repair`] rewrites what the derivations say (`fixes` decides each fix), each fix a
//! transaction of its own: it deletes dangling edges and orphaned unique values, writes missing
//! unique values, and rewrites slots and edge sets. Each fix is conditioned on every item its
//! decision rests on being as the scan saw it (the owner or the missing end still absent, a
//! node's version, an edge's `updatedAt`); a node's slots and edge set are re-derived from a
//! consistent read of the node and its edges just before they are written, on that version. A
//! fix whose condition fails is reconsidered on a fresh scan. Items the schema does not know,
//! and a unique value two nodes both hold, are left for a human.

mod fixes;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::engine;
use crate::engine::derive::LIST_COUNT;
use crate::keys;
use crate::keys::TYPENAME;
use crate::model::Model;
use crate::store::{AttrValue, Item, Key, RangeQuery, Store, StoreError, StringSet, Write};

/// One broken invariant, at one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `PK` and `SK` of the item at fault (or that should exist).
    pub pk: String,
    pub sk: String,
    pub kind: ViolationKind,
    pub detail: String,
    /// The node the violation belongs to, when that is not the item itself (the owner of a
    /// missing unique value).
    pub owner: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    UnknownItem,
    OrphanUniqueValue,
    MissingUniqueValue,
    EarlierFormUniqueValue,
    WrongSlot,
    DanglingEdge,
    WrongEdgeSet,
    WrongCount,
    /// A write's record in a delta record kept past the delta window (conflict detection).
    ExpiredDeltaRecord,
    /// A deleted node (conflict detection's tombstone) kept past its `_ttl`.
    ExpiredTombstone,
}

impl ViolationKind {
    pub fn describe(self) -> &'static str {
        match self {
            ViolationKind::UnknownItem => "items the schema does not know",
            ViolationKind::OrphanUniqueValue => "unique values without a matching owner",
            ViolationKind::MissingUniqueValue => "unique field values without their item",
            ViolationKind::EarlierFormUniqueValue => {
                "unique values at the key of an earlier version (run `tablegraph migrate`)"
            }
            ViolationKind::WrongSlot => "relation slots that differ from the schema's",
            ViolationKind::DanglingEdge => "edges whose source or target is missing",
            ViolationKind::WrongEdgeSet => "edge sets that differ from the edge items",
            ViolationKind::WrongCount => {
                "counts (totalCount) that differ from the members and edges"
            }
            ViolationKind::ExpiredTombstone => {
                "deleted nodes (DataStore's tombstones) kept past their _ttl"
            }
            ViolationKind::ExpiredDeltaRecord => {
                "delta records of writes older than the delta window (DataStore's delta sync)"
            }
        }
    }
}

/// What a check saw.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub items: usize,
    pub nodes: usize,
    pub unique_values: usize,
    pub edges: usize,
    pub migrations: usize,
    /// The replicas' leases and relay items of the change stream (`changes::relay`).
    pub stream_items: usize,
    /// Type index shard counters.
    pub counters: usize,
    /// The writes recorded for delta syncs (conflict detection), still in the delta window.
    pub delta_records: usize,
    pub violations: Vec<Violation>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// Violations counted by kind, in a stable order.
    pub fn counts(&self) -> Vec<(ViolationKind, usize)> {
        let mut counts: HashMap<ViolationKind, usize> = HashMap::new();
        for violation in &self.violations {
            *counts.entry(violation.kind).or_default() += 1;
        }
        let mut counts: Vec<_> = counts.into_iter().collect();
        counts.sort();
        counts
    }
}

/// The most edge items read from one node's partition to re-derive its edge set.
const MAX_EDGES_READ: usize = 1_000_000;
/// Scan-and-fix rounds [`repair`] makes before it reports what is left.
const REPAIR_ROUNDS: usize = 4;

/// Scans the table and checks every invariant.
pub async fn check(store: &Store, model: &Model) -> Result<Report, StoreError> {
    check_telling(store, model, &|_| {}).await
}

/// [`check`], telling `read` how many items the scan has read after each page.
pub async fn check_telling(
    store: &Store,
    model: &Model,
    read: Read<'_>,
) -> Result<Report, StoreError> {
    let items = store.scan_all_telling(read).await?;
    Ok(check_items(model, &items))
}

/// Told, after each page of a scan, how many items it has read (a tool's progress).
pub type Read<'a> = &'a (dyn Fn(u64) + Sync);

/// What [`repair`] did.
#[derive(Debug, Clone)]
pub struct Repair {
    /// The first check, before any fix.
    pub before: Report,
    /// Fixes written.
    pub fixed: usize,
    /// The last check, after every fix.
    pub after: Report,
}

/// Checks, fixes what can be fixed, and checks again until the table is clean or nothing more
/// can be done.
pub async fn repair(store: &Store, model: &Model) -> Result<Repair, StoreError> {
    repair_telling(store, model, &|_| {}).await
}

/// [`repair`], telling `read` how far each of its scans got.
pub async fn repair_telling(
    store: &Store,
    model: &Model,
    read: Read<'_>,
) -> Result<Repair, StoreError> {
    repair_where(store, model, |_| true, Verify::Always, read).await
}

/// Sets every count (`totalCount`) to what the table holds, as [`repair`] does, and fixes
/// nothing else: what `migrate` runs for counts that data written before them lacks. With
/// `dry_run`, answers the check without writing.
pub async fn repair_counts(
    store: &Store,
    model: &Model,
    dry_run: bool,
    read: Read<'_>,
) -> Result<Repair, StoreError> {
    let counts = |kind: ViolationKind| kind == ViolationKind::WrongCount;
    if dry_run {
        let items = store.scan_all_telling(read).await?;
        let mut report = check_items(model, &items);
        report.violations.retain(|v| counts(v.kind));
        return Ok(Repair {
            before: report.clone(),
            fixed: 0,
            after: report,
        });
    }
    // Each count's fix is conditioned on what the scan read: one that applied made its count
    // right, so the table is scanned again only when one did not (on 200,000 items the second
    // Scan and check were 4 of `migrate`'s 44 s, bench/migrate.py).
    repair_where(store, model, counts, Verify::WhenAFixFailed, read).await
}

/// When a repair scans the table again to report what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    Always,
    WhenAFixFailed,
}

async fn repair_where(
    store: &Store,
    model: &Model,
    fixing: impl Fn(ViolationKind) -> bool,
    verify: Verify,
    read: Read<'_>,
) -> Result<Repair, StoreError> {
    let mut items = store.scan_all_telling(read).await?;
    let before = check_items(model, &items);
    let mut report = before.clone();
    let mut fixed = 0;
    for _ in 0..REPAIR_ROUNDS {
        report.violations.retain(|v| fixing(v.kind));
        let planned = fixes::fixes(model, &items, &report);
        if planned.is_empty() {
            break;
        }
        let mut failed = false;
        for fix in planned {
            let writes = match fix {
                Fix::Write(writes) => writes,
                Fix::Node(key) => match node_fix(store, model, &key).await? {
                    Some(write) => vec![write],
                    None => continue,
                },
                Fix::Tombstone(type_name, id) => {
                    match purge_tombstone(store, model, &type_name, &id).await {
                        true => fixed += 1,
                        false => failed = true,
                    }
                    continue;
                }
            };
            match store.transact_write(writes).await {
                Ok(()) => fixed += 1,
                // Something changed since it was read: the next round sees it as it is now.
                Err(StoreError::ConditionFailed { .. }) => failed = true,
                Err(e) => return Err(e),
            }
        }
        if verify == Verify::WhenAFixFailed && !failed {
            report.violations.retain(|v| !fixing(v.kind));
            break;
        }
        items = store.scan_all_telling(read).await?;
        report = check_items(model, &items);
        if report.violations.iter().all(|v| !fixing(v.kind)) {
            break;
        }
    }
    Ok(Repair {
        before,
        fixed,
        after: report,
    })
}

/// One fix: writes decided from the scan, each conditioned on what the scan saw of every item
/// the decision rests on; or a node to re-derive from a fresh, consistent read.
enum Fix {
    Write(Vec<Write>),
    Node(String),
    /// A tombstone of the type to remove as a delete removes a node (through the engine).
    Tombstone(String, String),
}

/// Removes the tombstone `id` of `type_name` through the engine's delete, with its unique
/// values, edges and counts; false when that did not happen (it changed, or the write failed:
/// the next round sees it as it is then).
async fn purge_tombstone(store: &Store, model: &Model, type_name: &str, id: &str) -> bool {
    let Some(type_def) = model.type_def(type_name) else {
        return false;
    };
    let scope = engine::RequestScope::of_tool(store);
    engine::write::purge_tombstone(&scope, model, type_def, id)
        .await
        .unwrap_or(false)
}

/// The node `key` with its slots and edge set derived from a consistent read of it and of its
/// partition's edges, conditioned on the version read; `None` when it is gone or already right.
async fn node_fix(store: &Store, model: &Model, key: &str) -> Result<Option<Write>, StoreError> {
    let Some(node) = store
        .get_item_consistent(&Key::same(key.to_owned()))
        .await?
    else {
        return Ok(None);
    };
    let set = read_edge_set(store, model, key).await?;
    let Some(derived) = derived_node(model, &node, Some(&set)) else {
        return Ok(None);
    };
    if derived == node {
        return Ok(None);
    }
    let condition = engine::derive::version_as_read(&node);
    Ok(Some(engine::write::node_update(
        &node,
        &derived,
        vec![condition],
    )))
}

/// A node as the model derives it: its slots from its fields, its edge set from its edges.
fn derived_node(model: &Model, node: &Item, edge_set: Option<&BTreeSet<String>>) -> Option<Item> {
    let type_def = model.type_def(text(node, TYPENAME))?;
    let mut derived = node.clone();
    derived.retain(|name, _| !keys::is_slot_attribute(name));
    engine::derive::set_slot_attributes(model, type_def, &mut derived);
    let stored = match node.get("edges") {
        Some(AttrValue::Ss(set)) => set.clone(),
        _ => StringSet::new(),
    };
    let wanted: StringSet = edge_set.cloned().map(StringSet::from).unwrap_or_default();
    if stored != wanted {
        derived.remove("edges");
        if !wanted.is_empty() {
            derived.insert("edges".to_owned(), AttrValue::Ss(wanted));
        }
    }
    Some(derived)
}

/// `edge` with its inverse slot and `toType` as the model derives them for a target of
/// `target_type`; `None` for an edge type the model lacks.
fn derive_edge(model: &Model, edge: &Item, target_type: &str) -> Option<Item> {
    let edge_type = text(edge, TYPENAME);
    let edge_def = model.edge_def(edge_type)?;
    let mut derived = edge.clone();
    derived.retain(|name, _| !keys::is_slot_attribute(name));
    engine::derive::set_edge_slot_attributes(model, edge_def, &mut derived);
    derived.insert("toType".to_owned(), AttrValue::S(target_type.to_owned()));
    Some(derived)
}

/// The edge set the node `node_key`'s own edge items derive, read with a strongly consistent
/// Query of its partition (so the set matches a node read the same way). Edge types kept out of
/// the set are skipped; whether each target still exists is [`check`]'s question.
pub async fn read_edge_set(
    store: &Store,
    model: &Model,
    node_key: &str,
) -> Result<BTreeSet<String>, StoreError> {
    let partition = store
        .query_range(&RangeQuery {
            index: None,
            partition: node_key,
            lower: None,
            upper: None,
            filter: None,
            forward: true,
            limit: MAX_EDGES_READ,
            consistent: true,
        })
        .await?;
    Ok(partition
        .iter()
        .filter(|item| text(item, keys::SK) != node_key)
        .filter_map(|edge| {
            let edge_def = model.edge_def(text(edge, TYPENAME))?;
            edge_def
                .edge_set
                .then(|| engine::derive::edge_set_entry(model, edge_def, edge))
        })
        .collect())
}

/// Each source node's edge set as its live edges derive it.
fn derived_edge_sets(model: &Model, items: &[Item]) -> HashMap<String, BTreeSet<String>> {
    let nodes: HashMap<&str, &str> = items
        .iter()
        .filter(|item| {
            text(item, keys::PK).starts_with("NODE#")
                && text(item, keys::PK) == text(item, keys::SK)
        })
        .map(|item| (text(item, keys::PK), text(item, TYPENAME)))
        .collect();
    let mut sets: HashMap<String, BTreeSet<String>> = HashMap::new();
    for edge in items {
        let (pk, sk) = (text(edge, keys::PK), text(edge, keys::SK));
        if !pk.starts_with("NODE#") || pk == sk {
            continue;
        }
        let edge_type = text(edge, TYPENAME);
        let Some(edge_def) = model.edge_def(edge_type) else {
            continue;
        };
        let (from, to) = (text(edge, "from"), text(edge, "to"));
        let alive = |id: &str, allowed: &[&str]| {
            nodes
                .get(keys::node_key(id).as_str())
                .is_some_and(|t| allowed.contains(t))
        };
        let live = pk == keys::node_key(from)
            && sk == keys::edge_sort_key(edge_type, to)
            && alive(from, &[edge_def.from.as_str()])
            && alive(to, &model.possible_types(&edge_def.to));
        if live && edge_def.edge_set {
            sets.entry(pk.to_owned())
                .or_default()
                .insert(engine::derive::edge_set_entry(model, edge_def, edge));
        }
    }
    sets
}

fn text<'a>(item: &'a Item, attribute: &str) -> &'a str {
    item.get(attribute)
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
}

/// What is wrong with `item`, a record in the delta record `pk`: a type that does not detect
/// conflicts, or a write older than the delta window, which a delta sync no longer reads.
fn delta_record_fault(model: &Model, pk: &str, item: &Item) -> Option<(ViolationKind, String)> {
    let typename = pk.strip_prefix("DELTA#").unwrap_or_default();
    if model
        .type_def(typename)
        .is_none_or(|type_def| type_def.conflict.is_none())
    {
        return Some((
            ViolationKind::UnknownItem,
            format!("a delta record of {typename:?}, which does not detect conflicts"),
        ));
    }
    // A record without its time is past it.
    let now = engine::sync::now_millis() / 1000;
    let expired = engine::sync::ttl_of(item).is_none_or(|expires| expires < now);
    expired.then(|| {
        (
            ViolationKind::ExpiredDeltaRecord,
            format!("a write of {typename} recorded for delta syncs past the delta window"),
        )
    })
}

/// Checks a whole table's items.
pub fn check_items(model: &Model, items: &[Item]) -> Report {
    let mut report = Report {
        items: items.len(),
        ..Report::default()
    };
    let mut nodes: HashMap<&str, &Item> = HashMap::new();
    let mut uniques: HashMap<&str, &Item> = HashMap::new();
    let mut edges: Vec<&Item> = Vec::new();
    let mut counters: HashMap<&str, &Item> = HashMap::new();
    for item in items {
        let (pk, sk) = (text(item, keys::PK), text(item, keys::SK));
        let typename = text(item, TYPENAME);
        let unknown = |detail: String| Violation {
            pk: pk.to_owned(),
            sk: sk.to_owned(),
            kind: ViolationKind::UnknownItem,
            detail,
            owner: None,
        };
        if pk.starts_with("NODE#") && pk == sk {
            if model.type_def(typename).is_some() {
                nodes.insert(pk, item);
            } else {
                report
                    .violations
                    .push(unknown(format!("a node of unknown type {typename:?}")));
            }
        } else if pk.starts_with("NODE#") {
            if model.edge_def(typename).is_some() {
                edges.push(item);
            } else {
                report
                    .violations
                    .push(unknown(format!("an edge of unknown type {typename:?}")));
            }
        } else if pk.starts_with("MIGRATION#") && pk == sk {
            report.migrations += 1;
        } else if keys::is_stream_partition(pk) {
            report.stream_items += 1;
        } else if keys::is_delta_partition(pk) {
            match delta_record_fault(model, pk, item) {
                Some((kind, detail)) => report.violations.push(Violation {
                    kind,
                    ..unknown(detail)
                }),
                None => report.delta_records += 1,
            }
        } else if pk == sk && pk.starts_with("COUNT$") {
            counters.insert(pk, item);
        } else if pk == sk && is_unique_typename(model, typename) {
            uniques.insert(pk, item);
        } else {
            report
                .violations
                .push(unknown(format!("an item of unknown kind {typename:?}")));
        }
    }
    report.nodes = nodes.len();
    report.unique_values = uniques.len();
    report.edges = edges.len();
    report.counters = counters.len();
    check_tombstones(model, &nodes, &mut report.violations);
    check_uniques(model, &nodes, &uniques, &mut report.violations);
    check_slots(model, &nodes, &mut report.violations);
    check_counts(model, &nodes, &edges, &counters, &mut report.violations);
    let edge_sets = derived_edge_sets(model, items);
    check_edges(model, &nodes, &edges, edge_sets, &mut report.violations);
    report
        .violations
        .sort_by(|a, b| (a.kind, &a.pk, &a.sk).cmp(&(b.kind, &b.pk, &b.sk)));
    report
}

/// Each tombstone of a type that detects conflicts is within its `_ttl`.
fn check_tombstones(model: &Model, nodes: &HashMap<&str, &Item>, violations: &mut Vec<Violation>) {
    let now = engine::sync::now_millis() / 1000;
    for (pk, node) in nodes {
        let typename = text(node, TYPENAME);
        let detects = model
            .type_def(typename)
            .is_some_and(|type_def| type_def.conflict.is_some());
        if detects && engine::sync::expired_tombstone(node, now) {
            violations.push(Violation {
                pk: (*pk).to_owned(),
                sk: (*pk).to_owned(),
                kind: ViolationKind::ExpiredTombstone,
                detail: format!("a deleted {typename} past its _ttl, still to be removed"),
                owner: None,
            });
        }
    }
}

fn is_unique_typename(model: &Model, typename: &str) -> bool {
    model.types.iter().any(|type_def| {
        type_def
            .unique_fields()
            .any(|field| keys::unique_typename(&type_def.name, &field.name) == typename)
    })
}

fn check_uniques(
    model: &Model,
    nodes: &HashMap<&str, &Item>,
    uniques: &HashMap<&str, &Item>,
    violations: &mut Vec<Violation>,
) {
    // Each unique item: its owner exists, has the type, and holds the value, at its key of
    // today or (until `migrate` moves it) of the version before.
    let key_of = |node: &Item, item: &Item, unique_key: fn(&str, &str, &str) -> String| {
        let typename = text(node, TYPENAME);
        let type_def = model.type_def(typename)?;
        type_def.unique_fields().find_map(|field| {
            let value = node.get(&field.name)?;
            (keys::unique_typename(typename, &field.name) == text(item, TYPENAME))
                .then(|| unique_key(typename, &field.name, &engine::derive::unique_text(value)))
        })
    };
    let mut earlier_form = BTreeSet::new();
    for (key, item) in uniques {
        let owner = text(item, "id");
        let owner_node = nodes.get(keys::node_key(owner).as_str());
        let held_as = |unique_key| {
            owner_node.is_some_and(|node| key_of(node, item, unique_key).as_deref() == Some(key))
        };
        if held_as(keys::unique_key) {
            continue;
        }
        let (kind, detail) = if held_as(keys::unique_key_v1) {
            // The key it moves to, which the node's own check below must not call missing.
            if let Some(today) = owner_node.and_then(|node| key_of(node, item, keys::unique_key)) {
                earlier_form.insert(today);
            }
            (
                ViolationKind::EarlierFormUniqueValue,
                format!(
                    "owner {owner:?} holds this value, compared as before Unicode normalization"
                ),
            )
        } else {
            (
                ViolationKind::OrphanUniqueValue,
                format!("owner {owner:?} does not hold this value"),
            )
        };
        violations.push(Violation {
            pk: (*key).to_owned(),
            sk: (*key).to_owned(),
            kind,
            detail,
            owner: None,
        });
    }
    // Each node's unique values: their items exist and name the node.
    for node in nodes.values() {
        let typename = text(node, TYPENAME);
        let Some(type_def) = model.type_def(typename) else {
            continue;
        };
        let id = text(node, "id");
        for field in type_def.unique_fields() {
            let Some(value) = node.get(&field.name) else {
                continue;
            };
            let key = keys::unique_key(typename, &field.name, &engine::derive::unique_text(value));
            let owned = uniques
                .get(key.as_str())
                .is_some_and(|item| text(item, "id") == id);
            // A value still at its earlier key is reported there, once.
            if !owned && !earlier_form.contains(&key) {
                violations.push(Violation {
                    pk: key.clone(),
                    sk: key,
                    kind: ViolationKind::MissingUniqueValue,
                    detail: format!("{typename} {id}: {} has no item naming it", field.name),
                    owner: Some(id.to_owned()),
                });
            }
        }
    }
}

/// The attributes of `item` that name a relation slot (`PK01`, `SK01`, …).
fn slot_attributes(item: &Item) -> Vec<(&str, &str)> {
    let mut slots: Vec<(&str, &str)> = item
        .iter()
        .filter(|(name, _)| keys::is_slot_attribute(name))
        .map(|(name, value)| (name.as_str(), value.as_str().unwrap_or_default()))
        .collect();
    slots.sort_unstable();
    slots
}

fn check_slots(model: &Model, nodes: &HashMap<&str, &Item>, violations: &mut Vec<Violation>) {
    for (key, node) in nodes {
        let Some(type_def) = model.type_def(text(node, TYPENAME)) else {
            continue;
        };
        let mut derived = (*node).clone();
        derived.retain(|name, _| !keys::is_slot_attribute(name));
        engine::derive::set_slot_attributes(model, type_def, &mut derived);
        let (stored, wanted) = (slot_attributes(node), slot_attributes(&derived));
        if stored != wanted {
            violations.push(Violation {
                pk: (*key).to_owned(),
                sk: (*key).to_owned(),
                kind: ViolationKind::WrongSlot,
                detail: format!("stored {stored:?}, derived {wanted:?}"),
                owner: None,
            });
        }
    }
}

/// The counts each node should hold (node key → attribute → count): one per live member of each
/// of its `@hasMany` connections, one per live edge out of it and into it.
fn wanted_node_counts<'a>(
    model: &Model,
    nodes: &HashMap<&'a str, &'a Item>,
    edges: &[&Item],
) -> HashMap<String, BTreeMap<String, i64>> {
    let mut wanted: HashMap<String, BTreeMap<String, i64>> = HashMap::new();
    let mut count = |node: String, attribute: String| {
        if nodes.contains_key(node.as_str()) {
            *wanted
                .entry(node)
                .or_default()
                .entry(attribute)
                .or_default() += 1;
        }
    };
    for node in nodes.values() {
        let Some(type_def) = model.type_def(text(node, TYPENAME)) else {
            continue;
        };
        for slot in &type_def.slots {
            if let Some(parent) = node.get(&slot.foreign_key).and_then(AttrValue::as_str) {
                count(
                    keys::node_key(parent),
                    keys::members_count_attribute(slot.slot, &slot.element),
                );
            }
        }
    }
    for edge in edges {
        let edge_type = text(edge, TYPENAME);
        let Some(edge_def) = model.edge_def(edge_type) else {
            continue;
        };
        let (from, to) = (text(edge, "from"), text(edge, "to"));
        let alive = |id: &str, allowed: &[&str]| {
            nodes
                .get(keys::node_key(id).as_str())
                .is_some_and(|node| allowed.contains(&text(node, TYPENAME)))
        };
        let live = text(edge, keys::PK) == keys::node_key(from)
            && text(edge, keys::SK) == keys::edge_sort_key(edge_type, to)
            && alive(from, &[edge_def.from.as_str()])
            && alive(to, &model.possible_types(&edge_def.to));
        if live {
            count(
                keys::node_key(from),
                keys::edges_count_attribute(edge_type, true),
            );
            count(
                keys::node_key(to),
                keys::edges_count_attribute(edge_type, false),
            );
        }
    }
    wanted
}

/// The counts a node holds: its count attributes, those of zero left out.
fn stored_counts(node: &Item) -> BTreeMap<String, i64> {
    node.iter()
        .filter(|(name, _)| keys::is_count_attribute(name))
        .map(|(name, value)| (name.clone(), value.as_i64().unwrap_or(i64::MIN)))
        .filter(|(_, count)| *count != 0)
        .collect()
}

/// The count each type index shard's counter item should hold (counter key → count), every
/// shard of every list included.
fn wanted_list_counts(model: &Model, nodes: &HashMap<&str, &Item>) -> BTreeMap<String, i64> {
    let mut wanted = BTreeMap::new();
    for type_def in &model.types {
        if let Some(list) = type_def.list {
            for shard in 0..list.shards {
                wanted.insert(keys::list_count_key(&type_def.name, shard), 0);
            }
        }
    }
    for node in nodes.values() {
        let Some(type_def) = model.type_def(text(node, TYPENAME)) else {
            continue;
        };
        if let Some(list) = type_def.list {
            let shard = keys::list_shard(text(node, "id"), list.shards);
            *wanted
                .entry(keys::list_count_key(&type_def.name, shard))
                .or_default() += 1;
        }
    }
    wanted
}

fn check_counts(
    model: &Model,
    nodes: &HashMap<&str, &Item>,
    edges: &[&Item],
    counters: &HashMap<&str, &Item>,
    violations: &mut Vec<Violation>,
) {
    let wanted = wanted_node_counts(model, nodes, edges);
    for (key, node) in nodes {
        let stored = stored_counts(node);
        let want = wanted.get(*key).cloned().unwrap_or_default();
        if stored != want {
            violations.push(Violation {
                pk: (*key).to_owned(),
                sk: (*key).to_owned(),
                kind: ViolationKind::WrongCount,
                detail: format!("stored {stored:?}, counted {want:?}"),
                owner: None,
            });
        }
    }
    let wanted = wanted_list_counts(model, nodes);
    let mut keys: BTreeSet<&str> = wanted.keys().map(String::as_str).collect();
    keys.extend(counters.keys().copied());
    for key in keys {
        let stored = counters.get(key).map_or(0, |item| {
            item.get(LIST_COUNT)
                .and_then(AttrValue::as_i64)
                .unwrap_or(i64::MIN)
        });
        let want = wanted.get(key).copied().unwrap_or(0);
        if stored != want {
            violations.push(Violation {
                pk: key.to_owned(),
                sk: key.to_owned(),
                kind: ViolationKind::WrongCount,
                detail: format!("stored {stored}, counted {want}"),
                owner: None,
            });
        }
    }
}

fn check_edges(
    model: &Model,
    nodes: &HashMap<&str, &Item>,
    edges: &[&Item],
    mut sets: HashMap<String, BTreeSet<String>>,
    violations: &mut Vec<Violation>,
) {
    for edge in edges {
        let (pk, sk) = (text(edge, keys::PK), text(edge, keys::SK));
        let edge_type = text(edge, TYPENAME);
        let Some(edge_def) = model.edge_def(edge_type) else {
            continue;
        };
        let (from, to) = (text(edge, "from"), text(edge, "to"));
        let violation = |kind, detail: String| Violation {
            pk: pk.to_owned(),
            sk: sk.to_owned(),
            kind,
            detail,
            owner: None,
        };
        let node_type = |id: &str| {
            nodes
                .get(keys::node_key(id).as_str())
                .map(|node| text(node, TYPENAME))
        };
        let source_ok = pk == keys::node_key(from) && node_type(from) == Some(&edge_def.from);
        let target_type = node_type(to);
        let target_ok = sk == keys::edge_sort_key(edge_type, to)
            && target_type.is_some_and(|t| model.possible_types(&edge_def.to).contains(&t));
        if !source_ok || !target_ok {
            violations.push(violation(
                ViolationKind::DanglingEdge,
                format!(
                    "{edge_type} from {from:?} to {to:?}: an end is missing or of another type"
                ),
            ));
            continue;
        }
        let target_type = target_type.unwrap_or_default();
        let derived = derive_edge(model, edge, target_type).unwrap_or_default();
        if slot_attributes(edge) != slot_attributes(&derived) || text(edge, "toType") != target_type
        {
            violations.push(violation(
                ViolationKind::WrongSlot,
                format!("{edge_type} from {from} to {to}: its inverse slot or toType differs from the schema's"),
            ));
        }
    }
    for (key, node) in nodes {
        let stored: BTreeSet<String> = match node.get("edges") {
            Some(AttrValue::Ss(set)) => set.iter().cloned().collect(),
            _ => BTreeSet::new(),
        };
        let wanted = sets.remove(*key).unwrap_or_default();
        if stored != wanted {
            let missing: Vec<&String> = wanted.difference(&stored).collect();
            let extra: Vec<&String> = stored.difference(&wanted).collect();
            violations.push(Violation {
                pk: (*key).to_owned(),
                sk: (*key).to_owned(),
                kind: ViolationKind::WrongEdgeSet,
                detail: format!("missing {missing:?}, extra {extra:?}"),
                owner: None,
            });
        }
    }
}
