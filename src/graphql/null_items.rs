//! Null items in lists of nodes.
//!
//! # Why an extension
//!
//! async-graphql's dynamic schema (7.0) cannot return a null item inside a list of an abstract
//! type: every item of `[Node]` must name its concrete type. `nodes(ids:)` must answer null for
//! an id with no node, so a missing item names the reserved type [`MISSING_NODE`], which fails
//! the library's type check, and this extension turns exactly that failure into a null item.
//! A test of `nodes` with a missing id fails if the library's behaviour changes.
//!
//! An extension sees every field of a request, so it is installed only on the copy of the
//! schema that requests selecting `nodes` run on (see [`super::api::Api`]).

use std::sync::Arc;

use async_graphql::ServerResult;
use async_graphql::dynamic::FieldValue;
use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextResolve, ResolveInfo,
};

/// The type name a missing list item carries; no type of that name can exist (names starting
/// with `__` are reserved by GraphQL).
const MISSING_NODE: &str = "__MissingNode";

/// The list item that stands for "no node here".
pub(super) fn missing_node() -> FieldValue<'static> {
    FieldValue::NULL.with_type(MISSING_NODE)
}

pub(super) struct NullItems;

impl ExtensionFactory for NullItems {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(NullItems)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for NullItems {
    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<async_graphql::Value>> {
        let is_list_item = info.parent_type.starts_with('[');
        match next.run(ctx, info).await {
            Err(error) if is_list_item && error.message.contains(MISSING_NODE) => Ok(None),
            other => other,
        }
    }
}
