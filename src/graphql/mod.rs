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

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dynamic::{FieldValue, ResolverContext, Schema, SchemaError};

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

/// Builds the schema clients query.
pub fn build_schema(model: Arc<Model>, options: &SchemaOptions) -> Result<Schema, SchemaError> {
    let mut builder = Schema::build("Query", Some("Mutation"), None)
        .extension(limits::Limits::new(options.limits))
        .extension(null_items::NullItems);
    if !options.introspection {
        builder = builder.disable_introspection().disable_suggestions();
    }
    builder = types::register(builder, &model, &options.resolvers);
    builder = builder.register(query::root(&model));
    builder = builder.register(mutation::root(&model));
    builder.data(model).finish()
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
    let schema = build_schema(model, &options)?;
    Ok(schema
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
