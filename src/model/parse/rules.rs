//! Authorization rules as written: `@auth(rules: [...])` and AppSync's `@aws_*` directives, with
//! the fields they name resolved.

use super::{Reader, is_reserved_attribute, managed_field_type};
use crate::model::auth_rules::{WrittenRule, appsync_rule, read_rules};
use crate::model::{Allow, AuthRule, FieldDef, FieldKind, ModelError, ScalarType};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::ConstDirective;

impl Reader<'_> {
    /// The rules of an `@auth` directive, as written.
    pub(super) fn auth_rules(
        &self,
        directive: &Positioned<ConstDirective>,
    ) -> Result<Vec<WrittenRule>, ModelError> {
        self.expect_arguments(directive, &["rules"])?;
        let Some(rules) = directive.node.get_argument("rules") else {
            return Err(self.error(directive.pos, "@auth needs rules: [...]"));
        };
        read_rules(&rules.node, directive.pos).map_err(|message| self.error(rules.pos, message))
    }

    /// The rule of an AppSync directive (`@aws_api_key`, `@aws_cognito_user_pools(…)`…).
    pub(super) fn appsync_rule(
        &self,
        directive: &Positioned<ConstDirective>,
    ) -> Result<WrittenRule, ModelError> {
        let name = directive.node.name.node.as_str();
        let groups_allowed = matches!(name, "aws_cognito_user_pools" | "aws_auth");
        self.expect_arguments(
            directive,
            if groups_allowed {
                &["cognito_groups"]
            } else {
                &[]
            },
        )?;
        let groups = directive
            .node
            .get_argument("cognito_groups")
            .map(|g| &g.node);
        appsync_rule(name, groups)
            .map(|rule| WrittenRule {
                rule,
                pos: directive.pos,
            })
            .map_err(|message| self.error(directive.pos, message))
    }

    /// The rules of `owner` with the fields they name resolved: a declared `String` field is
    /// one owner or group, a `[String]` several; an owner or groups field the type does not
    /// declare is added as a `String` field (Amplify adds `owner: String` likewise).
    pub(super) fn resolve_rule_fields(
        &self,
        owner: &str,
        rules: Vec<WrittenRule>,
        fields: &mut Vec<FieldDef>,
    ) -> Result<Vec<AuthRule>, ModelError> {
        let mut resolved = Vec::new();
        for WrittenRule { mut rule, pos } in rules {
            let owner_rule = matches!(rule.allow, Allow::Owner { .. });
            if let Allow::Owner { field, many, .. } | Allow::GroupsField { field, many, .. } =
                &mut rule.allow
            {
                match fields.iter().find(|f| f.name == *field) {
                    // Amplify's `ownerField: "id"`: the node's id is its owner (a user's own
                    // profile).
                    None if field == "id" && owner_rule => {}
                    None => {
                        if managed_field_type(field).is_some() || is_reserved_attribute(field) {
                            return Err(self.error(
                                pos,
                                format!("{owner}: @auth names {field}, which is not a field it may store"),
                            ));
                        }
                        fields.push(FieldDef {
                            name: field.clone(),
                            description: Some(
                                "Who owns this node, set from the creator's token (@auth)."
                                    .to_owned(),
                            )
                            .filter(|_| matches!(rule.allow, Allow::Owner { .. })),
                            kind: FieldKind::Scalar {
                                scalar: ScalarType::String,
                                required: false,
                                unique: false,
                                default: None,
                            },
                            auth: Vec::new(),
                        });
                    }
                    // Amplify's owner fields may be `ID`s as well as `String`s.
                    Some(FieldDef {
                        kind:
                            FieldKind::Scalar {
                                scalar: ScalarType::String | ScalarType::Id,
                                ..
                            },
                        ..
                    }) => {}
                    Some(FieldDef {
                        kind:
                            FieldKind::ScalarList {
                                scalar: ScalarType::String | ScalarType::Id,
                                ..
                            },
                        ..
                    }) => *many = true,
                    Some(_) => {
                        return Err(self.error(
                            pos,
                            format!(
                                "{owner}.{field}: @auth reads it as an owner or a group, so it \
                                 must be String, ID, [String] or [ID]"
                            ),
                        ));
                    }
                }
            }
            resolved.push(rule);
        }
        Ok(resolved)
    }
}

#[cfg(test)]
mod tests {
    //! `@auth` and AppSync's directives as rules.

    use crate::model::*;

    #[test]
    fn appsync_directives_are_rules_of_the_callers_they_name() {
        let model = Model::parse(
            "schema.graphql",
            r#"
            type Post @model @aws_api_key @aws_cognito_user_pools(cognito_groups: ["Editors"]) {
                title: String
                secret: String @aws_oidc
                notes: String @aws_auth
            }
            "#,
        )
        .expect("valid");
        let post = model.type_def("Post").expect("declared");
        let allows: Vec<&Allow> = post.auth.iter().map(|rule| &rule.allow).collect();
        assert_eq!(
            allows,
            [
                &Allow::Public,
                &Allow::Groups {
                    groups: vec!["Editors".into()],
                    group_claim: None
                }
            ]
        );
        assert_eq!(post.auth[0].provider, Provider::ApiKey);
        for field in ["secret", "notes"] {
            let rules = &post.field(field).expect("declared").auth;
            assert_eq!(rules.len(), 1, "{field}");
            assert_eq!(rules[0].allow, Allow::Private, "{field}");
        }
    }

    #[test]
    fn custom_rules_and_aws_lambda_are_the_lambda_authorizers() {
        let model = Model::parse(
            "schema.graphql",
            r#"
            type Post @model @auth(rules: [{ allow: custom }, { allow: custom, provider: function, operations: [read] }]) {
                title: String @aws_lambda
            }
            "#,
        )
        .expect("valid");
        let post = model.type_def("Post").expect("declared");
        for rule in post
            .auth
            .iter()
            .chain(&post.field("title").expect("declared").auth)
        {
            assert_eq!(rule.allow, Allow::Custom);
            assert_eq!(rule.provider, Provider::Function);
        }
        for (rules, message) in [
            (
                "{ allow: owner, provider: function }",
                "provider: function goes with allow: custom only",
            ),
            (
                "{ allow: custom, provider: apiKey }",
                "its provider is function, not apiKey",
            ),
        ] {
            let error = Model::parse(
                "schema.graphql",
                &format!("type Post @model @auth(rules: [{rules}]) {{ title: String }}"),
            )
            .expect_err("refused");
            assert!(error.to_string().contains(message), "{error}");
        }
    }
}
