//! What every resolver takes from its context: the request's [`RequestScope`], the model and
//! id arguments; and how engine nodes become field values.

use std::sync::Arc;

use async_graphql::dynamic::{FieldValue, ResolverContext};

use super::null_items::missing_node;
use crate::engine::{EngineError, Node, RequestScope};
use crate::keys;
use crate::model::Model;

pub(super) fn scope<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<RequestScope>, EngineError> {
    ctx.data::<Arc<RequestScope>>().map_err(|_| {
        tracing::error!("a request ran without its RequestScope");
        EngineError::Internal
    })
}

pub(super) fn model<'a>(ctx: &ResolverContext<'a>) -> Result<&'a Arc<Model>, EngineError> {
    ctx.data::<Arc<Model>>().map_err(|_| EngineError::Internal)
}

/// An id argument, refused when it could not be a node's id.
pub(super) fn id_argument(ctx: &ResolverContext<'_>, name: &str) -> Result<String, EngineError> {
    let id = ctx.args.try_get(name)?.string()?;
    keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("{name}: {e}")))?;
    Ok(id.to_owned())
}

/// The node types a field of type `name` (an object type, a union, `Node`) may return.
pub(super) fn possible_types(model: &Model, name: &str) -> Arc<Vec<String>> {
    Arc::new(
        model
            .possible_types(name)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    )
}

/// The field value of a node. A field whose type is abstract (`Node`, a union) needs the
/// concrete type named; one of an object type must not have it.
pub(super) fn node_field_value(node: Node, abstract_type: bool) -> FieldValue<'static> {
    if abstract_type {
        let typename = node.typename.clone();
        FieldValue::owned_any(node).with_type(typename)
    } else {
        FieldValue::owned_any(node)
    }
}

/// The field value for a list of nodes, nulls kept in place.
pub(super) fn node_list(nodes: Vec<Option<Node>>) -> FieldValue<'static> {
    FieldValue::list(
        nodes
            .into_iter()
            .map(|node| node.map_or_else(missing_node, |node| node_field_value(node, true))),
    )
}
