//! `tablegraph plan`: for every field of the effective schema, the storage access it makes —
//! operation, table or index, key template, and how it batches — read before anything runs.
//!
//! Every access here is a GetItem, a BatchGetItem through the request's loader, a Query of one
//! partition, a TransactWriteItems, or a call of a function (`@function`) the field makes. Nothing plans a Scan, and a Query is made once per
//! parent, never once per item of a list (resolver files are refused at start-up otherwise).

use std::fmt::Write as _;

use crate::keys;
use crate::model::{
    Allow, AuthRule, FieldKind, Model, Operation, TypeDef, lower_first, upper_first,
};
use crate::resolvers::{Pipeline, Resolvers, Step};

/// One storage access of a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub operation: &'static str,
    /// `table` or an index, like `GSI01`.
    pub target: String,
    pub key: String,
    pub batching: &'static str,
}

/// The accesses of one field, in the order they happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPlan {
    /// `Type.field`.
    pub field: String,
    pub accesses: Vec<Access>,
}

const PER_LEVEL: &str = "batched with its query level, ≤100 keys a call";
const PER_PARENT: &str = "one per parent per page";
const CONNECTION_PAGE: &str =
    "one per parent per page; with filter: a FilterExpression, read on until full or budget";
const INDEX_PAGE: &str =
    "one per page; with filter: a FilterExpression, read on until full or budget";
const LIST_PAGE: &str = "one per shard per page, sent together; with filter: a FilterExpression, \
     read on until full or budget";
const NONE: &str = "no storage call";
const FUNCTION_CALL: &str = "one HTTP call per field, in order (with --function-batch, one per \
     level); what it answers may load more";

fn access(
    operation: &'static str,
    target: impl Into<String>,
    key: impl Into<String>,
    batching: &'static str,
) -> Access {
    Access {
        operation,
        target: target.into(),
        key: key.into(),
        batching,
    }
}

fn node_read(key: &str) -> Access {
    access(
        "BatchGetItem",
        "table",
        format!("PK = SK = NODE#<{key}>"),
        PER_LEVEL,
    )
}

/// A Query of the slot partition `<element>#<parent.id>`.
fn slot_query(slot: u8, element: &str) -> Access {
    access(
        "Query",
        keys::gsi_name(slot),
        format!(
            "{} = {}",
            keys::slot_partition_attribute(slot),
            keys::slot_partition(element, "<parent.id>")
        ),
        PER_PARENT,
    )
}

/// The plan of every field of the schema the model and resolvers make.
pub fn plan(model: &Model, resolvers: &Resolvers) -> Vec<FieldPlan> {
    let mut plans = Vec::new();
    for type_def in &model.types {
        let name = &type_def.name;
        if let Some(get) = &type_def.roots.get {
            // A type keyed by fields of its own (`@primaryKey`) is read by their values.
            let key: Vec<&str> = type_def.key_fields().map(|(f, _)| f.as_str()).collect();
            let (key, id) = match key.is_empty() {
                true => ("id".to_owned(), "id".to_owned()),
                false => (key.join(", "), format!("{} as an id", key.join(", "))),
            };
            plans.push(FieldPlan {
                field: format!("Query.{get}({key})"),
                accesses: vec![node_read(&id)],
            });
        }
        for field in type_def.unique_fields() {
            plans.push(FieldPlan {
                field: format!(
                    "Query.{}By{}({})",
                    lower_first(name),
                    upper_first(&field.name),
                    field.name
                ),
                accesses: vec![
                    access(
                        "BatchGetItem",
                        "table",
                        format!(
                            "PK = SK = {}",
                            keys::unique_key(name, &field.name, "<value>")
                        ),
                        PER_LEVEL,
                    ),
                    node_read("its id"),
                ],
            });
        }
        for index in &type_def.indexes {
            // A composite primary key's index is read by the list given the key's first field.
            let query_field = match (&index.query_field, type_def.primary_index()) {
                (Some(query_field), _) => query_field.clone(),
                (None, Some(primary)) if primary.name == index.name => {
                    let Some(list) = &type_def.roots.list else {
                        continue;
                    };
                    list.clone()
                }
                (None, _) => continue,
            };
            plans.push(FieldPlan {
                field: format!("Query.{query_field}({})", index.field),
                accesses: vec![access(
                    "Query",
                    keys::gsi_name(index.slot),
                    format!(
                        "{} = {}, {} by {}",
                        keys::slot_partition_attribute(index.slot),
                        keys::index_partition(name, &index.name, &format!("<{}>", index.field)),
                        keys::slot_sort_attribute(index.slot),
                        index.sort_by()
                    ),
                    INDEX_PAGE,
                )],
            });
        }
        if let (Some(list), Some(list_name)) = (type_def.list, &type_def.roots.list) {
            let mut accesses = vec![access(
                "Query",
                keys::gsi_name(list.slot),
                format!(
                    "{} = {} … {}, {} by {}",
                    keys::slot_partition_attribute(list.slot),
                    keys::list_partition(name, 0),
                    keys::list_partition(name, list.shards - 1),
                    keys::slot_sort_attribute(list.slot),
                    type_def
                        .list_sort
                        .as_ref()
                        .map_or("id", |(f, _)| f.as_str())
                ),
                LIST_PAGE,
            )];
            // Amplify's connections have no totalCount.
            if !model.dialect.amplify_shape() {
                accesses.push(access(
                    "BatchGetItem",
                    "table",
                    format!(
                        "PK = SK = {} … {} (totalCount only)",
                        keys::list_count_key(name, 0),
                        keys::list_count_key(name, list.shards - 1)
                    ),
                    "with the page's Queries, in the same level",
                ));
            }
            plans.push(FieldPlan {
                field: format!("Query.{list_name}"),
                accesses,
            });
        }
    }
    plans.push(FieldPlan {
        field: "Query.node(id) / Query.nodes(ids)".to_owned(),
        accesses: vec![node_read("id")],
    });
    for type_def in &model.types {
        for field in &type_def.fields {
            let field_name = format!("{}.{}", type_def.name, field.name);
            let accesses = match resolvers.get(&type_def.name, &field.name) {
                Some(pipeline) => pipeline_accesses(pipeline),
                None => field_accesses(model, &field.kind),
            };
            if !accesses.is_empty() {
                plans.push(FieldPlan {
                    field: field_name,
                    accesses,
                });
            }
        }
    }
    // Fields of types without `@model` that functions or an `@http` call answer.
    for object_def in &model.objects {
        for field in &object_def.fields {
            let accesses = field_accesses(model, &field.kind);
            if !accesses.is_empty() {
                plans.push(FieldPlan {
                    field: format!("{}.{}", object_def.name, field.name),
                    accesses,
                });
            }
        }
    }
    for type_def in &model.types {
        plans.extend(mutation_plans(model, type_def));
    }
    for edge in &model.edges {
        plans.push(FieldPlan {
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
        });
        plans.push(FieldPlan {
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
        });
    }
    for own in &model.own_fields {
        let arguments: Vec<&str> = own
            .field
            .arguments
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        plans.push(FieldPlan {
            field: format!("{}.{}({})", own.root.name(), own.name, arguments.join(", ")),
            accesses: if own.functions.is_empty() && own.http.is_none() {
                vec![access(
                    "none",
                    "-",
                    "no resolver: answers MissingResolver",
                    NONE,
                )]
            } else {
                function_calls(&own.functions, own.http.as_ref())
            },
        });
    }
    for type_def in model.types.iter().filter(|t| !t.auth.is_empty()) {
        plans.push(FieldPlan {
            field: format!("{} @auth", type_def.name),
            accesses: rule_accesses(&type_def.auth, false),
        });
    }
    for type_def in &model.types {
        for field in type_def.fields.iter().filter(|f| !f.auth.is_empty()) {
            plans.push(FieldPlan {
                field: format!("{}.{} @auth", type_def.name, field.name),
                accesses: rule_accesses(&field.auth, true),
            });
        }
    }
    plans
}

/// The calls of a field's functions, in order.
/// The calls a field its functions or its `@http` call answer makes, in order.
fn function_calls(functions: &[String], http: Option<&crate::model::HttpCall>) -> Vec<Access> {
    let http = http.map(|call| {
        access(
            "http",
            format!("{} {}", call.method.name(), call.url),
            "params in the path, query as parameters, body as JSON",
            FUNCTION_CALL,
        )
    });
    functions
        .iter()
        .map(|function| {
            access(
                "function",
                function.clone(),
                "POST of the field's event",
                FUNCTION_CALL,
            )
        })
        .chain(http)
        .collect()
}

fn field_accesses(model: &Model, kind: &FieldKind) -> Vec<Access> {
    match kind {
        FieldKind::Scalar { .. }
        | FieldKind::ScalarList { .. }
        | FieldKind::Embedded { .. }
        | FieldKind::Custom(_) => Vec::new(),
        FieldKind::Function {
            functions, http, ..
        } => function_calls(functions, http.as_ref()),
        FieldKind::BelongsTo { foreign_key, .. } => {
            vec![node_read(&format!("parent.{foreign_key}"))]
        }
        FieldKind::HasMany(has_many) => vec![access(
            "Query",
            keys::gsi_name(has_many.slot),
            format!(
                "{} = {}, {} by {}",
                keys::slot_partition_attribute(has_many.slot),
                keys::slot_partition(&has_many.element, "<parent.id>"),
                keys::slot_sort_attribute(has_many.slot),
                has_many.sort_by.as_deref().unwrap_or("id")
            ),
            CONNECTION_PAGE,
        )],
        FieldKind::Outgoing { edge, .. } => vec![
            access(
                "Query",
                "table",
                format!("PK = NODE#<parent.id>, SK begins with {edge}#"),
                CONNECTION_PAGE,
            ),
            node_read("edge.to"),
        ],
        FieldKind::Incoming { edge, .. } => {
            let slot = model.edge_def(edge).map_or(0, |e| e.slot);
            let mut query = slot_query(slot, edge);
            query.batching = CONNECTION_PAGE;
            vec![query, node_read("edge.from")]
        }
        FieldKind::Targets { edge, .. } => vec![
            access(
                "none",
                "table",
                format!("the parent's edge set, entries {edge}#<to>#…"),
                NONE,
            ),
            node_read("to"),
        ],
    }
}

fn pipeline_accesses(pipeline: &Pipeline) -> Vec<Access> {
    let mut accesses = Vec::new();
    for step in &pipeline.steps {
        match step {
            Step::Incoming { edge, slot, .. } => accesses.push(slot_query(*slot, edge)),
            Step::Query { slot, element, .. } => accesses.push(slot_query(*slot, element)),
            Step::Load { .. } => accesses.push(node_read("id")),
            Step::Targets { edge, .. } => accesses.push(access(
                "none",
                "table",
                format!("edge sets, entries {edge}#<to>#…"),
                NONE,
            )),
            Step::FilterId(_) | Step::FilterField(..) | Step::Distinct => {}
        }
    }
    // A pipeline that ends with ids is loaded when the field answers nodes.
    let ends_with_ids = pipeline
        .steps
        .iter()
        .rev()
        .find(|s| !matches!(s, Step::FilterId(_) | Step::Distinct))
        .is_some_and(|s| matches!(s, Step::Incoming { .. } | Step::Targets { .. }));
    if ends_with_ids && matches!(pipeline.output, crate::resolvers::Output::Nodes { .. }) {
        accesses.push(node_read("id"));
    }
    accesses
}

/// The plans of the mutations generated for `type_def`, by the names it has, without those
/// `@model(mutations:)` leaves out.
fn mutation_plans(model: &Model, type_def: &TypeDef) -> Vec<FieldPlan> {
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

fn every_mutation_plan(model: &Model, type_def: &TypeDef) -> Vec<FieldPlan> {
    let name = &type_def.name;
    let plural = crate::model::plural(name);
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
    // What a nested input (`link:` of a @hasMany, `add:` of an @outgoing) reads first.
    let mut create = Vec::new();
    let nests = |kind: fn(&FieldKind) -> bool| type_def.fields.iter().any(|f| kind(&f.kind));
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
    if nests(|kind| matches!(kind, FieldKind::Outgoing { .. })) {
        create.push(access(
            "BatchGetItem",
            "table",
            "NODE#<to> of each nested edge's target",
            "one per mutation",
        ));
    }
    if nests(|kind| {
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
    create.push(access(
        "TransactWriteItems",
        "table",
        written.clone(),
        "one per mutation",
    ));
    vec![
        FieldPlan {
            field: format!("Mutation.create{name}"),
            accesses: create,
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
            accesses: delete
                .into_iter()
                .map(|mut step| {
                    step.batching = match step.operation {
                        "TransactWriteItems" => "one per batch (100 writes at most)",
                        "GetItem" => "one per member, in parallel",
                        _ => "one per edge type and member, in parallel",
                    };
                    step
                })
                .collect(),
        },
    ]
}

/// The plan as `tablegraph plan` prints it.
/// Who `rules` let do each operation, and where the engine holds them to it: no storage call
/// of their own, a condition or a filter in the calls above.
fn rule_accesses(rules: &[AuthRule], of_field: bool) -> Vec<Access> {
    Operation::ALL
        .iter()
        // A field is not deleted on its own.
        .filter(|operation| !of_field || **operation != Operation::Delete)
        .map(|&operation| {
            let who: Vec<String> = rules
                .iter()
                .filter(|rule| rule.covers(operation))
                .map(|rule| match &rule.allow {
                    _ if rule.provider == crate::model::Provider::Iam => {
                        "any caller signing with an --iam-credentials key".to_owned()
                    }
                    Allow::Owner { field, many, .. } if *many => {
                        format!("{field} contains <caller>")
                    }
                    Allow::Owner { field, .. } => format!("{field} = <caller>"),
                    Allow::Groups { groups, .. } => format!("<caller> in {}", groups.join(" or ")),
                    Allow::GroupsField { field, many, .. } if *many => {
                        format!("{field} contains one of <caller's groups>")
                    }
                    Allow::GroupsField { field, .. } => {
                        format!("{field} in <caller's groups>")
                    }
                    Allow::Private => "any signed-in caller".to_owned(),
                    Allow::Public => "any API-key caller".to_owned(),
                    Allow::Custom => "any caller the Lambda authorizer admits".to_owned(),
                })
                .collect();
            let held = match operation {
                Operation::Create => "checked on the new node before its transaction",
                Operation::Read if of_field => "checked on its node when the field is read",
                Operation::Read => {
                    "checked on each node read by id; in each page's FilterExpression; on each event"
                }
                Operation::Update | Operation::Delete => "in the transaction's condition",
            };
            access(
                "@auth",
                operation.name(),
                if who.is_empty() {
                    "nobody".to_owned()
                } else {
                    who.join(" OR ")
                },
                held,
            )
        })
        .collect()
}

pub fn render(plans: &[FieldPlan]) -> String {
    let mut out = String::new();
    for plan in plans {
        let _ = writeln!(out, "{}", plan.field);
        for access in &plan.accesses {
            let _ = writeln!(
                out,
                "  {:<19} {:<24} {}  [{}]{}",
                access.operation,
                access.target,
                access.key,
                access.batching,
                from_the_cache(access)
            );
        }
    }
    out
}

/// Whether the read cache (`serve --cache-bytes`) may answer an access: reads by key through
/// the request's loader, and the unfiltered pages of connections, lists and index queries.
/// Consistent reads, resolver files' Queries and writes always go to the store.
fn from_the_cache(access: &Access) -> &'static str {
    match (access.operation, access.batching) {
        ("BatchGetItem", _) => "  (read cache)",
        ("Query", PER_PARENT | CONNECTION_PAGE | INDEX_PAGE | LIST_PAGE) => {
            "  (read cache, unless filtered)"
        }
        _ => "",
    }
}
