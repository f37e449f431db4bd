//! The table's invariants, checked over a full scan: what `tablegraph check` reports.
//!
//! - every item is a node, a unique value, an edge or a migration record, with a `__typename`
//!   the model knows;
//! - each unique-value item belongs to a live node of its type whose current value it matches,
//!   and each unique field value of a node has its item;
//! - each node's relation slots (`PKnn`/`SKnn`) equal what the model derives from its fields;
//! - each edge starts at a live node of its `from` type and ends at one of its `to` types, and
//!   its inverse slot equals what the model derives;
//! - each node's edge set equals its edge items (for edge types kept in the set).
//!
//! The derivations are the ones the resolvers write with, so a node the API wrote is valid by
//! construction and any difference is damage (a crash between steps, a manual edit).

use std::collections::{BTreeSet, HashMap};

use crate::graphql::values;
use crate::keys;
use crate::model::Model;
use crate::store::{AttrValue, Item, Store, StoreError};

/// One broken invariant, at one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `PK` and `SK` of the item at fault (or that should exist).
    pub pk: String,
    pub sk: String,
    pub kind: ViolationKind,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    UnknownItem,
    OrphanUniqueValue,
    MissingUniqueValue,
    WrongSlot,
    DanglingEdge,
    WrongEdgeSet,
}

impl ViolationKind {
    pub fn describe(self) -> &'static str {
        match self {
            ViolationKind::UnknownItem => "items the schema does not know",
            ViolationKind::OrphanUniqueValue => "unique values without a matching owner",
            ViolationKind::MissingUniqueValue => "unique field values without their item",
            ViolationKind::WrongSlot => "relation slots that differ from the schema's",
            ViolationKind::DanglingEdge => "edges whose source or target is missing",
            ViolationKind::WrongEdgeSet => "edge sets that differ from the edge items",
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

/// Scans the table and checks every invariant.
pub async fn check(store: &Store, model: &Model) -> Result<Report, StoreError> {
    let items = store.scan_all(4).await?;
    Ok(check_items(model, &items))
}

fn text<'a>(item: &'a Item, attribute: &str) -> &'a str {
    item.get(attribute)
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
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
    for item in items {
        let (pk, sk) = (text(item, "PK"), text(item, "SK"));
        let typename = text(item, "__typename");
        let unknown = |detail: String| Violation {
            pk: pk.to_owned(),
            sk: sk.to_owned(),
            kind: ViolationKind::UnknownItem,
            detail,
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
    check_uniques(model, &nodes, &uniques, &mut report.violations);
    check_slots(model, &nodes, &mut report.violations);
    check_edges(model, &nodes, &edges, &mut report.violations);
    report
        .violations
        .sort_by(|a, b| (a.kind, &a.pk, &a.sk).cmp(&(b.kind, &b.pk, &b.sk)));
    report
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
    // Each unique item: its owner exists, has the type, and holds the value.
    for (key, item) in uniques {
        let owner = text(item, "id");
        let owner_node = nodes.get(keys::node_key(owner).as_str());
        let matches = owner_node.is_some_and(|node| {
            let typename = text(node, "__typename");
            model.type_def(typename).is_some_and(|type_def| {
                type_def.unique_fields().any(|field| {
                    keys::unique_typename(typename, &field.name) == text(item, "__typename")
                        && node.get(&field.name).is_some_and(|value| {
                            keys::unique_key(typename, &field.name, &values::unique_text(value))
                                == *key
                        })
                })
            })
        });
        if !matches {
            violations.push(Violation {
                pk: (*key).to_owned(),
                sk: (*key).to_owned(),
                kind: ViolationKind::OrphanUniqueValue,
                detail: format!("owner {owner:?} does not hold this value"),
            });
        }
    }
    // Each node's unique values: their items exist and name the node.
    for node in nodes.values() {
        let typename = text(node, "__typename");
        let Some(type_def) = model.type_def(typename) else {
            continue;
        };
        let id = text(node, "id");
        for field in type_def.unique_fields() {
            let Some(value) = node.get(&field.name) else {
                continue;
            };
            let key = keys::unique_key(typename, &field.name, &values::unique_text(value));
            let owned = uniques
                .get(key.as_str())
                .is_some_and(|item| text(item, "id") == id);
            if !owned {
                violations.push(Violation {
                    pk: key.clone(),
                    sk: key,
                    kind: ViolationKind::MissingUniqueValue,
                    detail: format!("{typename} {id}: {} has no item naming it", field.name),
                });
            }
        }
    }
}

/// The attributes of `item` that name a relation slot (`PK01`, `SK01`, …).
fn slot_attributes(item: &Item) -> Vec<(&str, &str)> {
    let mut slots: Vec<(&str, &str)> = item
        .iter()
        .filter(|(name, _)| is_slot_attribute(name))
        .map(|(name, value)| (name.as_str(), value.as_str().unwrap_or_default()))
        .collect();
    slots.sort_unstable();
    slots
}

fn is_slot_attribute(name: &str) -> bool {
    let digits = name
        .strip_prefix("PK")
        .or_else(|| name.strip_prefix("SK"))
        .unwrap_or_default();
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

fn check_slots(model: &Model, nodes: &HashMap<&str, &Item>, violations: &mut Vec<Violation>) {
    for (key, node) in nodes {
        let Some(type_def) = model.type_def(text(node, "__typename")) else {
            continue;
        };
        let mut derived = (*node).clone();
        values::set_slot_attributes(model, type_def, &mut derived);
        let (stored, wanted) = (slot_attributes(node), slot_attributes(&derived));
        if stored != wanted {
            violations.push(Violation {
                pk: (*key).to_owned(),
                sk: (*key).to_owned(),
                kind: ViolationKind::WrongSlot,
                detail: format!("stored {stored:?}, derived {wanted:?}"),
            });
        }
    }
}

fn check_edges(
    model: &Model,
    nodes: &HashMap<&str, &Item>,
    edges: &[&Item],
    violations: &mut Vec<Violation>,
) {
    let mut sets: HashMap<&str, BTreeSet<String>> = HashMap::new();
    for edge in edges {
        let (pk, sk) = (text(edge, "PK"), text(edge, "SK"));
        let edge_type = text(edge, "__typename");
        let Some(edge_def) = model.edge_def(edge_type) else {
            continue;
        };
        let (from, to) = (text(edge, "from"), text(edge, "to"));
        let violation = |kind, detail: String| Violation {
            pk: pk.to_owned(),
            sk: sk.to_owned(),
            kind,
            detail,
        };
        let node_type = |id: &str| {
            nodes
                .get(keys::node_key(id).as_str())
                .map(|node| text(node, "__typename"))
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
        let sort = edge_def.sort_by.as_ref().and_then(|field| {
            let scalar = edge_def.sort_scalar()?;
            Some(values::sort_value(model, edge, field, scalar))
        });
        let mut derived = (*edge).clone();
        derived.retain(|name, _| !is_slot_attribute(name));
        derived.insert(
            keys::slot_partition_attribute(edge_def.slot),
            AttrValue::S(keys::slot_partition(edge_type, to)),
        );
        derived.insert(
            keys::slot_sort_attribute(edge_def.slot),
            AttrValue::S(keys::slot_sort_key(sort.as_deref(), from)),
        );
        if slot_attributes(edge) != slot_attributes(&derived)
            || text(edge, "toType") != target_type.unwrap_or_default()
        {
            violations.push(violation(
                ViolationKind::WrongSlot,
                format!("{edge_type} from {from} to {to}: its inverse slot or toType differs from the schema's"),
            ));
        }
        if edge_def.edge_set {
            sets.entry(pk).or_default().insert(keys::edge_set_entry(
                edge_type,
                to,
                sort.as_deref(),
            ));
        }
    }
    for (key, node) in nodes {
        let stored: BTreeSet<String> = match node.get("edges") {
            Some(AttrValue::Ss(set)) => set.iter().cloned().collect(),
            _ => BTreeSet::new(),
        };
        let wanted = sets.remove(key).unwrap_or_default();
        if stored != wanted {
            let missing: Vec<&String> = wanted.difference(&stored).collect();
            let extra: Vec<&String> = stored.difference(&wanted).collect();
            violations.push(Violation {
                pk: (*key).to_owned(),
                sk: (*key).to_owned(),
                kind: ViolationKind::WrongEdgeSet,
                detail: format!("missing {missing:?}, extra {extra:?}"),
            });
        }
    }
}
