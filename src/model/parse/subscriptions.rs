//! The schema's own `type Subscription`: AppSync's `@aws_subscribe` fields, checked against the
//! mutations they follow.

use super::{Reader, description};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{FieldKind, ModelError, Operation, ScalarType, SubscriptionDef, TypeDef};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::{BaseType, TypeDefinition, TypeKind};
use async_graphql_value::ConstValue;

impl Reader<'_> {
    /// The fields of a declared `Subscription` type: each `@aws_subscribe(mutations: [...])`,
    /// naming generated mutations of the type it returns, with arguments that are scalar fields
    /// of that type.
    pub(super) fn read_subscriptions(
        &self,
        definition: &Positioned<TypeDefinition>,
        types: &[TypeDef],
    ) -> Result<Vec<SubscriptionDef>, ModelError> {
        let TypeKind::Object(kind) = &definition.node.kind else {
            unreachable!("read_subscriptions is only called for an object type");
        };
        self.refuse_directives(&definition.node.directives)?;
        let mut subscriptions: Vec<SubscriptionDef> = Vec::new();
        for field in &kind.fields {
            let name = field.node.name.node.to_string();
            let mut mutations = None;
            for directive in &field.node.directives {
                match directive.node.name.node.as_str() {
                    "aws_subscribe" => {
                        self.expect_arguments(directive, &["mutations"])?;
                        let Some(ConstValue::List(names)) =
                            directive.node.get_argument("mutations").map(|v| &v.node)
                        else {
                            return Err(self.error(
                                directive.pos,
                                "@aws_subscribe(mutations:) lists the mutations by name",
                            ));
                        };
                        let mut listed = Vec::new();
                        for value in names {
                            let ConstValue::String(mutation) = value else {
                                return Err(self.error(
                                    directive.pos,
                                    "@aws_subscribe(mutations:) lists the mutations by name",
                                ));
                            };
                            listed.push(mutation.clone());
                        }
                        mutations = Some((directive.pos, listed));
                    }
                    // Checked (a wrong argument stops start-up); events reach only those who may read
                    // the node, by the type's own rules.
                    other if APPSYNC_DIRECTIVES.contains(&other) => {
                        self.appsync_rule(directive)?;
                    }
                    other => return Err(self.unknown_directive(directive.pos, other)),
                }
            }
            let Some((pos, mutations)) = mutations else {
                return Err(self.error(
                    field.pos,
                    format!(
                        "Subscription.{name}: a declared subscription needs \
                         @aws_subscribe(mutations: [...]); onCreate<Type>, onUpdate<Type> and \
                         onDelete<Type> are generated"
                    ),
                ));
            };
            let BaseType::Named(returned) = &field.node.ty.node.base else {
                return Err(self.error(
                    field.node.ty.pos,
                    format!("Subscription.{name} must return a @model type, not a list"),
                ));
            };
            let Some(type_def) = types.iter().find(|t| t.name == returned.as_str()) else {
                return Err(self.error(
                    field.node.ty.pos,
                    format!("Subscription.{name} must return a @model type, not {returned}"),
                ));
            };
            let roots = &type_def.roots;
            let generated: Vec<(String, Operation)> = [
                (&roots.create, Operation::Create),
                (&roots.update, Operation::Update),
                (&roots.delete, Operation::Delete),
            ]
            .into_iter()
            .filter_map(|(name, operation)| name.clone().map(|name| (name, operation)))
            .collect();
            if mutations.is_empty() {
                return Err(self.error(
                    pos,
                    format!("Subscription.{name}: @aws_subscribe names no mutation"),
                ));
            }
            let mut operations = Vec::new();
            for mutation in &mutations {
                let Some((_, operation)) = generated.iter().find(|(m, _)| m == mutation) else {
                    return Err(self.error(
                        pos,
                        format!(
                            "Subscription.{name}: @aws_subscribe names {mutation}, which is not a \
                             mutation returning {returned} (create{returned}, update{returned}, \
                             delete{returned})"
                        ),
                    ));
                };
                if !operations.contains(operation) {
                    operations.push(*operation);
                }
            }
            let mut arguments = Vec::new();
            for argument in &field.node.arguments {
                let argument_name = argument.node.name.node.as_str();
                let scalar = if argument_name == "id" {
                    Some(ScalarType::Id)
                } else {
                    type_def.field(argument_name).and_then(|f| match &f.kind {
                        FieldKind::Scalar { scalar, .. } => Some(scalar.clone()),
                        _ => None,
                    })
                };
                let Some(scalar) = scalar else {
                    return Err(self.error(
                        argument.pos,
                        format!(
                            "Subscription.{name}: argument {argument_name} must be named after a \
                             scalar field of {returned}: events are those whose field equals it"
                        ),
                    ));
                };
                let written = argument.node.ty.node.to_string();
                let expected = scalar.name().to_owned();
                // An id and a string are both sent as text: AppSync takes either for the other.
                let scalar = match (written.trim_end_matches('!'), &scalar) {
                    ("String", ScalarType::Id) => ScalarType::String,
                    ("ID", ScalarType::String) => ScalarType::Id,
                    _ => scalar,
                };
                if written.trim_end_matches('!') != scalar.name() {
                    return Err(self.error(
                        argument.node.ty.pos,
                        format!(
                            "Subscription.{name}: argument {argument_name} has the type of \
                             {returned}.{argument_name}, {expected}, not {written}"
                        ),
                    ));
                }
                arguments.push((argument_name.to_owned(), scalar));
            }
            if subscriptions.iter().any(|s| s.name == name) {
                return Err(self.error(field.pos, format!("Subscription.{name} is declared twice")));
            }
            let generated_names = types.iter().flat_map(|t| {
                [&t.roots.on_create, &t.roots.on_update, &t.roots.on_delete]
                    .into_iter()
                    .flatten()
                    .cloned()
            });
            if generated_names.clone().any(|g| g == name) {
                return Err(self.error(
                    field.pos,
                    format!("Subscription.{name} is generated; choose another name"),
                ));
            }
            subscriptions.push(SubscriptionDef {
                name,
                description: description(field.node.description.as_ref()),
                type_name: returned.to_string(),
                operations,
                arguments,
            });
        }
        Ok(subscriptions)
    }
}
