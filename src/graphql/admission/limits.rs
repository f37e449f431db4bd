//! Limits on the shape of a query, checked once it has parsed and before anything runs: how
//! deep it nests, how many aliases and root fields it has, and what it costs.
//!
//! # Cost
//!
//! Every selected field costs 1, times the number of times it will be resolved: a field inside
//! a connection asked for `first: 50` is resolved up to 50 times, so page sizes multiply. A
//! connection without `first`/`last` counts its default page size; `nodes(ids:)` counts its ids;
//! any other list counts [`UNPAGED_LIST_ESTIMATE`]. A page size given by a variable counts the
//! variable's value, or its default when the request leaves it out. A connection's `edges` and `nodes` count
//! once per page item. Introspection fields count 1 each: they are
//! answered from memory. Fragments count where they are spread, so a fragment spread ten times
//! costs ten times.
//!
//! Introspection fields cost 1 each (they are answered from memory) but may nest at most
//! [`MAX_INTROSPECTION_LISTS`] of their lists (`fields`, `interfaces`, `possibleTypes`,
//! `inputFields`) inside each other, as graphql-js allows: deeper, a small query could ask for
//! millions of objects.
//!
//! The walk stops as soon as a limit is passed, so a document whose fragments fan out
//! exponentially costs the server no more than the limit.
//!
//! # Nesting
//!
//! Before the document is parsed, its brackets (`{`, `[`, `(` outside strings and comments) may
//! nest at most [`MAX_NESTING`] deep, it may have at most [`MAX_TOKENS`] tokens, and no name in
//! it may be longer than [`MAX_NAME_BYTES`] (an operation's own name becomes the name of its
//! trace span). async-graphql's parser bounds the nesting of selection sets but not of values,
//! and parses them recursively: an input object literal nested about 400 deep overflowed a
//! worker thread's stack and aborted the whole server (measured on a debug build; a release
//! build only moves the depth). Counting brackets costs one pass over the text.
//! [`Limits::parse`] is the server's one call of the parser, after that pass.
//!
//! Invariant: a document over any limit fails as a request error, before any resolver runs and
//! so before any storage call; no text reaches the parser before the text limits.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use async_graphql::parser::types::{
    ExecutableDocument, OperationDefinition, OperationType, Selection, SelectionSet,
};
use async_graphql::registry::Registry;
use async_graphql::{Name, Positioned, ServerResult, Variables};
use async_graphql_value::{ConstValue, Value};
use lru::LruCache;

use super::shape::{MAX_NAME_BYTES, declared_field, named_type, over};

use crate::engine::read::DEFAULT_PAGE_SIZE;

/// How many items a list without a page size is assumed to hold (edge-set lists, `leads`).
pub const UNPAGED_LIST_ESTIMATE: u64 = 10;

/// How many tokens a document may have, as Apollo Router's `parser_max_tokens` allows: the
/// introspection query of GraphiQL has about 300. A 900 KB document of one argument repeated
/// made an 30 MB tree when parsed, and eight at once took the server past 280 MB.
pub const MAX_TOKENS: usize = 15_000;

/// How deep a document's brackets may nest: room for a selection 16 levels deep with arguments,
/// or a nested create some 30 levels deep, and far from where a parser's stack runs out.
pub const MAX_NESTING: usize = 128;

/// Fragments nest at most this deep while counting; a cycle is the validator's to report.
const MAX_FRAGMENT_NESTING: usize = 64;

/// Introspection lists that may nest inside each other, as graphql-js's
/// `MaxIntrospectionDepthRule` allows.
pub const MAX_INTROSPECTION_LISTS: usize = 2;
const INTROSPECTION_LISTS: [&str; 4] = ["fields", "interfaces", "possibleTypes", "inputFields"];

/// The limits a query must stay within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    pub max_depth: usize,
    pub max_cost: u64,
    pub max_aliases: usize,
    pub max_root_fields: usize,
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits {
            max_depth: 16,
            max_cost: 50_000,
            max_aliases: 30,
            max_root_fields: 20,
        }
    }
}

/// What one operation measures.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    pub depth: usize,
    pub cost: u64,
    pub aliases: usize,
    pub root_fields: usize,
    /// The most introspection lists nested inside each other.
    pub introspection_lists: usize,
}

/// Enforces [`QueryLimits`] on a request before it runs, and keeps the documents it parsed.
pub struct Limits {
    limits: QueryLimits,
    /// Documents already parsed, by query text: clients send the same few queries again and
    /// again, and parsing was a visible share of a small query's time (BENCHMARKS.md).
    /// The least recently used text leaves first, so a client's steady queries stay while
    /// one-off texts pass through.
    parsed: std::sync::Mutex<LruCache<String, Arc<(ExecutableDocument, usize)>>>,
}

/// Distinct query texts kept parsed.
const PARSED_QUERIES: NonZeroUsize = NonZeroUsize::new(512).expect("not zero");
/// Longer query texts are parsed every time: the cache holds at most 512 of these sizes.
const CACHED_QUERY_BYTES: usize = 16 * 1024;
/// Texts whose parsed tree may take more than this are parsed every time, so that the cache
/// holds at most 512 times this (32 MB): GraphiQL's introspection query takes about 25 KB.
pub const CACHED_TREE_BYTES: usize = 64 * 1024;

/// An estimate, from above, of the bytes the parsed document of a text of `text_bytes` bytes
/// and `tokens` tokens takes. Measured with a counting allocator on async-graphql-parser 7.2
/// (a document of one 900 KB string, of 7,000 fields, of 3,000 aliased fields with arguments,
/// of 2,000 list arguments, and GraphiQL's introspection query), a tree took at most 1.2 times
/// its text's bytes plus 240 bytes a token.
pub fn tree_bytes(text_bytes: usize, tokens: usize) -> usize {
    text_bytes * 2 + tokens * 256
}

impl Limits {
    pub fn new(limits: QueryLimits) -> Limits {
        Limits {
            limits,
            parsed: std::sync::Mutex::new(LruCache::new(PARSED_QUERIES)),
        }
    }

    /// The document of `query`: the cache's, or parsed now, after the text limits and before
    /// the shape limits. This is the only place the server parses a request's document, so no
    /// caller can reach the parser's recursion with a text the bracket limit has not bounded.
    /// `cached`: whether it came from the cache (and so passed these limits before).
    pub fn parse(&self, query: &str) -> ServerResult<Parsed> {
        if let Some((document, tokens)) = self.cached(query) {
            return Ok(Parsed {
                document,
                tokens,
                cached: true,
            });
        }
        let tokens = text_within_limits(query)?;
        let document = async_graphql::parser::parse_query(query).map_err(|error| {
            crate::graphql::errors::with_type(error.into(), crate::graphql::errors::INVALID_SYNTAX)
        })?;
        super::shape::check(&document)?;
        Ok(Parsed {
            document,
            tokens,
            cached: false,
        })
    }

    /// Checks every operation of a parsed `document`, run with `variables`, against the limits.
    ///
    /// This runs before async-graphql's own checks of the document, some of which take time
    /// exponential in its fragments.
    pub fn check(
        &self,
        registry: &Registry,
        document: &ExecutableDocument,
        operation_name: Option<&str>,
        variables: &Variables,
    ) -> ServerResult<()> {
        super::shape::check_values(registry, document, operation_name, variables)?;
        for (_, operation) in document.operations.iter() {
            let root = match operation.node.ty {
                OperationType::Query => registry.query_type.as_str(),
                OperationType::Mutation => registry.mutation_type.as_deref().unwrap_or_default(),
                OperationType::Subscription => {
                    registry.subscription_type.as_deref().unwrap_or_default()
                }
            };
            let measure = measure(
                &self.limits,
                registry,
                document,
                variables,
                root,
                &operation.node,
            );
            check(&self.limits, &measure)?;
        }
        Ok(())
    }

    /// The cache's document of `query`, if it has one.
    fn cached(&self, query: &str) -> Option<(ExecutableDocument, usize)> {
        let cached = self
            .parsed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(query)
            .cloned();
        cached.map(|held| (*held).clone())
    }

    /// Keeps the document of a short `query` of `tokens` tokens that passed every limit, for
    /// the next request that sends the same text.
    pub fn remember(&self, query: &str, document: &ExecutableDocument, tokens: usize) {
        if query.len() > CACHED_QUERY_BYTES || tree_bytes(query.len(), tokens) > CACHED_TREE_BYTES {
            return;
        }
        let document = Arc::new((document.clone(), tokens));
        self.parsed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .put(query.to_owned(), document);
    }
}

/// A request's document, parsed within the limits.
pub struct Parsed {
    pub document: ExecutableDocument,
    /// How many tokens its text has.
    pub tokens: usize,
    /// Whether it came from the cache of parsed texts.
    pub cached: bool,
}

/// Measures one operation, whose root fields belong to the type `root`. The measure stops
/// growing soon after it passes one of `limits`.
pub fn measure(
    limits: &QueryLimits,
    registry: &Registry,
    document: &ExecutableDocument,
    variables: &Variables,
    root: &str,
    operation: &OperationDefinition,
) -> Measure {
    let defaults = operation
        .variable_definitions
        .iter()
        .filter_map(|definition| {
            let default = definition.node.default_value.as_ref()?;
            Some((definition.node.name.node.clone(), default.node.clone()))
        })
        .collect();
    let mut walk = Walk {
        limits,
        registry,
        document,
        variables,
        defaults,
        measure: Measure::default(),
    };
    let selection_set = &operation.selection_set.node;
    walk.measure.root_fields = walk.count_fields(selection_set, 0);
    walk.selection_set(selection_set, Some(root), 1, 1, 0, 0);
    walk.measure
}

/// Refuses a document whose brackets nest deeper than [`MAX_NESTING`], that has more than
/// [`MAX_TOKENS`] tokens, or a name longer than [`MAX_NAME_BYTES`], before it is parsed; how
/// many tokens it has.
fn text_within_limits(query: &str) -> ServerResult<usize> {
    let text = scan(query);
    if text.deepest > MAX_NESTING {
        return over(
            "nesting",
            format!(
                "the document nests its brackets more than {MAX_NESTING} deep; at most \
                 {MAX_NESTING} are allowed"
            ),
        );
    }
    if text.tokens > MAX_TOKENS {
        return over(
            "tokens",
            format!(
                "the document has more than {MAX_TOKENS} tokens; at most {MAX_TOKENS} are \
                 allowed"
            ),
        );
    }
    if text.longest_name > MAX_NAME_BYTES {
        // The name itself is not echoed: it may be the whole document.
        return over(
            "nameLength",
            format!(
                "a name of {} bytes; at most {MAX_NAME_BYTES} are allowed",
                text.longest_name
            ),
        );
    }
    Ok(text.tokens)
}

/// What one pass over a document's text finds.
struct Text {
    /// How deep its brackets nest, outside strings, block strings and comments.
    deepest: usize,
    /// Its tokens: names, numbers, strings and punctuators (commas, white space and comments
    /// are none).
    tokens: usize,
    /// The length in bytes of its longest name (or number).
    longest_name: usize,
}

/// Scans `query`; it stops soon after a limit is passed.
fn scan(query: &str) -> Text {
    scan_with(query, |_| {})
}

/// The names (and numbers) of `query`, outside strings and comments.
pub(in crate::graphql) fn names(query: &str) -> std::collections::HashSet<&str> {
    let mut names = std::collections::HashSet::new();
    scan_with(query, |name| {
        names.insert(name);
    });
    names
}

/// The byte-order mark, which GraphQL ignores like white space anywhere in a document.
const BOM: &[u8] = "\u{feff}".as_bytes();

/// How many bytes at the start of `text` GraphQL ignores: white space, a comma or a byte-order
/// mark; 0 when it starts with something else.
fn ignored(text: &[u8]) -> usize {
    match text.first() {
        Some(byte) if byte.is_ascii_whitespace() || *byte == b',' => 1,
        Some(_) if text.starts_with(BOM) => BOM.len(),
        _ => 0,
    }
}

/// Scans `query`, handing each name or number to `on_name`.
fn scan_with<'q>(query: &'q str, mut on_name: impl FnMut(&'q str)) -> Text {
    let text = query.as_bytes();
    let (mut depth, mut deepest, mut tokens, mut at) = (0usize, 0usize, 0usize, 0usize);
    let mut longest_name = 0;
    let punctuator = |byte: u8| b"{}[]():=@$!|&\"#".contains(&byte);
    while at < text.len() && deepest <= MAX_NESTING && tokens <= MAX_TOKENS {
        let skip = ignored(&text[at..]);
        if skip > 0 {
            at += skip;
            continue;
        }
        let byte = text[at];
        if byte != b'#' {
            tokens += 1;
        }
        match byte {
            b'#' => {
                while at < text.len() && text[at] != b'\n' && text[at] != b'\r' {
                    at += 1;
                }
            }
            b'"' if text[at..].starts_with(b"\"\"\"") => match block_string_end(text, at + 3) {
                Some(end) => at = end + 2,
                // Unterminated, it is no block string: the parser reads `""` and then a string
                // that starts at the third quote, and so does this.
                None => at += 1,
            },
            b'"' => {
                at += 1;
                while at < text.len() && !matches!(text[at], b'"' | b'\n' | b'\r') {
                    at += if text[at] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' | b'[' | b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            b':' | b'=' | b'@' | b'$' | b'!' | b'|' | b'&' => {}
            b'.' if text[at..].starts_with(b"...") => at += 2,
            // A name or a number: one token to the next ignored byte or punctuator.
            _ => {
                let start = at;
                while at + 1 < text.len()
                    && ignored(&text[at + 1..]) == 0
                    && !punctuator(text[at + 1])
                    && !text[at + 1..].starts_with(b"...")
                {
                    at += 1;
                }
                longest_name = longest_name.max(at + 1 - start);
                if let Some(name) = query.get(start..=at) {
                    on_name(name);
                }
            }
        }
        at += 1;
    }
    Text {
        deepest,
        tokens,
        longest_name,
    }
}

/// Where the block string whose text starts at `from` ends (its closing `"""`), if it does.
fn block_string_end(text: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at < text.len() {
        if text[at..].starts_with(b"\"\"\"") {
            return Some(at);
        }
        // An escaped `\"""` does not end the block string.
        at += if text[at..].starts_with(b"\\\"\"\"") {
            4
        } else {
            1
        };
    }
    None
}

/// The measure stops growing soon after it passes a limit (a document may be built to be
/// exponential to walk), so each number told is a lower bound: "at least".
fn check(limits: &QueryLimits, measure: &Measure) -> ServerResult<()> {
    if measure.depth > limits.max_depth {
        return over(
            "depth",
            format!(
                "the query nests at least {} levels deep; at most {} are allowed",
                measure.depth, limits.max_depth
            ),
        );
    }
    if measure.aliases > limits.max_aliases {
        return over(
            "aliases",
            format!(
                "the query has at least {} aliases; at most {} are allowed",
                measure.aliases, limits.max_aliases
            ),
        );
    }
    if measure.root_fields > limits.max_root_fields {
        return over(
            "rootFields",
            format!(
                "the operation selects at least {} root fields; at most {} are allowed",
                measure.root_fields, limits.max_root_fields
            ),
        );
    }
    if measure.introspection_lists > MAX_INTROSPECTION_LISTS {
        return over(
            "introspectionDepth",
            format!(
                "the query nests at least {} introspection lists (fields, interfaces, possibleTypes, inputFields); at most {MAX_INTROSPECTION_LISTS} are allowed",
                measure.introspection_lists
            ),
        );
    }
    if measure.cost > limits.max_cost {
        return over(
            "cost",
            format!(
                "the query costs at least {} (fields times page sizes); at most {} is allowed; ask for smaller pages",
                measure.cost, limits.max_cost
            ),
        );
    }
    Ok(())
}

struct Walk<'a> {
    limits: &'a QueryLimits,
    registry: &'a Registry,
    document: &'a ExecutableDocument,
    variables: &'a Variables,
    /// The operation's variable defaults, for variables the request leaves out.
    defaults: HashMap<Name, ConstValue>,
    measure: Measure,
}

impl Walk<'_> {
    /// The fields a selection set selects at its own level, fragments expanded; counting stops
    /// just past the limit.
    fn count_fields(&self, selection_set: &SelectionSet, nesting: usize) -> usize {
        if nesting > MAX_FRAGMENT_NESTING {
            return 0;
        }
        let mut count = 0;
        for selection in &selection_set.items {
            if count > self.limits.max_root_fields {
                break;
            }
            count += match &selection.node {
                Selection::Field(_) => 1,
                Selection::InlineFragment(fragment) => {
                    self.count_fields(&fragment.node.selection_set.node, nesting + 1)
                }
                Selection::FragmentSpread(spread) => self
                    .document
                    .fragments
                    .get(&spread.node.fragment_name.node)
                    .map_or(0, |fragment| {
                        self.count_fields(&fragment.node.selection_set.node, nesting + 1)
                    }),
            };
        }
        count
    }

    /// Whether the measure already passes a limit: walking further changes no answer.
    fn over(&self) -> bool {
        let (m, l) = (&self.measure, self.limits);
        m.depth > l.max_depth
            || m.cost > l.max_cost
            || m.aliases > l.max_aliases
            || m.introspection_lists > MAX_INTROSPECTION_LISTS
    }

    /// Walks a selection set of the type `parent` (unknown when the document names a field the
    /// schema lacks), at `depth`, resolved `times` times.
    fn selection_set(
        &mut self,
        selection_set: &SelectionSet,
        parent: Option<&str>,
        depth: usize,
        times: u64,
        nesting: usize,
        introspection_lists: usize,
    ) {
        if nesting > MAX_FRAGMENT_NESTING {
            return;
        }
        for selection in &selection_set.items {
            if self.over() {
                return;
            }
            match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    self.measure.depth = self.measure.depth.max(depth);
                    self.measure.cost = self.measure.cost.saturating_add(times);
                    if field.alias.is_some() {
                        self.measure.aliases += 1;
                    }
                    if field.selection_set.node.items.is_empty() {
                        continue;
                    }
                    let name = field.name.node.as_str();
                    let ty = parent
                        .and_then(|parent| declared_field(self.registry, parent, name))
                        .map(|field| field.ty.as_str());
                    // A connection's page size already counts its edges and nodes; the
                    // introspection types are answered from memory.
                    let multiplier = if name.starts_with("__")
                        || parent.is_some_and(|p| p.starts_with("__") || p.ends_with("Connection"))
                    {
                        1
                    } else {
                        self.multiplier(&field.arguments, ty)
                    };
                    let lists = introspection_lists
                        + usize::from(
                            parent.is_some_and(|p| p.starts_with("__"))
                                && INTROSPECTION_LISTS.contains(&name),
                        );
                    self.measure.introspection_lists = self.measure.introspection_lists.max(lists);
                    let named = ty.map(named_type);
                    self.selection_set(
                        &field.selection_set.node,
                        named,
                        depth + 1,
                        times.saturating_mul(multiplier),
                        nesting,
                        lists,
                    );
                }
                Selection::InlineFragment(fragment) => {
                    let on = fragment
                        .node
                        .type_condition
                        .as_ref()
                        .map(|condition| condition.node.on.node.as_str())
                        .or(parent);
                    self.selection_set(
                        &fragment.node.selection_set.node,
                        on,
                        depth,
                        times,
                        nesting + 1,
                        introspection_lists,
                    );
                }
                Selection::FragmentSpread(spread) => {
                    let document = self.document;
                    if let Some(fragment) = document.fragments.get(&spread.node.fragment_name.node)
                    {
                        let on = fragment.node.type_condition.node.on.node.as_str();
                        self.selection_set(
                            &fragment.node.selection_set.node,
                            Some(on),
                            depth,
                            times,
                            nesting + 1,
                            introspection_lists,
                        );
                    }
                }
            }
        }
    }

    /// How many times a field's children are resolved per resolution of the field.
    fn multiplier(
        &self,
        arguments: &[(Positioned<Name>, Positioned<Value>)],
        ty: Option<&str>,
    ) -> u64 {
        let argument = |wanted: &str| {
            arguments
                .iter()
                .find(|(name, _)| name.node.as_str() == wanted)
                .map(|(_, value)| self.resolve(&value.node))
        };
        for page in ["first", "last"] {
            if let Some(ConstValue::Number(n)) = argument(page) {
                return n.as_u64().unwrap_or(0).max(1);
            }
        }
        if let Some(ConstValue::List(ids)) = argument("ids") {
            return u64::try_from(ids.len()).unwrap_or(u64::MAX).max(1);
        }
        match ty {
            Some(ty) if named_type(ty).ends_with("Connection") => DEFAULT_PAGE_SIZE as u64,
            Some(ty) if ty.starts_with('[') => UNPAGED_LIST_ESTIMATE,
            _ => 1,
        }
    }

    /// A literal, or the value of a variable.
    fn resolve(&self, value: &Value) -> ConstValue {
        match value {
            Value::Variable(name) => self
                .variables
                .get(name)
                .or_else(|| self.defaults.get(name))
                .cloned()
                .unwrap_or_default(),
            other => other.clone().into_const().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remembered(limits: &Limits, query: &str) -> bool {
        limits.cached(query).is_some()
    }

    #[test]
    fn the_parsed_query_cache_keeps_the_texts_in_use_and_drops_the_oldest() {
        let limits = Limits::new(QueryLimits::default());
        let steady = "{ steady }";
        let remember = |query: &str| {
            let document = async_graphql::parser::parse_query(query).expect("a query");
            limits.remember(query, &document, 2);
        };
        remember(steady);
        remember("{ once }");
        for n in 0..PARSED_QUERIES.get() * 2 {
            remember(&format!("{{ field{n} }}"));
            // A client that keeps sending its query keeps it parsed.
            assert!(remembered(&limits, steady), "dropped after {n} other texts");
        }
        assert!(!remembered(&limits, "{ once }"));
        assert!(remembered(
            &limits,
            &format!("{{ field{} }}", PARSED_QUERIES.get() * 2 - 1)
        ));
        assert_eq!(
            limits
                .parsed
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .len(),
            PARSED_QUERIES.get()
        );
    }
}
