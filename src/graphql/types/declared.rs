//! The interfaces a schema declares for itself, registered as written. Models implement them
//! (the model checked that their fields match), so clients can select through them
//! (`... on Named { name }`). Declared input types are registered in Amplify's shape, as
//! AppSync serves every type its schema declares, and otherwise when a field functions answer
//! takes one (all of them then, as they may take each other); else no field takes them, and
//! they are left out as GraphQL's introspection would hide a type nothing reaches. The
//! inputs `@http` generates for its fields are registered with them.

use async_graphql::dynamic::{InputObject, InputValue, Interface, InterfaceField, SchemaBuilder};

use super::custom::type_ref;
use crate::model::{DeclaredType, Model};

pub(in crate::graphql) fn register(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
    for interface in &model.interfaces {
        let mut ty = Interface::new(&interface.name);
        if let Some(description) = &interface.description {
            ty = ty.description(description);
        }
        for field in &interface.fields {
            let mut declared = InterfaceField::new(&field.name, type_ref(&field.ty));
            if let Some(description) = &field.description {
                declared = declared.description(description);
            }
            ty = ty.field(declared);
        }
        builder = builder.register(ty);
    }
    let taken = model.computed_fields().any(|computed| {
        computed.field.arguments.iter().any(|argument| {
            model
                .inputs
                .iter()
                .any(|input| input.name == argument.element)
        })
    });
    // The inputs Amplify's `@http` generates for its fields' `params`, `query` and `body`.
    let generated = model
        .computed_fields()
        .flat_map(|computed| computed.http.map(|call| &call.inputs));
    for input in generated.flatten() {
        builder = builder.register(input_object(input));
    }
    // A model's own create or update input is registered in place of the generated one.
    for input in model.inputs.iter().filter(|i| !model.is_own_input(&i.name)) {
        // AppSync serves every input type its schema declares.
        if !taken && !model.dialect.amplify_shape() {
            tracing::info!(
                input = %input.name,
                "a declared input type no field takes is left out of the API"
            );
            continue;
        }
        builder = builder.register(input_object(input));
    }
    builder
}

/// The input type the schema declares, as declared.
pub(in crate::graphql) fn input_object(input: &DeclaredType) -> InputObject {
    let mut ty = InputObject::new(&input.name);
    if let Some(description) = &input.description {
        ty = ty.description(description);
    }
    for field in &input.fields {
        let mut declared = InputValue::new(&field.name, type_ref(&field.ty));
        if let Some(description) = &field.description {
            declared = declared.description(description);
        }
        ty = ty.field(declared);
    }
    ty
}
