//! The table's operations for a [`Model`](crate::model::Model), apart from any front end:
//! reading nodes with their `__typename` check, pages of relations and edges, write plans
//! (create, update, delete with cascade, edge add and remove) committed as one transaction
//! each, the derivations (slots, sort values, unique keys, edge-set entries) that writes,
//! `check` and `migrate` share, and the change events of every committed write.
//!
//! Invariant: no GraphQL here. Operations take plain values and a per-request
//! [`RequestScope`], and answer [`EngineError`]s named after AppSync's error types.

mod batch_writes;
mod connections;
mod creates;
mod derive;
mod drive;
mod edge_writes;
mod error;
mod fold;
mod formats;
mod guard;
mod lists;
mod node_writes;
mod nodes;
mod page_reads;
mod page_request;
mod pipelines;
mod plan;
mod rules;
mod scope;

pub use crate::store::{Filter, Test};
pub use batch_writes::{UpdateMember, delete_nodes, update_nodes};
pub use connections::{
    Connection, KeyField, KeyKind, Page, PageEdge, empty_page, read_ahead, read_page, total_count,
    whole_connection,
};
pub use creates::{NewEdge, NewNode, create_node, create_nodes, create_tree};
pub use derive::{
    MAX_SORT_VALUE_BYTES, edge_set_entry, edge_sort_value, index_value, role_sort_value,
    set_edge_slot_attributes, set_index_attributes, set_list_attributes, set_slot_attributes,
    sort_value, target_ids, targets, unique_item_key, unique_text,
};
pub use drive::WRITE_ATTEMPTS;
pub use edge_writes::{add_edge, remove_edge};
pub use error::EngineError;
pub use lists::{empty_list_page, list_key_field, list_total_count, read_list_page};
pub use node_writes::{FieldValues, Guard, delete_node, update_node};
pub use nodes::{Node, load_node, load_node_by_unique, load_nodes, load_nodes_each, prefetch};

pub use formats::{is_aws_date, is_aws_date_time, is_aws_email, now, stored_text, valid_text};
pub use page_request::{
    DEFAULT_PAGE_SIZE, FilterRead, KeyCondition, MAX_PAGE_SIZE, PageArguments, PageFilter,
    PageRequest, SortOperand,
};
pub use pipelines::{Found, PipelineInput, run_pipeline};
pub use plan::{LIST_COUNT, node_update};
pub use rules::{Access, ClaimNames, DEFAULT_GROUPS_CLAIM, Identity, Rules, admits};
pub use scope::{DEFAULT_FILTER_BUDGET, RequestScope, ScopeSource};
