//! Adding and removing edges, and finding every edge that touches a node (for its delete).
//!
//! Invariant: a node's edge set always equals its edge items of the types kept in edge sets.
//! Every write of an edge changes the edge item and its source node's edge set in one
//! transaction, conditioned on what was read of the edge. Adding or removing one entry of the
//! set commutes with changes to other entries, so it does not depend on the source's version
//! (writers of one goal's edges do not race); replacing an entry holds on the set as read.
//! No edge write moves a node's version, which tells clients of changes to its fields only; a
//! node's edge counts tell its delete that its edges changed.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::drive::{Attempt, Driver};
use super::guard::Guard;
use super::plan::{Plan, Purpose, adjust_node, node_update, version_is};
use crate::engine::derive::{
    MAX_SORT_VALUE_BYTES, check_item_size, edge_set_entry, set_edge_slot_attributes, text,
    with_edge_set_entry,
};
use crate::engine::error::EngineError;
use crate::engine::formats::now;
use crate::engine::read::read_node_consistent;
use crate::engine::rules::{Access, admits, unauthorized};
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::keys::TYPENAME;
use crate::model::{EdgeTypeDef, Model, Operation, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, MAX_ITEM_BYTES, RangeQuery, Write, item_size};

/// Numbers to add to a node's count attributes.
type Counts = Vec<(String, i64)>;

/// The most edges one query of a node's edges reads while deleting it.
const EDGES_PER_READ: usize = 1000;

fn checked_id(value: &str, argument: &str) -> Result<(), EngineError> {
    keys::validate_id(value).map_err(|e| EngineError::bad_input(format!("{argument}: {e}")))
}

/// Adds the edge of `edge_def` from `from` to `to` with `metadata` (its own fields), or changes
/// its metadata when it exists. Answers the edge item as written.
pub async fn add_edge(
    scope: &RequestScope,
    model: &Model,
    edge_def: &EdgeTypeDef,
    from: &str,
    to: &str,
    metadata: &Item,
) -> Result<Arc<Item>, EngineError> {
    checked_id(from, "from")?;
    checked_id(to, "to")?;
    if from == to {
        return Err(EngineError::bad_input(
            "an edge cannot point at its own source",
        ));
    }
    let guard = &source_guard(scope, model, &edge_def.from)?;
    let edge = Driver::new(scope, "edge add")
        .run(move |_| async move {
            let ends = read_ends(scope, model, edge_def, from, to, guard).await?;
            let edge = edge_item(
                model,
                edge_def,
                (from, to, &ends.target_type),
                ends.existing.as_ref(),
                metadata,
            )?;
            let edge = Arc::new(edge);
            let mut plan = add_plan(model, edge_def, &ends, edge.clone())?;
            held_to_rule(&mut plan, guard, from);
            Ok(Attempt::Write(plan, edge))
        })
        .await?;
    scope.loader.forget(&keys::node_key(from));
    Ok(edge)
}

/// Who may add or remove edges from a node of `source_type`: whoever may update it.
fn source_guard(
    scope: &RequestScope,
    model: &Model,
    source_type: &str,
) -> Result<Guard, EngineError> {
    let type_def = model.type_def(source_type).ok_or(EngineError::Internal)?;
    Guard::default().ruled(scope, type_def, Operation::Update, &[])
}

/// Conditions the write on the source `from` on its rule, in the plan's transaction: a change
/// of owner that commits first makes it fail, and the write reads again.
fn held_to_rule(plan: &mut Plan, guard: &Guard, from: &str) {
    if let Some((rule, _)) = &guard.rule {
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key(from)),
                condition: vec![Clause::Holds(rule.clone())],
            },
            Purpose::Node,
        );
    }
}

/// What an edge write reads first: its source (strongly consistent), the edge as it is, and
/// the type of its target.
struct EdgeEnds {
    from: String,
    to: String,
    source: Item,
    existing: Option<Item>,
    target_type: String,
}

async fn read_ends(
    scope: &RequestScope,
    model: &Model,
    edge_def: &EdgeTypeDef,
    from: &str,
    to: &str,
    guard: &Guard,
) -> Result<EdgeEnds, EngineError> {
    let Some(source) = read_node_consistent(scope, &edge_def.from, from).await? else {
        return Err(match guard.rule {
            Some(_) => guard.missing(
                model
                    .type_def(&edge_def.from)
                    .ok_or(EngineError::Internal)?,
                from,
            ),
            None => EngineError::bad_input(format!(
                "from: there is no {} with id {from}",
                edge_def.from
            )),
        });
    };
    guard.check(&source)?;
    let existing = scope
        .store
        .get_item_consistent(&Key {
            pk: keys::node_key(from),
            sk: keys::edge_sort_key(&edge_def.name, to),
        })
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    let target_type = target_type(scope, model, edge_def, to).await?;
    Ok(EdgeEnds {
        from: from.to_owned(),
        to: to.to_owned(),
        source,
        existing,
        target_type,
    })
}

/// The type of node `to`, which an edge of `edge_def` may point at; an error when there is no
/// such node. The target's type is recorded on the edge, so a read of the inverse slot knows
/// what the node it starts from is without reading it.
pub(super) async fn target_type(
    scope: &RequestScope,
    model: &Model,
    edge_def: &EdgeTypeDef,
    to: &str,
) -> Result<String, EngineError> {
    checked_id(to, "to")?;
    let reachable = model.possible_types(&edge_def.to);
    let target = scope
        .loader
        .load(&keys::node_key(to))
        .await
        .map_err(|e| EngineError::from_store(&e))?
        .filter(|target| reachable.contains(&text(target, TYPENAME)));
    // A caller whose rules let them read only some of these nodes links only to those they
    // may read, and is answered the same for one that is not there: ids cannot be probed.
    let partly_readable = reachable
        .iter()
        .any(|t| scope.read_access(&[t]) != Access::All);
    match target {
        Some(target) => {
            let typename = text(&target, TYPENAME).to_owned();
            if admits(&scope.read_access(&[typename.as_str()]), &target) {
                Ok(typename)
            } else {
                Err(unauthorized(Operation::Read, &edge_def.to))
            }
        }
        None if partly_readable => Err(unauthorized(Operation::Read, &edge_def.to)),
        None => Err(EngineError::bad_input(format!(
            "to: there is no {} with id {to}",
            edge_def.to
        ))),
    }
}

/// The edge item to write: the metadata, both ends, the target's type, the inverse slot and
/// the times (`createdAt` kept from an existing edge), within DynamoDB's limits.
fn edge_item(
    model: &Model,
    edge_def: &EdgeTypeDef,
    ends: (&str, &str, &str),
    existing: Option<&Item>,
    metadata: &Item,
) -> Result<Item, EngineError> {
    let (from, to, target_type) = ends;
    let edge_name = edge_def.name.as_str();
    let now = now();
    let mut edge = metadata.clone();
    edge.extend([
        (keys::PK.to_owned(), AttrValue::S(keys::node_key(from))),
        (
            keys::SK.to_owned(),
            AttrValue::S(keys::edge_sort_key(edge_name, to)),
        ),
        (TYPENAME.to_owned(), AttrValue::S(edge_name.to_owned())),
        ("from".to_owned(), AttrValue::S(from.to_owned())),
        ("to".to_owned(), AttrValue::S(to.to_owned())),
        ("toType".to_owned(), AttrValue::S(target_type.to_owned())),
        ("updatedAt".to_owned(), AttrValue::S(now.clone())),
    ]);
    let created = existing
        .and_then(|e| e.get("createdAt").cloned())
        .unwrap_or(AttrValue::S(now));
    edge.insert("createdAt".to_owned(), created);
    set_edge_slot_attributes(model, edge_def, &mut edge);
    if text(&edge, &keys::slot_sort_attribute(edge_def.slot)).len() > keys::MAX_SORT_KEY_BYTES {
        return Err(EngineError::bad_input(format!(
            "{edge_name}.{}: too long to sort by: at most {MAX_SORT_VALUE_BYTES} bytes",
            edge_def.sort_by.as_deref().unwrap_or("sort value"),
        )));
    }
    check_item_size(edge_name, &edge)?;
    Ok(edge)
}

/// The transaction of an add: the edge (conditioned on what was read of it), the entry put
/// into the source's edge set (or the set written whole, on condition that it is as read), and
/// one more to each end's edge count. The counts make a delete of either end that read its
/// edges before this add fail and read them again.
fn add_plan(
    model: &Model,
    edge_def: &EdgeTypeDef,
    ends: &EdgeEnds,
    edge: Arc<Item>,
) -> Result<Plan, EngineError> {
    let edge_name = edge_def.name.as_str();
    let (from, to) = (ends.from.as_str(), ends.to.as_str());
    let mut plan = Plan::default();
    let edge_condition = match &ends.existing {
        Some(existing) => vec![Clause::Equals(
            "updatedAt".to_owned(),
            existing
                .get("updatedAt")
                .cloned()
                .unwrap_or(AttrValue::Null),
        )],
        None => vec![Clause::NotExists],
    };
    plan.push(
        Write::Put {
            item: (*edge).clone(),
            condition: edge_condition,
        },
        Purpose::Edge,
    );
    // A new edge counts once at each end; a changed one does not.
    let added = i64::from(ends.existing.is_none());
    let count = |outgoing: bool| vec![(keys::edges_count_attribute(edge_name, outgoing), added)];
    let source_gets = if edge_def.edge_set {
        let entry = edge_set_entry(model, edge_def, &edge);
        let mut next = with_edge_set_entry(&ends.source, edge_name, to, Some(entry.clone()));
        if added != 0 {
            let attribute = keys::edges_count_attribute(edge_name, true);
            let total = next
                .get(&attribute)
                .and_then(AttrValue::as_i64)
                .unwrap_or(0)
                + added;
            next.insert(attribute, AttrValue::N(total.to_string()));
        }
        let size = item_size(&next);
        if size > MAX_ITEM_BYTES {
            return Err(EngineError::bad_input(format!(
                "adding this edge would grow {} {from} to {size} bytes, past DynamoDB's item limit of {MAX_ITEM_BYTES} bytes; consider edgeSet: false for {edge_name}",
                edge_def.from
            )));
        }
        // Adding an entry commutes with every other add and remove of another target's entry,
        // so it goes in without a condition on the source's version: writers of one goal's
        // edges do not race each other. Whether the set holds an older entry for this target
        // is told by the edge as read (the edge write is conditioned on exactly that), not by
        // the source, which was read before it. Replacing an entry (a new role), or growing a
        // source near DynamoDB's item limit, writes the edge set whole, on condition that it
        // and the version (its fields) are as read: the size checked is the size written.
        let replaces = ends
            .existing
            .as_ref()
            .is_some_and(|existing| edge_set_entry(model, edge_def, existing) != entry);
        let commutes = !replaces && size + COMMUTING_MARGIN_BYTES <= MAX_ITEM_BYTES;
        if commutes {
            Some(vec![entry])
        } else {
            let version = crate::engine::derive::version(&ends.source);
            plan.push(
                node_update(&ends.source, &next, vec![version_is(&ends.source, version)]),
                Purpose::Node,
            );
            None
        }
    } else {
        Some(Vec::new())
    };
    // The source gets its entry and count (and is checked), unless its set was written above.
    if let Some(entries) = source_gets {
        let (bump, purpose) = bump_end(
            "from",
            from,
            &edge_def.from,
            &edge_def.from,
            entries,
            count(true),
        );
        plan.push(bump, purpose);
    }
    let (bump, purpose) = bump_end(
        "to",
        to,
        &ends.target_type,
        &edge_def.to,
        Vec::new(),
        count(false),
    );
    plan.push(bump, purpose);
    Ok(plan)
}

/// Room left below DynamoDB's item limit for edge-set entries that concurrent adds put into
/// one source without reading it: an entry takes at most about 1 KB (its sort value is capped),
/// so well over a hundred adds at once; a source closer to the limit has its set written whole.
const COMMUTING_MARGIN_BYTES: usize = 128 * 1024;

/// An update of one end of an edge (`end`: `from` or `to`) that puts `added` into its edge set
/// and adds `counts`, on condition that it is still a node of `node_type`; a failure names
/// `expected`, the type the edge wants there.
fn bump_end(
    end: &str,
    id: &str,
    node_type: &str,
    expected: &str,
    added: Vec<String>,
    counts: Vec<(String, i64)>,
) -> (Write, Purpose) {
    let counts = counts
        .into_iter()
        .filter(|(_, delta)| *delta != 0)
        .collect();
    let bump = adjust_node(
        id,
        counts,
        added,
        Vec::new(),
        vec![Clause::Equals(
            TYPENAME.to_owned(),
            AttrValue::S(node_type.to_owned()),
        )],
    );
    let purpose = Purpose::Reference {
        field: end.to_owned(),
        target: expected.to_owned(),
        id: id.to_owned(),
    };
    (bump, purpose)
}

/// The writes that add an edge of `edge_def` from `source`, a node created in the same
/// transaction, to the node `to` of `target_type`: the edge item and the target's count. The
/// edge's entry goes into `source` itself when the edge type keeps edge sets.
pub(super) fn plan_edge_from_new(
    model: &Model,
    edge_def: &EdgeTypeDef,
    source: &mut Item,
    to: &str,
    target_type: &str,
    metadata: &Item,
) -> Result<Plan, EngineError> {
    let from = text(source, "id").to_owned();
    let edge = edge_item(model, edge_def, (&from, to, target_type), None, metadata)?;
    let edge = Arc::new(edge);
    if edge_def.edge_set {
        let entry = edge_set_entry(model, edge_def, &edge);
        *source = with_edge_set_entry(source, &edge_def.name, to, Some(entry));
    }
    let attribute = keys::edges_count_attribute(&edge_def.name, true);
    let total = source
        .get(&attribute)
        .and_then(AttrValue::as_i64)
        .unwrap_or(0)
        + 1;
    source.insert(attribute, AttrValue::N(total.to_string()));
    let mut plan = Plan::default();
    plan.push(
        Write::Put {
            item: (*edge).clone(),
            condition: vec![Clause::NotExists],
        },
        Purpose::Edge,
    );
    let (bump, purpose) = bump_end(
        "to",
        to,
        target_type,
        &edge_def.to,
        Vec::new(),
        vec![(keys::edges_count_attribute(&edge_def.name, false), 1)],
    );
    plan.push(bump, purpose);
    Ok(plan)
}

/// Removes the edge of type `edge_name` from `from` to `to`; an error when there is none.
pub async fn remove_edge(
    scope: &RequestScope,
    model: &Model,
    edge_name: &str,
    from: &str,
    to: &str,
) -> Result<(), EngineError> {
    checked_id(from, "from")?;
    checked_id(to, "to")?;
    let edge_key = &Key {
        pk: keys::node_key(from),
        sk: keys::edge_sort_key(edge_name, to),
    };
    let edge_def = model
        .edge_def(edge_name)
        .ok_or_else(|| EngineError::bad_input(format!("there is no edge type {edge_name}")))?;
    let guard = &source_guard(scope, model, &edge_def.from)?;
    Driver::new(scope, "edge remove")
        .run(move |_| async move {
            if guard.rule.is_some() {
                // The source's rules decide who changes its edges: it is read to check them.
                let source_type = model
                    .type_def(&edge_def.from)
                    .ok_or(EngineError::Internal)?;
                let source = read_node_consistent(scope, &edge_def.from, from).await?;
                guard.check(&source.ok_or_else(|| guard.missing(source_type, from))?)?;
            }
            let existing = scope
                .store
                .get_item_consistent(edge_key)
                .await
                .map_err(|e| EngineError::from_store(&e))?;
            let Some(existing) = existing else {
                return Err(EngineError::bad_input(format!(
                    "there is no {edge_name} from {from} to {to}"
                )));
            };
            let mut plan = detach(model, &[Arc::new(existing)], None);
            held_to_rule(&mut plan, guard, from);
            Ok(Attempt::Write(plan, ()))
        })
        .await?;
    scope.loader.forget(&keys::node_key(from));
    Ok(())
}

/// The writes that remove `edges` and take their entries out of their sources' edge sets,
/// without reading the sources: each end gets one update that takes its entries out of the set
/// and its counts down, leaving its version. `deleting` is a node deleted in the same
/// transaction, whose own edge set needs no change. Each edge is deleted only if it is still as
/// it was read.
pub fn detach(model: &Model, edges: &[Arc<Item>], deleting: Option<&str>) -> Plan {
    // Node id → the entries to take out of its edge set and the counts to take from it, in a
    // stable order: each source loses its edge out, each target its edge in.
    let mut ends: BTreeMap<String, (Vec<String>, Counts)> = BTreeMap::new();
    for edge in edges {
        let edge_type = text(edge, TYPENAME);
        let Some(edge_def) = model.edge_def(edge_type) else {
            continue;
        };
        for (end, outgoing) in [("from", true), ("to", false)] {
            let id = text(edge, end);
            if Some(id) == deleting {
                continue;
            }
            let (entries, counts) = ends.entry(id.to_owned()).or_default();
            if outgoing && edge_def.edge_set {
                entries.push(edge_set_entry(model, edge_def, edge));
            }
            let attribute = keys::edges_count_attribute(edge_type, outgoing);
            match counts.iter_mut().find(|(name, _)| *name == attribute) {
                Some((_, delta)) => *delta -= 1,
                None => counts.push((attribute, -1)),
            }
        }
    }
    let mut plan = Plan::default();
    for (id, (removed, counts)) in ends {
        plan.push(
            adjust_node(&id, counts, Vec::new(), removed, vec![Clause::Exists]),
            Purpose::Node,
        );
    }
    for edge in edges {
        plan.push(
            Write::Delete {
                key: Key {
                    pk: text(edge, keys::PK).to_owned(),
                    sk: text(edge, keys::SK).to_owned(),
                },
                condition: vec![Clause::Equals(
                    "updatedAt".to_owned(),
                    edge.get("updatedAt").cloned().unwrap_or(AttrValue::Null),
                )],
            },
            Purpose::Edge,
        );
    }
    plan
}

/// How a delete of `current`, a node of `type_def`, holds its edge counts: each at the number
/// of `edges` (the edges it read to delete with it) of its kind. Edge writes leave the node's
/// version as it is; this is how the delete learns that its edges changed since it read them.
/// Each edge of `edges` is held to what was read of it, so at commit the node's edges include
/// `edges`; with as many of each kind as `edges` has, they are `edges`, whatever was added and
/// removed in between.
///
/// `None` when the counts as read are not those numbers: an edge changed between the read of
/// the node and of its edges, or an index read lagged behind the table; the delete reads both
/// again. On its last attempt (`last`), counts that still disagree are taken as broken (data
/// written before counts, or damaged) and held as read, with an error naming the repair.
pub fn edge_counts_held(
    model: &Model,
    type_def: &TypeDef,
    current: &Item,
    edges: &[Arc<Item>],
    last: bool,
) -> Option<Vec<Clause>> {
    let id = text(current, "id");
    let counts: Vec<(String, i64)> = edge_counts(model, type_def, id, edges).collect();
    let stored = |attribute: &str| current.get(attribute).and_then(AttrValue::as_i64);
    let wrong = counts
        .iter()
        .find(|(attribute, held)| stored(attribute).unwrap_or(0) != *held);
    match wrong {
        None => Some(
            counts
                .into_iter()
                .map(|(attribute, held)| Clause::Count(attribute, held))
                .collect(),
        ),
        Some((attribute, held)) if last => {
            tracing::error!(
                %id,
                %attribute,
                edges = held,
                "integrity: a node's edge count differs from its edges; deleting it on the counts \
                 as read (`tablegraph check --repair` sets the counts)"
            );
            Some(
                counts
                    .into_iter()
                    .map(|(attribute, _)| {
                        let value = current.get(&attribute).cloned();
                        match value {
                            Some(value) => Clause::Equals(attribute, value),
                            None => Clause::Missing(attribute),
                        }
                    })
                    .collect(),
            )
        }
        Some(_) => None,
    }
}

/// How many edge counts a node of `type_def` has (the clauses [`edge_counts_held`] holds).
pub fn edge_count_attributes(model: &Model, type_def: &TypeDef) -> usize {
    edge_counts(model, type_def, "", &[]).count()
}

/// Each edge-count attribute of a node of `type_def` with the number of `edges` it counts.
fn edge_counts<'a>(
    model: &'a Model,
    type_def: &'a TypeDef,
    id: &'a str,
    edges: &'a [Arc<Item>],
) -> impl Iterator<Item = (String, i64)> + 'a {
    model.edges.iter().flat_map(move |edge_def| {
        [(true, "from", &edge_def.from), (false, "to", &edge_def.to)]
            .into_iter()
            .filter(|(_, _, end_type)| {
                model
                    .possible_types(end_type)
                    .contains(&type_def.name.as_str())
            })
            .map(move |(outgoing, end, _)| {
                let held = edges
                    .iter()
                    .filter(|edge| text(edge, TYPENAME) == edge_def.name && text(edge, end) == id)
                    .count();
                (
                    keys::edges_count_attribute(&edge_def.name, outgoing),
                    i64::try_from(held).unwrap_or(i64::MAX),
                )
            })
    })
}

/// Every edge touching node `id` of `type_def`: the edge items in its own partition and the
/// edges of every type that may point at it, read from their inverse slots.
pub async fn edges_touching(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
) -> Result<Vec<Arc<Item>>, EngineError> {
    let node_key = keys::node_key(id);
    let mut reads = vec![(None, node_key.clone())];
    for edge_def in &model.edges {
        if model
            .possible_types(&edge_def.to)
            .contains(&type_def.name.as_str())
        {
            reads.push((
                Some(edge_def.slot),
                keys::slot_partition(&edge_def.name, id),
            ));
        }
    }
    let queries = reads.iter().map(|(index, partition)| async move {
        let query = RangeQuery {
            index: *index,
            partition,
            lower: None,
            upper: None,
            filter: None,
            forward: true,
            limit: EDGES_PER_READ,
            // The node's own partition is read as strongly as the node; an index cannot be.
            consistent: index.is_none(),
        };
        scope.store.query_range(&query).await
    });
    let found = futures::future::try_join_all(queries)
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    Ok(found
        .into_iter()
        .flatten()
        // The node's own item shares its partition with its outgoing edges.
        .filter(|item| text(item, keys::SK) != node_key)
        .map(Arc::new)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::plan::commit;
    use super::*;

    const SCHEMA: &str = r#"
        enum Role { LEAD @rank(value: 500) TEAM @rank(value: 300) }
        type Goal @model { title: String! members: [User] @outgoing(edge: "Membership") }
        type User @model { name: String! }
        type Membership @edge(from: "Goal", to: "User", sortBy: "role") { role: Role! }
    "#;

    /// A node as the engine writes one, put directly.
    async fn create(store: &crate::store::Store, kind: &str, id: &str) {
        let item = Item::from_iter([
            (keys::PK.to_owned(), AttrValue::S(keys::node_key(id))),
            (keys::SK.to_owned(), AttrValue::S(keys::node_key(id))),
            (TYPENAME.to_owned(), AttrValue::S(kind.to_owned())),
            ("id".to_owned(), AttrValue::S(id.to_owned())),
            ("version".to_owned(), AttrValue::N("1".to_owned())),
        ]);
        let write = Write::Put {
            item,
            condition: Vec::new(),
        };
        store.transact_write(vec![write]).await.expect("a write");
    }

    fn role(name: &str) -> Item {
        Item::from_iter([("role".to_owned(), AttrValue::S(name.to_owned()))])
    }

    /// Another writer changes the edge's role after this add read the source but before it
    /// read the edge: the add must replace that role's entry, not put a second one beside it.
    #[tokio::test]
    async fn an_add_that_replaces_an_entry_it_did_not_see_in_the_source_reads_again() {
        let store = crate::store::loopback_store("edges").await;
        let model = Model::parse("s.graphql", SCHEMA).expect("a schema");
        let edge_def = model.edge_def("Membership").expect("the edge");
        let scope = RequestScope::new(&store, 100);
        create(&store, "Goal", "g").await;
        create(&store, "User", "u").await;
        let stale = read_node_consistent(&scope, "Goal", "g")
            .await
            .expect("a read")
            .expect("the goal");
        add_edge(&scope, &model, edge_def, "g", "u", &role("TEAM"))
            .await
            .expect("the other writer's add");
        let existing = store
            .get_item_consistent(&Key {
                pk: keys::node_key("g"),
                sk: keys::edge_sort_key("Membership", "u"),
            })
            .await
            .expect("a read");
        let ends = EdgeEnds {
            from: "g".into(),
            to: "u".into(),
            source: stale,
            existing,
            target_type: "User".into(),
        };
        let edge = edge_item(
            &model,
            edge_def,
            ("g", "u", "User"),
            ends.existing.as_ref(),
            &role("LEAD"),
        )
        .expect("an edge");
        let plan = add_plan(&model, edge_def, &ends, Arc::new(edge)).expect("a plan");
        let result = commit(&scope, plan).await;
        assert!(
            matches!(result, Ok(Err(Purpose::Node))),
            "{:?}",
            result.map(|r| r.map_err(|p| format!("{p:?}")))
        );
        let goal = store
            .get_item_consistent(&Key::same(keys::node_key("g")))
            .await
            .expect("a read")
            .expect("the goal");
        let Some(AttrValue::Ss(entries)) = goal.get("edges") else {
            panic!("an edge set: {goal:?}");
        };
        assert_eq!(entries.len(), 1, "{entries:?}");
    }
}
