//! The schema's own `type Query` and `type Mutation` (and their `extend type`s): fields beside
//! the generated ones, as AppSync and Amplify schemas declare their custom queries and
//! mutations, each resolved by the functions its `@function(name:)` directives name (or its
//! `@http` call, or a binding in `resolvers/`); and any type's field those resolve.

use super::{Names, Reader, description};
use crate::model::auth_rules::{APPSYNC_DIRECTIVES, WrittenRule};
use crate::model::{
    Allow, AuthRule, CustomArgument, CustomField, FieldDef, FieldKind, HttpCall, ModelError,
    OwnField, Root,
};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::{
    BaseType, ConstDirective, FieldDefinition, InputValueDefinition, TypeDefinition, TypeKind,
};
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
    /// them), the functions in order, and who may ask for it (AppSync's directives). The checks
    /// run in the order written here, which decides the first mistake a schema is refused with.
    pub(super) fn read_function_field(
        &self,
        owner: &str,
        field: &Positioned<FieldDefinition>,
        names: &Names<'_>,
    ) -> Result<FunctionField, ModelError> {
        let name = field.node.name.node.to_string();
        let at = At { owner, name: &name };
        let Resolving {
            mut functions,
            http,
            auth,
        } = self.read_resolving_directives(&at, field)?;
        let (element, list) = self.element_of(owner, field)?;
        self.returns_a_type_of_the_schema(&at, field, &element, names)?;
        let mut arguments = self.read_custom_arguments(&at, field, names)?;
        let http = match http {
            Some(directive) => {
                let (call, rewritten) = self.read_field_http(&at, directive, &arguments, names)?;
                arguments = rewritten;
                Some(call)
            }
            None => None,
        };
        let by_directive = !functions.is_empty() || http.is_some();
        let direct = match self.resolved_one_way(&at, field, by_directive)? {
            Some(bound) => {
                functions = bound.clone();
                true
            }
            None => false,
        };
        let custom = CustomField {
            ty: field.node.ty.node.to_string(),
            element,
            list,
            arguments,
            line: field.pos.line,
            column: field.pos.column,
            unresolved: false,
        };
        Ok(FunctionField {
            field: custom,
            functions,
            http,
            direct,
            auth,
        })
    }

    /// The field's directives: the functions that resolve it or its `@http` call, and who may
    /// ask for it.
    fn read_resolving_directives<'f>(
        &self,
        at: &At<'_>,
        field: &'f Positioned<FieldDefinition>,
    ) -> Result<Resolving<'f>, ModelError> {
        let mut resolving = Resolving {
            functions: Vec::new(),
            http: None,
            auth: Vec::new(),
        };
        for directive in &field.node.directives {
            match directive.node.name.node.as_str() {
                "http" => {
                    let taken = resolving.http.is_some() || !resolving.functions.is_empty();
                    self.resolved_by_function_or_http(at, directive, taken)?;
                    resolving.http = Some(directive);
                }
                "function" => {
                    self.resolved_by_function_or_http(at, directive, resolving.http.is_some())?;
                    self.expect_arguments(directive, &["name"])?;
                    let function = self.function_is_named(at, directive)?;
                    resolving.functions.push(function);
                }
                other if APPSYNC_DIRECTIVES.contains(&other) => {
                    resolving.auth.push(self.appsync_rule(directive)?.rule);
                }
                // Amplify's `@auth` on a field of its own: who may ask for it.
                "auth" => {
                    let rules = self.auth_rules(directive)?;
                    for written in &rules {
                        self.rule_needs_no_node(at, written, &rules)?;
                    }
                    let without_node = rules.into_iter().filter(|w| w.rule.field().is_none());
                    resolving
                        .auth
                        .extend(without_node.map(|written| written.rule));
                }
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        Ok(resolving)
    }

    /// Refuses `directive` when the field already has a resolver of the other kind (`taken`).
    fn resolved_by_function_or_http(
        &self,
        at: &At<'_>,
        directive: &Positioned<ConstDirective>,
        taken: bool,
    ) -> Result<(), ModelError> {
        if !taken {
            return Ok(());
        }
        let At { owner, name } = at;
        Err(self.error(
            directive.pos,
            format!("{owner}.{name}: a field is resolved by @function or by one @http, not both"),
        ))
    }

    fn function_is_named(
        &self,
        at: &At<'_>,
        directive: &Positioned<ConstDirective>,
    ) -> Result<String, ModelError> {
        match directive.node.get_argument("name").map(|v| &v.node) {
            Some(ConstValue::String(function)) if !function.is_empty() => Ok(function.clone()),
            _ => Err(self.error(
                directive.pos,
                format!(
                    "{}.{}: @function(name:) names a function",
                    at.owner, at.name
                ),
            )),
        }
    }

    /// A rule naming a field of a node has no node here: refused, unless a `private` rule of
    /// its provider beside it (`rules`) admits everyone it could, as in apps that list
    /// `{ allow: private }` and `{ allow: owner }` on a custom field, where AppSync admits every
    /// signed-in user; it is then left out.
    fn rule_needs_no_node(
        &self,
        at: &At<'_>,
        written: &WrittenRule,
        rules: &[WrittenRule],
    ) -> Result<(), ModelError> {
        let covered = rules.iter().any(|other| {
            other.rule.allow == Allow::Private && other.rule.provider == written.rule.provider
        });
        if written.rule.field().is_none() || covered {
            return Ok(());
        }
        let At { owner, name } = at;
        Err(self.error(
            written.pos,
            format!(
                "{owner}.{name}: an owner or groupsField rule needs a node whose field names its \
                 owners; a field of {owner} has none (allow public, private, groups or custom \
                 here)"
            ),
        ))
    }

    fn returns_a_type_of_the_schema(
        &self,
        at: &At<'_>,
        field: &Positioned<FieldDefinition>,
        element: &str,
        names: &Names<'_>,
    ) -> Result<(), ModelError> {
        let returnable = names.scalar(element).is_some()
            || names.models.contains(element)
            || names.objects.contains(element);
        if returnable {
            return Ok(());
        }
        let At { owner, name } = at;
        Err(self.error(
            field.node.ty.pos,
            format!(
                "{owner}.{name}: returns {element}, which is not a scalar, an enum or an object \
                 type of the schema"
            ),
        ))
    }

    /// The field's arguments as declared, each a scalar, an enum or an input type, or a list
    /// of one.
    fn read_custom_arguments(
        &self,
        at: &At<'_>,
        field: &Positioned<FieldDefinition>,
        names: &Names<'_>,
    ) -> Result<Vec<CustomArgument>, ModelError> {
        let mut arguments = Vec::new();
        for argument in &field.node.arguments {
            let element = self.argument_is_no_list_of_lists(at, argument)?;
            self.argument_is_a_scalar_or_an_input(at, argument, &element, names)?;
            arguments.push(CustomArgument {
                name: argument.node.name.node.to_string(),
                ty: argument.node.ty.node.to_string(),
                element,
            });
        }
        Ok(arguments)
    }

    /// The type an argument names, alone or in a list.
    fn argument_is_no_list_of_lists(
        &self,
        at: &At<'_>,
        argument: &Positioned<InputValueDefinition>,
    ) -> Result<String, ModelError> {
        match &argument.node.ty.node.base {
            BaseType::Named(element) => Ok(element.to_string()),
            BaseType::List(inner) => match &inner.base {
                BaseType::Named(element) => Ok(element.to_string()),
                BaseType::List(_) => Err(self.error(
                    argument.pos,
                    format!(
                        "{}.{}: argument {}: lists of lists are not supported",
                        at.owner, at.name, argument.node.name.node
                    ),
                )),
            },
        }
    }

    fn argument_is_a_scalar_or_an_input(
        &self,
        at: &At<'_>,
        argument: &Positioned<InputValueDefinition>,
        element: &str,
        names: &Names<'_>,
    ) -> Result<(), ModelError> {
        if names.scalar(element).is_some() || names.inputs.iter().any(|i| i.name == element) {
            return Ok(());
        }
        let At { owner, name } = at;
        let argument_name = &argument.node.name.node;
        Err(self.error(
            argument.pos,
            format!(
                "{owner}.{name}: argument {argument_name} must be a scalar, an enum or an input \
                 type of the schema, not {element}"
            ),
        ))
    }

    /// The field's `@http` call, and its arguments as Amplify rewrites them.
    fn read_field_http(
        &self,
        at: &At<'_>,
        directive: &Positioned<ConstDirective>,
        arguments: &[CustomArgument],
        names: &Names<'_>,
    ) -> Result<(HttpCall, Vec<CustomArgument>), ModelError> {
        let (call, rewritten) =
            self.read_http(at.owner, at.name, directive, arguments, |element| {
                names.scalar(element).is_some()
            })?;
        self.http_inputs_are_new(at, directive, &call, names)?;
        Ok((call, rewritten))
    }

    /// The input types `@http` generates take names no type of the schema has.
    fn http_inputs_are_new(
        &self,
        at: &At<'_>,
        directive: &Positioned<ConstDirective>,
        call: &HttpCall,
        names: &Names<'_>,
    ) -> Result<(), ModelError> {
        let taken = |generated: &str| {
            names.models.contains(generated)
                || names.objects.contains(generated)
                || names.unions.iter().any(|u| u.name == generated)
                || names.enums.iter().any(|e| e.name == generated)
                || names.interfaces.iter().any(|i| i.name == generated)
                || names.inputs.iter().any(|i| i.name == generated)
        };
        let Some(clash) = call.inputs.iter().find(|input| taken(&input.name)) else {
            return Ok(());
        };
        let At { owner, name } = at;
        Err(self.error(
            directive.pos,
            format!(
                "{owner}.{name}: @http generates the input {}, which the schema declares too",
                clash.name
            ),
        ))
    }

    /// The functions `resolvers/` binds the field to, as AppSync binds resolvers outside the
    /// schema; refused when its directives resolve it too (`by_directive`).
    fn resolved_one_way(
        &self,
        at: &At<'_>,
        field: &Positioned<FieldDefinition>,
        by_directive: bool,
    ) -> Result<Option<&Vec<String>>, ModelError> {
        let At { owner, name } = at;
        match self.bound.get(&format!("{owner}.{name}")) {
            Some(_) if by_directive => Err(self.error(
                field.pos,
                format!(
                    "{owner}.{name} is resolved by its directive and by \
                     resolvers/{owner}.{name}.toml; keep one"
                ),
            )),
            bound => Ok(bound),
        }
    }
}

/// The field a check is about, as refusals name it: `owner.name`.
struct At<'f> {
    owner: &'f str,
    name: &'f str,
}

/// What a field's directives say about how it is resolved and who may ask for it.
struct Resolving<'f> {
    functions: Vec<String>,
    http: Option<&'f Positioned<ConstDirective>>,
    auth: Vec<AuthRule>,
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
    use super::super::assert_refused;
    use crate::model::*;

    /// A schema with a `@model` type, and `query` as its `type Query`'s fields.
    fn with_query(query: &str) -> String {
        format!("type A @model {{ x: Int }}\ntype Query {{ {query} }}")
    }

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

    #[test]
    fn a_field_resolved_by_function_and_http_is_refused() {
        let message = "Query.f: a field is resolved by @function or by one @http, not both";
        assert_refused(
            &with_query(r#"f: Int @function(name: "a") @http(url: "https://x")"#),
            message,
        );
        assert_refused(
            &with_query(r#"f: Int @http(url: "https://x") @function(name: "a")"#),
            message,
        );
    }

    #[test]
    fn a_function_without_a_name_is_refused() {
        assert_refused(
            &with_query(r#"f: Int @function(name: "")"#),
            "Query.f: @function(name:) names a function",
        );
    }

    #[test]
    fn an_owner_rule_on_a_field_of_its_own_is_refused() {
        assert_refused(
            &with_query(r#"f: Int @function(name: "a") @auth(rules: [{ allow: owner }])"#),
            "Query.f: an owner or groupsField rule needs a node whose field names its owners; \
             a field of Query has none (allow public, private, groups or custom here)",
        );
    }

    #[test]
    fn an_owner_rule_beside_a_private_one_on_a_field_of_its_own_adds_nobody_and_is_left_out() {
        let model = Model::parse(
            "schema.graphql",
            &with_query(
                r#"f: Int @function(name: "a") @auth(rules: [{ allow: private }, { allow: owner }])"#,
            ),
        )
        .expect("loads");
        assert_eq!(
            model.own_fields[0]
                .auth
                .iter()
                .map(|rule| &rule.allow)
                .collect::<Vec<_>>(),
            [&Allow::Private]
        );
        // Beside a private rule of another provider, it would admit someone else: refused.
        assert_refused(
            &with_query(
                r#"f: Int @function(name: "a") @auth(rules: [{ allow: private, provider: iam }, { allow: owner }])"#,
            ),
            "Query.f: an owner or groupsField rule needs a node whose field names its owners; \
             a field of Query has none (allow public, private, groups or custom here)",
        );
    }

    #[test]
    fn a_field_returning_an_input_type_is_refused() {
        assert_refused(
            &format!("input I {{ x: Int }}\n{}", with_query("f: I")),
            "Query.f: returns I, which is not a scalar, an enum or an object type of the schema",
        );
    }

    #[test]
    fn an_argument_that_is_a_list_of_lists_is_refused() {
        assert_refused(
            &with_query("f(a: [[Int]]): Int"),
            "Query.f: argument a: lists of lists are not supported",
        );
    }

    #[test]
    fn an_argument_of_a_model_type_is_refused() {
        assert_refused(
            &with_query("f(a: A): Int"),
            "Query.f: argument a must be a scalar, an enum or an input type of the schema, not A",
        );
    }

    #[test]
    fn an_http_input_the_schema_declares_too_is_refused() {
        assert_refused(
            &format!(
                "type QueryFQueryInput {{ x: Int }}\n{}",
                with_query(r#"f(limit: Int): Int @http(url: "https://x")"#)
            ),
            "Query.f: @http generates the input QueryFQueryInput, which the schema declares too",
        );
    }

    #[test]
    fn a_field_bound_in_resolvers_and_by_its_directive_is_refused() {
        let bound = [("Query.f".to_owned(), vec!["b".to_owned()])].into();
        let error = Model::parse_with_resolver_files(
            "schema.graphql",
            &with_query(r#"f: Int @function(name: "a")"#),
            &Default::default(),
            &bound,
            &Default::default(),
            &Default::default(),
        )
        .expect_err("the schema should be refused")
        .to_string();
        let message =
            "Query.f is resolved by its directive and by resolvers/Query.f.toml; keep one";
        assert!(error.contains(message), "got: {error}\nwant: {message}");
    }
}
