//! The schema's own `type Subscription`: AppSync's `@aws_subscribe` fields, checked against the
//! mutations they follow: generated mutations of the `@model` type a field returns, or the
//! schema's own mutations returning the object type it returns (AppSync's pub/sub through
//! local resolvers: each answer of one of them is an event).

use super::{Reader, description};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{
    AuthRule, FieldDef, FieldKind, ModelError, ObjectDef, Operation, OwnField, Root, ScalarType,
    SubscriptionDef, TypeDef,
};
use async_graphql_parser::types::{
    BaseType, ConstDirective, FieldDefinition, InputValueDefinition, TypeDefinition, TypeKind,
};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;

/// What a declared subscription may return and follow: the `@model` types, the object types
/// without `@model`, and the schema's own root fields.
pub(super) struct Known<'s> {
    pub(super) types: &'s [TypeDef],
    pub(super) objects: &'s [ObjectDef],
    pub(super) own_fields: &'s [OwnField],
}

/// What a subscription follows, once its returned type is known.
struct Followed {
    type_name: String,
    operations: Vec<Operation>,
    answers_of: Vec<String>,
    arguments: Vec<(String, ScalarType)>,
}

impl Reader<'_> {
    /// The fields of a declared `Subscription` type: each `@aws_subscribe(mutations: [...])`,
    /// naming generated mutations of the `@model` type it returns or the schema's own
    /// mutations of the object type it returns, with arguments that are scalar fields of that
    /// type.
    pub(super) fn read_subscriptions(
        &self,
        definition: &Positioned<TypeDefinition>,
        known: &Known<'_>,
    ) -> Result<Vec<SubscriptionDef>, ModelError> {
        let TypeKind::Object(kind) = &definition.node.kind else {
            unreachable!("read_subscriptions is only called for an object type");
        };
        self.refuse_directives(&definition.node.directives)?;
        let mut subscriptions: Vec<SubscriptionDef> = Vec::new();
        for field in &kind.fields {
            let subscription = self.read_subscription(field, known, &subscriptions)?;
            subscriptions.push(subscription);
        }
        Ok(subscriptions)
    }

    /// One field of `Subscription`, after the `declared` before it. The checks run in the order
    /// written here, which decides the first mistake a schema is refused with.
    fn read_subscription(
        &self,
        field: &Positioned<FieldDefinition>,
        known: &Known<'_>,
        declared: &[SubscriptionDef],
    ) -> Result<SubscriptionDef, ModelError> {
        let name = field.node.name.node.to_string();
        let (pos, mutations, auth) = self.read_subscribe_directives(&name, field)?;
        let returned = self.returned_name(&name, field)?;
        let followed = if let Some(type_def) = known.types.iter().find(|t| t.name == returned) {
            self.follow_writes(&name, field, type_def, pos, &mutations)?
        } else if let Some(object) = known.objects.iter().find(|o| o.name == returned) {
            self.follow_answers(&name, field, object, (pos, &mutations), known.own_fields)?
        } else {
            return Err(self.error(
                field.node.ty.pos,
                format!(
                    "Subscription.{name} must return a @model type or an object type, not \
                     {returned}"
                ),
            ));
        };
        self.subscription_is_declared_once(&name, field, declared)?;
        self.subscription_is_not_generated(&name, field, known.types)?;
        let required = field
            .node
            .arguments
            .iter()
            .filter(|argument| !argument.node.ty.node.nullable)
            .map(|argument| argument.node.name.node.to_string())
            .collect();
        Ok(SubscriptionDef {
            description: description(field.node.description.as_ref()),
            type_name: followed.type_name,
            operations: followed.operations,
            answers_of: followed.answers_of,
            arguments: followed.arguments,
            required,
            auth,
            name,
        })
    }

    /// A subscription to the nodes of `type_def` that generated mutations write.
    fn follow_writes(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
        type_def: &TypeDef,
        pos: Pos,
        mutations: &[String],
    ) -> Result<Followed, ModelError> {
        let at = At {
            name,
            returned: &type_def.name,
            fields: &type_def.fields,
            has_id: true,
        };
        Ok(Followed {
            type_name: type_def.name.clone(),
            operations: self.subscribed_operations(&at, type_def, pos, mutations)?,
            answers_of: Vec::new(),
            arguments: self.read_subscription_arguments(&at, field)?,
        })
    }

    /// A subscription to the answers of the schema's own mutations returning `object`.
    fn follow_answers(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
        object: &ObjectDef,
        (pos, mutations): (Pos, &[String]),
        own_fields: &[OwnField],
    ) -> Result<Followed, ModelError> {
        let at = At {
            name,
            returned: &object.name,
            fields: &object.fields,
            has_id: false,
        };
        self.subscribe_names_a_mutation(&at, pos, mutations)?;
        let mut answers_of: Vec<String> = Vec::new();
        for mutation in mutations {
            let answers = own_fields.iter().any(|own| {
                own.root == Root::Mutation
                    && own.name == *mutation
                    && own.field.element == object.name
                    && !own.field.list
            });
            if !answers {
                return Err(self.error(
                    pos,
                    format!(
                        "Subscription.{name}: @aws_subscribe names {mutation}, which is not a \
                         field of the schema's own type Mutation returning {}",
                        object.name
                    ),
                ));
            }
            if !answers_of.contains(mutation) {
                answers_of.push(mutation.clone());
            }
        }
        Ok(Followed {
            type_name: object.name.clone(),
            operations: Vec::new(),
            answers_of,
            arguments: self.read_subscription_arguments(&at, field)?,
        })
    }

    /// The mutations the field's `@aws_subscribe` lists, where it is written, and who may
    /// subscribe by AppSync's `@aws_*` directives (read for a subscription to answers; one to
    /// nodes is held to the type's rules, so an event reaches only those who may read the node).
    fn read_subscribe_directives(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
    ) -> Result<(Pos, Vec<String>, Vec<AuthRule>), ModelError> {
        let mut mutations = None;
        let mut auth = Vec::new();
        for directive in &field.node.directives {
            match directive.node.name.node.as_str() {
                "aws_subscribe" => {
                    self.expect_arguments(directive, &["mutations"])?;
                    let listed = self.mutations_are_listed_by_name(directive)?;
                    mutations = Some((directive.pos, listed));
                }
                other if APPSYNC_DIRECTIVES.contains(&other) => {
                    auth.push(self.appsync_rule(directive)?.rule);
                }
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        let (pos, mutations) = self.subscription_is_subscribed(name, field, mutations)?;
        Ok((pos, mutations, auth))
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

    /// The name of the type the field returns, which is no list.
    fn returned_name(
        &self,
        name: &str,
        field: &Positioned<FieldDefinition>,
    ) -> Result<String, ModelError> {
        match &field.node.ty.node.base {
            BaseType::Named(returned) => Ok(returned.to_string()),
            BaseType::List(_) => Err(self.error(
                field.node.ty.pos,
                format!(
                    "Subscription.{name} must return a @model type or an object type, not a list"
                ),
            )),
        }
    }

    /// What the `mutations` (listed at `pos`) do, each once, in the order listed: each a
    /// mutation generated for the type the subscription returns.
    fn subscribed_operations(
        &self,
        at: &At<'_>,
        type_def: &TypeDef,
        pos: Pos,
        mutations: &[String],
    ) -> Result<Vec<Operation>, ModelError> {
        let roots = &type_def.roots;
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
        let (name, returned) = (at.name, at.returned);
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
        let scalar = if argument_name == "id" && at.has_id {
            Some(ScalarType::Id)
        } else {
            at.fields
                .iter()
                .find(|f| f.name == argument_name)
                .and_then(|f| match &f.kind {
                    FieldKind::Scalar { scalar, .. } => Some(scalar.clone()),
                    _ => None,
                })
        };
        let (name, returned) = (at.name, at.returned);
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
        let (name, returned) = (at.name, at.returned);
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

/// The subscription a check is about: its name, and the type it returns (`has_id`: a `@model`
/// type, whose nodes have an `id`).
struct At<'s> {
    name: &'s str,
    returned: &'s str,
    fields: &'s [FieldDef],
    has_id: bool,
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
            "Subscription.onA must return a @model type or an object type, not a list",
        );
    }

    #[test]
    fn a_subscription_returning_no_model_type_is_refused() {
        assert_refused(
            &with_subscription(r#"onA: Int @aws_subscribe(mutations: ["createA"])"#),
            "Subscription.onA must return a @model type or an object type, not Int",
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
