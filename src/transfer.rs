//! `tablegraph export` / `import`: the whole table as JSON lines, one item per line in
//! DynamoDB's JSON form (`{"Item": {"PK": {"S": "NODE#…"}, …}}`, the form DynamoDB's own
//! exports use). For backups, for moving data between the embedded store and DynamoDB, and for
//! seeding.
//!
//! Invariant: an import reads and validates the whole file before it writes anything (JSON,
//! attribute types, number range, key types, item size), and before the store is opened, so a
//! malformed file changes nothing and creates nothing;
//! what only the store can refuse afterwards (a throttled or failed transaction) stops the
//! import with the items before it written. Items are written as they are (keys, versions,
//! edge sets), in transactions of up to 100 items and 3.5 MB; an item with the same key is
//! replaced.
//!
//! The replicas' bookkeeping of the table's change stream (`STREAM#` leases and relay items)
//! belongs to that table's stream, so it is left out of an export, and of an import; so are the
//! records of the migrations tablegraph ships, which say what the exporting table went
//! through, not what the imported items are: the next `migrate` applies them again.

use std::io::BufRead;

use crate::keys;
use crate::store::{
    Item, MAX_ITEM_BYTES, MAX_TRANSACTION_ITEMS, Store, StoreError, Write, item_from_json,
    item_size, item_to_json,
};

/// DynamoDB refuses a transaction over 4 MB; stay clear of it.
const MAX_TRANSACTION_BYTES: usize = 3_500_000;

#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("line {line}: {message}")]
    Malformed { line: usize, message: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Writes every item of the table to `out`, sorted by key so that two exports of the same data
/// are the same file, telling `read` how many items were read after each page. Answers the
/// number of items.
pub async fn export(
    store: &Store,
    out: &mut impl std::io::Write,
    read: &(dyn Fn(u64) + Sync),
) -> Result<usize, TransferError> {
    let mut items = store.scan_all_telling(read).await?;
    items.retain(|item| !keys::is_stream_partition(key_of(item).0));
    items.sort_by(|a, b| key_of(a).cmp(&key_of(b)));
    for item in &items {
        let line = serde_json::json!({ "Item": item_to_json(item) });
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(items.len())
}

fn key_of(item: &Item) -> (&str, &str) {
    let text = |name: &str| item.get(name).and_then(|v| v.as_str()).unwrap_or_default();
    (text(keys::PK), text(keys::SK))
}

/// A file read whole and checked, ready to be written.
#[derive(Debug)]
pub struct Import {
    items: Vec<Item>,
    /// Records of migrations tablegraph ships, left out.
    pub migration_records: usize,
    /// Stream leases and relay items, left out.
    pub stream_items: usize,
}

impl Import {
    /// The items that will be written.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Reads `input` whole and checks every line; nothing is written.
pub fn read_import(input: impl BufRead) -> Result<Import, TransferError> {
    let mut import = Import {
        items: Vec::new(),
        migration_records: 0,
        stream_items: 0,
    };
    for item in read_lines(input)? {
        let pk = key_of(&item).0;
        if keys::is_stream_partition(pk) {
            import.stream_items += 1;
        } else if keys::is_shipped_migration_record(pk) {
            import.migration_records += 1;
        } else {
            import.items.push(item);
        }
    }
    Ok(import)
}

/// Writes the items of `import`, telling `written` how many are written after each
/// transaction. Answers the number of items written.
pub async fn import(
    store: &Store,
    import: &Import,
    mut written: impl FnMut(u64),
) -> Result<usize, TransferError> {
    let items = &import.items;
    let mut chunk: Vec<Write> = Vec::new();
    let mut chunk_bytes = 0;
    for (index, item) in items.iter().enumerate() {
        let size = item_size(item);
        if chunk.len() == MAX_TRANSACTION_ITEMS || chunk_bytes + size > MAX_TRANSACTION_BYTES {
            store.transact_write(std::mem::take(&mut chunk)).await?;
            written(index as u64);
            chunk_bytes = 0;
        }
        chunk_bytes += size;
        chunk.push(Write::Put {
            item: item.clone(),
            condition: Vec::new(),
        });
    }
    if !chunk.is_empty() {
        store.transact_write(chunk).await?;
        written(items.len() as u64);
    }
    Ok(items.len())
}

/// Parses every line; blank lines are skipped.
fn read_lines(input: impl BufRead) -> Result<Vec<Item>, TransferError> {
    let mut items = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (index, line) in input.lines().enumerate() {
        let line_number = index + 1;
        let malformed = |message: String| TransferError::Malformed {
            line: line_number,
            message,
        };
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| malformed(format!("not JSON: {e}")))?;
        let item = value
            .get("Item")
            .ok_or_else(|| malformed("expected {\"Item\": {…}}".to_owned()))
            .and_then(|item| item_from_json(item).map_err(malformed))?;
        let (pk, sk) = key_of(&item);
        if pk.is_empty() || sk.is_empty() {
            return Err(malformed("the item has no string PK and SK".to_owned()));
        }
        if let Some((name, _)) = item
            .iter()
            .find(|(name, value)| keys::is_slot_attribute(name) && value.as_str().is_none())
        {
            return Err(malformed(format!(
                "{name} is an index key and must be a string"
            )));
        }
        if item_size(&item) > MAX_ITEM_BYTES {
            return Err(malformed(format!(
                "the item takes {} bytes; DynamoDB limits an item to {MAX_ITEM_BYTES}",
                item_size(&item)
            )));
        }
        if !seen.insert((pk.to_owned(), sk.to_owned())) {
            return Err(malformed(format!("the key {pk} / {sk} appears twice")));
        }
        items.push(item);
    }
    Ok(items)
}
