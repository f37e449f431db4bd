//! The key layout of the single table: node keys, unique-value keys, relation slots
//! (`PKnn`/`SKnn` and the GSIs that index them), edge sort keys and edge-set entries, and ids.

/// The longest id tablegraph accepts: server-made ids are 36 characters; this leaves room for ids
/// imported from elsewhere while keeping every key far below DynamoDB's 1 KB sort-key limit.
pub const MAX_ID_LEN: usize = 128;

/// DynamoDB's limit on a sort key value. Unique-value items repeat their key in `SK`, so it
/// bounds them as well as relation sort keys and the positions cursors carry.
pub const MAX_SORT_KEY_BYTES: usize = 1024;
/// DynamoDB's limit on a partition key value, in bytes.
pub const MAX_PARTITION_KEY_BYTES: usize = 2048;

/// What is wrong with a client-supplied id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("an id must not be empty")]
    Empty,
    #[error("an id must not contain '#'")]
    ContainsHash,
    #[error("an id must be at most {MAX_ID_LEN} characters")]
    TooLong,
}

/// Checks an id before it is put into any key, so that no client value can address another kind
/// of item (`Farm#name#…` or `NODE#x#y`).
///
/// ```
/// use tablegraph::keys::{validate_id, IdError};
/// assert_eq!(validate_id("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), Ok(()));
/// assert_eq!(validate_id("1#2"), Err(IdError::ContainsHash));
/// assert_eq!(validate_id(""), Err(IdError::Empty));
/// ```
pub fn validate_id(id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        Err(IdError::Empty)
    } else if id.contains('#') {
        Err(IdError::ContainsHash)
    } else if id.len() > MAX_ID_LEN {
        Err(IdError::TooLong)
    } else {
        Ok(())
    }
}

/// The id of a node whose type keys it by a field of its own (Amplify's `@primaryKey`): the
/// field's value, with `%` and `#` escaped, so that any value is an id and no two values are
/// the same id.
///
/// ```
/// use tablegraph::keys::{primary_key_id, validate_id};
/// assert_eq!(primary_key_id("my-first-post"), "my-first-post");
/// assert_eq!(primary_key_id("50%#1"), "50%25%231");
/// assert_ne!(primary_key_id("a#"), primary_key_id("a%23"));
/// assert!(validate_id(&primary_key_id("a#b")).is_ok());
/// ```
pub fn primary_key_id(value: &str) -> String {
    value.replace('%', "%25").replace('#', "%23")
}

/// The id of a node named by the values of its key fields, in order: one value's
/// [`primary_key_id`], or, for a composite key, each value with `%`, `#` and `:` escaped,
/// joined by `:`, so that no two lists of values are the same id.
///
/// ```
/// use tablegraph::keys::primary_key_id_of;
/// assert_eq!(primary_key_id_of(&["a:b"]), "a:b");
/// assert_eq!(primary_key_id_of(&["dev-1", "2026-03-01", "7"]), "dev-1:2026-03-01:7");
/// assert_ne!(primary_key_id_of(&["a:b", "c"]), primary_key_id_of(&["a", "b:c"]));
/// assert_eq!(primary_key_id_of(&["a:b", "c#"]), "a%3Ab:c%23");
/// ```
pub fn primary_key_id_of(values: &[&str]) -> String {
    match values {
        [one] => primary_key_id(one),
        values => values
            .iter()
            .map(|value| primary_key_id(value).replace(':', "%3A"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// The table's partition key attribute: a node's partition (`NODE#<id>`), a unique value's, a
/// slot's or a list's counter item's.
pub const PK: &str = "PK";
/// The table's sort key attribute: equal to [`PK`] on a node item, an edge's key in its source
/// node's partition.
pub const SK: &str = "SK";
/// The attribute that names an item's type: a node's type, an edge's, or a unique value's
/// (`Farm#name`). The same name as GraphQL's `__typename`, which a node answers from it.
pub const TYPENAME: &str = "__typename";

/// What every node item's `PK` and `SK` start with.
const NODE_PREFIX: &str = "NODE#";

/// The `PK` and `SK` of a node item.
///
/// ```
/// assert_eq!(tablegraph::keys::node_key("0190"), "NODE#0190");
/// ```
pub fn node_key(id: &str) -> String {
    // Joined by hand: a page's level makes hundreds of these, and `format!` costs several
    // times the copy.
    let mut key = String::with_capacity(NODE_PREFIX.len() + id.len());
    key.push_str(NODE_PREFIX);
    key.push_str(id);
    key
}

/// The `PK` and `SK` of the item that reserves a unique value for its owner.
///
/// ```
/// assert_eq!(
///     tablegraph::keys::unique_key("Farm", "name", "Old MacDonald's"),
///     "Farm#name#old macdonald's"
/// );
/// ```
pub fn unique_key(type_name: &str, field: &str, value: &str) -> String {
    format!(
        "{type_name}#{field}#{}",
        super::unique::normalize_unique(value)
    )
}

/// The key a unique value had before values were compared by Unicode normalization (see
/// [`normalize_unique_v1`](super::normalize_unique_v1)): what `migrate` rewrites.
///
/// ```
/// assert_eq!(tablegraph::keys::unique_key_v1("Farm", "name", "Straße"), "Farm#name#straße");
/// assert_eq!(tablegraph::keys::unique_key("Farm", "name", "Straße"), "Farm#name#strasse");
/// ```
pub fn unique_key_v1(type_name: &str, field: &str, value: &str) -> String {
    format!(
        "{type_name}#{field}#{}",
        super::unique::normalize_unique_v1(value)
    )
}

/// The `__typename` of a unique-value item.
///
/// ```
/// assert_eq!(tablegraph::keys::unique_typename("Farm", "name"), "Farm#name");
/// ```
pub fn unique_typename(type_name: &str, field: &str) -> String {
    format!("{type_name}#{field}")
}

/// The name of generic index number `slot` (1-based).
///
/// ```
/// assert_eq!(tablegraph::keys::gsi_name(1), "GSI01");
/// assert_eq!(tablegraph::keys::gsi_name(12), "GSI12");
/// ```
pub fn gsi_name(slot: u8) -> String {
    format!("GSI{slot:02}")
}

/// The partition attribute of index `slot`.
///
/// ```
/// assert_eq!(tablegraph::keys::slot_partition_attribute(2), "PK02");
/// ```
pub fn slot_partition_attribute(slot: u8) -> String {
    format!("PK{slot:02}")
}

/// The sort attribute of index `slot`.
///
/// ```
/// assert_eq!(tablegraph::keys::slot_sort_attribute(2), "SK02");
/// ```
pub fn slot_sort_attribute(slot: u8) -> String {
    format!("SK{slot:02}")
}

/// Whether an attribute name is a relation slot's key attribute (`PK01`, `SK12`, …).
///
/// ```
/// use tablegraph::keys::is_slot_attribute;
/// assert!(is_slot_attribute("PK01") && is_slot_attribute("SK02"));
/// assert!(!is_slot_attribute("PK") && !is_slot_attribute("SKU") && !is_slot_attribute("name"));
/// ```
pub fn is_slot_attribute(name: &str) -> bool {
    let digits = name
        .strip_prefix("PK")
        .or_else(|| name.strip_prefix("SK"))
        .unwrap_or_default();
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The slot partition value a node writes to join its parent's one-to-many relation: the
/// relation's element type (or union) name and the parent's id.
///
/// ```
/// assert_eq!(tablegraph::keys::slot_partition("Animal", "0190"), "Animal#0190");
/// ```
pub fn slot_partition(element: &str, parent_id: &str) -> String {
    format!("{element}#{parent_id}")
}

/// The slot sort value: the encoded sort value, then `#<id>` so that order is total. A relation
/// without `sortBy` sorts by id alone, which for server-made UUIDv7 ids is creation order.
///
/// ```
/// use tablegraph::keys::slot_sort_key;
/// assert_eq!(slot_sort_key(Some("bessie"), "0190"), "bessie#0190");
/// assert_eq!(slot_sort_key(None, "0190"), "0190");
/// ```
pub fn slot_sort_key(sort_value: Option<&str>, id: &str) -> String {
    match sort_value {
        Some(value) => format!("{value}#{id}"),
        None => id.to_owned(),
    }
}

/// The slot sort keys whose sort value is `sort_value`: from the first (inclusive) to the first
/// key past them (exclusive; `$` follows `#`, and an encoded sort value never holds either
/// unescaped, so a longer value sorts past them too).
///
/// ```
/// use tablegraph::keys::slot_sort_key_range;
/// assert_eq!(
///     slot_sort_key_range("bessie"),
///     ("bessie#".to_owned(), "bessie$".to_owned())
/// );
/// ```
pub fn slot_sort_key_range(sort_value: &str) -> (String, String) {
    (format!("{sort_value}#"), format!("{sort_value}$"))
}

/// The partition of a type index shard: `<Type>#LIST#<shard, two digits>`. An id never holds
/// `#`, so it is never the partition of a relation (`<Type>#<parent id>`).
///
/// ```
/// assert_eq!(tablegraph::keys::list_partition("Farm", 3), "Farm#LIST#03");
/// ```
pub fn list_partition(type_name: &str, shard: u8) -> String {
    format!("{type_name}#LIST#{shard:02}")
}

/// The attribute of a node that counts the members of one of its `@hasMany` connections: the
/// nodes of `element` in slot `slot` whose key names the node (`totalCount`). No field is
/// named with a `#`.
///
/// ```
/// assert_eq!(tablegraph::keys::members_count_attribute(1, "Cow"), "count#GSI01#Cow");
/// ```
pub fn members_count_attribute(slot: u8, element: &str) -> String {
    format!("count#{}#{element}", gsi_name(slot))
}

/// The attribute of a node that counts its edges of type `edge`: out of it (`@outgoing`), or
/// into it (`@incoming`).
///
/// ```
/// use tablegraph::keys::edges_count_attribute;
/// assert_eq!(edges_count_attribute("GoalMembership", true), "count#out#GoalMembership");
/// assert_eq!(edges_count_attribute("GoalMembership", false), "count#in#GoalMembership");
/// ```
pub fn edges_count_attribute(edge: &str, outgoing: bool) -> String {
    let direction = if outgoing { "out" } else { "in" };
    format!("count#{direction}#{edge}")
}

/// Whether a node attribute is one of its counts.
pub fn is_count_attribute(name: &str) -> bool {
    name.starts_with("count#")
}

/// The key (`PK` = `SK`) of the item that counts the nodes of `type_name` in one shard of its
/// type index, in its attribute `count`. `$` is in no type name, so no unique value, node or
/// record has this key.
///
/// ```
/// assert_eq!(tablegraph::keys::list_count_key("Farm", 3), "COUNT$Farm#03");
/// ```
pub fn list_count_key(type_name: &str, shard: u8) -> String {
    format!("COUNT${type_name}#{shard:02}")
}

/// The `__typename` of a type's shard counters.
///
/// ```
/// assert_eq!(tablegraph::keys::list_count_typename("Farm"), "COUNT$Farm");
/// ```
pub fn list_count_typename(type_name: &str) -> String {
    format!("COUNT${type_name}")
}

/// The partition of one value of a secondary index (`@index`): `<Type>#<index name>#<value>`,
/// the value as stored (text as it is; numbers in their decimal form). An id holds no `#`, so
/// this is never a relation's partition, and a type's list and each of its indexes have a slot
/// of their own.
///
/// ```
/// assert_eq!(
///     tablegraph::keys::index_partition("Cow", "byColor", "Brown"),
///     "Cow#byColor#Brown"
/// );
/// ```
pub fn index_partition(type_name: &str, index_name: &str, value: &str) -> String {
    format!("{type_name}#{index_name}#{value}")
}

/// The type index shard of the node `id` among `shards`: 32-bit FNV-1a of the id's bytes,
/// modulo the shards. Part of the key format: a node stays in its shard for as long as the
/// type's shard count does.
///
/// ```
/// use tablegraph::keys::list_shard;
/// assert_eq!(list_shard("0190d1a6-7b2c-7cc1-9a43-5c1d2e3f4a5b", 4), 3);
/// assert_eq!(list_shard("0190d1a6-7b2c-7cc1-9a43-5c1d2e3f4a5c", 4), 0);
/// assert_eq!(list_shard("anything", 1), 0);
/// ```
pub fn list_shard(id: &str, shards: u8) -> u8 {
    let hash = id.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    });
    u8::try_from(hash % u32::from(shards.max(1))).expect("a remainder below a u8 fits a u8")
}

/// The id at the end of a slot sort key.
///
/// ```
/// use tablegraph::keys::id_from_slot_sort_key;
/// assert_eq!(id_from_slot_sort_key("bessie#0190"), Some("0190"));
/// assert_eq!(id_from_slot_sort_key("0190"), Some("0190"));
/// assert_eq!(id_from_slot_sort_key("bessie#"), None);
/// ```
pub fn id_from_slot_sort_key(sort_key: &str) -> Option<&str> {
    let id = sort_key.rsplit('#').next()?;
    validate_id(id).ok().map(|()| id)
}

/// The `SK` of an edge item, in its source node's partition (`PK = NODE#<from>`).
///
/// ```
/// assert_eq!(tablegraph::keys::edge_sort_key("GoalMembership", "0191"), "GoalMembership#0191");
/// ```
pub fn edge_sort_key(edge_type: &str, to_id: &str) -> String {
    format!("{edge_type}#{to_id}")
}

/// The prefix every edge `SK` of one type starts with, and the first key after all of them
/// (`$` follows `#`), bounding a Query of one node's edges of that type.
///
/// ```
/// assert_eq!(
///     tablegraph::keys::edge_sort_key_range("GoalMembership"),
///     ("GoalMembership#".to_owned(), "GoalMembership$".to_owned())
/// );
/// ```
pub fn edge_sort_key_range(edge_type: &str) -> (String, String) {
    (format!("{edge_type}#"), format!("{edge_type}$"))
}

/// An entry of a node's edge set: the edge type, the target and the edge's sort value.
///
/// ```
/// use tablegraph::keys::edge_set_entry;
/// assert_eq!(edge_set_entry("GoalMembership", "0191", Some("500-LEAD")), "GoalMembership#0191#500-LEAD");
/// assert_eq!(edge_set_entry("Friend", "0191", None), "Friend#0191");
/// ```
pub fn edge_set_entry(edge_type: &str, to_id: &str, sort_value: Option<&str>) -> String {
    match sort_value {
        Some(sort) => format!("{edge_type}#{to_id}#{sort}"),
        None => format!("{edge_type}#{to_id}"),
    }
}

/// One edge set entry read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeSetEntry<'a> {
    pub edge_type: &'a str,
    pub to_id: &'a str,
    pub sort_value: Option<&'a str>,
}

/// Reads an edge set entry; sort values never contain `#` (it is escaped), so the split is exact.
///
/// ```
/// use tablegraph::keys::{parse_edge_set_entry, EdgeSetEntry};
/// assert_eq!(
///     parse_edge_set_entry("GoalMembership#0191#500-LEAD"),
///     Some(EdgeSetEntry { edge_type: "GoalMembership", to_id: "0191", sort_value: Some("500-LEAD") })
/// );
/// assert_eq!(parse_edge_set_entry("garbage"), None);
/// ```
pub fn parse_edge_set_entry(entry: &str) -> Option<EdgeSetEntry<'_>> {
    let (edge_type, rest) = entry.split_once('#')?;
    let (to_id, sort_value) = match rest.split_once('#') {
        Some((to_id, sort_value)) => (to_id, Some(sort_value)),
        None => (rest, None),
    };
    if edge_type.is_empty() || validate_id(to_id).is_err() {
        return None;
    }
    Some(EdgeSetEntry {
        edge_type,
        to_id,
        sort_value,
    })
}

/// The partition of one shard of the table's change stream: the shard's lease (who reads it)
/// and its relay (what that reader read, for the other replicas).
///
/// ```
/// assert_eq!(
///     tablegraph::keys::stream_partition("shardId-00000001-farms"),
///     "STREAM#shardId-00000001-farms"
/// );
/// ```
pub fn stream_partition(shard: &str) -> String {
    format!("STREAM#{shard}")
}

/// Whether a `PK` is a stream partition's (neither a node nor anything else a schema knows).
///
/// ```
/// assert!(tablegraph::keys::is_stream_partition("STREAM#shardId-1"));
/// assert!(!tablegraph::keys::is_stream_partition("NODE#STREAM#"));
/// ```
pub fn is_stream_partition(pk: &str) -> bool {
    pk.starts_with("STREAM#")
}

/// The key (`PK` = `SK`) of the item the answers of the schema's own mutation `mutation` are
/// published through (AppSync's pub/sub): each answer is written over it, and the change
/// stream carries every write to the subscribers. It is one of the change stream's own items
/// ([`is_stream_partition`]), so exports, read caches and `check` pass over it as they pass
/// over leases and relays.
///
/// ```
/// use tablegraph::keys::{is_stream_partition, published_key, published_mutation};
/// let key = published_key("publishDevicePosition");
/// assert_eq!(key, "STREAM#PUBLISH#publishDevicePosition");
/// assert!(is_stream_partition(&key));
/// assert_eq!(published_mutation(&key), Some("publishDevicePosition"));
/// assert_eq!(published_mutation("STREAM#shardId-1"), None);
/// ```
pub fn published_key(mutation: &str) -> String {
    format!("{PUBLISHED_PREFIX}{mutation}")
}

/// The mutation whose answers a published item's `PK` carries; `None` for any other key.
pub fn published_mutation(pk: &str) -> Option<&str> {
    pk.strip_prefix(PUBLISHED_PREFIX)
}

const PUBLISHED_PREFIX: &str = "STREAM#PUBLISH#";

/// The partition of a type's delta record (conflict detection): one item per write of one of
/// its nodes, kept for the delta window, which a delta sync reads instead of the type.
///
/// ```
/// assert_eq!(tablegraph::keys::delta_partition("Note"), "DELTA#Note");
/// ```
pub fn delta_partition(type_name: &str) -> String {
    format!("DELTA#{type_name}")
}

/// Whether a `PK` is a delta record's partition.
///
/// ```
/// assert!(tablegraph::keys::is_delta_partition("DELTA#Note"));
/// assert!(!tablegraph::keys::is_delta_partition("NODE#DELTA#"));
/// ```
pub fn is_delta_partition(pk: &str) -> bool {
    pk.starts_with("DELTA#")
}

/// The `SK` of one write in a delta record: when it was made (milliseconds, padded to 13
/// digits so that byte order is time order), the node's id and the version it wrote.
///
/// ```
/// use tablegraph::keys::{delta_sort_key, delta_since};
/// let key = delta_sort_key(1_700_000_000_123, "0191", 3);
/// assert_eq!(key, "1700000000123#0191#3");
/// assert!(delta_sort_key(999, "a", 1) < delta_sort_key(1000, "a", 1));
/// assert!(delta_since(1_700_000_000_123).as_str() <= key.as_str());
/// assert!(delta_since(1_700_000_000_124).as_str() > key.as_str());
/// ```
pub fn delta_sort_key(millis: i64, id: &str, version: i64) -> String {
    format!("{millis:013}#{id}#{version}")
}

/// The lowest `SK` of the writes made at or after `millis`.
pub fn delta_since(millis: i64) -> String {
    format!("{:013}", millis.max(0))
}

/// The key (`PK` = `SK`) of the record of migration `name`.
///
/// ```
/// assert_eq!(tablegraph::keys::migration_key("0001_rename"), "MIGRATION#0001_rename");
/// ```
pub fn migration_key(name: &str) -> String {
    format!("MIGRATION#{name}")
}

/// Whether `pk` is the record of a migration tablegraph ships (named `builtin-…`): a record of
/// the table it was read from, not of the data.
///
/// ```
/// use tablegraph::keys::is_shipped_migration_record;
/// assert!(is_shipped_migration_record("MIGRATION#builtin-counts"));
/// assert!(!is_shipped_migration_record("MIGRATION#0001_rename"));
/// ```
pub fn is_shipped_migration_record(pk: &str) -> bool {
    pk.starts_with("MIGRATION#builtin-")
}

/// The `SK` of a stream shard's lease.
pub const STREAM_LEASE: &str = "LEASE";

/// The `SK` of a relay item: the sequence number of the first record it carries, padded to 40
/// digits (DynamoDB's longest) so that byte order is the stream's order.
///
/// ```
/// assert_eq!(
///     tablegraph::keys::relay_key("4021"),
///     "RELAY#0000000000000000000000000000000000004021"
/// );
/// assert!(tablegraph::keys::relay_key("999") < tablegraph::keys::relay_key("1000"));
/// ```
pub fn relay_key(sequence: &str) -> String {
    format!("RELAY#{sequence:0>40}")
}

/// The bounds of every relay key of a partition (`RELAY#` < key < `RELAY$`).
pub const RELAY_KEYS: (&str, &str) = ("RELAY#", "RELAY$");

/// A new node id: a UUIDv7, so ids are time-ordered and never contain `#`.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_are_valid_and_time_ordered() {
        let first = new_id();
        let second = new_id();
        assert_eq!(validate_id(&first), Ok(()));
        assert!(first < second, "{first} should sort before {second}");
    }

    #[test]
    fn over_long_ids_are_refused() {
        assert_eq!(validate_id(&"a".repeat(MAX_ID_LEN)), Ok(()));
        assert_eq!(
            validate_id(&"a".repeat(MAX_ID_LEN + 1)),
            Err(IdError::TooLong)
        );
    }

    #[test]
    fn unique_keys_collide_across_case_and_padding() {
        assert_eq!(
            unique_key("Farm", "name", "Old MacDonald's"),
            unique_key("Farm", "name", "  OLD macdonald'S")
        );
    }
}
