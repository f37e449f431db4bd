//! The executable API: the dynamic schema built from the model, the query limits checked before
//! it runs, and the SDL `tablegraph schema` prints.

use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dynamic::{Schema, SchemaError};
use async_graphql::parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet};

use async_graphql::futures_util::stream::{self, BoxStream, StreamExt};

use super::limits::{self, QueryLimits};
use super::{field_errors, mutation, null_items, query, schema, subscription};
use crate::engine::EventHub;
use crate::model::Model;

/// Limits that protect the server from expensive queries.
#[derive(Debug, Clone)]
pub struct SchemaOptions {
    pub introspection: bool,
    pub limits: QueryLimits,
    /// Storage calls one request may make; past it, fields answer `BadUserInput`.
    pub max_storage_calls: usize,
    /// The declarative resolvers of `resolvers/`.
    pub resolvers: Arc<crate::resolvers::Resolvers>,
    /// A subscription event whose answer is larger than this reaches its subscriber as an
    /// `EventTooLarge` error instead.
    pub max_event_bytes: usize,
    /// Subscriptions this replica holds at most; past it, new ones answer `LimitExceeded`.
    pub max_subscriptions: usize,
    /// Events a subscriber may fall behind by; past it, its subscription ends with
    /// `EventsMissed`.
    pub max_pending_events: usize,
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions {
            introspection: true,
            limits: QueryLimits::default(),
            max_storage_calls: 500,
            resolvers: Arc::default(),
            // AppSync's limit on a subscription payload.
            max_event_bytes: 240 * 1024,
            max_subscriptions: 10_000,
            max_pending_events: crate::engine::EVENT_BUFFER,
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
/// A third copy runs operations that come over the WebSocket transports ([`Transport`]): it
/// gives each subscription event a request scope of its own (`subscription::EventScopes`).
pub struct Api {
    schema: Schema,
    with_null_items: Schema,
    streaming: Schema,
    limits: limits::Limits,
    max_event_bytes: usize,
}

/// Which extensions a copy of the schema carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Plain,
    NullItems,
    Streaming,
}

impl Api {
    /// Builds the API clients query; subscriptions read `events`.
    pub fn build(
        model: Arc<Model>,
        options: &SchemaOptions,
        events: EventHub,
    ) -> Result<Api, SchemaError> {
        Ok(Api {
            schema: build_schema(model.clone(), options, events.clone(), Flavor::Plain)?,
            with_null_items: build_schema(
                model.clone(),
                options,
                events.clone(),
                Flavor::NullItems,
            )?,
            streaming: build_schema(model, options, events, Flavor::Streaming)?,
            limits: limits::Limits::new(options.limits),
            max_event_bytes: options.max_event_bytes,
        })
    }

    /// Runs `request`: a request error when it does not parse or is over a limit, before any
    /// resolver runs.
    pub async fn execute(&self, mut request: async_graphql::Request) -> async_graphql::Response {
        if let Err(error) = self.limits.check(self.schema.registry(), &mut request) {
            return async_graphql::Response::from_errors(vec![error]);
        }
        let schema = match request.parsed_query() {
            Ok(document) if selects_root_field(document, "nodes") => &self.with_null_items,
            _ => &self.schema,
        };
        schema.execute(request).await
    }
}

/// The API as async-graphql's transports drive it (graphql-transport-ws, graphql-ws): the same
/// limits, then the copy of the schema that gives each event its own request scope. The
/// connection's data must hold the `ScopeSource` and the `Caller`.
#[derive(Clone)]
pub struct Transport(pub Arc<Api>);

impl async_graphql::Executor for Transport {
    async fn execute(&self, request: async_graphql::Request) -> async_graphql::Response {
        self.0.execute(request).await
    }

    fn execute_stream(
        &self,
        mut request: async_graphql::Request,
        session_data: Option<Arc<async_graphql::Data>>,
    ) -> BoxStream<'static, async_graphql::Response> {
        if let Err(error) = self.0.limits.check(self.0.schema.registry(), &mut request) {
            return stream::once(async move { async_graphql::Response::from_errors(vec![error]) })
                .boxed();
        }
        let max = self.0.max_event_bytes;
        self.0
            .streaming
            .execute_stream_with_session_data(request, session_data.unwrap_or_default())
            .map(move |response| within(response, max))
            .boxed()
    }
}

/// `response`, or an `EventTooLarge` error in its place when its JSON is over `max` bytes.
fn within(response: async_graphql::Response, max: usize) -> async_graphql::Response {
    if !response.errors.is_empty() {
        // An error is no event, and never large.
        return response;
    }
    let size = serde_json::to_vec(&response).map_or(0, |bytes| bytes.len());
    if size <= max {
        return response;
    }
    use async_graphql::ErrorExtensions as _;
    let error = async_graphql::Error::new(format!(
        "this event's answer is {size} bytes, over the limit of {max} bytes \
         (--max-event-bytes); select fewer fields, or read the node with a query"
    ))
    .extend_with(|_, extensions| extensions.set("errorType", "EventTooLarge"));
    let mut error = error.into_server_error(Default::default());
    // Not an error of the query's text: no location.
    error.locations.clear();
    async_graphql::Response::from_errors(vec![error])
}

fn build_schema(
    model: Arc<Model>,
    options: &SchemaOptions,
    events: EventHub,
    flavor: Flavor,
) -> Result<Schema, SchemaError> {
    let mut builder = Schema::build("Query", Some("Mutation"), Some("Subscription"));
    if flavor == Flavor::Streaming {
        // Outermost: the event's scope is in place before anything else runs.
        builder = builder.extension(subscription::EventScopes);
    }
    // The first extension is the outermost: a list item NullItems makes null is no error.
    builder = builder.extension(field_errors::FieldErrors);
    if flavor != Flavor::Plain {
        builder = builder.extension(null_items::NullItems);
    }
    if !options.introspection {
        builder = builder.disable_introspection().disable_suggestions();
    }
    builder = schema::register(builder, &model, &options.resolvers);
    builder = builder.register(query::root(&model));
    builder = builder.register(mutation::root(&model));
    builder = subscription::register(builder, &model);
    builder
        .data(model)
        .data(events)
        .data(subscription::MaxSubscriptions(options.max_subscriptions))
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
