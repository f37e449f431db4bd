//! The `Subscription` root: `onCreate<Type>`, `onUpdate<Type>` and `onDelete<Type>` for every
//! `@model` type, and `on<Edge>Added` / `on<Edge>Removed` for every `@edge` type, fed by the
//! engine's events (the table's change stream), so a write made anywhere reaches them.
//!
//! A node subscription takes the type's scalar fields and `id` as optional arguments that must
//! equal the event's values (AppSync's argument filtering), and a `filter` with AppSync's
//! enhanced-filter operators (`ModelSubscription<Type>FilterInput`), both checked before the
//! event is resolved. An event then resolves like a query, with a request scope of its own
//! ([`EventScopes`]), so nested fields load through the batched loaders.

use std::sync::Arc;

use async_graphql::dynamic::{
    FieldValue, InputObject, InputValue, SchemaBuilder, Subscription, SubscriptionField,
    SubscriptionFieldFuture, TypeRef,
};
use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextExecute};
use async_graphql::{Data, Response, Value};

use super::edge_types::EdgeItem;
use super::errors::graphql_error;
use super::scalars::scalar_type_ref;
use super::values::from_input;
use crate::engine::{
    ChangeKind, EngineError, Event, EventHub, EventReceiver, Filter, Node, ScopeSource, Test, Watch,
};
use crate::model::{FieldKind, Model, ScalarType, TypeDef};

/// The operators of each kind of filtered field, as Amplify names their inputs.
const FIELD_INPUTS: [(&str, &str, &[&str]); 5] = [
    (
        "ModelSubscriptionStringInput",
        TypeRef::STRING,
        &ALL_OPERATORS,
    ),
    ("ModelSubscriptionIDInput", TypeRef::ID, &ALL_OPERATORS),
    ("ModelSubscriptionIntInput", TypeRef::INT, &NUMBER_OPERATORS),
    (
        "ModelSubscriptionFloatInput",
        TypeRef::FLOAT,
        &NUMBER_OPERATORS,
    ),
    (
        "ModelSubscriptionBooleanInput",
        TypeRef::BOOLEAN,
        &["eq", "ne"],
    ),
];
const ALL_OPERATORS: [&str; 12] = [
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "contains",
    "notContains",
    "beginsWith",
    "in",
    "notIn",
    "between",
];
const NUMBER_OPERATORS: [&str; 9] = ["eq", "ne", "lt", "le", "gt", "ge", "in", "notIn", "between"];

/// The input type that filters a field holding `scalar`.
fn field_input(scalar: &ScalarType) -> &'static str {
    match scalar {
        ScalarType::Id => "ModelSubscriptionIDInput",
        ScalarType::Int => "ModelSubscriptionIntInput",
        ScalarType::Float => "ModelSubscriptionFloatInput",
        ScalarType::Boolean => "ModelSubscriptionBooleanInput",
        _ => "ModelSubscriptionStringInput",
    }
}

/// The fields a subscription to `type_def` filters on: `id`, its scalar fields, and the times.
fn filtered_fields(type_def: &TypeDef) -> Vec<(String, ScalarType)> {
    let mut fields = vec![("id".to_owned(), ScalarType::Id)];
    for field in &type_def.fields {
        if let FieldKind::Scalar { scalar, .. } = &field.kind {
            fields.push((field.name.clone(), scalar.clone()));
        }
    }
    fields.push(("createdAt".to_owned(), ScalarType::AwsDateTime));
    fields.push(("updatedAt".to_owned(), ScalarType::AwsDateTime));
    fields
}

/// Registers the filter inputs and the `Subscription` root.
pub(super) fn register(mut builder: SchemaBuilder, model: &Arc<Model>) -> SchemaBuilder {
    for (name, element, operators) in FIELD_INPUTS {
        let mut input = InputObject::new(name);
        for operator in operators {
            let ty = match *operator {
                "in" | "notIn" | "between" => TypeRef::named_list(element),
                _ => TypeRef::named(element),
            };
            input = input.field(InputValue::new(*operator, ty));
        }
        builder = builder.register(input);
    }
    let mut root = Subscription::new("Subscription");
    for type_def in &model.types {
        let filter_name = format!("ModelSubscription{}FilterInput", type_def.name);
        let mut filter = InputObject::new(&filter_name)
            .field(InputValue::new("and", TypeRef::named_list(&filter_name)))
            .field(InputValue::new("or", TypeRef::named_list(&filter_name)));
        for (field, scalar) in filtered_fields(type_def) {
            filter = filter.field(InputValue::new(field, TypeRef::named(field_input(&scalar))));
        }
        builder = builder.register(filter);
        for (verb, kind) in [
            ("Create", ChangeKind::Created),
            ("Update", ChangeKind::Updated),
            ("Delete", ChangeKind::Deleted),
        ] {
            root = root.field(node_subscription(type_def, verb, kind));
        }
    }
    for edge_def in &model.edges {
        for (verb, kinds) in [
            ("Added", vec![ChangeKind::Created, ChangeKind::Updated]),
            ("Removed", vec![ChangeKind::Deleted]),
        ] {
            let name = format!("on{}{verb}", edge_def.name);
            root = root.field(edge_subscription(&edge_def.name, &name, kinds));
        }
    }
    builder.register(root)
}

fn node_subscription(type_def: &TypeDef, verb: &str, kind: ChangeKind) -> SubscriptionField {
    let typename = type_def.name.clone();
    let fields = Arc::new(filtered_fields(type_def));
    let arguments = fields.clone();
    let mut field = SubscriptionField::new(
        format!("on{verb}{}", type_def.name),
        TypeRef::named(&type_def.name),
        move |ctx| {
            let typename = typename.clone();
            let fields = fields.clone();
            SubscriptionFieldFuture::new(async move {
                let mut tests = Vec::new();
                for (name, scalar) in fields.iter() {
                    tests.extend(equal_to(&ctx, name, scalar)?);
                }
                if let Some(filter) = ctx.args.get("filter") {
                    tests.push(filter_of(filter.as_value(), &fields).map_err(graphql_error)?);
                }
                let watch = Watch {
                    typename: typename.clone(),
                    kinds: vec![kind],
                    filter: Filter::All(tests),
                };
                let events = receiver(&ctx)?;
                Ok(stream_of(events, watch, move |item| {
                    FieldValue::owned_any(Node {
                        typename: typename.clone(),
                        item,
                    })
                }))
            })
        },
    )
    .description(format!(
        "Each {} {} from now on, by whoever wrote it; arguments must equal the event's values.",
        type_def.name,
        match kind {
            ChangeKind::Created => "created",
            ChangeKind::Updated => "updated",
            ChangeKind::Deleted => "deleted",
        }
    ));
    for (name, scalar) in arguments.iter() {
        field = field.argument(InputValue::new(name, scalar_type_ref(scalar, false)));
    }
    field.argument(InputValue::new(
        "filter",
        TypeRef::named(format!("ModelSubscription{}FilterInput", type_def.name)),
    ))
}

fn edge_subscription(edge_name: &str, name: &str, kinds: Vec<ChangeKind>) -> SubscriptionField {
    let typename = edge_name.to_owned();
    SubscriptionField::new(name, TypeRef::named(edge_name), move |ctx| {
        let typename = typename.clone();
        let kinds = kinds.clone();
        SubscriptionFieldFuture::new(async move {
            let mut tests = Vec::new();
            for end in ["from", "to"] {
                tests.extend(equal_to(&ctx, end, &ScalarType::Id)?);
            }
            let watch = Watch {
                typename,
                kinds,
                filter: Filter::All(tests),
            };
            let events = receiver(&ctx)?;
            Ok(stream_of(events, watch, |item| {
                FieldValue::owned_any(EdgeItem(item))
            }))
        })
    })
    .description(format!(
        "Each {edge_name} edge {} from now on; `from` and `to` must equal the edge's ends.",
        if name.ends_with("Added") {
            "added or changed"
        } else {
            "removed"
        }
    ))
    .argument(InputValue::new("from", TypeRef::named(TypeRef::ID)))
    .argument(InputValue::new("to", TypeRef::named(TypeRef::ID)))
}

/// The test an argument named after a field makes (AppSync's argument filtering): the field
/// must equal it. `None` when the argument is absent or null.
fn equal_to(
    ctx: &async_graphql::dynamic::ResolverContext<'_>,
    name: &str,
    scalar: &ScalarType,
) -> async_graphql::Result<Option<Filter>> {
    let Some(value) = ctx.args.get(name) else {
        return Ok(None);
    };
    let value = from_input(value.as_value(), scalar, name).map_err(graphql_error)?;
    Ok(value.map(|value| Filter::Field {
        field: name.to_owned(),
        test: Test::Eq(value),
    }))
}

/// A receiver of the events, once the subscription is known to be valid.
fn receiver(
    ctx: &async_graphql::dynamic::ResolverContext<'_>,
) -> async_graphql::Result<EventReceiver> {
    let hub = ctx
        .data::<EventHub>()
        .map_err(|_| graphql_error(EngineError::SubscriptionsUnavailable))?;
    if !hub.is_following() {
        return Err(graphql_error(EngineError::SubscriptionsUnavailable));
    }
    hub.subscribe().ok_or_else(|| {
        graphql_error(EngineError::LimitExceeded(format!(
            "this server holds its most subscriptions ({}, --max-subscriptions); \
             try again later or another replica",
            hub.most()
        )))
    })
}

/// The events `watch` wants, as field values; an error, which ends the subscription, when
/// events were missed.
fn stream_of<'a>(
    events: EventReceiver,
    watch: Watch,
    value: impl Fn(Arc<crate::store::Item>) -> FieldValue<'a> + Send + Sync + 'a,
) -> impl futures::Stream<Item = async_graphql::Result<FieldValue<'a>>> + Send + 'a {
    futures::stream::unfold(Some((events, watch, value)), |state| async move {
        let (mut events, watch, value) = state?;
        loop {
            match events.next().await? {
                Event::Missed => {
                    return Some((Err(graphql_error(EngineError::EventsMissed)), None));
                }
                Event::Changed(change) => {
                    if let Some(item) = watch.wants(&change) {
                        events.delivered();
                        let field = value(item);
                        return Some((Ok(field), Some((events, watch, value))));
                    }
                }
            }
        }
    })
}

/// The engine's filter of a `ModelSubscription<Type>FilterInput` value.
fn filter_of(value: &Value, fields: &[(String, ScalarType)]) -> Result<Filter, EngineError> {
    let Value::Object(members) = value else {
        return Ok(Filter::All(Vec::new()));
    };
    let mut all = Vec::new();
    for (name, value) in members {
        match (name.as_str(), value) {
            (_, Value::Null) => {}
            ("and" | "or", Value::List(filters)) => {
                let filters = filters
                    .iter()
                    .map(|filter| filter_of(filter, fields))
                    .collect::<Result<Vec<_>, _>>()?;
                all.push(if name.as_str() == "and" {
                    Filter::All(filters)
                } else {
                    Filter::Any(filters)
                });
            }
            (field, Value::Object(operators)) => {
                let Some((_, scalar)) = fields.iter().find(|(name, _)| name == field) else {
                    return Err(EngineError::bad_input(format!("filter: no field {field}")));
                };
                for (operator, operand) in operators {
                    if let Some(test) = test_of(field, operator.as_str(), operand, scalar)? {
                        all.push(Filter::Field {
                            field: field.to_owned(),
                            test,
                        });
                    }
                }
            }
            (field, _) => {
                return Err(EngineError::bad_input(format!(
                    "filter.{field}: expected an object of operators"
                )));
            }
        }
    }
    Ok(Filter::All(all))
}

fn test_of(
    field: &str,
    operator: &str,
    operand: &Value,
    scalar: &ScalarType,
) -> Result<Option<Test>, EngineError> {
    let at = format!("filter.{field}.{operator}");
    let one = |value: &Value| -> Result<crate::store::AttrValue, EngineError> {
        // An id operand is compared, not stored: `beginsWith`/`contains` take parts of ids,
        // which need not be valid ids themselves.
        let scalar = match scalar {
            ScalarType::Id => &ScalarType::String,
            other => other,
        };
        from_input(value, scalar, &at)?
            .ok_or_else(|| EngineError::bad_input(format!("{at}: null is no value to compare")))
    };
    let many = |value: &Value| -> Result<Vec<crate::store::AttrValue>, EngineError> {
        match value {
            Value::List(values) => values.iter().map(one).collect(),
            _ => Err(EngineError::bad_input(format!("{at}: expected a list"))),
        }
    };
    if operand == &Value::Null {
        return Ok(None);
    }
    Ok(Some(match operator {
        "eq" => Test::Eq(one(operand)?),
        "ne" => Test::Ne(one(operand)?),
        "lt" => Test::Lt(one(operand)?),
        "le" => Test::Le(one(operand)?),
        "gt" => Test::Gt(one(operand)?),
        "ge" => Test::Ge(one(operand)?),
        "contains" => Test::Contains(one(operand)?),
        "notContains" => Test::NotContains(one(operand)?),
        "beginsWith" => match operand {
            Value::String(prefix) => Test::BeginsWith(prefix.clone()),
            _ => return Err(EngineError::bad_input(format!("{at}: expected a string"))),
        },
        "in" => Test::In(many(operand)?),
        "notIn" => Test::NotIn(many(operand)?),
        "between" => match many(operand)?.as_slice() {
            [low, high] => Test::Between(low.clone(), high.clone()),
            _ => {
                return Err(EngineError::bad_input(format!(
                    "{at}: expected two values, the lower and the upper bound"
                )));
            }
        },
        _ => return Err(EngineError::bad_input(format!("{at}: unknown operator"))),
    }))
}

/// Gives each event of a subscription a request scope of its own: a fresh loader (what an
/// earlier event read may have changed since) and a fresh budget of storage calls. Installed
/// only on the copy of the schema that runs subscriptions; the scope source comes with the
/// request (`graphql::Transport` adds it).
pub(super) struct EventScopes;

impl ExtensionFactory for EventScopes {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(EventScopes)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for EventScopes {
    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> Response {
        match ctx.data_opt::<ScopeSource>() {
            Some(source) => {
                let mut data = Data::default();
                data.insert(Arc::new(source.scope()));
                next.run_with_data(ctx, operation_name, data).await
            }
            None => next.run(ctx, operation_name).await,
        }
    }
}
