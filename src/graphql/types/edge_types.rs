//! The `@edge` object types (`GoalMembership { from to role since createdAt updatedAt }`), as
//! `add<Edge>` answers them.

use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, Object, TypeRef};

use super::fields::attribute_field;
use crate::engine::read::Selection;
use crate::engine::{AttrValue, Item};
use crate::graphql::context::{level, node_field_value, possible_types};
use crate::graphql::errors::graphql_error;
use crate::model::{EdgeTypeDef, FieldKind, Model, ScalarType};

/// An edge item as resolvers pass it to the `@edge` object type.
pub(in crate::graphql) struct EdgeItem(pub Arc<Item>);

/// The `@edge` object type of `edge_def`.
pub(in crate::graphql) fn edge_object(edge_def: &EdgeTypeDef, model: &Model) -> Object {
    let endpoint = |name: &str, ty: &str| {
        let attribute = name.to_owned();
        let allowed = possible_types(model, ty);
        let is_union = model.union_def(ty).is_some();
        Field::new(name, TypeRef::named(ty), move |ctx| {
            let attribute = attribute.clone();
            let allowed = allowed.clone();
            FieldFuture::new(async move {
                let Some(id) = ctx
                    .parent_value
                    .downcast_ref::<EdgeItem>()
                    .and_then(|edge| edge.0.get(&attribute))
                    .and_then(AttrValue::as_str)
                    .map(str::to_owned)
                else {
                    return Ok(None);
                };
                let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                // An endpoint is read alone: nothing of its relations is read ahead.
                let node = level(&ctx)
                    .map_err(graphql_error)?
                    .node(&id, &allowed, false, &Selection::default())
                    .await
                    .map_err(graphql_error)?;
                Ok(node.map(|node| node_field_value(node, is_union)))
            })
        })
    };
    let mut object = Object::new(&edge_def.name)
        .field(endpoint("from", &edge_def.from))
        .field(endpoint("to", &edge_def.to));
    if let Some(description) = &edge_def.description {
        object = object.description(description);
    }
    for field in &edge_def.fields {
        if let FieldKind::Scalar {
            scalar, required, ..
        } = &field.kind
        {
            object = object.field(edge_attribute(&field.name, scalar.clone(), *required));
        }
    }
    object
        .field(edge_attribute("createdAt", ScalarType::AwsDateTime, true))
        .field(edge_attribute("updatedAt", ScalarType::AwsDateTime, true))
}

fn edge_attribute(name: &str, scalar: ScalarType, required: bool) -> Field {
    attribute_field::<EdgeItem>(name, scalar, required, |edge| Some(&edge.0))
}
