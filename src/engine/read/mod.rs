//! Reading the table for a request: nodes by id or unique value (through the request's
//! loader), pages of relations and edges (`connections`), of a type's list (`lists`) and of
//! an index, with their filters, cursors and counts, and the read pipelines of `resolvers/`.
//!
//! Invariant: nothing here writes; every read goes through the request's scope (its loader,
//! its call budget, its caller's rules).

mod ahead;
mod connections;
mod deltas;
mod key_conditions;
mod level;
mod lists;
mod nodes;
mod page_reads;
mod page_request;
mod pipelines;
pub mod search;
mod selection;

/// The tests a filtered read (a page, a subscription's events) applies to each item.
pub use crate::store::{Filter, Test};
pub use connections::{Connection, Page, PageEdge, read_page};
pub use deltas::{DeltaStart, delta_connection, is_delta_connection};
pub use key_conditions::{KeyField, KeyKind, KeyPart};
pub use level::{AskedPage, Level, Targets};
pub use lists::list_key_field;
pub use nodes::{Node, load_node_by_unique};
pub use page_request::{
    DEFAULT_PAGE_SIZE, KeyCondition, MAX_LIMIT, MAX_PAGE_SIZE, PageArguments, PageFilter,
    PageRequest, Prefetch, SortOperand,
};
pub use pipelines::{Found, PipelineInput, run_pipeline};
pub use selection::{PageSelection, Selection};

pub(in crate::engine) use nodes::{node_exists, node_type, read_node_consistent};
