//! Relay connections over relation slots: `first/after`, `last/before`, opaque cursors bound to
//! their connection, and `pageInfo`.
//!
//! Invariant: the partition a connection reads is computed from its parent node; a cursor only
//! moves the position inside it, and a cursor issued by another connection is refused.

use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ObjectAccessor, ResolverContext, TypeRef,
};

use super::{ApiError, NodeValue, node_of, scope};
use crate::keys::{self, Cursor};
use crate::model::{FieldDef, HasMany, Model, TypeDef};
use crate::store::{AttrValue, SlotQuery};

/// Page size when the client gives neither `first` nor `last`.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: usize = 100;

/// One `@hasMany` connection field, as its resolver needs it.
struct ConnectionSpec {
    /// `Farm.cows`: with the parent id, the name a cursor is bound to.
    name: String,
    slot: u8,
    element: String,
    allowed: Vec<String>,
}

struct ConnectionValue {
    edges: Vec<EdgeValue>,
    page_info: PageInfoValue,
}

struct EdgeValue {
    cursor: String,
    node: NodeValue,
}

struct PageInfoValue {
    has_next_page: bool,
    has_previous_page: bool,
    start_cursor: Option<String>,
    end_cursor: Option<String>,
}

/// What page a client asked for, validated.
struct PageRequest {
    forward: bool,
    size: usize,
    after: Option<String>,
    before: Option<String>,
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

/// The `<Element>Connection` and `<Element>Edge` types.
pub(super) fn objects(element: &str, is_union: bool) -> [Object; 2] {
    let edge_type = format!("{element}Edge");
    let connection = Object::new(format!("{element}Connection"))
        .field(Field::new(
            "edges",
            TypeRef::named_nn_list_nn(&edge_type),
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
    let edge = Object::new(edge_type)
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
        .field(Field::new("node", TypeRef::named_nn(element), move |ctx| {
            let node = ctx.parent_value.downcast_ref::<EdgeValue>().map(|e| {
                let node = FieldValue::borrowed_any(&e.node);
                if is_union {
                    node.with_type(e.node.typename.clone())
                } else {
                    node
                }
            });
            FieldFuture::Value(node)
        }));
    [connection, edge]
}

/// The connection field of a `@hasMany` relation.
pub(super) fn field(owner: &TypeDef, field: &FieldDef, has_many: &HasMany, model: &Model) -> Field {
    let spec = Arc::new(ConnectionSpec {
        name: format!("{}.{}", owner.name, field.name),
        slot: has_many.slot,
        element: has_many.element.clone(),
        allowed: model
            .possible_types(&has_many.element)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    });
    Field::new(
        &field.name,
        TypeRef::named_nn(format!("{}Connection", has_many.element)),
        move |ctx| {
            let spec = spec.clone();
            FieldFuture::new(async move {
                let connection = resolve(&ctx, &spec).await.map_err(ApiError::into_graphql)?;
                Ok(Some(FieldValue::owned_any(connection)))
            })
        },
    )
    .argument(InputValue::new("first", TypeRef::named(TypeRef::INT)).description(
        format!("Page forward: at most this many (0 to {MAX_PAGE_SIZE}; {DEFAULT_PAGE_SIZE} when neither first nor last is given)."),
    ))
    .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)).description("Start after this cursor."))
    .argument(InputValue::new("last", TypeRef::named(TypeRef::INT)).description(format!("Page backward: at most this many (0 to {MAX_PAGE_SIZE}).")))
    .argument(InputValue::new("before", TypeRef::named(TypeRef::STRING)).description("End before this cursor."))
}

async fn resolve(
    ctx: &ResolverContext<'_>,
    spec: &ConnectionSpec,
) -> Result<ConnectionValue, ApiError> {
    let parent = ctx
        .parent_value
        .downcast_ref::<NodeValue>()
        .ok_or(ApiError::Internal)?;
    let page = PageRequest::from_arguments(&ctx.args)?;
    let binding = format!("{}:{}", spec.name, parent.id());
    let decode = |argument: &str, cursor: &Option<String>| -> Result<Option<String>, ApiError> {
        cursor
            .as_deref()
            .map(|encoded| {
                Cursor::decode_for(encoded, &binding)
                    .map(|c| c.sort_key)
                    .map_err(|e| ApiError::bad_input(format!("{argument}: {e}")))
            })
            .transpose()
    };
    let after = decode("after", &page.after)?;
    let before = decode("before", &page.before)?;

    let scope = scope(ctx)?;
    let partition = keys::slot_partition(&spec.element, parent.id());
    let sort_attribute = keys::slot_sort_attribute(spec.slot);
    let mut items = scope
        .store
        .query_slot(&SlotQuery {
            slot: spec.slot,
            partition: &partition,
            after: after.as_deref(),
            before: before.as_deref(),
            forward: page.forward,
            // One more than the page tells whether another page follows.
            limit: page.size + 1,
        })
        .await
        .map_err(|e| ApiError::from_store(&e))?;
    let has_more = items.len() > page.size;
    items.truncate(page.size);
    if !page.forward {
        items.reverse();
    }

    let allowed: Vec<&str> = spec.allowed.iter().map(String::as_str).collect();
    let mut edges = Vec::with_capacity(items.len());
    for item in items {
        let Some(sort_key) = item.get(&sort_attribute).and_then(AttrValue::as_str) else {
            continue;
        };
        let cursor = Cursor {
            connection: binding.clone(),
            sort_key: sort_key.to_owned(),
        }
        .encode();
        let item = Arc::new(item);
        // The index projects whole items: later reads of these nodes in this request are free.
        scope
            .loader
            .offer(&keys::node_key(&id_of(&item)), item.clone());
        if let Some(node) = node_of(item, &allowed) {
            edges.push(EdgeValue { cursor, node });
        }
    }
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

fn id_of(item: &crate::store::Item) -> String {
    item.get("id")
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl PageRequest {
    fn from_arguments(args: &ObjectAccessor<'_>) -> Result<PageRequest, ApiError> {
        let size = |name: &str| -> Result<Option<usize>, ApiError> {
            let Some(value) = args.get(name).filter(|v| !v.is_null()) else {
                return Ok(None);
            };
            let n = value.i64()?;
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
        let cursor = |name: &str| -> Result<Option<String>, ApiError> {
            match args.get(name).filter(|v| !v.is_null()) {
                Some(value) => Ok(Some(value.string()?.to_owned())),
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
            after: cursor("after")?,
            before: cursor("before")?,
        })
    }
}
