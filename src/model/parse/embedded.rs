//! Object types without `@model`: embedded types, whose values are stored inside the node
//! that holds them, and so take no directives of their own but AppSync's auth modes.

use super::{Names, Reader, description};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{FieldDef, FieldKind, ModelError, ObjectDef};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::{
    BaseType, ConstDirective, FieldDefinition, ObjectType, TypeDefinition, TypeKind,
};
use async_graphql_value::Name;

/// Whether a directive is none of AppSync's auth modes.
fn not_appsync(directive: &&Positioned<ConstDirective>) -> bool {
    !APPSYNC_DIRECTIVES.contains(&directive.node.name.node.as_str())
}

impl Reader<'_> {
    /// An object type without `@model`: its fields hold scalars, enum values, lists of them and
    /// other such objects, stored inside the node that holds the value.
    pub(super) fn read_embedded(
        &self,
        definition: &Positioned<TypeDefinition>,
        names: &Names<'_>,
    ) -> Result<ObjectDef, ModelError> {
        let name = definition.node.name.node.to_string();
        let TypeKind::Object(kind) = &definition.node.kind else {
            unreachable!("read_embedded is only called for object types");
        };
        self.read_embedded_auth(definition, kind, &name)?;
        self.an_embedded_type_takes_no_model_directives(definition, &name)?;
        self.an_embedded_type_implements_no_interface(kind, &name)?;
        let fields = kind
            .fields
            .iter()
            .map(|field| self.read_embedded_field(field, &name, names))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ObjectDef {
            name,
            description: description(definition.node.description.as_ref()),
            fields,
        })
    }

    /// Reads the auth directives of an embedded type and its fields, which are left to the
    /// holding node: AppSync's are checked as everywhere (a wrong argument stops start-up), and
    /// Amplify's `@auth` on a field, which stands for AppSync's there (Amplify writes them from
    /// it), is read and warned about.
    fn read_embedded_auth(
        &self,
        definition: &Positioned<TypeDefinition>,
        kind: &ObjectType,
        name: &str,
    ) -> Result<(), ModelError> {
        let appsync = kind.fields.iter().flat_map(|f| &f.node.directives);
        for directive in definition.node.directives.iter().chain(appsync) {
            if !not_appsync(&directive) {
                self.appsync_rule(directive)?;
            }
        }
        for field in &kind.fields {
            for directive in &field.node.directives {
                if directive.node.name.node == "auth" {
                    self.auth_rules(directive)?;
                    self.warnings.borrow_mut().push(format!(
                        "{name}.{}: @auth on a field of a type without @model is not a rule \
                         of its own here: the value is read with what holds it, under those \
                         rules",
                        field.node.name.node
                    ));
                }
            }
        }
        Ok(())
    }

    /// An embedded type takes no directive but AppSync's auth modes: the others are about
    /// nodes, and its values are stored inside nodes.
    fn an_embedded_type_takes_no_model_directives(
        &self,
        definition: &Positioned<TypeDefinition>,
        name: &str,
    ) -> Result<(), ModelError> {
        if let Some(directive) = definition.node.directives.iter().find(not_appsync) {
            return Err(self.error(
                directive.pos,
                format!(
                    "type {name}: @{} works on @model types; add @model to store {name} as nodes",
                    directive.node.name.node
                ),
            ));
        }
        Ok(())
    }

    /// An embedded type implements no interface: interfaces are answered by nodes.
    fn an_embedded_type_implements_no_interface(
        &self,
        kind: &ObjectType,
        name: &str,
    ) -> Result<(), ModelError> {
        if let Some(interface) = kind.implements.first() {
            return Err(self.error(
                interface.pos,
                format!("type {name}: a type without @model implements no interface"),
            ));
        }
        Ok(())
    }

    /// Reads one field of an embedded type.
    fn read_embedded_field(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        names: &Names<'_>,
    ) -> Result<FieldDef, ModelError> {
        let field_name = field.node.name.node.to_string();
        // A field its functions or its `@http` call answer (bound in `resolvers/` too), given
        // the value it is a field of as the event's `source`: never stored.
        if let Some(computed) = self.computed_field_def(name, field, names)? {
            return Ok(computed);
        }
        self.an_embedded_field_takes_no_directives(field, name, &field_name)?;
        self.an_embedded_field_takes_no_arguments(field, name, &field_name)?;
        let ty = &field.node.ty.node;
        let (element, list) =
            self.an_embedded_field_is_no_list_of_lists(field, name, &field_name)?;
        let kind = if let Some(scalar) = names.scalar(element) {
            match list {
                None => FieldKind::Scalar {
                    scalar,
                    required: !ty.nullable,
                    unique: false,
                    default: None,
                },
                Some(elements_required) => FieldKind::ScalarList {
                    scalar,
                    required: !ty.nullable,
                    elements_required,
                },
            }
        } else if names.objects.contains(element.as_str()) {
            FieldKind::Embedded {
                object: element.to_string(),
                required: !ty.nullable,
                list,
            }
        } else {
            return Err(self.an_embedded_field_holds_no_nodes(
                field,
                name,
                &field_name,
                element,
                names,
            ));
        };
        Ok(FieldDef {
            name: field_name,
            description: description(field.node.description.as_ref()),
            kind,
            auth: Vec::new(),
        })
    }

    /// The element type of a field of an embedded type, and whether its elements are required
    /// when it is a list: a list of lists is refused, as no stored value is read as one.
    fn an_embedded_field_is_no_list_of_lists<'f>(
        &self,
        field: &'f Positioned<FieldDefinition>,
        name: &str,
        field_name: &str,
    ) -> Result<(&'f Name, Option<bool>), ModelError> {
        match &field.node.ty.node.base {
            BaseType::Named(element) => Ok((element, None)),
            BaseType::List(inner) => match &inner.base {
                BaseType::Named(element) => Ok((element, Some(!inner.nullable))),
                BaseType::List(_) => Err(self.error(
                    field.node.ty.pos,
                    format!("{name}.{field_name}: lists of lists are not supported"),
                )),
            },
        }
    }

    /// A field of an embedded type takes no directive but AppSync's auth modes and `@auth`:
    /// AppSync asks non-model types to repeat the auth modes that reach them, and here their
    /// values are read with the node that holds them, under that node's rules.
    fn an_embedded_field_takes_no_directives(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        field_name: &str,
    ) -> Result<(), ModelError> {
        let not_rule =
            |d: &&Positioned<ConstDirective>| not_appsync(d) && d.node.name.node != "auth";
        if let Some(directive) = field.node.directives.iter().find(not_rule) {
            return Err(self.error(
                directive.pos,
                format!(
                    "{name}.{field_name}: @{} works on @model types; {name} has no @model, \
                     so its values are stored inside the nodes that hold them",
                    directive.node.name.node
                ),
            ));
        }
        Ok(())
    }

    /// A field of an embedded type takes no arguments: it is a stored value, not a query.
    fn an_embedded_field_takes_no_arguments(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        field_name: &str,
    ) -> Result<(), ModelError> {
        if !field.node.arguments.is_empty() {
            return Err(self.error(
                field.pos,
                format!("{name}.{field_name}: a field of a type without @model takes no arguments"),
            ));
        }
        Ok(())
    }

    /// The refusal of an embedded field of no scalar or embedded type: a node type's values
    /// are nodes, related from a `@model` type, not stored inside another; any other name is
    /// no type.
    fn an_embedded_field_holds_no_nodes(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        field_name: &str,
        element: &str,
        names: &Names<'_>,
    ) -> ModelError {
        if names.is_node_type(element) {
            return self.error(
                field.node.ty.pos,
                format!(
                    "{name}.{field_name}: a type without @model holds values, not nodes; \
                     store the id ({field_name}Id: ID) and relate the node from a @model type"
                ),
            );
        }
        self.error(
            field.node.ty.pos,
            format!("{name}.{field_name}: unknown type {element}"),
        )
    }
}

#[cfg(test)]
mod tests {
    //! Each mistake an embedded type (an object type without `@model`) is refused for.

    use super::super::assert_refused;

    /// A schema whose `@model` type `A` holds an `E`, declared as `embedded`.
    fn with_embedded(embedded: &str) -> String {
        format!("type A @model {{ e: E }}\n{embedded}")
    }

    #[test]
    fn an_embedded_type_with_a_model_directive_is_refused() {
        assert_refused(
            &with_embedded("type E @searchable { n: Int }"),
            "type E: @searchable works on @model types; add @model to store E as nodes",
        );
    }

    #[test]
    fn an_embedded_type_that_implements_an_interface_is_refused() {
        assert_refused(
            &with_embedded("interface I { n: Int }\ntype E implements I { n: Int }"),
            "type E: a type without @model implements no interface",
        );
    }

    #[test]
    fn a_list_of_lists_in_an_embedded_type_is_refused() {
        assert_refused(
            &with_embedded("type E { n: [[Int]] }"),
            "E.n: lists of lists are not supported",
        );
    }

    #[test]
    fn an_embedded_field_with_a_model_directive_is_refused() {
        assert_refused(
            &with_embedded("type E { n: Int @index(name: \"byN\") }"),
            "E.n: @index works on @model types; E has no @model, so its values are stored \
             inside the nodes that hold them",
        );
    }

    #[test]
    fn an_embedded_field_with_arguments_is_refused() {
        assert_refused(
            &with_embedded("type E { n(x: Int): Int }"),
            "E.n: a field of a type without @model takes no arguments",
        );
    }

    #[test]
    fn an_embedded_field_that_holds_nodes_or_no_type_is_refused() {
        assert_refused(
            &with_embedded("type E { a: A }"),
            "E.a: a type without @model holds values, not nodes; store the id (aId: ID) and \
             relate the node from a @model type",
        );
        assert_refused(&with_embedded("type E { b: B }"), "E.b: unknown type B");
    }
}
