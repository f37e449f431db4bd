//! Pages of a node's related nodes, in the three places they live: a `@hasMany` slot (the
//! element nodes themselves), the node's own partition (`@outgoing` edges) and an edge type's
//! inverse slot (`@incoming`); and pages of a secondary index (`@index`), under a value where
//! the others are under a parent. A page is one Query between key bounds; its cursors are bound to
//! the connection and the parent.
//!
//! Invariant: the partition a page reads is computed from its parent node; a cursor only moves
//! the position inside it, and a cursor issued by another connection is refused.

use std::sync::{Arc, Mutex};

use super::key_conditions::{KeyField, key_condition_bounds};
use super::nodes::{Node, load_nodes};
use super::page_reads::{self, Range, Reading};
use super::page_request::{PageRead, PageRequest, Prefetch, tighter_lower, tighter_upper};
use crate::engine::error::EngineError;
use crate::engine::rules::{Access, admits, check_filter_fields, within_limits};
use crate::engine::scope::{FilterRead, RequestScope};
use crate::keys::{self, Cursor, CursorKeys};
use crate::model::{FieldDef, FieldKind, IndexDef, Model, Operation, ScalarType, TypeDef};
use crate::store::{AttrValue, Bound, Filter, Item};

/// Where a connection's items come from.
#[derive(Debug, Clone)]
enum Source {
    /// `@hasMany`: the slot's index; the items are the element nodes themselves.
    Slot { slot: u8, element: String },
    /// `@outgoing`: the parent's own partition; the items are edges, the nodes their targets.
    Outgoing { edge: String, slot: u8 },
    /// `@incoming`: the edge type's inverse slot; the items are edges, the nodes their sources.
    Incoming { edge: String, slot: u8 },
    /// `@index`: one value's partition of a secondary index; the items are the nodes. A
    /// `@hasMany` that reads its element's sorted index reads the parent id's partition, and
    /// is counted in the parent's count of its own slot (`counted`).
    Index {
        slot: u8,
        type_name: String,
        index: String,
        counted: Option<u8>,
    },
}

/// One connection field of the model: `Farm.cows`, `Goal.members`, `User.goals`.
#[derive(Debug, Clone)]
pub struct Connection {
    /// `Farm.cows`: with the parent id, the name a cursor is bound to.
    name: String,
    /// `cows`.
    pub field: String,
    source: Source,
    /// The node types the connection's nodes may have.
    allowed: Vec<String>,
    /// The enum an edge connection sorts by, when it offers `role`/`minRole`.
    pub role_enum: Option<String>,
    /// The field a key condition tests, when the connection is sorted by one that takes it.
    pub key_field: Option<KeyField>,
}

/// One page of a connection, in the order the client reads it.
#[derive(Debug)]
pub struct Page {
    pub edges: Vec<PageEdge>,
    pub has_next_page: bool,
    pub has_previous_page: bool,
    /// Paged with `first` (true) or `last`.
    pub forward: bool,
    /// How many items the whole connection holds, when the reader asked (`totalCount`).
    pub total_count: Option<i64>,
    /// What the page's filter read, when it had one.
    pub filtered: Option<FilterRead>,
    /// When the read budget stopped a filtered page: the cursor of where it stopped, which
    /// ends the page (its `endCursor` paging forward, its `startCursor` paging backward).
    pub budget_cursor: Option<Cursor>,
    /// Of a sync query's page: when its first page was read, in milliseconds (AppSync's
    /// `startedAt`).
    pub started_at: Option<i64>,
}

impl Page {
    /// The page's `startCursor` and `endCursor`, to be encoded when a reader asks for them.
    pub fn cursors(&self) -> (Option<&Cursor>, Option<&Cursor>) {
        let first = self.edges.first().map(|e| &e.cursor);
        let last = self.edges.last().map(|e| &e.cursor);
        let stop = self.budget_cursor.as_ref();
        if self.forward {
            (first.or(stop), stop.or(last))
        } else {
            (stop.or(first), last.or(stop))
        }
    }

    /// The page of `edges` that `read` found for `page`, whose cursors are bound to `binding`.
    pub(super) fn read(
        edges: Vec<PageEdge>,
        page: &PageRequest,
        binding: &str,
        read: &PageRead,
    ) -> Page {
        let mut result = Page::of(edges, page, read.has_more);
        result.budget_cursor = read
            .filtered
            .as_ref()
            .and_then(|f| f.budget_stop.clone())
            .map(|sort_key| Cursor {
                connection: binding.to_owned(),
                sort_key,
            });
        // What a page read to leave out what the caller may not read is not told, unless
        // the client filtered it too.
        result.filtered = read.filtered.clone().filter(|_| page.filter.is_some());
        result
    }

    /// A page of `edges` read for `page`; `has_more` when the store held more past its end.
    pub(super) fn of(edges: Vec<PageEdge>, page: &PageRequest, has_more: bool) -> Page {
        Page {
            forward: page.forward,
            total_count: None,
            filtered: None,
            budget_cursor: None,
            started_at: None,
            edges,
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
        }
    }
}

/// One item of a page.
#[derive(Debug)]
pub struct PageEdge {
    /// Signed and encoded only when a reader selects it: most pages are read for their nodes.
    pub cursor: Cursor,
    /// `None` only when the reader did not want nodes: they are then never read.
    pub node: Option<Node>,
    /// The edge item, for edge connections: its metadata are fields of the Relay edge.
    pub edge: Option<Arc<Item>>,
}

/// One page to read: the range of sort keys that the page request and the connection's source
/// give.
struct PagePlan {
    range: Range,
    /// The attribute a cursor holds: the item's sort key in what was queried.
    sort_attribute: String,
}

impl Connection {
    /// The connection of a `@hasMany`, `@outgoing` or `@incoming` field of `owner`; `None` for
    /// any other field.
    pub fn of(owner: &TypeDef, field: &FieldDef, model: &Model) -> Option<Connection> {
        if let FieldKind::HasMany(has_many) = &field.kind
            && let Some(connection) = Self::by_index(owner, field, has_many, model)
        {
            return Some(connection);
        }
        let (source, element, role_enum, sort_field) = match &field.kind {
            FieldKind::HasMany(has_many) => {
                // Each member of an element union holds the sort field; the model checked
                // that they agree on its type.
                let sort_field = has_many.sort_by.as_deref().and_then(|name| {
                    let scalar = model
                        .possible_types(&has_many.element)
                        .into_iter()
                        .find_map(|member| model.type_def(member)?.field(name)?.scalar())?;
                    Some((name.to_owned(), scalar.clone()))
                });
                (
                    Source::Slot {
                        slot: has_many.slot,
                        element: has_many.element.clone(),
                    },
                    &has_many.element,
                    None,
                    sort_field,
                )
            }
            FieldKind::Outgoing { edge, element } | FieldKind::Incoming { edge, element } => {
                let edge_def = model
                    .edge_def(edge)
                    .expect("the model checked that edge fields name edge types");
                let role_enum = match edge_def.sort_scalar() {
                    Some(ScalarType::Enum(name)) => Some(name.clone()),
                    _ => None,
                };
                let sort_field = edge_def
                    .sort_by
                    .clone()
                    .zip(edge_def.sort_scalar().cloned());
                let (edge, slot) = (edge.clone(), edge_def.slot);
                let source = match field.kind {
                    FieldKind::Outgoing { .. } => Source::Outgoing { edge, slot },
                    _ => Source::Incoming { edge, slot },
                };
                (source, element, role_enum, sort_field)
            }
            _ => return None,
        };
        let key_field = KeyField::of(sort_field.as_slice());
        Some(Connection {
            name: format!("{}.{}", owner.name, field.name),
            field: field.name.clone(),
            source,
            allowed: model
                .possible_types(element)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            role_enum,
            key_field,
        })
    }

    /// The connection of `owner.field`, a `@hasMany` naming a sorted `@index` of its element
    /// (Amplify's `indexName:`): it reads the index under the parent's id, in the index's
    /// order, and takes the index's sort key condition, as Amplify's connection does. `None`
    /// for another `@hasMany`, or an index that is not sorted (the relation's slot is read).
    fn by_index(
        owner: &TypeDef,
        field: &FieldDef,
        has_many: &crate::model::HasMany,
        model: &Model,
    ) -> Option<Connection> {
        let (element, index) = has_many.sorted_index(model)?;
        let key_field = KeyField::of_index(&index.sort_fields)?;
        Some(Connection {
            name: format!("{}.{}", owner.name, field.name),
            field: field.name.clone(),
            source: Source::Index {
                slot: index.slot,
                type_name: element.name.clone(),
                index: index.name.clone(),
                counted: Some(has_many.slot),
            },
            allowed: vec![element.name.clone()],
            role_enum: None,
            key_field: Some(key_field),
        })
    }

    /// The type and index name of a connection that reads an `@index`.
    pub fn index(&self) -> Option<(&str, &str)> {
        match &self.source {
            Source::Index {
                type_name, index, ..
            } => Some((type_name, index)),
            _ => None,
        }
    }

    /// The root query of `index` of `type_def`: its pages are read under an indexed value
    /// where other connections' are under a parent id.
    pub fn of_index(type_def: &TypeDef, index: &IndexDef) -> Connection {
        // A composite primary key's index is read by the type's list.
        let field = match (&index.query_field, type_def.primary_index()) {
            (Some(query_field), _) => query_field.clone(),
            (None, Some(primary)) if primary.name == index.name => {
                type_def.roots.list_name(&type_def.name)
            }
            (None, _) => index.name.clone(),
        };
        Connection {
            name: format!("Query.{field}"),
            field,
            source: Source::Index {
                slot: index.slot,
                type_name: type_def.name.clone(),
                index: index.name.clone(),
                counted: None,
            },
            allowed: vec![type_def.name.clone()],
            role_enum: None,
            key_field: KeyField::of_index(&index.sort_fields),
        }
    }

    /// The attribute of the parent node that counts this connection's items; `None` for an
    /// index query, which is not counted.
    pub fn count_attribute(&self) -> Option<String> {
        match &self.source {
            Source::Slot { slot, element } => Some(keys::members_count_attribute(*slot, element)),
            Source::Outgoing { edge, .. } => Some(keys::edges_count_attribute(edge, true)),
            Source::Incoming { edge, .. } => Some(keys::edges_count_attribute(edge, false)),
            Source::Index {
                counted, type_name, ..
            } => counted.map(|slot| keys::members_count_attribute(slot, type_name)),
        }
    }

    /// Whether the connection's items are edges (`@outgoing`, `@incoming`).
    pub fn is_edge(&self) -> bool {
        matches!(
            self.source,
            Source::Outgoing { .. } | Source::Incoming { .. }
        )
    }

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
        keys: &CursorKeys,
    ) -> Result<PagePlan, EngineError> {
        let (mut lower, mut upper) = page.cursor_bounds(&self.binding(parent_id), keys)?;
        let (key_lower, key_upper) =
            key_condition_bounds(&self.name, self.key_field.as_ref(), page, Some(model))?;

        // Role filters: a range of the edge's sort value, `<sort value>#<id>`.
        let mut role_lower = None;
        let mut role_upper = None;
        if let Some(role_enum) = &self.role_enum {
            if let Some(role) = &page.role {
                let (first, past) =
                    keys::slot_sort_key_range(&keys::enum_sort_value(model, role_enum, role));
                role_lower = Some(Bound::inclusive(first));
                role_upper = Some(Bound::exclusive(past));
            }
            if let Some(min_role) = &page.min_role {
                let sort = keys::enum_sort_value(model, role_enum, min_role);
                role_lower = tighter_lower(role_lower, Some(Bound::inclusive(sort)));
                // A null role sorts last, above every rank: it is not "at least" anything.
                role_upper =
                    tighter_upper(role_upper, Some(Bound::exclusive(keys::NULL_SORT_VALUE)));
            }
        }
        // Role filters and the key condition both bound the sort value.
        let sort_lower = tighter_lower(role_lower, key_lower);
        let sort_upper = tighter_upper(role_upper, key_upper);
        Ok(match &self.source {
            Source::Slot { slot, element } => PagePlan {
                range: Range {
                    index: Some(*slot),
                    partition: keys::slot_partition(element, parent_id),
                    lower: tighter_lower(lower, sort_lower),
                    upper: tighter_upper(upper, sort_upper),
                    filter: None,
                },
                sort_attribute: keys::slot_sort_attribute(*slot),
            },
            Source::Index {
                slot,
                type_name,
                index,
                ..
            } => PagePlan {
                range: Range {
                    index: Some(*slot),
                    partition: keys::index_partition(type_name, index, parent_id),
                    lower: tighter_lower(lower, sort_lower),
                    upper: tighter_upper(upper, sort_upper),
                    filter: None,
                },
                sort_attribute: keys::slot_sort_attribute(*slot),
            },
            Source::Incoming { edge, slot } => PagePlan {
                range: Range {
                    index: Some(*slot),
                    partition: keys::slot_partition(edge, parent_id),
                    lower: tighter_lower(lower, sort_lower),
                    upper: tighter_upper(upper, sort_upper),
                    filter: None,
                },
                sort_attribute: keys::slot_sort_attribute(*slot),
            },
            // A node's own partition orders its edges by target id: the sort value is tested
            // by a filter on the inverse slot's sort key, which each edge item holds too.
            Source::Outgoing { edge, slot } => {
                let (first, past) = keys::edge_sort_key_range(edge);
                lower = tighter_lower(lower, Some(Bound::inclusive(first)));
                upper = tighter_upper(upper, Some(Bound::exclusive(past)));
                let filter = (sort_lower.is_some() || sort_upper.is_some())
                    .then(|| (keys::slot_sort_attribute(*slot), sort_lower, sort_upper));
                PagePlan {
                    range: Range {
                        index: None,
                        partition: keys::node_key(parent_id),
                        lower,
                        upper,
                        filter,
                    },
                    sort_attribute: keys::SK.to_owned(),
                }
            }
        })
    }

    /// Whether an item of this connection proves that its parent is a `type_name`: an edge in a
    /// node's own partition proves the node is the edge's source type; an edge in an inverse
    /// slot records its target's type.
    fn proves_parent_type(&self, item: &Item, type_name: &str) -> bool {
        match &self.source {
            Source::Slot { .. } | Source::Index { .. } => false,
            Source::Outgoing { .. } => true,
            Source::Incoming { .. } => {
                item.get("toType").and_then(AttrValue::as_str) == Some(type_name)
            }
        }
    }
}

/// Reads the items of a page (one more than asked, to tell whether another page follows).
async fn read_items(
    scope: &RequestScope,
    connection: &Connection,
    plan: &PagePlan,
    page: &PageRequest,
) -> Result<PageRead, EngineError> {
    // The items of a slot or an index are the nodes: what the caller may not read of them is
    // filtered out with the page's own filter. An edge's node is checked once loaded.
    let allowed: Vec<&str> = connection.allowed.iter().map(String::as_str).collect();
    let (readable, tested) = match &connection.source {
        Source::Slot { .. } | Source::Index { .. } => {
            (Some(scope.read_access(&allowed)), allowed.clone())
        }
        // The filter of an edge connection tests the edges, whose fields have no rules.
        Source::Outgoing { .. } | Source::Incoming { .. } => (None, Vec::new()),
    };
    let rules = matches!(readable, Some(Access::Where(_)));
    let matching = readable_matching(scope, &connection.name, &tested, page, readable)?;
    page_reads::read(
        scope,
        &Reading {
            ranges: std::slice::from_ref(&plan.range),
            sort_attribute: &plan.sort_attribute,
            ascending: page.reads_ascending(),
            size: page.size,
            matching: matching.as_ref(),
            rules,
            budget: scope.filter_budget,
        },
    )
    .await
}

/// The filter a page is read with: the client's, and what the caller may read (`readable`,
/// for pages whose items are nodes). Reading what the caller may not read at all is refused.
pub(super) fn readable_matching(
    scope: &RequestScope,
    name: &str,
    types: &[&str],
    page: &PageRequest,
    readable: Option<Access>,
) -> Result<Option<Filter>, EngineError> {
    let own = page.filter.as_ref().map(|f| f.filter.clone());
    if let Some(own) = &own {
        check_filter_fields(&scope.rules, &scope.identity, types, own)?;
    }
    let readable = readable
        .map(|access| within_limits(access, Operation::Read, name))
        .transpose()?;
    Ok(match readable {
        None | Some(Access::All) => own,
        Some(Access::Denied) => {
            return Err(EngineError::Unauthorized(format!(
                "Not Authorized to read {name}"
            )));
        }
        Some(Access::Where(rule)) => Some(match own {
            Some(own) => Filter::All(vec![own, rule]),
            None => rule,
        }),
    })
}

/// Reads the page `page` of the connection field `field` (its response key) of `connection`
/// under `parent_id` before the parent node is read: the [`Prefetch`] to hand down with the
/// parent node, which says whether an item of it proves the parent is a `parent_type` (then
/// the parent need not be read at all). `None` for a page of nothing, which is not read.
pub async fn read_ahead(
    scope: &RequestScope,
    model: &Model,
    connection: &Connection,
    (parent_id, parent_type): (&str, &str),
    field: &str,
    page: &PageRequest,
) -> Result<Option<Prefetch>, EngineError> {
    let plan = connection.plan(model, page, parent_id, &scope.cursors)?;
    // A page of nothing proves nothing, and is not read (see `empty_page`).
    if page.size == 0 {
        return Ok(None);
    }
    let read = read_items(scope, connection, &plan, page).await?;
    let proves_parent = read
        .items
        .iter()
        .any(|item| connection.proves_parent_type(item, parent_type));
    Ok(Some(Prefetch {
        field: field.to_owned(),
        request: page.clone(),
        proves_parent,
        read: Mutex::new(Some(read)),
    }))
}

/// A page of nothing of `connection` under `parent_id` (`first: 0` when the reader wants no
/// `pageInfo`, as for a count alone): its arguments and cursors are checked as for any page,
/// and nothing is read.
pub fn empty_page(
    scope: &RequestScope,
    model: &Model,
    connection: &Connection,
    parent_id: &str,
    page: &PageRequest,
) -> Result<Page, EngineError> {
    connection.plan(model, page, parent_id, &scope.cursors)?;
    Ok(Page::of(Vec::new(), page, false))
}

/// The page `page` of `connection` under `parent_id`. With `with_nodes`, each edge's node is
/// loaded too, in one batch for the page; a slot's items are their nodes already.
pub async fn read_page(
    scope: &RequestScope,
    model: &Model,
    connection: &Connection,
    parent_id: &str,
    page: &PageRequest,
    with_nodes: bool,
) -> Result<Page, EngineError> {
    read_page_after(scope, model, connection, parent_id, page, with_nodes, None).await
}

/// [`read_page`] for the connection field `field` (its response key) of `parent`: the page
/// read ahead with `parent` for that field (see [`read_ahead`]), if it was, else read now.
pub async fn read_field_page(
    scope: &RequestScope,
    model: &Model,
    connection: &Connection,
    (parent, field): (&Node, &str),
    page: &PageRequest,
    with_nodes: bool,
) -> Result<Page, EngineError> {
    let ahead = parent.prefetched(field, page);
    read_page_after(
        scope,
        model,
        connection,
        parent.id(),
        page,
        with_nodes,
        ahead,
    )
    .await
}

async fn read_page_after(
    scope: &RequestScope,
    model: &Model,
    connection: &Connection,
    parent_id: &str,
    page: &PageRequest,
    with_nodes: bool,
    ahead: Option<PageRead>,
) -> Result<Page, EngineError> {
    let plan = connection.plan(model, page, parent_id, &scope.cursors)?;
    let binding = connection.binding(parent_id);
    let mut read = match ahead {
        Some(read) => read,
        None => read_items(scope, connection, &plan, page).await?,
    };
    let allowed: Vec<&str> = connection.allowed.iter().map(String::as_str).collect();
    let edge_source = matches!(
        connection.source,
        Source::Outgoing { .. } | Source::Incoming { .. }
    );
    if edge_source && scope.read_access(&allowed) != Access::All {
        let reading = EdgeReading {
            model,
            connection,
            parent_id,
            page,
            binding: &binding,
            sort_attribute: &plan.sort_attribute,
        };
        return readable_edges(scope, &reading, read).await;
    }
    let mut items = std::mem::take(&mut read.items);
    items.truncate(page.size);
    if !page.forward {
        items.reverse();
    }
    let edges = edges_of(
        scope,
        connection,
        &binding,
        &plan.sort_attribute,
        items,
        with_nodes,
    )
    .await?;
    Ok(Page::read(edges, page, &binding, &read))
}

/// An edge connection's page as [`readable_edges`] reads it.
struct EdgeReading<'a> {
    model: &'a Model,
    connection: &'a Connection,
    parent_id: &'a str,
    page: &'a PageRequest,
    binding: &'a str,
    sort_attribute: &'a str,
}

/// The page of an edge connection for a caller who may read only some of its nodes (an owner
/// or a group rule): each edge's node is loaded and checked, those the caller may not read are
/// left out, and reading goes on past them until the page is full, the edges end, or the
/// page's read budget is spent (then the page ends where reading stopped, so the next one
/// starts there). The edges' own filter is a FilterExpression; the nodes' rules cannot be.
async fn readable_edges(
    scope: &RequestScope,
    reading: &EdgeReading<'_>,
    mut read: PageRead,
) -> Result<Page, EngineError> {
    let page = reading.page;
    // Where a read stops: the next read of this page starts after it (signed, as a client's
    // cursor is, for the page request), and a page the budget stopped ends there.
    let cursor = |sort_key: String| Cursor {
        connection: reading.binding.to_owned(),
        sort_key,
    };
    let mut kept: Vec<PageEdge> = Vec::new();
    let mut spent = 0;
    let mut filtered = read.filtered.clone();
    let mut budget_stop = None;
    let mut chunk = page.size;
    let mut has_more;
    loop {
        let mut items = std::mem::take(&mut read.items);
        items.truncate(chunk);
        spent += items.len();
        let last = items
            .last()
            .and_then(|item| item.get(reading.sort_attribute))
            .and_then(AttrValue::as_str)
            .map(str::to_owned);
        kept.extend(
            edges_of(
                scope,
                reading.connection,
                reading.binding,
                reading.sort_attribute,
                items,
                true,
            )
            .await?,
        );
        has_more = read.has_more;
        if let Some(stop) = read.filtered.as_ref().and_then(|f| f.budget_stop.clone()) {
            budget_stop = Some(stop);
            break;
        }
        if kept.len() > page.size {
            // A longer read found more than the page holds: the rest is the next page's.
            kept.truncate(page.size);
            has_more = true;
            break;
        }
        if kept.len() == page.size || !read.has_more {
            break;
        }
        let Some(last) = last else { break };
        if spent >= scope.filter_budget {
            // Where the next page starts.
            budget_stop = Some(last);
            break;
        }
        // Each read asks for as many edges as were read so far (at least the page's missing
        // ones), within what is left of the budget: a page past many nodes its reader may not
        // read takes a few reads, not one per node.
        chunk = (page.size - kept.len())
            .max(spent)
            .min(scope.filter_budget - spent);
        let mut next = page.clone();
        next.size = chunk;
        if page.forward {
            next.after = Some(cursor(last).encode(&scope.cursors));
        } else {
            next.before = Some(cursor(last).encode(&scope.cursors));
        }
        let plan =
            reading
                .connection
                .plan(reading.model, &next, reading.parent_id, &scope.cursors)?;
        read = read_items(scope, reading.connection, &plan, &next).await?;
        if let (Some(total), Some(more)) = (filtered.as_mut(), read.filtered.as_ref()) {
            total.evaluated += more.evaluated;
            total.matched += more.matched;
        }
    }
    if !page.forward {
        kept.reverse();
    }
    let mut result = Page::of(kept, page, has_more || budget_stop.is_some());
    if let Some(total) = filtered.as_mut() {
        total.budget_stop.clone_from(&budget_stop);
        // Edges whose nodes the caller may not read were read and left out here.
        total.rules = true;
    }
    result.budget_cursor = budget_stop.map(cursor);
    result.filtered = filtered.filter(|_| page.filter.is_some());
    Ok(result)
}

/// Refuses a `totalCount` of `page` unless it asks for the whole connection: the counts are
/// kept for whole connections only, and a count of part of one would take reading it all.
pub fn whole_connection(page: &PageRequest, connection: &str) -> Result<(), EngineError> {
    let part = [
        (page.filter.is_some(), "filter"),
        (page.key_condition.is_some(), "a key condition"),
        (
            page.role.is_some() || page.min_role.is_some(),
            "role or minRole",
        ),
    ];
    match part.iter().find(|(given, _)| *given) {
        Some((_, what)) => Err(EngineError::bad_input(format!(
            "{connection}: totalCount counts the whole connection, and is not kept for a page \
             with {what}; leave out totalCount or {what}"
        ))),
        None => Ok(()),
    }
}

/// Refuses a count of nodes the caller may not all read: it would tell of those left out.
pub(super) fn whole_count_readable(
    scope: &RequestScope,
    name: &str,
    types: &[&str],
) -> Result<(), EngineError> {
    match scope.read_access(types) {
        Access::All => Ok(()),
        _ => Err(EngineError::Unauthorized(format!(
            "Not Authorized to count {name}: totalCount counts every node, and the @auth rules let this caller read only some; leave out totalCount"
        ))),
    }
}

/// How many items `connection` of `parent` holds: the count its parent keeps, read from the
/// parent as loaded (read now, through the request's loader, when only its id is known).
pub async fn total_count(
    scope: &RequestScope,
    connection: &Connection,
    parent: &Node,
) -> Result<i64, EngineError> {
    let Some(attribute) = connection.count_attribute() else {
        return Err(EngineError::bad_input(format!(
            "{}: an index query has no totalCount",
            connection.name
        )));
    };
    let allowed: Vec<&str> = connection.allowed.iter().map(String::as_str).collect();
    whole_count_readable(scope, &connection.name, &allowed)?;
    let item = if parent.item.contains_key(keys::PK) {
        parent.item.clone()
    } else {
        scope
            .loader
            .load(&keys::node_key(parent.id()))
            .await
            .map_err(|e| EngineError::from_store(&e))?
            .unwrap_or_default()
    };
    Ok(item
        .get(&attribute)
        .and_then(AttrValue::as_i64)
        .unwrap_or(0))
}

/// Pairs each item read with its node: the item itself for a slot, else the edge's other end,
/// loaded in one batch for the whole page.
async fn edges_of(
    scope: &RequestScope,
    connection: &Connection,
    binding: &str,
    sort_attribute: &str,
    items: Vec<Arc<Item>>,
    with_nodes: bool,
) -> Result<Vec<PageEdge>, EngineError> {
    let allowed: Vec<&str> = connection.allowed.iter().map(String::as_str).collect();
    let cursor_of = |item: &Item| {
        item.get(sort_attribute)
            .and_then(AttrValue::as_str)
            .map(|sort_key| Cursor {
                connection: binding.to_owned(),
                sort_key: sort_key.to_owned(),
            })
    };
    let other_end = match &connection.source {
        Source::Slot { .. } | Source::Index { .. } => {
            return Ok(node_edges(scope, &allowed, binding, sort_attribute, items));
        }
        Source::Outgoing { .. } => "to",
        Source::Incoming { .. } => "from",
    };
    if !with_nodes {
        return Ok(items
            .into_iter()
            .filter_map(|item| {
                Some(PageEdge {
                    cursor: cursor_of(&item)?,
                    node: None,
                    edge: Some(item),
                })
            })
            .collect());
    }
    let ids: Vec<&str> = items
        .iter()
        .map(|item| crate::engine::derive::text(item, other_end))
        .collect();
    let nodes = load_nodes(scope, &ids, &allowed).await?;
    Ok(items
        .into_iter()
        .zip(nodes)
        .filter_map(|(item, node)| {
            // A node deleted without its edges (it never is) would only be skipped.
            Some(PageEdge {
                cursor: cursor_of(&item)?,
                node: Some(node?),
                edge: Some(item),
            })
        })
        .collect())
}

/// The edges of a page whose items are the nodes themselves (a slot, a type index): each with
/// its cursor under `binding`, offered to the request's loader (the index projects whole items,
/// so later reads of these nodes are free), and left out unless of an `allowed` type.
pub(super) fn node_edges(
    scope: &RequestScope,
    allowed: &[&str],
    binding: &str,
    sort_attribute: &str,
    items: Vec<Arc<Item>>,
) -> Vec<PageEdge> {
    let mut edges = Vec::with_capacity(items.len());
    for item in items {
        let Some(sort_key) = item.get(sort_attribute).and_then(AttrValue::as_str) else {
            continue;
        };
        let cursor = Cursor {
            connection: binding.to_owned(),
            sort_key: sort_key.to_owned(),
        };
        let key = keys::node_key(crate::engine::derive::text(&item, "id"));
        scope.loader.offer(&key, item.clone());
        // The page's filter left out what the caller may not read; this holds it to that.
        if let Some(node) = Node::of(item, allowed)
            .filter(|node| admits(&scope.read_access(&[node.typename.as_str()]), &node.item))
        {
            edges.push(PageEdge {
                cursor,
                node: Some(node),
                edge: None,
            });
        }
    }
    edges
}
