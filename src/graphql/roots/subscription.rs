//! The `Subscription` root: `onCreate<Type>`, `onUpdate<Type>` and `onDelete<Type>` for every
//! `@model` type, and `on<Edge>Added` / `on<Edge>Removed` for every `@edge` type, fed by the
//! engine's events (the table's change stream), so a write made anywhere reaches them.
//!
//! AppSync's declared subscriptions (`@aws_subscribe(mutations: [...])` on a field of a
//! declared `Subscription` type) are the same node subscriptions under the declared name and
//! arguments.
//!
//! A node subscription takes the type's scalar fields and `id` as optional arguments that must
//! equal the event's values (AppSync's argument filtering), and a `filter` with AppSync's
//! enhanced-filter operators (`ModelSubscription<Type>FilterInput`), both checked before the
//! event is resolved. An event then resolves like a query, with a request scope of its own
//! ([`EventScopes`]), so nested fields load through the batched loaders.

use std::sync::Arc;

use async_graphql::dynamic::{
    FieldValue, InputValue, SchemaBuilder, Subscription, SubscriptionField,
    SubscriptionFieldFuture, TypeRef,
};
use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextExecute};
use async_graphql::{Data, Response};

use crate::auth::Caller;
use crate::changes::{ChangeKind, Event, EventHub, EventReceiver, Watch, published_typename};
use crate::engine::read::Node;
use crate::engine::read::{Filter, Test};
use crate::engine::{Access, EngineError, ScopeSource};
use crate::graphql::errors::graphql_error;
use crate::graphql::types::edge_types::EdgeItem;
use crate::graphql::types::embedded::Embedded;
use crate::graphql::values::filters::{self, FilterKind};
use crate::graphql::values::from_input;
use crate::graphql::values::scalars::scalar_type_ref;
use crate::model::{FieldKind, Model, Operation, ScalarType, SubscriptionDef, TypeDef};

/// The fields a subscription to `type_def` filters on: `id`, and those of a condition. In
/// Amplify's API, as its transformer declares them: the key a parent's bare `@hasMany` adds
/// to `type_def` is tested on the parent's events instead (where it never holds).
fn filtered_fields(type_def: &TypeDef, model: &Model) -> Vec<(String, ScalarType)> {
    let mut fields = filters::node_filter_fields(type_def);
    if !model.dialect.amplify_shape() {
        return fields;
    }
    let implied_by_parent = |key: &String| {
        model.types.iter().any(|parent| {
            parent.fields.iter().any(|field| {
                matches!(&field.kind, FieldKind::HasMany(has_many)
                    if has_many.foreign_key == *key
                        && model.possible_types(&has_many.element).contains(&type_def.name.as_str()))
            })
        })
    };
    fields.retain(|(name, _)| !(type_def.implied.contains(name) && implied_by_parent(name)));
    for field in &type_def.fields {
        if let FieldKind::HasMany(has_many) = &field.kind
            && let Some(element) = model.type_def(&has_many.element)
            && element.implied.contains(&has_many.foreign_key)
            && !fields.iter().any(|(name, _)| *name == has_many.foreign_key)
        {
            fields.push((has_many.foreign_key.clone(), ScalarType::Id));
        }
    }
    fields
}

/// The arguments Amplify gives a type's subscriptions: each field an owner rule names, as a
/// `String` its events' field must equal.
fn owner_arguments(type_def: &TypeDef) -> Vec<(String, ScalarType)> {
    let mut arguments: Vec<(String, ScalarType)> = Vec::new();
    for rule in &type_def.auth {
        if let crate::model::Allow::Owner {
            field, many: false, ..
        } = &rule.allow
            && !arguments.iter().any(|(name, _)| name == field)
        {
            arguments.push((field.clone(), ScalarType::String));
        }
    }
    arguments
}

/// The owner arguments of a type's subscriptions in transformer v1's API (as `String`s) and
/// whether they are required ([`crate::model::v1_subscription_owners`]).
fn v1_owner_arguments(type_def: &TypeDef) -> (Vec<(String, ScalarType)>, bool) {
    let (owners, required) = crate::model::v1_subscription_owners(&type_def.auth);
    let arguments = owners
        .into_iter()
        .map(|owner| (owner, ScalarType::String))
        .collect();
    (arguments, required)
}

/// Registers AppSync's enhanced subscription filters: `ModelSubscription<Type>FilterInput` and
/// the per-field inputs they use.
fn register_filter_inputs(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
    // Those of the types with subscriptions (`@model(subscriptions: null)` has none).
    let subscribed: Vec<&TypeDef> = model
        .types
        .iter()
        .filter(|t| {
            let roots = &t.roots;
            roots.on_create.is_some() || roots.on_update.is_some() || roots.on_delete.is_some()
        })
        .collect();
    let filtered: Vec<(String, ScalarType)> = subscribed
        .iter()
        .flat_map(|t| filtered_fields(t, model))
        .collect();
    builder = filters::register_field_inputs(
        builder,
        FilterKind::Subscription,
        filtered.iter().map(|(_, scalar)| scalar),
        filters::Style::of(&model.dialect),
    );
    for type_def in subscribed {
        builder = builder.register(filters::filter_input(
            &format!("ModelSubscription{}FilterInput", type_def.name),
            &filtered_fields(type_def, model),
            FilterKind::Subscription,
            filters::Style::of(&model.dialect),
            &filters::owner_fields(type_def),
        ));
    }
    builder
}

/// Registers the filter inputs and the `Subscription` root.
pub(in crate::graphql) fn register(
    mut builder: SchemaBuilder,
    model: &Arc<Model>,
) -> SchemaBuilder {
    // Transformer v1's subscriptions take no filter, only the owner fields (required).
    let v1 = model.dialect.v1_api();
    if !v1 {
        builder = register_filter_inputs(builder, model);
    }
    let mut root = Subscription::new("Subscription");
    for type_def in &model.types {
        let fields = filtered_fields(type_def, model);
        let roots = &type_def.roots;
        for (name, kind) in [
            (&roots.on_create, ChangeKind::Created),
            (&roots.on_update, ChangeKind::Updated),
            (&roots.on_delete, ChangeKind::Deleted),
        ] {
            let Some(name) = name else {
                continue;
            };
            let description = format!(
                "Each {} {} from now on, by whoever wrote it; arguments must equal the event's values.",
                type_def.name,
                past_tense(kind)
            );
            // Amplify's subscriptions take the owner fields (as `String`s) beside `filter`;
            // tablegraph's, every field the filter may test.
            let (arguments, required) = match model.dialect.amplify_shape() {
                // Required as transformer v1 makes them; optional with tablegraph's additions,
                // as v1's older releases served them (apps' operations leave them out).
                true if v1 => {
                    let (owners, required) = v1_owner_arguments(type_def);
                    let required = match required && !model.dialect.additions() {
                        true => owners.iter().map(|(name, _)| name.clone()).collect(),
                        false => Vec::new(),
                    };
                    (owners, required)
                }
                true => (owner_arguments(type_def), Vec::new()),
                false => (fields.clone(), Vec::new()),
            };
            root = root.field(node_subscription(
                NodeWatch {
                    name: name.clone(),
                    typename: type_def.name.clone(),
                    kinds: vec![kind],
                    arguments,
                    required,
                    filter: (!v1).then(|| fields.clone()),
                },
                description,
            ));
        }
    }
    // AppSync's `@aws_subscribe(mutations: [...])`: the same events, under the declared name
    // and arguments.
    for declared in &model.subscriptions {
        if !declared.answers_of.is_empty() {
            root = root.field(answer_subscription(declared));
            continue;
        }
        let kinds = declared
            .operations
            .iter()
            .filter_map(|operation| match operation {
                Operation::Create => Some(ChangeKind::Created),
                Operation::Update => Some(ChangeKind::Updated),
                Operation::Delete => Some(ChangeKind::Deleted),
                Operation::Read => None,
            })
            .collect::<Vec<_>>();
        let description = declared.description.clone().unwrap_or_else(|| {
            format!(
                "Each {} {} from now on; arguments must equal the event's values.",
                declared.type_name,
                kinds
                    .iter()
                    .map(|kind| past_tense(*kind))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        });
        root = root.field(node_subscription(
            NodeWatch {
                name: declared.name.clone(),
                typename: declared.type_name.clone(),
                kinds,
                arguments: declared.arguments.clone(),
                required: declared.required.clone(),
                filter: None,
            },
            description,
        ));
    }
    for edge_def in &model.edges {
        for (verb, kinds) in [
            ("Added", vec![ChangeKind::Created, ChangeKind::Updated]),
            ("Removed", vec![ChangeKind::Deleted]),
        ] {
            let name = format!("on{}{verb}", edge_def.name);
            let ends: Vec<String> = model
                .possible_types(&edge_def.from)
                .into_iter()
                .chain(model.possible_types(&edge_def.to))
                .map(str::to_owned)
                .collect();
            root = root.field(edge_subscription(&edge_def.name, &name, kinds, ends));
        }
    }
    builder.register(root)
}

/// A subscription to the nodes of one type: its name, the changes it wants, and the scalar
/// arguments that must equal the event's values (with `filter`, AppSync's enhanced filter).
struct NodeWatch {
    name: String,
    typename: String,
    kinds: Vec<ChangeKind>,
    arguments: Vec<(String, ScalarType)>,
    /// The arguments that are required (transformer v1's owner arguments, or as declared).
    required: Vec<String>,
    /// The fields `filter` may test, when the subscription takes one.
    filter: Option<Vec<(String, ScalarType)>>,
}

fn past_tense(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Created => "created",
        ChangeKind::Updated => "updated",
        ChangeKind::Deleted => "deleted",
    }
}

fn node_subscription(watch: NodeWatch, description: String) -> SubscriptionField {
    let NodeWatch {
        name,
        typename,
        kinds,
        arguments,
        required,
        filter,
    } = watch;
    let filter_input = format!("ModelSubscription{typename}FilterInput");
    let returned = TypeRef::named(&typename);
    let fields = Arc::new(arguments);
    let arguments = fields.clone();
    let filtered = Arc::new(filter);
    let filter = filtered.is_some();
    let mut field = SubscriptionField::new(name, returned, move |ctx| {
        let typename = typename.clone();
        let fields = fields.clone();
        let filtered = filtered.clone();
        let kinds = kinds.clone();
        SubscriptionFieldFuture::new(async move {
            let mut tests = Vec::new();
            for (name, scalar) in fields.iter() {
                tests.extend(equal_to(&ctx, name, scalar)?);
            }
            if let (Some(filter), Some(filtered)) = (ctx.args.get("filter"), filtered.as_ref()) {
                tests.push(
                    filters::filter_of(filter.as_value(), filtered, "filter")
                        .map_err(graphql_error)?,
                );
            }
            // Only events the subscriber could read: a deleted node as it was.
            let source = ctx
                .data::<ScopeSource>()
                .map_err(|_| graphql_error(EngineError::SubscriptionsUnavailable))?;
            let caller = ctx.data_opt::<Caller>();
            let asked = Filter::All(tests.clone());
            source
                .check_filter(caller, &[typename.as_str()], &asked)
                .map_err(graphql_error)?;
            match source.read_access(ctx.data_opt::<Caller>(), &[typename.as_str()]) {
                Access::All => {}
                Access::Where(rule) => tests.push(rule),
                Access::Denied => {
                    return Err(graphql_error(EngineError::Unauthorized(format!(
                        "Not Authorized to subscribe to {typename}"
                    ))));
                }
            }
            let watch = Watch {
                typenames: vec![typename.clone()],
                kinds,
                filter: Filter::All(tests),
            };
            let events = receiver(&ctx).await?;
            Ok(stream_of(events, watch, move |item| {
                FieldValue::owned_any(Node::new(typename.clone(), item))
            }))
        })
    })
    .description(description);
    // `filter` first, as Amplify's transformer declares it before the owner arguments.
    if filter {
        field = field.argument(InputValue::new("filter", TypeRef::named(filter_input)));
    }
    for (name, scalar) in arguments.iter() {
        let required = required.contains(name);
        field = field.argument(InputValue::new(name, scalar_type_ref(scalar, required)));
    }
    field
}

/// An edge subscription; `ends` are the types its edges may join. An edge tells of both its
/// ends, so it is for callers who may read every node of those types.
fn edge_subscription(
    edge_name: &str,
    name: &str,
    kinds: Vec<ChangeKind>,
    ends: Vec<String>,
) -> SubscriptionField {
    let typename = edge_name.to_owned();
    let ends = Arc::new(ends);
    SubscriptionField::new(name, TypeRef::named(edge_name), move |ctx| {
        let typename = typename.clone();
        let kinds = kinds.clone();
        let ends = ends.clone();
        SubscriptionFieldFuture::new(async move {
            let source = ctx
                .data::<ScopeSource>()
                .map_err(|_| graphql_error(EngineError::SubscriptionsUnavailable))?;
            let ends: Vec<&str> = ends.iter().map(String::as_str).collect();
            if source.read_access(ctx.data_opt::<Caller>(), &ends) != Access::All {
                return Err(graphql_error(EngineError::Unauthorized(format!(
                    "Not Authorized to subscribe to {typename}: its ends have @auth rules"
                ))));
            }
            let mut tests = Vec::new();
            for end in ["from", "to"] {
                tests.extend(equal_to(&ctx, end, &ScalarType::Id)?);
            }
            let watch = Watch {
                typenames: vec![typename],
                kinds,
                filter: Filter::All(tests),
            };
            let events = receiver(&ctx).await?;
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

/// A declared subscription to the answers of the schema's own mutations (AppSync's pub/sub):
/// each answer published (`engine::write::publish`) whose fields equal the arguments given,
/// for callers its `@aws_*` directives admit. The answer resolves as the mutation's own value
/// of the object type does.
fn answer_subscription(declared: &SubscriptionDef) -> SubscriptionField {
    let typenames: Vec<String> = declared
        .answers_of
        .iter()
        .map(|mutation| published_typename(mutation))
        .collect();
    let description = declared.description.clone().unwrap_or_else(|| {
        format!(
            "Each answer of {} from now on; arguments must equal its values.",
            declared.answers_of.join(" or ")
        )
    });
    let declared = Arc::new(declared.clone());
    let subscription = declared.clone();
    let mut field = SubscriptionField::new(
        &declared.name,
        TypeRef::named(&declared.type_name),
        move |ctx| {
            let declared = subscription.clone();
            let typenames = typenames.clone();
            SubscriptionFieldFuture::new(async move {
                let source = ctx
                    .data::<ScopeSource>()
                    .map_err(|_| graphql_error(EngineError::SubscriptionsUnavailable))?;
                if !source.admits_caller(ctx.data_opt::<Caller>(), &declared.auth) {
                    return Err(graphql_error(EngineError::Unauthorized(format!(
                        "Not Authorized to access {} on type Subscription",
                        declared.name
                    ))));
                }
                let mut tests = Vec::new();
                for (name, scalar) in &declared.arguments {
                    tests.extend(equal_to(&ctx, name, scalar)?);
                }
                let watch = Watch {
                    typenames,
                    kinds: vec![ChangeKind::Created],
                    filter: Filter::All(tests),
                };
                let events = receiver(&ctx).await?;
                Ok(stream_of(events, watch, |item| {
                    FieldValue::owned_any(Embedded(item.as_ref().clone()))
                }))
            })
        },
    )
    .description(description);
    for (name, scalar) in &declared.arguments {
        let required = declared.required.contains(name);
        field = field.argument(InputValue::new(name, scalar_type_ref(scalar, required)));
    }
    field
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
async fn receiver(
    ctx: &async_graphql::dynamic::ResolverContext<'_>,
) -> async_graphql::Result<EventReceiver> {
    let hub = ctx
        .data::<EventHub>()
        .map_err(|_| graphql_error(EngineError::SubscriptionsUnavailable))?;
    if !hub.is_following() {
        return Err(graphql_error(EngineError::SubscriptionsUnavailable));
    }
    let receiver = hub.subscribe().await.ok_or_else(|| {
        graphql_error(EngineError::LimitExceeded(format!(
            "this server holds its most subscriptions ({}, --max-subscriptions); \
             try again later or another replica",
            hub.most()
        )))
    })?;
    // A transport that acknowledges subscriptions (AppSync's `start_ack`) does so now: from
    // here on, no event is missed.
    if let Ok(in_place) = ctx.data::<InPlace>() {
        in_place.tell();
    }
    Ok(receiver)
}

/// Told once a subscription is in place (reading the events), for a transport that
/// acknowledges it then; put in the request's data.
pub struct InPlace(std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>);

impl InPlace {
    /// The notice, and what resolves when it is given (or fails when the request ends first).
    pub fn new() -> (InPlace, tokio::sync::oneshot::Receiver<()>) {
        let (tell, told) = tokio::sync::oneshot::channel();
        (InPlace(std::sync::Mutex::new(Some(tell))), told)
    }

    fn tell(&self) {
        let tell = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(tell) = tell {
            let _ = tell.send(());
        }
    }
}

/// The events `watch` wants, as field values; an error, which ends the subscription, when
/// events were missed.
fn stream_of<'a>(
    events: EventReceiver,
    watch: Watch,
    value: impl Fn(Arc<crate::engine::Item>) -> FieldValue<'a> + Send + Sync + 'a,
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
                        events.delivered(&change);
                        let field = value(item);
                        return Some((Ok(field), Some((events, watch, value))));
                    }
                }
            }
        }
    })
}

/// Gives each event of a subscription a request scope of its own: a fresh loader (what an
/// earlier event read may have changed since) and a fresh budget of storage calls. Installed
/// only on the copy of the schema that runs subscriptions; the scope source comes with the
/// request (`graphql::Transport` adds it).
pub(in crate::graphql) struct EventScopes;

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
                data.insert(Arc::new(source.scope(ctx.data_opt::<Caller>())));
                next.run_with_data(ctx, operation_name, data).await
            }
            None => next.run(ctx, operation_name).await,
        }
    }
}
