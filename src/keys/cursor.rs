//! Relay cursors: opaque to clients, bound to the one connection that issued them.
//!
//! A cursor carries the name of its connection (for example `Farm.cows:<farm id>`) and the slot
//! sort key of the last node a page showed. Decoding checks the binding, so a cursor from
//! another connection or another parent is refused instead of addressing another partition: the
//! partition of every read is computed from the parent, never taken from the cursor.
//!
//! Both are sealed with AES-256-GCM-SIV (aws-lc-rs, the TLS stack's own library) under a key
//! derived from the server's cursor key, with a random nonce: a client can neither read the
//! sort key (under `@auth`, a page a read budget stopped on a node the caller may not read
//! would otherwise hand out that node's sort value and id) nor forge one to start a page
//! where no page of its ended. GCM-SIV, so that a nonce drawn twice reveals only that two
//! cursors are equal. Replicas share the key (`--cursor-key`); a key being replaced is still
//! accepted while it is named as the previous one (`--cursor-key-previous`), so a rotation
//! breaks no page in flight. Cursors of the earlier format (`c2`: the same text in the clear
//! with an HMAC-SHA256 tag) are still read, under the same keys, until the key rotates.

use std::sync::{Arc, OnceLock};

use aws_lc_rs::aead::{AES_256_GCM_SIV, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::layout::{MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES, id_from_slot_sort_key};

/// The earlier format's prefix, inside its signed text.
const SIGNED_PREFIX: &str = "c2:";
/// The sealed format's prefix, before its nonce and ciphertext.
const SEALED_PREFIX: &[u8] = b"c3:";

/// The bytes of a `c2` cursor's MAC.
const MAC_BYTES: usize = 16;
/// The bytes of a sealed cursor's authentication tag.
const TAG_BYTES: usize = 16;

/// One cursor key: the secret `c2` tags were made with, and the sealing key derived from it.
#[derive(Clone)]
struct Key {
    secret: [u8; 32],
    sealing: Arc<LessSafeKey>,
}

impl Key {
    fn new(secret: [u8; 32]) -> Key {
        // A key of its own for sealing, so that no two uses share one.
        let derived = Hmac::<Sha256>::new_from_slice(&secret)
            .expect("HMAC takes any key")
            .chain_update(b"tablegraph cursor sealing")
            .finalize()
            .into_bytes();
        let unbound =
            UnboundKey::new(&AES_256_GCM_SIV, &derived).expect("32 bytes: an AES-256 key");
        Key {
            secret,
            sealing: Arc::new(LessSafeKey::new(unbound)),
        }
    }
}

/// The keys cursors are sealed with: the current one seals, it and the previous one open.
#[derive(Clone)]
pub struct CursorKeys {
    current: Key,
    previous: Option<Key>,
}

impl std::fmt::Debug for CursorKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKeys(..)")
    }
}

impl CursorKeys {
    /// Keys from secrets as an operator gives them (any text; only its SHA-256 is kept).
    pub fn from_secrets(current: &str, previous: Option<&str>) -> CursorKeys {
        let key = |secret: &str| Key::new(Sha256::digest(secret.as_bytes()).into());
        CursorKeys {
            current: key(current),
            previous: previous.map(key),
        }
    }

    /// This process's keys when none is configured: drawn once from the operating system's
    /// random source, so cursors hold across the requests of one process but not across
    /// processes or restarts.
    pub fn of_this_process() -> Arc<CursorKeys> {
        static KEYS: OnceLock<Arc<CursorKeys>> = OnceLock::new();
        KEYS.get_or_init(|| {
            let mut secret = [0u8; 32];
            aws_lc_rs::rand::fill(&mut secret).expect("the operating system's random source");
            Arc::new(CursorKeys {
                current: Key::new(secret),
                previous: None,
            })
        })
        .clone()
    }

    fn keys(&self) -> impl Iterator<Item = &Key> {
        std::iter::once(&self.current).chain(&self.previous)
    }

    fn mac(secret: &[u8; 32], payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
        mac.update(payload);
        mac
    }

    #[cfg(test)]
    fn sign(&self, payload: &[u8]) -> Vec<u8> {
        Self::mac(&self.current.secret, payload)
            .finalize()
            .into_bytes()[..MAC_BYTES]
            .to_vec()
    }

    fn verify(&self, payload: &[u8], tag: &[u8]) -> bool {
        self.keys().any(|key| {
            Self::mac(&key.secret, payload)
                .verify_truncated_left(tag)
                .is_ok()
        })
    }

    /// `c3:`, a random nonce, and `text` sealed under the current key.
    fn seal(&self, text: &str) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).expect("the operating system's random source");
        let mut sealed =
            Vec::with_capacity(SEALED_PREFIX.len() + NONCE_LEN + text.len() + TAG_BYTES);
        sealed.extend_from_slice(SEALED_PREFIX);
        sealed.extend_from_slice(&nonce);
        let mut body = text.as_bytes().to_vec();
        self.current
            .sealing
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(SEALED_PREFIX),
                &mut body,
            )
            .expect("a cursor is far below AES-GCM-SIV's message limit");
        sealed.extend_from_slice(&body);
        sealed
    }

    /// The text of a sealed cursor (what follows `c3:`), if a key opens it.
    fn open(&self, sealed: &[u8]) -> Option<String> {
        if sealed.len() < NONCE_LEN + TAG_BYTES {
            return None;
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        self.keys().find_map(|key| {
            let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
            let mut body = body.to_vec();
            let text = key
                .sealing
                .open_in_place(nonce, Aad::from(SEALED_PREFIX), &mut body)
                .ok()?;
            String::from_utf8(text.to_vec()).ok()
        })
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
        let text = connection.len() + MAX_PARTITION_KEY_BYTES + 1 + MAX_SORT_KEY_BYTES;
        let sealed = unpadded(SEALED_PREFIX.len() + NONCE_LEN + text + TAG_BYTES);
        let signed = unpadded(SIGNED_PREFIX.len() + text) + 1 + unpadded(MAC_BYTES);
        sealed.max(signed)
    }

    /// The opaque string handed to clients: its connection and sort key, sealed under `keys`.
    /// It tells nothing of either.
    ///
    /// ```
    /// use base64::Engine as _;
    /// use tablegraph::keys::{Cursor, CursorKeys};
    /// let keys = CursorKeys::from_secrets("s3cret", None);
    /// let cursor = Cursor { connection: "Farm.cows:0190".into(), sort_key: "bessie#0191".into() };
    /// let encoded = cursor.encode(&keys);
    /// let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&encoded).unwrap();
    /// assert!(bytes.starts_with(b"c3:"));
    /// assert!(!String::from_utf8_lossy(&bytes).contains("bessie"));
    /// assert_ne!(encoded, cursor.encode(&keys), "a nonce of its own each time");
    /// ```
    pub fn encode(&self, keys: &CursorKeys) -> String {
        let text = format!("{}\n{}", self.connection, self.sort_key);
        URL_SAFE_NO_PAD.encode(keys.seal(&text))
    }

    /// Reads a client's cursor for `connection`, refusing one that was not issued by it (or
    /// that `keys` do not open).
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
        let text = match encoded.split_once('.') {
            // The earlier format: the text in the clear, and its MAC.
            Some((payload, tag)) => {
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
                text.strip_prefix(SIGNED_PREFIX)
                    .ok_or(CursorError::Malformed)?
                    .to_owned()
            }
            None => {
                let bytes = URL_SAFE_NO_PAD
                    .decode(encoded)
                    .map_err(|_| CursorError::Malformed)?;
                let sealed = bytes
                    .strip_prefix(SEALED_PREFIX)
                    .ok_or(CursorError::Malformed)?;
                keys.open(sealed).ok_or(CursorError::Malformed)?
            }
        };
        let (issued_for, sort_key) = text.split_once('\n').ok_or(CursorError::Malformed)?;
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
    fn a_sealed_cursor_changed_anywhere_is_refused() {
        let cursor = Cursor {
            connection: "Farm.cows:1".into(),
            sort_key: "bessie#1".into(),
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor.encode(&keys()))
            .expect("base64");
        for at in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[at] ^= 0x01;
            assert_eq!(
                Cursor::decode_for(&URL_SAFE_NO_PAD.encode(&changed), "Farm.cows:1", &keys()),
                Err(CursorError::Malformed),
                "byte {at}"
            );
        }
        let cut = URL_SAFE_NO_PAD.encode(&bytes[..bytes.len() - 1]);
        assert_eq!(
            Cursor::decode_for(&cut, "Farm.cows:1", &keys()),
            Err(CursorError::Malformed)
        );
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
