//! What `repair` writes for each violation a scan found: the fix of each kind of violation is
//! a function of its own, deciding from the scanned items alone and conditioning its writes on
//! every item the decision rests on being as the scan saw it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::engine;
use crate::engine::derive::LIST_COUNT;
use crate::keys;
use crate::model::Model;
use crate::store::{AttrValue, Clause, Item, Key, Write};

use super::{
    Fix, Report, Violation, ViolationKind, derive_edge, text, wanted_list_counts,
    wanted_node_counts,
};
use crate::keys::TYPENAME;

/// What the fixes decide from: the scanned items by key, and what the counts should be.
struct Scan<'a> {
    model: &'a Model,
    by_key: HashMap<(&'a str, &'a str), &'a Item>,
    /// How many nodes hold each unique value the table lacks.
    holders: HashMap<&'a str, usize>,
    wanted_nodes: HashMap<String, BTreeMap<String, i64>>,
    wanted_lists: BTreeMap<String, i64>,
}

impl<'a> Scan<'a> {
    fn of(model: &'a Model, items: &'a [Item], report: &'a Report) -> Scan<'a> {
        let by_key: HashMap<(&str, &str), &Item> = items
            .iter()
            .map(|item| ((text(item, keys::PK), text(item, keys::SK)), item))
            .collect();
        // A unique value two nodes both hold is left for a human.
        let mut holders: HashMap<&str, usize> = HashMap::new();
        for violation in &report.violations {
            if violation.kind == ViolationKind::MissingUniqueValue {
                *holders.entry(violation.pk.as_str()).or_default() += 1;
            }
        }
        let node_items: HashMap<&str, &Item> = by_key
            .iter()
            .filter(|((pk, sk), _)| pk.starts_with("NODE#") && pk == sk)
            .map(|((pk, _), item)| (*pk, *item))
            .collect();
        let edge_items: Vec<&Item> = by_key
            .iter()
            .filter(|((pk, sk), _)| pk.starts_with("NODE#") && pk != sk)
            .map(|(_, item)| *item)
            .collect();
        let wanted_nodes = wanted_node_counts(model, &node_items, &edge_items);
        let wanted_lists = wanted_list_counts(model, &node_items);
        Scan {
            model,
            by_key,
            holders,
            wanted_nodes,
            wanted_lists,
        }
    }

    /// The node `id` as scanned, if it was.
    fn node(&self, id: &str) -> Option<&'a Item> {
        let key = keys::node_key(id);
        self.by_key.get(&(key.as_str(), key.as_str())).copied()
    }
}

/// The fixes of `report`'s violations: deletes first, then puts.
pub(super) fn fixes(model: &Model, items: &[Item], report: &Report) -> Vec<Fix> {
    let scan = Scan::of(model, items, report);
    let mut deletes = Vec::new();
    let mut puts = Vec::new();
    let mut nodes = BTreeSet::new();
    for violation in &report.violations {
        let item = scan
            .by_key
            .get(&(violation.pk.as_str(), violation.sk.as_str()))
            .copied();
        match (violation.kind, item) {
            (ViolationKind::OrphanUniqueValue, Some(item)) => {
                deletes.push(orphan_unique_value(&scan, violation, item));
            }
            (ViolationKind::ExpiredTombstone, Some(node)) => {
                let (type_name, id) = (text(node, TYPENAME), text(node, "id"));
                deletes.push(Fix::Tombstone(type_name.to_owned(), id.to_owned()));
            }
            (ViolationKind::ExpiredDeltaRecord, Some(_)) => {
                // What a delta sync may still read is left; a record past the window is not.
                deletes.push(Fix::Write(vec![Write::Delete {
                    key: key_of(violation),
                    condition: vec![Clause::Exists],
                }]));
            }
            (ViolationKind::DanglingEdge, Some(edge)) => {
                deletes.push(dangling_edge(&scan, violation, edge));
            }
            (ViolationKind::MissingUniqueValue, _) => {
                puts.extend(missing_unique_value(&scan, violation));
            }
            (ViolationKind::WrongSlot | ViolationKind::WrongEdgeSet, Some(_))
                if violation.pk == violation.sk =>
            {
                nodes.insert(violation.pk.clone());
            }
            (ViolationKind::WrongCount, Some(node)) if violation.pk.starts_with("NODE#") => {
                puts.push(node_counts(&scan, violation, node));
            }
            (ViolationKind::WrongCount, counter) => {
                puts.push(shard_counter(&scan, violation, counter));
            }
            (ViolationKind::WrongSlot, Some(edge)) => {
                puts.extend(edge_slot(&scan, edge));
            }
            _ => {}
        }
    }
    deletes.extend(puts);
    deletes.extend(nodes.into_iter().map(Fix::Node));
    deletes
}

fn key_of(violation: &Violation) -> Key {
    Key {
        pk: violation.pk.clone(),
        sk: violation.sk.clone(),
    }
}

/// A check that `id`'s node is still as the scan saw it: absent, or of the scanned version.
fn node_unchanged(id: &str, scanned: Option<&Item>) -> Write {
    let key = Key::same(keys::node_key(id));
    let condition = match scanned {
        Some(node) => vec![engine::derive::version_as_read(node)],
        None => vec![Clause::NotExists],
    };
    Write::Check { key, condition }
}

/// Deletes a unique value whose owner is gone or holds another value, while its owner is
/// as scanned.
fn orphan_unique_value(scan: &Scan, violation: &Violation, item: &Item) -> Fix {
    let owner = text(item, "id");
    Fix::Write(vec![
        Write::Delete {
            key: key_of(violation),
            condition: vec![Clause::Equals(
                "id".to_owned(),
                AttrValue::S(owner.to_owned()),
            )],
        },
        node_unchanged(owner, scan.node(owner)),
    ])
}

/// Deletes an edge with a missing end, while its other end is as scanned.
fn dangling_edge(scan: &Scan, violation: &Violation, edge: &Item) -> Fix {
    let (from, to) = (text(edge, "from"), text(edge, "to"));
    let mut writes = vec![Write::Delete {
        key: key_of(violation),
        condition: vec![Clause::Exists],
    }];
    for end in [from, to] {
        if !end.is_empty() && keys::node_key(end) != violation.pk {
            writes.push(node_unchanged(end, scan.node(end)));
        }
    }
    Fix::Write(writes)
}

/// Writes a node's missing unique value, unless another node holds it too or the owner is
/// gone.
fn missing_unique_value(scan: &Scan, violation: &Violation) -> Option<Fix> {
    let owner = violation.owner.as_ref()?;
    if scan
        .holders
        .get(violation.pk.as_str())
        .copied()
        .unwrap_or(0)
        > 1
    {
        return None;
    }
    let owner_node = scan.node(owner)?;
    let typename = unique_typename_of(scan.model, owner_node, &violation.pk)?;
    let item = Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(violation.pk.clone())),
        (keys::SK.to_owned(), AttrValue::S(violation.pk.clone())),
        (TYPENAME.to_owned(), AttrValue::S(typename)),
        ("id".to_owned(), AttrValue::S(owner.clone())),
    ]);
    Some(Fix::Write(vec![
        Write::Put {
            item,
            condition: vec![Clause::NotExists],
        },
        node_unchanged(owner, Some(owner_node)),
    ]))
}

/// Sets a node's counts to its live members and edges.
fn node_counts(scan: &Scan, violation: &Violation, node: &Item) -> Fix {
    let mut fixed = node.clone();
    fixed.retain(|name, _| !keys::is_count_attribute(name));
    for (attribute, count) in scan.wanted_nodes.get(&violation.pk).into_iter().flatten() {
        fixed.insert(attribute.clone(), AttrValue::N(count.to_string()));
    }
    // Only the counts are written, each on condition that it is as scanned.
    Fix::Write(vec![engine::write::node_update(
        node,
        &fixed,
        vec![Clause::Exists],
    )])
}

/// A shard counter, as the scan saw it (or missing): set to the nodes counted.
fn shard_counter(scan: &Scan, violation: &Violation, counter: Option<&Item>) -> Fix {
    let condition = match counter.and_then(|c| c.get(LIST_COUNT)) {
        Some(count) => Clause::Equals(LIST_COUNT.to_owned(), count.clone()),
        None if counter.is_some() => Clause::Exists,
        None => Clause::NotExists,
    };
    let want = scan.wanted_lists.get(&violation.pk).copied().unwrap_or(0);
    let typename = violation
        .pk
        .rsplit_once('#')
        .map_or(violation.pk.as_str(), |(typename, _)| typename);
    Fix::Write(vec![if want == 0 {
        Write::Delete {
            key: key_of(violation),
            condition: vec![condition],
        }
    } else {
        Write::Put {
            item: Item::from_iter([
                (keys::PK.to_owned(), AttrValue::S(violation.pk.clone())),
                (keys::SK.to_owned(), AttrValue::S(violation.pk.clone())),
                (TYPENAME.to_owned(), AttrValue::S(typename.to_owned())),
                (LIST_COUNT.to_owned(), AttrValue::N(want.to_string())),
            ]),
            condition: vec![condition],
        }
    }])
}

/// Rewrites an edge's inverse slot, while the edge is as scanned.
fn edge_slot(scan: &Scan, edge: &Item) -> Option<Fix> {
    let derived = derived_edge(scan.model, edge, &scan.by_key)?;
    let condition = match edge.get("updatedAt") {
        Some(at) => Clause::Equals("updatedAt".to_owned(), at.clone()),
        None => Clause::Exists,
    };
    Some(Fix::Write(vec![Write::Put {
        item: derived,
        condition: vec![condition],
    }]))
}

/// The `__typename` of the unique item `key` that `node` should own.
fn unique_typename_of(model: &Model, node: &Item, key: &str) -> Option<String> {
    let typename = text(node, TYPENAME);
    let type_def = model.type_def(typename)?;
    type_def.unique_fields().find_map(|field| {
        let value = node.get(&field.name)?;
        (keys::unique_key(typename, &field.name, &engine::derive::unique_text(value)) == key)
            .then(|| keys::unique_typename(typename, &field.name))
    })
}

/// An edge with its inverse slot and `toType` as the model derives them.
fn derived_edge(model: &Model, edge: &Item, by_key: &HashMap<(&str, &str), &Item>) -> Option<Item> {
    let target = keys::node_key(text(edge, "to"));
    let target_type = text(by_key.get(&(target.as_str(), target.as_str()))?, TYPENAME);
    derive_edge(model, edge, target_type)
}
