//! Amplify's schema-wide settings: `input AMPLIFY { globalAuthRule: AuthRule = { allow: public }
//! }`, the rule of every `@model` type that has none of its own, as Amplify's sandbox sets it.

use super::Reader;
use crate::model::auth_rules::read_rules;
use crate::model::{ModelError, TypeDef};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::{TypeDefinition, TypeKind};
use async_graphql_value::ConstValue;

impl Reader<'_> {
    /// Gives every type of `types` without rules of its own (on the type or any field) the
    /// rule `input AMPLIFY`'s `globalAuthRule` sets.
    pub(super) fn apply_global_auth_rule(
        &self,
        definition: &Positioned<TypeDefinition>,
        types: &mut [TypeDef],
    ) -> Result<(), ModelError> {
        self.refuse_directives(&definition.node.directives)?;
        let TypeKind::InputObject(input) = &definition.node.kind else {
            unreachable!("input AMPLIFY is an input type");
        };
        let mut global = None;
        for field in &input.fields {
            let name = field.node.name.node.as_str();
            match (name, &field.node.default_value) {
                ("globalAuthRule", Some(rule)) => global = Some((field.pos, rule.node.clone())),
                ("globalAuthRule", None) => {
                    return Err(self.error(
                        field.pos,
                        "AMPLIFY.globalAuthRule needs its rule as the default value: \
                         globalAuthRule: AuthRule = { allow: public }",
                    ));
                }
                _ => {
                    return Err(self.error(
                        field.pos,
                        format!("AMPLIFY.{name}: input AMPLIFY holds globalAuthRule only"),
                    ));
                }
            }
        }
        let Some((pos, rule)) = global else {
            return Ok(());
        };
        for type_def in types.iter_mut() {
            let ruled =
                !type_def.auth.is_empty() || type_def.fields.iter().any(|f| !f.auth.is_empty());
            if ruled {
                continue;
            }
            let written = read_rules(&ConstValue::List(vec![rule.clone()]), pos)
                .map_err(|message| self.error(pos, format!("AMPLIFY.globalAuthRule: {message}")))?;
            type_def.auth =
                self.resolve_rule_fields(&type_def.name, written, &mut type_def.fields)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::model::*;

    #[test]
    fn the_global_auth_rule_is_the_rule_of_types_without_their_own() {
        let model = Model::parse(
            "schema.graphql",
            "input AMPLIFY { globalAuthRule: AuthRule = { allow: public } }\n\
             type Todo @model { name: String }\n\
             type Note @model @auth(rules: [{ allow: owner }]) { text: String }",
        )
        .expect("the schema loads");
        let todo = model.type_def("Todo").expect("declared");
        assert_eq!(todo.auth.len(), 1);
        assert_eq!(todo.auth[0].allow, Allow::Public);
        let note = model.type_def("Note").expect("declared");
        assert!(matches!(
            note.auth[..],
            [AuthRule {
                allow: Allow::Owner { .. },
                ..
            }]
        ));
        // AMPLIFY is no input of the API.
        assert!(model.inputs.is_empty());
        for (schema, says) in [
            (
                "input AMPLIFY { globalAuthRule: AuthRule }\ntype T @model { a: Int }",
                "needs its rule as the default value",
            ),
            (
                "input AMPLIFY { other: String }\ntype T @model { a: Int }",
                "holds globalAuthRule only",
            ),
        ] {
            let error = Model::parse("schema.graphql", schema).expect_err(schema);
            assert!(error.to_string().contains(says), "{error}");
        }
    }

    #[test]
    fn searchable_loads_with_a_warning_and_v1_directives_name_their_v2_ones() {
        let model = Model::parse(
            "schema.graphql",
            "type Post @model @searchable @auth(rules: [{ allow: owner }]) { title: String owner: ID }",
        )
        .expect("the schema loads");
        assert_eq!(model.warnings.len(), 1);
        assert!(
            model.warnings[0].contains("searchPosts is left out"),
            "{:?}",
            model.warnings
        );
        // An owner field may be an ID, as Amplify's may.
        let post = model.type_def("Post").expect("declared");
        assert!(
            matches!(&post.auth[0].allow, Allow::Owner { field, many: false, .. } if field == "owner")
        );
        for (schema, says) in [
            (
                "type Post @model { c: [Comment] @connection(name: \"x\") }\ntype Comment @model { a: Int }",
                "@connection is Amplify's GraphQL transformer v1 directive; write the schema with transformer v2's @hasOne, @hasMany, @belongsTo or @manyToMany",
            ),
            (
                "type Post @model @key(fields: [\"id\"]) { a: Int }",
                "transformer v2's @primaryKey (a key without name) or @index (a named key)",
            ),
        ] {
            let error = Model::parse("schema.graphql", schema).expect_err(schema);
            assert!(error.to_string().contains(says), "{error}");
        }
    }
}
