//! The Query root: a node by id per type, by each unique field, and `node`/`nodes`.

use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, InputValue, Object, ResolverContext, TypeRef};

use super::connection::{self, ConnectionSpec};
use super::types::{node_list, scalar_type_name};
use super::{
    ApiError, NodeValue, id_argument, load_node, load_nodes, lower_first, model, node_field_value,
    prefetch, scope, upper_first,
};
use crate::keys;
use crate::model::{FieldDef, FieldKind, Model, TypeDef};
use crate::store::{AttrValue, Item};

/// The most ids one `nodes(ids:)` may ask for: one BatchGetItem.
pub const MAX_NODES: usize = 100;

pub(super) fn root(model: &Arc<Model>) -> Object {
    let mut root = Object::new("Query");
    for type_def in &model.types {
        root = root.field(by_id(type_def, model));
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

fn by_id(type_def: &TypeDef, model: &Model) -> Field {
    let name = type_def.name.clone();
    let edge_connections: Arc<Vec<Arc<ConnectionSpec>>> = Arc::new(
        type_def
            .fields
            .iter()
            .filter(|f| {
                matches!(
                    f.kind,
                    FieldKind::Outgoing { .. } | FieldKind::Incoming { .. }
                )
            })
            .map(|f| connection::spec(type_def, f, model).0)
            .collect(),
    );
    Field::new(
        lower_first(&type_def.name),
        TypeRef::named(&type_def.name),
        move |ctx| {
            let name = name.clone();
            let edge_connections = edge_connections.clone();
            FieldFuture::new(async move {
                let id = id_argument(&ctx, "id").map_err(ApiError::into_graphql)?;
                if let Some(node) = read_ahead_root(&ctx, &name, &id, &edge_connections)
                    .await
                    .map_err(ApiError::into_graphql)?
                {
                    return Ok(Some(node_field_value(node, false)));
                }
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

async fn node(ctx: &ResolverContext<'_>, types: &[String]) -> Result<Option<NodeValue>, ApiError> {
    let id = id_argument(ctx, "id")?;
    let allowed: Vec<&str> = types.iter().map(String::as_str).collect();
    let scope = scope(ctx)?;
    let node = load_node(scope, &id, &allowed).await?;
    if let Some(node) = &node {
        prefetch::relations(scope, model(ctx)?, &[node], &ctx.look_ahead()).await?;
    }
    Ok(node)
}

/// Serves `team(id:) { goals {…} }` without reading the team. When the query selects nothing of
/// the node but its id and edge connections, the first of those connections' pages is read
/// first (the field will use it); an edge there proves the node exists with the right type,
/// so the node itself need not be read. Without such an edge, the caller reads the node.
async fn read_ahead_root(
    ctx: &ResolverContext<'_>,
    type_name: &str,
    id: &str,
    connections: &[Arc<ConnectionSpec>],
) -> Result<Option<NodeValue>, ApiError> {
    let look_ahead = ctx.look_ahead();
    let fields = look_ahead.selection_fields();
    let Some(root) = fields.first() else {
        return Ok(None);
    };
    let mut first = None;
    for child in root.selection_set() {
        match child.name() {
            "id" | "__typename" => {}
            name => match connections.iter().find(|c| c.field == name) {
                Some(spec) => {
                    first.get_or_insert((spec.clone(), child));
                }
                None => return Ok(None),
            },
        }
    }
    let Some((spec, child)) = first else {
        return Ok(None);
    };
    let arguments = child
        .arguments()
        .map_err(|e| ApiError::bad_input(e.message))?;
    let items = connection::read_ahead(scope(ctx)?, model(ctx)?, &spec, id, &arguments).await?;
    if !items
        .iter()
        .any(|item| spec.proves_parent_type(item, type_name))
    {
        return Ok(None);
    }
    Ok(Some(NodeValue {
        typename: type_name.to_owned(),
        // Only what the selection asks for: the id (the connections use it too).
        item: Arc::new(Item::from([
            ("id".to_owned(), AttrValue::S(id.to_owned())),
            ("__typename".to_owned(), AttrValue::S(type_name.to_owned())),
        ])),
    }))
}

async fn nodes(
    ctx: &ResolverContext<'_>,
    types: &[String],
) -> Result<Vec<Option<NodeValue>>, ApiError> {
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
    let nodes = load_nodes(scope, &checked, &allowed).await?;
    let found: Vec<&NodeValue> = nodes.iter().flatten().collect();
    prefetch::relations(scope, model(ctx)?, &found, &ctx.look_ahead()).await?;
    Ok(nodes)
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
) -> Result<Option<NodeValue>, ApiError> {
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
        Some(id) => {
            let node = load_node(scope, id, &[type_name]).await?;
            if let Some(node) = &node {
                prefetch::relations(scope, model(ctx)?, &[node], &ctx.look_ahead()).await?;
            }
            Ok(node)
        }
        None => Ok(None),
    }
}
