//! The input types of the mutations: `Create<Type>Input` with the nested inputs of its relation
//! fields, `Update<Type>Input` and `Add<Edge>Input`.

use async_graphql::dynamic::{InputObject, InputValue, TypeRef};

use crate::graphql::values::scalars::{list_type_ref, scalar_type_ref};
use async_graphql::{Name, Value};

use std::collections::BTreeSet;

use crate::model::{
    DeclaredType, EdgeTypeDef, FieldDef, FieldKind, Model, ScalarType, TypeDef, upper_first,
};

/// Every input type of the creates: `Create<Type>Input` for each type, the nested inputs its
/// relation fields take (`<Type>OneInput` for a `@belongsTo`, `<Type>ManyWithout<Key>Input`
/// with `Create<Type>Without<Key>Input` for a `@hasMany`, `<Edge>EdgesInput` with
/// `<Edge>EdgeInput` for an `@outgoing`), each once.
pub(in crate::graphql) fn create_inputs(model: &Model) -> Vec<InputObject> {
    let mut inputs: Vec<InputObject> = Vec::new();
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut add = |input: InputObject, inputs: &mut Vec<InputObject>| {
        if named.insert(input.type_name().to_owned()) {
            inputs.push(input);
        }
    };
    for type_def in &model.types {
        let create = match model.own_input("Create", type_def) {
            Some(declared) => declared_with_keys(declared, type_def),
            None => create_input(model, type_def, None),
        };
        add(create, &mut inputs);
        for field in &type_def.fields {
            match nested(model, field) {
                Some(Nested::One(target)) => add(one_input(target), &mut inputs),
                Some(Nested::Many(element, key)) => {
                    add(create_input(model, element, Some(key)), &mut inputs);
                    add(many_input(element, key), &mut inputs);
                }
                Some(Nested::Edges(edge_def)) => {
                    add(edge_input(edge_def), &mut inputs);
                    add(edges_input(edge_def), &mut inputs);
                }
                None => {}
            }
        }
    }
    inputs
}

/// What a relation field takes in a create's input.
pub(in crate::graphql) enum Nested<'m> {
    /// A `@belongsTo` to one `@model` type: create it or link an existing one.
    One(&'m TypeDef),
    /// A `@hasMany` of one `@model` type, with the key each element stores: create elements or
    /// link existing ones.
    Many(&'m TypeDef, &'m str),
    /// An `@outgoing` edge type: add edges.
    Edges(&'m EdgeTypeDef),
}

/// What the relation `field` takes in a create's input, if anything (nothing in Amplify's
/// strict API, whose creates take keys only).
pub(in crate::graphql) fn nested<'m>(model: &'m Model, field: &'m FieldDef) -> Option<Nested<'m>> {
    if !model.dialect.additions() {
        return None;
    }
    match &field.kind {
        FieldKind::BelongsTo { target, .. } => model.type_def(target).map(Nested::One),
        FieldKind::HasMany(relation) => model
            .type_def(&relation.element)
            .map(|element| Nested::Many(element, relation.foreign_key.as_str())),
        FieldKind::Outgoing { edge, .. } => model.edge_def(edge).map(Nested::Edges),
        _ => None,
    }
}

/// `Create<Type>Input`, or without `key` (and the `@belongsTo` over it) for elements created
/// under a parent that sets it.
fn create_input(model: &Model, type_def: &TypeDef, without: Option<&str>) -> InputObject {
    let name = match without {
        Some(key) => format!("Create{}Without{}Input", type_def.name, upper_first(key)),
        None => format!("Create{}Input", type_def.name),
    };
    let mut input = InputObject::new(name);
    if without.is_none() && model.dialect.amplify_shape() && type_def.primary_key.is_none() {
        input = input.field(
            InputValue::new("id", TypeRef::named(TypeRef::ID))
                .description("The new node's id; a new one when left out."),
        );
    }
    if let Some(key) = without {
        input = input.description(format!(
            "A {} created under its parent, which sets its {key}.",
            type_def.name
        ));
    }
    input = declared_times(model, type_def, input);
    // A key its @belongsTo field can give instead is not required in the input itself.
    let nested_keys: Vec<&str> = type_def
        .fields
        .iter()
        .filter_map(|field| match (&field.kind, nested(model, field)) {
            (FieldKind::BelongsTo { foreign_key, .. }, Some(_)) => Some(foreign_key.as_str()),
            _ => None,
        })
        .collect();
    for field in inputs_fields(model, type_def) {
        match &field.kind {
            FieldKind::Scalar {
                scalar,
                required,
                default,
                ..
            } if Some(field.name.as_str()) != without => {
                let required = *required && !nested_keys.contains(&field.name.as_str());
                let mut value = input_value(field, scalar_type_ref(scalar, required));
                // A default in the input is tablegraph's addition: Amplify's transformer
                // declares the field without it (its resolver fills it in).
                if let Some(default) = default
                    && model.dialect.additions()
                {
                    value = value.default_value(default_value(scalar, default));
                }
                input = input.field(value);
            }
            FieldKind::ScalarList {
                scalar,
                required,
                elements_required,
            } => {
                input = input.field(input_value(
                    field,
                    list_type_ref(scalar, *required, *elements_required),
                ));
            }
            FieldKind::Embedded {
                object,
                required,
                list,
            } => {
                input = input.field(input_value(
                    field,
                    super::embedded::input_type_ref(object, *required, *list),
                ));
            }
            FieldKind::BelongsTo { foreign_key, .. } if Some(foreign_key.as_str()) == without => {}
            _ => {
                let (ty, description) = match nested(model, field) {
                    Some(Nested::One(target)) => (
                        format!("{}OneInput", target.name),
                        format!(
                            "Create the {} with this node, or link an existing one (instead of giving its id).",
                            target.name
                        ),
                    ),
                    Some(Nested::Many(element, key)) => (
                        format!("{}ManyWithout{}Input", element.name, upper_first(key)),
                        format!(
                            "{} created with this node, or existing ones moved under it.",
                            crate::model::plural(&element.name)
                        ),
                    ),
                    Some(Nested::Edges(edge_def)) => (
                        format!("{}EdgesInput", edge_def.name),
                        format!("{} edges from this node, added with it.", edge_def.name),
                    ),
                    None => continue,
                };
                input = input.field(
                    InputValue::new(&field.name, TypeRef::named(ty)).description(description),
                );
            }
        }
    }
    match without {
        None => sync_version(type_def, input),
        Some(_) => input,
    }
}

/// A type that detects conflicts takes `_version` in its create, update and delete inputs, as
/// Amplify's do: the version the client last read (a create's is not read).
fn sync_version(type_def: &TypeDef, input: InputObject) -> InputObject {
    match type_def.conflict.is_some() {
        true => input.field(
            InputValue::new("_version", TypeRef::named(TypeRef::INT))
                .description("The version last read: a stale one is a conflict, which the type's conflict handler resolves."),
        ),
        false => input,
    }
}

/// The fields of `type_def` a create or update takes: in Amplify's API, not those its rules
/// added (the server sets an owner, as Amplify's resolvers do).
fn inputs_fields<'t>(model: &Model, type_def: &'t TypeDef) -> impl Iterator<Item = &'t FieldDef> {
    let amplify = model.dialect.amplify_shape();
    type_def
        .fields
        .iter()
        .filter(move |field| !(amplify && type_def.added.contains(&field.name)))
}

/// In Amplify's API, the times `type_def` declares, optional: given, the node keeps the
/// value given instead of the server's time, as Amplify's resolvers keep it.
fn declared_times(model: &Model, type_def: &TypeDef, mut input: InputObject) -> InputObject {
    if !model.dialect.amplify_shape() {
        return input;
    }
    for (name, how) in &type_def.timestamps.declared {
        input = input.field(
            InputValue::new(name, scalar_type_ref(&how.scalar(), false))
                .description("The server's time when left out."),
        );
    }
    input
}

/// `<Type>OneInput { create: Create<Type>Input, link: ID }`.
fn one_input(target: &TypeDef) -> InputObject {
    let name = &target.name;
    InputObject::new(format!("{name}OneInput"))
        .description(format!(
            "The {name} to create, or the id of an existing one to link: give one of the two."
        ))
        .field(InputValue::new(
            "create",
            TypeRef::named(format!("Create{name}Input")),
        ))
        .field(InputValue::new("link", TypeRef::named(TypeRef::ID)))
}

/// `<Type>ManyWithout<Key>Input { create: [Create<Type>Without<Key>Input!], link: [ID!] }`.
fn many_input(element: &TypeDef, key: &str) -> InputObject {
    let name = &element.name;
    let key_name = upper_first(key);
    InputObject::new(format!("{name}ManyWithout{key_name}Input"))
        .description(format!(
            "{} to create under the new node, and ids of existing ones whose {key} is set to it.",
            crate::model::plural(name)
        ))
        .field(InputValue::new(
            "create",
            TypeRef::named_nn_list(format!("Create{name}Without{key_name}Input")),
        ))
        .field(InputValue::new("link", TypeRef::named_nn_list(TypeRef::ID)))
}

/// `<Edge>EdgeInput { to: ID!, …metadata }`: an edge from a node being created.
fn edge_input(edge_def: &EdgeTypeDef) -> InputObject {
    let mut input = InputObject::new(format!("{}EdgeInput", edge_def.name)).field(
        InputValue::new("to", TypeRef::named_nn(TypeRef::ID))
            .description(format!("The {}.", edge_def.to)),
    );
    for field in &edge_def.fields {
        if let FieldKind::Scalar {
            scalar, required, ..
        } = &field.kind
        {
            input = input.field(InputValue::new(
                &field.name,
                scalar_type_ref(scalar, *required),
            ));
        }
    }
    input
}

/// `<Edge>EdgesInput { add: [<Edge>EdgeInput!]! }`.
fn edges_input(edge_def: &EdgeTypeDef) -> InputObject {
    let name = &edge_def.name;
    InputObject::new(format!("{name}EdgesInput"))
        .description(format!("{name} edges to add from the new node."))
        .field(InputValue::new(
            "add",
            TypeRef::named_nn_list_nn(format!("{name}EdgeInput")),
        ))
}

/// The GraphQL value of a field's `@default(value:)`.
pub(in crate::graphql) fn default_value(scalar: &ScalarType, text: &str) -> Value {
    let number = || -> Option<Value> {
        match scalar {
            ScalarType::Int | ScalarType::AwsTimestamp => text.parse::<i64>().ok().map(Value::from),
            ScalarType::Float => text.parse::<f64>().ok().map(Value::from),
            _ => None,
        }
    };
    match scalar {
        ScalarType::Int | ScalarType::Float | ScalarType::AwsTimestamp => {
            number().unwrap_or(Value::Null)
        }
        ScalarType::Boolean => Value::Boolean(text == "true"),
        ScalarType::Enum(_) => Value::Enum(Name::new(text)),
        _ => Value::String(text.to_owned()),
    }
}

/// Amplify's `Delete<Type>Input`: the id of the node to delete (or its `@primaryKey` field).
pub(in crate::graphql) fn delete_input(type_def: &TypeDef) -> InputObject {
    let input = InputObject::new(format!("Delete{}Input", type_def.name));
    let input = match type_def.primary_key.is_some() {
        true => type_def.key_fields().fold(input, |input, (key, scalar)| {
            input.field(InputValue::new(key, scalar_type_ref(scalar, true)))
        }),
        false => input.field(InputValue::new("id", TypeRef::named_nn(TypeRef::ID))),
    };
    sync_version(type_def, input)
}

/// A model's create or update input as the schema declares it, with the keys of the relations
/// the schema leaves undeclared (`scheduleBookingsId`), which Amplify's transformer adds to it.
fn declared_with_keys(declared: &DeclaredType, type_def: &TypeDef) -> InputObject {
    let mut input = super::declared::input_object(declared);
    let implied = type_def
        .fields
        .iter()
        .filter(|field| type_def.implied.contains(&field.name))
        .filter(|field| !declared.fields.iter().any(|d| d.name == field.name));
    for field in implied {
        if let Some(scalar) = field.scalar() {
            input = input.field(input_value(field, scalar_type_ref(scalar, false)));
        }
    }
    input
}

/// `Update<Type>Input`: the node's `id` (or its `@primaryKey` field, which names it and so
/// cannot change), and each field, optional; or the one the schema declares itself.
pub(in crate::graphql) fn update_input(type_def: &TypeDef, model: &Model) -> InputObject {
    if let Some(declared) = model.own_input("Update", type_def) {
        return declared_with_keys(declared, type_def);
    }
    let mut input = InputObject::new(format!("Update{}Input", type_def.name));
    if type_def.primary_key.is_none() {
        input = input.field(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)));
    }
    input = declared_times(model, type_def, input);
    for field in inputs_fields(model, type_def) {
        if let Some(scalar) = field.scalar() {
            let key = type_def.key_fields().any(|(key, _)| *key == field.name);
            input = input.field(input_value(field, scalar_type_ref(scalar, key)));
        }
        if let FieldKind::ScalarList {
            scalar,
            elements_required,
            ..
        } = &field.kind
        {
            input = input.field(input_value(
                field,
                list_type_ref(scalar, false, *elements_required),
            ));
        }
        if let FieldKind::Embedded { object, list, .. } = &field.kind {
            input = input.field(input_value(
                field,
                super::embedded::input_type_ref(object, false, *list),
            ));
        }
    }
    let input = sync_version(type_def, input);
    // A type that detects conflicts is guarded by `_version` instead.
    if !model.dialect.additions() || type_def.conflict.is_some() {
        return input;
    }
    input.field(
        InputValue::new("expectedVersion", TypeRef::named(TypeRef::INT)).description(
            "Update only if the node's version is still this one; otherwise VersionMismatch.",
        ),
    )
}

/// `AddGoalMembershipInput { from: ID!, to: ID!, …metadata }`.
pub(in crate::graphql) fn add_input(edge_def: &EdgeTypeDef) -> InputObject {
    let mut input = InputObject::new(format!("Add{}Input", edge_def.name))
        .field(
            InputValue::new("from", TypeRef::named_nn(TypeRef::ID))
                .description(format!("The {}.", edge_def.from)),
        )
        .field(
            InputValue::new("to", TypeRef::named_nn(TypeRef::ID))
                .description(format!("The {}.", edge_def.to)),
        );
    for field in &edge_def.fields {
        if let FieldKind::Scalar {
            scalar, required, ..
        } = &field.kind
        {
            input = input.field(InputValue::new(
                &field.name,
                scalar_type_ref(scalar, *required),
            ));
        }
    }
    input
}

fn input_value(field: &FieldDef, ty: TypeRef) -> InputValue {
    let value = InputValue::new(&field.name, ty);
    match &field.description {
        Some(description) => value.description(description),
        None => value,
    }
}
