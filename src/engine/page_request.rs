//! What page of a connection a client asked for: a direction, a size, the cursors it starts or
//! ends at, the sort direction, a key condition on the sort field, and the role filters of edge
//! connections. Validated once, here.

use super::error::EngineError;
use crate::keys::{Cursor, CursorKeys};
use crate::store::Bound;

/// Page size when the client gives neither `first` nor `last`.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: usize = 100;

/// A page request, validated: sizes within 0 to [`MAX_PAGE_SIZE`], one direction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
}

/// A condition on the sort value of a sorted connection, with Amplify's key-condition
/// operators; it becomes bounds of the page's Query (see `connections`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyCondition {
    Eq(SortOperand),
    Lt(SortOperand),
    Le(SortOperand),
    Gt(SortOperand),
    Ge(SortOperand),
    /// Both ends included.
    Between(SortOperand, SortOperand),
    /// Text only: values that start with this, compared as the sort compares (case-insensitively).
    BeginsWith(String),
}

/// A value a key condition compares the sort value with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SortOperand {
    Text(String),
    Int(i64),
    /// The bits of an `f64` (so the request can be a map key).
    Float(u64),
}

impl PageRequest {
    pub fn new(arguments: PageArguments) -> Result<PageRequest, EngineError> {
        let size = |name: &str, n: Option<i64>| -> Result<Option<usize>, EngineError> {
            let Some(n) = n else { return Ok(None) };
            usize::try_from(n)
                .ok()
                .filter(|n| *n <= MAX_PAGE_SIZE)
                .map(Some)
                .ok_or_else(|| {
                    EngineError::bad_input(format!(
                        "{name} must be between 0 and {MAX_PAGE_SIZE}, not {n}"
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
}
