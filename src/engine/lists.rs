//! `list<Types>`: pages of every node of a type, read from its type index (see
//! `model::ListDef`). A page is one Query per shard, all sent together, merged by sort key. The
//! index's sort key is the node's id, one order across every shard, so a cursor is one position
//! that holds in each shard: after it, each shard reads on from there.
//!
//! Invariant: the shards a page reads are all the type's shards; a page never Scans.

use super::connections::{Page, node_edges};
use super::error::EngineError;
use super::page_request::PageRequest;
use super::scope::RequestScope;
use crate::keys;
use crate::model::TypeDef;
use crate::store::{AttrValue, Item, RangeQuery};

/// The page `page` of the list of `type_def`'s nodes.
pub async fn read_list_page(
    scope: &RequestScope,
    type_def: &TypeDef,
    page: &PageRequest,
) -> Result<Page, EngineError> {
    let list = type_def.list.ok_or_else(|| {
        EngineError::bad_input(format!(
            "{} has no list (@model(list: false))",
            type_def.name
        ))
    })?;
    if page.key_condition.is_some() || page.role.is_some() || page.min_role.is_some() {
        return Err(EngineError::bad_input(format!(
            "list{} takes no key condition or role",
            crate::model::plural(&type_def.name)
        )));
    }
    let binding = format!("list:{}", type_def.name);
    let (lower, upper) = page.cursor_bounds(&binding, &scope.cursors)?;
    let ascending = page.reads_ascending();
    let partitions: Vec<String> = (0..list.shards)
        .map(|shard| keys::list_partition(&type_def.name, shard))
        .collect();
    let queries: Vec<RangeQuery<'_>> = partitions
        .iter()
        .map(|partition| RangeQuery {
            index: Some(list.slot),
            partition,
            lower: lower.clone(),
            upper: upper.clone(),
            filter: None,
            forward: ascending,
            limit: page.size + 1,
            consistent: false,
        })
        .collect();
    let reads = queries.iter().map(|query| scope.store.query_range(query));
    let shards = futures::future::try_join_all(reads)
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    let sort_attribute = keys::slot_sort_attribute(list.slot);
    let mut items: Vec<Item> = shards.into_iter().flatten().collect();
    let sort_key = |item: &Item| {
        item.get(&sort_attribute)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    items.sort_by_cached_key(sort_key);
    if !ascending {
        items.reverse();
    }
    let has_more = items.len() > page.size;
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
    Ok(Page::of(edges, page, has_more))
}
