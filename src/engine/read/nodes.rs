//! Reading nodes: by id through the request's loader (batched, cached), by a unique value, and
//! strongly consistent for a read-modify-write.
//!
//! Invariant: every [`Node`] handed out passed a `__typename` check against the types its reader
//! allows (or was proven by an edge that recorded it), so an id of one type never answers as
//! another.

use std::sync::Arc;

use super::page_request::{PageRead, PageRequest, Prefetch};
use crate::engine::error::EngineError;
use crate::engine::rules::{Access, admits, unauthorized};
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::keys::TYPENAME;
use crate::model::Operation;
use crate::store::{AttrValue, Item, Key};

/// A node: its stored item, known to be of `typename`.
#[derive(Debug, Clone)]
pub struct Node {
    pub typename: String,
    pub item: Arc<Item>,
    /// A page of one of its connections, read before it (see [`Prefetch`]).
    prefetch: Option<Arc<Prefetch>>,
}

impl Node {
    /// A node of `typename` whose stored item is `item`.
    pub fn new(typename: String, item: Arc<Item>) -> Node {
        Node {
            typename,
            item,
            prefetch: None,
        }
    }

    /// The node with `prefetch`, a page of one of its connection fields read before it, for
    /// that field to take.
    pub fn with_prefetch(mut self, prefetch: Prefetch) -> Node {
        self.prefetch = Some(Arc::new(prefetch));
        self
    }

    /// The page read ahead for its connection field `field` asking for `request`, if one was.
    pub(super) fn prefetched(&self, field: &str, request: &PageRequest) -> Option<PageRead> {
        self.prefetch.as_ref()?.take(field, request)
    }

    pub fn id(&self) -> &str {
        crate::engine::derive::text(&self.item, "id")
    }

    /// A node known only by its id and type (proven by an edge, not read): it holds nothing
    /// else, so only its identity may be asked of it.
    pub fn identity(typename: &str, id: &str) -> Node {
        Node::new(
            typename.to_owned(),
            Arc::new(Item::from_iter([
                ("id".to_owned(), AttrValue::S(id.to_owned())),
                (TYPENAME.to_owned(), AttrValue::S(typename.to_owned())),
            ])),
        )
    }

    /// Wraps an item as a node if its `__typename` is one of `allowed`.
    pub fn of(item: Arc<Item>, allowed: &[&str]) -> Option<Node> {
        let typename = item.get(TYPENAME).and_then(AttrValue::as_str)?;
        allowed
            .contains(&typename)
            .then(|| Node::new(typename.to_owned(), item.clone()))
    }
}

/// Loads the node `id` if it is one of `allowed` types; `None` for a missing node or a node of
/// another type, and `Unauthorized` for one the caller may not read (see
/// [`load_nodes_each`]).
pub async fn load_node(
    scope: &RequestScope,
    id: &str,
    allowed: &[&str],
) -> Result<Option<Node>, EngineError> {
    load_nodes_each(scope, &[id], allowed)
        .await?
        .pop()
        .unwrap_or(Ok(None))
}

/// [`load_node`] for each of `ids`, in their order, as one load of the request's loader; the
/// nodes the caller may not read are left out (`None`).
pub async fn load_nodes<S: AsRef<str>>(
    scope: &RequestScope,
    ids: &[S],
    allowed: &[&str],
) -> Result<Vec<Option<Node>>, EngineError> {
    Ok(load_nodes_each(scope, ids, allowed)
        .await?
        .into_iter()
        .map(|node| node.ok().flatten())
        .collect())
}

/// [`load_node`] for each of `ids`, in their order, as one load of the request's loader: each
/// a node, `None`, or `Unauthorized` when the caller's rules (`@auth`) do not let them read
/// it. A caller whose reading depends on the node (an owner rule) is answered `Unauthorized`
/// for a node that is not there too, so that ids cannot be probed; a caller who may read no
/// node of these types reads nothing.
pub async fn load_nodes_each<S: AsRef<str>>(
    scope: &RequestScope,
    ids: &[S],
    allowed: &[&str],
) -> Result<Vec<Result<Option<Node>, EngineError>>, EngineError> {
    load_each(scope, ids, allowed, false).await
}

/// [`load_node`] as AppSync answers Amplify's `get<Type>`: a node that is not there is `null`
/// for every caller, even one whose reading depends on the node (so, as in AppSync, such a
/// caller can tell a missing id from another owner's).
pub async fn load_node_or_null(
    scope: &RequestScope,
    id: &str,
    allowed: &[&str],
) -> Result<Option<Node>, EngineError> {
    load_each(scope, &[id], allowed, true)
        .await?
        .pop()
        .unwrap_or(Ok(None))
}

async fn load_each<S: AsRef<str>>(
    scope: &RequestScope,
    ids: &[S],
    allowed: &[&str],
    missing_is_null: bool,
) -> Result<Vec<Result<Option<Node>, EngineError>>, EngineError> {
    let refused = || {
        Err(unauthorized(
            Operation::Read,
            allowed.first().copied().unwrap_or("node"),
        ))
    };
    let access = scope.read_access(allowed);
    if access == Access::Denied {
        return Ok(ids.iter().map(|_| refused()).collect());
    }
    let keys: Vec<String> = ids.iter().map(|id| keys::node_key(id.as_ref())).collect();
    let items = scope
        .loader
        .load_many(&keys)
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    Ok(items
        .into_iter()
        .map(|item| match item.and_then(|item| Node::of(item, allowed)) {
            Some(node) if admits(&access, &node.item) => Ok(Some(node)),
            None if access == Access::All || missing_is_null => Ok(None),
            _ => refused(),
        })
        .collect())
}

/// The node of `type_name` whose unique `field` equals `value` as unique values compare
/// (`keys::normalize_unique`): the unique-value item, then the node it names, both through the loader.
pub async fn load_node_by_unique(
    scope: &RequestScope,
    type_name: &str,
    field: &str,
    value: &str,
) -> Result<Option<Node>, EngineError> {
    let key = keys::unique_key(type_name, field, value);
    // A value that could never have been stored is simply not found.
    if keys::normalize_unique(value).is_empty() || key.len() > keys::MAX_SORT_KEY_BYTES {
        return Ok(None);
    }
    let unique = scope
        .loader
        .load(&key)
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    let owner = unique.as_ref().and_then(|item| {
        let typename = item.get(TYPENAME).and_then(AttrValue::as_str)?;
        (typename == keys::unique_typename(type_name, field))
            .then(|| item.get("id").and_then(AttrValue::as_str))
            .flatten()
    });
    match owner {
        Some(id) => load_node(scope, id, &[type_name]).await,
        // Under rules that depend on the node, none answers as one the caller may not read.
        None if scope.read_access(&[type_name]) != Access::All => {
            Err(unauthorized(Operation::Read, type_name))
        }
        None => Ok(None),
    }
}

/// Loads the items under `keys` in one batch of the loader, so that later loads of them in
/// the request are answered from its cache.
pub async fn prefetch(scope: &RequestScope, keys: &[String]) -> Result<(), EngineError> {
    if keys.is_empty() {
        return Ok(());
    }
    scope
        .loader
        .load_many(keys)
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    Ok(())
}

/// The node `id` if it is of type `type_name`, read strongly consistent, bypassing the loader.
/// Whether a node of any type has the id `id`, read strongly consistent: a create with an id
/// the client chose asks it first.
pub async fn node_exists(scope: &RequestScope, id: &str) -> Result<bool, EngineError> {
    Ok(node_type(scope, id).await?.is_some())
}

/// The type of the node `id`, if there is one, read strongly consistent.
pub async fn node_type(scope: &RequestScope, id: &str) -> Result<Option<String>, EngineError> {
    let item = scope
        .store
        .get_item_consistent(&Key::same(keys::node_key(id)))
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    Ok(item.map(|item| {
        item.get(TYPENAME)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned()
    }))
}

pub async fn read_node_consistent(
    scope: &RequestScope,
    type_name: &str,
    id: &str,
) -> Result<Option<Item>, EngineError> {
    let item = scope
        .store
        .get_item_consistent(&Key::same(keys::node_key(id)))
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    Ok(item.filter(|item| item.get(TYPENAME).and_then(AttrValue::as_str) == Some(type_name)))
}
