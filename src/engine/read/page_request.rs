//! What page of a connection a client asked for: a direction, a size, the cursors it starts or
//! ends at, the sort direction, a key condition on the sort field, the role filters of edge
//! connections and a filter on the items' fields. Validated once, here. Also what a page read
//! found (`PageRead`), a page read ahead of its field and handed down with its parent
//! (`Prefetch`), and the bounds both share.

use std::sync::{Arc, Mutex};

use crate::engine::error::EngineError;
use crate::engine::scope::FilterRead;
use crate::keys::{Cursor, CursorKeys};
use crate::store::{Bound, Filter, Item};

/// Page size when the client gives neither `first` nor `last`.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: usize = 100;
/// The largest page Amplify's `limit` reads. AppSync bounds a page by DynamoDB's 1 MB per
/// Query and no count; here a page holds at most this many nodes (each Query within it still
/// stops at 1 MB, and the page goes on with the next), and `nextToken` goes on after it.
pub const MAX_LIMIT: usize = 1000;

/// A page request, validated: sizes within 0 to [`MAX_PAGE_SIZE`] (or the larger bound the
/// arguments give, [`MAX_LIMIT`] for Amplify's `limit`), one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// `first` (true) or `last`: the direction of paging, in the connection's order.
    pub forward: bool,
    pub size: usize,
    pub after: Option<String>,
    pub before: Option<String>,
    /// `sortDirection: DESC`: the connection's order is from the highest sort key down.
    pub descending: bool,
    /// Only the items whose sort value meets this.
    pub key_condition: Option<KeyCondition>,
    pub role: Option<String>,
    pub min_role: Option<String>,
    /// Only the items that meet this (see `page_reads`).
    pub filter: Option<PageFilter>,
}

/// The arguments of a connection field as the client sent them.
#[derive(Debug, Default, Clone)]
pub struct PageArguments {
    pub first: Option<i64>,
    pub last: Option<i64>,
    pub after: Option<String>,
    pub before: Option<String>,
    pub descending: bool,
    pub key_condition: Option<KeyCondition>,
    pub role: Option<String>,
    pub min_role: Option<String>,
    pub filter: Option<Filter>,
    /// The largest size allowed: [`MAX_PAGE_SIZE`] unless given (Amplify's `limit`:
    /// [`MAX_LIMIT`]).
    pub largest: Option<usize>,
}

/// A page's filter on its items' fields. Two are the same request when they test the same
/// (a page read ahead is taken only by a field asking for the same page).
#[derive(Debug, Clone)]
pub struct PageFilter {
    pub filter: Filter,
    /// What it tests, written out: what it is compared by.
    written: String,
}

impl PageFilter {
    fn new(filter: Filter) -> PageFilter {
        PageFilter {
            written: format!("{filter:?}"),
            filter,
        }
    }
}

impl PartialEq for PageFilter {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
    }
}

impl Eq for PageFilter {}

/// A condition on the sort value of a sorted connection, with Amplify's key-condition
/// operators; it becomes bounds of the page's Query (see `connections`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyCondition {
    Eq(SortOperand),
    Lt(SortOperand),
    Le(SortOperand),
    Gt(SortOperand),
    Ge(SortOperand),
    /// Both ends included.
    Between(SortOperand, SortOperand),
    /// Text only: values that start with this, compared as the sort compares (case-insensitively);
    /// of a composite key, the first fields equal and the last one given starting with its text.
    BeginsWith(SortOperand),
}

/// A value a key condition compares the sort value with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortOperand {
    Text(String),
    Int(i64),
    /// The bits of an `f64` (so that requests compare exactly, as `Eq` needs).
    Float(u64),
    /// The values of the first fields of a composite sort key, in order (at least one): a
    /// condition compares the keys' first fields with them, as a prefix.
    Composite(Vec<SortOperand>),
}

impl PageRequest {
    pub fn new(arguments: PageArguments) -> Result<PageRequest, EngineError> {
        let largest = arguments.largest.unwrap_or(MAX_PAGE_SIZE);
        let size = |name: &str, n: Option<i64>| -> Result<Option<usize>, EngineError> {
            let Some(n) = n else { return Ok(None) };
            usize::try_from(n)
                .ok()
                .filter(|n| *n <= largest)
                .map(Some)
                .ok_or_else(|| {
                    EngineError::bad_input(format!(
                        "{name} must be between 0 and {largest}, not {n}"
                    ))
                })
        };
        let (forward, size) = match (
            size("first", arguments.first)?,
            size("last", arguments.last)?,
        ) {
            (Some(_), Some(_)) => {
                return Err(EngineError::bad_input("pass first or last, not both"));
            }
            (Some(first), None) => (true, first),
            (None, Some(last)) => (false, last),
            (None, None) => (true, DEFAULT_PAGE_SIZE),
        };
        Ok(PageRequest {
            forward,
            size,
            after: arguments.after,
            before: arguments.before,
            descending: arguments.descending,
            key_condition: arguments.key_condition,
            role: arguments.role,
            min_role: arguments.min_role,
            filter: match arguments.filter {
                Some(filter) => match filter.beyond_limits() {
                    Some(why) => return Err(EngineError::bad_input(format!("filter: {why}"))),
                    None => Some(PageFilter::new(filter)),
                },
                None => None,
            },
        })
    }
}

impl PageRequest {
    /// The sort-key bounds (lower, upper) its cursors set, for cursors bound to `binding`: in
    /// descending order, `after` a cursor means below it.
    pub(super) fn cursor_bounds(
        &self,
        binding: &str,
        keys: &CursorKeys,
    ) -> Result<(Option<Bound>, Option<Bound>), EngineError> {
        let decode = |argument: &str, cursor: &Option<String>| {
            cursor
                .as_deref()
                .map(|encoded| {
                    Cursor::decode_for(encoded, binding, keys)
                        .map(|c| Bound::exclusive(c.sort_key))
                        .map_err(|e| EngineError::bad_input(format!("{argument}: {e}")))
                })
                .transpose()
        };
        let after = decode("after", &self.after)?;
        let before = decode("before", &self.before)?;
        Ok(if self.descending {
            (before, after)
        } else {
            (after, before)
        })
    }

    /// Whether the store reads up the sort key: `first` goes along the connection's order,
    /// `last` against it.
    pub(super) fn reads_ascending(&self) -> bool {
        self.forward != self.descending
    }
}

/// A page read: its items in the order read, at most `size + 1`.
#[derive(Debug, Clone, Default)]
pub(crate) struct PageRead {
    pub items: Vec<Arc<Item>>,
    /// The store held more past the page's `size` items, or may (a budget stop).
    pub has_more: bool,
    /// What a filter cost, when the page had one.
    pub filtered: Option<FilterRead>,
}

/// A page of one connection field read before the field resolves (`read_ahead`): the GraphQL
/// adapter hands it down with the parent `Node` it was read under, and `read_field_page` takes
/// it from there instead of reading. It names the field by its response key (its alias, or its name), so
/// two aliases of one connection never take each other's page.
#[derive(Debug)]
pub struct Prefetch {
    /// The response key of the field it was read for.
    pub(super) field: String,
    /// The page it was read as: the field must ask for this page to take it.
    pub(super) request: PageRequest,
    /// Whether an item of it proves the parent is of the type it was asked as.
    pub(super) proves_parent: bool,
    /// The page read, until its field takes it.
    pub(super) read: Mutex<Option<PageRead>>,
}

impl Prefetch {
    /// Whether the page proves its parent exists with the type it was asked as, so that the
    /// parent need not be read.
    pub fn proves_parent(&self) -> bool {
        self.proves_parent
    }

    /// The page read for the field `field` asking for `request`, once. A field of that
    /// response key that asks for another page is a read-ahead that looked at other arguments
    /// than the field resolves with: a fault of the adapter, logged (and fatal in debug builds,
    /// so tests catch it), after which the page is read as if nothing had been read ahead.
    pub(super) fn take(&self, field: &str, request: &PageRequest) -> Option<PageRead> {
        if self.field != field {
            return None;
        }
        if self.request != *request {
            tracing::error!(
                field,
                "a page read ahead was asked for with other arguments"
            );
            debug_assert!(
                false,
                "{field}: read ahead as {:?}, asked as {request:?}",
                self.request
            );
            return None;
        }
        self.read.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The higher of two lower bounds (exclusive wins a tie).
pub(super) fn tighter_lower(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
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
pub(super) fn tighter_upper(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_goes_one_way_within_the_size_limit() {
        let forward = PageRequest::new(PageArguments::default()).expect("the default page");
        assert!(forward.forward);
        assert_eq!(forward.size, DEFAULT_PAGE_SIZE);
        let backward = PageRequest::new(PageArguments {
            last: Some(3),
            ..PageArguments::default()
        })
        .expect("a backward page");
        assert!(!backward.forward);
        assert_eq!(backward.size, 3);
        for arguments in [
            PageArguments {
                first: Some(1),
                last: Some(1),
                ..PageArguments::default()
            },
            PageArguments {
                first: Some(-1),
                ..PageArguments::default()
            },
            PageArguments {
                last: Some(101),
                ..PageArguments::default()
            },
        ] {
            assert!(PageRequest::new(arguments).is_err());
        }
    }

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
