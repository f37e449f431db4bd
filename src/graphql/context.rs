//! What every resolver takes from its context: the request's [`RequestScope`], the model and
//! id arguments; and how engine nodes become field values.

use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{FieldFuture, FieldValue, ResolverContext, ValueAccessor};

use super::errors::graphql_error;
use super::null_items::missing_node;
use crate::engine::read::Node;
use crate::engine::{EngineError, RequestScope};
use crate::keys::{self, Cursor};
use crate::model::Model;

pub(super) fn scope<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<RequestScope>, EngineError> {
    ctx.data::<Arc<RequestScope>>().map_err(|_| {
        tracing::error!("a request ran without its RequestScope");
        EngineError::Internal
    })
}

pub(super) fn model<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<Model>, EngineError> {
    ctx.data::<Arc<Model>>().map_err(|_| EngineError::Internal)
}

/// An id argument, refused when it could not be a node's id.
pub(super) fn id_argument(ctx: &ResolverContext<'_>, name: &str) -> Result<String, EngineError> {
    let id = id_text(&ctx.args.try_get(name)?)?;
    keys::validate_id(&id).map_err(|e| EngineError::bad_input(format!("{name}: {e}")))?;
    Ok(id)
}

/// The id of the node of `type_def` that `input` names: its `id`, or, for a type keyed by a
/// field of its own (`@primaryKey`), that field's value as an id.
pub(super) fn node_id_of(
    type_def: &crate::model::TypeDef,
    input: &async_graphql::dynamic::ObjectAccessor<'_>,
) -> Result<String, EngineError> {
    let (name, value) = match &type_def.primary_key {
        Some((field, _)) => (field.as_str(), input.try_get(field)?),
        None => ("id", input.try_get("id")?),
    };
    key_text(type_def, name, &value)
}

/// The id of the node of `type_def` that the resolver's own arguments name (`get<Type>`).
pub(super) fn node_id_argument(
    ctx: &ResolverContext<'_>,
    type_def: &crate::model::TypeDef,
) -> Result<String, EngineError> {
    let name = type_def
        .primary_key
        .as_ref()
        .map_or("id", |(field, _)| field.as_str());
    key_text(type_def, name, &ctx.args.try_get(name)?)
}

fn key_text(
    type_def: &crate::model::TypeDef,
    name: &str,
    value: &ValueAccessor<'_>,
) -> Result<String, EngineError> {
    let id = match (&type_def.primary_key, value.as_value()) {
        (Some(_), async_graphql::Value::String(text)) => keys::primary_key_id(text),
        (Some(_), async_graphql::Value::Number(number)) => {
            keys::primary_key_id(&number.to_string())
        }
        (Some(_), _) => return Err(EngineError::bad_input(format!("{name}: a value is needed"))),
        (None, _) => id_text(value)?,
    };
    keys::validate_id(&id).map_err(|e| EngineError::bad_input(format!("{name}: {e}")))?;
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
