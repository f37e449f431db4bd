//! Read-ahead: the nodes the next level of a query will need, loaded with the level that
//! names them.
//!
//! # Why
//!
//! async-graphql's dynamic schema resolves the fields of one object one after another, so two
//! sibling fields that each load nodes (a goal's `leads` and `teams`, a cow's `farm` and
//! `owner`) would be two batches. Whoever reads a level's nodes therefore looks at what the
//! query selects on them and loads every node their selected `@belongsTo` and `@targets` fields
//! will need, in one batch; those fields then answer from the request's cache.

use std::collections::HashSet;

use super::nodes::{Node, prefetch};
use super::selection::Selection;
use crate::engine::{EngineError, RequestScope, derive};
use crate::keys;
use crate::model::{FieldDef, FieldKind, Model};
use crate::store::AttrValue;

/// Loads, in one batch, the nodes that the selected single-node relations of `nodes` point to.
pub(super) async fn read_ahead(
    scope: &RequestScope,
    model: &Model,
    nodes: &[&Node],
    selection: &Selection<'_>,
) -> Result<(), EngineError> {
    // What each type's selected relations read, worked out once per type: a level's nodes are
    // mostly of one type, and the selection is the same for all of them.
    let mut plans: Vec<(&str, Vec<Relation<'_>>)> = Vec::new();
    // Each node once: a level's nodes mostly point at the same few (a page of goals at its
    // handful of teams), and the loader would look up and cache every repeat again.
    let mut seen: HashSet<&str, foldhash::fast::RandomState> = HashSet::default();
    let mut wanted = Vec::new();
    for node in nodes {
        let at = match plans.iter().position(|(name, _)| *name == node.typename) {
            Some(at) => at,
            None => {
                plans.push((&node.typename, plan(model, &node.typename, selection)));
                plans.len() - 1
            }
        };
        for relation in &plans[at].1 {
            match relation {
                Relation::BelongsTo { foreign_key } => {
                    let id = node.item.get(foreign_key).and_then(AttrValue::as_str);
                    wanted.extend(id.filter(|id| seen.insert(id)).map(keys::node_key));
                }
                Relation::Targets { edge, role_sort } => wanted.extend(
                    derive::targets(&node.item, edge, role_sort.as_deref())
                        .filter(|id| seen.insert(id))
                        .map(keys::node_key),
                ),
            }
        }
    }
    prefetch(scope, &wanted).await
}

/// A selected relation of a type whose nodes are read ahead.
enum Relation<'m> {
    /// A `@belongsTo`: the node its foreign key names.
    BelongsTo { foreign_key: &'m str },
    /// A `@targets`: the nodes its edge set lists for the edge type (and role).
    Targets {
        edge: &'m str,
        role_sort: Option<String>,
    },
}

/// The relations of `type_name` that `selection` selects and that need their nodes read.
fn plan<'m>(model: &'m Model, type_name: &str, selection: &Selection<'_>) -> Vec<Relation<'m>> {
    let Some(type_def) = model.type_def(type_name) else {
        return Vec::new();
    };
    let mut relations = Vec::new();
    // A resolver file's field reads what its own steps say, nothing of the directive's. Asked
    // of the relations only: a page plans again for the targets of each of its nodes.
    let by_directive = |field: &FieldDef| !model.is_resolved(&type_def.name, &field.name);
    for field in &type_def.fields {
        match &field.kind {
            FieldKind::BelongsTo { foreign_key, .. }
                if by_directive(field) && selection.asks(&field.name) =>
            {
                relations.push(Relation::BelongsTo { foreign_key });
            }
            FieldKind::Targets { edge, role, .. }
                if by_directive(field) && selection.asks_beyond_identity(&field.name) =>
            {
                let Some(edge_def) = model.edge_def(edge) else {
                    continue;
                };
                relations.push(Relation::Targets {
                    edge,
                    role_sort: derive::role_sort_value(model, edge_def, role.as_deref()),
                });
            }
            _ => {}
        }
    }
    relations
}
