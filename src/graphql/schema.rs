//! Registers every type of the generated API with the schema builder: the scalars, `Node`,
//! `PageInfo`, the model's enums and unions, each `@model` type's object and inputs, each
//! connection type once however many fields return it, and each `@edge` type.

use std::sync::Arc;

use async_graphql::dynamic::{Enum, Interface, InterfaceField, SchemaBuilder, TypeRef, Union};

use super::types::amplify;
use super::types::connection;
use super::types::declared;
use super::types::edge_types;
use super::types::embedded;
use super::types::inputs;
use super::types::objects;
use super::types::own_fields;
use super::values::filters::{self, FilterKind};
use super::values::key_conditions;
use super::values::scalars;
use crate::engine::read::{Connection, KeyField, KeyKind};
use crate::model::{ApiShape, FieldKind, Model, TypeDef};
use crate::resolvers::Resolvers;

pub(super) fn register(
    mut builder: SchemaBuilder,
    model: &Arc<Model>,
    resolvers: &Resolvers,
) -> SchemaBuilder {
    builder = scalars::register(builder, model);
    if model.dialect.additions() {
        builder = builder
            .register(
                Interface::new("Node")
                    .description("An object with a global id, fetched with `node(id:)`.")
                    .field(InterfaceField::new("id", TypeRef::named_nn(TypeRef::ID))),
            )
            .register(connection::page_info());
    }
    builder = embedded::register(builder, model, own_fields::object_field);
    builder = declared::register(builder, model);
    builder = register_enums_and_unions(builder, model);
    let filtered: Vec<(String, crate::model::ScalarType)> = model
        .types
        .iter()
        .flat_map(filters::node_filter_fields)
        .chain(model.edges.iter().flat_map(filters::edge_filter_fields))
        .collect();
    builder = filters::register_field_inputs(
        builder,
        FilterKind::Condition,
        filtered.iter().map(|(_, scalar)| scalar),
        filters::Style::of(&model.dialect),
    );
    builder = register_sorting(builder, model);
    builder = crate::graphql::types::search::register(builder, model);
    // Each connection type once, by the first field or root that answers it.
    let mut connected: Vec<String> = Vec::new();
    for type_def in &model.types {
        builder = register_model_type(builder, model, type_def, resolvers);
        builder = register_relation_connections(builder, model, type_def, &mut connected);
    }
    builder = register_root_connections(builder, model, &mut connected);
    for input in inputs::create_inputs(model) {
        builder = builder.register(input);
    }
    register_edge_types(builder, model)
}

/// The model's enums and unions, as declared.
fn register_enums_and_unions(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
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
    builder
}

/// A `@model` type's object, its update (and, in Amplify's shape, delete) input, and its
/// condition and page filter inputs.
fn register_model_type(
    mut builder: SchemaBuilder,
    model: &Arc<Model>,
    type_def: &TypeDef,
    resolvers: &Resolvers,
) -> SchemaBuilder {
    if model.dialect.shape == ApiShape::Amplify && type_def.roots.delete.is_some() {
        builder = builder.register(inputs::delete_input(type_def));
    }
    // Amplify's transformer declares the update input with the update mutation only.
    if model.dialect.shape != ApiShape::Amplify || type_def.roots.update.is_some() {
        builder = builder.register(inputs::update_input(type_def, model));
    }
    builder
        .register(objects::object(type_def, model, resolvers))
        .register(filters::filter_input(
            &format!("Model{}ConditionInput", type_def.name),
            &filters::declared_fields(
                filters::condition_fields(type_def),
                type_def,
                &model.dialect,
                true,
            ),
            FilterKind::Condition,
            filters::Style::of(&model.dialect),
            &[],
        ))
        .register(filters::filter_input(
            &filters::page_filter_name(&type_def.name),
            &filters::declared_fields(
                filters::node_filter_fields(type_def),
                type_def,
                &model.dialect,
                false,
            ),
            FilterKind::Condition,
            filters::Style::of(&model.dialect),
            &[],
        ))
}

/// The connection and edge types of `type_def`'s relation and edge fields not `connected` yet.
fn register_relation_connections(
    mut builder: SchemaBuilder,
    model: &Model,
    type_def: &TypeDef,
    connected: &mut Vec<String>,
) -> SchemaBuilder {
    let shape = model.dialect.shape;
    for field in &type_def.fields {
        if let (FieldKind::HasMany(has_many), ApiShape::Amplify) = (&field.kind, shape) {
            let name = amplify::connection_type(shape, &has_many.element);
            if !connected.contains(&name) {
                let is_union = model.union_def(&has_many.element).is_some();
                let synced = model
                    .type_def(&has_many.element)
                    .is_some_and(|element| element.conflict.is_some());
                builder = builder.register(amplify::connection_object(
                    &name,
                    &has_many.element,
                    is_union,
                    synced,
                ));
                connected.push(name);
            }
            continue;
        }
        let Some((name, edge_name)) = connection::type_names(field) else {
            continue;
        };
        if connected.contains(&name) {
            continue;
        }
        let (node_type, is_union, metadata) = match &field.kind {
            FieldKind::HasMany(has_many) => (
                &has_many.element,
                model.union_def(&has_many.element).is_some(),
                None,
            ),
            FieldKind::Outgoing { edge, element } | FieldKind::Incoming { edge, element } => {
                let edge_def = model.edge_def(edge).expect("the model checked edge names");
                // An inverse connection's nodes are the edge's sources, never a union.
                let is_union = matches!(field.kind, FieldKind::Outgoing { .. })
                    && model.union_def(element).is_some();
                (element, is_union, Some(edge_def.fields.as_slice()))
            }
            _ => continue,
        };
        let [connection, edge] =
            connection::objects(&name, &edge_name, node_type, is_union, metadata);
        builder = builder.register(connection).register(edge);
        connected.push(name);
    }
    builder
}

/// The connection types of `list<Types>` and of index queries, where no relation made them
/// already.
fn register_root_connections(
    mut builder: SchemaBuilder,
    model: &Model,
    connected: &mut Vec<String>,
) -> SchemaBuilder {
    let shape = model.dialect.shape;
    for type_def in model
        .types
        .iter()
        .filter(|t| t.list.is_some() || !t.indexes.is_empty())
    {
        let name = amplify::connection_type(shape, &type_def.name);
        if connected.contains(&name) {
            continue;
        }
        if shape == ApiShape::Amplify {
            let synced = type_def.conflict.is_some();
            builder = builder.register(amplify::connection_object(
                &name,
                &type_def.name,
                false,
                synced,
            ));
            connected.push(name);
            continue;
        }
        let edge_name = format!("{}Edge", type_def.name);
        let [connection, edge] =
            connection::objects(&name, &edge_name, &type_def.name, false, None);
        // Index queries answer `<Type>IndexConnection`, of the same edges.
        if type_def.list.is_some() {
            builder = builder.register(connection);
        }
        builder = builder.register(edge);
        connected.push(name);
    }
    if shape == ApiShape::Relay {
        for type_def in model.types.iter().filter(|t| !t.indexes.is_empty()) {
            builder = builder.register(connection::index_connection_object(&type_def.name));
        }
    }
    builder
}

/// Each `@edge` type's object, its `Add<Edge>Input` and its page filter.
fn register_edge_types(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
    for edge_def in &model.edges {
        builder = builder
            .register(edge_types::edge_object(edge_def, model))
            .register(inputs::add_input(edge_def))
            .register(filters::filter_input(
                &filters::page_filter_name(&edge_def.name),
                &filters::edge_filter_fields(edge_def),
                FilterKind::Condition,
                filters::Style::of(&model.dialect),
                &[],
            ));
    }
    builder
}

/// `ModelSortDirection`, and the key-condition inputs the model's connections take (only those,
/// so the schema holds no type nothing uses).
fn register_sorting(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
    let connections: Vec<Connection> = model
        .types
        .iter()
        .flat_map(|owner| {
            owner
                .fields
                .iter()
                .filter_map(move |field| Connection::of(owner, field, model))
                .chain(
                    owner
                        .indexes
                        .iter()
                        .map(move |index| Connection::of_index(owner, index)),
                )
        })
        .collect();
    if connections.is_empty() && model.types.iter().all(|t| t.list.is_none()) {
        // Amplify's transformer declares the enum whatever the schema holds.
        if model.dialect.amplify_shape() {
            builder = builder.register(key_conditions::sort_direction());
        }
        return builder;
    }
    builder = builder.register(key_conditions::sort_direction());
    let list_keys: Vec<KeyKind> = model
        .types
        .iter()
        .filter_map(|t| crate::engine::read::list_key_field(t).map(|f| f.kind))
        .collect();
    for kind in key_conditions::KINDS {
        let used = connections.iter().any(|c| {
            c.key_field
                .as_ref()
                .is_some_and(|f| f.kind == kind && f.parts.is_empty())
        }) || list_keys.contains(&kind);
        if used {
            builder = builder.register(key_conditions::input(kind, model.dialect.amplify_shape()));
        }
    }
    // The conditions of composite sort keys, one pair of inputs each.
    for type_def in &model.types {
        // Those of the indexes a query reads: by its own field, or a composite primary key's
        // by Amplify's list; transformer v1 declared them for every index.
        let read = |index: &&crate::model::IndexDef| {
            index.query_field.is_some()
                || model.dialect.v1_api()
                || (model.dialect.amplify_shape()
                    && type_def.roots.list.is_some()
                    && type_def.primary_index() == Some(*index))
        };
        for index in type_def.indexes.iter().filter(read) {
            if let Some(key_field) =
                KeyField::of(&index.sort_fields).filter(|f| !f.parts.is_empty())
            {
                for input in
                    key_conditions::composite_inputs(&type_def.name, &index.name, &key_field)
                {
                    builder = builder.register(input);
                }
            }
        }
    }
    builder
}
