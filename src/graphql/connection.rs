//! Relay connections: `first/after`, `last/before`, opaque cursors bound to their connection,
//! and `pageInfo`, over the three places a node's related nodes live: a `@hasMany` slot, the
//! node's own partition (`@outgoing` edges) and an edge type's inverse slot (`@incoming`).
//!
//! Invariant: the partition a connection reads is computed from its parent node; a cursor only
//! moves the position inside it, and a cursor issued by another connection is refused.

use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef,
};

use super::types::attribute_field;
use super::{
    ApiError, NodeValue, RequestScope, load_nodes, model, node_of, prefetch, scope, values,
};
use crate::keys::{self, Cursor};
use crate::model::{FieldDef, FieldKind, Model, ScalarType, TypeDef};
use crate::store::{AttrValue, Bound, Item, RangeQuery};

/// Page size when the client gives neither `first` nor `last`.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: usize = 100;

/// Where a connection's items come from.
#[derive(Debug, Clone)]
enum Source {
    /// `@hasMany`: the slot's index; the items are the element nodes themselves.
    Slot { slot: u8, element: String },
    /// `@outgoing`: the parent's own partition; the items are edges, the nodes their targets.
    Outgoing { edge: String, slot: u8 },
    /// `@incoming`: the edge type's inverse slot; the items are edges, the nodes their sources.
    Incoming { edge: String, slot: u8 },
}

/// One connection field, as its resolver needs it.
pub(super) struct ConnectionSpec {
    /// `Farm.cows`: with the parent id, the name a cursor is bound to.
    name: String,
    /// `cows`.
    pub field: String,
    source: Source,
    /// The node types the connection's nodes may have.
    allowed: Vec<String>,
    /// The enum an edge connection sorts by, when it offers `role`/`minRole`.
    role_enum: Option<String>,
}

pub(super) struct ConnectionValue {
    edges: Vec<EdgeValue>,
    page_info: PageInfoValue,
}

pub(super) struct EdgeValue {
    cursor: String,
    /// `None` only when the query does not select the node: it is then never read.
    node: Option<NodeValue>,
    /// The edge item, for edge connections: its metadata are fields of the Relay edge.
    edge: Option<Arc<Item>>,
}

struct PageInfoValue {
    has_next_page: bool,
    has_previous_page: bool,
    start_cursor: Option<String>,
    end_cursor: Option<String>,
}

/// What page a client asked for, validated.
#[derive(Debug)]
struct PageRequest {
    forward: bool,
    size: usize,
    after: Option<String>,
    before: Option<String>,
    role: Option<String>,
    min_role: Option<String>,
}

pub(super) fn page_info() -> Object {
    let flag = |name: &str, read: fn(&PageInfoValue) -> bool| {
        Field::new(name, TypeRef::named_nn(TypeRef::BOOLEAN), move |ctx| {
            let value = ctx.parent_value.downcast_ref::<PageInfoValue>().map(read);
            FieldFuture::from_value(value.map(Into::into))
        })
    };
    let cursor = |name: &str, read: fn(&PageInfoValue) -> Option<&String>| {
        Field::new(name, TypeRef::named(TypeRef::STRING), move |ctx| {
            let value = ctx
                .parent_value
                .downcast_ref::<PageInfoValue>()
                .and_then(read)
                .map(|cursor| cursor.as_str().into());
            FieldFuture::from_value(value)
        })
    };
    Object::new("PageInfo")
        .description("Where a page sits in its connection (Relay cursor connections).")
        .field(flag("hasNextPage", |p| p.has_next_page))
        .field(flag("hasPreviousPage", |p| p.has_previous_page))
        .field(cursor("startCursor", |p| p.start_cursor.as_ref()))
        .field(cursor("endCursor", |p| p.end_cursor.as_ref()))
}

/// The connection type `name` and its edge type `edge_name`, whose nodes are of `node_type`.
/// Edge connections (`metadata` given) add the edge type's metadata fields and `createdAt` to
/// the Relay edge.
pub(super) fn objects(
    name: &str,
    edge_name: &str,
    node_type: &str,
    is_abstract: bool,
    metadata: Option<&[FieldDef]>,
) -> [Object; 2] {
    let connection = Object::new(name)
        .field(Field::new(
            "edges",
            TypeRef::named_nn_list_nn(edge_name),
            |ctx| {
                let edges = ctx
                    .parent_value
                    .downcast_ref::<ConnectionValue>()
                    .map(|c| FieldValue::list(c.edges.iter().map(|e| FieldValue::borrowed_any(e))));
                FieldFuture::Value(edges)
            },
        ))
        .field(Field::new(
            "pageInfo",
            TypeRef::named_nn("PageInfo"),
            |ctx| {
                let page_info = ctx
                    .parent_value
                    .downcast_ref::<ConnectionValue>()
                    .map(|c| FieldValue::borrowed_any(&c.page_info));
                FieldFuture::Value(page_info)
            },
        ));
    let mut edge = Object::new(edge_name)
        .field(Field::new(
            "cursor",
            TypeRef::named_nn(TypeRef::STRING),
            |ctx| {
                let cursor = ctx
                    .parent_value
                    .downcast_ref::<EdgeValue>()
                    .map(|e| e.cursor.as_str().into());
                FieldFuture::from_value(cursor)
            },
        ))
        .field(Field::new(
            "node",
            TypeRef::named_nn(node_type),
            move |ctx| {
                let node = ctx
                    .parent_value
                    .downcast_ref::<EdgeValue>()
                    .and_then(|e| e.node.as_ref())
                    .map(|node| {
                        let value = FieldValue::borrowed_any(node);
                        if is_abstract {
                            value.with_type(node.typename.clone())
                        } else {
                            value
                        }
                    });
                FieldFuture::Value(node)
            },
        ));
    if let Some(metadata) = metadata {
        for field in metadata {
            if let FieldKind::Scalar {
                scalar, required, ..
            } = &field.kind
            {
                edge = edge.field(edge_attribute(&field.name, scalar.clone(), *required));
            }
        }
        edge = edge.field(
            edge_attribute("createdAt", ScalarType::AwsDateTime, true)
                .description("When the edge was first added."),
        );
    }
    [connection, edge]
}

/// A Relay edge field that reads one attribute of the edge item.
fn edge_attribute(name: &str, scalar: ScalarType, required: bool) -> Field {
    attribute_field::<EdgeValue>(name, scalar, required, |e| e.edge.as_deref())
}

/// The connection field for a `@hasMany`, `@outgoing` or `@incoming` field of `owner`.
pub(super) fn field(owner: &TypeDef, field: &FieldDef, model: &Model) -> Field {
    let (spec, connection_type) = spec(owner, field, model);
    let role_enum = spec.role_enum.clone();
    let mut generated = Field::new(&field.name, TypeRef::named_nn(connection_type), move |ctx| {
        let spec = spec.clone();
        FieldFuture::new(async move {
            let connection = resolve(&ctx, &spec).await.map_err(ApiError::into_graphql)?;
            Ok(Some(FieldValue::owned_any(connection)))
        })
    })
    .argument(InputValue::new("first", TypeRef::named(TypeRef::INT)).description(
        format!("Page forward: at most this many (0 to {MAX_PAGE_SIZE}; {DEFAULT_PAGE_SIZE} when neither first nor last is given)."),
    ))
    .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)).description("Start after this cursor."))
    .argument(InputValue::new("last", TypeRef::named(TypeRef::INT)).description(format!("Page backward: at most this many (0 to {MAX_PAGE_SIZE}).")))
    .argument(InputValue::new("before", TypeRef::named(TypeRef::STRING)).description("End before this cursor."));
    if let Some(role_enum) = &role_enum {
        generated = generated.argument(
            InputValue::new("role", TypeRef::named(role_enum))
                .description("Only edges with this role."),
        );
        if model.enum_def(role_enum).is_some_and(|e| e.is_ranked()) {
            generated = generated.argument(
                InputValue::new("minRole", TypeRef::named(role_enum))
                    .description("Only edges whose role ranks at least this high."),
            );
        }
    }
    generated
}

/// The resolver's view of a connection field, and the name of its connection type.
pub(super) fn spec(
    owner: &TypeDef,
    field: &FieldDef,
    model: &Model,
) -> (Arc<ConnectionSpec>, String) {
    let (source, element, connection_type, role_enum) = match &field.kind {
        FieldKind::HasMany(has_many) => (
            Source::Slot {
                slot: has_many.slot,
                element: has_many.element.clone(),
            },
            has_many.element.clone(),
            format!("{}Connection", has_many.element),
            None,
        ),
        FieldKind::Outgoing { edge, element } | FieldKind::Incoming { edge, element } => {
            let edge_def = model
                .edge_def(edge)
                .expect("the model checked that edge fields name edge types");
            let role_enum = match edge_def.sort_scalar() {
                Some(ScalarType::Enum(name)) => Some(name.clone()),
                _ => None,
            };
            if matches!(field.kind, FieldKind::Outgoing { .. }) {
                (
                    Source::Outgoing {
                        edge: edge.clone(),
                        slot: edge_def.slot,
                    },
                    element.clone(),
                    format!("{edge}Connection"),
                    role_enum,
                )
            } else {
                (
                    Source::Incoming {
                        edge: edge.clone(),
                        slot: edge_def.slot,
                    },
                    element.clone(),
                    format!("{edge}InverseConnection"),
                    role_enum,
                )
            }
        }
        _ => unreachable!("connection fields are @hasMany, @outgoing or @incoming"),
    };
    let spec = Arc::new(ConnectionSpec {
        name: format!("{}.{}", owner.name, field.name),
        field: field.name.clone(),
        source,
        allowed: model
            .possible_types(&element)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        role_enum,
    });
    (spec, connection_type)
}

/// One page to read: the partition, the bounds and the filter that the page request and the
/// connection's source give.
struct PagePlan {
    index: Option<u8>,
    partition: String,
    lower: Option<Bound>,
    upper: Option<Bound>,
    filter: Option<(String, Option<Bound>, Option<Bound>)>,
    /// The attribute a cursor holds: the item's sort key in what was queried.
    sort_attribute: String,
}

impl ConnectionSpec {
    /// The cursor binding of this connection under `parent_id`.
    fn binding(&self, parent_id: &str) -> String {
        format!("{}:{}", self.name, parent_id)
    }

    /// Where the page asked for lies.
    fn plan(
        &self,
        model: &Model,
        page: &PageRequest,
        parent_id: &str,
    ) -> Result<PagePlan, ApiError> {
        let binding = self.binding(parent_id);
        let decode =
            |argument: &str, cursor: &Option<String>| -> Result<Option<String>, ApiError> {
                cursor
                    .as_deref()
                    .map(|encoded| {
                        Cursor::decode_for(encoded, &binding)
                            .map(|c| c.sort_key)
                            .map_err(|e| ApiError::bad_input(format!("{argument}: {e}")))
                    })
                    .transpose()
            };
        let mut lower = decode("after", &page.after)?.map(Bound::exclusive);
        let mut upper = decode("before", &page.before)?.map(Bound::exclusive);

        // Role filters: a range of the edge's sort value, `<sort value>#<id>`.
        let mut role_lower = None;
        let mut role_upper = None;
        if let Some(role_enum) = &self.role_enum {
            if let Some(role) = &page.role {
                let sort = values::enum_sort_value(model, role_enum, role);
                role_lower = Some(Bound::inclusive(format!("{sort}#")));
                role_upper = Some(Bound::exclusive(format!("{sort}$")));
            }
            if let Some(min_role) = &page.min_role {
                let sort = values::enum_sort_value(model, role_enum, min_role);
                role_lower = tighter_lower(role_lower, Some(Bound::inclusive(sort)));
                // A null role sorts last, above every rank: it is not "at least" anything.
                role_upper =
                    tighter_upper(role_upper, Some(Bound::exclusive(keys::NULL_SORT_VALUE)));
            }
        }
        Ok(match &self.source {
            Source::Slot { slot, element } => PagePlan {
                index: Some(*slot),
                partition: keys::slot_partition(element, parent_id),
                lower,
                upper,
                filter: None,
                sort_attribute: keys::slot_sort_attribute(*slot),
            },
            Source::Incoming { edge, slot } => PagePlan {
                index: Some(*slot),
                partition: keys::slot_partition(edge, parent_id),
                lower: tighter_lower(lower, role_lower),
                upper: tighter_upper(upper, role_upper),
                filter: None,
                sort_attribute: keys::slot_sort_attribute(*slot),
            },
            Source::Outgoing { edge, slot } => {
                let (first, past) = keys::edge_sort_key_range(edge);
                lower = tighter_lower(lower, Some(Bound::inclusive(first)));
                upper = tighter_upper(upper, Some(Bound::exclusive(past)));
                let filter = (role_lower.is_some() || role_upper.is_some())
                    .then(|| (keys::slot_sort_attribute(*slot), role_lower, role_upper));
                PagePlan {
                    index: None,
                    partition: keys::node_key(parent_id),
                    lower,
                    upper,
                    filter,
                    sort_attribute: "SK".to_owned(),
                }
            }
        })
    }

    /// Whether an item of this connection proves that its parent is a `type_name`: an edge in a
    /// node's own partition proves the node is the edge's source type; an edge in an inverse
    /// slot records its target's type.
    pub(super) fn proves_parent_type(&self, item: &Item, type_name: &str) -> bool {
        match &self.source {
            Source::Slot { .. } => false,
            Source::Outgoing { .. } => true,
            Source::Incoming { .. } => {
                item.get("toType").and_then(AttrValue::as_str) == Some(type_name)
            }
        }
    }
}

/// Reads the items of a page (one more than asked, to tell whether another page follows).
async fn read_page(
    scope: &RequestScope,
    plan: &PagePlan,
    page: &PageRequest,
) -> Result<Vec<Item>, ApiError> {
    scope
        .store
        .query_range(&RangeQuery {
            index: plan.index,
            partition: &plan.partition,
            lower: plan.lower.clone(),
            upper: plan.upper.clone(),
            filter: plan.filter.clone(),
            forward: page.forward,
            limit: page.size + 1,
            consistent: false,
        })
        .await
        .map_err(|e| ApiError::from_store(&e))
}

/// The key under which a page read ahead of its field waits for it.
fn stash_key(spec: &ConnectionSpec, parent_id: &str, page: &PageRequest) -> String {
    format!("{}|{page:?}", spec.binding(parent_id))
}

/// Reads the page a selected connection field will ask for, before its parent node is read,
/// and keeps it for the field. Answers the items read.
pub(super) async fn read_ahead(
    scope: &RequestScope,
    model: &Model,
    spec: &ConnectionSpec,
    parent_id: &str,
    arguments: &[(async_graphql::Name, async_graphql::Value)],
) -> Result<Vec<Item>, ApiError> {
    let page = PageRequest::from_values(|name| {
        arguments
            .iter()
            .find(|(argument, _)| argument.as_str() == name)
            .map(|(_, value)| value.clone())
    })?;
    let plan = spec.plan(model, &page, parent_id)?;
    let items = read_page(scope, &plan, &page).await?;
    scope.stash_page(stash_key(spec, parent_id, &page), items.clone());
    Ok(items)
}

async fn resolve(
    ctx: &ResolverContext<'_>,
    spec: &ConnectionSpec,
) -> Result<ConnectionValue, ApiError> {
    let parent = ctx
        .parent_value
        .downcast_ref::<NodeValue>()
        .ok_or(ApiError::Internal)?;
    let model = model(ctx)?;
    let scope = scope(ctx)?;
    let page = PageRequest::from_values(|name| ctx.args.get(name).map(|v| v.as_value().clone()))?;
    let plan = spec.plan(model, &page, parent.id())?;
    let mut items = match scope.take_page(&stash_key(spec, parent.id(), &page)) {
        Some(items) => items,
        None => read_page(scope, &plan, &page).await?,
    };
    let has_more = items.len() > page.size;
    items.truncate(page.size);
    if !page.forward {
        items.reverse();
    }

    let binding = spec.binding(parent.id());
    let node_selection = ctx.look_ahead().field("edges").field("node");
    let edges = edges_of(
        scope,
        spec,
        &binding,
        &plan.sort_attribute,
        items,
        node_selection.exists(),
    )
    .await?;
    let nodes: Vec<&NodeValue> = edges.iter().filter_map(|e| e.node.as_ref()).collect();
    prefetch::relations(scope, model, &nodes, &node_selection).await?;
    let page_info = PageInfoValue {
        has_next_page: if page.forward {
            has_more
        } else {
            page.before.is_some()
        },
        has_previous_page: if page.forward {
            page.after.is_some()
        } else {
            has_more
        },
        start_cursor: edges.first().map(|e| e.cursor.clone()),
        end_cursor: edges.last().map(|e| e.cursor.clone()),
    };
    Ok(ConnectionValue { edges, page_info })
}

/// Pairs each item read with its node: the item itself for a slot, else the edge's other end,
/// loaded in one batch for the whole page.
async fn edges_of(
    scope: &RequestScope,
    spec: &ConnectionSpec,
    binding: &str,
    sort_attribute: &str,
    items: Vec<Item>,
    nodes_selected: bool,
) -> Result<Vec<EdgeValue>, ApiError> {
    let allowed: Vec<&str> = spec.allowed.iter().map(String::as_str).collect();
    let cursor_of = |item: &Item| {
        item.get(sort_attribute)
            .and_then(AttrValue::as_str)
            .map(|sort_key| {
                Cursor {
                    connection: binding.to_owned(),
                    sort_key: sort_key.to_owned(),
                }
                .encode()
            })
    };
    let other_end = match &spec.source {
        Source::Slot { .. } => {
            let mut edges = Vec::with_capacity(items.len());
            for item in items {
                let Some(cursor) = cursor_of(&item) else {
                    continue;
                };
                let item = Arc::new(item);
                // The index projects whole items: later reads of these nodes are free.
                scope
                    .loader
                    .offer(&keys::node_key(&id_of(&item, "id")), item.clone());
                if let Some(node) = node_of(item, &allowed) {
                    edges.push(EdgeValue {
                        cursor,
                        node: Some(node),
                        edge: None,
                    });
                }
            }
            return Ok(edges);
        }
        Source::Outgoing { .. } => "to",
        Source::Incoming { .. } => "from",
    };
    if !nodes_selected {
        return Ok(items
            .into_iter()
            .filter_map(|item| {
                Some(EdgeValue {
                    cursor: cursor_of(&item)?,
                    node: None,
                    edge: Some(Arc::new(item)),
                })
            })
            .collect());
    }
    let ids: Vec<&str> = items
        .iter()
        .map(|item| id_of_ref(item, other_end))
        .collect();
    let nodes = load_nodes(scope, &ids, &allowed).await?;
    Ok(items
        .into_iter()
        .zip(nodes)
        .filter_map(|(item, node)| {
            // A node deleted without its edges (it never is) would only be skipped.
            Some(EdgeValue {
                cursor: cursor_of(&item)?,
                node: Some(node?),
                edge: Some(Arc::new(item)),
            })
        })
        .collect())
}

fn id_of(item: &Item, attribute: &str) -> String {
    id_of_ref(item, attribute).to_owned()
}

fn id_of_ref<'i>(item: &'i Item, attribute: &str) -> &'i str {
    item.get(attribute)
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
}

/// The higher of two lower bounds (exclusive wins a tie).
fn tighter_lower(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
    match (a, b) {
        (Some(a), Some(b)) => Some(
            if a.value > b.value || (a.value == b.value && !a.inclusive) {
                a
            } else {
                b
            },
        ),
        (a, b) => a.or(b),
    }
}

/// The lower of two upper bounds (exclusive wins a tie).
fn tighter_upper(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
    match (a, b) {
        (Some(a), Some(b)) => Some(
            if a.value < b.value || (a.value == b.value && !a.inclusive) {
                a
            } else {
                b
            },
        ),
        (a, b) => a.or(b),
    }
}

impl PageRequest {
    /// Reads the page arguments, from a resolver's arguments or from a look-ahead of them.
    fn from_values(
        get: impl Fn(&str) -> Option<async_graphql::Value>,
    ) -> Result<PageRequest, ApiError> {
        use async_graphql::Value;
        let present = |name: &str| get(name).filter(|v| *v != Value::Null);
        let size = |name: &str| -> Result<Option<usize>, ApiError> {
            let Some(value) = present(name) else {
                return Ok(None);
            };
            let n = match &value {
                Value::Number(n) => n.as_i64(),
                _ => None,
            }
            .ok_or_else(|| ApiError::bad_input(format!("{name} must be a whole number")))?;
            usize::try_from(n)
                .ok()
                .filter(|n| *n <= MAX_PAGE_SIZE)
                .map(Some)
                .ok_or_else(|| {
                    ApiError::bad_input(format!(
                        "{name} must be between 0 and {MAX_PAGE_SIZE}, not {n}"
                    ))
                })
        };
        let text = |name: &str| -> Result<Option<String>, ApiError> {
            match present(name) {
                Some(Value::Enum(value)) => Ok(Some(value.to_string())),
                Some(Value::String(value)) => Ok(Some(value)),
                Some(_) => Err(ApiError::bad_input(format!("{name} must be a string"))),
                None => Ok(None),
            }
        };
        let (forward, size) = match (size("first")?, size("last")?) {
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_input("pass first or last, not both"));
            }
            (Some(first), None) => (true, first),
            (None, Some(last)) => (false, last),
            (None, None) => (true, DEFAULT_PAGE_SIZE),
        };
        Ok(PageRequest {
            forward,
            size,
            after: text("after")?,
            before: text("before")?,
            role: text("role")?,
            min_role: text("minRole")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tighter_bound_wins() {
        let lower = tighter_lower(
            Some(Bound::inclusive("400")),
            Some(Bound::exclusive("500#x")),
        );
        assert_eq!(lower, Some(Bound::exclusive("500#x")));
        let tie = tighter_lower(Some(Bound::inclusive("4")), Some(Bound::exclusive("4")));
        assert_eq!(tie, Some(Bound::exclusive("4")));
        let upper = tighter_upper(Some(Bound::exclusive("500$")), None);
        assert_eq!(upper, Some(Bound::exclusive("500$")));
        let upper = tighter_upper(Some(Bound::exclusive("b")), Some(Bound::exclusive("a")));
        assert_eq!(upper, Some(Bound::exclusive("a")));
    }
}
