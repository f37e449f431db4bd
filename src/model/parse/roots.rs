//! The schema's own `type Query` and `type Mutation` (and their `extend type`s): fields beside
//! the generated ones, as AppSync and Amplify schemas declare their custom queries and
//! mutations, each resolved by the functions its `@function(name:)` directives name (or its
//! `@http` call, or a binding in `resolvers/`); and any type's field those resolve.

use super::{Names, Reader, description};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{
    AuthRule, CustomArgument, CustomField, FieldDef, FieldKind, HttpCall, ModelError, OwnField,
    Root,
};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::{BaseType, FieldDefinition, TypeDefinition, TypeKind};
use async_graphql_value::ConstValue;

impl Reader<'_> {
    /// The fields of the schema's own `root` type: their types and arguments checked against
    /// the schema's types, and the functions that resolve each.
    pub(super) fn read_own_fields(
        &self,
        root: Root,
        definition: &Positioned<TypeDefinition>,
        names: &Names<'_>,
    ) -> Result<Vec<OwnField>, ModelError> {
        let TypeKind::Object(kind) = &definition.node.kind else {
            return Err(self.error(
                definition.pos,
                format!("{} must be an object type", root.name()),
            ));
        };
        // AppSync's directives on the type: the rule of each field without one of its own.
        let mut type_rules = Vec::new();
        for directive in &definition.node.directives {
            let name = directive.node.name.node.as_str();
            if !APPSYNC_DIRECTIVES.contains(&name) {
                return Err(self.error(
                    directive.pos,
                    format!(
                        "type {}: @{name} is not read here; AppSync's @aws_* directives name who \
                         may ask for the fields of {0}",
                        root.name()
                    ),
                ));
            }
            type_rules.push(self.appsync_rule(directive)?.rule);
        }
        let mut seen = std::collections::HashMap::new();
        kind.fields
            .iter()
            .map(|field| {
                let name = field.node.name.node.to_string();
                if let Some(line) = seen.insert(name.clone(), field.pos.line) {
                    return Err(self.error(
                        field.pos,
                        format!(
                            "{}.{name} is declared twice (first at line {line})",
                            root.name()
                        ),
                    ));
                }
                let mut resolved = self.read_function_field(root.name(), field, names)?;
                if resolved.auth.is_empty() {
                    resolved.auth = type_rules.clone();
                }
                Ok(OwnField {
                    root,
                    name,
                    description: description(field.node.description.as_ref()),
                    field: resolved.field,
                    functions: resolved.functions,
                    http: resolved.http,
                    direct: resolved.direct,
                    auth: resolved.auth,
                })
            })
            .collect()
    }

    /// A field resolved by the functions its `@function(name:)` directives name, or by its
    /// `@http` call (neither on a root field that nothing resolves): its type, its arguments
    /// (scalars, enums and the schema's input types; an `@http` field's as Amplify rewrites
    /// them), the functions in order, and who may ask for it (AppSync's directives).
    pub(super) fn read_function_field(
        &self,
        owner: &str,
        field: &Positioned<FieldDefinition>,
        names: &Names<'_>,
    ) -> Result<FunctionField, ModelError> {
        let name = field.node.name.node.to_string();
        let mut functions = Vec::new();
        let mut auth = Vec::new();
        let mut http = None;
        for directive in &field.node.directives {
            match directive.node.name.node.as_str() {
                "http" if http.is_some() || !functions.is_empty() => {
                    return Err(self.error(directive.pos, format!(
                        "{owner}.{name}: a field is resolved by @function or by one @http, not both"
                    )));
                }
                "http" => http = Some(directive),
                "function" if http.is_some() => {
                    return Err(self.error(directive.pos, format!(
                        "{owner}.{name}: a field is resolved by @function or by one @http, not both"
                    )));
                }
                "function" => {
                    self.expect_arguments(directive, &["name"])?;
                    match directive.node.get_argument("name").map(|v| &v.node) {
                        Some(ConstValue::String(function)) if !function.is_empty() => {
                            functions.push(function.clone());
                        }
                        _ => {
                            return Err(self.error(
                                directive.pos,
                                format!("{owner}.{name}: @function(name:) names a function"),
                            ));
                        }
                    }
                }
                other if APPSYNC_DIRECTIVES.contains(&other) => {
                    auth.push(self.appsync_rule(directive)?.rule);
                }
                // Amplify's `@auth` on a field of its own: who may ask for it. A rule naming a
                // field of a node has no node here.
                "auth" => {
                    for written in self.auth_rules(directive)? {
                        if written.rule.field().is_some() {
                            return Err(self.error(
                                written.pos,
                                format!(
                                    "{owner}.{name}: an owner or groupsField rule needs a node \
                                     whose field names its owners; a field of {owner} has none \
                                     (allow public, private, groups or custom here)"
                                ),
                            ));
                        }
                        auth.push(written.rule);
                    }
                }
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        let ty = &field.node.ty.node;
        let (element, list) = self.element_of(owner, field)?;
        let returnable = names.scalar(&element).is_some()
            || names.models.contains(element.as_str())
            || names.objects.contains(element.as_str());
        if !returnable {
            return Err(self.error(
                field.node.ty.pos,
                format!(
                    "{owner}.{name}: returns {element}, which is not a scalar, an enum or an \
                     object type of the schema"
                ),
            ));
        }
        let mut arguments = Vec::new();
        for argument in &field.node.arguments {
            let argument_name = argument.node.name.node.as_str();
            let argument_type = &argument.node.ty.node;
            let element = match &argument_type.base {
                BaseType::Named(element) => element.to_string(),
                BaseType::List(inner) => match &inner.base {
                    BaseType::Named(element) => element.to_string(),
                    BaseType::List(_) => {
                        return Err(self.error(
                            argument.pos,
                            format!(
                                "{owner}.{name}: argument {argument_name}: lists of lists are \
                                 not supported"
                            ),
                        ));
                    }
                },
            };
            if names.scalar(&element).is_none() && !names.inputs.iter().any(|i| i.name == element) {
                return Err(self.error(
                    argument.pos,
                    format!(
                        "{owner}.{name}: argument {argument_name} must be a scalar, an enum or \
                         an input type of the schema, not {element}"
                    ),
                ));
            }
            arguments.push(CustomArgument {
                name: argument_name.to_owned(),
                ty: argument_type.to_string(),
                element,
            });
        }
        let http = match http {
            Some(directive) => {
                let (call, rewritten) =
                    self.read_http(owner, &name, directive, &arguments, |element| {
                        names.scalar(element).is_some()
                    })?;
                let taken = |generated: &str| {
                    names.models.contains(generated)
                        || names.objects.contains(generated)
                        || names.unions.iter().any(|u| u.name == generated)
                        || names.enums.iter().any(|e| e.name == generated)
                        || names.interfaces.iter().any(|i| i.name == generated)
                        || names.inputs.iter().any(|i| i.name == generated)
                };
                if let Some(clash) = call.inputs.iter().find(|input| taken(&input.name)) {
                    return Err(self.error(
                        directive.pos,
                        format!(
                            "{owner}.{name}: @http generates the input {}, which the schema \
                             declares too",
                            clash.name
                        ),
                    ));
                }
                arguments = rewritten;
                Some(call)
            }
            None => None,
        };
        // A field `resolvers/` binds to functions, as AppSync binds resolvers outside the schema.
        let direct = match self.bound.get(&format!("{owner}.{name}")) {
            Some(_) if !functions.is_empty() || http.is_some() => {
                return Err(self.error(
                    field.pos,
                    format!(
                        "{owner}.{name} is resolved by its directive and by \
                         resolvers/{owner}.{name}.toml; keep one"
                    ),
                ));
            }
            Some(bound) => {
                functions = bound.clone();
                true
            }
            None => false,
        };
        let custom = CustomField {
            ty: ty.to_string(),
            element,
            list,
            arguments,
            line: field.pos.line,
            column: field.pos.column,
        };
        Ok(FunctionField {
            field: custom,
            functions,
            http,
            direct,
            auth,
        })
    }
}

impl Reader<'_> {
    /// `owner`'s field `field` as a field its functions or its `@http` call answer, when it is
    /// one (a `@function` or `@http` directive, or a binding in `resolvers/`).
    pub(super) fn computed_field_def(
        &self,
        owner: &str,
        field: &Positioned<FieldDefinition>,
        names: &Names<'_>,
    ) -> Result<Option<FieldDef>, ModelError> {
        let name = field.node.name.node.to_string();
        let computed = self.bound.contains_key(&format!("{owner}.{name}"))
            || field
                .node
                .directives
                .iter()
                .any(|d| matches!(d.node.name.node.as_str(), "function" | "http"));
        if !computed {
            return Ok(None);
        }
        let resolved = self.read_function_field(owner, field, names)?;
        Ok(Some(FieldDef {
            name,
            description: description(field.node.description.as_ref()),
            kind: FieldKind::Function {
                field: resolved.field,
                functions: resolved.functions,
                http: resolved.http,
                direct: resolved.direct,
            },
            auth: resolved.auth,
        }))
    }
}

/// A field its functions or its `@http` call resolve, as read.
pub(super) struct FunctionField {
    pub field: CustomField,
    pub functions: Vec<String>,
    pub http: Option<HttpCall>,
    /// Bound in `resolvers/`: AppSync's direct event.
    pub direct: bool,
    pub auth: Vec<AuthRule>,
}

#[cfg(test)]
mod tests {
    use crate::model::*;

    #[test]
    fn own_fields_keep_their_root_arguments_and_functions_in_order() {
        let model = Model::parse(
            "schema.graphql",
            "type A @model { x: Int }\n\
             enum Kind { ONE TWO }\n\
             input Filter { kind: Kind, ids: [ID!] }\n\
             type Sensor { id: ID! }\n\
             type Query { \"Read it.\" read(id: ID!, f: Filter): Sensor @function(name: \"a\") \
             @function(name: \"b-${env}\") }\n\
             extend type Query { kinds: [Kind!]! }\n\
             type Mutation { touch(ids: [ID!]!): [A] @function(name: \"t\") }",
        )
        .expect("the schema loads");
        // Root, name, type, arguments' types, functions.
        type Summary<'a> = (Root, &'a str, &'a str, Vec<&'a str>, Vec<&'a str>);
        let summary: Vec<Summary<'_>> = model
            .own_fields
            .iter()
            .map(|own| {
                (
                    own.root,
                    own.name.as_str(),
                    own.field.ty.as_str(),
                    own.field.arguments.iter().map(|a| a.ty.as_str()).collect(),
                    own.functions.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    Root::Query,
                    "read",
                    "Sensor",
                    vec!["ID!", "Filter"],
                    vec!["a", "b-${env}"]
                ),
                (Root::Query, "kinds", "[Kind!]!", vec![], vec![]),
                (Root::Mutation, "touch", "[A]", vec!["[ID!]!"], vec!["t"]),
            ]
        );
        assert_eq!(model.own_fields[0].description.as_deref(), Some("Read it."));
        assert!(model.own_fields[2].field.list);
    }
}
