//! Conflict detection, as AppSync's versioned data sources keep it for DataStore: the
//! attributes a node of a type that detects conflicts carries (`_lastChangedAt`, `_deleted`,
//! `_ttl`), and how a write that names a stale `_version` is resolved.
//!
//! A missing `_version` is read as 0, as Amplify's resolvers read it: a stale one. With a stale
//! version, `OPTIMISTIC_CONCURRENCY` refuses the write and `AUTOMERGE` merges the write's fields
//! into the stored node by AppSync's rules (a scalar the node holds keeps the node's value; a
//! field the node does not hold takes the write's; a list is the node's followed by the
//! write's; a map is merged key by key, by the same rules) and writes the merge on the stored
//! version. A delete with a stale version, and any write to a deleted node (a tombstone), is
//! refused. Refusals are AppSync's `ConflictUnhandled` ("Conflict resolver rejects mutation."),
//! carrying the stored node.
//!
//! Every write of such a node also puts a record of it in its type's delta record
//! (`keys::delta_partition`), in the write's own transaction: a sync since a recent `lastSync`
//! reads the writes since then from there instead of the type, and no write can commit without
//! its record (the change stream would lose one to a lease handed over or a relay behind).

use std::sync::Arc;

use super::error::EngineError;
use crate::keys;
use crate::model::{ConflictHandler, Model, TypeDef};
use crate::store::{AttrValue, Item, Write};

/// The field of a node's version, as Amplify names it.
pub const SYNC_VERSION: &str = "_version";
/// The attribute, and field, that is true on a deleted node (a tombstone).
pub use crate::store::DELETED;
/// The attribute, and field, of when a node was last written, in milliseconds.
pub const LAST_CHANGED_AT: &str = "_lastChangedAt";
/// The attribute of when a tombstone may be removed, in seconds (AppSync's `_ttl`).
pub const TTL: &str = "_ttl";
/// How long a tombstone is kept: Amplify's `BaseTableTTL`, 30 days.
pub const TOMBSTONE_SECONDS: i64 = 30 * 24 * 60 * 60;

/// A write's fields by name, as the write's `FieldValues` hold them.
type Fields = Vec<(String, Option<AttrValue>)>;

/// Milliseconds since the epoch, now.
pub fn now_millis() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// When `item` was last written, in milliseconds: its `_lastChangedAt`; for a node written
/// before its type detected conflicts, its last update's time, or 0.
pub fn last_changed_at(item: &Item) -> i64 {
    if let Some(AttrValue::N(millis)) = item.get(LAST_CHANGED_AT)
        && let Ok(millis) = millis.parse()
    {
        return millis;
    }
    let updated = item.get("updatedAt").and_then(|value| match value {
        AttrValue::S(text) => {
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
        }
        _ => None,
    });
    updated.map_or(0, |at| (at.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// Stamps a node of a type that detects conflicts as written now.
pub(crate) fn stamp(type_def: &TypeDef, item: &mut Item) {
    if type_def.conflict.is_some() {
        item.insert(
            LAST_CHANGED_AT.to_owned(),
            AttrValue::N(now_millis().to_string()),
        );
    }
}

/// The write that records `item`, just written, in its type's delta record, for delta syncs:
/// its id under the time and version of the write, kept for the delta window (`_ttl`).
pub(crate) fn delta_record(model: &Model, type_def: &TypeDef, item: &Item) -> Option<Write> {
    type_def.conflict.as_ref()?;
    let millis = last_changed_at(item);
    let id = item.get("id").and_then(AttrValue::as_str)?;
    let version = stored_version(item);
    let partition = keys::delta_partition(&type_def.name);
    let expires = (millis + model.dialect.conflict.delta_window_millis()) / 1000;
    let record = Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(partition)),
        (
            keys::SK.to_owned(),
            AttrValue::S(keys::delta_sort_key(millis, id, version)),
        ),
        ("id".to_owned(), AttrValue::S(id.to_owned())),
        (TTL.to_owned(), AttrValue::N(expires.to_string())),
    ]);
    Some(Write::Put {
        item: record,
        condition: Vec::new(),
    })
}

/// `current` made a tombstone: deleted, and to be removed after [`TOMBSTONE_SECONDS`].
pub(crate) fn tombstone(current: &Item) -> Item {
    let mut next = current.clone();
    next.insert(DELETED.to_owned(), AttrValue::Bool(true));
    let expires = time::OffsetDateTime::now_utc().unix_timestamp() + TOMBSTONE_SECONDS;
    next.insert(TTL.to_owned(), AttrValue::N(expires.to_string()));
    next
}

/// When `item` (a tombstone, or a delta record) may be removed, in seconds: its `_ttl`.
pub fn ttl_of(item: &Item) -> Option<i64> {
    match item.get(TTL) {
        Some(AttrValue::N(seconds)) => seconds.parse().ok(),
        _ => None,
    }
}

/// Whether `item` is a tombstone past its `_ttl`: to be removed as a delete removes a node.
pub fn expired_tombstone(item: &Item, now_seconds: i64) -> bool {
    item.is_tombstone() && ttl_of(item).is_some_and(|expires| expires < now_seconds)
}

/// The refusal of a write in conflict with `current`, the stored node.
pub fn rejected(current: &Item) -> EngineError {
    EngineError::ConflictRejected(Arc::new(current.clone()))
}

/// What a write with `given` (the client's `_version`, 0 when left out) to `current` of a
/// type with `handler` writes: its fields as they are when the version is the stored one;
/// merged with `AUTOMERGE`; refused otherwise. The write then expects the stored version.
pub(crate) fn resolve_update(
    handler: &ConflictHandler,
    current: &Item,
    given: Option<i64>,
    fields: &[(String, Option<AttrValue>)],
) -> Result<(Fields, i64), EngineError> {
    let stored = stored_version(current);
    if current.is_tombstone() {
        return Err(rejected(current));
    }
    if given.unwrap_or(0) == stored {
        return Ok((fields.to_vec(), stored));
    }
    match handler {
        ConflictHandler::Automerge => Ok((automerge(current, fields), stored)),
        ConflictHandler::OptimisticConcurrency | ConflictHandler::Lambda(_) => {
            Err(rejected(current))
        }
    }
}

/// The version a delete with `given` of `current` expects, or its refusal: a delete is never
/// merged.
pub(crate) fn resolve_delete(current: &Item, given: Option<i64>) -> Result<i64, EngineError> {
    let stored = stored_version(current);
    match !current.is_tombstone() && given.unwrap_or(0) == stored {
        true => Ok(stored),
        false => Err(rejected(current)),
    }
}

/// The version `item` holds (0 for none).
pub fn stored_version(item: &Item) -> i64 {
    match item.get(item.version_attribute()) {
        Some(AttrValue::N(n)) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

/// AppSync's Automerge of a write's `fields` into `current`.
fn automerge(current: &Item, fields: &[(String, Option<AttrValue>)]) -> Fields {
    fields
        .iter()
        .filter_map(|(name, incoming)| {
            let merged = merged(current.get(name), incoming.as_ref())?;
            Some((name.clone(), merged))
        })
        .collect()
}

/// The value of one field after a merge, or `None` where the write changes nothing: the
/// stored value stands.
fn merged(stored: Option<&AttrValue>, incoming: Option<&AttrValue>) -> Option<Option<AttrValue>> {
    match (stored, incoming) {
        (None | Some(AttrValue::Null), incoming) => Some(incoming.cloned()),
        (Some(AttrValue::L(stored)), Some(AttrValue::L(incoming))) => Some(Some(AttrValue::L(
            stored.iter().chain(incoming).cloned().collect(),
        ))),
        (Some(AttrValue::Ss(stored)), Some(AttrValue::Ss(incoming))) => {
            let mut union = stored.clone();
            union.extend(incoming.iter().cloned());
            Some(Some(AttrValue::Ss(union)))
        }
        (Some(AttrValue::M(stored)), Some(AttrValue::M(incoming))) => {
            Some(Some(AttrValue::M(merged_map(stored, incoming))))
        }
        _ => None,
    }
}

fn merged_map(stored: &Item, incoming: &Item) -> Item {
    let mut map = stored.clone();
    for (key, value) in incoming {
        if let Some(Some(value)) = merged(stored.get(key), Some(value)) {
            map.insert(key.clone(), value);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(value: i64) -> AttrValue {
        AttrValue::N(value.to_string())
    }

    fn stored() -> Item {
        Item::from_iter([
            ("id".to_owned(), AttrValue::S("1".into())),
            ("name".to_owned(), AttrValue::S("Nadia".into())),
            ("jersey".to_owned(), n(5)),
            ("points".to_owned(), AttrValue::L(vec![n(24), n(30), n(27)])),
            (
                "stats".to_owned(),
                AttrValue::M(Item::from_iter([
                    ("ppg".to_owned(), AttrValue::S("35.4".into())),
                    ("apg".to_owned(), AttrValue::S("6.3".into())),
                ])),
            ),
            ("version".to_owned(), n(4)),
        ])
    }

    /// AppSync's worked examples of Automerge: a scalar keeps the stored value, a list is
    /// appended to, a new field is taken, a map is merged key by key.
    #[test]
    fn a_stale_write_is_merged_by_appsyncs_automerge_rules() {
        let fields = vec![
            ("jersey".to_owned(), Some(n(55))),
            ("points".to_owned(), Some(AttrValue::L(vec![n(30), n(35)]))),
            ("nickname".to_owned(), Some(AttrValue::S("Shaggy".into()))),
            (
                "stats".to_owned(),
                Some(AttrValue::M(Item::from_iter([
                    ("ppg".to_owned(), AttrValue::S("25.7".into())),
                    ("rpg".to_owned(), AttrValue::S("6.9".into())),
                ]))),
            ),
        ];
        let (merged, version) =
            resolve_update(&ConflictHandler::Automerge, &stored(), Some(2), &fields)
                .expect("merged");
        assert_eq!(version, 4);
        let value = |name: &str| {
            merged
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(value("jersey"), None, "the stored scalar stands");
        assert_eq!(
            value("points"),
            Some(Some(AttrValue::L(vec![n(24), n(30), n(27), n(30), n(35)])))
        );
        assert_eq!(value("nickname"), Some(Some(AttrValue::S("Shaggy".into()))));
        let Some(Some(AttrValue::M(stats))) = value("stats") else {
            panic!("stats is a map: {merged:?}");
        };
        assert_eq!(stats.get("ppg"), Some(&AttrValue::S("35.4".into())));
        assert_eq!(stats.get("rpg"), Some(&AttrValue::S("6.9".into())));
        assert_eq!(stats.get("apg"), Some(&AttrValue::S("6.3".into())));
    }

    #[test]
    fn a_current_write_is_taken_whole_and_stale_ones_are_refused_where_nothing_merges() {
        let fields = vec![("jersey".to_owned(), Some(n(55)))];
        let handler = ConflictHandler::OptimisticConcurrency;
        let (taken, version) =
            resolve_update(&handler, &stored(), Some(4), &fields).expect("current");
        assert_eq!((taken, version), (fields.clone(), 4));
        let refused = resolve_update(&handler, &stored(), None, &fields);
        assert!(matches!(refused, Err(EngineError::ConflictRejected(_))));
        assert!(matches!(
            resolve_delete(&stored(), Some(3)),
            Err(EngineError::ConflictRejected(_))
        ));
        assert_eq!(resolve_delete(&stored(), Some(4)).ok(), Some(4));
        let deleted = tombstone(&stored());
        assert!(deleted.is_tombstone());
        assert!(resolve_delete(&deleted, Some(4)).is_err());
        assert!(resolve_update(&ConflictHandler::Automerge, &deleted, Some(4), &fields).is_err());
    }
}
