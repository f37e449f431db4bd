//! The input types of the mutations: `Create<Type>Input`, `Update<Type>Input` and
//! `Add<Edge>Input`.

use async_graphql::dynamic::{InputObject, InputValue, TypeRef};

use super::scalars::scalar_type_ref;
use async_graphql::{Name, Value};

use crate::model::{EdgeTypeDef, FieldDef, FieldKind, ScalarType, TypeDef};

pub(super) fn create_input(type_def: &TypeDef) -> InputObject {
    let mut input = InputObject::new(format!("Create{}Input", type_def.name));
    for field in &type_def.fields {
        if let FieldKind::Scalar {
            scalar,
            required,
            default,
            ..
        } = &field.kind
        {
            let mut value = input_value(field, scalar_type_ref(scalar, *required));
            if let Some(default) = default {
                value = value.default_value(default_value(scalar, default));
            }
            input = input.field(value);
        }
    }
    input
}

/// The GraphQL value of a field's `@default(value:)`.
pub(super) fn default_value(scalar: &ScalarType, text: &str) -> Value {
    let number = || -> Option<Value> {
        match scalar {
            ScalarType::Int => text.parse::<i64>().ok().map(Value::from),
            ScalarType::Float => text.parse::<f64>().ok().map(Value::from),
            _ => None,
        }
    };
    match scalar {
        ScalarType::Int | ScalarType::Float => number().unwrap_or(Value::Null),
        ScalarType::Boolean => Value::Boolean(text == "true"),
        ScalarType::Enum(_) => Value::Enum(Name::new(text)),
        _ => Value::String(text.to_owned()),
    }
}

pub(super) fn update_input(type_def: &TypeDef) -> InputObject {
    let mut input = InputObject::new(format!("Update{}Input", type_def.name))
        .field(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)));
    for field in &type_def.fields {
        if let Some(scalar) = field.scalar() {
            input = input.field(input_value(field, scalar_type_ref(scalar, false)));
        }
    }
    input.field(
        InputValue::new("expectedVersion", TypeRef::named(TypeRef::INT)).description(
            "Update only if the node's version is still this one; otherwise VersionMismatch.",
        ),
    )
}

/// `AddGoalMembershipInput { from: ID!, to: ID!, …metadata }`.
pub(super) fn add_input(edge_def: &EdgeTypeDef) -> InputObject {
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
