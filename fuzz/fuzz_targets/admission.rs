//! Arbitrary request texts through the admission every transport calls (`Api::admit`), as a
//! query, wrapped in brackets nested past the limit, and as an automatic persisted query (sent
//! with its hash, then by the hash alone).
//!
//! Properties:
//! - the admission never panics nor overflows the stack, however deep the text nests (the
//!   parser never sees a text over the bracket limit);
//! - a text wrapped in more than `MAX_NESTING` brackets is refused with the nesting limit's
//!   error, before it is parsed;
//! - a query sent with its hash is admitted or refused exactly as it is without one;
//! - the admission alone keeps nothing: a hash whose request has not run is
//!   `PersistedQueryNotFound`.

#![no_main]

use std::sync::{Arc, LazyLock};

use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};
use tablegraph::changes::EventHub;
use tablegraph::graphql::{Api, MAX_NESTING, SchemaOptions};
use tablegraph::model::Model;

/// The API of the repository's own schema, built once.
static API: LazyLock<Api> = LazyLock::new(|| {
    let source = include_str!("../../schema.graphql");
    let model = Model::parse("schema.graphql", source).expect("the repository's schema");
    Api::build(Arc::new(model), &SchemaOptions::default(), EventHub::default())
        .expect("the repository's API")
});

fn with_hash(query: &str, hash_of: &str) -> async_graphql::Request {
    let hash: String = Sha256::digest(hash_of.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut request = async_graphql::Request::new(query);
    let extensions = serde_json::json!({ "version": 1, "sha256Hash": hash });
    request.extensions.insert(
        "persistedQuery".to_owned(),
        async_graphql::Value::from_json(extensions).expect("a value"),
    );
    request
}

/// The outcome of admitting `request`: the error's message, or `None` when admitted.
fn admitted(request: async_graphql::Request) -> Option<String> {
    API.admit(request).err().map(|error| error.message)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let depth = MAX_NESTING + 1 + text.len() % 4_000;
    let nested = format!(
        "{{ farm(id: {}{text}{}) {{ id }} }}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let refused = admitted(async_graphql::Request::new(nested.as_str()));
    assert!(
        refused.as_deref().is_some_and(|message| message.contains("nests its brackets")),
        "a text nested {depth} deep was not refused for its nesting: {refused:?}"
    );
    for document in [text, nested.as_str()] {
        let plain = admitted(async_graphql::Request::new(document));
        let registered = admitted(with_hash(document, document));
        assert_eq!(
            plain, registered,
            "a query sent with its hash was admitted otherwise than without"
        );
        let by_hash = admitted(with_hash("", document));
        assert_eq!(by_hash.as_deref(), Some("PersistedQueryNotFound"));
    }
});
