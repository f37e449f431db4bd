//! Relay connections: the connection, edge and `PageInfo` types, and the connection fields of
//! `@hasMany`, `@outgoing` and `@incoming`, served by the engine's pages.
//!
//! Invariant: a connection's cursors are opaque and bound to it (the engine refuses another's);
//! `pageInfo` is derived from the page read, never from a second read.

use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef,
};

use super::amplify;
use super::fields::attribute_field;
use crate::engine::Cursor;
use crate::engine::read::{
    Connection, DEFAULT_PAGE_SIZE, KeyField, Level, MAX_LIMIT, MAX_PAGE_SIZE, Node, Page,
    PageArguments, PageEdge, PageRequest,
};
use crate::engine::{self, EngineError};
use crate::graphql::context::{FieldGuard, cursor_value, model, scope};
use crate::graphql::errors::graphql_error;
use crate::graphql::selection::page_selection;
use crate::graphql::values::filters;
use crate::graphql::values::from_input;
use crate::graphql::values::key_conditions;
use crate::model::{ApiShape, FieldDef, FieldKind, IndexDef, Model, ScalarType, TypeDef};

/// `PageInfo`, read from the [`Page`] its connection holds.
pub(in crate::graphql) fn page_info() -> Object {
    let flag = |name: &str, read: fn(&Page) -> bool| {
        Field::new(name, TypeRef::named_nn(TypeRef::BOOLEAN), move |ctx| {
            let value = ctx.parent_value.downcast_ref::<Page>().map(read);
            FieldFuture::from_value(value.map(Into::into))
        })
    };
    let cursor = |name: &str, read: fn(&Page) -> Option<&Cursor>| {
        Field::new(name, TypeRef::named(TypeRef::STRING), move |ctx| {
            let cursor = ctx.parent_value.downcast_ref::<Page>().and_then(read);
            cursor_value(&ctx, cursor)
        })
    };
    Object::new("PageInfo")
        .description("Where a page sits in its connection (Relay cursor connections).")
        .field(flag("hasNextPage", |p| p.has_next_page))
        .field(flag("hasPreviousPage", |p| p.has_previous_page))
        .field(cursor("startCursor", |p| p.cursors().0))
        .field(cursor("endCursor", |p| p.cursors().1))
}

/// The names of the connection type and of its Relay edge type that `field` returns.
pub(in crate::graphql) fn type_names(field: &FieldDef) -> Option<(String, String)> {
    match &field.kind {
        FieldKind::HasMany(has_many) => Some((
            format!("{}Connection", has_many.element),
            format!("{}Edge", has_many.element),
        )),
        FieldKind::Outgoing { edge, .. } => {
            Some((format!("{edge}Connection"), format!("{edge}Edge")))
        }
        FieldKind::Incoming { edge, .. } => Some((
            format!("{edge}InverseConnection"),
            format!("{edge}InverseEdge"),
        )),
        _ => None,
    }
}

/// The Relay connection type `name` of edges `edge_name`: `edges`, `pageInfo`, and where the
/// connection keeps a count (`counted`), `totalCount`.
fn connection_object(name: &str, edge_name: &str, counted: bool) -> Object {
    let connection = Object::new(name).field(Field::new(
        "edges",
        TypeRef::named_nn_list_nn(edge_name),
        |ctx| {
            let edges = ctx.parent_value.downcast_ref::<Page>().map(|page| {
                FieldValue::list(page.edges.iter().map(|e| FieldValue::borrowed_any(e)))
            });
            FieldFuture::Value(edges)
        },
    ));
    let connection = match counted {
        true => connection.field(total_count()),
        false => connection,
    };
    connection.field(Field::new(
        "pageInfo",
        TypeRef::named_nn("PageInfo"),
        |ctx| {
            let page = ctx
                .parent_value
                .downcast_ref::<Page>()
                .map(|page| FieldValue::borrowed_any(page));
            FieldFuture::Value(page)
        },
    ))
}

/// `totalCount`, read from the page.
fn total_count() -> Field {
    Field::new("totalCount", TypeRef::named_nn(TypeRef::INT), |ctx| {
        let count = ctx
            .parent_value
            .downcast_ref::<Page>()
            .and_then(|page| page.total_count);
        FieldFuture::new(async move {
            // The connection's field reads the count whenever its selection asks.
            let count = count.ok_or_else(|| graphql_error(EngineError::Internal))?;
            Ok(Some(Value::from(count)))
        })
    })
    .description(
        "How many items the whole connection holds, kept exact by every write: no extra read \
         (a list sums its shards' counters in the page's level). Not kept for a page with \
         filter, a key condition or role: those refuse it.",
    )
}

/// The name of the Relay connection type of `type_name`'s index queries: a page of an index
/// keeps no count, so its type has no `totalCount`.
pub(in crate::graphql) fn index_connection_type(type_name: &str) -> String {
    format!("{type_name}IndexConnection")
}

/// The Relay connection type of `type_name`'s index queries (edges of `<Type>Edge`).
pub(in crate::graphql) fn index_connection_object(type_name: &str) -> Object {
    connection_object(
        &index_connection_type(type_name),
        &format!("{type_name}Edge"),
        false,
    )
    .description(format!(
        "A page of an index query of {}: an index keeps no count.",
        crate::model::plural(type_name)
    ))
}

/// The connection type `name` and its edge type `edge_name`, whose nodes are of `node_type`.
/// Edge connections (`metadata` given) add the edge type's metadata fields and `createdAt` to
/// the Relay edge.
pub(in crate::graphql) fn objects(
    name: &str,
    edge_name: &str,
    node_type: &str,
    is_abstract: bool,
    metadata: Option<&[FieldDef]>,
) -> [Object; 2] {
    let connection = connection_object(name, edge_name, true);
    let mut edge = Object::new(edge_name)
        .field(Field::new(
            "cursor",
            TypeRef::named_nn(TypeRef::STRING),
            |ctx| {
                let edge = ctx.parent_value.downcast_ref::<PageEdge>();
                cursor_value(&ctx, edge.map(|edge| &edge.cursor))
            },
        ))
        .field(Field::new(
            "node",
            TypeRef::named_nn(node_type),
            move |ctx| {
                let node = ctx
                    .parent_value
                    .downcast_ref::<PageEdge>()
                    .and_then(|e| e.node.as_ref())
                    .map(|node| {
                        let value = FieldValue::borrowed_any(node);
                        if is_abstract {
                            value.with_type(node.typename.clone())
                        } else {
                            value
                        }
                    });
                FieldFuture::Value(node)
            },
        ));
    if let Some(metadata) = metadata {
        for field in metadata {
            if let FieldKind::Scalar {
                scalar, required, ..
            } = &field.kind
            {
                edge = edge.field(edge_attribute(&field.name, scalar.clone(), *required));
            }
        }
        edge = edge.field(
            edge_attribute("createdAt", ScalarType::AwsDateTime, true)
                .description("When the edge was first added."),
        );
    }
    [connection, edge]
}

/// A Relay edge field that reads one attribute of the edge item.
fn edge_attribute(name: &str, scalar: ScalarType, required: bool) -> Field {
    attribute_field::<PageEdge>(name, scalar, required, |e| e.edge.as_deref())
}

/// The connection field for a `@hasMany`, `@outgoing` or `@incoming` field of `owner`.
pub(in crate::graphql) fn field(owner: &TypeDef, field: &FieldDef, model: &Model) -> Field {
    let connection = Arc::new(
        Connection::of(owner, field, model)
            .expect("connection fields are @hasMany, @outgoing or @incoming"),
    );
    // Edge connections keep Relay's edges (their metadata sits on them) in either shape.
    let shape = match &field.kind {
        FieldKind::HasMany(_) => model.dialect.shape,
        _ => ApiShape::Relay,
    };
    let connection_type = match (&field.kind, shape) {
        (FieldKind::HasMany(has_many), ApiShape::Amplify) => {
            amplify::connection_type(shape, &has_many.element)
        }
        _ => {
            type_names(field)
                .expect("a connection field has a connection type")
                .0
        }
    };
    let role_enum = connection.role_enum.clone();
    let key_field = connection.key_field.clone();
    let connection_index = connection
        .index()
        .map(|(type_name, index)| (type_name.to_owned(), index.to_owned()));
    let filter = filters::connection_filter(field, model);
    let filter_fields = Arc::new(filter.as_ref().map(|(_, fields)| fields.clone()));
    let guard = FieldGuard::of(&owner.name, field);
    // Amplify's `@hasMany` connections are nullable, as its transformer makes them.
    let connection_type = match shape {
        ApiShape::Amplify => TypeRef::named(connection_type),
        ApiShape::Relay => TypeRef::named_nn(connection_type),
    };
    let mut generated = Field::new(&field.name, connection_type, move |ctx| {
        let connection = connection.clone();
        let filter_fields = filter_fields.clone();
        let guard = guard.clone();
        FieldFuture::new(async move {
            if let Some(guard) = &guard {
                guard.check(&ctx).map_err(graphql_error)?;
            }
            let page = resolve(&ctx, &connection, filter_fields.as_deref(), shape)
                .await
                .map_err(|error| graphql_error(amplify::named_as_sent(shape, error)))?;
            Ok(Some(FieldValue::owned_any(page)))
        })
    });
    // A `@hasMany` that reads a sorted `@index` takes its key condition, of the index's input.
    let composite = connection_index
        .map(|(type_name, index)| key_conditions::composite_input_names(&type_name, &index).0);
    generated = connection_page_arguments(
        generated,
        (key_field.as_ref(), composite.as_deref()),
        filter.as_ref().map(|(name, _)| name.as_str()),
        shape,
    );
    if let Some(role_enum) = &role_enum {
        generated = generated.argument(
            InputValue::new("role", TypeRef::named(role_enum))
                .description("Only edges with this role."),
        );
        if model.enum_def(role_enum).is_some_and(|e| e.is_ranked()) {
            generated = generated.argument(
                InputValue::new("minRole", TypeRef::named(role_enum))
                    .description("Only edges whose role ranks at least this high."),
            );
        }
    }
    generated
}

/// `field` with the arguments of a page: `first`/`after`, `last`/`before` (Amplify's shape:
/// `limit`/`nextToken`, last), `sortDirection`, the key condition of `key_field`, and `filter`
/// of the input `filter` names.
fn with_page_arguments(
    field: Field,
    key_field: Option<&KeyField>,
    filter: Option<&str>,
    shape: ApiShape,
) -> Field {
    with_keyed_page_arguments(field, key_field, None, filter, shape)
}

/// [`with_page_arguments`], a composite sort key's condition being of the input `composite`.
fn with_keyed_page_arguments(
    mut field: Field,
    key_field: Option<&KeyField>,
    composite: Option<&str>,
    filter: Option<&str>,
    shape: ApiShape,
) -> Field {
    if shape == ApiShape::Relay {
        field = relay_page_arguments(field);
    }
    for argument in key_conditions::arguments(key_field, composite) {
        field = field.argument(argument);
    }
    filtered_page_arguments(field, filter, shape)
}

/// A connection field's page arguments: in Amplify's shape in the order its transformer gives a
/// `@hasMany` field (the key condition, `filter`, `sortDirection`, `limit`, `nextToken`), which
/// is not that of its index queries ([`with_keyed_page_arguments`]).
fn connection_page_arguments(
    mut field: Field,
    (key_field, composite): (Option<&KeyField>, Option<&str>),
    filter: Option<&str>,
    shape: ApiShape,
) -> Field {
    if shape == ApiShape::Relay {
        return with_keyed_page_arguments(field, key_field, composite, filter, shape);
    }
    for argument in key_conditions::condition_arguments(key_field, composite) {
        field = field.argument(argument);
    }
    if let Some(filter) = filter {
        field = field.argument(filter_argument(filter));
    }
    amplify::page_arguments(field.argument(key_conditions::sort_direction_argument()))
}

/// `filter`, of the input `filter` names.
pub(super) fn filter_argument(filter: &str) -> InputValue {
    InputValue::new("filter", TypeRef::named(filter)).description(
        "Only the items that meet this, tested by the store as it reads. A page reads on \
             until it is full or it has evaluated the server's read budget of items \
             (--max-filter-read-items); a page the budget stopped ends at the cursor where it \
             stopped, and the response's `extensions.filters` says so.",
    )
}

/// `field` with `filter` (of the input `filter` names) and the page's arguments.
fn filtered_page_arguments(mut field: Field, filter: Option<&str>, shape: ApiShape) -> Field {
    if let Some(filter) = filter {
        field = field.argument(filter_argument(filter));
    }
    match shape {
        ApiShape::Relay => field,
        ApiShape::Amplify => amplify::page_arguments(field),
    }
}

fn relay_page_arguments(field: Field) -> Field {
    field
        .argument(InputValue::new("first", TypeRef::named(TypeRef::INT)).description(
            format!("Page forward: at most this many (0 to {MAX_PAGE_SIZE}; {DEFAULT_PAGE_SIZE} when neither first nor last is given)."),
        ))
        .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)).description("Start after this cursor."))
        .argument(InputValue::new("last", TypeRef::named(TypeRef::INT)).description(format!("Page backward: at most this many (0 to {MAX_PAGE_SIZE}).")))
        .argument(InputValue::new("before", TypeRef::named(TypeRef::STRING)).description("End before this cursor."))
}

/// `list<Types>`: every node of `type_def`, from its type index, newest last (`DESC` for newest
/// first).
///
/// Without `sorted`, the list takes no `sortDirection` (nor a key condition), as Amplify's
/// lists of a type without `@primaryKey` take none.
pub(in crate::graphql) fn list_field(
    type_def: &TypeDef,
    name: &str,
    shape: ApiShape,
    sorted: bool,
) -> Field {
    let primary_key = listed_key(type_def);
    let type_def_name = type_def.name.clone();
    let type_def = Arc::new(type_def.clone());
    let name = name.to_owned();
    let connection_type = amplify::connection_type(shape, &type_def.name);
    let shards = type_def.list.map_or(0, |l| l.shards);
    let key_field = engine::read::list_key_field(&type_def);
    let description = match &type_def.list_sort {
        None => format!(
            "Every {}, oldest first (sortDirection: DESC for newest first): one Query per shard \
             of its type index ({shards}), merged.",
            type_def.name
        ),
        Some((field, _)) => format!(
            "Every {}, by {field} (sortDirection: DESC for the other way): one Query per shard \
             of its type index ({shards}), merged.",
            type_def.name
        ),
    };
    let filter_name = filters::page_filter_name(&type_def.name);
    let filter_fields = Arc::new(filters::node_filter_fields(&type_def));
    // A composite primary key: given its first field, the page is of its index, with a
    // condition on the others.
    let primary = type_def
        .primary_index()
        .filter(|_| shape == ApiShape::Amplify)
        .map(|index| Arc::new(Connection::of_index(&type_def, index)));
    let primary_key_field = primary.as_ref().and_then(|c| c.key_field.clone());
    let field = Field::new(name, TypeRef::named(connection_type), move |ctx| {
        let type_def = type_def.clone();
        let filter_fields = filter_fields.clone();
        let primary = primary.clone();
        FieldFuture::new(async move {
            let page = match primary {
                Some(primary) => {
                    resolve_primary(&ctx, &type_def, &primary, &filter_fields, shape).await
                }
                None => resolve_list(&ctx, &type_def, &filter_fields, shape).await,
            }
            .map_err(|error| graphql_error(amplify::named_as_sent(shape, error)))?;
            Ok(Some(FieldValue::owned_any(page)))
        })
    })
    .description(description);
    let field = match (&primary_key, shape) {
        (Some((key, scalar)), ApiShape::Amplify) => field.argument(
            InputValue::new(key, TypeRef::named(scalar.name()))
                .description(format!("Only the nodes whose {key} is this value.")),
        ),
        _ => field,
    };
    let composite =
        key_conditions::composite_input_names(&type_def_name, crate::model::PRIMARY_INDEX).0;
    match (primary_key_field, shape) {
        // Amplify's list of a keyed type: the key's condition, filter, paging, sortDirection.
        (primary_key_field, ApiShape::Amplify) if primary_key.is_some() => {
            let mut field = field;
            let conditions =
                key_conditions::condition_arguments(primary_key_field.as_ref(), Some(&composite));
            for argument in conditions {
                field = field.argument(argument);
            }
            filtered_page_arguments(field, Some(&filter_name), shape)
                .argument(key_conditions::sort_direction_argument())
        }
        (Some(primary_key_field), _) => with_keyed_page_arguments(
            field,
            Some(&primary_key_field),
            Some(&composite),
            Some(&filter_name),
            shape,
        ),
        (None, _) if !sorted => filtered_page_arguments(field, Some(&filter_name), shape),
        (None, _) => with_page_arguments(field, key_field.as_ref(), Some(&filter_name), shape),
    }
}

/// The key Amplify's list of `type_def` takes as an argument: its `@primaryKey` field, or `id`
/// where the schema declares `id: ID! @primaryKey`.
fn listed_key(type_def: &TypeDef) -> Option<(String, ScalarType)> {
    type_def.primary_key.clone().or_else(|| {
        type_def
            .id_is_primary_key
            .then(|| ("id".to_owned(), ScalarType::Id))
    })
}

/// `list<Types>` of a type with a composite primary key: given the key's first field, a page
/// of the nodes under it, by the key's other fields; without it, the type's list.
async fn resolve_primary(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    primary: &Connection,
    filter_fields: &[(String, ScalarType)],
    shape: ApiShape,
) -> Result<Page, EngineError> {
    let Some((key, scalar)) = type_def.primary_key.clone() else {
        return Err(EngineError::Internal);
    };
    let given = |name: &str| ctx.args.get(name).is_some_and(|v| !v.is_null());
    if given(&key) {
        let index = (
            type_def.name.clone(),
            crate::model::PRIMARY_INDEX.to_owned(),
        );
        return resolve_index(ctx, primary, &(key, scalar), &index, filter_fields, shape).await;
    }
    if let Some(condition) = primary.key_field.as_ref().filter(|f| given(&f.name)) {
        return Err(EngineError::bad_input(format!(
            "{}: a condition on {} needs {key}, the key's first field",
            type_def.roots.list_name(&type_def.name),
            condition.name
        )));
    }
    resolve_list(ctx, type_def, filter_fields, shape).await
}

async fn resolve_list(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    filter_fields: &[(String, ScalarType)],
    shape: ApiShape,
) -> Result<Page, EngineError> {
    let model = model(ctx)?;
    let scope = scope(ctx)?;
    let key_field = engine::read::list_key_field(type_def);
    // Amplify's list of a type keyed by a field of its own (or by `id: ID! @primaryKey`) takes
    // that field: the page holds the node of that value (read through the list, filtered by
    // the store).
    let keyed = listed_key(type_def).and_then(|(key, _)| {
        let value = ctx.args.get(&key).map(|v| v.as_value().clone());
        value.filter(|v| *v != Value::Null).map(|value| {
            let mut test = async_graphql::indexmap::IndexMap::new();
            test.insert(async_graphql::Name::new("eq"), value);
            let mut filter = async_graphql::indexmap::IndexMap::new();
            filter.insert(async_graphql::Name::new(key), Value::Object(test));
            Value::Object(filter)
        })
    });
    let request =
        shaped_page_request_and(ctx, shape, key_field.as_ref(), Some(filter_fields), keyed)?;
    let look_ahead = ctx.look_ahead();
    let selection = page_selection(shape, &look_ahead);
    let page = Level::new(scope, model)
        .list_page(type_def, &request, &selection)
        .await?;
    note_filter_read(ctx, scope, &page);
    Ok(page)
}

/// The page request of a connection field's arguments in `shape`.
fn shaped_page_request(
    ctx: &ResolverContext<'_>,
    shape: ApiShape,
    key_field: Option<&KeyField>,
    filter_fields: Option<&[(String, ScalarType)]>,
) -> Result<PageRequest, EngineError> {
    shaped_page_request_and(ctx, shape, key_field, filter_fields, None)
}

/// [`shaped_page_request`], its filter also holding `also` (a filter's value).
fn shaped_page_request_and(
    ctx: &ResolverContext<'_>,
    shape: ApiShape,
    key_field: Option<&KeyField>,
    filter_fields: Option<&[(String, ScalarType)]>,
    also: Option<Value>,
) -> Result<PageRequest, EngineError> {
    let get = |name: &str| {
        let given = ctx.args.get(name).map(|v| v.as_value().clone());
        match (name, &also) {
            ("filter", Some(also)) => {
                let both = given.into_iter().chain([also.clone()]).collect();
                let mut filter = async_graphql::indexmap::IndexMap::new();
                filter.insert(async_graphql::Name::new("and"), Value::List(both));
                Some(Value::Object(filter))
            }
            _ => given,
        }
    };
    page_request_in(shape, key_field, filter_fields, get)
}

/// The page request of a connection's arguments as `get` reads them, in `shape`: Amplify's
/// `limit` checked and clamped, its `nextToken` read as the cursor.
pub(super) fn page_request_in(
    shape: ApiShape,
    key_field: Option<&KeyField>,
    filter_fields: Option<&[(String, ScalarType)]>,
    get: impl Fn(&str) -> Option<Value> + Copy,
) -> Result<PageRequest, EngineError> {
    amplify::check_limit(shape, get)?;
    let largest = (shape == ApiShape::Amplify).then_some(MAX_LIMIT);
    page_request(key_field, filter_fields, largest, |name| {
        amplify::page_argument(shape, name, get)
    })
}

/// The root query of the secondary index `index` of `type_def` (`@index(queryField:)`): the
/// nodes whose indexed field holds the value given, sorted by the index's sort key field (or
/// by id), with its key condition, `sortDirection`, `filter` and paging.
pub(in crate::graphql) fn index_field(
    type_def: &TypeDef,
    index: &IndexDef,
    query_field: &str,
    shape: ApiShape,
) -> Field {
    let connection = Arc::new(Connection::of_index(type_def, index));
    let key_field = connection.key_field.clone();
    let filter_fields = Arc::new(filters::node_filter_fields(type_def));
    let argument = Arc::new((index.field.clone(), index.scalar.clone()));
    let limit = Arc::new((type_def.name.clone(), index.name.clone()));
    let description = format!(
        "The {} whose {} is the value given, by {}: one Query of index {} ({}).",
        crate::model::plural(&type_def.name),
        index.field,
        index.sort_by(),
        index.name,
        engine::ids::index_name(index.slot)
    );
    let connection_type = match shape {
        ApiShape::Relay => index_connection_type(&type_def.name),
        ApiShape::Amplify => amplify::connection_type(shape, &type_def.name),
    };
    let field = Field::new(query_field, TypeRef::named(connection_type), move |ctx| {
        let connection = connection.clone();
        let filter_fields = filter_fields.clone();
        let argument = argument.clone();
        let limit = limit.clone();
        FieldFuture::new(async move {
            let page = resolve_index(&ctx, &connection, &argument, &limit, &filter_fields, shape)
                .await
                .map_err(|error| graphql_error(amplify::named_as_sent(shape, error)))?;
            Ok(Some(FieldValue::owned_any(page)))
        })
    })
    .description(description)
    .argument(InputValue::new(
        &index.field,
        TypeRef::named_nn(index.scalar.name()),
    ));
    let composite = key_conditions::composite_input_names(&type_def.name, &index.name).0;
    with_keyed_page_arguments(
        field,
        key_field.as_ref(),
        Some(&composite),
        Some(&filters::page_filter_name(&type_def.name)),
        shape,
    )
}

async fn resolve_index(
    ctx: &ResolverContext<'_>,
    connection: &Connection,
    (field, scalar): &(String, ScalarType),
    (type_name, index): &(String, String),
    filter_fields: &[(String, ScalarType)],
    shape: ApiShape,
) -> Result<Page, EngineError> {
    let model = model(ctx)?;
    let scope = scope(ctx)?;
    let given = ctx
        .args
        .get(field)
        .map(|v| v.as_value().clone())
        .unwrap_or_default();
    let value = from_input(&given, scalar, field)?
        .as_ref()
        .and_then(engine::derive::index_value)
        .ok_or_else(|| EngineError::bad_input(format!("{field}: a value is needed")))?;
    if !engine::ids::fits_index(type_name, index, &value) {
        return Err(EngineError::bad_input(format!(
            "{field} is longer than any value index {index} holds"
        )));
    }
    let request = shaped_page_request(
        ctx,
        shape,
        connection.key_field.as_ref(),
        Some(filter_fields),
    )?;
    let look_ahead = ctx.look_ahead();
    let selection = page_selection(shape, &look_ahead);
    let page = Level::new(scope, model)
        .index_page(connection, &value, &request, &selection)
        .await?;
    note_filter_read(ctx, scope, &page);
    Ok(page)
}

/// Notes what a filtered page read, under the path of its field, for the response's
/// `extensions.filters`.
pub(super) fn note_filter_read(
    ctx: &ResolverContext<'_>,
    scope: &engine::RequestScope,
    page: &Page,
) {
    if let Some(read) = &page.filtered {
        let at = ctx
            .path_node
            .map(|path| path.to_string())
            .unwrap_or_default();
        scope.note_filter_read(at, read.clone());
    }
}

async fn resolve(
    ctx: &ResolverContext<'_>,
    connection: &Connection,
    filter_fields: Option<&[(String, ScalarType)]>,
    shape: ApiShape,
) -> Result<Page, EngineError> {
    let parent = ctx
        .parent_value
        .downcast_ref::<Node>()
        .ok_or(EngineError::Internal)?;
    let model = model(ctx)?;
    let scope = scope(ctx)?;
    let request = shaped_page_request(ctx, shape, connection.key_field.as_ref(), filter_fields)?;
    let look_ahead = ctx.look_ahead();
    let selection = page_selection(shape, &look_ahead);
    let field = ctx.item.node.response_key().node.as_str();
    let page = Level::new(scope, model)
        .field_page(connection, (parent, field), &request, &selection)
        .await?;
    note_filter_read(ctx, scope, &page);
    Ok(page)
}

/// The page a connection field asks for, from a resolver's arguments or from a look-ahead of
/// them; `key_field` is the field its key condition tests, if it takes one, `filter_fields`
/// the fields its filter may test, if it takes one, and `largest` its largest size, if not
/// the engine's.
pub(in crate::graphql) fn page_request(
    key_field: Option<&KeyField>,
    filter_fields: Option<&[(String, ScalarType)]>,
    largest: Option<usize>,
    get: impl Fn(&str) -> Option<Value>,
) -> Result<PageRequest, EngineError> {
    let present = |name: &str| get(name).filter(|v| *v != Value::Null);
    let size = |name: &str| -> Result<Option<i64>, EngineError> {
        match present(name) {
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| EngineError::bad_input(format!("{name} must be a whole number"))),
            Some(_) => Err(EngineError::bad_input(format!(
                "{name} must be a whole number"
            ))),
            None => Ok(None),
        }
    };
    let text = |name: &str| -> Result<Option<String>, EngineError> {
        match present(name) {
            Some(Value::Enum(value)) => Ok(Some(value.to_string())),
            Some(Value::String(value)) => Ok(Some(value)),
            Some(_) => Err(EngineError::bad_input(format!("{name} must be a string"))),
            None => Ok(None),
        }
    };
    PageRequest::new(PageArguments {
        first: size("first")?,
        last: size("last")?,
        after: text("after")?,
        before: text("before")?,
        descending: key_conditions::descending(get("sortDirection"))?,
        key_condition: key_conditions::key_condition(key_field, &get)?,
        role: text("role")?,
        min_role: text("minRole")?,
        filter: match (filter_fields, present("filter")) {
            (Some(fields), Some(filter)) => Some(filters::filter_of(&filter, fields, "filter")?),
            _ => None,
        },
        largest,
    })
}
