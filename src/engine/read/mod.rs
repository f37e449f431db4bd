//! Reading the table for a request: nodes by id or unique value (through the request's
//! loader), pages of relations and edges (`connections`), of a type's list (`lists`) and of
//! an index, with their filters, cursors and counts, and the read pipelines of `resolvers/`.
//!
//! Invariant: nothing here writes; every read goes through the request's scope (its loader,
//! its call budget, its caller's rules).

mod connections;
mod key_conditions;
mod lists;
mod nodes;
mod page_reads;
mod page_request;
mod pipelines;

pub use connections::{
    Connection, Page, PageEdge, empty_page, read_ahead, read_field_page, read_page, total_count,
    whole_connection,
};
pub use key_conditions::{KeyField, KeyKind, KeyPart};
pub use lists::{empty_list_page, list_key_field, list_total_count, read_list_page};
pub use nodes::{
    Node, load_node, load_node_by_unique, load_node_or_null, load_nodes, load_nodes_each, prefetch,
};
pub use page_request::{
    DEFAULT_PAGE_SIZE, KeyCondition, MAX_PAGE_SIZE, PageArguments, PageFilter, PageRequest,
    Prefetch, SortOperand,
};
pub use pipelines::{Found, PipelineInput, run_pipeline};

pub(in crate::engine) use nodes::{node_exists, node_type, read_node_consistent};
