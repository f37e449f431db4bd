//! What every resolver takes from its context: the request's [`RequestScope`], the model and
//! id arguments; and how engine nodes become field values.

use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{FieldFuture, FieldValue, ResolverContext, ValueAccessor};

use super::errors::graphql_error;
use super::null_items::missing_node;
use crate::engine::read::{Level, Node};
use crate::engine::{Cursor, ids};
use crate::engine::{EngineError, RequestScope};
use crate::model::Model;

pub(super) fn scope<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<RequestScope>, EngineError> {
    ctx.data::<Arc<RequestScope>>().map_err(|_| {
        tracing::error!("a request ran without its RequestScope");
        EngineError::Internal
    })
}

/// A field with rules of its own (`@auth` on the field): only a caller the rules let read it
/// on the parent node gets its value.
#[derive(Clone)]
pub(super) struct FieldGuard {
    type_name: String,
    field: String,
}

impl FieldGuard {
    /// The guard of `field` of `type_name`; none when the field has no rules of its own.
    pub(super) fn of(type_name: &str, field: &crate::model::FieldDef) -> Option<FieldGuard> {
        (!field.auth.is_empty()).then(|| FieldGuard {
            type_name: type_name.to_owned(),
            field: field.name.clone(),
        })
    }

    /// Refuses a caller the field's rules do not let read it on the parent node, with
    /// AppSync's message.
    pub(super) fn check(&self, ctx: &ResolverContext<'_>) -> Result<(), EngineError> {
        let Some(node) = ctx.parent_value.downcast_ref::<Node>() else {
            return Ok(());
        };
        if scope(ctx)?.may_read_field(&self.type_name, &self.field, &node.item) {
            return Ok(());
        }
        Err(EngineError::Unauthorized(format!(
            "Not Authorized to access {} on type {}",
            self.field, self.type_name
        )))
    }
}

/// The reads of the request's levels (see [`Level`]).
pub(super) fn level<'a>(ctx: &ResolverContext<'a>) -> Result<Level<'a>, EngineError> {
    Ok(Level::new(scope(ctx)?, model(ctx)?))
}

pub(super) fn model<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<Model>, EngineError> {
    ctx.data::<Arc<Model>>().map_err(|_| EngineError::Internal)
}

/// An id argument, refused when it could not be a node's id.
pub(super) fn id_argument(ctx: &ResolverContext<'_>, name: &str) -> Result<String, EngineError> {
    let id = id_text(&ctx.args.try_get(name)?)?;
    ids::check_id(name, &id)?;
    Ok(id)
}

/// The id of the node of `type_def` that `input` names: its `id`, or, for a type keyed by
/// fields of its own (`@primaryKey`), their values as an id.
pub(super) fn node_id_of(
    type_def: &crate::model::TypeDef,
    input: &async_graphql::dynamic::ObjectAccessor<'_>,
) -> Result<String, EngineError> {
    if type_def.primary_key.is_none() {
        return key_text("id", &input.try_get("id")?);
    }
    let mut values = Vec::new();
    for (name, scalar) in type_def.key_fields() {
        values.push(key_value(name, scalar, &input.try_get(name)?)?);
    }
    ids::key_fields_id(type_def, &values)
}

/// The id of the node of `type_def` that the resolver's own arguments name (`get<Type>`).
pub(super) fn node_id_argument(
    ctx: &ResolverContext<'_>,
    type_def: &crate::model::TypeDef,
) -> Result<String, EngineError> {
    if type_def.primary_key.is_none() {
        return key_text("id", &ctx.args.try_get("id")?);
    }
    let mut values = Vec::new();
    for (name, scalar) in type_def.key_fields() {
        values.push(key_value(name, scalar, &ctx.args.try_get(name)?)?);
    }
    ids::key_fields_id(type_def, &values)
}

/// The text of a key field's value as it is stored (`2026-03-01T10:00:00Z` as
/// `2026-03-01T10:00:00.000Z`), so that the id a value makes is the one its stored form makes.
fn key_value(
    name: &str,
    scalar: &crate::model::ScalarType,
    value: &ValueAccessor<'_>,
) -> Result<String, EngineError> {
    match super::values::from_input(value.as_value(), scalar, name)? {
        Some(crate::engine::AttrValue::S(text) | crate::engine::AttrValue::N(text)) => Ok(text),
        _ => Err(EngineError::bad_input(format!("{name}: a value is needed"))),
    }
}

fn key_text(name: &str, value: &ValueAccessor<'_>) -> Result<String, EngineError> {
    let id = id_text(value)?;
    ids::check_id(name, &id)?;
    Ok(id)
}

/// The text of a value given for an `ID`: a string, or an integer, which the GraphQL spec
/// coerces to its decimal string ("ID" input coercion) wherever a variable's JSON gives one.
pub(super) fn id_text(value: &ValueAccessor<'_>) -> Result<String, EngineError> {
    match value.as_value() {
        async_graphql::Value::String(text) => Ok(text.clone()),
        async_graphql::Value::Number(number) if number.is_i64() || number.is_u64() => {
            Ok(number.to_string())
        }
        _ => Err(EngineError::bad_input("an ID is a string or an integer")),
    }
}

/// The node types a field of type `name` (an object type, a union, `Node`) may return.
pub(super) fn possible_types(model: &Model, name: &str) -> Arc<Vec<String>> {
    Arc::new(
        model
            .possible_types(name)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    )
}

/// The field value of a node. A field whose type is abstract (`Node`, a union) needs the
/// concrete type named; one of an object type must not have it.
pub(super) fn node_field_value(node: Node, abstract_type: bool) -> FieldValue<'static> {
    if abstract_type {
        let typename = node.typename.clone();
        FieldValue::owned_any(node).with_type(typename)
    } else {
        FieldValue::owned_any(node)
    }
}

/// The field value for a list of nodes, nulls kept in place.
pub(super) fn node_list(nodes: Vec<Option<Node>>) -> FieldValue<'static> {
    FieldValue::list(
        nodes
            .into_iter()
            .map(|node| node.map_or_else(missing_node, |node| node_field_value(node, true))),
    )
}

/// A cursor as its reader sees it: signed with the request's keys. Pages hold their cursors
/// unsigned, and only those a query selects are signed.
pub(super) fn cursor_value<'a>(
    ctx: &ResolverContext<'a>,
    cursor: Option<&Cursor>,
) -> FieldFuture<'a> {
    let Some(cursor) = cursor else {
        return FieldFuture::from_value(None);
    };
    match scope(ctx) {
        Ok(scope) => FieldFuture::from_value(Some(Value::from(cursor.encode(&scope.cursors)))),
        Err(error) => {
            let error = graphql_error(error);
            FieldFuture::new(async move { Err::<Option<Value>, _>(error) })
        }
    }
}
