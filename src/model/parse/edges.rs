//! `@edge` types: the directive's endpoints and options, and the metadata fields each edge
//! stores beside the ones `@edge` manages.

use super::{
    MANAGED_EDGE_FIELDS, MAX_SLOT, Names, Reader, description, is_reserved_attribute, parse_slot,
};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{EdgeTypeDef, FieldDef, FieldKind, ModelError, ScalarType};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::{
    BaseType, ConstDirective, FieldDefinition, TypeDefinition, TypeKind,
};
use async_graphql_value::ConstValue;

impl Reader<'_> {
    /// Reads an `@edge` type: its endpoints, options and metadata fields.
    pub(super) fn read_edge(
        &self,
        definition: &Positioned<TypeDefinition>,
        names: &Names<'_>,
    ) -> Result<EdgeTypeDef, ModelError> {
        let name = definition.node.name.node.to_string();
        let TypeKind::Object(kind) = &definition.node.kind else {
            unreachable!("read_edge is only called for object types");
        };
        let directive = self.edge_directive(definition, &name)?;
        let from = self.string_argument(directive, "from")?;
        let to = self.string_argument(directive, "to")?;
        self.an_edge_starts_from_a_model_type(directive, names, &from)?;
        self.an_edge_points_to_node_types(directive, names, &to)?;
        let edge_set = self.edge_set_is_true_or_false(directive)?;
        let slot = self.an_edges_index_is_a_slot(directive, &name)?;
        let fields = kind
            .fields
            .iter()
            .map(|field| self.read_edge_field(field, &name, names))
            .collect::<Result<Vec<_>, _>>()?;
        let sort_by = self.optional_string_argument(directive, "sortBy")?;
        self.an_edge_sorts_by_a_metadata_field(directive, &name, sort_by.as_deref(), &fields)?;
        Ok(EdgeTypeDef {
            name,
            description: description(definition.node.description.as_ref()),
            from,
            to,
            fields,
            sort_by,
            edge_set,
            slot,
        })
    }

    /// The type's `@edge` directive, with the arguments it may take; an edge type takes no
    /// other directive, and is not also a `@model`: its items are edges, not nodes.
    fn edge_directive<'d>(
        &self,
        definition: &'d Positioned<TypeDefinition>,
        name: &str,
    ) -> Result<&'d Positioned<ConstDirective>, ModelError> {
        let mut edge_directive = None;
        for directive in &definition.node.directives {
            match directive.node.name.node.as_str() {
                "edge" => {
                    self.expect_arguments(
                        directive,
                        &["from", "to", "sortBy", "edgeSet", "index"],
                    )?;
                    edge_directive = Some(directive);
                }
                "model" => {
                    return Err(self.error(
                        directive.pos,
                        format!("type {name}: an @edge type is not also a @model"),
                    ));
                }
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        Ok(edge_directive.expect("read_edge is only called for @edge types"))
    }

    /// `@edge(from:)` names a `@model` type: edges are stored under the node they start from.
    fn an_edge_starts_from_a_model_type(
        &self,
        directive: &Positioned<ConstDirective>,
        names: &Names<'_>,
        from: &str,
    ) -> Result<(), ModelError> {
        if !names.models.contains(from) {
            return Err(self.error(
                directive.pos,
                format!("@edge(from: {from:?}): {from} is not a @model type"),
            ));
        }
        Ok(())
    }

    /// `@edge(to:)` names a `@model` type or a union of them: an edge points to nodes.
    fn an_edge_points_to_node_types(
        &self,
        directive: &Positioned<ConstDirective>,
        names: &Names<'_>,
        to: &str,
    ) -> Result<(), ModelError> {
        if !names.is_node_type(to) {
            return Err(self.error(
                directive.pos,
                format!("@edge(to: {to:?}): {to} is not a @model type or a union of them"),
            ));
        }
        Ok(())
    }

    /// `@edge(edgeSet:)` is a boolean (true when left out). Returns it.
    fn edge_set_is_true_or_false(
        &self,
        directive: &Positioned<ConstDirective>,
    ) -> Result<bool, ModelError> {
        match directive.node.get_argument("edgeSet").map(|v| &v.node) {
            None => Ok(true),
            Some(ConstValue::Boolean(keep)) => Ok(*keep),
            Some(_) => Err(self.error(directive.pos, "@edge(edgeSet:) takes true or false")),
        }
    }

    /// `@edge(index:)` names one of the table's index slots (GSI01 when left out). Returns it.
    fn an_edges_index_is_a_slot(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
    ) -> Result<u8, ModelError> {
        let index = self
            .optional_string_argument(directive, "index")?
            .unwrap_or_else(|| "GSI01".to_owned());
        parse_slot(&index).ok_or_else(|| {
            self.error(
                directive.pos,
                format!(
                    "{name}: index must be one of \"GSI01\" to \"GSI{MAX_SLOT}\", not {index:?}"
                ),
            )
        })
    }

    /// Reads one metadata field of an edge type.
    fn read_edge_field(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        names: &Names<'_>,
    ) -> Result<FieldDef, ModelError> {
        let field_name = field.node.name.node.to_string();
        self.an_edge_field_takes_no_managed_name(field, name, &field_name)?;
        self.an_edge_field_takes_no_directives(field, name, &field_name)?;
        let scalar = self.an_edge_field_is_a_scalar_or_enum(field, name, &field_name, names)?;
        Ok(FieldDef {
            name: field_name,
            description: description(field.node.description.as_ref()),
            kind: FieldKind::Scalar {
                scalar,
                required: !field.node.ty.node.nullable,
                unique: false,
                default: None,
            },
            auth: Vec::new(),
        })
    }

    /// A metadata field is a scalar or an enum: one value stored on the edge. Returns it.
    fn an_edge_field_is_a_scalar_or_enum(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        field_name: &str,
        names: &Names<'_>,
    ) -> Result<ScalarType, ModelError> {
        let scalar = match &field.node.ty.node.base {
            BaseType::Named(type_name) => names.scalar(type_name),
            BaseType::List(_) => None,
        };
        scalar.ok_or_else(|| {
            self.error(
                field.node.ty.pos,
                format!("{name}.{field_name}: edge metadata fields are scalars or enums"),
            )
        })
    }

    /// A metadata field takes no name `@edge` manages or an item keeps: it would overwrite it.
    fn an_edge_field_takes_no_managed_name(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        field_name: &str,
    ) -> Result<(), ModelError> {
        if MANAGED_EDGE_FIELDS.contains(&field_name) || is_reserved_attribute(field_name) {
            return Err(self.error(
                field.pos,
                format!("{name}.{field_name}: the name {field_name} is managed by @edge"),
            ));
        }
        Ok(())
    }

    /// A metadata field takes no directives but AppSync's auth modes: AppSync asks non-model
    /// types to repeat the modes that reach them, and here their values are read with the node
    /// that holds them, under that node's rules.
    fn an_edge_field_takes_no_directives(
        &self,
        field: &Positioned<FieldDefinition>,
        name: &str,
        field_name: &str,
    ) -> Result<(), ModelError> {
        let not_appsync = |d: &&Positioned<ConstDirective>| {
            !APPSYNC_DIRECTIVES.contains(&d.node.name.node.as_str())
        };
        if let Some(directive) = field.node.directives.iter().find(not_appsync) {
            return Err(self.error(
                directive.pos,
                format!("{name}.{field_name}: edge metadata fields take no directives"),
            ));
        }
        Ok(())
    }

    /// `@edge(sortBy:)` names one of the edge's metadata fields: edges sort by its value.
    fn an_edge_sorts_by_a_metadata_field(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
        sort_by: Option<&str>,
        fields: &[FieldDef],
    ) -> Result<(), ModelError> {
        if let Some(sort_by) = sort_by
            && !fields.iter().any(|f| f.name == sort_by)
        {
            return Err(self.error(
                directive.pos,
                format!("@edge(sortBy: {sort_by:?}) needs a metadata field {sort_by} on {name}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Edge types: each mistake an @edge type is refused for.

    use super::super::{assert_refused, error_of};

    #[test]
    fn edge_mistakes_name_their_line_and_column() {
        let base = "type Goal @model { title: String }\ntype User @model { name: String }\nunion Member = User\n";
        let table = [
            (
                "type M @edge(from: \"Nobody\", to: \"User\") { x: Int }",
                "schema.graphql:4:8: @edge(from: \"Nobody\"): Nobody is not a @model type",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\", sortBy: \"rank\") { x: Int }",
                "schema.graphql:4:8: @edge(sortBy: \"rank\") needs a metadata field rank on M",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\") { from: ID }",
                "schema.graphql:4:42: M.from: the name from is managed by @edge",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\", edgeSet: false) { x: Int }\nextend type Nobody { y: Int }",
                "schema.graphql:5:1: extend Nobody: no type Nobody is declared to extend",
            ),
            (
                "enum Role { A @rank(value: 5) B }",
                "schema.graphql:4:31: B needs @rank: rank every value of an enum or none",
            ),
            (
                "enum Role { A @rank(value: 1000) }",
                "schema.graphql:4:15: @rank(value:) takes a whole number from 0 to 999",
            ),
        ];
        for (addition, expected) in table {
            let message = error_of(&format!("{base}{addition}"));
            assert!(
                message.starts_with(expected),
                "{addition}\n got: {message}\nwant: {expected}"
            );
        }
    }

    /// `edge` after a `Goal` and a `User` model.
    fn with_models(edge: &str) -> String {
        format!("type Goal @model {{ title: String }}\ntype User @model {{ name: String }}\n{edge}")
    }

    #[test]
    fn an_edge_type_that_is_also_a_model_is_refused() {
        assert_refused(
            &with_models("type M @edge(from: \"Goal\", to: \"User\") @model { x: Int }"),
            "type M: an @edge type is not also a @model",
        );
    }

    #[test]
    fn an_edge_to_a_type_without_model_is_refused() {
        assert_refused(
            &with_models("type M @edge(from: \"Goal\", to: \"Nobody\") { x: Int }"),
            "@edge(to: \"Nobody\"): Nobody is not a @model type or a union of them",
        );
    }

    #[test]
    fn an_edge_set_that_is_no_boolean_is_refused() {
        assert_refused(
            &with_models("type M @edge(from: \"Goal\", to: \"User\", edgeSet: 1) { x: Int }"),
            "@edge(edgeSet:) takes true or false",
        );
    }

    #[test]
    fn an_edge_index_that_is_no_slot_is_refused() {
        assert_refused(
            &with_models("type M @edge(from: \"Goal\", to: \"User\", index: \"GSI21\") { x: Int }"),
            "M: index must be one of \"GSI01\" to \"GSI20\", not \"GSI21\"",
        );
    }

    #[test]
    fn a_metadata_field_with_a_directive_is_refused() {
        assert_refused(
            &with_models("type M @edge(from: \"Goal\", to: \"User\") { x: Int @unique }"),
            "M.x: edge metadata fields take no directives",
        );
    }

    #[test]
    fn a_metadata_field_that_is_a_list_is_refused() {
        assert_refused(
            &with_models("type M @edge(from: \"Goal\", to: \"User\") { x: [Int] }"),
            "M.x: edge metadata fields are scalars or enums",
        );
    }
}
