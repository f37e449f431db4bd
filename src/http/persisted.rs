//! Automatic persisted queries, Apollo's protocol (APQ): a request may send
//! `extensions.persistedQuery` `{ "version": 1, "sha256Hash": "<hex>" }` in place of its query.
//! A hash the server holds runs its query; one it does not is answered `PersistedQueryNotFound`
//! (`extensions.code: PERSISTED_QUERY_NOT_FOUND`), and the client sends the query with its hash
//! once, which the server checks and keeps. A `GET /graphql?extensions=…` with the hash alone is
//! a URL a CDN can cache (answers to a caller with credentials say `Cache-Control: private`).
//!
//! The queries are kept parsed, in a bounded LRU (`--max-persisted-queries`, 0 turns APQ off),
//! so a repeated page skips parsing; validation still runs on each request (async-graphql keeps
//! no validated form). async-graphql's own `ApolloPersistedQueries` extension is not used: any
//! extension on the schema costs every field of every request (the API's module doc says
//! where that was measured), and it keeps the text, not the parsed document.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use async_graphql::parser::types::ExecutableDocument;
use sha2::{Digest, Sha256};

/// Apollo's error message and code for a hash the server does not hold.
pub(super) const NOT_FOUND: &str = "PersistedQueryNotFound";
const NOT_FOUND_CODE: &str = "PERSISTED_QUERY_NOT_FOUND";

/// The queries known by their hash, parsed.
pub(super) struct PersistedQueries {
    kept: Option<Mutex<lru::LruCache<[u8; 32], Arc<Kept>>>>,
}

struct Kept {
    query: String,
    document: ExecutableDocument,
}

impl PersistedQueries {
    /// At most `most` queries; none (APQ off) for 0.
    pub(super) fn new(most: usize) -> PersistedQueries {
        PersistedQueries {
            kept: NonZeroUsize::new(most).map(|most| Mutex::new(lru::LruCache::new(most))),
        }
    }

    /// Applies `extensions.persistedQuery` to `request`: the query of a known hash filled in,
    /// or a query sent with its hash checked and kept. A request without the extension is left
    /// as it is. The error is the GraphQL error to answer.
    pub(super) fn apply(
        &self,
        request: &mut async_graphql::Request,
    ) -> Result<(), async_graphql::ServerError> {
        let Some(persisted) = request.extensions.get("persistedQuery") else {
            return Ok(());
        };
        let Some(queries) = &self.kept else {
            return Err(error(
                "PersistedQueryNotSupported",
                "PERSISTED_QUERY_NOT_SUPPORTED",
            ));
        };
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
        let lock = || {
            queries
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let mut kept = lock();
        if request.query.is_empty() {
            let Some(found) = kept.get(&hash).cloned() else {
                return Err(error(NOT_FOUND, NOT_FOUND_CODE));
            };
            drop(kept);
            request.query = found.query.clone();
            request.set_parsed_query(found.document.clone());
            return Ok(());
        }
        let sent: [u8; 32] = Sha256::digest(request.query.as_bytes()).into();
        if sent != hash {
            return Err(error("provided sha does not match query", "BAD_REQUEST"));
        }
        // Held already: parsed already.
        if let Some(found) = kept.get(&hash).cloned() {
            drop(kept);
            request.set_parsed_query(found.document.clone());
            return Ok(());
        }
        drop(kept);
        // Kept once it parses: a query that does not is answered as any other.
        let Ok(document) = request.parsed_query().cloned() else {
            return Ok(());
        };
        let query = request.query.clone();
        lock().put(hash, Arc::new(Kept { query, document }));
        Ok(())
    }
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
fn error(message: &str, code: &str) -> async_graphql::ServerError {
    let mut error = async_graphql::ServerError::new(message, None);
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

    #[test]
    fn a_hash_is_found_once_its_query_was_sent_and_forgotten_past_the_bound() {
        let queries = PersistedQueries::new(1);
        let (first, second) = ("{ __typename }", "query Q { __typename }");
        let unknown = queries.apply(&mut with_hash("", &hex(first)));
        assert_eq!(unknown.expect_err("not held").message, NOT_FOUND);
        queries
            .apply(&mut with_hash(first, &hex(first)))
            .expect("kept");
        let mut by_hash = with_hash("", &hex(first));
        queries.apply(&mut by_hash).expect("found");
        assert_eq!(by_hash.query, first);
        assert!(by_hash.parsed_query().is_ok());
        // One more query: the first is forgotten.
        queries
            .apply(&mut with_hash(second, &hex(second)))
            .expect("kept");
        let forgotten = queries.apply(&mut with_hash("", &hex(first)));
        assert_eq!(forgotten.expect_err("forgotten").message, NOT_FOUND);
        let wrong = queries.apply(&mut with_hash(first, &hex(second)));
        assert_eq!(
            wrong.expect_err("mismatch").message,
            "provided sha does not match query"
        );
        let short = queries.apply(&mut with_hash("", "abc"));
        assert!(short.expect_err("short").message.contains("64 hexadecimal"));
        let off = PersistedQueries::new(0).apply(&mut with_hash("", &hex(first)));
        assert_eq!(off.expect_err("off").message, "PersistedQueryNotSupported");
    }
}
