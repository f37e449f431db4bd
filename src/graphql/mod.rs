//! The GraphQL API, an adapter over the engine: the async-graphql dynamic schema built from the
//! [`Model`](crate::model::Model), one file per kind of generated thing, and thin resolvers
//! that turn arguments into plain values, call the engine and turn what it answers into field
//! values.
//!
//! Invariant: resolvers hand out only nodes the engine handed them, so every node passed a
//! `__typename` check; every error a client sees carries AppSync's `errorType`.

mod admission;
mod api;
mod context;
mod errors;
mod example;
mod null_items;
mod report;
mod roots;
mod schema;
mod selection;
mod types;
mod values;

pub use admission::Admitted;
pub use admission::limits::{MAX_NESTING, MAX_TOKENS, QueryLimits, UNPAGED_LIST_ESTIMATE};
pub use admission::persisted::PersistedSettings;
pub use api::{Api, Reads, SchemaOptions, Transport, print_sdl};
pub use errors::{GRAPHQL_ERROR, INVALID_SYNTAX, VALIDATION_ERROR, appsync};
pub use example::{KOAN_QUERY, example_query};
pub use roots::subscription::InPlace;
pub use types::own_fields::RequestHeaders;
