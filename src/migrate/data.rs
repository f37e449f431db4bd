//! Data migrations: the files of `migrations/`, applied in name order by `tablegraph migrate`
//! after the table and its indexes match the schema.
//!
//! A migration file is declarative TOML and acts on the nodes of one `__typename`:
//!
//! ```toml
//! description = "Farm.animals (GSI02, by name) was added: give every cow its slot"
//! type = "Cow"
//! remove = ["legacyTag"]       # attributes to delete
//! recompute_slots = true       # rewrite PKnn/SKnn as the schema derives them
//! rebuild_edge_sets = false    # rewrite the edge set from the node's edge items
//!
//! [rename]                     # old attribute = new attribute (when the new one is absent)
//! colour = "color"
//!
//! [set_default]                # attribute = value, where the attribute is absent or null
//! kind = "OBJECTIVE"
//! ```
//!
//! Each step is idempotent, so a run can be repeated or resumed. A run records itself in the
//! table as `MIGRATION#<name>` (checksum, status, per-segment checkpoint, counts): an applied
//! migration is skipped, an applied migration whose file changed is refused, and a run that
//! stopped midway resumes after the last page each Scan segment finished. Every changed node is
//! written with a condition on the version it was read at (and its version bumped), so a client
//! write racing the migration is never lost: the node is read again and migrated again.
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
//!
//! The record's `changed` adds up the changes of every run, each page's saved with its
//! checkpoint. A run stopped midway leaves uncounted the nodes of the pages it had in flight
//! (at most one page per segment), which the next run finds already migrated.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::Digest as _;

use super::progress::{Progress, Step};
use crate::check;
use crate::engine;
use crate::keys;
use crate::model::{FieldKind, Model, ScalarType, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, ScanPage, Store, StoreError, Write};

/// Parallel Scan segments of a migration.
const SEGMENTS: u16 = 4;
/// Items a Scan page evaluates; a checkpoint is written after each page. As many as one
/// transaction writes, so that a page's changed nodes are one write.
const PAGE: usize = crate::store::MAX_TRANSACTION_ITEMS;
/// A transaction's bytes stay well under DynamoDB's 4 MB.
const MAX_TRANSACTION_BYTES: usize = 3_500_000;
/// Times a node changed by someone else meanwhile is read and migrated again.
const WRITE_ATTEMPTS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum DataMigrationError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("cannot read {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error(
        "{file} was changed after it was applied (recorded checksum {recorded}, file {current}); \
         leave applied migrations as they are and add a new one"
    )]
    Edited {
        file: String,
        recorded: String,
        current: String,
    },
    #[error("{0}")]
    Rejected(String),
    #[error("another migrate is running {name}, or its record changed meanwhile; try again")]
    Contended { name: String },
    #[error(
        "migration {name}: {} unique values are now the same value as another node's, and stay \
         where they were:\n{}\nchange one value of each pair, then run `tablegraph migrate` again",
        collisions.len(),
        collisions.join("\n")
    )]
    Collisions {
        name: String,
        collisions: Vec<String>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a file asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    description: String,
    #[serde(rename = "type")]
    type_name: String,
    #[serde(default)]
    remove: Vec<String>,
    #[serde(default)]
    recompute_slots: bool,
    #[serde(default)]
    rebuild_edge_sets: bool,
    #[serde(default)]
    rename: BTreeMap<String, String>,
    #[serde(default)]
    set_default: BTreeMap<String, toml::Value>,
}

/// One validated migration file.
#[derive(Debug, Clone, Default)]
pub struct Migration {
    /// The file name without `.toml`; migrations run in this order.
    pub name: String,
    pub file: PathBuf,
    pub description: String,
    /// SHA-256 of the file's bytes, hex.
    pub checksum: String,
    type_name: String,
    defaults: Vec<(String, AttrValue)>,
    renames: Vec<(String, String)>,
    removes: Vec<String>,
    recompute_slots: bool,
    rebuild_edge_sets: bool,
    /// Moves unique values written before values were compared by Unicode normalization to the
    /// key they have today (a migration tablegraph ships, not a file's).
    rekey_unique: bool,
    /// Gives each node the attributes of its type index shard, and nothing else (a migration
    /// tablegraph ships).
    fill_type_index: bool,
    /// Gives each node the attributes of its entry in the `@index` of this name, and nothing
    /// else (a migration tablegraph ships).
    fill_index: Option<String>,
    /// Sets every count (`totalCount`) to what the table holds (a migration tablegraph ships,
    /// over the whole table rather than one type).
    fill_counts: bool,
    /// Why the file does not fit today's schema. An applied migration is still skipped (it was
    /// checked against the schema it ran on); a pending one stops `migrate` with this.
    problem: Option<String>,
}

/// The migrations tablegraph ships ([`builtin_migrations`]), then every `*.toml` of `dir`
/// read and validated against the model, in name order. A missing directory has no files.
pub fn load_migrations(dir: &Path, model: &Model) -> Result<Vec<Migration>, DataMigrationError> {
    let mut migrations = builtin_migrations(model);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(migrations);
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    let files = paths
        .iter()
        .map(|path| match load_one(path, model) {
            Err(DataMigrationError::Invalid { file, message }) => {
                let bytes = std::fs::read(path).map_err(|source| DataMigrationError::Read {
                    file: file.clone(),
                    source,
                })?;
                Ok(Migration {
                    name: stem(path),
                    file: path.to_owned(),
                    checksum: hex(&sha2::Sha256::digest(&bytes)),
                    problem: Some(format!("{file}: {message}")),
                    ..Migration::default()
                })
            }
            other => other,
        })
        .collect::<Result<Vec<_>, _>>()?;
    migrations.extend(files);
    Ok(migrations)
}

impl Migration {
    /// Whether tablegraph ships this migration, rather than a file of `migrations/`.
    pub fn is_builtin(&self) -> bool {
        self.rekey_unique || self.fill_type_index || self.fill_index.is_some() || self.fill_counts
    }

    /// Whether it only puts nodes in an index: no change of the node, so no new version.
    fn fills_an_index(&self) -> bool {
        self.fill_type_index || self.fill_index.is_some()
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn load_one(path: &Path, model: &Model) -> Result<Migration, DataMigrationError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| DataMigrationError::Read {
        file: file.clone(),
        source,
    })?;
    let invalid = |message: String| DataMigrationError::Invalid {
        file: file.clone(),
        message,
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid("not UTF-8".to_owned()))?;
    let spec: Spec = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|span| text[..span.start].matches('\n').count() + 1);
        let message = e.message().to_owned();
        match line {
            Some(line) => invalid(format!("line {line}: {message}")),
            None => invalid(message),
        }
    })?;
    let type_def = model.type_def(&spec.type_name).ok_or_else(|| {
        invalid(format!(
            "type: {} is not a @model type of the schema",
            spec.type_name
        ))
    })?;
    let defaults = spec
        .set_default
        .iter()
        .map(|(field, value)| {
            default_value(model, type_def, field, value).map(|v| (field.clone(), v))
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(invalid)?;
    for (from, to) in &spec.rename {
        match type_def.field(to).map(|f| &f.kind) {
            Some(FieldKind::Scalar { unique: false, .. }) => {}
            Some(FieldKind::Scalar { unique: true, .. }) => {
                return Err(invalid(format!(
                    "rename: {to} is @unique; a migration cannot take unique values"
                )));
            }
            _ => {
                return Err(invalid(format!(
                    "rename: {to} is not a stored field of {}",
                    type_def.name
                )));
            }
        }
        if type_def.field(from).is_some() {
            return Err(invalid(format!(
                "rename: {from} is still a field of {}; rename only attributes the schema dropped",
                type_def.name
            )));
        }
        if is_managed(from) || crate::keys::is_slot_attribute(from) {
            return Err(invalid(format!(
                "rename: {from} is kept by tablegraph itself; it cannot be renamed"
            )));
        }
    }
    for attribute in &spec.remove {
        if is_managed(attribute) || crate::keys::is_slot_attribute(attribute) {
            return Err(invalid(format!(
                "remove: {attribute} is kept by tablegraph itself; use recompute_slots for slots"
            )));
        }
        if type_def.field(attribute).is_some() {
            return Err(invalid(format!(
                "remove: {attribute} is a field of {}; remove it from the schema first",
                type_def.name
            )));
        }
    }
    // A changed foreign key or sort field moves the node in its relations.
    let keyed: Vec<&str> = type_def
        .slots
        .iter()
        .flat_map(|slot| std::iter::once(slot.foreign_key.as_str()).chain(slot.sort_by.as_deref()))
        .collect();
    let touched = spec
        .rename
        .values()
        .chain(spec.set_default.keys())
        .find(|field| keyed.contains(&field.as_str()));
    if let Some(field) = touched
        && !spec.recompute_slots
    {
        return Err(invalid(format!(
            "{field} places {} nodes in a relation; add recompute_slots = true",
            type_def.name
        )));
    }
    if spec.rebuild_edge_sets
        && !model
            .edges
            .iter()
            .any(|e| e.from == type_def.name && e.edge_set)
    {
        return Err(invalid(format!(
            "rebuild_edge_sets: no edge type starting at {} keeps an edge set",
            type_def.name
        )));
    }
    Ok(Migration {
        name: stem(path),
        file: path.to_owned(),
        description: spec.description,
        checksum: hex(&sha2::Sha256::digest(&bytes)),
        type_name: spec.type_name,
        defaults,
        renames: spec.rename.into_iter().collect(),
        removes: spec.remove,
        recompute_slots: spec.recompute_slots,
        rebuild_edge_sets: spec.rebuild_edge_sets,
        ..Migration::default()
    })
}

/// The migrations tablegraph ships for its own stored formats, one per type with unique
/// fields: unique values written before values were compared by Unicode normalization
/// (`keys::normalize_unique`) move to the key they have today. They run before the files of
/// `migrations/`.
pub fn builtin_migrations(model: &Model) -> Vec<Migration> {
    let unique_values = model
        .types
        .iter()
        .filter(|type_def| type_def.unique_fields().next().is_some())
        .map(|type_def| Migration {
            name: format!("builtin-unique-values-2-{}", type_def.name),
            file: PathBuf::new(),
            description: format!(
                "Move {}'s unique values to their key under Unicode normalization (NFKC, case \
                 folding)",
                type_def.name
            ),
            checksum: hex(&sha2::Sha256::digest(
                b"unique values: NFKC, case folding, v2",
            )),
            type_name: type_def.name.clone(),
            rekey_unique: true,
            ..Migration::default()
        });
    // The type index `list<Types>` reads: every node gets its shard's attributes. One record
    // per type whose checksum is the index's layout (slot, shards): a schema that changes the
    // layout, or changes it back, fills the index again.
    let type_indexes = model.types.iter().filter_map(|type_def| {
        let list = type_def.list?;
        // Sorted by id, the layout reads as it always has, so its checksum holds.
        let layout = format!(
            "{} in {} shards{}",
            crate::keys::gsi_name(list.slot),
            list.shards,
            type_def
                .list_sort
                .as_ref()
                .map(|(field, _)| format!(" by {field}"))
                .unwrap_or_default()
        );
        Some(Migration {
            name: format!("builtin-type-index-{}", type_def.name),
            file: PathBuf::new(),
            description: format!(
                "Put every {} node in the type index of list{} ({layout})",
                type_def.name,
                crate::model::plural(&type_def.name)
            ),
            checksum: hex(&sha2::Sha256::digest(
                format!("type index on {layout}, v1").as_bytes(),
            )),
            type_name: type_def.name.clone(),
            fill_type_index: true,
            ..Migration::default()
        })
    });
    // Each `@index` likewise, its checksum the index's layout (slot, field, sort key field).
    let indexes = model.types.iter().flat_map(|type_def| {
        type_def.indexes.iter().map(move |index| {
            let layout = format!(
                "{} on {} by {}",
                crate::keys::gsi_name(index.slot),
                index.field,
                index.sort_field.as_ref().map_or("id", |(f, _)| f.as_str())
            );
            Migration {
                name: format!("builtin-index-{}-{}", type_def.name, index.name),
                file: PathBuf::new(),
                description: format!(
                    "Put every {} node in index {} of {} ({layout})",
                    type_def.name, index.name, index.query_field
                ),
                checksum: hex(&sha2::Sha256::digest(
                    format!("index {} on {layout}, v1", index.name).as_bytes(),
                )),
                type_name: type_def.name.clone(),
                fill_index: Some(index.name.clone()),
                ..Migration::default()
            }
        })
    });
    // Counts of connections and lists, kept since counts v1: set once from what the table
    // holds; every write keeps them after.
    let counts = Migration {
        name: "builtin-counts".to_owned(),
        description: "Set the counts behind totalCount to the members, edges and nodes the \
                      table holds"
            .to_owned(),
        checksum: hex(&sha2::Sha256::digest(counted_layout(model).as_bytes())),
        fill_counts: true,
        ..Migration::default()
    };
    // The indexes first: a unique-value collision stops the migrations after it. Counts last:
    // they count what the others leave.
    type_indexes
        .chain(indexes)
        .chain(unique_values)
        .chain(std::iter::once(counts))
        .collect()
}

/// What the counts count, written out: each list's shards, each relation's slot, each edge
/// type. A schema that changes any of them gets its counts set again by the next `migrate`
/// (or start on the embedded store).
fn counted_layout(model: &Model) -> String {
    let mut layout = String::from("counts, v1");
    for type_def in &model.types {
        if let Some(list) = type_def.list {
            layout.push_str(&format!("; list {} {}", type_def.name, list.shards));
        }
        for slot in &type_def.slots {
            layout.push_str(&format!(
                "; {} {} {} by {}",
                type_def.name, slot.slot, slot.element, slot.foreign_key
            ));
        }
    }
    for edge in &model.edges {
        layout.push_str(&format!("; edge {}", edge.name));
    }
    layout
}

fn is_managed(attribute: &str) -> bool {
    matches!(
        attribute,
        "PK" | "SK" | "id" | "__typename" | "version" | "createdAt" | "updatedAt" | "edges"
    )
}

/// A default checked against the field's scalar type.
fn default_value(
    model: &Model,
    type_def: &TypeDef,
    field: &str,
    value: &toml::Value,
) -> Result<AttrValue, String> {
    let Some(FieldKind::Scalar { scalar, unique, .. }) = type_def.field(field).map(|f| &f.kind)
    else {
        return Err(format!(
            "set_default: {field} is not a stored field of {}",
            type_def.name
        ));
    };
    if *unique {
        return Err(format!(
            "set_default: {field} is @unique; a default would give many nodes one value"
        ));
    }
    let wrong = || format!("set_default: {field} takes a {scalar:?} value");
    if let (ScalarType::Enum(enum_name), toml::Value::String(name)) = (scalar, value)
        && !model
            .enum_def(enum_name)
            .is_some_and(|e| e.values.iter().any(|v| v.name == *name))
    {
        return Err(format!("set_default: {name} is not a value of {enum_name}"));
    }
    if let toml::Value::String(text) = value {
        let valid = match scalar {
            ScalarType::Id => crate::keys::validate_id(text).is_ok(),
            scalar => engine::valid_text(scalar, text),
        };
        if !valid {
            return Err(format!("set_default: {text:?} is not a valid {scalar:?}"));
        }
    }
    Ok(match (scalar, value) {
        (ScalarType::Int | ScalarType::AwsTimestamp, toml::Value::Integer(n)) => {
            AttrValue::N(n.to_string())
        }
        (ScalarType::Float, toml::Value::Float(f)) => AttrValue::N(f.to_string()),
        (ScalarType::Float, toml::Value::Integer(n)) => AttrValue::N(n.to_string()),
        (ScalarType::Boolean, toml::Value::Boolean(b)) => AttrValue::Bool(*b),
        (
            ScalarType::Int | ScalarType::Float | ScalarType::Boolean | ScalarType::AwsTimestamp,
            _,
        ) => return Err(wrong()),
        (_, toml::Value::String(s)) => AttrValue::S(
            engine::stored_text(scalar, s)
                .map_err(|e| format!("set_default: {e}"))?
                .into_owned(),
        ),
        _ => return Err(wrong()),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a run went, for the command's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationRun {
    pub name: String,
    /// Applied before: nothing was done.
    pub skipped: bool,
    /// Items of the type this run scanned (after the checkpoint when resumed).
    pub scanned: usize,
    /// Items its scans evaluated, of every type.
    pub evaluated: usize,
    /// Items this run changed (or would change, in a dry run).
    pub changed: usize,
    /// Whether this run started from a checkpoint of an earlier one.
    pub resumed: bool,
    /// Unique values that stay at their earlier key because another node holds them as they
    /// are compared today, one line each.
    pub collisions: Vec<String>,
}

/// Applies every migration not yet applied, in order. With `dry_run`, writes nothing and
/// reports what would change.
pub async fn apply_migrations(
    store: &Store,
    model: &Model,
    migrations: &[Migration],
    dry_run: bool,
    progress: Progress<'_>,
) -> Result<Vec<MigrationRun>, DataMigrationError> {
    let mut runs = Vec::with_capacity(migrations.len());
    for migration in migrations {
        // Each scans the whole table: its item count is how far a scan goes.
        let about = store
            .describe_table()
            .await?
            .and_then(|status| status.item_count);
        progress(Step::Started {
            name: &migration.name,
            about,
        });
        let run = apply(store, model, migration, dry_run, progress).await?;
        progress(Step::Finished {
            name: &migration.name,
            run: &run,
        });
        runs.push(run);
    }
    // A migration file writes nodes whole, outside the engine's writes, which keep the counts:
    // once one has changed anything, the counts are set again from what the table holds.
    let files_changed = migrations
        .iter()
        .zip(&runs)
        .any(|(migration, run)| !migration.is_builtin() && !run.skipped && run.changed > 0);
    if files_changed && !dry_run {
        let repair = check::repair_counts(store, model, false).await?;
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
            let key = record_key(&migration.name);
            Write::Put {
                item: Item::from_iter([
                    ("PK".to_owned(), AttrValue::S(key.pk.clone())),
                    ("SK".to_owned(), AttrValue::S(key.sk)),
                    (
                        "__typename".to_owned(),
                        AttrValue::S("Migration".to_owned()),
                    ),
                    ("checksum".to_owned(), AttrValue::S(migration.checksum)),
                    (
                        "description".to_owned(),
                        AttrValue::S(migration.description),
                    ),
                    ("status".to_owned(), AttrValue::S("applied".to_owned())),
                    ("appliedAt".to_owned(), AttrValue::S(engine::now())),
                    ("changed".to_owned(), AttrValue::N("0".to_owned())),
                    ("checkpoint".to_owned(), AttrValue::M(Item::default())),
                ]),
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
}

fn read_record(item: Item) -> Record {
    let text = |name: &str| {
        item.get(name)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut checkpoints = HashMap::new();
    if let Some(AttrValue::M(map)) = item.get("checkpoint") {
        for (segment, value) in map {
            let Ok(segment) = segment.parse::<u16>() else {
                continue;
            };
            let key = match value {
                AttrValue::M(key) => {
                    let part = |n: &str| key.get(n).and_then(AttrValue::as_str).map(str::to_owned);
                    part("PK").zip(part("SK")).map(|(pk, sk)| Key { pk, sk })
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
    }
}

async fn apply(
    store: &Store,
    model: &Model,
    migration: &Migration,
    dry_run: bool,
    progress: Progress<'_>,
) -> Result<MigrationRun, DataMigrationError> {
    let key = record_key(&migration.name);
    let record = store.get_item_consistent(&key).await?.map(read_record);
    let mut run = MigrationRun {
        name: migration.name.clone(),
        ..MigrationRun::default()
    };
    // A shipped migration recorded under another checksum describes another format (a type
    // index of another layout, say): it is applied again, from the start. A file's is refused.
    let record = match record {
        Some(recorded) if migration.is_builtin() && recorded.checksum != migration.checksum => {
            if !dry_run {
                store
                    .transact_write(vec![Write::Delete {
                        key: key.clone(),
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
        run.skipped = true;
        return Ok(run);
    }
    if let Some(problem) = &migration.problem {
        return Err(DataMigrationError::Rejected(problem.clone()));
    }
    if migration.fill_counts {
        return fill_counts(store, model, migration, dry_run).await;
    }
    // A resumed run counts on from what the runs before it changed.
    let changed_before = record.as_ref().map_or(0, |r| r.changed);
    let mut checkpoints = record.map(|r| r.checkpoints).unwrap_or_default();
    run.resumed = !checkpoints.is_empty();
    let mut record_item = Item::from_iter([
        ("PK".to_owned(), AttrValue::S(key.pk.clone())),
        ("SK".to_owned(), AttrValue::S(key.sk.clone())),
        (
            "__typename".to_owned(),
            AttrValue::S("Migration".to_owned()),
        ),
        (
            "checksum".to_owned(),
            AttrValue::S(migration.checksum.clone()),
        ),
        (
            "description".to_owned(),
            AttrValue::S(migration.description.clone()),
        ),
        ("status".to_owned(), AttrValue::S("running".to_owned())),
        ("startedAt".to_owned(), AttrValue::S(engine::now())),
        (
            "changed".to_owned(),
            AttrValue::N(changed_before.to_string()),
        ),
    ]);
    if !dry_run && !run.resumed {
        save_record(store, &mut record_item, &checkpoints)
            .await
            .map_err(|e| contended(e, &migration.name))?;
    }

    let shared = tokio::sync::Mutex::new((run, checkpoints.clone(), record_item));
    let segments = (0..SEGMENTS).map(|segment| {
        let start = checkpoints.remove(&segment);
        migrate_segment(
            store, model, migration, segment, start, dry_run, &shared, progress,
        )
    });
    futures::future::try_join_all(segments).await?;
    let (mut run, checkpoints, mut record_item) = shared.into_inner();
    if !dry_run && !run.collisions.is_empty() {
        // Not applied: the next run scans every segment again.
        save_record(store, &mut record_item, &HashMap::new())
            .await
            .map_err(|e| contended(e, &migration.name))?;
        return Err(DataMigrationError::Collisions {
            name: migration.name.clone(),
            collisions: run.collisions,
        });
    }
    if !dry_run {
        record_item.insert("status".to_owned(), AttrValue::S("applied".to_owned()));
        record_item.insert("appliedAt".to_owned(), AttrValue::S(engine::now()));
        save_record(store, &mut record_item, &checkpoints)
            .await
            .map_err(|e| contended(e, &migration.name))?;
    }
    run.name.clone_from(&migration.name);
    Ok(run)
}

/// The counts migration: one repair of every count over a full scan (which a stopped run
/// simply repeats), then its record.
async fn fill_counts(
    store: &Store,
    model: &Model,
    migration: &Migration,
    dry_run: bool,
) -> Result<MigrationRun, DataMigrationError> {
    let repair = check::repair_counts(store, model, dry_run).await?;
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
        let key = record_key(&migration.name);
        let mut record = Item::from_iter([
            ("PK".to_owned(), AttrValue::S(key.pk.clone())),
            ("SK".to_owned(), AttrValue::S(key.sk)),
            (
                "__typename".to_owned(),
                AttrValue::S("Migration".to_owned()),
            ),
            (
                "checksum".to_owned(),
                AttrValue::S(migration.checksum.clone()),
            ),
            (
                "description".to_owned(),
                AttrValue::S(migration.description.clone()),
            ),
            ("status".to_owned(), AttrValue::S("applied".to_owned())),
            ("appliedAt".to_owned(), AttrValue::S(engine::now())),
            ("changed".to_owned(), AttrValue::N(run.changed.to_string())),
        ]);
        save_record(store, &mut record, &HashMap::new())
            .await
            .map_err(|e| contended(e, &migration.name))?;
    }
    run.scanned = repair.before.items;
    Ok(run)
}

fn contended(error: StoreError, name: &str) -> DataMigrationError {
    match error {
        StoreError::ConditionFailed { .. } => DataMigrationError::Contended {
            name: name.to_owned(),
        },
        other => other.into(),
    }
}

/// Writes the record with `checkpoints`, unless the table holds a record of another checksum.
async fn save_record(
    store: &Store,
    record: &mut Item,
    checkpoints: &HashMap<u16, Option<Key>>,
) -> Result<(), StoreError> {
    let map = checkpoints
        .iter()
        .map(|(segment, key)| {
            let value = match key {
                Some(key) => AttrValue::M(Item::from_iter([
                    ("PK".to_owned(), AttrValue::S(key.pk.clone())),
                    ("SK".to_owned(), AttrValue::S(key.sk.clone())),
                ])),
                None => AttrValue::S("done".to_owned()),
            };
            (segment.to_string(), value)
        })
        .collect();
    record.insert("checkpoint".to_owned(), AttrValue::M(map));
    let checksum = record.get("checksum").cloned().unwrap_or(AttrValue::Null);
    store
        .transact_write(vec![Write::Put {
            item: record.clone(),
            condition: vec![Clause::AbsentOrEquals("checksum".to_owned(), checksum)],
        }])
        .await
}

type Shared = tokio::sync::Mutex<(MigrationRun, HashMap<u16, Option<Key>>, Item)>;

#[allow(clippy::too_many_arguments)]
async fn migrate_segment(
    store: &Store,
    model: &Model,
    migration: &Migration,
    segment: u16,
    start: Option<Option<Key>>,
    dry_run: bool,
    shared: &Shared,
    progress: Progress<'_>,
) -> Result<(), DataMigrationError> {
    // A segment recorded as done has nothing left; one with a key resumes after it.
    let mut cursor = match start {
        Some(None) => return Ok(()),
        Some(Some(key)) => Some(key),
        None => None,
    };
    let type_def = model
        .type_def(&migration.type_name)
        .expect("migrations are validated against the model");
    loop {
        let ScanPage {
            items,
            next,
            evaluated,
        } = store
            .scan_page(
                segment,
                SEGMENTS,
                cursor.as_ref(),
                &migration.type_name,
                PAGE,
            )
            .await?;
        let mut changed = 0;
        let mut collisions = Vec::new();
        let nodes: Vec<&Item> = items.iter().filter(|item| is_node(item)).collect();
        if migration.rekey_unique {
            for item in nodes {
                let (moved, collided) = rekey_unique_values(store, type_def, item, dry_run).await?;
                changed += moved;
                collisions.extend(collided);
            }
        } else {
            let batch = Batch {
                store,
                model,
                type_def,
                migration,
            };
            changed += batch.migrate(&nodes, dry_run).await?;
        }
        let mut guard = shared.lock().await;
        let (run, checkpoints, record) = &mut *guard;
        run.scanned += items.len();
        run.evaluated += evaluated;
        run.changed += changed;
        run.collisions.extend(collisions);
        checkpoints.insert(segment, next.clone());
        // The record counts every run's changes, so one that stops here leaves its share.
        let recorded = record
            .get("changed")
            .and_then(AttrValue::as_i64)
            .unwrap_or(0);
        record.insert(
            "changed".to_owned(),
            AttrValue::N((recorded + changed as i64).to_string()),
        );
        if !dry_run {
            save_record(store, record, checkpoints)
                .await
                .map_err(|e| contended(e, &migration.name))?;
        }
        progress(Step::Page {
            name: &migration.name,
            run,
        });
        drop(guard);
        match next {
            Some(key) => cursor = Some(key),
            None => return Ok(()),
        }
    }
}

fn is_node(item: &Item) -> bool {
    let text = |n: &str| item.get(n).and_then(AttrValue::as_str).unwrap_or_default();
    text("PK").starts_with("NODE#") && text("PK") == text("SK")
}

/// The nodes of one Scan page, migrated together.
struct Batch<'a> {
    store: &'a Store,
    model: &'a Model,
    type_def: &'a TypeDef,
    migration: &'a Migration,
}

/// One node's write: as it was read, and as the migration leaves it.
struct NodeWrite {
    current: Item,
    next: Item,
    /// Times it was read again because someone else changed it meanwhile.
    reread: usize,
}

impl Batch<'_> {
    /// Migrates `scanned`; answers how many changed (or would, in a dry run).
    async fn migrate(&self, scanned: &[&Item], dry_run: bool) -> Result<usize, DataMigrationError> {
        let mut writes = Vec::new();
        for current in scanned {
            if let Some(write) = self.write_of((*current).clone(), 0).await? {
                writes.push(write);
            }
        }
        if dry_run {
            return Ok(writes.len());
        }
        let mut changed = 0;
        for chunk in chunks(writes) {
            changed += self.commit(chunk).await?;
        }
        Ok(changed)
    }

    /// The write that migrates `current`, or `None` when it has nothing to change.
    async fn write_of(
        &self,
        current: Item,
        reread: usize,
    ) -> Result<Option<NodeWrite>, DataMigrationError> {
        let mut next = transform(
            self.store,
            self.model,
            self.type_def,
            self.migration,
            &current,
        )
        .await?;
        if next == current {
            return Ok(None);
        }
        // A node's place in an index is no change of the node: its version stays, so a
        // client's `expectedVersion` still holds. The condition still guards the write.
        if !self.migration.fills_an_index() {
            let bumped = current
                .get("version")
                .and_then(AttrValue::as_i64)
                .unwrap_or(0)
                + 1;
            next.insert("version".to_owned(), AttrValue::N(bumped.to_string()));
        }
        Ok(Some(NodeWrite {
            current,
            next,
            reread,
        }))
    }

    /// Writes `writes` in one transaction; answers how many nodes it changed. A node someone
    /// else changed meanwhile is read again and migrated again (at most [`WRITE_ATTEMPTS`]
    /// times); a transaction that keeps conflicting is split in two.
    async fn commit(&self, mut writes: Vec<NodeWrite>) -> Result<usize, DataMigrationError> {
        loop {
            if writes.is_empty() {
                return Ok(0);
            }
            let transaction = writes
                .iter()
                .map(|write| Write::Put {
                    item: write.next.clone(),
                    // A node written without a version (by hand, or by an old tool) is only
                    // checked to exist.
                    condition: vec![match write.current.get("version") {
                        Some(version) => Clause::Equals("version".to_owned(), version.clone()),
                        None => Clause::Exists,
                    }],
                })
                .collect();
            match self.store.transact_write(transaction).await {
                Ok(()) => return Ok(writes.len()),
                Err(StoreError::ConditionFailed { index }) if index < writes.len() => {
                    let failed = writes.remove(index);
                    if failed.reread + 1 >= WRITE_ATTEMPTS {
                        return Err(StoreError::TransactionConflict.into());
                    }
                    let key = Key::same(
                        failed
                            .current
                            .get("PK")
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
                    return Ok(first + Box::pin(self.commit(second)).await?);
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
async fn rekey_unique_values(
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
            let plain = engine::unique_text(value);
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
                item.insert("PK".to_owned(), AttrValue::S(today.clone()));
                item.insert("SK".to_owned(), AttrValue::S(today));
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
        engine::set_slot_attributes(model, type_def, &mut next);
    }
    if migration.fill_type_index {
        engine::set_list_attributes(model, type_def, &mut next);
    }
    if let Some(name) = &migration.fill_index
        && let Some(index) = type_def.indexes.iter().find(|i| i.name == *name)
    {
        engine::set_index_attributes(model, type_def, index, &mut next);
    }
    if migration.rebuild_edge_sets {
        let partition = next
            .get("PK")
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
    use super::*;

    fn model() -> Model {
        let resolved = ["Team.goalLeads".to_owned()].into();
        Model::parse_with_resolvers(
            "schema.graphql",
            include_str!("../../schema.graphql"),
            &resolved,
        )
        .expect("the schema")
    }

    fn load(text: &str) -> Result<Migration, String> {
        let dir = std::env::temp_dir().join(format!("tablegraph-mig-{}", keys::new_id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let path = dir.join("0001_test.toml");
        std::fs::write(&path, text).expect("a file");
        let result = load_one(&path, &model()).map_err(|e| {
            e.to_string()
                .split_once(": ")
                .map(|(_, message)| message.to_owned())
                .unwrap_or_default()
        });
        std::fs::remove_dir_all(&dir).expect("removable");
        result
    }

    #[test]
    fn a_valid_file_loads_with_its_checksum() {
        let migration = load(
            "description = \"d\"\ntype = \"Goal\"\nrebuild_edge_sets = true\n[set_default]\nkind = \"OBJECTIVE\"\n",
        )
        .expect("valid");
        assert_eq!(migration.name, "0001_test");
        assert_eq!(migration.checksum.len(), 64);
        assert_eq!(
            migration.defaults,
            [("kind".to_owned(), AttrValue::S("OBJECTIVE".to_owned()))]
        );
    }

    #[test]
    fn mistakes_are_named_with_their_line() {
        let cases = [
            (
                "description = \"d\"\ntype = \"Cow\"\nrecompute = true\n",
                "line 3: unknown field `recompute`",
            ),
            (
                "description = \"d\"\ntype = \"Horse\"\n",
                "type: Horse is not a @model type of the schema",
            ),
            (
                "description = \"d\"\ntype = \"Farm\"\n[rename]\nlabel = \"name\"\n",
                "rename: name is @unique; a migration cannot take unique values",
            ),
            (
                "description = \"d\"\ntype = \"Cow\"\n[set_default]\nweight = 3\n",
                "set_default: weight is not a stored field of Cow",
            ),
            (
                "description = \"d\"\ntype = \"Cow\"\nremove = [\"name\"]\n",
                "remove: name is a field of Cow; remove it from the schema first",
            ),
            (
                "description = \"d\"\ntype = \"Cow\"\n[rename]\nedges = \"name\"\n",
                "rename: edges is kept by tablegraph itself",
            ),
            (
                "description = \"d\"\ntype = \"Cow\"\nremove = [\"PK01\"]\n",
                "remove: PK01 is kept by tablegraph itself",
            ),
            (
                "description = \"d\"\ntype = \"Goal\"\n[set_default]\nkind = \"OBJECTIV\"\n",
                "set_default: OBJECTIV is not a value of GoalKind",
            ),
            (
                "description = \"d\"\ntype = \"Cow\"\n[set_default]\nfarmId = \"not an id#\"\n",
                "set_default: \"not an id#\" is not a valid Id",
            ),
            (
                "description = \"d\"\ntype = \"Cow\"\n[rename]\ncowName = \"name\"\n",
                "name places Cow nodes in a relation; add recompute_slots = true",
            ),
            (
                "description = \"d\"\ntype = \"Farm\"\nrebuild_edge_sets = true\n",
                "rebuild_edge_sets: no edge type starting at Farm keeps an edge set",
            ),
        ];
        for (text, message) in cases {
            let error = load(text).expect_err(text);
            assert!(error.starts_with(message), "{error:?} for {text:?}");
        }
    }
}
