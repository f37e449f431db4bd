//! What a migration does to the nodes of one Scan page: each node's new form (`transform`),
//! written together, and unique values moved to today's keys.
//!
//! # Why a page is one transaction
//!
//! The store has one writer, and a transaction per node was most of a run's time (about 120
//! nodes a second on the embedded store, `bench/migrate.py`). The changed nodes of a Scan page
//! are written together, up to 100 items and 3.5 MB a transaction, each with its own version
//! condition, through the engine's write driver (each node a part of the plan): a node that
//! changed meanwhile fails only its own condition, is read again, migrated again and the
//! transaction tried again without it written twice; a transaction that keeps conflicting with
//! other writers is split in two, down to single nodes, rather than failed whole.

use futures::StreamExt as _;

use super::data::{DataMigrationError, Migration};
use crate::check;
use crate::engine;
use crate::engine::write::{Attempt, Driver, Plan, Purpose};
use crate::engine::{EngineError, RequestScope};
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
            if let Some(write) = self.write_of((*current).clone()).await? {
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
    fn counts<'w>(&self, writes: impl IntoIterator<Item = &'w NodeWrite>) -> Vec<usize> {
        let mut counts = vec![0; self.migrations.len()];
        for write in writes {
            for (count, changed) in counts.iter_mut().zip(&write.changed_by) {
                *count += usize::from(*changed);
            }
        }
        counts
    }

    /// The write that migrates `current`, or `None` when it has nothing to change.
    async fn write_of(&self, current: Item) -> Result<Option<NodeWrite>, DataMigrationError> {
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
        }))
    }

    /// Writes `writes` in one transaction, through the engine's write driver; answers, for
    /// each migration, how many nodes it changed. A node someone else changed meanwhile fails
    /// only its own condition: it alone is read again and migrated again (each node at most
    /// [`WRITE_ATTEMPTS`](engine::write::WRITE_ATTEMPTS) times); a node deleted meanwhile is left out. A transaction that keeps
    /// conflicting is split in two.
    async fn commit(&self, writes: Vec<NodeWrite>) -> Result<Vec<usize>, DataMigrationError> {
        if writes.is_empty() {
            return Ok(vec![0; self.migrations.len()]);
        }
        let scope = RequestScope::of_tool(self.store);
        // The writes as the last attempt planned them, each at its place (its part of the
        // plan); `None` for a node deleted meanwhile.
        let planned = tokio::sync::Mutex::new(writes.into_iter().map(Some).collect::<Vec<_>>());
        let committed = Driver::new(&scope, "migration")
            .each_part()
            .run_as(|learned| {
                let planned = &planned;
                async move {
                    let mut planned = planned.lock().await;
                    if let Some(part) = learned.lost_part {
                        self.read_again(&mut planned[part]).await?;
                    }
                    let mut plan = Plan::default();
                    for (part, write) in planned.iter().enumerate() {
                        let Some(write) = write else { continue };
                        // Only what the migrations changed is written, so counts and edge
                        // sets added to meanwhile stay.
                        let condition = vec![engine::derive::version_as_read(&write.current)];
                        let mut one = Plan::default();
                        one.push(
                            engine::write::node_update(&write.current, &write.next, condition),
                            Purpose::Node,
                        );
                        plan.append_as(one, part);
                    }
                    let counts = self.counts(planned.iter().flatten());
                    Ok(if plan.is_empty() {
                        Attempt::Answer(counts)
                    } else {
                        Attempt::Write(plan, counts)
                    })
                }
            })
            .await;
        match committed {
            Err(DataMigrationError::Write(EngineError::ConflictUnhandled)) => {
                let mut writes: Vec<NodeWrite> =
                    planned.into_inner().into_iter().flatten().collect();
                if writes.len() < 2 {
                    return Err(StoreError::TransactionConflict.into());
                }
                let second = writes.split_off(writes.len() / 2);
                let first = Box::pin(self.commit(writes)).await?;
                let second = Box::pin(self.commit(second)).await?;
                Ok(first.iter().zip(&second).map(|(a, b)| a + b).collect())
            }
            committed => committed,
        }
    }

    /// Reads `write`'s node again, after someone else changed it, and migrates it again;
    /// `None` when it was deleted meanwhile or needs no change any more.
    async fn read_again(&self, write: &mut Option<NodeWrite>) -> Result<(), DataMigrationError> {
        let Some(failed) = write.take() else {
            return Ok(());
        };
        let key = Key::same(engine::derive::text(&failed.current, keys::PK).to_owned());
        if let Some(fresh) = self.store.get_item_consistent(&key).await? {
            *write = self.write_of(fresh).await?;
        }
        Ok(())
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

/// What became of one unique value of a node.
enum Rekeyed {
    /// Moved to its key today (or would be, in a dry run).
    Moved,
    /// Another node holds it at its key today: it stays where it is (the line says so).
    Collides(String),
    /// Its key did not change, or the node no longer holds it at the earlier key.
    Stays,
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
    let scope = RequestScope::of_tool(store);
    let (mut moved, mut collisions) = (0, Vec::new());
    for field in type_def.unique_fields() {
        let (id, node_key, text) = (&id, &node_key, &text);
        // The node as scanned first; read again when it, or one of the two items, changed
        // meanwhile.
        let rekeyed = Driver::new(&scope, "unique value moved to its key today")
            .run_as(|learned| async move {
                let node = match learned.lost_part {
                    None => Some(scanned.clone()),
                    Some(_) => store.get_item_consistent(node_key).await?,
                };
                let Some(value) = node.as_ref().and_then(|node| node.get(&field.name)) else {
                    return Ok(Attempt::Answer(Rekeyed::Stays));
                };
                let plain = engine::derive::unique_text(value);
                let today = keys::unique_key(&type_def.name, &field.name, &plain);
                let earlier = keys::unique_key_v1(&type_def.name, &field.name, &plain);
                if today == earlier {
                    return Ok(Attempt::Answer(Rekeyed::Stays));
                }
                let held = store
                    .get_item_consistent(&Key::same(earlier.clone()))
                    .await?;
                let Some(held) = held.filter(|held| text(held, "id") == *id) else {
                    return Ok(Attempt::Answer(Rekeyed::Stays));
                };
                let holder = store
                    .get_item_consistent(&Key::same(today.clone()))
                    .await?
                    .map(|item| text(&item, "id"));
                if let Some(other) = holder.as_ref().filter(|holder| *holder != id) {
                    return Ok(Attempt::Answer(Rekeyed::Collides(format!(
                        "{}.{} {plain:?} of {id} and the value of {other} are both {:?}",
                        type_def.name,
                        field.name,
                        keys::normalize_unique(&plain)
                    ))));
                }
                if dry_run {
                    return Ok(Attempt::Answer(Rekeyed::Moved));
                }
                let mut plan = Plan::default();
                plan.push(
                    Write::Delete {
                        key: Key::same(earlier),
                        condition: vec![Clause::Equals("id".to_owned(), AttrValue::S(id.clone()))],
                    },
                    Purpose::Node,
                );
                plan.push(
                    Write::Check {
                        key: node_key.clone(),
                        condition: vec![Clause::Equals(field.name.clone(), value.clone())],
                    },
                    Purpose::Node,
                );
                if holder.is_none() {
                    let mut item = held;
                    item.insert(keys::PK.to_owned(), AttrValue::S(today.clone()));
                    item.insert(keys::SK.to_owned(), AttrValue::S(today));
                    plan.push(
                        Write::Put {
                            item,
                            condition: vec![Clause::NotExists],
                        },
                        Purpose::Node,
                    );
                }
                Ok::<_, DataMigrationError>(Attempt::Write(plan, Rekeyed::Moved))
            })
            .await?;
        match rekeyed {
            Rekeyed::Moved => moved += 1,
            Rekeyed::Collides(line) => collisions.push(line),
            Rekeyed::Stays => {}
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::CallLog;

    /// A farm as a version before type indexes wrote it.
    fn earlier_farm(id: &str, name: &str, version: i64) -> Item {
        Item::from_iter([
            (keys::PK.to_owned(), AttrValue::S(keys::node_key(id))),
            (keys::SK.to_owned(), AttrValue::S(keys::node_key(id))),
            ("__typename".to_owned(), AttrValue::S("Farm".to_owned())),
            ("id".to_owned(), AttrValue::S(id.to_owned())),
            ("name".to_owned(), AttrValue::S(name.to_owned())),
            ("version".to_owned(), AttrValue::N(version.to_string())),
        ])
    }

    /// A node someone else changed between the page's read and its commit fails only its own
    /// condition: it alone is read again and migrated again, and the page commits with both
    /// that change and the migration's.
    #[tokio::test]
    async fn a_node_changed_after_its_read_is_read_again_alone_and_migrated() {
        let model =
            Model::parse("s.graphql", "type Farm @model { name: String! }").expect("a schema");
        let store = crate::store::loopback_store_indexed("migrate-reread", &model.indexes).await;
        let put = |item: Item| Write::Put {
            item,
            condition: vec![],
        };
        let farms: Vec<Item> = ["a", "b", "c"]
            .iter()
            .map(|id| earlier_farm(id, "Hill", 1))
            .collect();
        store
            .transact_write(farms.iter().cloned().map(put).collect())
            .await
            .expect("the farms");
        let farm = model.type_def("Farm").expect("Farm");
        let migrations = super::super::data::builtin_migrations(&model);
        let fill = migrations
            .iter()
            .find(|m| m.name == "builtin-type-index-Farm")
            .expect("the type index migration");
        let calls = Arc::new(CallLog::with_budget(usize::MAX));
        let recording = store.recording(calls.clone());
        let batch = Batch::new(&recording, &model, farm, vec![fill]);
        let mut writes = Vec::new();
        for read in farms {
            writes.push(
                batch
                    .write_of(read)
                    .await
                    .expect("a write")
                    .expect("a change"),
            );
        }
        // Renamed by someone else after the page was read.
        store
            .transact_write(vec![put(earlier_farm("b", "Renamed", 2))])
            .await
            .expect("the rename");
        assert_eq!(batch.commit(writes).await.expect("the page commits"), [3]);
        let operations: Vec<&str> = calls.calls().into_iter().map(|c| c.operation).collect();
        assert_eq!(
            operations,
            ["TransactWriteItems", "GetItem", "TransactWriteItems"],
            "the page, the changed node read again alone, the page again"
        );
        for id in ["a", "b", "c"] {
            let node = store
                .get_item_consistent(&Key::same(keys::node_key(id)))
                .await
                .expect("a read")
                .expect("the farm");
            let (name, version) = if id == "b" {
                ("Renamed", 2)
            } else {
                ("Hill", 1)
            };
            // What the type index migration makes of the farm as it now is.
            let mut expected = earlier_farm(id, name, version);
            engine::derive::set_list_attributes(&model, farm, &mut expected);
            assert!(expected.len() > 6, "a type index's attributes");
            assert_eq!(node, expected, "{id}");
        }
    }
}
