//! `slots.lock`, beside the schema: the index slot of each type index, `@index` and chosen
//! relation slot ([`Model::slot_pins`]), so that editing the schema never moves a slot whose
//! items are stored. `tablegraph migrate` writes it; every command reads it.
//!
//! Without the file, slots are chosen as they always were (explicit relation slots, then the
//! type index and each `@index` in turn, the lowest free; then the relations written without
//! `index:`), so a table made before the file existed keeps its slots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::Model;

/// The file's name, beside the schema.
pub const FILE_NAME: &str = "slots.lock";

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    slots: BTreeMap<String, u8>,
}

/// A lock file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct LockError {
    pub path: String,
    pub reason: String,
}

/// Where the lock file of the schema at `schema` is.
pub fn path_of(schema: &Path) -> PathBuf {
    schema.with_file_name(FILE_NAME)
}

/// The slots the lock file beside `schema` pins; none without the file.
pub fn read(schema: &Path) -> Result<BTreeMap<String, u8>, LockError> {
    let path = path_of(schema);
    let error = |reason: String| LockError {
        path: path.display().to_string(),
        reason,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(error(e.to_string())),
    };
    let file: LockFile = toml::from_str(&text).map_err(|e| error(e.message().to_owned()))?;
    Ok(file.slots)
}

/// The slots `model` chose that the lock file beside `schema` does not pin as chosen.
pub fn unpinned(schema: &Path, model: &Model) -> Vec<String> {
    let pinned = read(schema).unwrap_or_default();
    model
        .slot_pins
        .iter()
        .filter(|(key, slot)| pinned.get(*key) != Some(slot))
        .map(|(key, slot)| format!("{key} = GSI{slot:02}"))
        .collect()
}

/// Writes the slots `model` chose to the lock file beside `schema`, keeping the pins of keys
/// the schema no longer has (their slots may still hold items); whether it changed.
pub fn write(schema: &Path, model: &Model) -> Result<bool, LockError> {
    let mut slots = read(schema)?;
    let before = slots.clone();
    slots.extend(model.slot_pins.iter().map(|(k, v)| (k.clone(), *v)));
    if slots == before && path_of(schema).exists() {
        return Ok(false);
    }
    let path = path_of(schema);
    let body = toml::to_string(&LockFile { slots }).map_err(|e| LockError {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let text = format!(
        "# The index slot of each type index, @index and relation, as tablegraph chose them for\n\
         # this schema: pinned, so that editing the schema never moves a slot whose items are\n\
         # stored. Written by `tablegraph migrate`; keep it beside the schema, in version control.\n\n{body}"
    );
    std::fs::write(&path, text).map_err(|e| LockError {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(true)
}
