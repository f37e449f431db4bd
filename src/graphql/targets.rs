//! `@targets` fields: the nodes a node's edges of one type point to, read from its edge set and
//! loaded in one batch for every parent of the level.

use async_graphql::dynamic::{Field, FieldFuture, FieldValue, TypeRef};

use super::context::{self, node_field_value, possible_types, scope};
use super::errors::graphql_error;
use super::prefetch;
use crate::engine;
use crate::engine::read::Node;
use crate::model::{FieldDef, Model};

pub(super) fn targets_field(
    field: &FieldDef,
    edge: &str,
    element: &str,
    role: Option<&str>,
    model: &Model,
) -> Field {
    let edge_def = model
        .edge_def(edge)
        .expect("the model checked that @targets names an edge type");
    let role_sort = engine::derive::role_sort_value(model, edge_def, role);
    let allowed = possible_types(model, element);
    let is_union = model.union_def(element).is_some();
    // Every target of the edge is of this one type, checked when the edge was added: a query
    // that wants only the targets' ids needs no read at all.
    let identity_known = !is_union && model.possible_types(&edge_def.to) == [element];
    let element_name = element.to_owned();
    let edge = edge.to_owned();
    Field::new(
        &field.name,
        TypeRef::named_nn_list_nn(element),
        move |ctx| {
            let edge = edge.clone();
            let role_sort = role_sort.clone();
            let allowed = allowed.clone();
            let element = element_name.clone();
            FieldFuture::new(async move {
                let Some(parent) = ctx.parent_value.downcast_ref::<Node>() else {
                    return Ok(None);
                };
                let ids: Vec<&str> =
                    engine::derive::targets(&parent.item, &edge, role_sort.as_deref()).collect();
                let scope = scope(&ctx).map_err(graphql_error)?;
                // Targets the caller may not read are left out, so each is read.
                let readable = scope.read_access(&[element.as_str()]) == engine::Access::All;
                if identity_known && readable && prefetch::selects_only_identity(&ctx.look_ahead())
                {
                    return Ok(Some(FieldValue::list(
                        ids.into_iter()
                            .map(|id| FieldValue::owned_any(Node::identity(&element, id))),
                    )));
                }
                let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                let nodes = engine::read::load_nodes(scope, &ids, &allowed)
                    .await
                    .map_err(graphql_error)?;
                let model = context::model(&ctx).map_err(graphql_error)?;
                let found: Vec<&Node> = nodes.iter().flatten().collect();
                prefetch::relations(scope, model, &found, &ctx.look_ahead())
                    .await
                    .map_err(graphql_error)?;
                Ok(Some(FieldValue::list(
                    nodes
                        .into_iter()
                        .flatten()
                        .map(|node| node_field_value(node, is_union)),
                )))
            })
        },
    )
}
