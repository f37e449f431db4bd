//! Relay cursors: opaque to clients, bound to the one connection that issued them.
//!
//! A cursor carries the name of its connection (for example `Farm.cows:<farm id>`) and the slot
//! sort key of the last node a page showed. Decoding checks the binding, so a cursor from
//! another connection or another parent is refused instead of addressing another partition: the
//! partition of every read is computed from the parent, never taken from the cursor.
//!
//! A cursor also carries a MAC (HMAC-SHA256, cut to 16 bytes) of both under a server key, so a
//! client cannot forge the sort key to start a page where no page of its ended. Replicas share
//! the key (`--cursor-key`); a key being replaced is still accepted while it is named as the
//! previous one (`--cursor-key-previous`), so a rotation breaks no page in flight.

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::layout::{MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES, id_from_slot_sort_key};

const VERSION_PREFIX: &str = "c2:";

/// The bytes of a cursor's MAC.
const MAC_BYTES: usize = 16;

/// The keys cursors are signed with: the current one signs, it and the previous one verify.
#[derive(Clone)]
pub struct CursorKeys {
    current: [u8; 32],
    previous: Option<[u8; 32]>,
}

impl std::fmt::Debug for CursorKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKeys(..)")
    }
}

impl CursorKeys {
    /// Keys from secrets as an operator gives them (any text; only its SHA-256 is kept).
    pub fn from_secrets(current: &str, previous: Option<&str>) -> CursorKeys {
        let key = |secret: &str| -> [u8; 32] { Sha256::digest(secret.as_bytes()).into() };
        CursorKeys {
            current: key(current),
            previous: previous.map(key),
        }
    }

    /// This process's keys when none is configured: random, made once, so cursors hold across
    /// the requests of one process but not across processes or restarts.
    pub fn of_this_process() -> Arc<CursorKeys> {
        static KEYS: OnceLock<Arc<CursorKeys>> = OnceLock::new();
        KEYS.get_or_init(|| {
            let mut current = [0u8; 32];
            current.iter_mut().for_each(|byte| *byte = fastrand::u8(..));
            Arc::new(CursorKeys {
                current,
                previous: None,
            })
        })
        .clone()
    }

    fn mac(key: &[u8; 32], payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
        mac.update(payload);
        mac
    }

    fn sign(&self, payload: &[u8]) -> Vec<u8> {
        Self::mac(&self.current, payload).finalize().into_bytes()[..MAC_BYTES].to_vec()
    }

    fn verify(&self, payload: &[u8], tag: &[u8]) -> bool {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .any(|key| Self::mac(key, payload).verify_truncated_left(tag).is_ok())
    }
}

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
    /// The length of the longest cursor that `connection`, or the same field under any other
    /// parent, can issue: its payload holds the connection's name, a parent (a node's id or an
    /// `@index` query's value, each within a partition key's bytes) and a sort key (within a
    /// sort key's bytes). [`Cursor::decode_for`] refuses a longer string before decoding it.
    ///
    /// ```
    /// use tablegraph::keys::{Cursor, CursorKeys};
    /// let keys = CursorKeys::from_secrets("s3cret", None);
    /// let connection = format!("Query.cowsByBreed:{}", "x".repeat(2000));
    /// let cursor = Cursor { connection: connection.clone(), sort_key: format!("{}#0191", "n".repeat(1000)) };
    /// assert!(cursor.encode(&keys).len() <= Cursor::max_encoded_len(&connection));
    /// ```
    pub fn max_encoded_len(connection: &str) -> usize {
        let unpadded = |bytes: usize| (bytes * 4).div_ceil(3);
        let payload = VERSION_PREFIX.len()
            + connection.len()
            + MAX_PARTITION_KEY_BYTES
            + 1
            + MAX_SORT_KEY_BYTES;
        unpadded(payload) + 1 + unpadded(MAC_BYTES)
    }

    /// The opaque string handed to clients: the payload and its MAC under `keys`.
    ///
    /// ```
    /// use tablegraph::keys::{Cursor, CursorKeys};
    /// let keys = CursorKeys::from_secrets("s3cret", None);
    /// let cursor = Cursor { connection: "Farm.cows:0190".into(), sort_key: "bessie#0191".into() };
    /// assert!(cursor.encode(&keys).starts_with("YzI6RmFybS5jb3dzOjAxOTAKYmVzc2llIzAxOTE."));
    /// ```
    pub fn encode(&self, keys: &CursorKeys) -> String {
        let payload = format!("{VERSION_PREFIX}{}\n{}", self.connection, self.sort_key);
        let tag = keys.sign(payload.as_bytes());
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Reads a client's cursor for `connection`, refusing one that was not issued by it (or
    /// whose MAC `keys` do not verify).
    ///
    /// ```
    /// use tablegraph::keys::{Cursor, CursorError, CursorKeys};
    /// let keys = CursorKeys::from_secrets("s3cret", None);
    /// let cursor = Cursor { connection: "Farm.cows:0190".into(), sort_key: "bessie#0191".into() };
    /// let encoded = cursor.encode(&keys);
    /// assert_eq!(Cursor::decode_for(&encoded, "Farm.cows:0190", &keys).unwrap().sort_key, "bessie#0191");
    /// assert_eq!(Cursor::decode_for(&encoded, "Farm.cows:0999", &keys), Err(CursorError::ForeignConnection));
    /// let other = CursorKeys::from_secrets("other", None);
    /// assert_eq!(Cursor::decode_for(&encoded, "Farm.cows:0190", &other), Err(CursorError::Malformed));
    /// ```
    pub fn decode_for(
        encoded: &str,
        connection: &str,
        keys: &CursorKeys,
    ) -> Result<Cursor, CursorError> {
        if encoded.len() > Self::max_encoded_len(connection) {
            return Err(CursorError::Malformed);
        }
        let (payload, tag) = encoded.split_once('.').ok_or(CursorError::Malformed)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| CursorError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| CursorError::Malformed)?;
        if tag.len() != MAC_BYTES || !keys.verify(&bytes, &tag) {
            return Err(CursorError::Malformed);
        }
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

    fn keys() -> CursorKeys {
        CursorKeys::from_secrets("test", None)
    }

    /// A payload signed as the server would, to test what is checked after the MAC.
    fn signed(payload: &str) -> String {
        let tag = keys().sign(payload.as_bytes());
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    #[test]
    fn cursors_round_trip() {
        let cursor = Cursor {
            connection: "Farm.animals:0190".into(),
            sort_key: "old$amac#0192".into(),
        };
        assert_eq!(
            Cursor::decode_for(&cursor.encode(&keys()), "Farm.animals:0190", &keys()),
            Ok(cursor)
        );
    }

    #[test]
    fn forged_cursors_are_refused() {
        let table = [
            ("".to_owned(), CursorError::Malformed),
            ("!!!!".to_owned(), CursorError::Malformed),
            // A well-formed payload without a MAC, or with another key's.
            (
                URL_SAFE_NO_PAD.encode("c2:Farm.cows:1\nx#1"),
                CursorError::Malformed,
            ),
            (
                {
                    let tag = CursorKeys::from_secrets("guess", None).sign(b"c2:Farm.cows:1\nx#1");
                    format!(
                        "{}.{}",
                        URL_SAFE_NO_PAD.encode("c2:Farm.cows:1\nx#1"),
                        URL_SAFE_NO_PAD.encode(tag)
                    )
                },
                CursorError::Malformed,
            ),
            (signed("c1:Farm.cows:1\nx#1"), CursorError::Malformed),
            (signed("c2:Farm.cows:1"), CursorError::Malformed),
            (signed("c2:Farm.cows:1\nx#"), CursorError::Malformed),
            (
                "A".repeat(Cursor::max_encoded_len("Farm.cows:1") + 1),
                CursorError::Malformed,
            ),
            (
                signed(&format!("c2:Farm.cows:1\n{}#1", "x".repeat(1024))),
                CursorError::Malformed,
            ),
            (
                signed("c2:Farm.chickens:1\nx#1"),
                CursorError::ForeignConnection,
            ),
        ];
        for (encoded, expected) in table {
            assert_eq!(
                Cursor::decode_for(&encoded, "Farm.cows:1", &keys()),
                Err(expected),
                "{encoded}"
            );
        }
        assert!(Cursor::decode_for(&signed("c2:Farm.cows:1\nx#1"), "Farm.cows:1", &keys()).is_ok());
    }

    #[test]
    fn the_longest_cursors_a_field_issues_are_read_under_each_parent() {
        // An `@index` query's value fills its partition key; the node's sort key is as long as
        // a sort key may be.
        let value = "é".repeat((MAX_PARTITION_KEY_BYTES - "Cow#byBreed#".len()) / 2);
        let long = format!("Query.cowsByBreed:{value}");
        let sort_key = format!("{}#{}", "n".repeat(MAX_SORT_KEY_BYTES - 27), "0".repeat(26));
        assert_eq!(sort_key.len(), MAX_SORT_KEY_BYTES);
        let cursor = Cursor {
            connection: long.clone(),
            sort_key,
        };
        let encoded = cursor.encode(&keys());
        assert!(
            encoded.len() > 4096,
            "longer than the 4,096 characters cursors were held to"
        );
        assert_eq!(
            Cursor::decode_for(&encoded, &long, &keys()),
            Ok(cursor.clone())
        );
        // The same field under another value knows the cursor as another connection's.
        for other in ["Query.cowsByBreed:", "Query.cowsByBreed:Jersey"] {
            assert_eq!(
                Cursor::decode_for(&encoded, other, &keys()),
                Err(CursorError::ForeignConnection),
                "{other}"
            );
        }
    }

    #[test]
    fn a_rotated_key_still_reads_the_cursors_of_the_key_before() {
        let before = CursorKeys::from_secrets("old", None);
        let rotated = CursorKeys::from_secrets("new", Some("old"));
        let cursor = Cursor {
            connection: "Farm.cows:1".into(),
            sort_key: "x#1".into(),
        };
        let old = cursor.encode(&before);
        assert_eq!(
            Cursor::decode_for(&old, "Farm.cows:1", &rotated),
            Ok(cursor.clone())
        );
        let new = cursor.encode(&rotated);
        assert_eq!(
            Cursor::decode_for(&new, "Farm.cows:1", &before),
            Err(CursorError::Malformed),
            "the key before never learns the new one"
        );
        let retired = CursorKeys::from_secrets("new", None);
        assert_eq!(
            Cursor::decode_for(&old, "Farm.cows:1", &retired),
            Err(CursorError::Malformed)
        );
    }
}
