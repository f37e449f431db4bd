//! A delta sync's page: the writes to a type's nodes since a time, read from the type's delta
//! record (`keys::delta_partition`, one item per write, which the write put in its own
//! transaction) instead of from the type. One Query of the record's partition reads at most
//! `limit` writes (AppSync's `limit` counts what a sync evaluates); one load of the request's
//! loader reads the nodes they wrote, each once, as they are now (a node written twice comes
//! once, at its last write in the page). The caller's read rules and the client's filter then
//! apply to each node, as to a list's. So a delta sync after N writes reads N records and at
//! most N nodes, whatever the type holds.

use std::collections::HashMap;

use super::connections::{Page, PageEdge};
use super::nodes::load_nodes;
use crate::engine::error::EngineError;
use crate::engine::rules::{Access, check_filter_fields, unauthorized};
use crate::engine::scope::RequestScope;
use crate::keys::{self, Cursor};
use crate::model::{Model, Operation, TypeDef};
use crate::store::{AttrValue, Bound, Filter, RangeQuery};

/// Where a delta sync's page starts: at the writes made since a time (milliseconds, the
/// client's `lastSync`), or after the record a page ended at (its cursor's sort key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaStart {
    Since(i64),
    After(String),
}

/// The connection a delta sync's cursors are bound to: the type's delta record.
pub fn delta_connection(type_name: &str) -> String {
    keys::delta_partition(type_name)
}

/// Whether a cursor's connection is a delta sync's.
pub fn is_delta_connection(connection: &str) -> bool {
    keys::is_delta_partition(connection)
}

/// The page of the writes to `type_def`'s nodes from `start`: at most `limit` records read,
/// their nodes kept where the caller may read them and `filter` holds.
pub(super) async fn read_delta_page(
    (scope, model): (&RequestScope, &Model),
    type_def: &TypeDef,
    start: &DeltaStart,
    limit: usize,
    filter: Option<&Filter>,
) -> Result<Page, EngineError> {
    let types = [type_def.name.as_str()];
    if let Access::Denied = scope.read_access(&types) {
        return Err(unauthorized(Operation::Read, &type_def.name));
    }
    // A filter may test only what the caller may read, as a list's may.
    if let Some(filter) = filter {
        check_filter_fields(&scope.rules, &scope.identity, &types, filter)?;
    }
    let partition = keys::delta_partition(&type_def.name);
    let margin = model.dialect.conflict.delta_margin_millis();
    let lower = match start {
        // The writes stamped a moment before too (see `model::DELTA_MARGIN_MS`).
        DeltaStart::Since(millis) => {
            Bound::inclusive(keys::delta_since(millis.saturating_sub(margin)))
        }
        DeltaStart::After(sort_key) => Bound::exclusive(sort_key.clone()),
    };
    let query = RangeQuery {
        index: None,
        partition: &partition,
        lower: Some(lower),
        upper: None,
        filter: None,
        forward: true,
        limit,
        // The record is read as written: a write that committed is in it.
        consistent: true,
    };
    let read = scope
        .store
        .query_page(&query, None)
        .await
        .map_err(|e| EngineError::from_store(&e))?;
    let records: Vec<(String, String)> = read
        .items
        .iter()
        .filter_map(|record| {
            let text = |name: &str| record.get(name).and_then(AttrValue::as_str);
            Some((text(keys::SK)?.to_owned(), text("id")?.to_owned()))
        })
        .collect();
    // Each node once, at its last write in the page.
    let last_at: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .map(|(at, (_, id))| (id.as_str(), at))
        .collect();
    let last: Vec<&(String, String)> = records
        .iter()
        .enumerate()
        .filter(|(at, (_, id))| last_at.get(id.as_str()) == Some(at))
        .map(|(_, record)| record)
        .collect();
    let ids: Vec<&str> = last.iter().map(|(_, id)| id.as_str()).collect();
    let nodes = load_nodes(scope, &ids, &[type_def.name.as_str()]).await?;
    let connection = delta_connection(&type_def.name);
    let cursor = |sort_key: &str| Cursor {
        connection: connection.clone(),
        sort_key: sort_key.to_owned(),
    };
    let edges = last
        .iter()
        .zip(nodes)
        .filter_map(|((sort_key, _), node)| {
            let node = node.filter(|n| filter.is_none_or(|f| f.matches(&n.item)))?;
            Some(PageEdge {
                cursor: cursor(sort_key),
                node: Some(node),
                edge: None,
            })
        })
        .collect();
    let has_next_page = read.stopped_at.is_some();
    Ok(Page {
        edges,
        has_next_page,
        has_previous_page: false,
        forward: true,
        total_count: None,
        filtered: None,
        // The next page starts after the last record read, whether or not its node is shown.
        budget_cursor: records
            .last()
            .filter(|_| has_next_page)
            .map(|(sort_key, _)| cursor(sort_key)),
        started_at: None,
    })
}
