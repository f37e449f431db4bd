//! Running migrations: in name order, each recorded in the table as `MIGRATION#<name>`
//! (checksum, status, per-segment checkpoint, counts, and the Scan's segment count): an applied
//! migration is skipped, an applied migration whose file changed is refused, and a run that
//! stopped midway resumes after the last page each Scan segment finished (but for a run of one
//! segment that an earlier version read in another order: it starts again, `read_record`).
//! Every changed node is written with a condition on the version it was read at (and its
//! version bumped), so a client write racing the migration is never lost: the node is read
//! again and migrated again (`nodes.rs`).
//!
//! The record's `changed` adds up the changes of every run, each page's saved with its
//! checkpoint. A run stopped midway leaves uncounted the nodes of the pages it had in flight
//! (at most one page per segment), which the next run finds already migrated.

use std::collections::HashMap;

use super::data::{DataMigrationError, Migration, MigrationRun, builtin_migrations};
use super::nodes::{Batch, rekey_unique_values};
use super::progress::{Progress, Step};
use crate::check;
use crate::engine;
use crate::keys;
use crate::keys::TYPENAME;
use crate::model::Model;
use crate::store::{AttrValue, Clause, Item, Key, ScanPage, Store, StoreError, Write};

/// Items a Scan page evaluates; a checkpoint is written after each page, and its changed
/// nodes in transactions of 100 (`nodes.rs`). A page of 100 made the records' writes a third
/// of a run on the embedded store.
const PAGE: usize = 1000;

/// Applies every migration not yet applied, in order. With `dry_run`, writes nothing and
/// reports what would change.
///
/// The shipped migrations of nodes (type indexes, `@index` entries, unique values) that are
/// pending together run as one [`Pass`]: one Scan of the table for all of them, each node
/// migrated by every one of its type and written once. Each scanned the whole table by
/// itself, and on the embedded store the scans, not the writes, were most of a run's time
/// (`bench/migrate.py`).
pub async fn apply_migrations(
    store: &Store,
    model: &Model,
    migrations: &[Migration],
    dry_run: bool,
    progress: Progress<'_>,
) -> Result<Vec<MigrationRun>, DataMigrationError> {
    let mut runs = Vec::with_capacity(migrations.len());
    let together = |m: &Migration| m.is_builtin() && !m.fill_counts;
    let mut next = 0;
    while next < migrations.len() {
        let end = migrations[next..]
            .iter()
            .position(|m| !together(m))
            .map_or(migrations.len(), |n| next + n)
            .max(next + 1);
        let group: Vec<&Migration> = migrations[next..end].iter().collect();
        runs.extend(apply(store, model, &group, dry_run, progress).await?);
        next = end;
    }
    // A migration file writes nodes whole, outside the engine's writes, which keep the counts:
    // once one has changed anything, the counts are set again from what the table holds.
    let files_changed = migrations
        .iter()
        .zip(&runs)
        .any(|(migration, run)| !migration.is_builtin() && !run.skipped && run.changed > 0);
    if files_changed && !dry_run {
        let repair = check::repair_counts(store, model, false, &|_| {}).await?;
        if repair.fixed > 0 {
            tracing::info!(
                fixed = repair.fixed,
                "counts set again after the migration files"
            );
        }
    }
    Ok(runs)
}

fn record_key(name: &str) -> Key {
    Key::same(keys::migration_key(name))
}

/// Whether the table records migration `name` as applied.
/// Whether `migration` is recorded as applied, as it is today (its checksum).
pub(super) async fn is_applied(store: &Store, migration: &Migration) -> Result<bool, StoreError> {
    let record = store
        .get_item_consistent(&record_key(&migration.name))
        .await?;
    Ok(record
        .map(read_record)
        .is_some_and(|record| record.applied && record.checksum == migration.checksum))
}

/// Records the migrations tablegraph ships as applied, in one transaction, where no record of
/// them exists yet: for a table made just now, which holds nothing written in an earlier
/// format, so that its next start does not scan it once per shipped migration.
pub async fn record_builtins_applied(store: &Store, model: &Model) -> Result<(), StoreError> {
    let writes = builtin_migrations(model)
        .into_iter()
        .map(|migration| {
            let mut item = record_item(&migration, 0, RecordStatus::Applied);
            item.insert("checkpoint".to_owned(), AttrValue::M(Item::default()));
            Write::Put {
                item,
                condition: vec![Clause::NotExists],
            }
        })
        .collect::<Vec<_>>();
    for chunk in writes.chunks(crate::store::MAX_TRANSACTION_ITEMS) {
        match store.transact_write(chunk.to_vec()).await {
            // Another process recorded them first.
            Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Forgets that the migrations tablegraph ships were applied, so that the next `migrate` (or
/// `serve` on the embedded store) applies them again: after an import, which may bring items
/// in earlier formats into a table that had them all.
pub async fn forget_builtins(store: &Store, model: &Model) -> Result<(), StoreError> {
    for migration in builtin_migrations(model) {
        store
            .transact_write(vec![Write::Delete {
                key: record_key(&migration.name),
                condition: Vec::new(),
            }])
            .await?;
    }
    Ok(())
}

/// The recorded state of one migration.
struct Record {
    applied: bool,
    checksum: String,
    /// Per segment: `None` when it has not started, `Some(None)` when it is done, else the key
    /// its next page starts after.
    checkpoints: HashMap<u16, Option<Key>>,
    /// Nodes the runs so far changed.
    changed: usize,
    /// The segments its Scan is split into: a run resumes with the ones its checkpoints are of.
    segments: u16,
}

fn read_record(item: Item) -> Record {
    let text = |name: &str| {
        item.get(name)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let segments = item
        .get("segments")
        .and_then(AttrValue::as_i64)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| *n > 0);
    let mut checkpoints = HashMap::new();
    if let Some(AttrValue::M(map)) = item.get("checkpoint") {
        for (label, value) in map {
            // A Scan of one segment is in key order, its checkpoint labelled `key`. Runs of
            // one segment labelled `0` read the embedded store in its segments' hash order, whose
            // keys say nothing of what a Scan in key order has left: such a run starts again
            // from the start (what it migrated already is found unchanged). An earlier version
            // reading a `key` label does the same.
            let segment = match label.as_str() {
                KEY_ORDER if segments == Some(1) => 0,
                _ if segments == Some(1) => continue,
                number => match number.parse::<u16>() {
                    Ok(segment) => segment,
                    Err(_) => continue,
                },
            };
            let key = match value {
                AttrValue::M(key) => {
                    let part = |n: &str| key.get(n).and_then(AttrValue::as_str).map(str::to_owned);
                    part(keys::PK)
                        .zip(part(keys::SK))
                        .map(|(pk, sk)| Key { pk, sk })
                }
                _ => None,
            };
            checkpoints.insert(segment, key);
        }
    }
    Record {
        applied: text("status") == "applied",
        checksum: text("checksum"),
        checkpoints,
        changed: item
            .get("changed")
            .and_then(AttrValue::as_i64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0),
        // Runs before the segment count was recorded used four.
        segments: segments.unwrap_or(4),
    }
}

/// What a migration's record says before a run.
enum Before {
    /// Applied already: nothing to do.
    Applied,
    /// To run, from its record if it has one.
    Pending(Option<Record>),
}

/// Reads `migration`'s record and decides what is left to do. A shipped migration recorded
/// under another checksum describes another format (a type index of another layout, say): it
/// is applied again, from the start. A file's is refused.
async fn before(
    store: &Store,
    migration: &Migration,
    dry_run: bool,
) -> Result<Before, DataMigrationError> {
    let key = record_key(&migration.name);
    let record = store.get_item_consistent(&key).await?.map(read_record);
    let record = match record {
        Some(recorded) if migration.is_builtin() && recorded.checksum != migration.checksum => {
            if !dry_run {
                store
                    .transact_write(vec![Write::Delete {
                        key,
                        condition: Vec::new(),
                    }])
                    .await?;
            }
            None
        }
        other => other,
    };
    if let Some(record) = &record
        && record.checksum != migration.checksum
    {
        return Err(DataMigrationError::Edited {
            file: migration.file.display().to_string(),
            recorded: record.checksum.clone(),
            current: migration.checksum.clone(),
        });
    }
    if record.as_ref().is_some_and(|r| r.applied) {
        return Ok(Before::Applied);
    }
    if let Some(problem) = &migration.problem {
        return Err(DataMigrationError::Rejected(problem.clone()));
    }
    Ok(Before::Pending(record))
}

/// Applies `migrations`: those pending with the same checkpoints (all new, say) in one
/// [`Pass`], the others each in a pass of its own. Answers their runs in order.
async fn apply(
    store: &Store,
    model: &Model,
    migrations: &[&Migration],
    dry_run: bool,
    progress: Progress<'_>,
) -> Result<Vec<MigrationRun>, DataMigrationError> {
    // Each scans the whole table: its item count is how far a scan goes.
    let about = store
        .describe_table()
        .await?
        .and_then(|status| status.item_count);
    let mut runs: Vec<Option<MigrationRun>> = vec![None; migrations.len()];
    let mut passes: Vec<Vec<(usize, Option<Record>)>> = Vec::new();
    for (index, migration) in migrations.iter().enumerate() {
        match before(store, migration, dry_run).await? {
            Before::Applied => {
                let run = MigrationRun {
                    name: migration.name.clone(),
                    skipped: true,
                    ..MigrationRun::default()
                };
                progress(Step::Finished {
                    name: &migration.name,
                    run: &run,
                });
                runs[index] = Some(run);
            }
            Before::Pending(record) => {
                let place =
                    |r: &Option<Record>| r.as_ref().map(|r| (r.segments, sorted(&r.checkpoints)));
                match passes
                    .iter_mut()
                    .find(|pass| place(&pass[0].1) == place(&record))
                {
                    Some(pass) => pass.push((index, record)),
                    None => passes.push(vec![(index, record)]),
                }
            }
        }
    }
    for pass in passes {
        let members: Vec<&Migration> = pass.iter().map(|(index, _)| migrations[*index]).collect();
        let name = match members.as_slice() {
            [one] => one.name.clone(),
            many => format!("{} shipped migrations together", many.len()),
        };
        progress(Step::Started { name: &name, about });
        let (indexes, records): (Vec<usize>, Vec<Option<Record>>) = pass.into_iter().unzip();
        let done = if members.len() == 1 && members[0].fill_counts {
            vec![fill_counts(store, model, members[0], dry_run, progress).await?]
        } else {
            let pass = Pass::new(store, model, &members, records, dry_run);
            pass.run(&name, progress).await?
        };
        for (index, run) in indexes.into_iter().zip(done) {
            progress(Step::Finished {
                name: &run.name,
                run: &run,
            });
            runs[index] = Some(run);
        }
    }
    Ok(runs.into_iter().flatten().collect())
}

/// Checkpoints in a comparable order.
fn sorted(checkpoints: &HashMap<u16, Option<Key>>) -> Vec<(u16, Option<Key>)> {
    let mut sorted: Vec<(u16, Option<Key>)> = checkpoints
        .iter()
        .map(|(segment, key)| (*segment, key.clone()))
        .collect();
    sorted.sort_by(|a, b| {
        let key = |k: &Option<Key>| k.as_ref().map(|k| (k.pk.clone(), k.sk.clone()));
        (a.0, key(&a.1)).cmp(&(b.0, key(&b.1)))
    });
    sorted
}

/// One Scan of the table that runs several migrations (or one): each node of a member's type
/// migrated by every member of its type (`nodes::Batch`, one write a node), unique values
/// moved, and every member's record saved with the Scan's checkpoints after each page, in one
/// transaction.
struct Pass<'a> {
    store: &'a Store,
    model: &'a Model,
    dry_run: bool,
    segments: u16,
    members: Vec<&'a Migration>,
    /// Per member: its run, its record item; and the Scan's checkpoints.
    state: tokio::sync::Mutex<PassState>,
    /// The checkpoints the Scan starts from (a resumed run's).
    start: HashMap<u16, Option<Key>>,
}

struct PassState {
    runs: Vec<MigrationRun>,
    records: Vec<Item>,
    checkpoints: HashMap<u16, Option<Key>>,
    /// The runs of all members, summed, for progress.
    total: MigrationRun,
}

impl<'a> Pass<'a> {
    /// Members pending with the same checkpoints (`records`, one per member).
    fn new(
        store: &'a Store,
        model: &'a Model,
        members: &[&'a Migration],
        records: Vec<Option<Record>>,
        dry_run: bool,
    ) -> Pass<'a> {
        let first = records.first().and_then(Option::as_ref);
        // A run resumed keeps its segments; one that starts from the start takes the store's
        // (on the embedded store one, in key order: `Store::scan_segments`).
        let segments = first
            .filter(|r| !r.checkpoints.is_empty())
            .map_or_else(|| store.scan_segments(), |r| r.segments);
        let start = first.map(|r| r.checkpoints.clone()).unwrap_or_default();
        let resumed = !start.is_empty();
        let mut runs = Vec::new();
        let mut items = Vec::new();
        for (migration, record) in members.iter().zip(&records) {
            runs.push(MigrationRun {
                name: migration.name.clone(),
                resumed,
                ..MigrationRun::default()
            });
            // A resumed run counts on from what the runs before it changed.
            let changed_before = record.as_ref().map_or(0, |r| r.changed);
            items.push(record_item(
                migration,
                changed_before,
                RecordStatus::Running { segments },
            ));
        }
        Pass {
            store,
            model,
            dry_run,
            segments,
            members: members.to_vec(),
            state: tokio::sync::Mutex::new(PassState {
                runs,
                records: items,
                checkpoints: start.clone(),
                total: MigrationRun::default(),
            }),
            start,
        }
    }

    async fn run(
        self,
        name: &str,
        progress: Progress<'_>,
    ) -> Result<Vec<MigrationRun>, DataMigrationError> {
        if !self.dry_run && self.start.is_empty() {
            let mut state = self.state.lock().await;
            let PassState {
                records,
                checkpoints,
                ..
            } = &mut *state;
            self.save(records, checkpoints).await?;
        }
        let segments = (0..self.segments).map(|segment| {
            let start = self.start.get(&segment).cloned();
            self.segment(segment, start, name, progress)
        });
        futures::future::try_join_all(segments).await?;
        let PassState {
            mut runs,
            mut records,
            checkpoints,
            ..
        } = self.state.into_inner();
        if self.dry_run {
            return Ok(runs);
        }
        // A member that left unique values where they were is not applied: the next run scans
        // again. The others are.
        let collided = runs.iter().position(|run| !run.collisions.is_empty());
        for (run, record) in runs.iter().zip(records.iter_mut()) {
            if run.collisions.is_empty() {
                record.insert("status".to_owned(), AttrValue::S("applied".to_owned()));
                record.insert("appliedAt".to_owned(), AttrValue::S(engine::formats::now()));
            }
        }
        let kept: Vec<(Item, HashMap<u16, Option<Key>>)> = runs
            .iter()
            .zip(records)
            .map(|(run, record)| {
                let at = if run.collisions.is_empty() {
                    checkpoints.clone()
                } else {
                    HashMap::new()
                };
                (record, at)
            })
            .collect();
        save_records(self.store, kept, &self.members).await?;
        if let Some(index) = collided {
            let run = runs.swap_remove(index);
            return Err(DataMigrationError::Collisions {
                name: run.name,
                collisions: run.collisions,
            });
        }
        Ok(runs)
    }

    async fn save(
        &self,
        records: &mut [Item],
        checkpoints: &HashMap<u16, Option<Key>>,
    ) -> Result<(), DataMigrationError> {
        let kept = records
            .iter()
            .map(|record| (record.clone(), checkpoints.clone()))
            .collect();
        save_records(self.store, kept, &self.members).await
    }

    /// Scans segment `segment` from `start` (`Some(None)`: it is done) to its end.
    async fn segment(
        &self,
        segment: u16,
        start: Option<Option<Key>>,
        name: &str,
        progress: Progress<'_>,
    ) -> Result<(), DataMigrationError> {
        // A segment recorded as done has nothing left; one with a key resumes after it.
        let cursor = match start {
            Some(None) => return Ok(()),
            Some(Some(key)) => Some(key),
            None => None,
        };
        // One member reads only its type's items; several read them all.
        let typename = match self.members.as_slice() {
            [one] => Some(one.type_name.as_str()),
            _ => None,
        };
        let scan = |after: Option<Key>| async move {
            self.store
                .scan_page(segment, self.segments, after.as_ref(), typename, PAGE)
                .await
        };
        let mut upcoming = scan(cursor).await?;
        loop {
            let ScanPage {
                items,
                next,
                evaluated,
            } = upcoming;
            // The next page is read while this one is written: reads and the writer run side
            // by side, and the pages hold other items.
            let ahead = async {
                match &next {
                    Some(key) => scan(Some(key.clone())).await.map(Some),
                    None => Ok(None),
                }
            };
            let (page, ahead) = futures::join!(self.page(&items), ahead);
            let page = page?;
            let mut guard = self.state.lock().await;
            let state = &mut *guard;
            for (index, (scanned, changed, collisions)) in page.into_iter().enumerate() {
                let run = &mut state.runs[index];
                run.scanned += scanned;
                run.evaluated += evaluated;
                run.changed += changed;
                run.collisions.extend(collisions);
                // The record counts every run's changes, so one that stops here leaves its
                // share.
                let record = &mut state.records[index];
                let recorded = record
                    .get("changed")
                    .and_then(AttrValue::as_i64)
                    .unwrap_or(0);
                record.insert(
                    "changed".to_owned(),
                    AttrValue::N((recorded + changed as i64).to_string()),
                );
                state.total.changed += changed;
            }
            state.total.evaluated += evaluated;
            state.checkpoints.insert(segment, next.clone());
            if !self.dry_run {
                let kept = state
                    .records
                    .iter()
                    .map(|record| (record.clone(), state.checkpoints.clone()))
                    .collect();
                save_records(self.store, kept, &self.members).await?;
            }
            let total = MigrationRun {
                name: name.to_owned(),
                ..state.total.clone()
            };
            progress(Step::Page { name, run: &total });
            drop(guard);
            match ahead? {
                Some(page) => upcoming = page,
                None => return Ok(()),
            }
        }
    }

    /// Migrates the nodes of one page: per member, the nodes of its type scanned, changed, and
    /// the unique values that stayed where they were.
    async fn page(
        &self,
        items: &[Item],
    ) -> Result<Vec<(usize, usize, Vec<String>)>, DataMigrationError> {
        let mut outcome: Vec<(usize, usize, Vec<String>)> =
            vec![(0, 0, Vec::new()); self.members.len()];
        let mut types: Vec<&str> = self.members.iter().map(|m| m.type_name.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        for type_name in types {
            let nodes: Vec<&Item> = items
                .iter()
                .filter(|item| is_node(item) && typename_of(item) == type_name)
                .collect();
            let type_def = self
                .model
                .type_def(type_name)
                .expect("migrations are validated against the model");
            let of_type: Vec<usize> = (0..self.members.len())
                .filter(|i| self.members[*i].type_name == type_name)
                .collect();
            for &i in &of_type {
                outcome[i].0 += nodes.len();
            }
            // The node's own changes first, one write a node; then unique values, which are
            // items of their own, checked against the node's value.
            let (rekeys, writes): (Vec<usize>, Vec<usize>) = of_type
                .into_iter()
                .partition(|i| self.members[*i].rekey_unique);
            if !writes.is_empty() {
                let batch = Batch::new(
                    self.store,
                    self.model,
                    type_def,
                    writes.iter().map(|i| self.members[*i]).collect(),
                );
                let changed = batch.migrate(&nodes, self.dry_run).await?;
                for (i, changed) in writes.into_iter().zip(changed) {
                    outcome[i].1 += changed;
                }
            }
            for i in rekeys {
                for node in &nodes {
                    let (moved, collided) =
                        rekey_unique_values(self.store, type_def, node, self.dry_run).await?;
                    outcome[i].1 += moved;
                    outcome[i].2.extend(collided);
                }
            }
        }
        Ok(outcome)
    }
}

fn typename_of(item: &Item) -> &str {
    item.get(TYPENAME)
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
}

/// The label of a checkpoint of a Scan of one segment, read in key order
/// ([`Store::scan_page`]); a Scan of several labels each segment's by its number.
const KEY_ORDER: &str = "key";

/// Where a migration's record says it is.
enum RecordStatus {
    /// Running, over a Scan of this many segments.
    Running {
        segments: u16,
    },
    Applied,
}

/// The record of `migration`, with `changed` so far.
fn record_item(migration: &Migration, changed: usize, status: RecordStatus) -> Item {
    let key = record_key(&migration.name);
    let mut item = Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(key.pk)),
        (keys::SK.to_owned(), AttrValue::S(key.sk)),
        (TYPENAME.to_owned(), AttrValue::S("Migration".to_owned())),
        (
            "checksum".to_owned(),
            AttrValue::S(migration.checksum.clone()),
        ),
        (
            "description".to_owned(),
            AttrValue::S(migration.description.clone()),
        ),
        ("changed".to_owned(), AttrValue::N(changed.to_string())),
    ]);
    let text = |value: &str| AttrValue::S(value.to_owned());
    match status {
        RecordStatus::Running { segments } => {
            item.insert("status".to_owned(), text("running"));
            item.insert("startedAt".to_owned(), AttrValue::S(engine::formats::now()));
            item.insert("segments".to_owned(), AttrValue::N(segments.to_string()));
        }
        RecordStatus::Applied => {
            item.insert("status".to_owned(), text("applied"));
            item.insert("appliedAt".to_owned(), AttrValue::S(engine::formats::now()));
        }
    }
    item
}

/// The counts migration: one repair of every count over a full scan (which a stopped run
/// simply repeats), then its record.
async fn fill_counts(
    store: &Store,
    model: &Model,
    migration: &Migration,
    dry_run: bool,
    progress: Progress<'_>,
) -> Result<MigrationRun, DataMigrationError> {
    // Its scans tell their pages as a pass's do.
    let read = |evaluated: u64| {
        let run = MigrationRun {
            name: migration.name.clone(),
            evaluated: usize::try_from(evaluated).unwrap_or(usize::MAX),
            ..MigrationRun::default()
        };
        progress(Step::Page {
            name: &migration.name,
            run: &run,
        });
    };
    let repair = check::repair_counts(store, model, dry_run, &read).await?;
    let mut run = MigrationRun {
        name: migration.name.clone(),
        scanned: repair.before.items,
        changed: if dry_run {
            repair.before.violations.len()
        } else {
            repair.fixed
        },
        ..MigrationRun::default()
    };
    run.evaluated = repair.before.items;
    if dry_run {
        return Ok(run);
    }
    if let Some(left) = repair
        .after
        .violations
        .iter()
        .find(|v| v.kind == check::ViolationKind::WrongCount)
    {
        return Err(DataMigrationError::Rejected(format!(
            "{}: a count is still wrong after {} fixes ({} {}: {}); stop other writers and \
             run migrate again",
            migration.name, repair.fixed, left.pk, left.sk, left.detail
        )));
    }
    {
        let record = record_item(migration, run.changed, RecordStatus::Applied);
        save_records(store, vec![(record, HashMap::new())], &[migration]).await?;
    }
    run.scanned = repair.before.items;
    Ok(run)
}

/// Writes each record with its checkpoints, in one transaction, unless the table holds a
/// record of another checksum (`members` name them in errors).
async fn save_records(
    store: &Store,
    records: Vec<(Item, HashMap<u16, Option<Key>>)>,
    members: &[&Migration],
) -> Result<(), DataMigrationError> {
    let writes = records
        .into_iter()
        .map(|(mut record, checkpoints)| {
            let one_segment = record.get("segments").and_then(AttrValue::as_i64) == Some(1);
            let map = checkpoints
                .iter()
                .map(|(segment, key)| {
                    let label = if one_segment {
                        KEY_ORDER.to_owned()
                    } else {
                        segment.to_string()
                    };
                    let value = match key {
                        Some(key) => AttrValue::M(Item::from_iter([
                            (keys::PK.to_owned(), AttrValue::S(key.pk.clone())),
                            (keys::SK.to_owned(), AttrValue::S(key.sk.clone())),
                        ])),
                        None => AttrValue::S("done".to_owned()),
                    };
                    (label, value)
                })
                .collect();
            record.insert("checkpoint".to_owned(), AttrValue::M(map));
            let checksum = record.get("checksum").cloned().unwrap_or(AttrValue::Null);
            Write::Put {
                item: record,
                condition: vec![Clause::AbsentOrEquals("checksum".to_owned(), checksum)],
            }
        })
        .collect();
    store.transact_write(writes).await.map_err(|e| match e {
        StoreError::ConditionFailed { index } => DataMigrationError::Contended {
            name: members
                .get(index)
                .map(|m| m.name.clone())
                .unwrap_or_default(),
        },
        other => other.into(),
    })
}

fn is_node(item: &Item) -> bool {
    let text = |n: &str| item.get(n).and_then(AttrValue::as_str).unwrap_or_default();
    text(keys::PK).starts_with("NODE#") && text(keys::PK) == text(keys::SK)
}
