//! `tablegraph plan`: for every field of the effective schema, the storage access it makes —
//! operation, table or index, key template, and how it batches — read before anything runs.
//!
//! Every access here is a GetItem, a BatchGetItem through the request's loader, a Query of one
//! partition, a TransactWriteItems, or a call of a function (`@function`) the field makes.
//! Nothing plans a Scan, and a Query is made once per parent, never once per item of a list
//! (resolver files are refused at start-up otherwise).
//!
//! [`plan`] lists the parts in order: the root queries (`queries`), the fields (`fields`), the
//! mutations (`mutations`) and the `@auth` rules (`auth`), all in the vocabulary of `access`.

mod access;
mod auth;
mod fields;
mod mutations;
mod queries;

use std::fmt::Write as _;

use crate::model::Model;
use crate::resolvers::Resolvers;

pub use access::{Access, FieldPlan};
use access::{CONNECTION_PAGE, INDEX_PAGE, LIST_PAGE, PER_PARENT};

/// The plan of every field of the schema the model and resolvers make, in the order
/// `tablegraph plan` prints them: root queries, fields, mutations, then `@auth` rules.
pub fn plan(model: &Model, resolvers: &Resolvers) -> Vec<FieldPlan> {
    let mut plans = Vec::new();
    for type_def in &model.types {
        plans.extend(queries::query_plans(model, type_def));
    }
    plans.push(queries::node_plan());
    for type_def in &model.types {
        plans.extend(fields::type_field_plans(model, resolvers, type_def));
    }
    for object_def in &model.objects {
        plans.extend(fields::object_field_plans(model, object_def));
    }
    for type_def in &model.types {
        plans.extend(mutations::mutation_plans(model, type_def));
    }
    for edge in &model.edges {
        plans.extend(mutations::edge_mutation_plans(edge));
    }
    for own in &model.own_fields {
        plans.push(fields::own_field_plan(own, model.publishes(&own.name)));
    }
    for type_def in &model.types {
        plans.extend(auth::type_auth_plan(type_def));
    }
    for type_def in &model.types {
        plans.extend(auth::field_auth_plans(type_def));
    }
    plans
}

/// The plan as `tablegraph plan` prints it.
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
