//! The Mutation root: `create<Type>`, `update<Type>`, `delete<Type>` for every `@model` type and
//! `add<Edge>`/`remove<Edge>` for every `@edge` type. Each resolver turns its arguments into
//! plain values and calls the engine's write, which is one transaction.

use std::sync::Arc;

use async_graphql::ErrorExtensions as _;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ObjectAccessor, ResolverContext, TypeRef,
    ValueAccessor,
};

use super::conflicts::{self, Conflicted};
use crate::engine::Item;
use crate::engine::read::Node;
use crate::engine::write::{FieldValues, NewEdge, NewNode};
use crate::engine::{self, EngineError};
use crate::graphql::context::{id_argument, id_text, model, node_field_value, node_id_of, scope};
use crate::graphql::errors::graphql_error;
use crate::graphql::types::edge_types::EdgeItem;
use crate::graphql::types::embedded::embedded_from_input;
use crate::graphql::types::inputs::{self, Nested};
use crate::graphql::values::filters;
use crate::graphql::values::{from_input, list_from_input, list_to_graphql, to_graphql};
use crate::model::{EdgeTypeDef, FieldKind, Model, ScalarType, TypeDef};

pub(in crate::graphql) fn root(model: &Arc<Model>) -> Object {
    let mut root = Object::new("Mutation");
    for edge_def in &model.edges {
        for field in edge_fields(edge_def) {
            root = root.field(field);
        }
    }
    for type_def in &model.types {
        let name = &type_def.name;
        let plural = crate::model::plural(name);
        let condition = || {
            InputValue::new(
                "condition",
                TypeRef::named(format!("Model{name}ConditionInput")),
            )
        };
        // The singles, then the batches, each with its single.
        let roots = &type_def.roots;
        let amplify = model.dialect.amplify_shape();
        if let Some(field) = &roots.create {
            let mut created = node_field(field, TypeRef::named(name), name, create)
                .description(format!("Creates a {name}."))
                .argument(InputValue::new(
                    "input",
                    TypeRef::named_nn(format!("Create{name}Input")),
                ));
            if amplify {
                created = created.description(format!(
                    "Creates a {name}, with the id given or a new one. With a condition, only if \
                     it holds for a node that does not exist yet, as in Amplify."
                ))
                .argument(condition());
            }
            root = root.field(created);
        }
        if let Some(field) = &roots.update {
            root = root.field(
                node_field(field, TypeRef::named(name), name, update)
                    .description(format!("Changes the fields given in input; fields left out keep their values. With a condition, only if the stored {name} satisfies it (otherwise ConditionalCheckFailed)."))
                    .argument(InputValue::new("input", TypeRef::named_nn(format!("Update{name}Input"))))
                    .argument(condition()),
            );
        }
        if let (Some(field), true) = (&roots.delete, amplify) {
            root = root.field(
                node_field(field, TypeRef::named(name), name, delete)
                    .description(format!("Deletes the {name} the input names and frees its unique values; with no such {name}, or a condition the stored {name} does not satisfy, DynamoDB:ConditionalCheckFailedException, as in Amplify."))
                    .argument(InputValue::new("input", TypeRef::named_nn(format!("Delete{name}Input"))))
                    .argument(condition()),
            );
        } else if let Some(field) = &roots.delete {
            root = root.field(
                node_field(field, TypeRef::named(name), name, delete)
                    .description(format!("Deletes a {name} and frees its unique values; null when there is no such {name}. With a condition, only if the stored {name} satisfies it (otherwise ConditionalCheckFailed)."))
                    .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
                    .argument(InputValue::new("expectedVersion", TypeRef::named(TypeRef::INT)))
                    .argument(condition()),
            );
        }
        // A type that detects conflicts is written one node at a time, each with its version.
        if !model.dialect.additions() || type_def.conflict.is_some() {
            continue;
        }
        if roots.create.is_some() {
            root = root.field(
                node_field(
                    &format!("create{plural}"),
                    TypeRef::named_nn_list(name),
                    name,
                    create_many,
                )
                .description(format!(
                    "Creates a {name} for each input, all or none, in one transaction."
                ))
                .argument(InputValue::new(
                    "input",
                    TypeRef::named_nn_list_nn(format!("Create{name}Input")),
                )),
            );
        }
        if roots.update.is_some() {
            root = root.field(
                node_field(&format!("update{plural}"), TypeRef::named_nn_list(name), name, update_many)
                    .description("Changes each input's node, all or none, in one transaction; fields left out keep their values.")
                    .argument(InputValue::new("input", TypeRef::named_nn_list_nn(format!("Update{name}Input")))),
            );
        }
        if roots.delete.is_some() {
            root = root.field(
                node_field(&format!("delete{plural}"), TypeRef::named_nn_list(name), name, delete_many)
                    .description(format!("Deletes each {name}, all or none, in one transaction; an id with no such {name} fails the batch."))
                    .argument(InputValue::new("ids", TypeRef::named_nn_list_nn(TypeRef::ID))),
            );
        }
    }
    root
}

/// The input field that names the version an update expects: `_version` for a type that
/// detects conflicts, else tablegraph's `expectedVersion`.
fn version_argument(type_def: &TypeDef) -> &'static str {
    match type_def.conflict.is_some() {
        true => engine::SYNC_VERSION,
        false => "expectedVersion",
    }
}

/// The guard of an update or delete: `expectedVersion` and `condition`.
fn guard(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    expected: Option<i64>,
) -> Result<engine::write::Guard, EngineError> {
    let condition = match ctx.args.get("condition").filter(|c| !c.is_null()) {
        Some(condition) => Some(filters::filter_of(
            condition.as_value(),
            &filters::condition_fields(type_def),
            "condition",
        )?),
        None => None,
    };
    Ok(engine::write::Guard::version(expected).with_condition(condition))
}

fn create_many<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> NodeFuture<'a> {
    Box::pin(async move {
        let members = ctx
            .args
            .try_get("input")?
            .list()?
            .iter()
            .enumerate()
            .map(|(index, input)| {
                new_node(model(ctx)?, type_def, &input.object()?)
                    .map_err(|error| error.in_batch(index))
            })
            .collect::<Result<Vec<_>, _>>()?;
        engine::write::create_nodes(scope(ctx)?, model(ctx)?, type_def, &members)
            .await
            .map(Answer::from)
    })
}

fn update_many<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> NodeFuture<'a> {
    Box::pin(async move {
        let members = ctx
            .args
            .try_get("input")?
            .list()?
            .iter()
            .enumerate()
            .map(|(index, input)| {
                let member = || -> Result<engine::write::UpdateMember, EngineError> {
                    let input = input.object()?;
                    Ok(engine::write::UpdateMember {
                        id: node_id_of(type_def, &input)?,
                        fields: field_values(model(ctx)?, type_def, &input, &[])?,
                        guard: engine::write::Guard::version(expected_version(
                            input.get("expectedVersion"),
                        )?),
                    })
                };
                member().map_err(|error| error.in_batch(index))
            })
            .collect::<Result<Vec<_>, _>>()?;
        engine::write::update_nodes(scope(ctx)?, model(ctx)?, type_def, &members)
            .await
            .map(Answer::from)
    })
}

fn delete_many<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> NodeFuture<'a> {
    Box::pin(async move {
        let ids = ctx
            .args
            .try_get("ids")?
            .list()?
            .iter()
            .map(|id| id_text(&id))
            .collect::<Result<Vec<String>, EngineError>>()?;
        engine::write::delete_nodes(scope(ctx)?, model(ctx)?, type_def, &ids)
            .await
            .map(Answer::from)
    })
}

/// What a mutation answers: one node (or none), or the nodes of a batch.
enum Answer {
    One(Option<Node>),
    Many(Vec<Node>),
}

impl From<Node> for Answer {
    fn from(node: Node) -> Answer {
        Answer::One(Some(node))
    }
}

impl From<Option<Node>> for Answer {
    fn from(node: Option<Node>) -> Answer {
        Answer::One(node)
    }
}

impl From<Vec<Node>> for Answer {
    fn from(nodes: Vec<Node>) -> Answer {
        Answer::Many(nodes)
    }
}

type NodeFuture<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<Answer, EngineError>> + Send + 'a>>;

/// A root field whose resolver runs `run` for the type `type_name`.
fn node_field(
    name: &str,
    ty: TypeRef,
    type_name: &str,
    run: for<'a> fn(&'a ResolverContext<'a>, &'a TypeDef) -> NodeFuture<'a>,
) -> Field {
    let type_name = type_name.to_owned();
    Field::new(name, ty, move |ctx| {
        let type_name = type_name.clone();
        FieldFuture::new(async move {
            let model = model(&ctx).map_err(graphql_error)?;
            let type_def = model
                .type_def(&type_name)
                .ok_or_else(|| graphql_error(EngineError::Internal))?;
            let answer = run(&ctx, type_def)
                .await
                .map_err(|error| mutation_error(&ctx, type_def, error))?;
            // The write stands; its answer is withheld from a caller the rules do not let
            // read what was written (as AppSync answers a change of owner).
            let written = match &answer {
                Answer::One(node) => node.iter().collect::<Vec<_>>(),
                Answer::Many(nodes) => nodes.iter().collect(),
            };
            let scope = scope(&ctx).map_err(graphql_error)?;
            let unreadable = written.iter().any(|node| {
                !engine::admits(&scope.read_access(&[node.typename.as_str()]), &node.item)
            });
            if unreadable {
                return Err(graphql_error(EngineError::Unauthorized(format!(
                    "Not Authorized to read {type_name}: the write was made, and its answer \
                     is withheld"
                ))));
            }
            Ok(match answer {
                Answer::One(node) => node.map(|node| node_field_value(node, false)),
                Answer::Many(nodes) => Some(FieldValue::list(
                    nodes.into_iter().map(|node| node_field_value(node, false)),
                )),
            })
        })
    })
}

fn create<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> NodeFuture<'a> {
    Box::pin(async move {
        let input = ctx.args.try_get("input")?.object()?;
        let node = new_node(model(ctx)?, type_def, &input)?;
        let guard = guard(ctx, type_def, None)?;
        let node =
            engine::write::create_tree(scope(ctx)?, model(ctx)?, type_def, &node, &guard).await?;
        Ok(node.into())
    })
}

fn update<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> NodeFuture<'a> {
    Box::pin(async move {
        let input = ctx.args.try_get("input")?.object()?;
        let id = node_id_of(type_def, &input)?;
        let expected = expected_version(input.get(version_argument(type_def)))?;
        let guard = guard(ctx, type_def, expected)?;
        let absent = unsent_variable_fields(ctx, "input");
        let fields = field_values(model(ctx)?, type_def, &input, &absent)?;
        let written =
            engine::write::update_node(scope(ctx)?, model(ctx)?, type_def, &id, &fields, &guard)
                .await;
        match written {
            Ok(node) => Ok(node.into()),
            Err(error) => {
                let write = (Conflicted::Update(&id, &fields), &guard.condition);
                Ok(Answer::from(
                    conflicts::decided(ctx, type_def, write, error).await?,
                ))
            }
        }
    })
}

fn delete<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> NodeFuture<'a> {
    Box::pin(async move {
        let id = match ctx.args.get("input") {
            // Amplify's `delete<Type>(input: { id })` (or its `@primaryKey` field).
            Some(input) => node_id_of(type_def, &input.object()?)?,
            None => id_argument(ctx, "id")?,
        };
        let expected = match (type_def.conflict.is_some(), ctx.args.get("input")) {
            (true, Some(input)) => expected_version(input.object()?.get(engine::SYNC_VERSION))?,
            _ => expected_version(ctx.args.get("expectedVersion"))?,
        };
        let guard = guard(ctx, type_def, expected)?;
        let deleted =
            match engine::write::delete_node(scope(ctx)?, model(ctx)?, type_def, &id, &guard).await
            {
                Ok(deleted) => deleted,
                Err(error) => {
                    let write = (Conflicted::Delete(&id), &guard.condition);
                    conflicts::decided(ctx, type_def, write, error).await?
                }
            };
        // Amplify's delete of a node that is not there fails its condition, as in AppSync.
        if deleted.is_none() && ctx.args.get("input").is_some() {
            return Err(EngineError::ConditionalCheckFailed);
        }
        Ok(Answer::from(deleted))
    })
}

/// `addGoalMembership` and `removeGoalMembership`.
fn edge_fields(edge_def: &EdgeTypeDef) -> [Field; 2] {
    let name = edge_def.name.clone();
    let add = Field::new(format!("add{name}"), TypeRef::named(&name), move |ctx| {
        let name = name.clone();
        FieldFuture::new(async move {
            let edge = add_edge(&ctx, &name).await.map_err(graphql_error)?;
            Ok(Some(FieldValue::owned_any(EdgeItem(edge))))
        })
    })
    .description(format!(
        "Adds a {} edge, or changes its metadata when it exists.",
        edge_def.name
    ))
    .argument(InputValue::new(
        "input",
        TypeRef::named_nn(format!("Add{}Input", edge_def.name)),
    ));
    let name = edge_def.name.clone();
    let remove = Field::new(
        format!("remove{name}"),
        TypeRef::named(TypeRef::BOOLEAN),
        move |ctx| {
            let name = name.clone();
            FieldFuture::new(async move {
                remove_edge(&ctx, &name).await.map_err(graphql_error)?;
                Ok(Some(FieldValue::value(true)))
            })
        },
    )
    .description(format!(
        "Removes a {} edge; an error when there is none.",
        edge_def.name
    ))
    .argument(InputValue::new("from", TypeRef::named_nn(TypeRef::ID)))
    .argument(InputValue::new("to", TypeRef::named_nn(TypeRef::ID)));
    [add, remove]
}

async fn add_edge(ctx: &ResolverContext<'_>, edge_name: &str) -> Result<Arc<Item>, EngineError> {
    let model = model(ctx)?;
    let edge_def = model.edge_def(edge_name).ok_or(EngineError::Internal)?;
    let input = ctx.args.try_get("input")?.object()?;
    let from = &id_text(&input.try_get("from")?)?;
    let to = &id_text(&input.try_get("to")?)?;
    let metadata = edge_metadata(edge_def, &input)?;
    engine::write::add_edge(scope(ctx)?, model, edge_def, from, to, &metadata).await
}

async fn remove_edge(ctx: &ResolverContext<'_>, edge_name: &str) -> Result<(), EngineError> {
    let from = &id_text(&ctx.args.try_get("from")?)?;
    let to = &id_text(&ctx.args.try_get("to")?)?;
    engine::write::remove_edge(scope(ctx)?, model(ctx)?, edge_name, from, to).await
}

/// A create's input as the engine takes it: the stored fields, and what the relation fields nest.
fn new_node(
    model: &Model,
    type_def: &TypeDef,
    input: &ObjectAccessor<'_>,
) -> Result<NewNode, EngineError> {
    let mut node = NewNode::from(field_values(model, type_def, input, &[])?);
    // Amplify's create input takes the id (no other input has one), or the `@primaryKey`
    // field whose value is the id.
    if type_def.primary_key.is_some() {
        node.id = Some(node_id_of(type_def, input)?);
    } else if let Some(id) = input.get("id").filter(|id| !id.is_null()) {
        node.id = Some(id_text(&id)?);
    }
    for field in &type_def.fields {
        let Some(nested) = inputs::nested(model, field) else {
            continue;
        };
        let Some(value) = input.get(&field.name).filter(|value| !value.is_null()) else {
            continue;
        };
        let value = value.object()?;
        let name = &field.name;
        let given = |part: &str| value.get(part).filter(|value| !value.is_null());
        match nested {
            Nested::One(target) => {
                let FieldKind::BelongsTo { foreign_key, .. } = &field.kind else {
                    return Err(EngineError::Internal);
                };
                match (given("create"), given("link")) {
                    (Some(create), None) => {
                        let parent = new_node(model, target, &create.object()?)?;
                        node.parents.push((name.clone(), parent));
                    }
                    (None, Some(link)) => {
                        if node
                            .fields
                            .iter()
                            .any(|(f, v)| f == foreign_key && v.is_some())
                        {
                            return Err(EngineError::bad_input(format!(
                                "give {foreign_key} or {name}, not both"
                            )));
                        }
                        node.fields.retain(|(f, _)| f != foreign_key);
                        let id =
                            from_input(link.as_value(), &ScalarType::Id, &format!("{name}.link"))?;
                        node.fields.push((foreign_key.clone(), id));
                    }
                    _ => {
                        return Err(EngineError::bad_input(format!(
                            "{name}: give one of create and link"
                        )));
                    }
                }
            }
            Nested::Many(element, _) => {
                if let Some(create) = given("create") {
                    let children = create
                        .list()?
                        .iter()
                        .map(|child| new_node(model, element, &child.object()?))
                        .collect::<Result<Vec<_>, _>>()?;
                    node.children.push((name.clone(), children));
                }
                if let Some(link) = given("link") {
                    let ids = link
                        .list()?
                        .iter()
                        .map(|id| id_text(&id))
                        .collect::<Result<Vec<_>, EngineError>>()?;
                    node.linked.push((name.clone(), ids));
                }
            }
            Nested::Edges(edge_def) => {
                for edge in value.try_get("add")?.list()?.iter() {
                    let edge = edge.object()?;
                    node.edges.push(NewEdge {
                        edge: edge_def.name.clone(),
                        to: id_text(&edge.try_get("to")?)?,
                        metadata: edge_metadata(edge_def, &edge)?,
                    });
                }
            }
        }
    }
    Ok(node)
}

/// An edge input's own fields as stored.
fn edge_metadata(edge_def: &EdgeTypeDef, input: &ObjectAccessor<'_>) -> Result<Item, EngineError> {
    let mut metadata = Item::default();
    for field in &edge_def.fields {
        let Some(scalar) = field.scalar() else {
            continue;
        };
        if let Some(value) = input.get(&field.name)
            && let Some(value) = from_input(value.as_value(), scalar, &field.name)?
        {
            metadata.insert(field.name.clone(), value);
        }
    }
    Ok(metadata)
}

/// The input's stored fields as the engine takes them, leaving out `absent` fields.
fn field_values(
    model: &Model,
    type_def: &TypeDef,
    input: &ObjectAccessor<'_>,
    absent: &[String],
) -> Result<FieldValues, EngineError> {
    let mut fields = FieldValues::new();
    for field in &type_def.fields {
        let Some(value) = input.get(&field.name) else {
            continue;
        };
        if absent.contains(&field.name) {
            continue;
        }
        let value = match &field.kind {
            FieldKind::Scalar { scalar, .. } => from_input(value.as_value(), scalar, &field.name)?,
            FieldKind::ScalarList { scalar, .. } => {
                list_from_input(value.as_value(), scalar, &field.name)?
            }
            FieldKind::Embedded { object, list, .. } => {
                embedded_from_input(model, object, *list, value.as_value(), &field.name)?
            }
            _ => continue,
        };
        fields.push((field.name.clone(), value));
    }
    if model.dialect.amplify_shape() {
        for (name, how) in &type_def.timestamps.declared {
            if let Some(value) = input.get(name).filter(|_| !absent.contains(name)) {
                let value = from_input(value.as_value(), &how.scalar(), name)?;
                fields.push((name.clone(), value));
            }
        }
    }
    Ok(fields)
}

/// The fields of the input object literal in argument `argument` whose value is a variable the
/// client did not send (and that has no default). GraphQL says such a field is absent, but the
/// executor hands it over as null, which for an update would clear the field.
fn unsent_variable_fields(ctx: &ResolverContext<'_>, argument: &str) -> Vec<String> {
    let Some(literal) = ctx.item.node.get_argument(argument) else {
        return Vec::new();
    };
    let async_graphql_value::Value::Object(fields) = &literal.node else {
        return Vec::new();
    };
    let sent = |variable: &async_graphql::Name| {
        ctx.query_env.variables.contains_key(variable)
            || ctx
                .query_env
                .operation
                .node
                .variable_definitions
                .iter()
                .any(|d| d.node.name.node == *variable && d.node.default_value.is_some())
    };
    fields
        .iter()
        .filter_map(|(name, value)| match value {
            async_graphql_value::Value::Variable(variable) if !sent(variable) => {
                Some(name.to_string())
            }
            _ => None,
        })
        .collect()
}

/// The error of a mutation: a conflict detection's refusal carries the stored node, as far as
/// the mutation selects its fields and the caller may read it (AppSync's `data` of the error).
fn mutation_error(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    error: EngineError,
) -> async_graphql::Error {
    let EngineError::ConflictRejected(current) = &error else {
        return graphql_error(error);
    };
    let data = scope(ctx)
        .ok()
        .filter(|scope| engine::admits(&scope.read_access(&[type_def.name.as_str()]), current))
        .map(|scope| conflict_data(ctx, type_def, current, scope));
    let error = graphql_error(error);
    match data {
        Some(data) => error.extend_with(|_, extensions| extensions.set("data", data)),
        None => error,
    }
}

/// The stored node's fields the mutation selects that the caller may read: its scalars, lists
/// of scalars, times and conflict detection's fields (what DataStore selects).
fn conflict_data(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    item: &Item,
    scope: &engine::RequestScope,
) -> async_graphql::Value {
    use async_graphql::Value;
    let mut data = async_graphql::indexmap::IndexMap::new();
    for selected in ctx.field().selection_set() {
        let name = selected.name();
        // A field with rules of its own is there only for those its rules let read it.
        if !scope.may_read_field(&type_def.name, name, item) {
            continue;
        }
        let value = match name {
            "__typename" => Some(Value::from(type_def.name.as_str())),
            engine::SYNC_VERSION => {
                to_graphql(item.get(item.version_attribute()), &ScalarType::Int)
            }
            engine::LAST_CHANGED_AT => Some(Value::from(engine::last_changed_at(item))),
            engine::DELETED => to_graphql(item.get(name), &ScalarType::Boolean),
            _ => match type_def.field(name).map(|field| &field.kind) {
                Some(FieldKind::Scalar { scalar, .. }) => to_graphql(item.get(name), scalar),
                Some(FieldKind::ScalarList { scalar, .. }) => {
                    list_to_graphql(item.get(name), scalar)
                }
                Some(_) => continue,
                // `id` and the times.
                None => to_graphql(item.get(name), &ScalarType::String),
            },
        };
        let key = selected.alias().unwrap_or(name);
        data.insert(async_graphql::Name::new(key), value.unwrap_or(Value::Null));
    }
    Value::Object(data)
}

fn expected_version(value: Option<ValueAccessor<'_>>) -> Result<Option<i64>, EngineError> {
    match value.filter(|v| !v.is_null()) {
        Some(value) => Ok(Some(value.i64()?)),
        None => Ok(None),
    }
}
