//! The interfaces a schema declares for itself, registered as written. Models implement them
//! (the model checked that their fields match), so clients can select through them
//! (`... on Named { name }`). Declared input types are read and checked only: no field takes
//! them, and GraphQL's introspection hides a type nothing reaches.

use async_graphql::dynamic::{Interface, InterfaceField, SchemaBuilder};

use super::custom::type_ref;
use crate::model::Model;

pub(super) fn register(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
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
    // Every field's arguments are generated, so no field could take a declared input type:
    // they are read and checked, and left out of the API, as introspection would hide them.
    for input in &model.inputs {
        tracing::info!(
            input = %input.name,
            "a declared input type no field takes is left out of the API"
        );
    }
    builder
}
