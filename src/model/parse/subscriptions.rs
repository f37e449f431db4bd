//! The schema's own `type Subscription`: AppSync's `@aws_subscribe` fields, checked against the
//! mutations they follow.

use super::{Reader, description};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{FieldKind, ModelError, Operation, ScalarType, SubscriptionDef, TypeDef};
use async_graphql_parser::types::{
    BaseType, ConstDirective, FieldDefinition, InputValueDefinition, TypeDefinition, TypeKind,
};
use async_graphql_parser::{Pos, Positioned};
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
            let subscription = self.read_subscription(field, types, &subscriptions)?;
            subscriptions.push(subscription);
        }
        Ok(subscriptions)
    }

    /// One field of `Subscription`, after the `declared` before it. The checks run in the order
    /// written here, which decides the first mistake a schema is refused with.
    fn read_subscription(
        &self,
        field: &Positioned<FieldDefinition>,
        types: &[TypeDef],
        declared: &[SubscriptionDef],
    ) -> Result<SubscriptionDef, ModelError> {
        let name = field.node.name.node.to_string();
        let (pos, mutations) = self.read_subscribe_directives(&name, field)?;
        let type_def = self.returns_a_model_type(&name, field, types)?;
        let at = At {
            name: &name,
            type_def,
        };
        let operations = self.subscribed_operations(&at, pos, &mutations)?;
        let arguments = self.read_subscription_arguments(&at, field)?;
        self.subscription_is_declared_once(&name, field, declared)?;
        self.subscription_is_not_generated(&name, field, types)?;
        let required = field
            .node
            .arguments
            .iter()
            .filter(|argument| !argument.node.ty.node.nullable)
            .map(|argument| argument.node.name.node.to_string())
            .collect();
        Ok(SubscriptionDef {
            description: description(field.node.description.as_ref()),
            type_name: type_def.name.clone(),
            operations,
            arguments,
            required,
            name,
        })
    }

    /// The mutations the field's `@aws_subscribe` lists, and where it is written.
    fn read_subscribe_directives(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
    ) -> Result<(Pos, Vec<String>), ModelError> {
        let mut mutations = None;
        for directive in &field.node.directives {
            match directive.node.name.node.as_str() {
                "aws_subscribe" => {
                    self.expect_arguments(directive, &["mutations"])?;
                    let listed = self.mutations_are_listed_by_name(directive)?;
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
        self.subscription_is_subscribed(name, field, mutations)
    }

    fn mutations_are_listed_by_name(
        &self,
        directive: &Positioned<ConstDirective>,
    ) -> Result<Vec<String>, ModelError> {
        let refused = || {
            self.error(
                directive.pos,
                "@aws_subscribe(mutations:) lists the mutations by name",
            )
        };
        let Some(ConstValue::List(names)) =
            directive.node.get_argument("mutations").map(|v| &v.node)
        else {
            return Err(refused());
        };
        names
            .iter()
            .map(|value| match value {
                ConstValue::String(mutation) => Ok(mutation.clone()),
                _ => Err(refused()),
            })
            .collect()
    }

    fn subscription_is_subscribed(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
        mutations: Option<(Pos, Vec<String>)>,
    ) -> Result<(Pos, Vec<String>), ModelError> {
        mutations.ok_or_else(|| {
            self.error(
                field.pos,
                format!(
                    "Subscription.{name}: a declared subscription needs \
                     @aws_subscribe(mutations: [...]); onCreate<Type>, onUpdate<Type> and \
                     onDelete<Type> are generated"
                ),
            )
        })
    }

    fn returns_a_model_type<'t>(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
        types: &'t [TypeDef],
    ) -> Result<&'t TypeDef, ModelError> {
        let BaseType::Named(returned) = &field.node.ty.node.base else {
            return Err(self.error(
                field.node.ty.pos,
                format!("Subscription.{name} must return a @model type, not a list"),
            ));
        };
        types
            .iter()
            .find(|t| t.name == returned.as_str())
            .ok_or_else(|| {
                self.error(
                    field.node.ty.pos,
                    format!("Subscription.{name} must return a @model type, not {returned}"),
                )
            })
    }

    /// What the `mutations` (listed at `pos`) do, each once, in the order listed: each a
    /// mutation generated for the type the subscription returns.
    fn subscribed_operations(
        &self,
        at: &At<'_>,
        pos: Pos,
        mutations: &[String],
    ) -> Result<Vec<Operation>, ModelError> {
        let roots = &at.type_def.roots;
        let generated: Vec<(String, Operation)> = [
            (&roots.create, Operation::Create),
            (&roots.update, Operation::Update),
            (&roots.delete, Operation::Delete),
        ]
        .into_iter()
        .filter_map(|(name, operation)| name.clone().map(|name| (name, operation)))
        .collect();
        self.subscribe_names_a_mutation(at, pos, mutations)?;
        let mut operations = Vec::new();
        for mutation in mutations {
            let operation = self.mutation_returns_the_type(at, pos, &generated, mutation)?;
            if !operations.contains(&operation) {
                operations.push(operation);
            }
        }
        Ok(operations)
    }

    fn subscribe_names_a_mutation(
        &self,
        at: &At<'_>,
        pos: Pos,
        mutations: &[String],
    ) -> Result<(), ModelError> {
        if !mutations.is_empty() {
            return Ok(());
        }
        Err(self.error(
            pos,
            format!("Subscription.{}: @aws_subscribe names no mutation", at.name),
        ))
    }

    fn mutation_returns_the_type(
        &self,
        at: &At<'_>,
        pos: Pos,
        generated: &[(String, Operation)],
        mutation: &str,
    ) -> Result<Operation, ModelError> {
        if let Some((_, operation)) = generated.iter().find(|(m, _)| m == mutation) {
            return Ok(*operation);
        }
        let (name, returned) = (at.name, &at.type_def.name);
        Err(self.error(
            pos,
            format!(
                "Subscription.{name}: @aws_subscribe names {mutation}, which is not a mutation \
                 returning {returned} (create{returned}, update{returned}, delete{returned})"
            ),
        ))
    }

    /// The field's arguments: each a scalar field of the returned type, which events must
    /// equal.
    fn read_subscription_arguments(
        &self,
        at: &At<'_>,
        field: &Positioned<FieldDefinition>,
    ) -> Result<Vec<(String, ScalarType)>, ModelError> {
        let mut arguments = Vec::new();
        for argument in &field.node.arguments {
            let argument_name = argument.node.name.node.as_str();
            let scalar = self.argument_names_a_scalar_field(at, argument)?;
            let scalar = self.argument_has_the_fields_type(at, argument, scalar)?;
            arguments.push((argument_name.to_owned(), scalar));
        }
        Ok(arguments)
    }

    fn argument_names_a_scalar_field(
        &self,
        at: &At<'_>,
        argument: &Positioned<InputValueDefinition>,
    ) -> Result<ScalarType, ModelError> {
        let argument_name = argument.node.name.node.as_str();
        let scalar = if argument_name == "id" {
            Some(ScalarType::Id)
        } else {
            at.type_def
                .field(argument_name)
                .and_then(|f| match &f.kind {
                    FieldKind::Scalar { scalar, .. } => Some(scalar.clone()),
                    _ => None,
                })
        };
        let (name, returned) = (at.name, &at.type_def.name);
        scalar.ok_or_else(|| {
            self.error(
                argument.pos,
                format!(
                    "Subscription.{name}: argument {argument_name} must be named after a scalar \
                     field of {returned}: events are those whose field equals it"
                ),
            )
        })
    }

    /// The argument's type, which must be that of the field it is named after (`scalar`).
    fn argument_has_the_fields_type(
        &self,
        at: &At<'_>,
        argument: &Positioned<InputValueDefinition>,
        scalar: ScalarType,
    ) -> Result<ScalarType, ModelError> {
        let written = argument.node.ty.node.to_string();
        let expected = scalar.name().to_owned();
        // An id and a string are both sent as text: AppSync takes either for the other.
        let scalar = match (written.trim_end_matches('!'), &scalar) {
            ("String", ScalarType::Id) => ScalarType::String,
            ("ID", ScalarType::String) => ScalarType::Id,
            _ => scalar,
        };
        if written.trim_end_matches('!') == scalar.name() {
            return Ok(scalar);
        }
        let (name, returned) = (at.name, &at.type_def.name);
        let argument_name = &argument.node.name.node;
        Err(self.error(
            argument.node.ty.pos,
            format!(
                "Subscription.{name}: argument {argument_name} has the type of \
                 {returned}.{argument_name}, {expected}, not {written}"
            ),
        ))
    }

    fn subscription_is_declared_once(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
        declared: &[SubscriptionDef],
    ) -> Result<(), ModelError> {
        if declared.iter().any(|s| s.name == name) {
            return Err(self.error(field.pos, format!("Subscription.{name} is declared twice")));
        }
        Ok(())
    }

    fn subscription_is_not_generated(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
        types: &[TypeDef],
    ) -> Result<(), ModelError> {
        let mut generated = types.iter().flat_map(|t| {
            [&t.roots.on_create, &t.roots.on_update, &t.roots.on_delete]
                .into_iter()
                .flatten()
        });
        if generated.any(|g| g == name) {
            return Err(self.error(
                field.pos,
                format!("Subscription.{name} is generated; choose another name"),
            ));
        }
        Ok(())
    }
}

/// The subscription a check is about: its name, and the `@model` type it returns.
struct At<'s> {
    name: &'s str,
    type_def: &'s TypeDef,
}

#[cfg(test)]
mod tests {
    //! Each mistake a declared subscription is refused for.

    use super::super::assert_refused;

    /// A schema with a `@model` type `A`, and `subscription` as its `type Subscription`'s fields.
    fn with_subscription(subscription: &str) -> String {
        format!("type A @model {{ x: Int }}\ntype Subscription {{ {subscription} }}")
    }

    #[test]
    fn mutations_not_listed_by_name_are_refused() {
        let message = "@aws_subscribe(mutations:) lists the mutations by name";
        assert_refused(
            &with_subscription(r#"onA: A @aws_subscribe(mutations: "createA")"#),
            message,
        );
        assert_refused(
            &with_subscription("onA: A @aws_subscribe(mutations: [1])"),
            message,
        );
    }

    #[test]
    fn a_subscription_without_aws_subscribe_is_refused() {
        assert_refused(
            &with_subscription("onA: A"),
            "Subscription.onA: a declared subscription needs @aws_subscribe(mutations: [...]); \
             onCreate<Type>, onUpdate<Type> and onDelete<Type> are generated",
        );
    }

    #[test]
    fn a_subscription_returning_a_list_is_refused() {
        assert_refused(
            &with_subscription(r#"onA: [A] @aws_subscribe(mutations: ["createA"])"#),
            "Subscription.onA must return a @model type, not a list",
        );
    }

    #[test]
    fn a_subscription_returning_no_model_type_is_refused() {
        assert_refused(
            &with_subscription(r#"onA: Int @aws_subscribe(mutations: ["createA"])"#),
            "Subscription.onA must return a @model type, not Int",
        );
    }

    #[test]
    fn a_subscription_naming_no_mutation_is_refused() {
        assert_refused(
            &with_subscription("onA: A @aws_subscribe(mutations: [])"),
            "Subscription.onA: @aws_subscribe names no mutation",
        );
    }

    #[test]
    fn a_mutation_of_another_type_is_refused() {
        assert_refused(
            &with_subscription(r#"onA: A @aws_subscribe(mutations: ["createB"])"#),
            "Subscription.onA: @aws_subscribe names createB, which is not a mutation returning A \
             (createA, updateA, deleteA)",
        );
    }

    #[test]
    fn an_argument_named_after_no_scalar_field_is_refused() {
        assert_refused(
            &with_subscription(r#"onA(y: Int): A @aws_subscribe(mutations: ["createA"])"#),
            "Subscription.onA: argument y must be named after a scalar field of A: events are \
             those whose field equals it",
        );
    }

    #[test]
    fn an_argument_of_another_type_than_its_field_is_refused() {
        assert_refused(
            &with_subscription(r#"onA(x: String): A @aws_subscribe(mutations: ["createA"])"#),
            "Subscription.onA: argument x has the type of A.x, Int, not String",
        );
    }

    #[test]
    fn a_subscription_declared_twice_is_refused() {
        assert_refused(
            &with_subscription(
                r#"onA: A @aws_subscribe(mutations: ["createA"])
                   onA: A @aws_subscribe(mutations: ["updateA"])"#,
            ),
            "Subscription.onA is declared twice",
        );
    }

    #[test]
    fn a_subscription_named_like_a_generated_one_is_refused() {
        assert_refused(
            &with_subscription(r#"onCreateA: A @aws_subscribe(mutations: ["createA"])"#),
            "Subscription.onCreateA is generated; choose another name",
        );
    }
}
