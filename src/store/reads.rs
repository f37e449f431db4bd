//! The table's reads, named by what they cost: items by key (BatchGetItem, and a strongly
//! consistent GetItem), ranges of one partition or index (Query), and the whole table (Scan),
//! each counted, traced and retried as every call of the [`Store`] is.

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnConsumedCapacity};

use super::cache::ReadCache;
use super::calls::{CallRecord, capacity, total_capacity};
use super::client::Store;
use super::error::{self, StoreError};
use super::filter::Filter;
use super::item::{self, AttrValue, Item, Map, RangePage};
use super::key::{Bound, Key, MAX_BATCH_GET_KEYS, RangeQuery, key_map};
use super::retry;
use crate::keys;
use crate::keys::TYPENAME;

/// Items a filtered Query evaluates per call: DynamoDB applies the filter after its Limit, so
/// a small Limit would cost a call per few non-matching items.
const FILTERED_QUERY_LIMIT: usize = 1000;

impl Store {
    /// Reads items whose `PK` and `SK` both equal each key (nodes, unique values), in chunks of
    /// at most 100 keys per BatchGetItem, run concurrently. Missing keys are absent from the
    /// answer.
    ///
    /// With the read cache on (and caught up with the stream), the keys it knows are answered
    /// from it, recorded as cache hits, and only the others are read; what they read fills it.
    pub async fn batch_get_items(&self, keys: &[String]) -> Result<Map<Arc<Item>>, StoreError> {
        let cached = (self.cache.as_ref()).and_then(|cache| Some((cache, cache.begin()?)));
        let Some((cache, began)) = cached else {
            return self.read_items(keys, false).await;
        };
        let mut found = Map::with_capacity_and_hasher(keys.len(), Default::default());
        let mut missing = Vec::new();
        for key in keys {
            match cache.item(key) {
                Some(Some(item)) => {
                    found.insert(key.clone(), item);
                }
                Some(None) => {}
                None => missing.push(key.clone()),
            }
        }
        if missing.len() < keys.len() {
            self.record_key_hits(keys.len() - missing.len());
        }
        if !missing.is_empty() {
            // Read consistently when the answer fills the cache of a store that replicates: an
            // eventually consistent read may trail the stream record that evicted the key.
            let read = self.read_items(&missing, !self.in_process).await?;
            for key in &missing {
                cache.fill_item(key, read.get(key).cloned(), began);
            }
            found.extend(read);
        }
        Ok(found)
    }

    /// The items under `keys` read from the store, in chunks of at most 100 keys per
    /// BatchGetItem, run concurrently.
    async fn read_items(
        &self,
        keys: &[String],
        consistent: bool,
    ) -> Result<Map<Arc<Item>>, StoreError> {
        let chunks = keys
            .chunks(MAX_BATCH_GET_KEYS)
            .map(|chunk| self.batch_get_chunk(chunk, consistent));
        let mut read = Map::with_capacity_and_hasher(keys.len(), Default::default());
        for chunk in futures::future::try_join_all(chunks).await? {
            read.extend(chunk.into_iter().map(|(key, item)| (key, Arc::new(item))));
        }
        Ok(read)
    }

    /// The items under `keys` as the read cache holds them, recorded as one cache hit; `None`
    /// (and nothing recorded) unless it holds every one and is caught up with the stream.
    pub fn read_cached(&self, cache: &ReadCache, keys: &[&str]) -> Option<Vec<Option<Arc<Item>>>> {
        if !cache.is_fresh() {
            return None;
        }
        let found = cache.all_items(keys)?;
        self.record_key_hits(keys.len());
        Some(found)
    }

    /// Records that the read cache answered `keys` reads by key.
    fn record_key_hits(&self, keys: usize) {
        self.record_hit(CallRecord {
            operation: "BatchGetItem",
            index: None,
            keys: Some(keys),
            items: None,
            consumed_capacity: None,
        });
    }

    async fn batch_get_chunk(
        &self,
        keys: &[String],
        consistent: bool,
    ) -> Result<Map<Item>, StoreError> {
        let request = keys_and_attributes(keys, consistent)?;
        let found = Map::with_capacity_and_hasher(keys.len(), Default::default());
        // Each attempt asks for what the last one did not read: the keys DynamoDB left
        // unprocessed are a transient failure of the attempt, with what it read kept.
        let attempt = |(request, mut found): (KeysAndAttributes, Map<Item>)| async move {
            match self.batch_get_once(&request).await {
                Err(e) => ((request, found), Err(e)),
                Ok((items, None)) => {
                    found.extend(items);
                    ((request, found), Ok(()))
                }
                Ok((items, Some(rest))) => {
                    found.extend(items);
                    let unprocessed =
                        StoreError::Throttled("BatchGetItem left keys unprocessed".into());
                    ((rest, found), Err(unprocessed))
                }
            }
        };
        let ((_, found), answer) = retry::with_context((request, found), attempt).await;
        answer.map(|()| found)
    }

    /// One BatchGetItem: the items read, by key, and the keys left unprocessed, if any.
    async fn batch_get_once(
        &self,
        request: &KeysAndAttributes,
    ) -> Result<(Map<Item>, Option<KeysAndAttributes>), StoreError> {
        self.begin_call()?;
        let asked = request.keys().len();
        let output = self
            .observed("BatchGetItem", None, Some(asked), || async {
                self.client
                    .batch_get_item()
                    .request_items(self.table.to_string(), request.clone())
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(error::classify)
            })
            .await?;
        let items: Vec<Item> = output
            .responses
            .unwrap_or_default()
            .remove(self.table.as_ref())
            .unwrap_or_default()
            .into_iter()
            .map(item::item_from_sdk)
            .collect();
        self.record(CallRecord {
            operation: "BatchGetItem",
            index: None,
            keys: Some(asked),
            items: Some(items.len()),
            consumed_capacity: total_capacity(output.consumed_capacity.as_deref()),
        });
        let found = items
            .into_iter()
            .filter_map(|item| match item.get("PK") {
                Some(AttrValue::S(pk)) => Some((pk.clone(), item)),
                _ => None,
            })
            .collect();
        let unprocessed = output
            .unprocessed_keys
            .and_then(|mut unprocessed| unprocessed.remove(self.table.as_ref()))
            .filter(|rest| !rest.keys().is_empty());
        Ok((found, unprocessed))
    }

    /// Reads one item by key with a strongly consistent GetItem: for the read of a
    /// read-modify-write, which must see the latest version.
    pub async fn get_item_consistent(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let output = retry::call(|| async {
            self.begin_call()?;
            self.observed("GetItem", None, Some(1), || async {
                self.client
                    .get_item()
                    .table_name(self.table.as_ref())
                    .set_key(Some(key_map(key)))
                    .consistent_read(true)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(error::classify)
            })
            .await
        })
        .await?;
        let consumed_capacity = capacity(output.consumed_capacity.as_ref());
        let item = output.item.map(item::item_from_sdk);
        self.record(CallRecord {
            operation: "GetItem",
            index: None,
            keys: Some(1),
            items: Some(usize::from(item.is_some())),
            consumed_capacity,
        });
        Ok(item)
    }

    /// Queries one partition between the query's bounds. Follows DynamoDB's pages until
    /// `limit` items are read or the range ends; each page is one recorded Query call.
    pub async fn query_range(&self, query: &RangeQuery<'_>) -> Result<Vec<Item>, StoreError> {
        let Some((mut expression, condition, sk)) = key_condition(query) else {
            return Ok(Vec::new());
        };
        let filter = match &query.filter {
            Some((attribute, lower, upper)) => {
                match range_condition(&mut expression, attribute, lower, upper) {
                    Some(filter) if !filter.is_empty() => Some(filter),
                    Some(_) => None,
                    None => return Ok(Vec::new()),
                }
            }
            None => None,
        };
        let index = query.index.map(keys::gsi_name);
        let mut items = Vec::new();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            // BETWEEN includes its bounds; ask for enough to drop exclusive ones afterwards. A
            // filter applies after DynamoDB's Limit, so then read generously per call.
            let want = if filter.is_some() {
                FILTERED_QUERY_LIMIT
            } else {
                query.limit + 2 - items.len().min(query.limit)
            };
            let page_start = start.take();
            let output = retry::call(|| async {
                self.begin_call()?;
                self.observed("Query", index.as_deref(), None, || async {
                    self.client
                        .query()
                        .table_name(self.table.as_ref())
                        .set_index_name(index.clone())
                        .key_condition_expression(&condition)
                        .set_filter_expression(filter.clone())
                        .set_expression_attribute_names(Some(expression.names.clone()))
                        .set_expression_attribute_values(Some(expression.values.clone()))
                        .scan_index_forward(query.forward)
                        .set_consistent_read(query.consistent.then_some(true))
                        .limit(sdk_limit(want))
                        .set_exclusive_start_key(page_start.clone())
                        .return_consumed_capacity(ReturnConsumedCapacity::Total)
                        .send()
                        .await
                        .map_err(error::classify)
                })
                .await
            })
            .await?;
            let page = output.items.unwrap_or_default();
            self.record(CallRecord {
                operation: "Query",
                index: index.clone(),
                keys: None,
                items: Some(page.len()),
                consumed_capacity: capacity(output.consumed_capacity.as_ref()),
            });
            items.extend(
                page.into_iter()
                    .map(item::item_from_sdk)
                    .filter(|item| within(item.get(&sk), &query.lower, &query.upper)),
            );
            match output.last_evaluated_key {
                Some(key) if items.len() < query.limit => start = Some(key),
                _ => break,
            }
        }
        items.truncate(query.limit);
        Ok(items)
    }

    /// One Query call of one partition between the query's bounds, evaluating at most
    /// `query.limit` items and keeping those that meet `matching` too (a FilterExpression, which
    /// DynamoDB applies after its Limit). Answers what it kept, how many items it evaluated,
    /// and the sort key it stopped at when the range may go on (DynamoDB's
    /// `LastEvaluatedKey`): a caller reads on with a bound past it.
    ///
    /// With the read cache on, an unfiltered page of a read that need not be consistent is
    /// answered from it when it holds the page, and fills it otherwise.
    pub async fn query_page(
        &self,
        query: &RangeQuery<'_>,
        matching: Option<&Filter>,
    ) -> Result<RangePage, StoreError> {
        let cached = match &self.cache {
            Some(cache) if matching.is_none() && !query.consistent => {
                cache.begin().map(|began| (cache, began))
            }
            _ => None,
        };
        let Some((cache, began)) = cached else {
            return self.query_page_uncached(query, matching, false).await;
        };
        if let Some(page) = cache.page(query) {
            self.record_hit(CallRecord {
                operation: "Query",
                index: query.index.map(keys::gsi_name),
                keys: None,
                items: Some(page.items.len()),
                consumed_capacity: None,
            });
            return Ok(RangePage::clone(&page));
        }
        let page = self
            .query_page_uncached(query, None, !self.in_process)
            .await?;
        let page = Arc::new(page);
        cache.fill_page(query, page.clone(), began);
        Ok(Arc::unwrap_or_clone(page))
    }

    /// [`Store::query_page`] of the store itself; `consistent` asks a table (not an index) for a
    /// strongly consistent read.
    async fn query_page_uncached(
        &self,
        query: &RangeQuery<'_>,
        matching: Option<&Filter>,
        consistent: bool,
    ) -> Result<RangePage, StoreError> {
        let Some((mut expression, condition, sk)) = key_condition(query) else {
            return Ok(RangePage::default());
        };
        let mut filters = Vec::new();
        if let Some((attribute, lower, upper)) = &query.filter {
            match range_condition(&mut expression, attribute, lower, upper) {
                Some(filter) if !filter.is_empty() => filters.push(filter),
                Some(_) => {}
                None => return Ok(RangePage::default()),
            }
        }
        if let Some(matching) = matching {
            filters.push(matching.expression("f", &mut expression.names, &mut expression.values));
        }
        let filter = (!filters.is_empty()).then(|| filters.join(" AND "));
        let index = query.index.map(keys::gsi_name);
        let output = retry::call(|| async {
            self.begin_call()?;
            self.observed("Query", index.as_deref(), None, || async {
                self.client
                    .query()
                    .table_name(self.table.as_ref())
                    .set_index_name(index.clone())
                    .key_condition_expression(&condition)
                    .set_filter_expression(filter.clone())
                    .set_expression_attribute_names(Some(expression.names.clone()))
                    .set_expression_attribute_values(Some(expression.values.clone()))
                    .scan_index_forward(query.forward)
                    .set_consistent_read(
                        (query.consistent || consistent && query.index.is_none()).then_some(true),
                    )
                    .limit(sdk_limit(query.limit.max(1)))
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(error::classify)
            })
            .await
        })
        .await?;
        let page = output.items.unwrap_or_default();
        self.record(CallRecord {
            operation: "Query",
            index: index.clone(),
            keys: None,
            items: Some(page.len()),
            consumed_capacity: capacity(output.consumed_capacity.as_ref()),
        });
        let stopped_at = output
            .last_evaluated_key
            .as_ref()
            .and_then(|key| key.get(&sk))
            .and_then(|value| value.as_s().ok())
            .cloned();
        Ok(RangePage {
            items: page
                .into_iter()
                .map(item::item_from_sdk)
                .filter(|item| within(item.get(&sk), &query.lower, &query.upper))
                .map(Arc::new)
                .collect(),
            evaluated: usize::try_from(output.scanned_count).unwrap_or(0),
            stopped_at,
        })
    }

    /// Reads every item of the table: in four parallel Scan segments, each followed page by page
    /// (of DynamoDB's 1 MB), or on the embedded store in one Scan in key order, in pages of
    /// `walk_page` items ([`Store::scan_segments`]). For tools that walk the whole table
    /// (`check`), never for requests.
    pub async fn scan_all(&self) -> Result<Vec<Item>, StoreError> {
        self.scan_all_telling(&|_| {}).await
    }

    /// [`Store::scan_all`], telling `read` after each page how many items all segments have
    /// read so far (for a tool's progress).
    pub async fn scan_all_telling(
        &self,
        read: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<Item>, StoreError> {
        let segments = self.scan_segments();
        let count = std::sync::atomic::AtomicU64::new(0);
        let scans = (0..segments).map(|segment| self.scan_segment(segment, segments, &count, read));
        let mut items = Vec::new();
        for part in futures::future::try_join_all(scans).await? {
            items.extend(part);
        }
        Ok(items)
    }

    async fn scan_segment(
        &self,
        segment: u16,
        segments: u16,
        count: &std::sync::atomic::AtomicU64,
        read: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .scan_page_of(segment, segments, start.as_ref(), None, self.walk_page())
                .await?;
            let before = count.fetch_add(
                page.items.len() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            read(before + page.items.len() as u64);
            items.extend(page.items);
            match page.next {
                Some(key) => start = Some(key),
                None => return Ok(items),
            }
        }
    }

    /// One page of one Scan segment: at most `limit` items evaluated from after `start`, keeping
    /// those whose `__typename` is `typename` (all, without one). Answers the items, where the next page starts
    /// (`None` when the segment is done) and how many items it evaluated. For resumable table
    /// walks (`migrate`).
    pub async fn scan_page(
        &self,
        segment: u16,
        segments: u16,
        start: Option<&Key>,
        typename: Option<&str>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        self.scan_page_of(segment, segments, start, typename, Some(limit))
            .await
    }

    /// The segments a walk of the whole table is best split into: one on the embedded store of
    /// this process, read as a Scan without segments, page after page in key order; four
    /// elsewhere, where DynamoDB reads them side by side. The embedded store's segments are
    /// ranges of a hash order that no index holds: it reads and sorts the whole table for every
    /// page of a segment, so the reads of a walk grew with the square of the table's size
    /// (`migrate` of 100,000 nodes: 40 – 41 s with one segment of that order, 21.6 – 24.2 s
    /// without, `bench/migrate.py`).
    pub fn scan_segments(&self) -> u16 {
        if self.in_process { 1 } else { 4 }
    }

    /// The items a page of a walk of a whole table evaluates at most: 1,000 on the embedded store
    /// of this process, which reads every item after the page's start key when a Scan has no
    /// `Limit` and keeps the first megabyte's (so a walk read the table once per page); none
    /// elsewhere, where DynamoDB stops at a megabyte.
    fn walk_page(&self) -> Option<usize> {
        self.in_process.then_some(1000)
    }

    async fn scan_page_of(
        &self,
        segment: u16,
        segments: u16,
        start: Option<&Key>,
        typename: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ScanPage, StoreError> {
        let start = start.map(key_map);
        let (items, last, evaluated) = self
            .scan_call(|| {
                let (segment, segments) = segment_args(segment, segments);
                let mut scan = self
                    .client
                    .scan()
                    .table_name(self.table.as_ref())
                    .set_segment(segment)
                    .set_total_segments(segments)
                    .consistent_read(true)
                    .set_limit(limit.map(sdk_limit))
                    .set_exclusive_start_key(start.clone());
                if let Some(typename) = typename {
                    scan = scan
                        .filter_expression("#t = :t")
                        .expression_attribute_names("#t", TYPENAME)
                        .expression_attribute_values(":t", AttributeValue::S(typename.to_owned()));
                }
                scan
            })
            .await?;
        let next = last.and_then(|key| {
            let text = |name: &str| match key.get(name) {
                Some(AttributeValue::S(s)) => Some(s.clone()),
                _ => None,
            };
            Some(Key {
                pk: text("PK")?,
                sk: text("SK")?,
            })
        });
        Ok(ScanPage {
            items,
            next,
            evaluated,
        })
    }
}

/// A Scan's `Segment` and `TotalSegments` for segment `segment` of `segments`: none for one
/// segment, the whole table, which the embedded store then reads in key order from where the
/// last page stopped (its segments are ranges of a hash order it sorts the whole table into for
/// every page, `Store::scan_segments`).
fn segment_args(segment: u16, segments: u16) -> (Option<i32>, Option<i32>) {
    let split = segments > 1;
    (
        split.then_some(i32::from(segment)),
        split.then_some(i32::from(segments)),
    )
}

/// A page's item count as the SDK's `Limit`.
fn sdk_limit(items: usize) -> i32 {
    i32::try_from(items).unwrap_or(i32::MAX)
}

impl Store {
    /// One page of one segment of a Scan of another table of the same store (an Amplify
    /// app's table, for `import --amplify-tables`): its items as stored, and the key the next
    /// page starts after (`None` when the segment is done). Eventually consistent, as a bulk
    /// copy reads. One segment is a Scan without segments, as in [`Store::scan_page`], and a
    /// page as long as [`Store::scan_all`]'s.
    pub async fn scan_other_table(
        &self,
        table: &str,
        segment: u16,
        segments: u16,
        start: Option<&Item>,
    ) -> Result<(Vec<Item>, Option<Item>), StoreError> {
        let start: Option<HashMap<String, AttributeValue>> = start.map(|key| {
            key.iter()
                .map(|(name, value)| (name.to_owned(), item::to_sdk(value)))
                .collect()
        });
        let (segment, segments) = segment_args(segment, segments);
        let (items, last, _) = self
            .scan_call(|| {
                self.client
                    .scan()
                    .table_name(table)
                    .set_segment(segment)
                    .set_total_segments(segments)
                    .set_limit(self.walk_page().map(sdk_limit))
                    .set_exclusive_start_key(start.clone())
            })
            .await?;
        Ok((items, last.map(item::item_from_sdk)))
    }
}

impl Store {
    /// Sends the Scan `build` makes (made again for each try), and records the call: its items,
    /// the key the next page starts after, and how many items it evaluated.
    async fn scan_call(
        &self,
        build: impl Fn() -> aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder,
    ) -> Result<(Vec<Item>, Option<HashMap<String, AttributeValue>>, usize), StoreError> {
        let output = retry::call(|| async {
            self.begin_call()?;
            let scan = build().return_consumed_capacity(ReturnConsumedCapacity::Total);
            self.observed("Scan", None, None, || async {
                scan.send().await.map_err(error::classify)
            })
            .await
        })
        .await?;
        let items: Vec<Item> = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(item::item_from_sdk)
            .collect();
        self.record(CallRecord {
            operation: "Scan",
            index: None,
            keys: None,
            items: Some(items.len()),
            consumed_capacity: capacity(output.consumed_capacity.as_ref()),
        });
        let evaluated = usize::try_from(output.scanned_count).unwrap_or(items.len());
        Ok((items, output.last_evaluated_key, evaluated))
    }
}

/// What one call of [`Store::scan_page`] read.
#[derive(Debug, Default)]
pub struct ScanPage {
    /// The items of the type asked for.
    pub items: Vec<Item>,
    /// Where the segment's next page starts; `None` when it is done.
    pub next: Option<Key>,
    /// Items the store evaluated (`ScannedCount`), those of other types included.
    pub evaluated: usize,
}

/// Placeholders of one expression.
#[derive(Default)]
struct Expression {
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl Expression {
    fn name(&mut self, attribute: &str) -> String {
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), attribute.to_owned());
        placeholder
    }

    fn value(&mut self, value: &str) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values
            .insert(placeholder.clone(), AttributeValue::S(value.to_owned()));
        placeholder
    }
}

/// The key condition of `query` (its partition, and its sort key between its bounds) with the
/// placeholders it used, and the sort key's attribute; `None` when no item can lie between the
/// bounds.
fn key_condition(query: &RangeQuery<'_>) -> Option<(Expression, String, String)> {
    let (pk, sk) = match query.index {
        Some(slot) => (
            keys::slot_partition_attribute(slot),
            keys::slot_sort_attribute(slot),
        ),
        None => ("PK".to_owned(), "SK".to_owned()),
    };
    let mut expression = Expression::default();
    let pk_name = expression.name(&pk);
    let pk_value = expression.value(query.partition);
    let mut condition = format!("{pk_name} = {pk_value}");
    let range = range_condition(&mut expression, &sk, &query.lower, &query.upper)?;
    if !range.is_empty() {
        condition = format!("{condition} AND {range}");
    }
    Some((expression, condition, sk))
}

/// The condition that keeps `attribute` between the bounds; empty without bounds, `None` when
/// no value can lie between them. Both bounds become an (inclusive) BETWEEN; exclusive ends are
/// dropped by [`within`] after the read.
fn range_condition(
    expression: &mut Expression,
    attribute: &str,
    lower: &Option<Bound>,
    upper: &Option<Bound>,
) -> Option<String> {
    let op = |bound: &Bound, inclusive: &'static str, exclusive: &'static str| {
        if bound.inclusive {
            inclusive
        } else {
            exclusive
        }
    };
    Some(match (lower, upper) {
        (Some(lower), Some(upper)) => {
            let empty = lower.value > upper.value
                || (lower.value == upper.value && !(lower.inclusive && upper.inclusive));
            if empty {
                return None;
            }
            let name = expression.name(attribute);
            let (low, high) = (
                expression.value(&lower.value),
                expression.value(&upper.value),
            );
            format!("{name} BETWEEN {low} AND {high}")
        }
        (Some(lower), None) => {
            let name = expression.name(attribute);
            format!(
                "{name} {} {}",
                op(lower, ">=", ">"),
                expression.value(&lower.value)
            )
        }
        (None, Some(upper)) => {
            let name = expression.name(attribute);
            format!(
                "{name} {} {}",
                op(upper, "<=", "<"),
                expression.value(&upper.value)
            )
        }
        (None, None) => String::new(),
    })
}

/// Whether a sort key read back lies within the bounds, exclusive ends included.
fn within(value: Option<&AttrValue>, lower: &Option<Bound>, upper: &Option<Bound>) -> bool {
    let Some(value) = value.and_then(AttrValue::as_str) else {
        return false;
    };
    let above = lower
        .as_ref()
        .is_none_or(|b| value > b.value.as_str() || (b.inclusive && value == b.value));
    let below = upper
        .as_ref()
        .is_none_or(|b| value < b.value.as_str() || (b.inclusive && value == b.value));
    above && below
}

fn keys_and_attributes(keys: &[String], consistent: bool) -> Result<KeysAndAttributes, StoreError> {
    let mut request = KeysAndAttributes::builder().set_consistent_read(consistent.then_some(true));
    for key in keys {
        request = request.keys(key_map(&Key::same(key.clone())));
    }
    request
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))
}
