//! The relay's items as stored: the changes of one read of a shard cut into items that fit
//! (`batches`), each change as an entry (its item, or only its key when too large), and what
//! every record touched, for the followers' read caches. `relay.rs` writes and follows them.

use std::sync::Arc;

use super::change::{Change, ChangeKind};
use crate::keys;
use crate::keys::TYPENAME;
use crate::store::{
    AttrValue, Item, Key, MAX_ITEM_BYTES, Store, StoreError, StringSet, item_size, value_size,
};

/// The most a relay item carries, leaving room below DynamoDB's item limit.
pub(super) const RELAY_ITEM_BYTES: usize = MAX_ITEM_BYTES - 16 * 1024;

/// A record read as the holder that the followers must hear of: its sequence number, its
/// change if it is one, and what it changed for their read caches.
pub(super) type Relayed = (String, Option<Change>, Vec<String>);

/// Changes of one read, cut into relay items.
pub(super) struct Batch {
    /// Its relay key: from the sequence number of its first change.
    pub(super) key: String,
    /// The sequence number of the last record it covers.
    pub(super) checkpoint: String,
    pub(super) entries: Vec<AttrValue>,
    pub(super) changes: Vec<Change>,
    /// What its records changed, for the followers' read caches ([`Touched::to_strings`]).
    pub(super) touched: Vec<String>,
    /// The shard's last relay item: it was read to its end.
    pub(super) last: bool,
}

pub(super) fn batches(changes: &[Relayed]) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    let mut size = 0;
    for (sequence, change, touched) in changes {
        let entry = change.as_ref().map(entry_of);
        let entry_size = entry.as_ref().map_or(0, value_size)
            + touched.iter().map(|text| text.len() + 1).sum::<usize>();
        let room = batches.last().is_some() && size + entry_size <= RELAY_ITEM_BYTES;
        if !room {
            batches.push(Batch {
                key: keys::relay_key(sequence),
                checkpoint: sequence.clone(),
                entries: Vec::new(),
                changes: Vec::new(),
                touched: Vec::new(),
                last: false,
            });
            size = 0;
        }
        let Some(batch) = batches.last_mut() else {
            continue;
        };
        size += entry_size;
        batch.checkpoint = sequence.clone();
        batch.entries.extend(entry);
        batch.changes.extend(change.clone());
        batch.touched.extend(touched.iter().cloned());
    }
    batches
}

/// A change as a relay item carries it: its kind and its item (after the change; before it,
/// for a deletion), or only the item's key when the item is too large to carry.
pub(super) fn entry_of(change: &Change) -> AttrValue {
    let kind = match change.kind() {
        ChangeKind::Created => "Created",
        ChangeKind::Updated => "Updated",
        ChangeKind::Deleted => "Deleted",
    };
    let item = change.new.as_ref().or(change.old.as_ref());
    let item: Item = item.map(|item| item.as_ref().clone()).unwrap_or_default();
    let whole = item_size(&item) <= RELAY_ITEM_BYTES;
    let carried = if whole {
        item
    } else {
        item.into_iter()
            .filter(|(name, _)| {
                matches!(
                    name.as_str(),
                    keys::PK | keys::SK | TYPENAME | "id" | "from" | "to"
                )
            })
            .collect()
    };
    let mut entry = Item::from_iter([
        ("kind".to_owned(), AttrValue::S(kind.to_owned())),
        ("item".to_owned(), AttrValue::M(carried)),
    ]);
    if !whole {
        entry.insert("keyOnly".to_owned(), AttrValue::Bool(true));
    }
    AttrValue::M(entry)
}

/// The change a relay entry carries; an entry that carries only a key is read by it.
pub(super) async fn change_from_entry(
    store: &Store,
    entry: &AttrValue,
) -> Result<Option<Change>, StoreError> {
    let AttrValue::M(entry) = entry else {
        return Ok(None);
    };
    let Some(AttrValue::M(item)) = entry.get("item") else {
        return Ok(None);
    };
    let kind = text(entry, "kind");
    let mut item = item.clone();
    if entry.get("keyOnly") == Some(&AttrValue::Bool(true)) && kind != "Deleted" {
        let key = Key {
            pk: text(&item, keys::PK),
            sk: text(&item, keys::SK),
        };
        if let Some(stored) = store.get_item_consistent(&key).await? {
            item = stored;
        }
    }
    let is_node = text(&item, keys::PK) == text(&item, keys::SK);
    let item = Some(Arc::new(item));
    let (old, new) = match kind.as_str() {
        "Created" => (None, item),
        "Updated" => (item.clone(), item),
        "Deleted" => (item, None),
        _ => return Ok(None),
    };
    Ok(Some(if is_node {
        Change::node(old, new)
    } else {
        Change::edge(old, new)
    }))
}

pub(super) fn relay_item(
    partition: &str,
    key: &str,
    previous: &str,
    entries: Vec<AttrValue>,
    touched: Vec<String>,
    last: bool,
) -> Item {
    let mut item = Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(partition.to_owned())),
        (keys::SK.to_owned(), AttrValue::S(key.to_owned())),
        ("previous".to_owned(), AttrValue::S(previous.to_owned())),
        ("changes".to_owned(), AttrValue::L(entries)),
        ("writtenAt".to_owned(), AttrValue::N(now_ms().to_string())),
    ]);
    if last {
        item.insert("last".to_owned(), AttrValue::Bool(true));
    }
    if !touched.is_empty() {
        let touched: StringSet = touched.into_iter().collect();
        item.insert("touched".to_owned(), AttrValue::Ss(touched));
    }
    item
}

pub(super) fn text(item: &Item, name: &str) -> String {
    item.get(name)
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn number(item: &Item, name: &str) -> i64 {
    item.get(name)
        .and_then(AttrValue::as_i64)
        .unwrap_or_default()
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn farm(id: &str, bytes: usize) -> Change {
        let item = Item::from_iter([
            (keys::PK.to_owned(), AttrValue::S(keys::node_key(id))),
            (keys::SK.to_owned(), AttrValue::S(keys::node_key(id))),
            (TYPENAME.to_owned(), AttrValue::S("Farm".into())),
            ("id".to_owned(), AttrValue::S(id.into())),
            ("notes".to_owned(), AttrValue::S("x".repeat(bytes))),
        ]);
        Change::node(None, Some(Arc::new(item)))
    }

    #[test]
    fn changes_are_cut_into_relay_items_that_fit_and_cover_every_record() {
        let changes: Vec<(String, Change)> = (1..=5)
            .map(|n| (n.to_string(), farm(&format!("f{n}"), 150 * 1024)))
            .collect();
        let changes: Vec<Relayed> = changes
            .into_iter()
            .map(|(sequence, change)| (sequence, Some(change), Vec::new()))
            .collect();
        let cut = batches(&changes);
        // Two 150 KB changes fit in one relay item, not three.
        let shape: Vec<(String, String, usize)> = cut
            .iter()
            .map(|b| (b.key.clone(), b.checkpoint.clone(), b.entries.len()))
            .collect();
        assert_eq!(
            shape,
            [
                (keys::relay_key("1"), "2".into(), 2),
                (keys::relay_key("3"), "4".into(), 2),
                (keys::relay_key("5"), "5".into(), 1)
            ]
        );
        for batch in &cut {
            let item = relay_item(
                "STREAM#s",
                &batch.key,
                "",
                batch.entries.clone(),
                Vec::new(),
                false,
            );
            assert!(item_size(&item) <= MAX_ITEM_BYTES);
        }
    }

    #[test]
    fn an_item_too_large_to_carry_is_relayed_by_its_key() {
        let entry = entry_of(&farm("f1", MAX_ITEM_BYTES - 100));
        let AttrValue::M(entry) = entry else {
            panic!("an entry is a map")
        };
        assert_eq!(entry.get("keyOnly"), Some(&AttrValue::Bool(true)));
        let Some(AttrValue::M(item)) = entry.get("item") else {
            panic!("an entry carries an item")
        };
        let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, [keys::PK, keys::SK, TYPENAME, "id"]);
    }
}
