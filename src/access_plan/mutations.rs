//! The plans of the mutations: each `@model` type's create, update and delete (one and many,
//! by the names `@model(mutations:)` gives them), and each edge type's add and remove.

use std::fmt::Write as _;

use crate::keys;
use crate::model::{EdgeTypeDef, FieldKind, Model, TypeDef};

use super::access::{Access, FieldPlan, access, node_read};

/// The plans of the mutations generated for `type_def`, by the names it has, without those
/// `@model(mutations:)` leaves out.
pub(super) fn mutation_plans(model: &Model, type_def: &TypeDef) -> Vec<FieldPlan> {
    let (name, roots) = (&type_def.name, &type_def.roots);
    let plural = crate::model::plural(name);
    let kinds = [
        ("create", &roots.create),
        ("update", &roots.update),
        ("delete", &roots.delete),
    ];
    every_mutation_plan(model, type_def)
        .into_iter()
        .filter_map(|mut plan| {
            for (verb, chosen) in &kinds {
                if plan.field == format!("Mutation.{verb}{name}") {
                    let chosen = chosen.as_ref()?;
                    plan.field = format!("Mutation.{chosen}");
                    return Some(plan);
                }
                if plan.field == format!("Mutation.{verb}{plural}") {
                    return chosen.is_some().then_some(plan);
                }
            }
            Some(plan)
        })
        .collect()
}

/// Every mutation a `@model` type may have, under its default names.
fn every_mutation_plan(model: &Model, type_def: &TypeDef) -> Vec<FieldPlan> {
    let name = &type_def.name;
    let plural = crate::model::plural(name);
    let written = create_writes(type_def);
    let delete = delete_accesses(model, type_def);
    vec![
        FieldPlan {
            field: format!("Mutation.create{name}"),
            accesses: create_accesses(model, type_def, &written),
        },
        FieldPlan {
            field: format!("Mutation.update{name}"),
            accesses: vec![
                access(
                    "GetItem",
                    "table",
                    "NODE#<id> (consistent)",
                    "one per mutation",
                ),
                access(
                    "TransactWriteItems",
                    "table",
                    "NODE#<id> (condition: version), unique values taken and freed",
                    "one per mutation",
                ),
            ],
        },
        FieldPlan {
            field: format!("Mutation.delete{name}"),
            accesses: delete.clone(),
        },
        FieldPlan {
            field: format!("Mutation.create{plural}"),
            accesses: vec![access(
                "TransactWriteItems",
                "table",
                format!("each member's {written}"),
                "one per batch (100 writes at most)",
            )],
        },
        FieldPlan {
            field: format!("Mutation.update{plural}"),
            accesses: vec![
                access(
                    "GetItem",
                    "table",
                    "NODE#<id> (consistent)",
                    "one per member, in parallel",
                ),
                access(
                    "TransactWriteItems",
                    "table",
                    "each member's NODE#<id> (condition: version), unique values taken and freed",
                    "one per batch (100 writes at most)",
                ),
            ],
        },
        FieldPlan {
            field: format!("Mutation.delete{plural}"),
            accesses: for_each_member(delete),
        },
    ]
}

/// What a create writes: the node and its unique values, each only where absent, the
/// defaults it fills in, and what a nested input adds.
fn create_writes(type_def: &TypeDef) -> String {
    let name = &type_def.name;
    let uniques: Vec<String> = type_def
        .unique_fields()
        .map(|f| keys::unique_key(name, &f.name, "<value>"))
        .collect();
    let mut written = String::from("NODE#<id> (condition: absent)");
    for unique in &uniques {
        let _ = write!(written, ", {unique} (condition: absent)");
    }
    let defaults: Vec<String> = type_def
        .defaults()
        .map(|(field, _, default)| format!("{field} = {default}"))
        .collect();
    if !defaults.is_empty() {
        let _ = write!(written, "; defaults when left out: {}", defaults.join(", "));
    }
    if nests(type_def, |kind| {
        matches!(
            kind,
            FieldKind::HasMany(_) | FieldKind::BelongsTo { .. } | FieldKind::Outgoing { .. }
        )
    }) {
        let _ = write!(
            written,
            "; with nested input, the nodes, links and edges it names"
        );
    }
    written
}

fn nests(type_def: &TypeDef, kind: fn(&FieldKind) -> bool) -> bool {
    type_def.fields.iter().any(|f| kind(&f.kind))
}

/// A create's accesses: what a nested input (`link:` of a @hasMany, `add:` of an
/// @outgoing) reads first, then the one transaction that writes `written`.
fn create_accesses(model: &Model, type_def: &TypeDef, written: &str) -> Vec<Access> {
    let mut create = Vec::new();
    if type_def.fields.iter().any(|f| {
        matches!(&f.kind, FieldKind::HasMany(relation) if model.type_def(&relation.element).is_some())
    }) {
        create.push(access(
            "GetItem",
            "table",
            "NODE#<id> (consistent) of each node linked under the new one",
            "one per linked node, in parallel",
        ));
    }
    if nests(type_def, |kind| matches!(kind, FieldKind::Outgoing { .. })) {
        create.push(access(
            "BatchGetItem",
            "table",
            "NODE#<to> of each nested edge's target",
            "one per mutation",
        ));
    }
    create.push(access(
        "TransactWriteItems",
        "table",
        written.to_owned(),
        "one per mutation",
    ));
    create
}

/// A delete's accesses: the node, its edges both ways when it may have any, then one
/// transaction.
fn delete_accesses(model: &Model, type_def: &TypeDef) -> Vec<Access> {
    let name = &type_def.name;
    let has_edges = model
        .edges
        .iter()
        .any(|e| e.from == *name || model.possible_types(&e.to).contains(&name.as_str()));
    let mut delete = vec![access(
        "GetItem",
        "table",
        "NODE#<id> (consistent)",
        "one per mutation",
    )];
    if has_edges {
        delete.push(access(
            "Query",
            "table and inverse slots",
            "the node's edges, both directions",
            "one per edge type, in parallel",
        ));
    }
    delete.push(access(
        "TransactWriteItems",
        "table",
        "the node, its unique values and edges (steps of 40 edges past 100 items)",
        "one per mutation",
    ));
    delete
}

/// A single delete's accesses, made for each member of a batch: reads in parallel, writes
/// in transactions of up to 100 writes.
fn for_each_member(delete: Vec<Access>) -> Vec<Access> {
    delete
        .into_iter()
        .map(|mut step| {
            step.batching = match step.operation {
                "TransactWriteItems" => "one per batch (100 writes at most)",
                "GetItem" => "one per member, in parallel",
                _ => "one per edge type and member, in parallel",
            };
            step
        })
        .collect()
}

/// `add<Edge>` and `remove<Edge>`.
pub(super) fn edge_mutation_plans(edge: &EdgeTypeDef) -> [FieldPlan; 2] {
    let add = FieldPlan {
        field: format!("Mutation.add{}", edge.name),
        accesses: vec![
            access(
                "GetItem",
                "table",
                "NODE#<from> (consistent)",
                "one per mutation",
            ),
            access(
                "GetItem",
                "table",
                format!(
                    "PK = NODE#<from>, SK = {}",
                    keys::edge_sort_key(&edge.name, "<to>")
                ),
                "one per mutation",
            ),
            node_read("to"),
            access(
                "TransactWriteItems",
                "table",
                "the edge, the source's edge-set entry and edge count, the target's edge \
                 count (no version moves)",
                "one per mutation",
            ),
        ],
    };
    let remove = FieldPlan {
        field: format!("Mutation.remove{}", edge.name),
        accesses: vec![
            access(
                "GetItem",
                "table",
                format!(
                    "PK = NODE#<from>, SK = {}",
                    keys::edge_sort_key(&edge.name, "<to>")
                ),
                "one per mutation",
            ),
            access(
                "TransactWriteItems",
                "table",
                "the edge deleted, its edge-set entry removed, both ends' edge counts \
                 lowered (no version moves)",
                "one per mutation",
            ),
        ],
    };
    [add, remove]
}
