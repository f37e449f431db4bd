//! Running the declarative resolvers of `resolvers/` (see [`crate::resolvers`]): a pipeline's
//! steps run on the request's store handle and loader, so its reads batch with every other
//! field's.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::nodes::{Node, load_nodes};
use crate::auth::Caller;
use crate::engine::derive::{target_ids, text};
use crate::engine::error::EngineError;
use crate::engine::rules::admits;
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::keys::TYPENAME;
use crate::resolvers::{MAX_INCOMING, Pipeline, Step, ValueRef};
use crate::store::{AttrValue, Bound, Item, RangeQuery};

/// What a pipeline holds between steps, and what it ends with.
pub enum Found {
    Nodes(Vec<Node>),
    Ids(Vec<String>),
}

impl Found {
    pub fn len(&self) -> usize {
        match self {
            Found::Nodes(nodes) => nodes.len(),
            Found::Ids(ids) => ids.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn into_ids(self) -> Vec<String> {
        match self {
            Found::Ids(ids) => ids,
            Found::Nodes(nodes) => nodes.iter().map(|n| n.id().to_owned()).collect(),
        }
    }

    /// The nodes found, of the `allowed` types: ids are loaded in one batch.
    pub async fn into_nodes(
        self,
        scope: &RequestScope,
        allowed: &[String],
    ) -> Result<Vec<Node>, EngineError> {
        match self {
            Found::Nodes(nodes) => Ok(nodes
                .into_iter()
                .filter(|n| {
                    allowed.contains(&n.typename)
                        && admits(&scope.read_access(&[n.typename.as_str()]), &n.item)
                })
                .collect()),
            Found::Ids(ids) => load(scope, &ids, allowed).await,
        }
    }
}

/// What a pipeline's values may refer to besides literals: the field's parent, its arguments
/// (as text) and the caller's claims.
pub struct PipelineInput<'a> {
    pub parent: &'a Node,
    pub arguments: &'a HashMap<String, String>,
    pub caller: Option<&'a Caller>,
}

impl PipelineInput<'_> {
    fn resolve(&self, value: &ValueRef) -> Option<String> {
        match value {
            ValueRef::Literal(text) => Some(text.clone()),
            ValueRef::Argument(name) => self.arguments.get(name).cloned(),
            ValueRef::Parent(field) => stored_text(&self.parent.item, field),
            ValueRef::Claim(name) => match self.caller?.claim(name)? {
                serde_json::Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            },
        }
    }
}

fn stored_text(item: &Item, field: &str) -> Option<String> {
    match item.get(field) {
        Some(AttrValue::S(s) | AttrValue::N(s)) => Some(s.clone()),
        Some(AttrValue::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

/// Runs `pipeline` from `input.parent`.
pub async fn run_pipeline(
    pipeline: &Pipeline,
    scope: &RequestScope,
    input: &PipelineInput<'_>,
) -> Result<Found, EngineError> {
    let mut current = Found::Nodes(vec![input.parent.clone()]);
    for step in &pipeline.steps {
        current = match (step, current) {
            (
                Step::Incoming {
                    edge,
                    slot,
                    role_sort,
                },
                Found::Nodes(nodes),
            ) => {
                let Some(parent_id) = nodes.first().map(|n| n.id().to_owned()) else {
                    // A filter before this step removed the parent: nothing to read.
                    current = Found::Ids(Vec::new());
                    continue;
                };
                let partition = keys::slot_partition(edge, &parent_id);
                let (lower, upper) = match role_sort {
                    Some(role) => (
                        Some(Bound::inclusive(format!("{role}#"))),
                        Some(Bound::exclusive(format!("{role}$"))),
                    ),
                    None => (None, None),
                };
                let items = read_slot(scope, *slot, &partition, lower, upper).await?;
                Found::Ids(
                    items
                        .iter()
                        .filter_map(|edge| edge.get("from").and_then(AttrValue::as_str))
                        .map(str::to_owned)
                        .collect(),
                )
            }
            (Step::Query { slot, element, .. }, Found::Nodes(nodes)) => {
                let Some(parent_id) = nodes.first().map(|n| n.id().to_owned()) else {
                    // A filter before this step removed the parent: nothing to read.
                    current = Found::Ids(Vec::new());
                    continue;
                };
                let partition = keys::slot_partition(element, &parent_id);
                let items = read_slot(scope, *slot, &partition, None, None).await?;
                Found::Nodes(
                    items
                        .into_iter()
                        .filter_map(|item| {
                            let typename = item.get(TYPENAME)?.as_str()?.to_owned();
                            // What the caller may not read is not read through either.
                            admits(&scope.read_access(&[typename.as_str()]), &item)
                                .then(|| Node::new(typename, Arc::new(item)))
                        })
                        .collect(),
                )
            }
            (Step::Targets { edge, role_sort }, Found::Nodes(nodes)) => Found::Ids(
                nodes
                    .iter()
                    .flat_map(|node| target_ids(&node.item, edge, role_sort.as_deref()))
                    .collect(),
            ),
            (Step::Load { allowed }, Found::Ids(ids)) => {
                Found::Nodes(load(scope, &ids, allowed).await?)
            }
            (Step::FilterId(value), current) => {
                let wanted = input.resolve(value);
                let keep = |id: &str| wanted.as_deref() == Some(id);
                match current {
                    Found::Ids(ids) => Found::Ids(ids.into_iter().filter(|id| keep(id)).collect()),
                    Found::Nodes(nodes) => {
                        Found::Nodes(nodes.into_iter().filter(|n| keep(n.id())).collect())
                    }
                }
            }
            (Step::FilterField(field, value), Found::Nodes(nodes)) => {
                let wanted = input.resolve(value);
                Found::Nodes(
                    nodes
                        .into_iter()
                        .filter(|node| {
                            let stored = stored_text(&node.item, field);
                            stored.is_some() && stored == wanted
                        })
                        .collect(),
                )
            }
            (Step::Distinct, Found::Ids(ids)) => {
                let mut seen = HashSet::new();
                Found::Ids(
                    ids.into_iter()
                        .filter(|id| seen.insert(id.clone()))
                        .collect(),
                )
            }
            (Step::Distinct, Found::Nodes(nodes)) => {
                let mut seen = HashSet::new();
                Found::Nodes(
                    nodes
                        .into_iter()
                        .filter(|n| seen.insert(text(&n.item, "id").to_owned()))
                        .collect(),
                )
            }
            _ => {
                tracing::error!(file = %pipeline.file, "a resolver step met a shape its validation excludes");
                return Err(EngineError::Internal);
            }
        };
    }
    Ok(current)
}

/// The items of one slot partition between optional bounds, at most [`MAX_INCOMING`].
async fn read_slot(
    scope: &RequestScope,
    slot: u8,
    partition: &str,
    lower: Option<Bound>,
    upper: Option<Bound>,
) -> Result<Vec<Item>, EngineError> {
    scope
        .store
        .query_range(&RangeQuery {
            index: Some(slot),
            partition,
            lower,
            upper,
            filter: None,
            forward: true,
            limit: MAX_INCOMING,
            consistent: false,
        })
        .await
        .map_err(|e| EngineError::from_store(&e))
}

/// Loads nodes by id through the request's loader, keeping those of the allowed types.
async fn load(
    scope: &RequestScope,
    ids: &[String],
    allowed: &[String],
) -> Result<Vec<Node>, EngineError> {
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let nodes = load_nodes(scope, ids, &allowed).await?;
    Ok(nodes.into_iter().flatten().collect())
}
