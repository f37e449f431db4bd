//! The Query root: a node by id per type, by each unique field, and `node`/`nodes`.

use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, InputValue, Object, ResolverContext, TypeRef};

use super::types::{node_list, scalar_type_name};
use super::{ApiError, id_argument, load_node, lower_first, node_field_value, scope, upper_first};
use crate::keys;
use crate::model::{FieldDef, Model, TypeDef};
use crate::store::AttrValue;

/// The most ids one `nodes(ids:)` may ask for: one BatchGetItem.
pub const MAX_NODES: usize = 100;

pub(super) fn root(model: &Arc<Model>) -> Object {
    let mut root = Object::new("Query");
    for type_def in &model.types {
        root = root.field(by_id(type_def));
        for field in type_def.unique_fields() {
            root = root.field(by_unique(type_def, field));
        }
    }
    let all_types: Arc<Vec<String>> =
        Arc::new(model.types.iter().map(|t| t.name.clone()).collect());
    let node_types = all_types.clone();
    root.field(
        Field::new("node", TypeRef::named("Node"), move |ctx| {
            let types = node_types.clone();
            FieldFuture::new(async move {
                let node = node(&ctx, &types).await.map_err(ApiError::into_graphql)?;
                Ok(node.map(|node| node_field_value(node, true)))
            })
        })
        .description("Any node by its id, or null.")
        .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID))),
    )
    .field(
        Field::new("nodes", TypeRef::named_list_nn("Node"), move |ctx| {
            let types = all_types.clone();
            FieldFuture::new(async move {
                let nodes = nodes(&ctx, &types).await.map_err(ApiError::into_graphql)?;
                Ok(Some(node_list(nodes)))
            })
        })
        .description(format!(
            "Nodes by id, in the order asked, null where there is none (at most {MAX_NODES})."
        ))
        .argument(InputValue::new(
            "ids",
            TypeRef::named_nn_list_nn(TypeRef::ID),
        )),
    )
}

fn by_id(type_def: &TypeDef) -> Field {
    let name = type_def.name.clone();
    Field::new(
        lower_first(&type_def.name),
        TypeRef::named(&type_def.name),
        move |ctx| {
            let name = name.clone();
            FieldFuture::new(async move {
                let node = node(&ctx, std::slice::from_ref(&name))
                    .await
                    .map_err(ApiError::into_graphql)?;
                Ok(node.map(|node| node_field_value(node, false)))
            })
        },
    )
    .description(format!("The {} with this id, or null.", type_def.name))
    .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
}

async fn node(
    ctx: &ResolverContext<'_>,
    types: &[String],
) -> Result<Option<super::NodeValue>, ApiError> {
    let id = id_argument(ctx, "id")?;
    let allowed: Vec<&str> = types.iter().map(String::as_str).collect();
    load_node(scope(ctx)?, &id, &allowed).await
}

async fn nodes(
    ctx: &ResolverContext<'_>,
    types: &[String],
) -> Result<Vec<Option<super::NodeValue>>, ApiError> {
    let ids = ctx.args.try_get("ids")?.list()?;
    if ids.len() > MAX_NODES {
        return Err(ApiError::bad_input(format!(
            "ids: at most {MAX_NODES} ids, not {}",
            ids.len()
        )));
    }
    let mut checked = Vec::with_capacity(ids.len());
    for id in ids.iter() {
        let id = id.string()?;
        keys::validate_id(id).map_err(|e| ApiError::bad_input(format!("ids: {e}")))?;
        checked.push(id.to_owned());
    }
    let scope = scope(ctx)?;
    let allowed: Vec<&str> = types.iter().map(String::as_str).collect();
    futures::future::try_join_all(checked.iter().map(|id| load_node(scope, id, &allowed))).await
}

/// `farmByName(name:)`: reads the unique-value item, then the node it names, both batched.
fn by_unique(type_def: &TypeDef, field: &FieldDef) -> Field {
    let type_name = type_def.name.clone();
    let field_name = field.name.clone();
    let scalar = field.scalar().expect("unique fields are scalar fields");
    Field::new(
        format!(
            "{}By{}",
            lower_first(&type_def.name),
            upper_first(&field.name)
        ),
        TypeRef::named(&type_def.name),
        move |ctx| {
            let type_name = type_name.clone();
            let field_name = field_name.clone();
            FieldFuture::new(async move {
                let node = by_unique_value(&ctx, &type_name, &field_name)
                    .await
                    .map_err(ApiError::into_graphql)?;
                Ok(node.map(|node| node_field_value(node, false)))
            })
        },
    )
    .description(format!(
        "The {} whose {} equals this value, ignoring case and surrounding spaces, or null.",
        type_def.name, field.name
    ))
    .argument(InputValue::new(
        &field.name,
        TypeRef::named_nn(scalar_type_name(scalar)),
    ))
}

async fn by_unique_value(
    ctx: &ResolverContext<'_>,
    type_name: &str,
    field: &str,
) -> Result<Option<super::NodeValue>, ApiError> {
    let value = ctx.args.try_get(field)?;
    let value = match value.as_value() {
        async_graphql::Value::Number(n) => n.to_string(),
        _ => value.string()?.to_owned(),
    };
    let key = keys::unique_key(type_name, field, &value);
    // A value that could never have been stored is simply not found.
    if keys::normalize_unique(&value).is_empty() || key.len() > keys::MAX_SORT_KEY_BYTES {
        return Ok(None);
    }
    let scope = scope(ctx)?;
    let unique = scope
        .loader
        .load(&key)
        .await
        .map_err(|e| ApiError::from_store(&e))?;
    let owner = unique.as_ref().and_then(|item| {
        let typename = item.get("__typename").and_then(AttrValue::as_str)?;
        (typename == keys::unique_typename(type_name, field))
            .then(|| item.get("id").and_then(AttrValue::as_str))
            .flatten()
    });
    match owner {
        Some(id) => load_node(scope, id, &[type_name]).await,
        None => Ok(None),
    }
}
