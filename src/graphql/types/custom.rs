//! Fields served by the declarative resolvers of `resolvers/` (see [`crate::resolvers`]): the
//! engine runs the pipeline on the request's store handle and loader, so its reads batch with
//! every other resolver's; this file turns what it found into the field's value.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, ResolverContext, TypeRef,
};

use crate::auth::Caller;
use crate::engine::read::{Found, Node, PipelineInput};
use crate::engine::{self, EngineError};
use crate::graphql::context::{level, node_field_value, scope};
use crate::graphql::errors::graphql_error;
use crate::graphql::selection::selection;
use crate::model::{FieldDef, FieldKind};
use crate::resolvers::{Output, Pipeline};

/// The field of `field`'s owner that `pipeline` serves.
pub(in crate::graphql) fn field(field: &FieldDef, pipeline: Arc<Pipeline>) -> Field {
    let (ty, arguments) = match &field.kind {
        FieldKind::Custom(custom) => (
            type_ref(&custom.ty),
            custom
                .arguments
                .iter()
                .map(|a| InputValue::new(&a.name, type_ref(&a.ty)))
                .collect(),
        ),
        FieldKind::Targets { element, .. } => (TypeRef::named_nn_list_nn(element), Vec::new()),
        FieldKind::BelongsTo { target, .. } => (TypeRef::named(target), Vec::new()),
        _ => unreachable!("resolvers are only loaded for custom, @targets and @belongsTo fields"),
    };
    let description = format!("{} (resolver {})", pipeline.description, pipeline.file);
    let mut generated = Field::new(&field.name, ty, move |ctx| {
        let pipeline = pipeline.clone();
        FieldFuture::new(async move {
            let Some(parent) = ctx.parent_value.downcast_ref::<Node>() else {
                return Ok(None);
            };
            let scope = scope(&ctx).map_err(graphql_error)?;
            let arguments = arguments_of(&ctx);
            let input = PipelineInput {
                parent,
                arguments: &arguments,
                caller: ctx.data::<Caller>().ok(),
            };
            let found = engine::read::run_pipeline(&pipeline, scope, &input)
                .await
                .map_err(graphql_error)?;
            answer(&ctx, &pipeline.output, found)
                .await
                .map_err(graphql_error)
        })
    })
    .description(description);
    for argument in arguments {
        generated = generated.argument(argument);
    }
    generated
}

/// A declared type (`[User!]!`) as a dynamic-schema type.
/// The type written as `declared` (`[String!]!`).
pub(in crate::graphql) fn type_ref(declared: &str) -> TypeRef {
    if let Some(inner) = declared.strip_suffix('!') {
        return TypeRef::NonNull(Box::new(type_ref(inner)));
    }
    if let Some(inner) = declared.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        return TypeRef::List(Box::new(type_ref(inner)));
    }
    TypeRef::named(declared)
}

/// The arguments the client sent, as text.
fn arguments_of(ctx: &ResolverContext<'_>) -> HashMap<String, String> {
    ctx.args
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), text_of(value.as_value())?)))
        .collect()
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Enum(name) => Some(name.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// What the caller may know of `found`: when the rules (`@auth`) let them read only some
/// nodes, ids a pipeline did not load are loaded and checked, so that a count, a yes or an id
/// tells of nothing they may not read.
async fn readable(ctx: &ResolverContext<'_>, found: Found) -> Result<Found, EngineError> {
    let model = crate::graphql::context::model(ctx)?;
    let scope = scope(ctx)?;
    let all_readable = model
        .types
        .iter()
        .all(|t| scope.read_access(&[t.name.as_str()]) == crate::engine::Access::All);
    if all_readable {
        return Ok(found);
    }
    let types: Vec<String> = model.types.iter().map(|t| t.name.clone()).collect();
    Ok(Found::Nodes(found.into_nodes(scope, &types).await?))
}

async fn answer(
    ctx: &ResolverContext<'_>,
    output: &Output,
    found: Found,
) -> Result<Option<FieldValue<'static>>, EngineError> {
    let found = match output {
        Output::Exists | Output::Count | Output::Ids { .. } => readable(ctx, found).await?,
        Output::Nodes { .. } => found,
    };
    match output {
        Output::Exists => Ok(Some(FieldValue::value(!found.is_empty()))),
        Output::Count => Ok(Some(FieldValue::value(
            i64::try_from(found.len()).unwrap_or(i64::MAX),
        ))),
        Output::Ids { list } => {
            let ids = found.into_ids();
            if *list {
                Ok(Some(FieldValue::list(
                    ids.into_iter()
                        .map(|id| FieldValue::value(Value::String(id))),
                )))
            } else {
                Ok(ids
                    .into_iter()
                    .next()
                    .map(|id| FieldValue::value(Value::String(id))))
            }
        }
        Output::Nodes {
            list,
            allowed,
            is_abstract,
        } => {
            let nodes = found.into_nodes(scope(ctx)?, allowed).await?;
            let look_ahead = ctx.look_ahead();
            level(ctx)?
                .read_ahead(&nodes, &selection(&look_ahead))
                .await?;
            let mut values = nodes
                .into_iter()
                .map(|node| node_field_value(node, *is_abstract));
            if *list {
                Ok(Some(FieldValue::list(values)))
            } else {
                Ok(values.next())
            }
        }
    }
}

/// A field served with no resolver, as Amplify's transformer serves a field of a `@model` type
/// that no directive relates: nothing is stored for it, so it answers null (an error where it
/// is non-null, as AppSync's).
pub(in crate::graphql) fn unresolved(field: &FieldDef) -> Field {
    let FieldKind::Custom(custom) = &field.kind else {
        unreachable!("only custom fields are served unresolved");
    };
    Field::new(&field.name, type_ref(&custom.ty), |_| {
        FieldFuture::new(async { Ok::<Option<FieldValue<'static>>, async_graphql::Error>(None) })
    })
}

/// A field the model leaves to a resolver that was not loaded: answers an error rather than
/// nothing. Start-up refuses this; only a schema built without its resolvers meets it.
pub(in crate::graphql) fn missing(field: &FieldDef) -> Field {
    let FieldKind::Custom(custom) = &field.kind else {
        unreachable!("only custom fields can miss their resolver");
    };
    let mut generated = Field::new(&field.name, type_ref(&custom.ty), |_| {
        FieldFuture::new(async {
            Err::<Option<FieldValue<'static>>, _>(graphql_error(EngineError::Internal))
        })
    });
    for argument in &custom.arguments {
        generated = generated.argument(InputValue::new(&argument.name, type_ref(&argument.ty)));
    }
    generated
}
