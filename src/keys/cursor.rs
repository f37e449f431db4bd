//! Relay cursors: opaque to clients, bound to the one connection that issued them.
//!
//! A cursor carries the name of its connection (for example `Farm.cows:<farm id>`) and the slot
//! sort key of the last node a page showed. Decoding checks the binding, so a cursor from
//! another connection or another parent is refused instead of addressing another partition: the
//! partition of every read is computed from the parent, never taken from the cursor.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::layout::{MAX_SORT_KEY_BYTES, id_from_slot_sort_key};

const VERSION_PREFIX: &str = "c1:";

/// A longer cursor cannot have been issued by tablegraph (sort keys are capped at 1 KB).
const MAX_ENCODED_LEN: usize = 4096;

/// A position inside one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub connection: String,
    pub sort_key: String,
}

/// Why a client's cursor was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("the cursor is not one this API issued")]
    Malformed,
    #[error("the cursor belongs to another connection")]
    ForeignConnection,
}

impl Cursor {
    /// The opaque string handed to clients.
    ///
    /// ```
    /// use tablegraph::keys::Cursor;
    /// let cursor = Cursor { connection: "Farm.cows:0190".into(), sort_key: "bessie#0191".into() };
    /// assert_eq!(cursor.encode(), "YzE6RmFybS5jb3dzOjAxOTAKYmVzc2llIzAxOTE");
    /// ```
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!(
            "{VERSION_PREFIX}{}\n{}",
            self.connection, self.sort_key
        ))
    }

    /// Reads a client's cursor for `connection`, refusing one that was not issued by it.
    ///
    /// ```
    /// use tablegraph::keys::{Cursor, CursorError};
    /// let cursor = "YzE6RmFybS5jb3dzOjAxOTAKYmVzc2llIzAxOTE";
    /// assert_eq!(Cursor::decode_for(cursor, "Farm.cows:0190").unwrap().sort_key, "bessie#0191");
    /// assert_eq!(Cursor::decode_for(cursor, "Farm.cows:0999"), Err(CursorError::ForeignConnection));
    /// assert_eq!(Cursor::decode_for("not a cursor", "Farm.cows:0190"), Err(CursorError::Malformed));
    /// ```
    pub fn decode_for(encoded: &str, connection: &str) -> Result<Cursor, CursorError> {
        if encoded.len() > MAX_ENCODED_LEN {
            return Err(CursorError::Malformed);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| CursorError::Malformed)?;
        let text = String::from_utf8(bytes).map_err(|_| CursorError::Malformed)?;
        let body = text
            .strip_prefix(VERSION_PREFIX)
            .ok_or(CursorError::Malformed)?;
        let (issued_for, sort_key) = body.split_once('\n').ok_or(CursorError::Malformed)?;
        if sort_key.len() > MAX_SORT_KEY_BYTES || id_from_slot_sort_key(sort_key).is_none() {
            return Err(CursorError::Malformed);
        }
        if issued_for != connection {
            return Err(CursorError::ForeignConnection);
        }
        Ok(Cursor {
            connection: issued_for.to_owned(),
            sort_key: sort_key.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        let cursor = Cursor {
            connection: "Farm.animals:0190".into(),
            sort_key: "old$amac#0192".into(),
        };
        assert_eq!(
            Cursor::decode_for(&cursor.encode(), "Farm.animals:0190"),
            Ok(cursor)
        );
    }

    #[test]
    fn forged_cursors_are_refused() {
        let table = [
            ("", CursorError::Malformed),
            ("!!!!", CursorError::Malformed),
            (
                &URL_SAFE_NO_PAD.encode("c2:Farm.cows:1\nx#1"),
                CursorError::Malformed,
            ),
            (
                &URL_SAFE_NO_PAD.encode("c1:Farm.cows:1"),
                CursorError::Malformed,
            ),
            (
                &URL_SAFE_NO_PAD.encode("c1:Farm.cows:1\nx#"),
                CursorError::Malformed,
            ),
            (
                &URL_SAFE_NO_PAD.encode([0xff, 0xfe]),
                CursorError::Malformed,
            ),
            (&"A".repeat(MAX_ENCODED_LEN + 1), CursorError::Malformed),
            (
                &URL_SAFE_NO_PAD.encode(format!("c1:Farm.cows:1\n{}#1", "x".repeat(1024))),
                CursorError::Malformed,
            ),
            (
                &URL_SAFE_NO_PAD.encode("c1:Farm.chickens:1\nx#1"),
                CursorError::ForeignConnection,
            ),
        ];
        for (encoded, expected) in table {
            assert_eq!(
                Cursor::decode_for(encoded, "Farm.cows:1"),
                Err(expected),
                "{encoded}"
            );
        }
    }
}
