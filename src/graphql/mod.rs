//! The GraphQL API, an adapter over the engine: the async-graphql dynamic schema built from the
//! [`Model`](crate::model::Model), one file per kind of generated thing, and thin resolvers
//! that turn arguments into plain values, call the engine and turn what it answers into field
//! values.
//!
//! Invariant: resolvers hand out only nodes the engine handed them, so every node passed a
//! `__typename` check; every error a client sees carries AppSync's `errorType`.

mod admission;
mod amplify;
mod api;
mod connection;
mod context;
mod custom;
mod declared;
mod denied_fields;
mod edge_types;
mod embedded;
mod errors;
mod example;
mod field_errors;
mod fields;
mod filters;
mod inputs;
mod key_conditions;
mod limits;
mod mutation;
mod null_items;
mod objects;
mod operation_span;
mod own_fields;
mod persisted;
mod query;
mod scalars;
mod schema;
mod selection;
mod shape;
mod subscription;
mod targets;
mod values;

pub use admission::Admitted;
pub use api::{Api, SchemaOptions, Transport, print_sdl};
pub use errors::{GRAPHQL_ERROR, INVALID_SYNTAX, VALIDATION_ERROR};
pub use example::{KOAN_QUERY, example_query};
pub use limits::{MAX_NESTING, MAX_TOKENS, QueryLimits, UNPAGED_LIST_ESTIMATE};
pub use own_fields::RequestHeaders;
pub use persisted::PersistedSettings;
pub use subscription::InPlace;
