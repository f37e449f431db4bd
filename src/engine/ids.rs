//! Node ids and stored values as clients give them, checked before anything is read or
//! written: an id must be one the key codec can hold, a type keyed by fields of its own
//! (`@primaryKey`) makes its id from their values, an index value must fit a partition key, and
//! a node's fields are what it holds apart from the table's own attributes. Front ends ask
//! here, never the codec, so that the codec's rules have one reader above the engine.

use crate::keys;
use crate::model::TypeDef;
use crate::store::Item;

use super::EngineError;

/// Refuses an id that could not be a node's id, naming the argument or field it came in.
pub fn check_id(name: &str, id: &str) -> Result<(), EngineError> {
    keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("{name}: {e}")))
}

/// Whether `text` could be a node's id.
pub fn is_id(text: &str) -> bool {
    keys::validate_id(text).is_ok()
}

/// The id the values of `type_def`'s key fields make, refused (naming those fields) when it
/// could not be a node's id.
pub fn key_fields_id(type_def: &TypeDef, values: &[String]) -> Result<String, EngineError> {
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let id = keys::primary_key_id_of(&values);
    keys::validate_id(&id).map_err(|e| {
        let names: Vec<&str> = type_def.key_fields().map(|(n, _)| n.as_str()).collect();
        EngineError::bad_input(format!("{}: {e}", names.join(", ")))
    })?;
    Ok(id)
}

/// Whether `value` of index `index` on `type_name` fits in a partition key: a longer one is in
/// no item, and DynamoDB would refuse the Query.
pub fn fits_index(type_name: &str, index: &str, value: &str) -> bool {
    keys::index_partition(type_name, index, value).len() <= keys::MAX_PARTITION_KEY_BYTES
}

/// The name of the table's index in slot `slot`, as a field's description tells it.
pub fn index_name(slot: u8) -> String {
    keys::gsi_name(slot)
}

/// A node item's own fields: what it holds apart from the table's keys, the relation slots,
/// the counts of its connections and its edge set.
pub fn own_fields(item: &Item) -> impl Iterator<Item = (&String, &crate::store::AttrValue)> {
    item.iter().filter(|(name, _)| {
        !matches!(name.as_str(), keys::PK | keys::SK | "edges")
            && !keys::is_slot_attribute(name)
            && !keys::is_count_attribute(name)
    })
}
