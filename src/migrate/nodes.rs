//! What a migration does to the nodes of one Scan page: each node's new form (`transform`),
//! written together, and unique values moved to today's keys.
//!
//! # Why a page is one transaction
//!
//! The store has one writer, and a transaction per node was most of a run's time (about 120
//! nodes a second on the embedded store, `bench/migrate.py`). The changed nodes of a Scan page
//! are written together, up to 100 items and 3.5 MB a transaction, each with its own version
//! condition: a node that changed meanwhile fails only its own condition, is read again,
//! migrated again and the transaction tried again without it written twice; a transaction that
//! keeps conflicting with other writers is split in two, down to single nodes, rather than
//! failed whole.

use futures::StreamExt as _;

use super::data::{DataMigrationError, Migration};
use crate::check;
use crate::engine;
use crate::engine::write::WRITE_ATTEMPTS;
use crate::keys;
use crate::model::{Model, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, Store, StoreError, Write};

/// A transaction's bytes stay well under DynamoDB's 4 MB.
const MAX_TRANSACTION_BYTES: usize = 3_500_000;

/// The nodes of one type of a Scan page, migrated together by one or more migrations, each
/// node's new form the migrations' transforms one after the other, written once.
pub(super) struct Batch<'a> {
    store: &'a Store,
    model: &'a Model,
    type_def: &'a TypeDef,
    migrations: Vec<&'a Migration>,
}

/// One node's write: as it was read, and as the migrations leave it.
struct NodeWrite {
    current: Item,
    next: Item,
    /// For each migration of the batch, whether it changed the node.
    changed_by: Vec<bool>,
    /// Times it was read again because someone else changed it meanwhile.
    reread: usize,
}

impl<'a> Batch<'a> {
    pub(super) fn new(
        store: &'a Store,
        model: &'a Model,
        type_def: &'a TypeDef,
        migrations: Vec<&'a Migration>,
    ) -> Batch<'a> {
        Batch {
            store,
            model,
            type_def,
            migrations,
        }
    }

    /// Migrates `scanned`; answers, for each migration, how many nodes it changed (or would,
    /// in a dry run).
    pub(super) async fn migrate(
        &self,
        scanned: &[&Item],
        dry_run: bool,
    ) -> Result<Vec<usize>, DataMigrationError> {
        let mut writes = Vec::new();
        for current in scanned {
            if let Some(write) = self.write_of((*current).clone(), 0).await? {
                writes.push(write);
            }
        }
        if dry_run {
            return Ok(self.counts(&writes));
        }
        // Two transactions at a time: the store writes one while the next is made and sent.
        let mut commits = futures::stream::iter(chunks(writes))
            .map(|chunk| self.commit(chunk))
            .buffer_unordered(2);
        let mut changed = vec![0; self.migrations.len()];
        while let Some(counts) = commits.next().await {
            for (total, more) in changed.iter_mut().zip(counts?) {
                *total += more;
            }
        }
        Ok(changed)
    }

    /// For each migration, how many of `writes` it changed.
    fn counts(&self, writes: &[NodeWrite]) -> Vec<usize> {
        (0..self.migrations.len())
            .map(|i| writes.iter().filter(|w| w.changed_by[i]).count())
            .collect()
    }

    /// The write that migrates `current`, or `None` when it has nothing to change.
    async fn write_of(
        &self,
        current: Item,
        reread: usize,
    ) -> Result<Option<NodeWrite>, DataMigrationError> {
        let mut next = current.clone();
        let mut changed_by = Vec::with_capacity(self.migrations.len());
        for migration in &self.migrations {
            let after = transform(self.store, self.model, self.type_def, migration, &next).await?;
            changed_by.push(after != next);
            next = after;
        }
        if next == current {
            return Ok(None);
        }
        // A node's place in an index is no change of the node: its version stays, so a
        // client's `expectedVersion` still holds. The condition still guards the write.
        let changes_the_node = self
            .migrations
            .iter()
            .zip(&changed_by)
            .any(|(migration, changed)| *changed && !migration.fills_an_index());
        if changes_the_node {
            engine::derive::next_version(&current, &mut next);
        }
        Ok(Some(NodeWrite {
            current,
            next,
            changed_by,
            reread,
        }))
    }

    /// Writes `writes` in one transaction; answers, for each migration, how many nodes it
    /// changed. A node someone else changed meanwhile is read again and migrated again (at
    /// most [`WRITE_ATTEMPTS`] times); a transaction that keeps conflicting is split in two.
    async fn commit(&self, mut writes: Vec<NodeWrite>) -> Result<Vec<usize>, DataMigrationError> {
        loop {
            if writes.is_empty() {
                return Ok(vec![0; self.migrations.len()]);
            }
            let transaction = writes
                .iter()
                .map(|write| {
                    // Only what the migrations changed is written, so counts and edge sets
                    // added to meanwhile stay. A node written without a version (by hand, or
                    // by an old tool) is only checked to exist.
                    let condition = vec![engine::derive::version_as_read(&write.current)];
                    engine::write::node_update(&write.current, &write.next, condition)
                })
                .collect();
            match self.store.transact_write(transaction).await {
                Ok(()) => return Ok(self.counts(&writes)),
                Err(StoreError::ConditionFailed { index }) if index < writes.len() => {
                    let failed = writes.remove(index);
                    if failed.reread + 1 >= WRITE_ATTEMPTS {
                        return Err(StoreError::TransactionConflict.into());
                    }
                    let key = Key::same(
                        failed
                            .current
                            .get(keys::PK)
                            .and_then(AttrValue::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    );
                    // Deleted meanwhile: nothing left to migrate.
                    if let Some(fresh) = self.store.get_item_consistent(&key).await?
                        && let Some(again) = self.write_of(fresh, failed.reread + 1).await?
                    {
                        writes.insert(index, again);
                    }
                }
                Err(StoreError::TransactionConflict) if writes.len() > 1 => {
                    let second = writes.split_off(writes.len() / 2);
                    let first = Box::pin(self.commit(writes)).await?;
                    let second = Box::pin(self.commit(second)).await?;
                    return Ok(first.iter().zip(&second).map(|(a, b)| a + b).collect());
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// `writes` in transactions of at most [`PAGE`] items and [`MAX_TRANSACTION_BYTES`].
fn chunks(writes: Vec<NodeWrite>) -> Vec<Vec<NodeWrite>> {
    let mut chunks = Vec::new();
    let mut chunk: Vec<NodeWrite> = Vec::new();
    let mut bytes = 0;
    for write in writes {
        let size = crate::store::item_size(&write.next);
        if chunk.len() == crate::store::MAX_TRANSACTION_ITEMS
            || (!chunk.is_empty() && bytes + size > MAX_TRANSACTION_BYTES)
        {
            chunks.push(std::mem::take(&mut chunk));
            bytes = 0;
        }
        bytes += size;
        chunk.push(write);
    }
    if !chunk.is_empty() {
        chunks.push(chunk);
    }
    chunks
}

/// Moves each unique value `scanned` holds at its key under the earlier comparison (trimmed and
/// lower-cased) to its key today, in one transaction with a check that the node still has the
/// value; answers how many moved and, one line each, those another node holds today (they stay).
/// A value whose key did not change, or that the node does not hold at the earlier key, is left
/// as it is (`check` reports damage).
pub(super) async fn rekey_unique_values(
    store: &Store,
    type_def: &TypeDef,
    scanned: &Item,
    dry_run: bool,
) -> Result<(usize, Vec<String>), DataMigrationError> {
    let text = |item: &Item, name: &str| {
        item.get(name)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let id = text(scanned, "id");
    let node_key = Key::same(keys::node_key(&id));
    let (mut moved, mut collisions) = (0, Vec::new());
    for field in type_def.unique_fields() {
        let mut node = Some(scanned.clone());
        let mut attempts = 0;
        while let Some(value) = node.as_ref().and_then(|node| node.get(&field.name)) {
            let plain = engine::derive::unique_text(value);
            let today = keys::unique_key(&type_def.name, &field.name, &plain);
            let earlier = keys::unique_key_v1(&type_def.name, &field.name, &plain);
            if today == earlier {
                break;
            }
            let held = store
                .get_item_consistent(&Key::same(earlier.clone()))
                .await?;
            let Some(held) = held.filter(|held| text(held, "id") == id) else {
                break;
            };
            let holder = store
                .get_item_consistent(&Key::same(today.clone()))
                .await?
                .map(|item| text(&item, "id"));
            if let Some(other) = holder.as_ref().filter(|holder| **holder != id) {
                collisions.push(format!(
                    "{}.{} {plain:?} of {id} and the value of {other} are both {:?}",
                    type_def.name,
                    field.name,
                    keys::normalize_unique(&plain)
                ));
                break;
            }
            if dry_run {
                moved += 1;
                break;
            }
            let mut writes = vec![
                Write::Delete {
                    key: Key::same(earlier),
                    condition: vec![Clause::Equals("id".to_owned(), AttrValue::S(id.clone()))],
                },
                Write::Check {
                    key: node_key.clone(),
                    condition: vec![Clause::Equals(field.name.clone(), value.clone())],
                },
            ];
            if holder.is_none() {
                let mut item = held;
                item.insert(keys::PK.to_owned(), AttrValue::S(today.clone()));
                item.insert(keys::SK.to_owned(), AttrValue::S(today));
                writes.push(Write::Put {
                    item,
                    condition: vec![Clause::NotExists],
                });
            }
            match store.transact_write(writes).await {
                Ok(()) => {
                    moved += 1;
                    break;
                }
                // The node, or one of the two items, changed meanwhile: look again.
                Err(StoreError::ConditionFailed { .. }) if attempts < WRITE_ATTEMPTS => {
                    attempts += 1;
                    node = store.get_item_consistent(&node_key).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok((moved, collisions))
}

/// The node as the migration leaves it: renames, defaults, removals, slots, edge set.
async fn transform(
    store: &Store,
    model: &Model,
    type_def: &TypeDef,
    migration: &Migration,
    node: &Item,
) -> Result<Item, StoreError> {
    let mut next = node.clone();
    for (from, to) in &migration.renames {
        if let Some(value) = next.remove(from)
            && !next.contains_key(to)
        {
            next.insert(to.clone(), value);
        }
    }
    for (field, value) in &migration.defaults {
        if matches!(next.get(field), None | Some(AttrValue::Null)) {
            next.insert(field.clone(), value.clone());
        }
    }
    for attribute in &migration.removes {
        next.remove(attribute);
    }
    if migration.recompute_slots {
        next.retain(|name, _| !keys::is_slot_attribute(name));
        engine::derive::set_slot_attributes(model, type_def, &mut next);
    }
    if migration.fill_type_index {
        engine::derive::set_list_attributes(model, type_def, &mut next);
    }
    if let Some(name) = &migration.fill_index
        && let Some(index) = type_def.indexes.iter().find(|i| i.name == *name)
    {
        engine::derive::set_index_attributes(model, type_def, index, &mut next);
    }
    if migration.rebuild_edge_sets {
        let partition = next
            .get(keys::PK)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned();
        let set = check::read_edge_set(store, model, &partition).await?;
        next.remove("edges");
        if !set.is_empty() {
            next.insert("edges".to_owned(), AttrValue::Ss(set.into()));
        }
    }
    Ok(next)
}
