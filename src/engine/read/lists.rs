//! `list<Types>`: pages of every node of a type, read from its type index (see
//! `model::ListDef`). A page is one Query per shard, all sent together, merged by sort key. The
//! index's sort key is the node's id, or `<sort value>#<id>` with `@model(listSortBy:)`: one
//! order across every shard, so a cursor is one position that holds in each shard, after which
//! each shard reads on from there; a key condition on the sort field bounds every shard alike. The shards are read and
//! merged by `page_reads`, filters and all.
//!
//! Invariant: the shards a page reads are all the type's shards; a page never Scans.

use super::connections::{Page, node_edges, readable_matching, whole_count_readable};
use super::key_conditions::{KeyField, KeyKind, key_condition_bounds};
use super::page_reads::{self, Range, Reading};
use super::page_request::{PageRequest, tighter_lower, tighter_upper};
use crate::engine::error::EngineError;
use crate::engine::rules::Access;
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::model::{ListDef, TypeDef};
use crate::store::{AttrValue, Bound};

/// The page `page` of the list of `type_def`'s nodes.
pub async fn read_list_page(
    scope: &RequestScope,
    type_def: &TypeDef,
    page: &PageRequest,
) -> Result<Page, EngineError> {
    let ListRange {
        list,
        name,
        binding,
        lower,
        upper,
    } = list_range(scope, type_def, page)?;
    let ranges: Vec<Range> = (0..list.shards)
        .map(|shard| Range {
            index: Some(list.slot),
            partition: keys::list_partition(&type_def.name, shard),
            lower: lower.clone(),
            upper: upper.clone(),
            filter: None,
        })
        .collect();
    let sort_attribute = keys::slot_sort_attribute(list.slot);
    let readable = scope.read_access(&[type_def.name.as_str()]);
    let rules = matches!(readable, Access::Where(_));
    let matching = readable_matching(
        scope,
        &name,
        &[type_def.name.as_str()],
        page,
        Some(readable),
    )?;
    let mut read = page_reads::read(
        scope,
        &Reading {
            ranges: &ranges,
            sort_attribute: &sort_attribute,
            ascending: page.reads_ascending(),
            size: page.size,
            matching: matching.as_ref(),
            rules,
            budget: scope.filter_budget,
        },
    )
    .await?;
    let mut items = std::mem::take(&mut read.items);
    items.truncate(page.size);
    if !page.forward {
        items.reverse();
    }
    let edges = node_edges(
        scope,
        &[type_def.name.as_str()],
        &binding,
        &sort_attribute,
        items,
    );
    Ok(Page::read(edges, page, &binding, &read))
}

/// A page of nothing of the list of `type_def`'s nodes (`first: 0` when the reader wants no
/// `pageInfo`, as for a count alone): its arguments and cursors are checked as for any page,
/// and nothing is read.
pub fn empty_list_page(
    scope: &RequestScope,
    type_def: &TypeDef,
    page: &PageRequest,
) -> Result<Page, EngineError> {
    list_range(scope, type_def, page)?;
    Ok(Page::of(Vec::new(), page, false))
}

/// What a page of a list reads.
struct ListRange {
    list: ListDef,
    /// The list's field (`listFarms`), for errors.
    name: String,
    /// What its cursors are bound to.
    binding: String,
    lower: Option<Bound>,
    upper: Option<Bound>,
}

/// The range `page` reads of the list of `type_def`, after checking the page's arguments and
/// cursors.
fn list_range(
    scope: &RequestScope,
    type_def: &TypeDef,
    page: &PageRequest,
) -> Result<ListRange, EngineError> {
    let list = type_def.list.ok_or_else(|| {
        EngineError::bad_input(format!(
            "{} has no list (@model(list: false))",
            type_def.name
        ))
    })?;
    let name = type_def.roots.list_name(&type_def.name);
    if page.role.is_some() || page.min_role.is_some() {
        return Err(EngineError::bad_input(format!("{name} takes no role")));
    }
    let binding = format!("list:{}", type_def.name);
    let (lower, upper) = page.cursor_bounds(&binding, &scope.cursors)?;
    let (key_lower, key_upper) =
        key_condition_bounds(&name, list_key_field(type_def).as_ref(), page, None)?;
    Ok(ListRange {
        list,
        name,
        binding,
        lower: tighter_lower(lower, key_lower),
        upper: tighter_upper(upper, key_upper),
    })
}

/// How many nodes of `type_def` there are: the sum of its type index shards' counters, read
/// together in one batch of the request's loader.
pub async fn list_total_count(
    scope: &RequestScope,
    type_def: &TypeDef,
) -> Result<i64, EngineError> {
    let Some(list) = type_def.list else {
        return Ok(0);
    };
    whole_count_readable(
        scope,
        &type_def.roots.list_name(&type_def.name),
        &[type_def.name.as_str()],
    )?;
    let counters: Vec<String> = (0..list.shards)
        .map(|shard| keys::list_count_key(&type_def.name, shard))
        .collect();
    let reads = counters.iter().map(|key| scope.loader.load(key));
    let counters = futures::future::try_join_all(reads)
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    Ok(counters
        .iter()
        .flatten()
        .filter_map(|counter| {
            counter
                .get(crate::engine::derive::LIST_COUNT)
                .and_then(AttrValue::as_i64)
        })
        .sum())
}

/// The field a key condition on `type_def`'s list tests: its sort field (`listSortBy`), if a
/// key condition can test it.
pub fn list_key_field(type_def: &TypeDef) -> Option<KeyField> {
    let (name, scalar) = type_def.list_sort.as_ref()?;
    Some(KeyField {
        kind: KeyKind::of(scalar)?,
        name: name.clone(),
        scalar: scalar.clone(),
        parts: Vec::new(),
    })
}
