//! The plans of fields: those of `@model` types (their relations, edges and functions, or the
//! steps of their resolver file), of types without `@model` that functions or an `@http` call
//! answer, and the fields of `Query` and `Mutation` the schema declares itself.

use crate::keys;
use crate::model::{FieldKind, IndexDef, Model, ObjectDef, OwnField, TypeDef};
use crate::resolvers::{Pipeline, Resolvers, Step};

use super::access::{
    Access, CONNECTION_PAGE, FUNCTION_CALL, FieldPlan, NONE, access, node_read, slot_query,
};

/// The fields of `type_def` that make storage calls or call functions.
pub(super) fn type_field_plans(
    model: &Model,
    resolvers: &Resolvers,
    type_def: &TypeDef,
) -> Vec<FieldPlan> {
    let mut plans = Vec::new();
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
    plans
}

/// The fields of a type without `@model` that functions or an `@http` call answer.
pub(super) fn object_field_plans(model: &Model, object_def: &ObjectDef) -> Vec<FieldPlan> {
    let mut plans = Vec::new();
    for field in &object_def.fields {
        let accesses = field_accesses(model, &field.kind);
        if !accesses.is_empty() {
            plans.push(FieldPlan {
                field: format!("{}.{}", object_def.name, field.name),
                accesses,
            });
        }
    }
    plans
}

/// A field the schema declares on `Query` or `Mutation` itself: its functions or `@http`
/// call, or nothing to answer with.
/// The plan of a field of the schema's own `Query` or `Mutation`; `published`: a declared
/// subscription follows its answers, each written for the change stream to carry.
pub(super) fn own_field_plan(own: &OwnField, published: bool) -> FieldPlan {
    let arguments: Vec<&str> = own
        .field
        .arguments
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    FieldPlan {
        field: format!("{}.{}({})", own.root.name(), own.name, arguments.join(", ")),
        accesses: if own.functions.is_empty() && own.http.is_none() {
            vec![access(
                "none",
                "-",
                "no resolver: answers MissingResolver",
                NONE,
            )]
        } else {
            let mut calls = function_calls(&own.functions, own.http.as_ref());
            if published {
                calls.push(access(
                    "TransactWriteItems",
                    "table",
                    format!(
                        "PK = SK = {} (the answer, for its subscribers)",
                        keys::published_key(&own.name)
                    ),
                    "one per answer",
                ));
            }
            calls
        },
    }
}

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

/// A `@hasMany` that reads its element's sorted `@index` under the parent's id.
fn sorted_index_read(element: &TypeDef, index: &IndexDef) -> Access {
    access(
        "Query",
        keys::gsi_name(index.slot),
        format!(
            "{} = {}, {} by {} (the @index {})",
            keys::slot_partition_attribute(index.slot),
            keys::index_partition(&element.name, &index.name, "<parent.id>"),
            keys::slot_sort_attribute(index.slot),
            index.sort_by(),
            index.name
        ),
        CONNECTION_PAGE,
    )
}

fn field_accesses(model: &Model, kind: &FieldKind) -> Vec<Access> {
    if let FieldKind::HasMany(has_many) = kind
        && let Some((element, index)) = has_many.sorted_index(model)
    {
        return vec![sorted_index_read(element, index)];
    }
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

/// The accesses of a resolver file's steps, in order.
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
