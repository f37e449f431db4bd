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
//! How a migration runs (records, checkpoints, resuming, one transaction per page) is
//! `run.rs`; what it does to a node, `nodes.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::Digest as _;

use crate::engine;
use crate::keys;
use crate::keys::TYPENAME;
use crate::model::{FieldKind, Model, ScalarType, TypeDef};
use crate::store::{AttrValue, StoreError};

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
    /// A write of the migration's, as the engine's write driver refused it (the store's own
    /// error, if any, is in the log).
    #[error(
        "a page of migrated nodes could not be written ({}); what was written before it \
         stays, and `tablegraph migrate` goes on from there when run again",
        .0.message()
    )]
    Write(crate::engine::EngineError),
}

impl From<crate::engine::EngineError> for DataMigrationError {
    fn from(error: crate::engine::EngineError) -> Self {
        DataMigrationError::Write(error)
    }
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
    pub(super) type_name: String,
    pub(super) defaults: Vec<(String, AttrValue)>,
    pub(super) renames: Vec<(String, String)>,
    pub(super) removes: Vec<String>,
    pub(super) recompute_slots: bool,
    pub(super) rebuild_edge_sets: bool,
    /// Moves unique values written before values were compared by Unicode normalization to the
    /// key they have today (a migration tablegraph ships, not a file's).
    pub(super) rekey_unique: bool,
    /// Gives each node the attributes of its type index shard, and nothing else (a migration
    /// tablegraph ships).
    pub(super) fill_type_index: bool,
    /// Gives each node the attributes of its entry in the `@index` of this name, and nothing
    /// else (a migration tablegraph ships).
    pub(super) fill_index: Option<String>,
    /// Sets every count (`totalCount`) to what the table holds (a migration tablegraph ships,
    /// over the whole table rather than one type).
    pub(super) fill_counts: bool,
    /// Why the file does not fit today's schema. An applied migration is still skipped (it was
    /// checked against the schema it ran on); a pending one stops `migrate` with this.
    pub(super) problem: Option<String>,
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
    pub(super) fn fills_an_index(&self) -> bool {
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
    let spec = read_spec(text).map_err(invalid)?;
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
    check_renames(type_def, &spec.rename).map_err(invalid)?;
    check_removes(type_def, &spec.remove).map_err(invalid)?;
    check_slots_recomputed(type_def, &spec).map_err(invalid)?;
    check_edge_sets_kept(model, type_def, &spec).map_err(invalid)?;
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

/// The file's TOML, or TOML's own words for its first mistake, with its line when known.
fn read_spec(text: &str) -> Result<Spec, String> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|span| text[..span.start].matches('\n').count() + 1);
        let message = e.message().to_owned();
        match line {
            Some(line) => format!("line {line}: {message}"),
            None => message,
        }
    })
}

/// A rename moves an attribute the schema dropped into a stored field that takes no unique
/// values (a unique value needs its own item, which a migration does not write).
fn check_renames(type_def: &TypeDef, renames: &BTreeMap<String, String>) -> Result<(), String> {
    for (from, to) in renames {
        match type_def.field(to).map(|f| &f.kind) {
            Some(FieldKind::Scalar { unique: false, .. }) => {}
            // A time `@model(timestamps:)` renamed: the old name's values move to it.
            None if type_def.timestamps.is(to) => {}
            Some(FieldKind::Scalar { unique: true, .. }) => {
                return Err(format!(
                    "rename: {to} is @unique; a migration cannot take unique values"
                ));
            }
            _ => {
                return Err(format!(
                    "rename: {to} is not a stored field of {}",
                    type_def.name
                ));
            }
        }
        if type_def.field(from).is_some() {
            return Err(format!(
                "rename: {from} is still a field of {}; rename only attributes the schema dropped",
                type_def.name
            ));
        }
        if is_managed(type_def, from) || crate::keys::is_slot_attribute(from) {
            return Err(format!(
                "rename: {from} is kept by tablegraph itself; it cannot be renamed"
            ));
        }
    }
    Ok(())
}

/// Only attributes neither tablegraph nor the schema keeps may be removed.
fn check_removes(type_def: &TypeDef, removes: &[String]) -> Result<(), String> {
    for attribute in removes {
        if is_managed(type_def, attribute) || crate::keys::is_slot_attribute(attribute) {
            return Err(format!(
                "remove: {attribute} is kept by tablegraph itself; use recompute_slots for slots"
            ));
        }
        if type_def.field(attribute).is_some() {
            return Err(format!(
                "remove: {attribute} is a field of {}; remove it from the schema first",
                type_def.name
            ));
        }
    }
    Ok(())
}

/// A changed foreign key or sort field moves the node in its relations.
fn check_slots_recomputed(type_def: &TypeDef, spec: &Spec) -> Result<(), String> {
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
        return Err(format!(
            "{field} places {} nodes in a relation; add recompute_slots = true",
            type_def.name
        ));
    }
    Ok(())
}

/// An edge set is rebuilt only for a type some edge type keeps one on.
fn check_edge_sets_kept(model: &Model, type_def: &TypeDef, spec: &Spec) -> Result<(), String> {
    if spec.rebuild_edge_sets
        && !model
            .edges
            .iter()
            .any(|e| e.from == type_def.name && e.edge_set)
    {
        return Err(format!(
            "rebuild_edge_sets: no edge type starting at {} keeps an edge set",
            type_def.name
        ));
    }
    Ok(())
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
                index.sort_by()
            );
            Migration {
                name: format!("builtin-index-{}-{}", type_def.name, index.name),
                file: PathBuf::new(),
                description: format!(
                    "Put every {} node in index {} ({layout})",
                    type_def.name, index.name
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

/// Whether `attribute` of a node of `type_def` is kept by tablegraph: its keys, id, type,
/// version (`version`, or `_version` where the type has a `version` field of its own), edge set
/// and its times (`createdAt` and `updatedAt`, or as `@model(timestamps:)` names them).
fn is_managed(type_def: &crate::model::TypeDef, attribute: &str) -> bool {
    matches!(attribute, keys::PK | keys::SK | "id" | TYPENAME | "edges")
        || attribute == crate::engine::derive::version_attribute(type_def)
        || type_def.timestamps.is(attribute)
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
            scalar => engine::formats::valid_text(scalar, text),
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
            engine::formats::stored_text(scalar, s)
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
        let dir = std::env::temp_dir().join(format!("tablegraph-mig-{}", crate::keys::new_id()));
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
