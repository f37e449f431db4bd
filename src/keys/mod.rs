//! The single-table key codec: every string tablegraph writes into a key attribute or hands to a
//! client as a cursor is made here, and nowhere else.
//!
//! Invariant: these formats are a contract with data already stored. Each function's doc test is
//! its specification; changing an output needs a migration.
//!
//! # Why sort values escape low characters
//!
//! A relation's sort key is `<sort value>#<id>`. For byte order to equal GraphQL order, `#` must
//! sort below every character a sort value can contain; otherwise `"ab c"` would sort before
//! `"ab"`. Characters up to `$` are therefore written as `$` followed by a letter (`' '` becomes
//! `$a`), which keeps their relative order and leaves `#` below everything else.

mod cursor;
mod layout;
mod sort;
mod unique;

pub use cursor::{Cursor, CursorError, CursorKeys};
pub use layout::{
    EdgeSetEntry, IdError, MAX_ID_LEN, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES, PK, RELAY_KEYS,
    SK, STREAM_LEASE, TYPENAME, delta_partition, delta_since, delta_sort_key, edge_set_entry,
    edge_sort_key, edge_sort_key_range, edges_count_attribute, gsi_name, id_from_slot_sort_key,
    index_partition, is_count_attribute, is_delta_partition, is_shipped_migration_record,
    is_slot_attribute, is_stream_partition, list_count_key, list_count_typename, list_partition,
    list_shard, members_count_attribute, migration_key, new_id, node_key, parse_edge_set_entry,
    primary_key_id, primary_key_id_of, published_key, published_mutation, relay_key,
    slot_partition, slot_partition_attribute, slot_sort_attribute, slot_sort_key,
    slot_sort_key_range, stream_partition, unique_key, unique_key_v1, unique_typename, validate_id,
};
pub use sort::{NULL_SORT_VALUE, SortInput, encode_sort_value, enum_sort_value};
pub use unique::{normalize_unique, normalize_unique_v1, unique_value_fault};
