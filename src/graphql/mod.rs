//! The GraphQL API: an async-graphql dynamic schema built from the [`Model`], and the
//! resolvers that serve it from the store through the request's loader.
//!
//! Invariant: every node a resolver hands out has passed a `__typename` check against the types
//! the field may return, so an id of one type never answers as another.

mod connection;
mod custom;
mod edges;
mod errors;
mod limits;
mod mutation;
mod null_items;
mod prefetch;
mod query;
mod types;
pub(crate) mod values;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_graphql::dynamic::{FieldValue, ResolverContext, Schema, SchemaError};
use async_graphql::parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet};

pub use errors::ApiError;
pub use limits::{QueryLimits, UNPAGED_LIST_ESTIMATE};

use crate::keys;
use crate::loaders::ItemLoader;
use crate::model::Model;
use crate::store::{AttrValue, CallLog, Item, Store};

/// Limits that protect the server from expensive queries.
#[derive(Debug, Clone)]
pub struct SchemaOptions {
    pub introspection: bool,
    pub limits: QueryLimits,
    /// Storage calls one request may make; past it, fields answer `BadUserInput`.
    pub max_storage_calls: usize,
    /// The declarative resolvers of `resolvers/`.
    pub resolvers: Arc<crate::resolvers::Resolvers>,
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions {
            introspection: true,
            limits: QueryLimits::default(),
            max_storage_calls: 500,
            resolvers: Arc::default(),
        }
    }
}

/// What one request's resolvers share: the store handle that records its calls, and its loader.
pub struct RequestScope {
    pub store: Store,
    pub loader: ItemLoader,
    pub calls: Arc<CallLog>,
    /// Connection pages read ahead of their fields (see `query`), by connection and arguments.
    pages: std::sync::Mutex<HashMap<String, Vec<Item>>>,
}

impl RequestScope {
    pub fn new(store: &Store, max_storage_calls: usize) -> RequestScope {
        let calls = Arc::new(CallLog::with_budget(max_storage_calls));
        let store = store.recording(calls.clone());
        RequestScope {
            loader: ItemLoader::new(store.clone()),
            store,
            calls,
            pages: std::sync::Mutex::default(),
        }
    }

    fn stash_page(&self, key: String, items: Vec<Item>) {
        self.pages
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(key, items);
    }

    fn take_page(&self, key: &str) -> Option<Vec<Item>> {
        self.pages
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(key)
    }
}

/// A node as resolvers pass it down: its stored item, known to be of `typename`.
#[derive(Clone)]
pub(crate) struct NodeValue {
    pub typename: String,
    pub item: Arc<Item>,
}

impl NodeValue {
    pub fn id(&self) -> &str {
        self.item
            .get("id")
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
    }
}

/// The executable API: each request is checked against the [`QueryLimits`], then runs on the
/// dynamic schema.
///
/// # Why two copies of the schema
///
/// Once a schema has any async-graphql extension, every field of every request passes through
/// it, and that cost showed in the profile of the smallest queries (BENCHMARKS.md, "Profile").
/// Limits therefore run before the schema, and the one extension that must see fields,
/// [`null_items::NullItems`], is needed only by `nodes(ids:)`: a request whose query selects
/// `nodes` runs on a copy of the schema with it, every other request on one without.
pub struct Api {
    schema: Schema,
    with_null_items: Schema,
    limits: limits::Limits,
}

impl Api {
    /// Builds the API clients query.
    pub fn build(model: Arc<Model>, options: &SchemaOptions) -> Result<Api, SchemaError> {
        Ok(Api {
            schema: build_schema(model.clone(), options, false)?,
            with_null_items: build_schema(model, options, true)?,
            limits: limits::Limits::new(options.limits),
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

fn build_schema(
    model: Arc<Model>,
    options: &SchemaOptions,
    null_items: bool,
) -> Result<Schema, SchemaError> {
    let mut builder = Schema::build("Query", Some("Mutation"), None);
    if null_items {
        builder = builder.extension(null_items::NullItems);
    }
    if !options.introspection {
        builder = builder.disable_introspection().disable_suggestions();
    }
    builder = types::register(builder, &model, &options.resolvers);
    builder = builder.register(query::root(&model));
    builder = builder.register(mutation::root(&model));
    builder.data(model).finish()
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
    Ok(build_schema(model, &options, false)?
        .sdl_with_options(async_graphql::SDLExportOptions::new().prefer_single_line_descriptions()))
}

fn scope<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<RequestScope>, ApiError> {
    ctx.data::<Arc<RequestScope>>().map_err(|_| {
        tracing::error!("a request ran without its RequestScope");
        ApiError::Internal
    })
}

fn model<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<Model>, ApiError> {
    ctx.data::<Arc<Model>>().map_err(|_| ApiError::Internal)
}

/// Loads the node `id` if it is one of `allowed` types; `None` for a missing node or a node of
/// another type.
async fn load_node(
    scope: &RequestScope,
    id: &str,
    allowed: &[&str],
) -> Result<Option<NodeValue>, ApiError> {
    Ok(load_nodes(scope, &[id], allowed).await?.pop().flatten())
}

/// [`load_node`] for each of `ids`, in their order, as one load of the request's loader.
async fn load_nodes<S: AsRef<str>>(
    scope: &RequestScope,
    ids: &[S],
    allowed: &[&str],
) -> Result<Vec<Option<NodeValue>>, ApiError> {
    let keys: Vec<String> = ids.iter().map(|id| keys::node_key(id.as_ref())).collect();
    let items = scope
        .loader
        .load_many(&keys)
        .await
        .map_err(|e| ApiError::from_store(&e))?;
    Ok(items
        .into_iter()
        .map(|item| item.and_then(|item| node_of(item, allowed)))
        .collect())
}

/// Wraps an item as a node if its `__typename` is one of `allowed`.
fn node_of(item: Arc<Item>, allowed: &[&str]) -> Option<NodeValue> {
    let typename = item.get("__typename").and_then(AttrValue::as_str)?;
    allowed.contains(&typename).then(|| NodeValue {
        typename: typename.to_owned(),
        item: item.clone(),
    })
}

/// The field value of a node. A field whose type is abstract (`Node`, a union) needs the
/// concrete type named; one of an object type must not have it.
fn node_field_value(node: NodeValue, abstract_type: bool) -> FieldValue<'static> {
    if abstract_type {
        let typename = node.typename.clone();
        FieldValue::owned_any(node).with_type(typename)
    } else {
        FieldValue::owned_any(node)
    }
}

/// An id argument, refused when it could not be a node's id.
fn id_argument(ctx: &ResolverContext<'_>, name: &str) -> Result<String, ApiError> {
    let id = ctx.args.try_get(name)?.string()?;
    keys::validate_id(id).map_err(|e| ApiError::bad_input(format!("{name}: {e}")))?;
    Ok(id.to_owned())
}

/// `Farm` → `farm`, `KeyResult` → `keyResult`.
fn lower_first(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `name` → `Name`.
fn upper_first(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
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
