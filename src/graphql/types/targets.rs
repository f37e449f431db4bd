//! `@targets` fields: the nodes a node's edges of one type point to, read by the engine from
//! its edge set in one batch for every parent of the level.

use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, FieldValue, TypeRef};

use crate::engine::read::{Node, Targets};
use crate::graphql::context::{level, node_field_value};
use crate::graphql::errors::graphql_error;
use crate::graphql::selection::selection;
use crate::model::{FieldDef, Model};

pub(in crate::graphql) fn targets_field(
    field: &FieldDef,
    edge: &str,
    element: &str,
    role: Option<&str>,
    model: &Model,
) -> Field {
    let targets = Arc::new(Targets::of(model, edge, element, role));
    let is_union = model.union_def(element).is_some();
    Field::new(
        &field.name,
        TypeRef::named_nn_list_nn(element),
        move |ctx| {
            let targets = targets.clone();
            FieldFuture::new(async move {
                let Some(parent) = ctx.parent_value.downcast_ref::<Node>() else {
                    return Ok(None);
                };
                let look_ahead = ctx.look_ahead();
                let nodes = level(&ctx)
                    .map_err(graphql_error)?
                    .targets(parent, &targets, &selection(&look_ahead))
                    .await
                    .map_err(graphql_error)?;
                Ok(Some(FieldValue::list(
                    nodes
                        .into_iter()
                        .map(|node| node_field_value(node, is_union)),
                )))
            })
        },
    )
}
