//! Object types without `@model` (AppSync's non-model types): an output object and a
//! `<Type>Input` for each, and the conversion of their values, which are stored as maps (and
//! lists of maps) inside the node that holds them.

use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputObject, InputValue, Object, SchemaBuilder, TypeRef,
};

use super::fields::{attribute_field, list_attribute_field};
use crate::engine::EngineError;
use crate::engine::read::Node;
use crate::engine::{AttrValue, Item};
use crate::graphql::values::scalars::{list_type_ref, scalar_type_ref};
use crate::graphql::values::{from_input, list_from_input};
use crate::model::{FieldDef, FieldKind, Model, ObjectDef};

/// A stored value of a non-model object type: the map it is stored as.
pub(in crate::graphql) struct Embedded(pub Item);

/// How a field of a non-model type that functions answer is made (`own_fields`).
pub(in crate::graphql) type ComputedField = fn(&ObjectDef, &FieldDef, &Arc<Model>) -> Field;

/// Registers each non-model object type's object and input; `computed` makes the fields that
/// functions answer.
pub(in crate::graphql) fn register(
    mut builder: SchemaBuilder,
    model: &Arc<Model>,
    computed: ComputedField,
) -> SchemaBuilder {
    let stored = stored_objects(model);
    for object_def in &model.objects {
        builder = builder.register(object(object_def, model, computed));
        // Amplify declares the input of a non-model type only where a model's field holds it.
        if !model.dialect.amplify_shape() || stored.contains(&object_def.name.as_str()) {
            builder = builder.register(input(object_def));
        }
    }
    builder
}

/// The non-model types a model type's fields hold, directly or inside one another.
fn stored_objects(model: &Model) -> Vec<&str> {
    let held = |fields: &'_ [crate::model::FieldDef]| -> Vec<String> {
        fields
            .iter()
            .filter_map(|field| match &field.kind {
                FieldKind::Embedded { object, .. } => Some(object.clone()),
                _ => None,
            })
            .collect()
    };
    let mut pending: Vec<String> = model.types.iter().flat_map(|t| held(&t.fields)).collect();
    let mut stored: Vec<&str> = Vec::new();
    while let Some(name) = pending.pop() {
        let Some(object_def) = model.objects.iter().find(|o| o.name == name) else {
            continue;
        };
        if !stored.contains(&object_def.name.as_str()) {
            stored.push(&object_def.name);
            pending.extend(held(&object_def.fields));
        }
    }
    stored
}

fn object(object_def: &ObjectDef, model: &Arc<Model>, computed: ComputedField) -> Object {
    let mut object = Object::new(&object_def.name);
    if let Some(description) = &object_def.description {
        object = object.description(description);
    }
    for field in &object_def.fields {
        let item_of: fn(&Embedded) -> Option<&Item> = |value| Some(&value.0);
        let mut generated = match &field.kind {
            FieldKind::Scalar {
                scalar, required, ..
            } => attribute_field::<Embedded>(&field.name, scalar.clone(), *required, item_of),
            FieldKind::ScalarList {
                scalar,
                required,
                elements_required,
            } => list_attribute_field::<Embedded>(
                &field.name,
                scalar.clone(),
                *required,
                *elements_required,
                item_of,
            ),
            FieldKind::Embedded {
                object,
                required,
                list,
            } => embedded_field::<Embedded>(&field.name, object, *required, *list, item_of),
            // Its description is set there.
            FieldKind::Function { .. } => {
                object = object.field(computed(object_def, field, model));
                continue;
            }
            _ => unreachable!("the model holds values only in non-model types"),
        };
        if let Some(description) = &field.description {
            generated = generated.description(description);
        }
        object = object.field(generated);
    }
    object
}

fn input(object_def: &ObjectDef) -> InputObject {
    let mut input = InputObject::new(input_name(&object_def.name));
    if let Some(description) = &object_def.description {
        input = input.description(description);
    }
    // A computed field is no part of the stored value.
    let stored = object_def
        .fields
        .iter()
        .filter(|field| !matches!(field.kind, FieldKind::Function { .. }));
    for field in stored {
        let ty = match &field.kind {
            FieldKind::Scalar {
                scalar, required, ..
            } => scalar_type_ref(scalar, *required),
            FieldKind::ScalarList {
                scalar,
                required,
                elements_required,
            } => list_type_ref(scalar, *required, *elements_required),
            FieldKind::Embedded {
                object,
                required,
                list,
            } => input_type_ref(object, *required, *list),
            _ => unreachable!("the model holds values only in non-model types"),
        };
        let mut value = InputValue::new(&field.name, ty);
        if let Some(description) = &field.description {
            value = value.description(description);
        }
        input = input.field(value);
    }
    input
}

fn input_name(object: &str) -> String {
    format!("{object}Input")
}

/// The type a field holding `object` (or a list of them) has in an output object.
fn type_ref(name: &str, required: bool, list: Option<bool>) -> TypeRef {
    match (list, required) {
        (None, false) => TypeRef::named(name),
        (None, true) => TypeRef::named_nn(name),
        (Some(false), false) => TypeRef::named_list(name),
        (Some(true), false) => TypeRef::named_nn_list(name),
        (Some(false), true) => TypeRef::named_list_nn(name),
        (Some(true), true) => TypeRef::named_nn_list_nn(name),
    }
}

/// The type of an input field holding `object` values.
pub(in crate::graphql) fn input_type_ref(
    object: &str,
    required: bool,
    list: Option<bool>,
) -> TypeRef {
    type_ref(&input_name(object), required, list)
}

/// A field holding a non-model object (or a list of them) stored under its name in the item
/// `item_of` finds in the parent value, a `P`.
pub(in crate::graphql) fn embedded_field<P: std::any::Any>(
    name: &str,
    object: &str,
    required: bool,
    list: Option<bool>,
    item_of: fn(&P) -> Option<&Item>,
) -> Field {
    let attribute = name.to_owned();
    Field::new(name, type_ref(object, required, list), move |ctx| {
        let stored = ctx
            .parent_value
            .downcast_ref::<P>()
            .and_then(item_of)
            .and_then(|item| item.get(&attribute))
            .cloned();
        let value = embedded_value(stored);
        FieldFuture::new(async move { Ok(value) })
    })
}

/// The GraphQL value of a stored map (or list of maps) of a non-model object.
pub(in crate::graphql) fn embedded_value(stored: Option<AttrValue>) -> Option<FieldValue<'static>> {
    match stored {
        Some(AttrValue::M(map)) => Some(FieldValue::owned_any(Embedded(map))),
        Some(AttrValue::L(values)) => {
            Some(FieldValue::list(values.into_iter().map(
                |value| match value {
                    AttrValue::M(map) => FieldValue::owned_any(Embedded(map)),
                    _ => FieldValue::NULL,
                },
            )))
        }
        _ => None,
    }
}

/// The type of a field holding `object` values.
pub(in crate::graphql) fn output_type_ref(
    object: &str,
    required: bool,
    list: Option<bool>,
) -> TypeRef {
    type_ref(object, required, list)
}

/// A field of a node holding a non-model object.
pub(in crate::graphql) fn node_field(
    name: &str,
    object: &str,
    required: bool,
    list: Option<bool>,
) -> Field {
    embedded_field::<Node>(name, object, required, list, |node| Some(&node.item))
}

/// A client's value for `field`, a field holding `object` values (or a list of them), as a
/// stored map (or list of maps); `None` for null.
pub(in crate::graphql) fn embedded_from_input(
    model: &Model,
    object: &str,
    list: Option<bool>,
    value: &Value,
    field: &str,
) -> Result<Option<AttrValue>, EngineError> {
    if *value == Value::Null {
        return Ok(None);
    }
    let object_def = model.object_def(object).ok_or(EngineError::Internal)?;
    if list.is_none() {
        return map_from_input(model, object_def, value, field).map(Some);
    }
    let values = match value {
        Value::List(values) => values.as_slice(),
        other => std::slice::from_ref(other),
    };
    let mut stored = Vec::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        let path = format!("{field}[{index}]");
        stored.push(match value {
            Value::Null => AttrValue::Null,
            value => map_from_input(model, object_def, value, &path)?,
        });
    }
    Ok(Some(AttrValue::L(stored)))
}

fn map_from_input(
    model: &Model,
    object_def: &ObjectDef,
    value: &Value,
    path: &str,
) -> Result<AttrValue, EngineError> {
    let Value::Object(given) = value else {
        return Err(EngineError::bad_input(format!(
            "{path}: expected a {} object",
            object_def.name
        )));
    };
    let mut map = crate::engine::Item::default();
    for field in &object_def.fields {
        let Some(value) = given.get(field.name.as_str()) else {
            continue;
        };
        let at = format!("{path}.{}", field.name);
        let stored = match &field.kind {
            FieldKind::Scalar { scalar, .. } => from_input(value, scalar, &at)?,
            FieldKind::ScalarList { scalar, .. } => list_from_input(value, scalar, &at)?,
            FieldKind::Embedded { object, list, .. } => {
                embedded_from_input(model, object, *list, value, &at)?
            }
            _ => return Err(EngineError::Internal),
        };
        if let Some(stored) = stored {
            map.insert(field.name.clone(), stored);
        }
    }
    Ok(AttrValue::M(map))
}
