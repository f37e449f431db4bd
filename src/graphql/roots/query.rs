//! The Query root: a node by id per type, by each unique field, and `node`/`nodes`.

use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, InputValue, Object, ResolverContext, TypeRef};
use async_graphql::{Lookahead, PathSegment};

use crate::engine::read::{AskedPage, Connection, Node, Selection};
use crate::engine::{self, EngineError};
use crate::graphql::context::{
    id_argument, id_text, level, node_field_value, node_id_argument, node_list,
};
use crate::graphql::errors::graphql_error;
use crate::graphql::selection::selection;
use crate::graphql::types::connection::page_request;
use crate::model::{FieldDef, Model, TypeDef, lower_first, upper_first};

/// The most ids one `nodes(ids:)` may ask for: one BatchGetItem.
pub const MAX_NODES: usize = 100;

pub(in crate::graphql) fn root(model: &Arc<Model>) -> Object {
    let mut root = Object::new("Query");
    let shape = model.dialect.shape;
    for type_def in &model.types {
        if let Some(get) = &type_def.roots.get {
            root = root.field(by_id(type_def, model, get));
        }
        for field in type_def.unique_fields() {
            root = root.field(by_unique(type_def, field));
        }
        if let (Some(_), Some(list)) = (type_def.list, &type_def.roots.list) {
            let sorted = model.dialect.additions() || type_def.primary_key.is_some();
            root = root.field(crate::graphql::types::connection::list_field(
                type_def, list, shape, sorted,
            ));
        }
        if let Some(query) = &type_def.search {
            root = root.field(crate::graphql::types::search::search_field(
                type_def, query, model,
            ));
        }
        if let (Some(_), Some(_)) = (type_def.list, &type_def.conflict) {
            root = root.field(crate::graphql::types::sync::sync_field(type_def));
        }
        for index in &type_def.indexes {
            if let Some(query_field) = &index.query_field {
                root = root.field(crate::graphql::types::connection::index_field(
                    type_def,
                    index,
                    query_field,
                    shape,
                ));
            }
        }
    }
    if !model.dialect.additions() {
        return root;
    }
    let all_types: Arc<Vec<String>> =
        Arc::new(model.types.iter().map(|t| t.name.clone()).collect());
    let node_types = all_types.clone();
    root.field(
        Field::new("node", TypeRef::named("Node"), move |ctx| {
            let types = node_types.clone();
            FieldFuture::new(async move {
                let node = node(&ctx, &types).await.map_err(graphql_error)?;
                Ok(node.map(|node| node_field_value(node, true)))
            })
        })
        .description("Any node by its id, or null.")
        .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID))),
    )
    .field(
        Field::new("nodes", TypeRef::named_list("Node"), move |ctx| {
            let types = all_types.clone();
            FieldFuture::new(async move {
                let nodes = nodes(&ctx, &types).await.map_err(graphql_error)?;
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

fn by_id(type_def: &TypeDef, model: &Model, field_name: &str) -> Field {
    let edge_connections: Arc<Vec<Connection>> = Arc::new(
        type_def
            .fields
            .iter()
            .filter_map(|f| Connection::of(type_def, f, model))
            .filter(Connection::is_edge)
            .collect(),
    );
    let type_def_shared = Arc::new(type_def.clone());
    let keyed: Vec<(String, crate::model::ScalarType)> = type_def.key_fields().cloned().collect();
    let missing_is_null = model.dialect.amplify_shape();
    let field = Field::new(field_name, TypeRef::named(&type_def.name), move |ctx| {
        let edge_connections = edge_connections.clone();
        let type_def = type_def_shared.clone();
        FieldFuture::new(async move {
            let node = node_by_id(&ctx, (&type_def, &edge_connections), missing_is_null)
                .await
                .map_err(graphql_error)?;
            Ok(node.map(|node| node_field_value(node, false)))
        })
    })
    .description(format!("The {} with this id, or null.", type_def.name));
    match keyed.is_empty() {
        false => {
            let names: Vec<&str> = keyed.iter().map(|(key, _)| key.as_str()).collect();
            let field = field.description(format!(
                "The {} whose {} {} these values, or null.",
                type_def.name,
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" }
            ));
            keyed.iter().fold(field, |field, (key, scalar)| {
                field.argument(InputValue::new(key, TypeRef::named_nn(scalar.name())))
            })
        }
        true => field.argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID))),
    }
}

async fn node(ctx: &ResolverContext<'_>, types: &[String]) -> Result<Option<Node>, EngineError> {
    let id = id_argument(ctx, "id")?;
    let allowed: Vec<&str> = types.iter().map(String::as_str).collect();
    let look_ahead = ctx.look_ahead();
    level(ctx)?
        .node(&id, &allowed, false, &selection(&look_ahead))
        .await
}

/// The node of `type_def` that the field's arguments name, with the page of one of its
/// `connections` read first when the query asks for nothing else of it (see
/// [`Level::node_with_page`](crate::engine::read::Level::node_with_page)); with
/// `missing_is_null` (Amplify's `get<Type>`, as AppSync answers it) a node that is not there
/// is `null` whoever asks.
async fn node_by_id(
    ctx: &ResolverContext<'_>,
    (type_def, connections): (&TypeDef, &[Connection]),
    missing_is_null: bool,
) -> Result<Option<Node>, EngineError> {
    let id = node_id_argument(ctx, type_def)?;
    let look_ahead = ctx.look_ahead();
    level(ctx)?
        .node_with_page(
            (&type_def.name, &id),
            || asked_page(&look_ahead, connections),
            missing_is_null,
            &selection(&look_ahead),
        )
        .await
}

/// The page `team(id:) { goals {…} }` asks of the first of the node's edge `connections`, when
/// the query selects nothing of the node but its id and edge connections; `None` otherwise, or
/// when that page is filtered (it reads in rounds that the field itself runs).
fn asked_page<'a>(
    look_ahead: &'a Lookahead<'_>,
    connections: &'a [Connection],
) -> Result<Option<AskedPage<'a>>, EngineError> {
    let fields = look_ahead.selection_fields();
    let Some(root) = fields.first() else {
        return Ok(None);
    };
    let mut first = None;
    for child in root.selection_set() {
        match child.name() {
            name if Selection::is_identity(name) => {}
            name => match connections.iter().find(|c| c.field == name) {
                Some(connection) => {
                    first.get_or_insert((connection, child));
                }
                None => return Ok(None),
            },
        }
    }
    let Some((connection, child)) = first else {
        return Ok(None);
    };
    let arguments = child
        .arguments()
        .map_err(|e| EngineError::bad_input(e.message))?;
    if arguments
        .iter()
        .any(|(name, value)| name.as_str() == "filter" && *value != async_graphql::Value::Null)
    {
        return Ok(None);
    }
    let request = page_request(connection.key_field.as_ref(), None, None, |name| {
        arguments
            .iter()
            .find(|(argument, _)| argument.as_str() == name)
            .map(|(_, value)| value.clone())
    })?;
    Ok(Some(AskedPage {
        connection,
        response_key: child.alias().unwrap_or(child.name()),
        request,
    }))
}

async fn nodes(
    ctx: &ResolverContext<'_>,
    types: &[String],
) -> Result<Vec<Option<Node>>, EngineError> {
    let ids = ctx.args.try_get("ids")?.list()?;
    if ids.len() > MAX_NODES {
        return Err(EngineError::bad_input(format!(
            "ids: at most {MAX_NODES} ids, not {}",
            ids.len()
        )));
    }
    let mut checked = Vec::with_capacity(ids.len());
    for id in ids.iter() {
        let id = id_text(&id)?;
        engine::ids::check_id("ids", &id)?;
        checked.push(id);
    }
    let allowed: Vec<&str> = types.iter().map(String::as_str).collect();
    let look_ahead = ctx.look_ahead();
    let mut nodes = Vec::with_capacity(checked.len());
    for (index, node) in level(ctx)?
        .nodes_each(&checked, &allowed, &selection(&look_ahead))
        .await?
        .into_iter()
        .enumerate()
    {
        nodes.push(node.unwrap_or_else(|error| {
            // Null at its place in the list, with the error at that path.
            let key = ctx.item.node.response_key().node.to_string();
            let mut error = graphql_error(error).into_server_error(ctx.item.pos);
            error.path = vec![PathSegment::Field(key), PathSegment::Index(index)];
            ctx.add_error(error);
            None
        }));
    }
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
                    .map_err(graphql_error)?;
                Ok(node.map(|node| node_field_value(node, false)))
            })
        },
    )
    .description(format!(
        "The {} whose {} equals this value as people read it (Unicode NFKC, case folded, trimmed), or null.",
        type_def.name, field.name
    ))
    .argument(InputValue::new(
        &field.name,
        TypeRef::named_nn(scalar.name()),
    ))
}

async fn by_unique_value(
    ctx: &ResolverContext<'_>,
    type_name: &str,
    field: &str,
) -> Result<Option<Node>, EngineError> {
    let value = ctx.args.try_get(field)?;
    let value = match value.as_value() {
        async_graphql::Value::Number(n) => n.to_string(),
        _ => value.string()?.to_owned(),
    };
    let look_ahead = ctx.look_ahead();
    level(ctx)?
        .node_by_unique((type_name, field), &value, &selection(&look_ahead))
        .await
}
