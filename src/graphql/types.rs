//! The object, union, enum, scalar and input types of the generated API, one set per `@model`
//! type, with the resolvers of their fields.

use std::sync::Arc;

use async_graphql::dynamic::{
    Enum, Field, FieldFuture, FieldValue, InputObject, InputValue, Interface, InterfaceField,
    Object, Scalar, SchemaBuilder, TypeRef, Union,
};

use super::{ApiError, NodeValue, connection, edges, load_node, node_field_value, scope, values};
use crate::model::{FieldDef, FieldKind, Model, ScalarType, TypeDef};
use crate::resolvers::Resolvers;
use crate::store::AttrValue;

pub(super) fn register(
    mut builder: SchemaBuilder,
    model: &Arc<Model>,
    resolvers: &Resolvers,
) -> SchemaBuilder {
    builder = builder.register(
        Scalar::new("AWSDateTime")
            .description("An RFC 3339 timestamp, such as 2024-05-01T12:00:00Z.")
            .validator(values::is_aws_date_time),
    );
    if uses_scalar(model, &ScalarType::AwsDate) {
        builder = builder.register(
            Scalar::new("AWSDate")
                .description("A calendar date, YYYY-MM-DD.")
                .validator(values::is_aws_date),
        );
    }
    if uses_scalar(model, &ScalarType::AwsEmail) {
        builder = builder.register(
            Scalar::new("AWSEmail")
                .description("An email address.")
                .validator(values::is_aws_email),
        );
    }
    builder = builder.register(
        Interface::new("Node")
            .description("An object with a global id, fetched with `node(id:)`.")
            .field(InterfaceField::new("id", TypeRef::named_nn(TypeRef::ID))),
    );
    builder = builder.register(connection::page_info());
    for enum_def in &model.enums {
        let mut ty =
            Enum::new(&enum_def.name).items(enum_def.values.iter().map(|v| v.name.as_str()));
        if let Some(description) = &enum_def.description {
            ty = ty.description(description);
        }
        builder = builder.register(ty);
    }
    for union in &model.unions {
        let mut ty = Union::new(&union.name);
        for member in &union.members {
            ty = ty.possible_type(member);
        }
        if let Some(description) = &union.description {
            ty = ty.description(description);
        }
        builder = builder.register(ty);
    }
    // Connection types, each registered once however many fields return it.
    let mut connected: Vec<String> = Vec::new();
    for type_def in &model.types {
        builder = builder
            .register(object(type_def, model, resolvers))
            .register(create_input(type_def))
            .register(update_input(type_def));
        for field in &type_def.fields {
            let objects = match &field.kind {
                FieldKind::HasMany(has_many) => {
                    let element = &has_many.element;
                    let is_union = model.union_def(element).is_some();
                    (
                        format!("{element}Connection"),
                        format!("{element}Edge"),
                        element.clone(),
                        is_union,
                        None,
                    )
                }
                FieldKind::Outgoing { edge, element } => {
                    let edge_def = model.edge_def(edge).expect("the model checked edge names");
                    let is_union = model.union_def(element).is_some();
                    (
                        format!("{edge}Connection"),
                        format!("{edge}Edge"),
                        element.clone(),
                        is_union,
                        Some(edge_def.fields.as_slice()),
                    )
                }
                FieldKind::Incoming { edge, element } => {
                    let edge_def = model.edge_def(edge).expect("the model checked edge names");
                    (
                        format!("{edge}InverseConnection"),
                        format!("{edge}InverseEdge"),
                        element.clone(),
                        false,
                        Some(edge_def.fields.as_slice()),
                    )
                }
                _ => continue,
            };
            let (name, edge_name, node_type, is_union, metadata) = objects;
            if !connected.contains(&name) {
                let [connection, edge] =
                    connection::objects(&name, &edge_name, &node_type, is_union, metadata);
                builder = builder.register(connection).register(edge);
                connected.push(name);
            }
        }
    }
    for edge_def in &model.edges {
        builder = builder
            .register(edges::edge_object(edge_def, model))
            .register(edges::add_input(edge_def));
    }
    builder
}

fn uses_scalar(model: &Model, wanted: &ScalarType) -> bool {
    model
        .types
        .iter()
        .flat_map(|t| &t.fields)
        .chain(model.edges.iter().flat_map(|e| &e.fields))
        .any(|f| {
            f.scalar() == Some(wanted)
                || matches!(&f.kind, FieldKind::Custom(custom)
                    if std::iter::once(&custom.element)
                        .chain(custom.arguments.iter().map(|a| &a.element))
                        .any(|name| scalar_named(name) == Some(wanted)))
        })
}

/// The AppSync scalar a type name names.
fn scalar_named(name: &str) -> Option<&'static ScalarType> {
    match name {
        "AWSDate" => Some(&ScalarType::AwsDate),
        "AWSDateTime" => Some(&ScalarType::AwsDateTime),
        "AWSEmail" => Some(&ScalarType::AwsEmail),
        _ => None,
    }
}

pub(super) fn scalar_type_name(scalar: &ScalarType) -> &str {
    match scalar {
        ScalarType::Id => TypeRef::ID,
        ScalarType::String => TypeRef::STRING,
        ScalarType::Int => TypeRef::INT,
        ScalarType::Float => TypeRef::FLOAT,
        ScalarType::Boolean => TypeRef::BOOLEAN,
        ScalarType::AwsDate => "AWSDate",
        ScalarType::AwsDateTime => "AWSDateTime",
        ScalarType::AwsEmail => "AWSEmail",
        ScalarType::Enum(name) => name,
    }
}

fn type_ref(name: &str, required: bool) -> TypeRef {
    if required {
        TypeRef::named_nn(name)
    } else {
        TypeRef::named(name)
    }
}

/// A field that reads one stored attribute of the parent node.
fn stored_field(name: &str, scalar: ScalarType, required: bool) -> Field {
    attribute_field::<NodeValue>(name, scalar, required, |node| Some(&node.item))
}

/// A field that reads one stored attribute of the item held by its parent value, a `P`: a node,
/// an edge item, a Relay edge.
pub(super) fn attribute_field<P: std::any::Any>(
    name: &str,
    scalar: ScalarType,
    required: bool,
    item_of: fn(&P) -> Option<&crate::store::Item>,
) -> Field {
    let attribute = name.to_owned();
    let ty = type_ref(scalar_type_name(&scalar), required);
    Field::new(name, ty, move |ctx| {
        let value = ctx
            .parent_value
            .downcast_ref::<P>()
            .and_then(item_of)
            .and_then(|item| values::to_graphql(item.get(&attribute), &scalar));
        FieldFuture::from_value(value)
    })
}

fn object(type_def: &TypeDef, model: &Arc<Model>, resolvers: &Resolvers) -> Object {
    let mut object = Object::new(&type_def.name)
        .implement("Node")
        .field(stored_field("id", ScalarType::Id, true));
    if let Some(description) = &type_def.description {
        object = object.description(description);
    }
    for field in &type_def.fields {
        let pipeline = resolvers.get(&type_def.name, &field.name);
        let mut generated = match &field.kind {
            _ if pipeline.is_some() => {
                super::custom::field(field, pipeline.cloned().expect("checked just above"))
            }
            FieldKind::Custom(_) => super::custom::missing(field),
            FieldKind::Scalar {
                scalar, required, ..
            } => stored_field(&field.name, scalar.clone(), *required),
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
            } => edges::targets_field(field, edge, element, role.as_deref(), model),
        };
        if let Some(description) = &field.description {
            generated = generated.description(description);
        }
        object = object.field(generated);
    }
    object
        .field(
            stored_field("createdAt", ScalarType::AwsDateTime, true)
                .description("When the node was created."),
        )
        .field(
            stored_field("updatedAt", ScalarType::AwsDateTime, true)
                .description("When the node was last changed."),
        )
        .field(
            stored_field("version", ScalarType::Int, true)
                .description("Starts at 1 and grows with every update; pass it as `expectedVersion` to update only what you read."),
        )
}

/// `@belongsTo`: the node whose id the parent stores in `foreign_key`. Nullable in the API even
/// when declared non-null, because the node it points to may since have been deleted.
fn belongs_to_field(field: &FieldDef, target: &str, foreign_key: &str, model: &Model) -> Field {
    let allowed: Arc<Vec<String>> = Arc::new(
        model
            .possible_types(target)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    );
    let foreign_key = foreign_key.to_owned();
    let is_union = model.union_def(target).is_some();
    Field::new(&field.name, TypeRef::named(target), move |ctx| {
        let allowed = allowed.clone();
        let foreign_key = foreign_key.clone();
        FieldFuture::new(async move {
            let id = ctx
                .parent_value
                .downcast_ref::<NodeValue>()
                .and_then(|node| node.item.get(&foreign_key))
                .and_then(AttrValue::as_str)
                .map(str::to_owned);
            let Some(id) = id else { return Ok(None) };
            let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
            let scope = scope(&ctx).map_err(ApiError::into_graphql)?;
            let node = load_node(scope, &id, &allowed)
                .await
                .map_err(ApiError::into_graphql)?;
            if let Some(node) = &node {
                let model = super::model(&ctx).map_err(ApiError::into_graphql)?;
                super::prefetch::relations(scope, model, &[node], &ctx.look_ahead())
                    .await
                    .map_err(ApiError::into_graphql)?;
            }
            Ok(node.map(|node| node_field_value(node, is_union)))
        })
    })
}

fn create_input(type_def: &TypeDef) -> InputObject {
    let mut input = InputObject::new(format!("Create{}Input", type_def.name));
    for field in &type_def.fields {
        if let FieldKind::Scalar {
            scalar, required, ..
        } = &field.kind
        {
            input = input.field(input_value(
                field,
                type_ref(scalar_type_name(scalar), *required),
            ));
        }
    }
    input
}

fn update_input(type_def: &TypeDef) -> InputObject {
    let mut input = InputObject::new(format!("Update{}Input", type_def.name))
        .field(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)));
    for field in &type_def.fields {
        if let Some(scalar) = field.scalar() {
            input = input.field(input_value(field, TypeRef::named(scalar_type_name(scalar))));
        }
    }
    input.field(
        InputValue::new("expectedVersion", TypeRef::named(TypeRef::INT)).description(
            "Update only if the node's version is still this one; otherwise VersionMismatch.",
        ),
    )
}

fn input_value(field: &FieldDef, ty: TypeRef) -> InputValue {
    let value = InputValue::new(&field.name, ty);
    match &field.description {
        Some(description) => value.description(description),
        None => value,
    }
}

/// The field value for a list of nodes, nulls kept in place.
pub(super) fn node_list(nodes: Vec<Option<NodeValue>>) -> FieldValue<'static> {
    FieldValue::list(nodes.into_iter().map(|node| {
        node.map_or_else(super::null_items::missing_node, |node| {
            node_field_value(node, true)
        })
    }))
}
