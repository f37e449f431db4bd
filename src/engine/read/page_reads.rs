//! Reading one page from one or more ranges of sort keys read together (a connection's one
//! partition, or every shard of a type index), optionally keeping only the items that meet a
//! filter, which DynamoDB evaluates as a FilterExpression.
//!
//! DynamoDB applies a filter after its `Limit`: a Query asked for 50 items that rejects half
//! answers 25 and says the range goes on. A page therefore reads in rounds: each round sends one
//! Query per range that may hold more (all together), each starting past where that range
//! stopped. The items every range has read past are *settled*: the earliest position among
//! the ranges still open is the frontier, and a match at or before it cannot be preceded by an
//! unread one. The page ends when it holds one settled match more than its size (so it knows
//! another page follows), when every range is read to its end, or when the read budget is
//! spent: then the page holds what was settled and ends at the frontier, which is where the
//! next page starts, so no item is skipped and none is read twice by the pages a client follows.
//!
//! Without a filter the first round always settles the page: each range is asked for one item
//! more than the page (and one for an exclusive bound the Query includes), so the earliest range
//! to stop has settled a whole page by itself: one Query per range.
//!
//! Rounds after the first ask each open range for twice what it read so far, within an even
//! share of what is left of the budget.

use std::sync::Arc;

use super::page_request::{PageRead, tighter_lower, tighter_upper};
use crate::engine::error::EngineError;
use crate::engine::scope::FilterRead;
use crate::engine::scope::RequestScope;
use crate::store::{AttrValue, Bound, Filter, Item, RangeQuery};

/// One range of sort keys a page reads: a partition of the table or of a slot's index.
#[derive(Debug, Clone)]
pub(super) struct Range {
    pub index: Option<u8>,
    pub partition: String,
    pub lower: Option<Bound>,
    pub upper: Option<Bound>,
    /// A range of another attribute that items must lie in (see `RangeQuery::filter`).
    pub filter: Option<(String, Option<Bound>, Option<Bound>)>,
}

/// What a page reads, and how.
pub(super) struct Reading<'a> {
    pub ranges: &'a [Range],
    /// The attribute that orders each range (and every range alike).
    pub sort_attribute: &'a str,
    pub ascending: bool,
    /// The page's size: the read looks for one settled item more.
    pub size: usize,
    pub matching: Option<&'a Filter>,
    /// `matching` holds the caller's `@auth` rules.
    pub rules: bool,
    /// Items a filtered page may evaluate before it stops.
    pub budget: usize,
}

/// Reads one page of `reading`.
pub(super) async fn read(
    scope: &RequestScope,
    reading: &Reading<'_>,
) -> Result<PageRead, EngineError> {
    let want = reading.size + 1;
    let ranges = reading.ranges;
    let count = ranges.len();
    let ascending = reading.ascending;
    let key_of = |item: &Item| -> String {
        item.get(reading.sort_attribute)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    // `a` comes before `b` in the order the page reads.
    let earlier = |a: &str, b: &str| if ascending { a < b } else { a > b };

    let mut positions: Vec<Option<String>> = vec![None; count];
    let mut open = vec![true; count];
    let mut evaluated_by = vec![0usize; count];
    let mut evaluated = 0usize;
    let mut matched = 0usize;
    let mut matches: Vec<(String, Arc<Item>)> = Vec::new();
    let mut limits = vec![want + 1; count];
    if reading.matching.is_some() {
        let shares = shares(reading.budget, &open);
        for (limit, share) in limits.iter_mut().zip(shares) {
            *limit = (*limit).min(share);
        }
    }
    loop {
        // A range whose share of the budget is nothing waits for a later round.
        let reading_now: Vec<usize> = (0..count).filter(|&i| open[i] && limits[i] > 0).collect();
        let queries: Vec<RangeQuery<'_>> = reading_now
            .iter()
            .map(|&i| {
                let range = &ranges[i];
                let (mut lower, mut upper) = (range.lower.clone(), range.upper.clone());
                if let Some(position) = &positions[i] {
                    let past = Some(Bound::exclusive(position.clone()));
                    if ascending {
                        lower = tighter_lower(lower, past);
                    } else {
                        upper = tighter_upper(upper, past);
                    }
                }
                RangeQuery {
                    index: range.index,
                    partition: &range.partition,
                    lower,
                    upper,
                    filter: range.filter.clone(),
                    forward: ascending,
                    limit: limits[i],
                    consistent: false,
                }
            })
            .collect();
        let calls = queries
            .iter()
            .map(|query| scope.store.query_page(query, reading.matching));
        let pages = futures::future::try_join_all(calls)
            .await
            .map_err(|e| EngineError::from_store(&e))?;
        for (&i, page) in reading_now.iter().zip(pages) {
            evaluated += page.evaluated;
            evaluated_by[i] += page.evaluated;
            matched += page.items.len();
            matches.extend(page.items.into_iter().map(|item| (key_of(&item), item)));
            match page.stopped_at {
                Some(position) => positions[i] = Some(position),
                None => open[i] = false,
            }
        }
        let frontier: Option<String> = (0..count)
            .filter(|&i| open[i])
            .filter_map(|i| positions[i].clone())
            .reduce(|a, b| if earlier(&b, &a) { b } else { a });
        let settled = |key: &str| frontier.as_deref().is_none_or(|f| !earlier(f, key));
        let settled_count = matches.iter().filter(|(key, _)| settled(key)).count();
        let spent = reading.matching.is_some() && evaluated >= reading.budget;
        if settled_count >= want || frontier.is_none() || spent {
            let stopped = settled_count < want && frontier.is_some();
            matches.retain(|(key, _)| settled(key));
            matches.sort_by(|(a, _), (b, _)| if ascending { a.cmp(b) } else { b.cmp(a) });
            matches.truncate(want);
            let has_more = matches.len() > reading.size || stopped;
            return Ok(PageRead {
                items: matches.into_iter().map(|(_, item)| item).collect(),
                has_more,
                filtered: reading.matching.map(|_| FilterRead {
                    evaluated,
                    matched,
                    budget_stop: if stopped { frontier } else { None },
                    rules: reading.rules,
                }),
            });
        }
        let shares = shares(reading.budget.saturating_sub(evaluated), &open);
        for i in 0..count {
            limits[i] = match reading.matching {
                Some(_) => (2 * evaluated_by[i]).max(want + 1).min(shares[i]),
                None => want + 1,
            };
        }
    }
}

/// `left` items shared out between the `open` ranges as evenly as whole items go (the first
/// ranges take the remainder), so that together they never evaluate more.
fn shares(left: usize, open: &[bool]) -> Vec<usize> {
    let count = open.iter().filter(|o| **o).count().max(1);
    let mut remainder = left % count;
    open.iter()
        .map(|open| {
            if !*open {
                return 0;
            }
            let extra = usize::from(remainder > 0);
            remainder = remainder.saturating_sub(1);
            left / count + extra
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_never_add_up_to_more_than_is_left() {
        assert_eq!(shares(40, &[true; 4]), [10, 10, 10, 10]);
        assert_eq!(shares(2, &[true, false, true, true]), [1, 0, 1, 0]);
        assert_eq!(shares(7, &[true, true, true]), [3, 2, 2]);
        assert_eq!(shares(0, &[true, true]), [0, 0]);
    }
}
