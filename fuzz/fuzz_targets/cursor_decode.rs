//! Arbitrary client strings into `Cursor::decode_for`.
//!
//! Properties:
//! - decoding never panics, whatever the string and the connection;
//! - a decoded cursor belongs to the connection it was decoded for, and its sort key is one a
//!   page could have issued (at most `MAX_SORT_KEY_BYTES`, ending in a valid id);
//! - encoding a decoded cursor and decoding that again gives the same cursor;
//! - a cursor is refused by every other connection, as `ForeignConnection`.
//!
//! A random string almost never names the connection it is decoded for, so besides a fixed
//! connection the target also decodes for the connection the string itself claims (found here
//! with a separate base64 decoder); that reaches the success path.

#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use tablegraph::keys::{Cursor, CursorError, MAX_SORT_KEY_BYTES, id_from_slot_sort_key};

/// A connection name of the shape tablegraph uses (`<Type>.<field>:<parent id>`).
const FIXED_CONNECTION: &str = "Farm.cows:0190";

fuzz_target!(|data: &[u8]| {
    // Cursors reach the server as GraphQL strings, which are always UTF-8.
    let Ok(encoded) = std::str::from_utf8(data) else {
        return;
    };

    let claimed = claimed_connection(encoded);
    let mut connections = vec![FIXED_CONNECTION.to_owned(), String::new()];
    if let Some(claimed) = &claimed {
        connections.push(claimed.clone());
        // A connection that differs from the claimed one only by a suffix.
        connections.push(format!("{claimed}0"));
    }

    let mut accepted_by = None;
    for connection in &connections {
        match Cursor::decode_for(encoded, connection) {
            Ok(cursor) => {
                check_decoded(&cursor, connection);
                assert_eq!(
                    claimed.as_deref(),
                    Some(connection.as_str()),
                    "{encoded:?} was accepted by {connection:?} but claims another connection"
                );
                if let Some(first) = &accepted_by {
                    assert_eq!(first, &cursor, "{encoded:?} decoded differently");
                }
                accepted_by = Some(cursor);
            }
            Err(CursorError::ForeignConnection) => {
                // Only a well-formed cursor is called foreign: decoding it for the connection it
                // names must succeed.
                let claimed = claimed
                    .as_deref()
                    .unwrap_or_else(|| panic!("{encoded:?} is foreign but names no connection"));
                assert_ne!(
                    claimed, connection,
                    "{encoded:?} is foreign to its own connection"
                );
                assert!(
                    Cursor::decode_for(encoded, claimed).is_ok(),
                    "{encoded:?} is foreign to {connection:?} but malformed for {claimed:?}"
                );
            }
            Err(CursorError::Malformed) => {
                // Well-formedness does not depend on the connection asked for.
                if let Some(claimed) = &claimed {
                    assert!(
                        Cursor::decode_for(encoded, claimed).is_err(),
                        "{encoded:?} is malformed for {connection:?} but accepted by {claimed:?}"
                    );
                }
            }
        }
    }
});

/// What every cursor `decode_for(_, connection)` returns must satisfy.
fn check_decoded(cursor: &Cursor, connection: &str) {
    assert_eq!(cursor.connection, connection);
    assert!(
        cursor.sort_key.len() <= MAX_SORT_KEY_BYTES,
        "{cursor:?}: sort key over {MAX_SORT_KEY_BYTES} bytes"
    );
    assert!(
        id_from_slot_sort_key(&cursor.sort_key).is_some(),
        "{cursor:?}: sort key does not end in a valid id"
    );

    let reencoded = cursor.encode();
    assert_eq!(
        Cursor::decode_for(&reencoded, connection).as_ref(),
        Ok(cursor),
        "re-encoded as {reencoded:?}"
    );
    let other = format!("{connection}#other");
    assert_eq!(
        Cursor::decode_for(&reencoded, &other),
        Err(CursorError::ForeignConnection),
        "{reencoded:?} accepted by {other:?}"
    );
}

/// The connection an encoded cursor names, read without `decode_for`: base64 (URL-safe, no
/// padding) of `c1:<connection>\n<sort key>`.
fn claimed_connection(encoded: &str) -> Option<String> {
    let bytes = URL_SAFE_NO_PAD.decode(encoded).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let body = text.strip_prefix("c1:")?;
    let (connection, _) = body.split_once('\n')?;
    Some(connection.to_owned())
}
