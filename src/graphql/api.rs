//! The executable API: the dynamic schema built from the model, the query limits checked before
//! it runs, and the SDL `tablegraph schema` prints.

use std::any::TypeId;
use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::ServerError;
use async_graphql::dynamic::{Schema, SchemaError};
use async_graphql::parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet};

use async_graphql::futures_util::stream::{self, BoxStream, StreamExt};

use super::admission::limits::{self, QueryLimits};
use super::admission::operation_span;
use super::admission::persisted::PersistedSettings;
use super::admission::shape;
use super::admission::{Admission, Admitted, Registration};
use super::errors;
use super::errors::denied_fields;
use super::errors::field_errors;
use super::null_items;
use super::report;
use super::roots::mutation;
use super::roots::query;
use super::roots::subscription;
use super::schema;
use super::types::own_fields;
use crate::auth::Caller;
use crate::changes::EventHub;
use crate::engine::ScopeSource;
use crate::model::{Model, Root};

/// Limits that protect the server from expensive queries.
#[derive(Debug, Clone)]
pub struct SchemaOptions {
    pub introspection: bool,
    pub limits: QueryLimits,
    /// The declarative resolvers of `resolvers/`.
    pub resolvers: Arc<crate::resolvers::Resolvers>,
    /// The functions the schema's own fields call (`@function`).
    pub functions: Arc<crate::functions::Functions>,
    /// A subscription event whose answer is larger than this reaches its subscriber as an
    /// `EventTooLarge` error instead.
    pub max_event_bytes: usize,
    /// Subscriptions this replica holds at most; past it, new ones answer `LimitExceeded`.
    pub max_subscriptions: usize,
    /// Events a subscriber may fall behind by; past it, its subscription ends with
    /// `EventsMissed`.
    pub max_pending_events: usize,
    /// Whether a Lambda authorizer may deny its callers fields (`deniedFields`).
    pub denied_fields: bool,
    /// How many automatic persisted queries are kept, and in how many bytes.
    pub persisted: PersistedSettings,
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions {
            introspection: true,
            limits: QueryLimits::default(),
            resolvers: Arc::default(),
            functions: Arc::default(),
            // AppSync's limit on a subscription payload.
            max_event_bytes: 240 * 1024,
            max_subscriptions: 10_000,
            max_pending_events: crate::changes::EVENT_BUFFER,
            denied_fields: false,
            persisted: PersistedSettings::default(),
        }
    }
}

/// The executable API: each request is checked against the [`QueryLimits`], then runs on the
/// dynamic schema.
///
/// # Why two copies of the schema
///
/// Once a schema has any async-graphql extension, every field of every request passes through
/// it, and that cost showed in the profile of the smallest queries (BENCHMARKS.md, "Profile").
/// Limits therefore run before the schema. Both copies carry
/// [`field_errors::FieldErrors`], which every request needs (a field's error is `null` at its
/// path, not the end of the answer); [`null_items::NullItems`] is needed only by
/// `nodes(ids:)`: a request whose query selects `nodes` runs on the copy with it, every other
/// request on the one without.
///
/// A third copy runs subscriptions ([`Transport`]): it gives each event a request scope of its
/// own (`subscription::EventScopes`).
pub struct Api {
    schema: Schema,
    with_null_items: Schema,
    streaming: Schema,
    /// What every request passes before it runs, in one order.
    admission: Admission,
    max_event_bytes: usize,
    /// Production: no introspection, and no error names what the client did not send.
    hides_schema: bool,
    /// Whether any field calls functions: each request then gathers its batched calls.
    calls_functions: bool,
    /// Amplify's API shape: errors are named as AppSync names DynamoDB's.
    amplify: bool,
    /// The query GraphiQL opens on (see `example`).
    example: Option<String>,
}

/// Which extensions a copy of the schema carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Plain,
    NullItems,
    Streaming,
    /// The generated fields alone: what the schema's own fields may not be named.
    Generated,
}

impl Api {
    /// Builds the API clients query; subscriptions read `events`.
    pub fn build(
        model: Arc<Model>,
        options: &SchemaOptions,
        events: EventHub,
    ) -> Result<Api, SchemaError> {
        check_defaults(&model)?;
        check_own_names(&model, options, &events)?;
        let calls_functions = calls_functions(&model);
        let amplify = model.dialect.amplify_shape();
        let example = super::example::example_query(&model);
        Ok(Api {
            schema: build_schema(model.clone(), options, events.clone(), Flavor::Plain)?,
            with_null_items: build_schema(
                model.clone(),
                options,
                events.clone(),
                Flavor::NullItems,
            )?,
            streaming: build_schema(model, options, events, Flavor::Streaming)?,
            admission: Admission::new(options.limits, options.persisted),
            max_event_bytes: options.max_event_bytes,
            hides_schema: !options.introspection,
            calls_functions,
            amplify,
            example,
        })
    }

    /// Whether some field calls functions (`@function`, `@http`, a binding in `resolvers/`):
    /// then a request's headers and variables are handed to them.
    pub fn calls_functions(&self) -> bool {
        self.calls_functions
    }

    /// Admits `request` (see `admission`): the request error to answer when it is over a
    /// limit, does not parse, or names a persisted query that cannot run.
    pub fn admit(&self, request: async_graphql::Request) -> Result<Admitted, ServerError> {
        self.admission
            .admit(self.schema.registry(), request)
            .map_err(|error| errors::with_type(error, errors::VALIDATION_ERROR))
    }

    /// Runs an admitted request.
    pub async fn execute(&self, mut admitted: Admitted) -> async_graphql::Response {
        let registration = Registration::of(&mut admitted);
        let query = self.hides_schema.then(|| admitted.query().to_owned());
        let response = self.run(admitted).await;
        self.admission.ran(registration, &response);
        // Typed last: what production leaves unnamed is what names no type of its own.
        errors::typed(match query {
            Some(query) => naming_only_what_was_sent(response, &query),
            None => response,
        })
    }

    /// Admits and runs `request`: a request error when it is not admitted.
    pub async fn answer(&self, request: async_graphql::Request) -> async_graphql::Response {
        match self.admit(request) {
            Ok(admitted) => self.execute(admitted).await,
            Err(error) => async_graphql::Response::from_errors(vec![error]),
        }
    }

    /// Runs a request that passed the admission.
    async fn run(&self, mut admitted: Admitted) -> async_graphql::Response {
        if self.calls_functions {
            // The request's calls of batched functions, gathered per level, and its variables
            // for AppSync's direct event.
            let variables = serde_json::to_value(admitted.variables()).unwrap_or_default();
            admitted = admitted
                .data(Arc::new(crate::functions::Calls::default()))
                .data(own_fields::RequestVariables(variables));
        }
        let schema = match selects_root_field(admitted.document(), "nodes") {
            true => &self.with_null_items,
            false => &self.schema,
        };
        let response = shape::capped(schema.execute(admitted.into_request()).await);
        match self.amplify {
            true => errors::as_appsync(response),
            false => response,
        }
    }

    /// A working query of this API, for GraphiQL to open on.
    pub fn example_query(&self) -> Option<&str> {
        self.example.as_deref()
    }

    /// Whether the API is Amplify's shape, whose answers carry AppSync's error shape.
    pub fn amplify_shape(&self) -> bool {
        self.amplify
    }
}

/// What a request read, kept beside it while it runs, for its answer's `extensions` (see
/// `report`).
pub struct Reads(Arc<crate::engine::RequestScope>);

impl Reads {
    /// `response` with what the request read: its filtered pages always, its storage calls and
    /// cache hits when `storage_calls`.
    pub fn tell(
        &self,
        mut response: async_graphql::Response,
        storage_calls: bool,
    ) -> async_graphql::Response {
        report::add(&mut response, &self.0, storage_calls);
        response
    }
}

/// The API as async-graphql's transports drive it (graphql-transport-ws, graphql-ws, and SSE):
/// the same limits; a subscription then runs on the copy of the schema that gives each event a
/// request scope of its own, made from `scopes`, and an event over `--max-event-bytes` becomes
/// an error. A query or a mutation runs as over HTTP and answers whole.
#[derive(Clone)]
pub struct Transport {
    api: Arc<Api>,
    scopes: ScopeSource,
}

impl Transport {
    pub fn new(api: Arc<Api>, scopes: ScopeSource) -> Transport {
        Transport { api, scopes }
    }

    /// An admitted query or mutation over HTTP, made ready to run for `caller` in a request
    /// scope of its own; `headers` are the functions' `request.headers`. Run it with
    /// [`Api::execute`], then add what it read with [`Reads::tell`].
    ///
    /// # Why not one `async fn` that runs it too
    ///
    /// The executing future is large: one more `async` layer around it copied it once more per
    /// request, 8,500 instructions of `memcpy` on `{ __typename }` (`bench.py --instructions`,
    /// W0: 1.085 × without this split).
    pub fn prepare(
        &self,
        admitted: Admitted,
        caller: Caller,
        headers: Option<own_fields::RequestHeaders>,
    ) -> (Admitted, Reads) {
        let scope = Arc::new(self.scopes.scope(Some(&caller)));
        let mut admitted = admitted.data(caller);
        if let Some(headers) = headers {
            admitted = admitted.data(headers);
        }
        (admitted.data(scope.clone()), Reads(scope))
    }

    /// The API the transport runs.
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// The answer to a request the admission refused with `error`: nothing ran, so a client
    /// that asked for its storage calls is told of none.
    pub fn refused(&self, error: ServerError, storage_calls: bool) -> async_graphql::Response {
        let mut response = async_graphql::Response::from_errors(vec![error]);
        if storage_calls {
            report::none(&mut response);
        }
        response
    }
}

impl Transport {
    /// The responses of an admitted request: a subscription's events, each with a request
    /// scope of its own, or the one answer of a query or a mutation, run as over HTTP with the
    /// caller of `session_data`.
    pub fn stream(
        &self,
        mut admitted: Admitted,
        session_data: Option<Arc<async_graphql::Data>>,
    ) -> BoxStream<'static, async_graphql::Response> {
        let subscription = admitted.operation_type() == Some(OperationType::Subscription);
        let session_data = session_data.unwrap_or_default();
        if !subscription {
            // A query or a mutation runs as over HTTP (the streaming copy's per-event scopes
            // are for events): one answer, whole, with the connection's caller.
            let caller = session_data
                .get(&TypeId::of::<Caller>())
                .and_then(|caller| caller.downcast_ref::<Caller>())
                .cloned();
            let mut admitted = admitted.data(Arc::new(self.scopes.scope(caller.as_ref())));
            if let Some(caller) = caller {
                admitted = admitted.data(caller);
            }
            // The connection's headers, for the functions' `request.headers`.
            let headers = session_data
                .get(&TypeId::of::<own_fields::RequestHeaders>())
                .and_then(|headers| headers.downcast_ref::<own_fields::RequestHeaders>());
            if let Some(headers) = headers {
                admitted = admitted.data(headers.clone());
            }
            let api = self.api.clone();
            return stream::once(async move { api.execute(admitted).await }).boxed();
        }
        let sent = self.api.hides_schema.then(|| admitted.query().to_owned());
        let told = move |response| match &sent {
            Some(query) => naming_only_what_was_sent(response, query),
            None => response,
        };
        let mut registration = Some(Registration::of(&mut admitted));
        let api = self.api.clone();
        let max = self.api.max_event_bytes;
        self.api
            .streaming
            .execute_stream_with_session_data(
                admitted.data(self.scopes.clone()).into_request(),
                session_data,
            )
            .map(move |response| {
                // Its first answer tells whether the subscription passed validation.
                if let Some(registration) = registration.take() {
                    api.admission.ran(registration, &response);
                }
                within(shape::capped(errors::typed(told(response))), max)
            })
            .boxed()
    }
}

impl async_graphql::Executor for Transport {
    async fn execute(&self, request: async_graphql::Request) -> async_graphql::Response {
        let caller = request
            .data
            .get(&TypeId::of::<Caller>())
            .and_then(|caller| caller.downcast_ref::<Caller>())
            .cloned();
        let scope = Arc::new(self.scopes.scope(caller.as_ref()));
        self.api.answer(request.data(scope)).await
    }

    fn execute_stream(
        &self,
        request: async_graphql::Request,
        session_data: Option<Arc<async_graphql::Data>>,
    ) -> BoxStream<'static, async_graphql::Response> {
        match self.api.admit(request) {
            Ok(admitted) => self.stream(admitted, session_data),
            Err(error) => {
                stream::once(async move { async_graphql::Response::from_errors(vec![error]) })
                    .boxed()
            }
        }
    }
}

/// In production: the answer to `query` with no error naming what the client did not send.
fn naming_only_what_was_sent(
    response: async_graphql::Response,
    query: &str,
) -> async_graphql::Response {
    if response.errors.is_empty() {
        return response;
    }
    shape::naming_only_what_was_sent(response, &limits::names(query))
}

/// `response`, or an `EventTooLarge` error in its place when its JSON is over `max` bytes.
fn within(response: async_graphql::Response, max: usize) -> async_graphql::Response {
    if !response.errors.is_empty() {
        // An error is no event, and never large.
        return response;
    }
    // Counted as it would be written, without keeping the bytes.
    let mut size = ByteCount(0);
    if serde_json::to_writer(&mut size, &response).is_err() || size.0 <= max {
        return response;
    }
    let size = size.0;
    let error = errors::typed_error(
        format!(
            "this event's answer is {size} bytes, over the limit of {max} bytes \
             (--max-event-bytes); select fewer fields, or read the node with a query"
        ),
        "EventTooLarge",
    );
    let mut error = error.into_server_error(Default::default());
    // Not an error of the query's text: no location.
    error.locations.clear();
    async_graphql::Response::from_errors(vec![error])
}

/// A writer that only counts what is written to it.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn build_schema(
    model: Arc<Model>,
    options: &SchemaOptions,
    events: EventHub,
    flavor: Flavor,
) -> Result<Schema, SchemaError> {
    // A schema of functions alone (no `@model` type) may have no mutation or subscription,
    // and a root type without fields is no valid schema.
    let generates = !model.types.is_empty();
    let has_mutation = generates
        || model
            .own_fields
            .iter()
            .any(|own| own.root == Root::Mutation && flavor != Flavor::Generated);
    let has_subscription = generates || !model.subscriptions.is_empty();
    let mut builder = Schema::build(
        "Query",
        has_mutation.then_some("Mutation"),
        has_subscription.then_some("Subscription"),
    );
    if flavor == Flavor::Streaming {
        // Outermost: the event's scope is in place before anything else runs.
        builder = builder.extension(subscription::EventScopes);
    }
    // The first extension is the outermost: a list item NullItems makes null is no error.
    builder = builder.extension(field_errors::FieldErrors);
    if options.denied_fields {
        builder = builder.extension(denied_fields::DeniedFields);
    }
    if flavor == Flavor::NullItems {
        builder = builder.extension(null_items::NullItems);
    }
    if flavor != Flavor::Streaming && crate::telemetry::traces_on() {
        builder = builder.extension(operation_span::OperationSpan);
    }
    if !options.introspection {
        builder = builder.disable_introspection().disable_suggestions();
    }
    builder = schema::register(builder, &model, &options.resolvers);
    let (mut query, mut mutation) = (query::root(&model), mutation::root(&model));
    if flavor != Flavor::Generated {
        for own in &model.own_fields {
            match own.root {
                Root::Query => query = query.field(own_fields::field(own, &model)),
                Root::Mutation => mutation = mutation.field(own_fields::field(own, &model)),
            }
        }
    }
    builder = builder.register(query);
    if has_mutation {
        builder = builder.register(mutation);
    }
    if has_subscription {
        builder = subscription::register(builder, &model);
    }
    builder
        .data(model)
        .data(events)
        .data(options.functions.clone())
        .finish()
}

/// Whether a query operation of `document` selects the root field `name`, directly or through
/// fragments. Each fragment is looked into once and the walk keeps its own stack, so neither
/// fragments that spread each other nor a chain of thousands of them costs more than a pass
/// over the document.
fn selects_root_field(document: &ExecutableDocument, name: &str) -> bool {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut pending: Vec<&SelectionSet> = document
        .operations
        .iter()
        .filter(|(_, operation)| operation.node.ty == OperationType::Query)
        .map(|(_, operation)| &operation.node.selection_set.node)
        .collect();
    while let Some(selection_set) = pending.pop() {
        for item in &selection_set.items {
            match &item.node {
                Selection::Field(field) => {
                    if field.node.name.node == name {
                        return true;
                    }
                }
                Selection::InlineFragment(fragment) => {
                    pending.push(&fragment.node.selection_set.node);
                }
                Selection::FragmentSpread(spread) => {
                    let fragment = spread.node.fragment_name.node.as_str();
                    if seen.insert(fragment)
                        && let Some(definition) = document.fragments.get(fragment)
                    {
                        pending.push(&definition.node.selection_set.node);
                    }
                }
            }
        }
    }
    false
}

/// The client-facing SDL of `model`, as `tablegraph schema` prints it.
pub fn print_sdl(
    model: Arc<Model>,
    resolvers: Arc<crate::resolvers::Resolvers>,
) -> Result<String, SchemaError> {
    let options = SchemaOptions {
        resolvers,
        ..SchemaOptions::default()
    };
    Ok(
        build_schema(model, &options, EventHub::default(), Flavor::Plain)?.sdl_with_options(
            async_graphql::SDLExportOptions::new().prefer_single_line_descriptions(),
        ),
    )
}

/// Whether any field of the API calls functions (`@function`, `@http`, a binding).
fn calls_functions(model: &Model) -> bool {
    model.computed_fields().next().is_some()
}

/// Refuses a field of the schema's own `Query` or `Mutation` named as a generated one is.
fn check_own_names(
    model: &Arc<Model>,
    options: &SchemaOptions,
    events: &EventHub,
) -> Result<(), SchemaError> {
    if model.own_fields.is_empty() {
        return Ok(());
    }
    let generated = build_schema(model.clone(), options, events.clone(), Flavor::Generated)?;
    let registry = generated.registry();
    for own in &model.own_fields {
        let root = own.root.name();
        let taken = registry
            .types
            .get(root)
            .and_then(|ty| ty.field_by_name(&own.name))
            .is_some();
        if taken {
            return Err(SchemaError(format!(
                "{}:{}: {root}.{} is a generated field; give yours another name \
                 (`tablegraph schema` prints the generated ones)",
                own.field.line, own.field.column, own.name
            )));
        }
    }
    Ok(())
}

/// Refuses a `@default(value:)` that a client could not send as the field's value: an id that is
/// no id, or an AppSync scalar out of its format (checked as clients' values are).
fn check_defaults(model: &Model) -> Result<(), SchemaError> {
    use crate::model::ScalarType;
    for type_def in &model.types {
        for (field, scalar, default) in type_def.defaults() {
            let fits = match scalar {
                ScalarType::Id => crate::engine::ids::is_id(default),
                scalar => crate::engine::formats::valid_text(scalar, default),
            };
            if !fits {
                return Err(SchemaError(format!(
                    "{}.{field}: @default(value: {default:?}) is no {} value",
                    type_def.name,
                    scalar.name()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::selects_root_field;

    fn selects(query: &str) -> bool {
        let document = async_graphql::parser::parse_query(query).expect("a document");
        selects_root_field(&document, "nodes")
    }

    #[test]
    fn a_root_field_is_found_directly_or_through_fragments() {
        assert!(selects("{ nodes(ids: []) { id } }"));
        assert!(selects("{ ... on Query { nodes(ids: []) { id } } }"));
        assert!(selects(
            "{ ...A } fragment A on Query { ...B } fragment B on Query { nodes(ids: []) { id } }"
        ));
        assert!(!selects("{ farm(id: \"x\") { id } }"));
        // Not at the root, or not a query.
        assert!(!selects("{ team(id: \"x\") { members { nodes { id } } } }"));
        assert!(!selects("mutation { nodes }"));
    }

    #[test]
    fn a_long_chain_of_fragments_is_walked_without_recursion() {
        let mut query = String::from("{ ...F0 }");
        for n in 0..50_000 {
            query.push_str(&format!(" fragment F{n} on Query {{ ...F{} }}", n + 1));
        }
        query.push_str(" fragment F50000 on Query { nodes(ids: []) { id } }");
        assert!(selects(&query));
    }

    #[test]
    fn fragments_that_spread_each_other_end_the_walk() {
        assert!(!selects(
            "{ ...A } fragment A on Query { ...B ...A } fragment B on Query { ...A ...B }"
        ));
        assert!(!selects("{ ...Missing }"));
    }
}
