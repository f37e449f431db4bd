//! Arbitrary client strings into `Cursor::decode_for`, and cursors made of arbitrary parts.
//!
//! Properties:
//! - decoding never panics, whatever the string and the connection;
//! - a string the server's key did not sign is refused as `Malformed`, for each connection tried,
//!   also after a rotation;
//! - a cursor made of any connection (without a line break) and any sort key, signed with the
//!   server's key, decodes to itself for its connection exactly when its sort key is at most
//!   `MAX_SORT_KEY_BYTES` and ends in a valid id (the whole cursor is then always within
//!   `Cursor::max_encoded_len(connection)`, which is checked too), and decodes alike after a
//!   rotation (the server's key named as the previous one); a cursor that decodes is
//!   `Malformed` under another key and `ForeignConnection` for another connection, the same
//!   field under the shortest parent included when its own parent is within a partition key's
//!   bytes (what the length bound is for); one that does not is `Malformed` for another
//!   connection too (only a well-formed cursor is called foreign).
//!
//! Cursors carry a MAC, so no random string reaches the success path; the target gets there by
//! signing a cursor made of the input: the text up to its first line break is the connection,
//! the rest the sort key.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tablegraph::keys::{
    Cursor, CursorError, CursorKeys, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES,
    id_from_slot_sort_key,
};

/// A connection name of the shape tablegraph uses (`<Type>.<field>:<parent id>`).
const FIXED_CONNECTION: &str = "Farm.cows:0190";

fuzz_target!(|data: &[u8]| {
    // Cursors reach the server as GraphQL strings, which are always UTF-8.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let keys = CursorKeys::from_secrets("the server's key", None);
    let rotated = CursorKeys::from_secrets("the next key", Some("the server's key"));

    // The text as a client sends it.
    let (connection, sort_key) = text.split_once('\n').unwrap_or((text, ""));
    for asked in [FIXED_CONNECTION, "", connection] {
        for keys in [&keys, &rotated] {
            assert_eq!(
                Cursor::decode_for(text, asked, keys),
                Err(CursorError::Malformed),
                "{text:?} was not signed, yet decoding it for {asked:?} did not refuse it as malformed"
            );
        }
    }

    // The text's parts, signed as a page would sign them.
    let cursor = Cursor {
        connection: connection.to_owned(),
        sort_key: sort_key.to_owned(),
    };
    let encoded = cursor.encode(&keys);
    let issuable =
        sort_key.len() <= MAX_SORT_KEY_BYTES && id_from_slot_sort_key(sort_key).is_some();
    if sort_key.len() <= MAX_SORT_KEY_BYTES {
        assert!(
            encoded.len() <= Cursor::max_encoded_len(connection),
            "{encoded:?} is longer than its own connection's bound"
        );
    }
    let other = format!("{connection}#other");
    let decoded = Cursor::decode_for(&encoded, connection, &keys);
    assert_eq!(
        Cursor::decode_for(&encoded, connection, &rotated),
        decoded,
        "{encoded:?} is read otherwise after a rotation"
    );
    match decoded {
        Ok(decoded) => {
            assert!(
                issuable,
                "{cursor:?} is no cursor a page issues, yet it decoded"
            );
            assert_eq!(decoded, cursor, "{encoded:?} decoded to another cursor");
            let other_keys = CursorKeys::from_secrets("another key", None);
            assert_eq!(
                Cursor::decode_for(&encoded, connection, &other_keys),
                Err(CursorError::Malformed),
                "{encoded:?} accepted under a key that did not sign it"
            );
            assert_eq!(
                Cursor::decode_for(&encoded, &other, &keys),
                Err(CursorError::ForeignConnection),
                "{encoded:?} accepted by {other:?}"
            );
            // The same field under the shortest parent (`<Type>.<field>:`), where a page's
            // parent is at most a partition key: its length bound holds the cursor.
            if let Some((field, parent)) = connection.split_once(':')
                && !parent.is_empty()
                && parent.len() <= MAX_PARTITION_KEY_BYTES
            {
                let shortest = format!("{field}:");
                assert_eq!(
                    Cursor::decode_for(&encoded, &shortest, &keys),
                    Err(CursorError::ForeignConnection),
                    "{encoded:?} not known as another parent's by {shortest:?}"
                );
            }
        }
        Err(CursorError::Malformed) => {
            assert!(!issuable, "{cursor:?} was refused as malformed");
            assert_eq!(
                Cursor::decode_for(&encoded, &other, &keys),
                Err(CursorError::Malformed),
                "{encoded:?} is malformed, yet {other:?} called it foreign"
            );
        }
        Err(CursorError::ForeignConnection) => {
            panic!("{encoded:?} is foreign to its own connection {connection:?}")
        }
    }
});
