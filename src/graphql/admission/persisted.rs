//! Automatic persisted queries, Apollo's protocol (APQ): a request may send
//! `extensions.persistedQuery` `{ "version": 1, "sha256Hash": "<hex>" }` in place of its query.
//! A hash the server holds runs its query; one it does not is answered `PersistedQueryNotFound`
//! (`extensions.code: PERSISTED_QUERY_NOT_FOUND`), and the client sends the query with its hash
//! once, which the server checks and keeps. A `GET /graphql?extensions=…` with the hash alone is
//! a URL a CDN can cache (answers to a caller with credentials say `Cache-Control: private`).
//!
//! A hash stands for its query in the admission of a request (`admission`), and nothing else
//! changes: the request still brings its credentials, and its document still meets the limits
//! on shape and cost with its variables. A query is kept only once it has passed everything a
//! request passes (the text limits, parsing, the shape and cost limits, and async-graphql's
//! validation, which runs as the request runs), so the store never holds a document the
//! server would refuse.
//!
//! The store is bounded by count (`--max-persisted-queries`, 0 turns APQ off) and by bytes
//! (`--max-persisted-query-bytes`), least recently used first out. A query's bytes are its text
//! and, when its parsed tree is small ([`CACHED_TREE_BYTES`] by [`tree_bytes`]'s estimate), the
//! tree, which is then kept so that a repeated page skips parsing; a larger one is kept as text
//! and parsed again on each use (after the text limits, as any text is).
//!
//! async-graphql's own `ApolloPersistedQueries` extension is not used: any extension on the
//! schema costs every field of every request (the API's module doc says where that was
//! measured), it keeps the text, not the parsed document, and it keeps a query before the
//! limits have looked at it.

use std::sync::{Arc, Mutex};

use async_graphql::ServerError;
use async_graphql::parser::types::ExecutableDocument;
use sha2::{Digest, Sha256};

use super::limits::{CACHED_TREE_BYTES, tree_bytes};

/// Apollo's error message and code for a hash the server does not hold.
pub const NOT_FOUND: &str = "PersistedQueryNotFound";
const NOT_FOUND_CODE: &str = "PERSISTED_QUERY_NOT_FOUND";

/// How many persisted queries are kept, and how many bytes they may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistedSettings {
    /// `--max-persisted-queries`; 0 turns APQ off.
    pub most: usize,
    /// `--max-persisted-query-bytes`.
    pub most_bytes: usize,
}

impl Default for PersistedSettings {
    fn default() -> Self {
        PersistedSettings {
            most: 1000,
            most_bytes: 64 * 1024 * 1024,
        }
    }
}

/// The queries known by their hash.
pub(in crate::graphql) struct PersistedQueries {
    settings: PersistedSettings,
    kept: Mutex<Kept>,
}

/// The store itself: the queries by hash, least recently used first out, and their bytes.
struct Kept {
    queries: lru::LruCache<[u8; 32], Arc<Query>>,
    bytes: usize,
}

/// One query kept: its text, its document when the text is short, and what both take.
pub(in crate::graphql) struct Query {
    pub(in crate::graphql) text: String,
    pub(in crate::graphql) document: Option<ExecutableDocument>,
    bytes: usize,
}

/// What a request's `persistedQuery` asks of the admission.
pub(in crate::graphql) enum Lookup {
    /// The request has no `persistedQuery`: its query is its own.
    Absent,
    /// Its hash is held: this query stands for it.
    Found(Arc<Query>),
    /// It sent its query with the hash that matches it: keep it once the request has run.
    Register([u8; 32]),
}

impl PersistedQueries {
    pub(in crate::graphql) fn new(settings: PersistedSettings) -> PersistedQueries {
        PersistedQueries {
            settings,
            kept: Mutex::new(Kept {
                queries: lru::LruCache::unbounded(),
                bytes: 0,
            }),
        }
    }

    /// What `request`'s `extensions.persistedQuery` asks; the error is the request error to
    /// answer. Nothing is parsed here.
    pub(in crate::graphql) fn look_up(
        &self,
        request: &async_graphql::Request,
    ) -> Result<Lookup, ServerError> {
        let Some(persisted) = request.extensions.get("persistedQuery") else {
            return Ok(Lookup::Absent);
        };
        if self.settings.most == 0 {
            return Err(error(
                "PersistedQueryNotSupported",
                "PERSISTED_QUERY_NOT_SUPPORTED",
            ));
        }
        let persisted = persisted.clone().into_json().unwrap_or_default();
        if persisted.get("version").and_then(serde_json::Value::as_i64) != Some(1) {
            return Err(error(
                "Unsupported persisted query version: send version 1",
                "BAD_REQUEST",
            ));
        }
        let hash = persisted
            .get("sha256Hash")
            .and_then(serde_json::Value::as_str)
            .and_then(hash_of)
            .ok_or_else(|| {
                error(
                    "persistedQuery.sha256Hash must be a SHA-256 hash in 64 hexadecimal digits",
                    "BAD_REQUEST",
                )
            })?;
        if request.query.is_empty() {
            return match self.lock().queries.get(&hash).cloned() {
                Some(found) => Ok(Lookup::Found(found)),
                None => Err(error(NOT_FOUND, NOT_FOUND_CODE)),
            };
        }
        let sent: [u8; 32] = Sha256::digest(request.query.as_bytes()).into();
        if sent != hash {
            return Err(error("provided sha does not match query", "BAD_REQUEST"));
        }
        match self.lock().queries.get(&hash).cloned() {
            Some(found) => Ok(Lookup::Found(found)),
            None => Ok(Lookup::Register(hash)),
        }
    }

    /// Keeps `text` by `hash`, with its `document` when [`keeps_parsed`] says so; `tokens` is
    /// how many the text has. The least recently used queries leave while the store is over
    /// either bound; a query larger than the whole store is not kept.
    pub(in crate::graphql) fn keep(
        &self,
        hash: [u8; 32],
        text: String,
        document: Option<ExecutableDocument>,
        tokens: usize,
    ) {
        let tree = match document {
            Some(_) => tree_bytes(text.len(), tokens),
            None => 0,
        };
        let bytes = text.len() + tree;
        if bytes > self.settings.most_bytes {
            return;
        }
        let query = Arc::new(Query {
            text,
            document,
            bytes,
        });
        let mut kept = self.lock();
        if let Some(replaced) = kept.queries.put(hash, query) {
            kept.bytes -= replaced.bytes;
        }
        kept.bytes += bytes;
        while kept.queries.len() > self.settings.most || kept.bytes > self.settings.most_bytes {
            let Some((_, left)) = kept.queries.pop_lru() else {
                break;
            };
            kept.bytes -= left.bytes;
        }
    }

    /// How many queries are kept, and their bytes.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.queries.len(), kept.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether a text of `text_bytes` bytes and `tokens` tokens is kept parsed: when its tree is
/// small by [`tree_bytes`]'s estimate.
pub(in crate::graphql) fn keeps_parsed(text_bytes: usize, tokens: usize) -> bool {
    tree_bytes(text_bytes, tokens) <= CACHED_TREE_BYTES
}

/// The 32 bytes of a hash in hexadecimal.
fn hash_of(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut hash = [0u8; 32];
    for (i, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(hash)
}

/// A request error as Apollo's clients read it: the message, and its code in `extensions`.
fn error(message: &str, code: &str) -> ServerError {
    let mut error = ServerError::new(message, None);
    let mut extensions = async_graphql::ErrorExtensionValues::default();
    extensions.set("code", code);
    error.extensions = Some(extensions);
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_hash(query: &str, hash: &str) -> async_graphql::Request {
        let mut request = async_graphql::Request::new(query);
        request.extensions.insert(
            "persistedQuery".to_owned(),
            async_graphql::Value::from_json(serde_json::json!({
                "version": 1, "sha256Hash": hash
            }))
            .expect("a value"),
        );
        request
    }

    fn hex(query: &str) -> String {
        Sha256::digest(query.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn keep(queries: &PersistedQueries, query: &str) {
        let Ok(Lookup::Register(hash)) = queries.look_up(&with_hash(query, &hex(query))) else {
            panic!("a query sent with its hash is registered");
        };
        let document = async_graphql::parser::parse_query(query).expect("a document");
        let parsed = keeps_parsed(query.len(), 4).then_some(document);
        queries.keep(hash, query.to_owned(), parsed, 4);
    }

    fn settings(most: usize, most_bytes: usize) -> PersistedSettings {
        PersistedSettings { most, most_bytes }
    }

    #[test]
    fn a_hash_is_found_once_its_query_was_kept_and_forgotten_past_the_count() {
        let queries = PersistedQueries::new(settings(1, 1 << 20));
        let (first, second) = ("{ __typename }", "query Q { __typename }");
        let unknown = queries.look_up(&with_hash("", &hex(first)));
        assert_eq!(unknown.err().expect("not held").message, NOT_FOUND);
        keep(&queries, first);
        let Ok(Lookup::Found(found)) = queries.look_up(&with_hash("", &hex(first))) else {
            panic!("found by its hash");
        };
        assert_eq!(found.text, first);
        assert!(found.document.is_some(), "a small tree is kept parsed");
        // One more query: the first is forgotten.
        keep(&queries, second);
        let forgotten = queries.look_up(&with_hash("", &hex(first)));
        assert_eq!(forgotten.err().expect("forgotten").message, NOT_FOUND);
        let wrong = queries.look_up(&with_hash(first, &hex(second)));
        assert_eq!(
            wrong.err().expect("mismatch").message,
            "provided sha does not match query"
        );
        let short = queries.look_up(&with_hash("", "abc"));
        assert!(
            short
                .err()
                .expect("short")
                .message
                .contains("64 hexadecimal")
        );
        let off = PersistedQueries::new(settings(0, 1 << 20)).look_up(&with_hash("", &hex(first)));
        assert_eq!(
            off.err().expect("off").message,
            "PersistedQueryNotSupported"
        );
        let absent = queries.look_up(&async_graphql::Request::new(first));
        assert!(matches!(absent, Ok(Lookup::Absent)));
    }

    #[test]
    fn the_store_keeps_its_bytes_within_the_bound_and_long_texts_unparsed() {
        let long = |n: usize| format!("{{ __typename }} # {}{n}", "x".repeat(100_000));
        let queries = PersistedQueries::new(settings(1000, 250_000));
        for n in 0..10 {
            keep(&queries, &long(n));
        }
        let (count, bytes) = queries.held();
        assert_eq!(count, 2, "two texts of 100 KB fit in 250 KB");
        assert!(bytes <= 250_000, "{bytes} bytes held");
        let Ok(Lookup::Found(found)) = queries.look_up(&with_hash("", &hex(&long(9)))) else {
            panic!("the last one kept is found");
        };
        assert!(found.document.is_none(), "a large tree is kept as text");
        // A query larger than the whole store is not kept, and evicts nothing.
        let small = PersistedQueries::new(settings(1000, 1_000));
        keep(&small, &long(0));
        assert_eq!(small.held(), (0, 0));
        // A short text counts its tree too.
        keep(&queries, "{ __typename }");
        let (_, with_short) = queries.held();
        assert!(with_short > bytes, "{with_short} > {bytes}");
    }
}
