//! The single-table derivations: what a node's or an edge's item must hold besides the fields
//! a client sets. Relation slots (`PKnn`/`SKnn`), sort values, unique-value keys, edge-set
//! entries and the limits DynamoDB puts on keys and items. Writes, `check` and `migrate`
//! derive with these same functions, so what one writes the others verify.

use super::error::EngineError;
use crate::keys::{self, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES, SortInput};
use crate::model::{EdgeTypeDef, IndexDef, Model, ScalarType, TypeDef};
use crate::store::{AttrValue, Clause, Item, MAX_ITEM_BYTES, StringSet, item_size};

/// The attribute that holds a node's version (`version`, or `_version`: see
/// [`Item::version_attribute`]). Counts and edge-set entries never move it, so a client's
/// `expectedVersion` holds while children and edges come and go.
pub use crate::store::{OWN_FIELD_VERSION, VERSION};

/// The attribute a node of `type_def` keeps its version in, from its create on.
pub fn version_attribute(type_def: &TypeDef) -> &'static str {
    match type_def.field(VERSION) {
        Some(_) => OWN_FIELD_VERSION,
        None => VERSION,
    }
}

/// A node item's version; 0 for one written without one (by hand, or by an old tool).
pub fn version(item: &Item) -> i64 {
    item.get(item.version_attribute())
        .and_then(AttrValue::as_i64)
        .unwrap_or(0)
}

/// Sets `next`'s version to one more than `current`'s: its content changed.
pub fn next_version(current: &Item, next: &mut Item) {
    next.insert(
        current.version_attribute().to_owned(),
        AttrValue::N((version(current) + 1).to_string()),
    );
}

/// The condition that holds a write of `current` to its version `version`.
pub fn version_is(current: &Item, version: i64) -> Clause {
    Clause::Equals(
        current.version_attribute().to_owned(),
        AttrValue::N(version.to_string()),
    )
}

/// The condition that holds a write of a node to the version it was read at; a node written
/// without one is only held to exist.
pub fn version_as_read(node: &Item) -> Clause {
    let attribute = node.version_attribute();
    match node.get(attribute) {
        Some(version) => Clause::Equals(attribute.to_owned(), version.clone()),
        None => Clause::Exists,
    }
}

/// The attribute of a type index shard's counter item that holds its count.
pub const LIST_COUNT: &str = "count";

/// The longest sort value that still leaves room for `#<id>` in a slot sort key.
pub const MAX_SORT_VALUE_BYTES: usize = MAX_SORT_KEY_BYTES - 1 - keys::MAX_ID_LEN;

/// A text attribute of an item, or `""`.
pub fn text<'i>(item: &'i Item, attribute: &str) -> &'i str {
    item.get(attribute)
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
}

/// The text a unique field's value is reserved by (before normalization).
pub fn unique_text(value: &AttrValue) -> String {
    match value {
        AttrValue::S(s) | AttrValue::N(s) => s.clone(),
        _ => String::new(),
    }
}

/// The key of the unique-value item that `item`'s `field` of `type_name` takes, if it has one.
pub fn unique_item_key(type_name: &str, field: &str, item: &Item) -> Option<String> {
    item.get(field)
        .map(|value| keys::unique_key(type_name, field, &unique_text(value)))
}

/// The sort value of `item` by `field` (of type `scalar`); a missing value sorts last, and a
/// value of a ranked enum sorts by its rank.
pub fn sort_value(model: &Model, item: &Item, field: &str, scalar: &ScalarType) -> String {
    let input = match (item.get(field), scalar) {
        (None | Some(AttrValue::Null), _) => SortInput::Null,
        (Some(AttrValue::S(name)), ScalarType::Enum(enum_name)) => {
            return keys::enum_sort_value(model, enum_name, name);
        }
        (Some(AttrValue::N(n)), ScalarType::Float) => {
            n.parse().map_or(SortInput::Null, SortInput::Float)
        }
        (Some(AttrValue::N(n)), _) => n.parse().map_or(SortInput::Null, SortInput::Int),
        (Some(AttrValue::Bool(b)), _) => SortInput::Bool(*b),
        (Some(AttrValue::S(s)), _) => SortInput::Text(s),
        (Some(_), _) => SortInput::Null,
    };
    keys::encode_sort_value(input)
}

/// Sets the relation slot attributes `PKnn`/`SKnn` of a node item from its fields, removing
/// those of slots whose foreign key is now null (the indexes are sparse), and the attributes
/// of its type index shard. Slot attributes the schema no longer derives for the type (a list
/// turned off or moved, a relation removed) are removed, so every write leaves them as `check`
/// expects.
pub fn set_slot_attributes(model: &Model, type_def: &TypeDef, item: &mut Item) {
    let id = text(item, "id").to_owned();
    let derived = |name: &str| {
        type_def
            .slots
            .iter()
            .map(|s| s.slot)
            .chain(type_def.list.map(|l| l.slot))
            .chain(type_def.indexes.iter().map(|i| i.slot))
            .any(|slot| {
                name == keys::slot_partition_attribute(slot)
                    || name == keys::slot_sort_attribute(slot)
            })
    };
    item.retain(|name, _| !keys::is_slot_attribute(name) || derived(name));
    set_list_attributes(model, type_def, item);
    for index in &type_def.indexes {
        set_index_attributes(model, type_def, index, item);
    }
    for slot in &type_def.slots {
        let pk = keys::slot_partition_attribute(slot.slot);
        let sk = keys::slot_sort_attribute(slot.slot);
        let parent = item
            .get(&slot.foreign_key)
            .and_then(AttrValue::as_str)
            .map(str::to_owned);
        match parent {
            Some(parent) => {
                let sort = slot.sort_by.as_ref().map(|field| {
                    let scalar = type_def
                        .field(field)
                        .and_then(|f| f.scalar())
                        .expect("the model checked that sortBy names a scalar field");
                    sort_value(model, item, field, scalar)
                });
                item.insert(
                    pk,
                    AttrValue::S(keys::slot_partition(&slot.element, &parent)),
                );
                item.insert(sk, AttrValue::S(keys::slot_sort_key(sort.as_deref(), &id)));
            }
            None => {
                item.remove(&pk);
                item.remove(&sk);
            }
        }
    }
}

/// Sets the attributes of a node item's type index shard (see `model::ListDef`), if its type
/// has a list.
pub fn set_list_attributes(model: &Model, type_def: &TypeDef, item: &mut Item) {
    let Some(list) = type_def.list else {
        return;
    };
    let id = text(item, "id").to_owned();
    let shard = keys::list_shard(&id, list.shards);
    let sort = type_def
        .list_sort
        .as_ref()
        .map(|(field, scalar)| sort_value(model, item, field, scalar));
    item.insert(
        keys::slot_partition_attribute(list.slot),
        AttrValue::S(keys::list_partition(&type_def.name, shard)),
    );
    item.insert(
        keys::slot_sort_attribute(list.slot),
        AttrValue::S(keys::slot_sort_key(sort.as_deref(), &id)),
    );
}

/// The text an indexed value is stored under in its index's partition: text as it is, a
/// number in its decimal form, a boolean as `true`/`false`; `None` for null (the index is
/// sparse).
pub fn index_value(value: &AttrValue) -> Option<String> {
    match value {
        AttrValue::S(s) | AttrValue::N(s) => Some(s.clone()),
        AttrValue::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Sets the attributes of a node item's entry in the secondary index `index` of its type
/// (see `model::IndexDef`), or removes them when its field is null.
pub fn set_index_attributes(model: &Model, type_def: &TypeDef, index: &IndexDef, item: &mut Item) {
    let pk = keys::slot_partition_attribute(index.slot);
    let sk = keys::slot_sort_attribute(index.slot);
    match item.get(&index.field).and_then(index_value) {
        Some(value) => {
            let id = text(item, "id").to_owned();
            // Several sort fields (a composite sort key) are joined by `#`, which no encoded
            // value holds, so the key sorts by the first, then the next.
            let sort = (!index.sort_fields.is_empty()).then(|| {
                index
                    .sort_fields
                    .iter()
                    .map(|(field, scalar)| sort_value(model, item, field, scalar))
                    .collect::<Vec<_>>()
                    .join("#")
            });
            item.insert(
                pk,
                AttrValue::S(keys::index_partition(&type_def.name, &index.name, &value)),
            );
            item.insert(sk, AttrValue::S(keys::slot_sort_key(sort.as_deref(), &id)));
        }
        None => {
            item.remove(&pk);
            item.remove(&sk);
        }
    }
}

/// Checks what DynamoDB would refuse, before anything is written: unique values with nothing
/// visible to compare, with bidirectional controls, or too long for a key, sort values too long for a sort key, and items over 400 KB.
pub fn check_limits(type_def: &TypeDef, item: &Item) -> Result<(), EngineError> {
    for field in type_def.unique_fields() {
        if let Some(AttrValue::S(value)) = item.get(&field.name) {
            if let Some(fault) = keys::unique_value_fault(value) {
                return Err(EngineError::bad_input(format!(
                    "{}.{} {fault}",
                    type_def.name, field.name
                )));
            }
            if keys::unique_key(&type_def.name, &field.name, value).len() > MAX_SORT_KEY_BYTES {
                return Err(EngineError::bad_input(format!(
                    "{}.{} is too long: a unique value may have at most {} bytes",
                    type_def.name,
                    field.name,
                    MAX_SORT_KEY_BYTES - type_def.name.len() - field.name.len() - 2
                )));
            }
        }
    }
    if let Some((field, _)) = &type_def.list_sort
        && let Some(list) = type_def.list
        && let Some(AttrValue::S(sk)) = item.get(&keys::slot_sort_attribute(list.slot))
        && sk.len() > MAX_SORT_KEY_BYTES
    {
        return Err(EngineError::bad_input(format!(
            "{}.{field} is too long to sort list{} by: a sort value may have at most \
             {MAX_SORT_VALUE_BYTES} bytes",
            type_def.name,
            crate::model::plural(&type_def.name)
        )));
    }
    for index in &type_def.indexes {
        let length = |attribute: String| {
            item.get(&attribute)
                .and_then(AttrValue::as_str)
                .map_or(0, str::len)
        };
        if length(keys::slot_partition_attribute(index.slot)) > MAX_PARTITION_KEY_BYTES {
            return Err(EngineError::bad_input(format!(
                "{}.{} is too long for its index {}: an indexed value may have at most {} bytes",
                type_def.name,
                index.field,
                index.name,
                MAX_PARTITION_KEY_BYTES - type_def.name.len() - index.name.len() - 2
            )));
        }
        if length(keys::slot_sort_attribute(index.slot)) > MAX_SORT_KEY_BYTES {
            return Err(EngineError::bad_input(format!(
                "{}.{} is too long to sort index {}: a sort value may have at most \
                 {MAX_SORT_VALUE_BYTES} bytes",
                type_def.name,
                index.sort_by(),
                index.name
            )));
        }
    }
    for slot in &type_def.slots {
        let Some(sort_by) = &slot.sort_by else {
            continue;
        };
        let Some(AttrValue::S(sk)) = item.get(&keys::slot_sort_attribute(slot.slot)) else {
            continue;
        };
        if sk.len() > MAX_SORT_KEY_BYTES {
            return Err(EngineError::bad_input(format!(
                "{}.{sort_by} is too long to sort by: at most {MAX_SORT_VALUE_BYTES} bytes",
                type_def.name
            )));
        }
    }
    check_item_size(&type_def.name, item)
}

/// Refuses an item over DynamoDB's 400 KB.
pub fn check_item_size(type_name: &str, item: &Item) -> Result<(), EngineError> {
    let size = item_size(item);
    if size > MAX_ITEM_BYTES {
        return Err(EngineError::bad_input(format!(
            "the {type_name} would take {size} bytes; DynamoDB limits an item to {MAX_ITEM_BYTES} bytes"
        )));
    }
    Ok(())
}

/// The sort value of an edge item by its type's `sortBy`, if it has one.
pub fn edge_sort_value(model: &Model, edge_def: &EdgeTypeDef, item: &Item) -> Option<String> {
    let field = edge_def.sort_by.as_ref()?;
    let scalar = edge_def.sort_scalar()?;
    Some(sort_value(model, item, field, scalar))
}

/// The entry an edge item takes in its source's edge set: `<type>#<to>` with its sort value.
pub fn edge_set_entry(model: &Model, edge_def: &EdgeTypeDef, edge: &Item) -> String {
    keys::edge_set_entry(
        &edge_def.name,
        text(edge, "to"),
        edge_sort_value(model, edge_def, edge).as_deref(),
    )
}

/// Sets an edge item's inverse slot (`PKnn`: its type and target, `SKnn`: its sort value and
/// source) from its `from`, `to` and sort field.
pub fn set_edge_slot_attributes(model: &Model, edge_def: &EdgeTypeDef, edge: &mut Item) {
    let sort = edge_sort_value(model, edge_def, edge);
    let partition = keys::slot_partition(&edge_def.name, text(edge, "to"));
    let sort_key = keys::slot_sort_key(sort.as_deref(), text(edge, "from"));
    edge.insert(
        keys::slot_partition_attribute(edge_def.slot),
        AttrValue::S(partition),
    );
    edge.insert(
        keys::slot_sort_attribute(edge_def.slot),
        AttrValue::S(sort_key),
    );
}

/// The sort value a role filter (`@targets(role:)`, `role:`) matches, for an edge type that
/// sorts by an enum.
pub fn role_sort_value(
    model: &Model,
    edge_def: &EdgeTypeDef,
    role: Option<&str>,
) -> Option<String> {
    let role = role?;
    match edge_def.sort_scalar() {
        Some(ScalarType::Enum(enum_name)) => Some(keys::enum_sort_value(model, enum_name, role)),
        _ => None,
    }
}

/// The targets of a node's edges of type `edge` (with sort value `role_sort`, if given), as
/// its edge set lists them.
pub fn target_ids(node: &Item, edge: &str, role_sort: Option<&str>) -> Vec<String> {
    targets(node, edge, role_sort).map(str::to_owned).collect()
}

/// [`target_ids`], borrowed from the node. Entries of other edge types, and of other roles,
/// are passed over by their prefix and suffix, and no entry is parsed whole
/// (`keys::parse_edge_set_entry` finds the same ids, more slowly): a node's edge set lists every
/// type of its edges, and a page reads it for each `@targets` field it selects, in prefetch and
/// again in the field.
pub fn targets<'a, 'b>(
    node: &'a Item,
    edge: &'b str,
    role_sort: Option<&'b str>,
) -> impl Iterator<Item = &'a str> + use<'a, 'b> {
    let set = match node.get("edges") {
        Some(AttrValue::Ss(set)) => Some(set),
        _ => None,
    };
    set.into_iter().flatten().filter_map(move |entry| {
        // `<edge>#<to id>` or `<edge>#<to id>#<sort value>`.
        let rest = entry.strip_prefix(edge)?.strip_prefix('#')?;
        let to_id = match role_sort {
            Some(role_sort) => rest.strip_suffix(role_sort)?.strip_suffix('#')?,
            None => rest.split_once('#').map_or(rest, |(to_id, _)| to_id),
        };
        keys::validate_id(to_id).is_ok().then_some(to_id)
    })
}

/// The node's edge set with the entry of `edge_type` for `to_id` replaced by `entry` (or
/// removed).
pub fn with_edge_set_entry(
    node: &Item,
    edge_type: &str,
    to_id: &str,
    entry: Option<String>,
) -> Item {
    let mut node = node.clone();
    let mut set = match node.remove("edges") {
        Some(AttrValue::Ss(set)) => set,
        _ => StringSet::new(),
    };
    set.retain(|existing| {
        keys::parse_edge_set_entry(existing)
            .is_none_or(|e| !(e.edge_type == edge_type && e.to_id == to_id))
    });
    set.extend(entry);
    // DynamoDB stores no empty sets: an empty edge set is no attribute.
    if !set.is_empty() {
        node.insert("edges".to_owned(), AttrValue::Ss(set));
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The targets as the whole entries parsed say, for comparison.
    fn parsed<'a>(set: &'a [&'a str], edge: &str, role_sort: Option<&str>) -> Vec<&'a str> {
        set.iter()
            .filter_map(|entry| keys::parse_edge_set_entry(entry))
            .filter(|e| e.edge_type == edge && (role_sort.is_none() || e.sort_value == role_sort))
            .map(|e| e.to_id)
            .collect()
    }

    #[test]
    fn targets_are_the_ids_of_the_entries_of_one_edge_type_and_role() {
        let long = format!("Member#{}#500-LEAD", "x".repeat(keys::MAX_ID_LEN + 1));
        let set = [
            "Member#a#500-LEAD",
            "Member#b#900-MEMBER",
            "Member#c",
            "Member#d#x#500-LEAD",
            "Member##500-LEAD",
            "Member#e500-LEAD",
            "MemberX#f#500-LEAD",
            "Membe#g#500-LEAD",
            "Team#h",
            "Member",
            long.as_str(),
        ];
        let node: Item = std::iter::once((
            "edges".to_owned(),
            AttrValue::Ss(set.map(str::to_owned).into_iter().collect()),
        ))
        .collect();
        for (edge, role_sort, expected) in [
            ("Member", Some("500-LEAD"), vec!["a"]),
            ("Member", Some("900-MEMBER"), vec!["b"]),
            ("Member", Some("LEAD"), vec![]),
            ("Member", None, vec!["a", "b", "c", "d", "e500-LEAD"]),
            ("Team", None, vec!["h"]),
            ("Team", Some("500-LEAD"), vec![]),
            ("Goal", None, vec![]),
        ] {
            let mut found: Vec<&str> = targets(&node, edge, role_sort).collect();
            found.sort_unstable();
            let mut reference = parsed(&set, edge, role_sort);
            reference.sort_unstable();
            assert_eq!(found, expected, "{edge} {role_sort:?}");
            assert_eq!(found, reference, "{edge} {role_sort:?}");
        }
        assert_eq!(targets(&Item::new(), "Member", None).count(), 0);
    }
}
