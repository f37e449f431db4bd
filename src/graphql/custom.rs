//! Fields served by the declarative resolvers of `resolvers/` (see [`crate::resolvers`]): the
//! pipeline runs on the request's store handle and loader, so its reads batch with every other
//! resolver's.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, ResolverContext, TypeRef,
};

use super::{ApiError, NodeValue, RequestScope, edges, load_nodes, node_field_value, scope};
use crate::auth::Caller;
use crate::keys;
use crate::model::{FieldDef, FieldKind, Model};
use crate::resolvers::{MAX_INCOMING, Output, Pipeline, Step, ValueRef};
use crate::store::{AttrValue, Bound, Item, RangeQuery};

/// What a pipeline holds between steps.
enum Current {
    Nodes(Vec<NodeValue>),
    Ids(Vec<String>),
}

/// The field of `field`'s owner that `pipeline` serves.
pub(super) fn field(field: &FieldDef, pipeline: Arc<Pipeline>) -> Field {
    let (ty, arguments) = match &field.kind {
        FieldKind::Custom(custom) => (
            type_ref(&custom.ty),
            custom
                .arguments
                .iter()
                .map(|a| InputValue::new(&a.name, type_ref(&a.ty)))
                .collect(),
        ),
        FieldKind::Targets { element, .. } => (TypeRef::named_nn_list_nn(element), Vec::new()),
        FieldKind::BelongsTo { target, .. } => (TypeRef::named(target), Vec::new()),
        _ => unreachable!("resolvers are only loaded for custom, @targets and @belongsTo fields"),
    };
    let description = format!("{} (resolver {})", pipeline.description, pipeline.file);
    let mut generated = Field::new(&field.name, ty, move |ctx| {
        let pipeline = pipeline.clone();
        FieldFuture::new(async move {
            let Some(parent) = ctx.parent_value.downcast_ref::<NodeValue>() else {
                return Ok(None);
            };
            let scope = scope(&ctx).map_err(ApiError::into_graphql)?;
            let model = super::model(&ctx).map_err(ApiError::into_graphql)?;
            let arguments = arguments_of(&ctx);
            let caller = ctx.data::<Caller>().ok();
            let current = run(&pipeline, scope, parent, &arguments, caller)
                .await
                .map_err(ApiError::into_graphql)?;
            answer(&ctx, &pipeline.output, current, scope, model)
                .await
                .map_err(ApiError::into_graphql)
        })
    })
    .description(description);
    for argument in arguments {
        generated = generated.argument(argument);
    }
    generated
}

/// A declared type (`[User!]!`) as a dynamic-schema type.
fn type_ref(declared: &str) -> TypeRef {
    if let Some(inner) = declared.strip_suffix('!') {
        return TypeRef::NonNull(Box::new(type_ref(inner)));
    }
    if let Some(inner) = declared.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        return TypeRef::List(Box::new(type_ref(inner)));
    }
    TypeRef::named(declared)
}

/// The arguments the client sent, as text.
fn arguments_of(ctx: &ResolverContext<'_>) -> HashMap<String, String> {
    ctx.args
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), text_of(value.as_value())?)))
        .collect()
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Enum(name) => Some(name.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn resolve(
    value: &ValueRef,
    parent: &NodeValue,
    arguments: &HashMap<String, String>,
    caller: Option<&Caller>,
) -> Option<String> {
    match value {
        ValueRef::Literal(text) => Some(text.clone()),
        ValueRef::Argument(name) => arguments.get(name).cloned(),
        ValueRef::Parent(field) => match parent.item.get(field) {
            Some(AttrValue::S(s) | AttrValue::N(s)) => Some(s.clone()),
            Some(AttrValue::Bool(b)) => Some(b.to_string()),
            _ => None,
        },
        ValueRef::Claim(name) => match caller?.claim(name)? {
            serde_json::Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        },
    }
}

fn id_of(item: &Item) -> &str {
    item.get("id")
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
}

async fn run(
    pipeline: &Pipeline,
    scope: &RequestScope,
    parent: &NodeValue,
    arguments: &HashMap<String, String>,
    caller: Option<&Caller>,
) -> Result<Current, ApiError> {
    let mut current = Current::Nodes(vec![parent.clone()]);
    for step in &pipeline.steps {
        current = match (step, current) {
            (
                Step::Incoming {
                    edge,
                    slot,
                    role_sort,
                },
                Current::Nodes(nodes),
            ) => {
                let Some(parent_id) = nodes.first().map(|n| id_of(&n.item).to_owned()) else {
                    // A filter before this step removed the parent: nothing to read.
                    current = Current::Ids(Vec::new());
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
                Current::Ids(
                    items
                        .iter()
                        .filter_map(|edge| edge.get("from").and_then(AttrValue::as_str))
                        .map(str::to_owned)
                        .collect(),
                )
            }
            (Step::Query { slot, element, .. }, Current::Nodes(nodes)) => {
                let Some(parent_id) = nodes.first().map(|n| id_of(&n.item).to_owned()) else {
                    // A filter before this step removed the parent: nothing to read.
                    current = Current::Ids(Vec::new());
                    continue;
                };
                let partition = keys::slot_partition(element, &parent_id);
                let items = read_slot(scope, *slot, &partition, None, None).await?;
                Current::Nodes(
                    items
                        .into_iter()
                        .filter_map(|item| {
                            let typename = item.get("__typename")?.as_str()?.to_owned();
                            Some(NodeValue {
                                typename,
                                item: Arc::new(item),
                            })
                        })
                        .collect(),
                )
            }
            (Step::Targets { edge, role_sort }, Current::Nodes(nodes)) => Current::Ids(
                nodes
                    .iter()
                    .flat_map(|node| edges::target_ids(&node.item, edge, role_sort.as_deref()))
                    .collect(),
            ),
            (Step::Load { allowed }, Current::Ids(ids)) => {
                Current::Nodes(load(scope, &ids, allowed).await?)
            }
            (Step::FilterId(value), current) => {
                let wanted = resolve(value, parent, arguments, caller);
                let keep = |id: &str| wanted.as_deref() == Some(id);
                match current {
                    Current::Ids(ids) => {
                        Current::Ids(ids.into_iter().filter(|id| keep(id)).collect())
                    }
                    Current::Nodes(nodes) => {
                        Current::Nodes(nodes.into_iter().filter(|n| keep(id_of(&n.item))).collect())
                    }
                }
            }
            (Step::FilterField(field, value), Current::Nodes(nodes)) => {
                let wanted = resolve(value, parent, arguments, caller);
                Current::Nodes(
                    nodes
                        .into_iter()
                        .filter(|node| {
                            let stored = match node.item.get(field) {
                                Some(AttrValue::S(s) | AttrValue::N(s)) => Some(s.clone()),
                                Some(AttrValue::Bool(b)) => Some(b.to_string()),
                                _ => None,
                            };
                            stored.is_some() && stored == wanted
                        })
                        .collect(),
                )
            }
            (Step::Distinct, Current::Ids(ids)) => {
                let mut seen = std::collections::HashSet::new();
                Current::Ids(
                    ids.into_iter()
                        .filter(|id| seen.insert(id.clone()))
                        .collect(),
                )
            }
            (Step::Distinct, Current::Nodes(nodes)) => {
                let mut seen = std::collections::HashSet::new();
                Current::Nodes(
                    nodes
                        .into_iter()
                        .filter(|n| seen.insert(id_of(&n.item).to_owned()))
                        .collect(),
                )
            }
            _ => {
                tracing::error!(file = %pipeline.file, "a resolver step met a shape its validation excludes");
                return Err(ApiError::Internal);
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
) -> Result<Vec<Item>, ApiError> {
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
        .map_err(|e| ApiError::from_store(&e))
}

/// Loads nodes by id through the request's loader, keeping those of the allowed types.
async fn load(
    scope: &RequestScope,
    ids: &[String],
    allowed: &[String],
) -> Result<Vec<NodeValue>, ApiError> {
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let nodes = load_nodes(scope, ids, &allowed).await?;
    Ok(nodes.into_iter().flatten().collect())
}

async fn answer(
    ctx: &ResolverContext<'_>,
    output: &Output,
    current: Current,
    scope: &RequestScope,
    model: &Model,
) -> Result<Option<FieldValue<'static>>, ApiError> {
    let count = match &current {
        Current::Nodes(nodes) => nodes.len(),
        Current::Ids(ids) => ids.len(),
    };
    match output {
        Output::Exists => Ok(Some(FieldValue::value(count > 0))),
        Output::Count => Ok(Some(FieldValue::value(
            i64::try_from(count).unwrap_or(i64::MAX),
        ))),
        Output::Ids { list } => {
            let ids: Vec<String> = match current {
                Current::Ids(ids) => ids,
                Current::Nodes(nodes) => nodes.iter().map(|n| id_of(&n.item).to_owned()).collect(),
            };
            if *list {
                Ok(Some(FieldValue::list(
                    ids.into_iter()
                        .map(|id| FieldValue::value(Value::String(id))),
                )))
            } else {
                Ok(ids
                    .into_iter()
                    .next()
                    .map(|id| FieldValue::value(Value::String(id))))
            }
        }
        Output::Nodes {
            list,
            allowed,
            is_abstract,
        } => {
            let nodes = match current {
                Current::Nodes(nodes) => nodes
                    .into_iter()
                    .filter(|n| allowed.contains(&n.typename))
                    .collect(),
                Current::Ids(ids) => load(scope, &ids, allowed).await?,
            };
            let found: Vec<&NodeValue> = nodes.iter().collect();
            super::prefetch::relations(scope, model, &found, &ctx.look_ahead()).await?;
            let mut values = nodes
                .into_iter()
                .map(|node| node_field_value(node, *is_abstract));
            if *list {
                Ok(Some(FieldValue::list(values)))
            } else {
                Ok(values.next())
            }
        }
    }
}

/// A field the model leaves to a resolver that was not loaded: answers an error rather than
/// nothing. Start-up refuses this; only a schema built without its resolvers meets it.
pub(super) fn missing(field: &FieldDef) -> Field {
    let FieldKind::Custom(custom) = &field.kind else {
        unreachable!("only custom fields can miss their resolver");
    };
    let mut generated = Field::new(&field.name, type_ref(&custom.ty), |_| {
        FieldFuture::new(async {
            Err::<Option<FieldValue<'static>>, _>(ApiError::Internal.into_graphql())
        })
    });
    for argument in &custom.arguments {
        generated = generated.argument(InputValue::new(&argument.name, type_ref(&argument.ty)));
    }
    generated
}
