//! A directive's arguments: the ones it may have, and each read as the type it must be.

use crate::model::ModelError;
use async_graphql_parser::types::ConstDirective;
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;

use super::Reader;

impl Reader<'_> {
    pub(super) fn unknown_directive(&self, pos: Pos, name: &str) -> ModelError {
        // Amplify's GraphQL transformer v1: read in Amplify's language only.
        let v1 = match name {
            "connection" | "key" => {
                "read in Amplify's schema language only; this schema is read as tablegraph's \
                 (it uses tablegraph's own directives): --schema-language amplify reads it as \
                 Amplify's"
            }
            "versioned" => {
                "not read: tablegraph's API has `version` and `expectedVersion` on every model \
                 (without --amplify-strict)"
            }
            _ => "",
        };
        if !v1.is_empty() {
            return self.error(
                pos,
                format!("@{name} is Amplify's GraphQL transformer v1 directive, {v1}"),
            );
        }
        self.error(
            pos,
            format!("unknown directive @{name}; known here: @model, @auth, @aws_api_key, @aws_oidc, @aws_cognito_user_pools, @aws_auth, @aws_lambda, @aws_iam, @edge, @unique, @default, @index, @belongsTo, @hasOne, @hasMany, @outgoing, @incoming, @targets, @rank, @function, @http, @searchable"),
        )
    }

    pub(super) fn refuse_directives(
        &self,
        directives: &[Positioned<ConstDirective>],
    ) -> Result<(), ModelError> {
        match directives.first() {
            Some(directive) => {
                Err(self.unknown_directive(directive.pos, &directive.node.name.node))
            }
            None => Ok(()),
        }
    }

    pub(super) fn expect_arguments(
        &self,
        directive: &Positioned<ConstDirective>,
        allowed: &[&str],
    ) -> Result<(), ModelError> {
        for (name, _) in &directive.node.arguments {
            if !allowed.contains(&name.node.as_str()) {
                return Err(self.error(
                    name.pos,
                    format!(
                        "@{} has no argument {}",
                        directive.node.name.node, name.node
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A required string argument of a directive.
    pub(super) fn string_argument(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
    ) -> Result<String, ModelError> {
        let directive_name = &directive.node.name.node;
        match directive.node.get_argument(name) {
            Some(Positioned {
                node: ConstValue::String(value),
                ..
            }) => Ok(Some(value.clone())),
            Some(other) => Err(self.error(
                other.pos,
                format!("@{directive_name}({name}:) takes a string"),
            )),
            None => Err(self.error(
                directive.pos,
                format!("@{directive_name} needs the argument {name}:"),
            )),
        }
        .map(|value| value.unwrap_or_default())
    }

    /// A string argument that may be left out.
    pub(super) fn optional_string_argument(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
    ) -> Result<Option<String>, ModelError> {
        match directive.node.get_argument(name) {
            None => Ok(None),
            Some(_) => self.string_argument(directive, name).map(Some),
        }
    }

    /// An enum value argument (`role: LEAD`), also accepted as a string.
    pub(super) fn enum_argument(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
    ) -> Result<Option<String>, ModelError> {
        match directive.node.get_argument(name) {
            None => Ok(None),
            Some(Positioned {
                node: ConstValue::Enum(value),
                ..
            }) => Ok(Some(value.to_string())),
            Some(_) => self.string_argument(directive, name).map(Some),
        }
    }
}
