//! The table's operations for a [`Model`](crate::model::Model), apart from any front end:
//! reading nodes with their `__typename` check, pages of relations and edges, write plans
//! (create, update, delete with cascade, edge add and remove) committed as one transaction
//! each, and the derivations (slots, sort values, unique keys, edge-set entries) that writes,
//! `check` and `migrate` share. What a committed write changed reaches subscribers from the
//! table's change stream ([`changes`](crate::changes)), not from the write.
//!
//! Two parts, each behind its own front door: [`read`] (nodes, pages, lists, read pipelines)
//! and [`write`] (plans committed by one write driver), which reads through `read`. What both
//! share sits beside them: the request ([`RequestScope`]), the caller's rules ([`Rules`],
//! [`Access`]), the derivations ([`derive`]: slots, sort values, unique keys, edge-set entries,
//! which `check` and `migrate` use too), the stored text formats ([`formats`]) and the errors.
//!
//! Invariant: no GraphQL here. Operations take plain values and a per-request
//! [`RequestScope`], and answer [`EngineError`]s named after AppSync's error types.

pub mod derive;
mod error;
pub mod formats;
pub mod ids;
pub mod read;
mod rules;
mod scope;
pub mod sync;
pub mod write;

/// A page's position, unsigned until a front end hands it to a client.
pub use crate::keys::{Cursor, TYPENAME};
/// What the engine reads and writes is the store's items: a node's or an edge's attributes,
/// handed up as they are for front ends to shape.
pub use crate::store::{AttrValue, Item, value_from_plain_json, value_to_plain_json};
pub use error::EngineError;
pub use rules::{Access, ClaimNames, DEFAULT_GROUPS_CLAIM, Identity, Rules, admits};
pub use scope::{DEFAULT_FILTER_BUDGET, FilterRead, RequestScope, ScopeSettings, ScopeSource};
pub use sync::{DELETED, LAST_CHANGED_AT, SYNC_VERSION, last_changed_at};
