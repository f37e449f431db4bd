//! Interfaces and input types as the schema declares them, and the interfaces each `@model`
//! type implements, checked against the type's fields.

use super::{AWS_SCALARS, BUILT_IN_SCALARS, Names, Reader, description, managed_field_type};
use crate::model::{DeclaredField, DeclaredType, ModelError};
use async_graphql_parser::types::{BaseType, TypeDefinition, TypeKind};
use async_graphql_parser::{Pos, Positioned};

impl Reader<'_> {
    /// An interface or an input type: its fields' types are kept as written, after checking
    /// that each names a scalar, an enum or a type `known` accepts.
    pub(super) fn read_declared(
        &self,
        definition: &Positioned<TypeDefinition>,
        known: impl Fn(&str) -> bool,
    ) -> Result<DeclaredType, ModelError> {
        let name = definition.node.name.node.to_string();
        self.refuse_directives(&definition.node.directives)?;
        // (position, field name, type, description, arguments?, default?, directives)
        let fields: Vec<(
            Pos,
            &str,
            &Positioned<async_graphql_parser::types::Type>,
            _,
            bool,
            bool,
            _,
        )> = match &definition.node.kind {
            TypeKind::Interface(kind) => {
                if let Some(other) = kind.implements.first() {
                    return Err(self.error(
                        other.pos,
                        format!(
                            "interface {name}: interfaces implementing interfaces are not supported"
                        ),
                    ));
                }
                kind.fields
                    .iter()
                    .map(|f| {
                        (
                            f.pos,
                            f.node.name.node.as_str(),
                            &f.node.ty,
                            &f.node.description,
                            !f.node.arguments.is_empty(),
                            false,
                            &f.node.directives,
                        )
                    })
                    .collect()
            }
            TypeKind::InputObject(kind) => kind
                .fields
                .iter()
                .map(|f| {
                    (
                        f.pos,
                        f.node.name.node.as_str(),
                        &f.node.ty,
                        &f.node.description,
                        false,
                        f.node.default_value.is_some(),
                        &f.node.directives,
                    )
                })
                .collect(),
            _ => unreachable!("read_declared is only called for interfaces and inputs"),
        };
        let mut declared = Vec::new();
        for (pos, field, ty, field_description, arguments, default, directives) in fields {
            self.refuse_directives(directives)?;
            if arguments {
                return Err(self.error(
                    pos,
                    format!("{name}.{field}: fields of an interface take no arguments here"),
                ));
            }
            if default {
                return Err(self.error(
                    pos,
                    format!("{name}.{field}: default values of input fields are not supported"),
                ));
            }
            if declared.iter().any(|f: &DeclaredField| f.name == field) {
                return Err(self.error(pos, format!("{name}.{field} is declared twice")));
            }
            let element = match &ty.node.base {
                BaseType::Named(element) => element,
                BaseType::List(inner) => match &inner.base {
                    BaseType::Named(element) => element,
                    BaseType::List(_) => {
                        return Err(self.error(
                            ty.pos,
                            format!("{name}.{field}: lists of lists are not supported"),
                        ));
                    }
                },
            };
            let scalar = BUILT_IN_SCALARS.contains(&element.as_str())
                || AWS_SCALARS.iter().any(|(aws, _)| *aws == element.as_str());
            if !scalar && !known(element) {
                return Err(self.error(ty.pos, format!("{name}.{field}: unknown type {element}")));
            }
            declared.push(DeclaredField {
                name: field.to_owned(),
                ty: ty.node.to_string(),
                description: description(field_description.as_ref()),
            });
        }
        Ok(DeclaredType {
            name,
            description: description(definition.node.description.as_ref()),
            fields: declared,
        })
    }

    /// The interfaces `kind` says it implements: each must be declared, and each of its fields
    /// must be a field of the type with the same type as written (`id`, `createdAt`,
    /// `updatedAt` and `version` as @model manages them).
    pub(super) fn check_implements(
        &self,
        name: &str,
        kind: &async_graphql_parser::types::ObjectType,
        names: &Names<'_>,
        timestamps: &crate::model::Timestamps,
    ) -> Result<Vec<String>, ModelError> {
        let mut implements = Vec::new();
        for interface in &kind.implements {
            let interface_name = interface.node.as_str();
            if interface_name == "Node" {
                // Every @model type implements Node already.
                continue;
            }
            let Some(declared) = names.interfaces.iter().find(|i| i.name == interface_name) else {
                return Err(self.error(
                    interface.pos,
                    format!(
                        "type {name} implements {interface_name}, which is not a declared interface"
                    ),
                ));
            };
            for field in &declared.fields {
                let written = kind
                    .fields
                    .iter()
                    .find(|f| f.node.name.node == field.name)
                    .map(|f| f.node.ty.node.to_string());
                // The type's times are its own: renamed, or left out.
                let managed = match field.name.as_str() {
                    name if timestamps.is(name) => Some("AWSDateTime!"),
                    "createdAt" | "updatedAt" => None,
                    name => managed_field_type(name),
                };
                let matches = match &written {
                    Some(written) => *written == field.ty,
                    None => managed == Some(field.ty.as_str()),
                };
                if !matches {
                    return Err(self.error(
                        interface.pos,
                        format!(
                            "type {name} implements {interface_name}, so it needs the field `{}: {}`{}",
                            field.name,
                            field.ty,
                            written
                                .map(|w| format!(", not `{}: {w}`", field.name))
                                .unwrap_or_default()
                        ),
                    ));
                }
            }
            implements.push(interface_name.to_owned());
        }
        Ok(implements)
    }
}
