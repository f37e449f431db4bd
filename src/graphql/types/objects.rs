//! The object type of each `@model` type: its stored fields, `@belongsTo` nodes, connections,
//! `@targets` lists, fields served by resolver files, and `createdAt`/`updatedAt`/`version`.

use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, Object, TypeRef};

use super::connection;
use super::custom;
use super::embedded;
use super::fields::{stored_field, stored_list_field};
use super::own_fields;
use super::targets;
use crate::engine;
use crate::engine::AttrValue;
use crate::engine::read::Node;
use crate::graphql::context::{self, node_field_value, possible_types, scope};
use crate::graphql::errors::graphql_error;
use crate::graphql::selection::selection;
use crate::graphql::values::scalars::{list_type_ref, scalar_type_ref};
use crate::graphql::values::{list_to_graphql, to_graphql};
use crate::model::{FieldDef, FieldKind, Model, ScalarType, TypeDef};
use crate::resolvers::Resolvers;

pub(in crate::graphql) fn object(
    type_def: &TypeDef,
    model: &Arc<Model>,
    resolvers: &Resolvers,
) -> Object {
    let mut object = Object::new(&type_def.name)
        .implement("Node")
        .field(stored_field("id", ScalarType::Id, true));
    for interface in &type_def.implements {
        object = object.implement(interface);
    }
    if let Some(description) = &type_def.description {
        object = object.description(description);
    }
    for field in &type_def.fields {
        let pipeline = resolvers.get(&type_def.name, &field.name);
        let mut generated = match &field.kind {
            _ if pipeline.is_some() => {
                custom::field(field, pipeline.cloned().expect("checked just above"))
            }
            FieldKind::Custom(_) => custom::missing(field),
            FieldKind::Function { .. } => own_fields::type_field(type_def, field, model),
            FieldKind::Scalar {
                scalar, required, ..
            } => stored_field(&field.name, scalar.clone(), *required),
            FieldKind::ScalarList {
                scalar,
                required,
                elements_required,
            } => stored_list_field(&field.name, scalar.clone(), *required, *elements_required),
            FieldKind::Embedded {
                object,
                required,
                list,
            } => embedded::node_field(&field.name, object, *required, *list),
            FieldKind::BelongsTo {
                target,
                foreign_key,
                ..
            } => belongs_to_field(field, target, foreign_key, model),
            FieldKind::HasMany(_) | FieldKind::Outgoing { .. } | FieldKind::Incoming { .. } => {
                connection::field(type_def, field, model)
            }
            FieldKind::Targets {
                edge,
                element,
                role,
            } => targets::targets_field(field, edge, element, role.as_deref(), model),
        };
        if !field.auth.is_empty() && pipeline.is_none() {
            generated = ruled_field(&type_def.name, field);
        }
        if let Some(description) = &field.description {
            generated = generated.description(description);
        }
        object = object.field(generated);
    }
    if let Some(created) = &type_def.timestamps.created {
        object = object.field(
            stored_field(created, ScalarType::AwsDateTime, true)
                .description("When the node was created."),
        );
    }
    if let Some(updated) = &type_def.timestamps.updated {
        object = object.field(
            stored_field(updated, ScalarType::AwsDateTime, true)
                .description("When the node was last changed."),
        );
    }
    object
        .field(
            stored_field("version", ScalarType::Int, true)
                .description("Starts at 1 and grows with every update; pass it as `expectedVersion` to update only what you read."),
        )
}

/// `@belongsTo`: the node whose id the parent stores in `foreign_key`. Nullable in the API even
/// when declared non-null, because the node it points to may since have been deleted.
fn belongs_to_field(field: &FieldDef, target: &str, foreign_key: &str, model: &Model) -> Field {
    let allowed = possible_types(model, target);
    let foreign_key = foreign_key.to_owned();
    let is_union = model.union_def(target).is_some();
    Field::new(&field.name, TypeRef::named(target), move |ctx| {
        let allowed = allowed.clone();
        let foreign_key = foreign_key.clone();
        FieldFuture::new(async move {
            let id = ctx
                .parent_value
                .downcast_ref::<Node>()
                .and_then(|node| node.item.get(&foreign_key))
                .and_then(AttrValue::as_str)
                .map(str::to_owned);
            let Some(id) = id else { return Ok(None) };
            let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
            let look_ahead = ctx.look_ahead();
            let node = context::level(&ctx)
                .map_err(graphql_error)?
                .node(&id, &allowed, false, &selection(&look_ahead))
                .await
                .map_err(graphql_error)?;
            Ok(node.map(|node| node_field_value(node, is_union)))
        })
    })
}

/// A stored field with `@auth` rules of its own: read only by callers they allow; `null` with
/// an `Unauthorized` error for others.
fn ruled_field(type_name: &str, field: &FieldDef) -> Field {
    /// How the stored value is answered.
    #[derive(Clone)]
    enum Stored {
        Scalar(ScalarType),
        List(ScalarType),
        Embedded,
    }
    let (ty, stored) = match &field.kind {
        FieldKind::Scalar {
            scalar, required, ..
        } => (
            scalar_type_ref(scalar, *required),
            Stored::Scalar(scalar.clone()),
        ),
        FieldKind::ScalarList {
            scalar,
            required,
            elements_required,
        } => (
            list_type_ref(scalar, *required, *elements_required),
            Stored::List(scalar.clone()),
        ),
        FieldKind::Embedded {
            object,
            required,
            list,
        } => (
            embedded::output_type_ref(object, *required, *list),
            Stored::Embedded,
        ),
        _ => unreachable!("the model allows field rules on stored fields only"),
    };
    let (type_name, name) = (type_name.to_owned(), field.name.clone());
    Field::new(&field.name, ty, move |ctx| {
        let (type_name, name, stored) = (type_name.clone(), name.clone(), stored.clone());
        FieldFuture::new(async move {
            let Some(node) = ctx.parent_value.downcast_ref::<Node>() else {
                return Ok(None);
            };
            let scope = scope(&ctx).map_err(graphql_error)?;
            if !scope.may_read_field(&type_name, &name, &node.item) {
                return Err(graphql_error(engine::EngineError::Unauthorized(format!(
                    "Not Authorized to access {name} on type {type_name}"
                ))));
            }
            let value = node.item.get(&name);
            Ok(match &stored {
                Stored::Scalar(scalar) => {
                    to_graphql(value, scalar).map(async_graphql::dynamic::FieldValue::value)
                }
                Stored::List(scalar) => {
                    list_to_graphql(value, scalar).map(async_graphql::dynamic::FieldValue::value)
                }
                Stored::Embedded => embedded::embedded_value(value.cloned()),
            })
        })
    })
}
