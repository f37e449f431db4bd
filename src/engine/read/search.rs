//! Amplify's `@searchable` queries (`search<Types>`), answered from the type's own nodes: every
//! node of the type is read from its type index (one Query per shard, paged), up to the
//! request's filter budget (`--max-filter-read-items`), and the filter, sort, page and
//! aggregates of OpenSearch's queries as Amplify's resolvers write them are applied to them.
//!
//! AppSync serves these queries from an OpenSearch domain that a Lambda function fills from
//! the table's stream. tablegraph keeps no second store: a search reads what the table holds
//! at that moment, so it is never behind a write, and it costs a read of the type. Past the
//! budget a search is refused (`LimitExceeded`, naming the flag), never answered from part of
//! the type. Full-text operators are OpenSearch's standard analyzer reduced to its core: text
//! is split into lowercase words at every character that is not a letter or a digit.
//!
//! Invariant: a search answers only nodes the caller may read; `total` and aggregates count
//! those alone.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::error::EngineError;
use crate::engine::rules::admits;
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::model::TypeDef;
use crate::store::{AttrValue, Item, RangeQuery, compare_values};

/// Buckets a `terms` aggregate answers at most, as OpenSearch's default `size`.
pub const TERMS_BUCKETS: usize = 10;

/// A search's filter: Amplify's `Searchable<Type>FilterInput`.
#[derive(Debug, Clone)]
pub enum SearchFilter {
    All(Vec<SearchFilter>),
    Any(Vec<SearchFilter>),
    Not(Box<SearchFilter>),
    Field { field: String, test: SearchTest },
}

/// One operator of a `Searchable<Scalar>FilterInput` on one field.
#[derive(Debug, Clone)]
pub enum SearchTest {
    Eq(AttrValue),
    Ne(AttrValue),
    Gt(AttrValue),
    Ge(AttrValue),
    Lt(AttrValue),
    Le(AttrValue),
    /// `range: [low, high]`, both included.
    Range(AttrValue, AttrValue),
    Exists(bool),
    /// `match` (and `multiMatch`): any word of the text is a word of the field.
    Match(String),
    /// `matchPhrase`: the text's words, in order, next to each other in the field.
    MatchPhrase(String),
    /// `matchPhrasePrefix`: the same, the last word a prefix of the field's word.
    MatchPhrasePrefix(String),
    /// `wildcard`: the whole value, `*` for any characters and `?` for one.
    Wildcard(String),
    /// `regexp`: the whole value matches the expression.
    Regexp(Arc<regex_lite::Regex>),
}

/// What an aggregate computes (`SearchableAggregateType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateKind {
    Terms,
    Avg,
    Min,
    Max,
    Sum,
    Cardinality,
}

/// One aggregate asked for: its name, what it computes and of which field.
#[derive(Debug, Clone)]
pub struct Aggregate {
    pub name: String,
    pub kind: AggregateKind,
    pub field: String,
}

/// An aggregate's answer: a number, or the most frequent values with how many nodes hold each.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateValue {
    Scalar(f64),
    Buckets(Vec<(String, usize)>),
}

/// A search as the client asked it.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    pub filter: Option<SearchFilter>,
    /// `(field, descending)` in order of precedence.
    pub sort: Vec<(String, bool)>,
    pub limit: usize,
    /// How many matching nodes come before the page.
    pub from: usize,
    pub aggregates: Vec<Aggregate>,
}

/// A search's answer: the page, how many nodes matched, where the next page starts, and the
/// aggregates over every match.
#[derive(Debug, Clone)]
pub struct SearchAnswer {
    pub items: Vec<Arc<Item>>,
    pub total: usize,
    /// The `from` of the next page, when there is one.
    pub next_from: Option<usize>,
    pub aggregates: Vec<(String, AggregateValue)>,
}

/// Answers `request` over the nodes of `type_def` the caller may read.
pub async fn search(
    scope: &RequestScope,
    type_def: &TypeDef,
    request: &SearchRequest,
) -> Result<SearchAnswer, EngineError> {
    let access = scope.read_access(&[type_def.name.as_str()]);
    let mut matched: Vec<Arc<Item>> = every_node(scope, type_def)
        .await?
        .into_iter()
        .filter(|item| admits(&access, item))
        .filter(|item| request.filter.as_ref().is_none_or(|f| f.matches(item)))
        .map(Arc::new)
        .collect();
    if !request.sort.is_empty() {
        matched.sort_by(|a, b| sorted(a, b, &request.sort));
    }
    let aggregates = request
        .aggregates
        .iter()
        .map(|aggregate| Ok((aggregate.name.clone(), aggregate.over(&matched)?)))
        .collect::<Result<Vec<_>, EngineError>>()?;
    let total = matched.len();
    let end = request.from.saturating_add(request.limit).min(total);
    let items = matched
        .get(request.from.min(total)..end)
        .unwrap_or_default()
        .to_vec();
    Ok(SearchAnswer {
        items,
        total,
        next_from: (end < total).then_some(end),
        aggregates,
    })
}

/// Every node of `type_def`, read from its type index: at most the request's filter budget,
/// past which the search is refused.
async fn every_node(scope: &RequestScope, type_def: &TypeDef) -> Result<Vec<Item>, EngineError> {
    let Some(list) = &type_def.list else {
        return Err(EngineError::BadUserInput(format!(
            "{} is searched through its list, which @model(queries:) leaves out",
            type_def.name
        )));
    };
    let budget = scope.filter_budget;
    let mut items = Vec::new();
    for shard in 0..list.shards {
        let partition = keys::list_partition(&type_def.name, shard);
        let read = scope
            .store
            .query_range(&RangeQuery {
                index: Some(list.slot),
                partition: &partition,
                lower: None,
                upper: None,
                filter: None,
                forward: true,
                limit: budget + 1 - items.len(),
                consistent: false,
            })
            .await
            .map_err(|error| EngineError::from_store(&error))?;
        items.extend(read);
        if items.len() > budget {
            return Err(EngineError::LimitExceeded(format!(
                "a search of {} reads every node of the type, and it has more than a search \
                 may read ({budget}, --max-filter-read-items)",
                type_def.name
            )));
        }
    }
    Ok(items)
}

/// The order of two nodes by `sort`: each field's values compared, a node without one last.
fn sorted(a: &Item, b: &Item, sort: &[(String, bool)]) -> Ordering {
    for (field, descending) in sort {
        let order = match (a.get(field), b.get(field)) {
            (Some(x), Some(y)) => {
                let order = compare(x, y).unwrap_or(Ordering::Equal);
                if *descending { order.reverse() } else { order }
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

/// Two values of one field compared as DynamoDB compares them, and booleans false first (a
/// sort orders them, where a filter only tells them equal or not).
fn compare(a: &AttrValue, b: &AttrValue) -> Option<Ordering> {
    match (a, b) {
        (AttrValue::Bool(x), AttrValue::Bool(y)) => Some(x.cmp(y)),
        _ => compare_values(a, b),
    }
}

/// The values a field holds: one, or each element of a list or set.
fn values_of(item: &Item, field: &str) -> Vec<AttrValue> {
    match item.get(field) {
        None | Some(AttrValue::Null) => Vec::new(),
        Some(AttrValue::L(values)) => values.clone(),
        Some(AttrValue::Ss(values)) => values.iter().cloned().map(AttrValue::S).collect(),
        Some(value) => vec![value.clone()],
    }
}

impl SearchFilter {
    pub fn matches(&self, item: &Item) -> bool {
        match self {
            SearchFilter::All(filters) => filters.iter().all(|f| f.matches(item)),
            SearchFilter::Any(filters) => filters.iter().any(|f| f.matches(item)),
            SearchFilter::Not(filter) => !filter.matches(item),
            SearchFilter::Field { field, test } => test.holds(&values_of(item, field)),
        }
    }
}

impl SearchTest {
    /// Whether a field holding `values` passes: any of them, as OpenSearch tests a list.
    fn holds(&self, values: &[AttrValue]) -> bool {
        match self {
            SearchTest::Exists(exists) => values.is_empty() != *exists,
            SearchTest::Ne(value) => !values.iter().any(|v| v == value),
            test => values.iter().any(|value| test.holds_for(value)),
        }
    }

    fn holds_for(&self, value: &AttrValue) -> bool {
        let order = |than: &AttrValue| compare(value, than);
        match self {
            SearchTest::Eq(than) => value == than || order(than) == Some(Ordering::Equal),
            SearchTest::Gt(than) => order(than) == Some(Ordering::Greater),
            SearchTest::Ge(than) => {
                matches!(order(than), Some(Ordering::Greater | Ordering::Equal))
            }
            SearchTest::Lt(than) => order(than) == Some(Ordering::Less),
            SearchTest::Le(than) => matches!(order(than), Some(Ordering::Less | Ordering::Equal)),
            SearchTest::Range(low, high) => {
                matches!(order(low), Some(Ordering::Greater | Ordering::Equal))
                    && matches!(order(high), Some(Ordering::Less | Ordering::Equal))
            }
            SearchTest::Match(text) => {
                let words = words(&text_of(value));
                self::words(text).iter().any(|word| words.contains(word))
            }
            SearchTest::MatchPhrase(text) => {
                phrase_at(&words(&text_of(value)), &words(text), false)
            }
            SearchTest::MatchPhrasePrefix(text) => {
                phrase_at(&words(&text_of(value)), &words(text), true)
            }
            SearchTest::Wildcard(pattern) => wildcard(pattern, &text_of(value)),
            SearchTest::Regexp(expression) => expression.is_match(&text_of(value)),
            SearchTest::Exists(_) | SearchTest::Ne(_) => unreachable!("tested on every value"),
        }
    }
}

fn text_of(value: &AttrValue) -> String {
    match value {
        AttrValue::S(text) | AttrValue::N(text) => text.clone(),
        AttrValue::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// Text as the standard analyzer indexes it: lowercase words of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `phrase` appears in `words` as consecutive words (its last one a prefix, with
/// `prefix`). An empty phrase matches nothing, as OpenSearch's.
fn phrase_at(words: &[String], phrase: &[String], prefix: bool) -> bool {
    if phrase.is_empty() || phrase.len() > words.len() {
        return false;
    }
    words.windows(phrase.len()).any(|window| {
        window
            .iter()
            .zip(phrase)
            .enumerate()
            .all(|(at, (word, asked))| {
                if prefix && at + 1 == phrase.len() {
                    word.starts_with(asked.as_str())
                } else {
                    word == asked
                }
            })
    })
}

/// Whether `text` is `pattern`, `*` standing for any characters and `?` for one.
fn wildcard(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // The classic two-pointer walk, going back to the last `*` on a mismatch.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

impl Aggregate {
    /// The aggregate over the values `field` holds in `items`.
    fn over(&self, items: &[Arc<Item>]) -> Result<AggregateValue, EngineError> {
        let values: Vec<AttrValue> = items
            .iter()
            .flat_map(|item| values_of(item, &self.field))
            .collect();
        if self.kind == AggregateKind::Terms {
            return Ok(AggregateValue::Buckets(terms(&values)));
        }
        if self.kind == AggregateKind::Cardinality {
            let distinct: std::collections::BTreeSet<String> = values.iter().map(text_of).collect();
            return Ok(AggregateValue::Scalar(distinct.len() as f64));
        }
        let numbers = values
            .iter()
            .map(|value| match value {
                AttrValue::N(n) => n.parse::<f64>().ok(),
                _ => None,
            })
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| {
                EngineError::BadUserInput(format!(
                    "aggregate {}: {:?} works on a field of numbers, and {} is not one",
                    self.name, self.kind, self.field
                ))
            })?;
        let sum: f64 = numbers.iter().sum();
        let value = match self.kind {
            AggregateKind::Sum => sum,
            AggregateKind::Avg if numbers.is_empty() => 0.0,
            AggregateKind::Avg => sum / numbers.len() as f64,
            AggregateKind::Min => numbers.iter().copied().fold(f64::INFINITY, f64::min),
            AggregateKind::Max => numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            AggregateKind::Terms | AggregateKind::Cardinality => unreachable!("answered above"),
        };
        // OpenSearch answers no value (null) where we would answer an infinity.
        Ok(AggregateValue::Scalar(if value.is_finite() {
            value
        } else {
            0.0
        }))
    }
}

/// The most frequent values, most first, ties by value; at most [`TERMS_BUCKETS`].
fn terms(values: &[AttrValue]) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for value in values {
        *counts.entry(text_of(value)).or_default() += 1;
    }
    let mut buckets: Vec<(String, usize)> = counts.into_iter().collect();
    buckets.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    buckets.truncate(TERMS_BUCKETS);
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, AttrValue)]) -> Item {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect()
    }

    fn field(name: &str, test: SearchTest) -> SearchFilter {
        SearchFilter::Field {
            field: name.to_owned(),
            test,
        }
    }

    #[test]
    fn full_text_operators_match_words_as_the_standard_analyzer_splits_them() {
        let book = item(&[(
            "title",
            AttrValue::S("The Rust Programming Language, 2nd ed.".into()),
        )]);
        let holds = |test: SearchTest| field("title", test).matches(&book);
        assert!(holds(SearchTest::Match("rust cobol".into())));
        assert!(!holds(SearchTest::Match("cobol".into())));
        assert!(holds(SearchTest::MatchPhrase(
            "programming LANGUAGE".into()
        )));
        assert!(!holds(SearchTest::MatchPhrase("rust language".into())));
        assert!(holds(SearchTest::MatchPhrasePrefix("rust prog".into())));
        assert!(!holds(SearchTest::MatchPhrasePrefix("prog rust".into())));
        assert!(holds(SearchTest::Wildcard("The*ed.".into())));
        assert!(holds(SearchTest::Wildcard("The R?st*".into())));
        assert!(!holds(SearchTest::Wildcard("the*".into())));
        let expression = regex_lite::Regex::new("^(?:The .* Language.*)$").expect("valid");
        assert!(holds(SearchTest::Regexp(Arc::new(expression))));
    }

    #[test]
    fn comparisons_take_numbers_as_numbers_and_a_list_by_any_element() {
        let book = item(&[
            ("price", AttrValue::N("9".into())),
            (
                "tags",
                AttrValue::L(vec![AttrValue::S("a".into()), AttrValue::S("b".into())]),
            ),
        ]);
        let price = |test: SearchTest| field("price", test).matches(&book);
        assert!(price(SearchTest::Lt(AttrValue::N("10".into()))));
        assert!(price(SearchTest::Range(
            AttrValue::N("9".into()),
            AttrValue::N("9.5".into())
        )));
        assert!(!price(SearchTest::Gt(AttrValue::N("10".into()))));
        assert!(field("tags", SearchTest::Eq(AttrValue::S("b".into()))).matches(&book));
        assert!(!field("tags", SearchTest::Ne(AttrValue::S("b".into()))).matches(&book));
        assert!(field("missing", SearchTest::Exists(false)).matches(&book));
        assert!(!field("missing", SearchTest::Exists(true)).matches(&book));
    }

    #[test]
    fn aggregates_count_buckets_and_refuse_numbers_of_text() {
        let items: Vec<Arc<Item>> = ["x", "y", "x", "z", "x", "y"]
            .iter()
            .enumerate()
            .map(|(n, genre)| {
                Arc::new(item(&[
                    ("genre", AttrValue::S((*genre).into())),
                    ("price", AttrValue::N(n.to_string())),
                ]))
            })
            .collect();
        let of = |kind, field: &str| {
            Aggregate {
                name: "a".into(),
                kind,
                field: field.into(),
            }
            .over(&items)
        };
        assert_eq!(
            of(AggregateKind::Terms, "genre").ok(),
            Some(AggregateValue::Buckets(vec![
                ("x".into(), 3),
                ("y".into(), 2),
                ("z".into(), 1)
            ]))
        );
        assert_eq!(
            of(AggregateKind::Sum, "price").ok(),
            Some(AggregateValue::Scalar(15.0))
        );
        assert_eq!(
            of(AggregateKind::Avg, "price").ok(),
            Some(AggregateValue::Scalar(2.5))
        );
        assert_eq!(
            of(AggregateKind::Max, "price").ok(),
            Some(AggregateValue::Scalar(5.0))
        );
        assert_eq!(
            of(AggregateKind::Cardinality, "genre").ok(),
            Some(AggregateValue::Scalar(3.0))
        );
        assert!(matches!(
            of(AggregateKind::Min, "genre"),
            Err(EngineError::BadUserInput(_))
        ));
    }
}
