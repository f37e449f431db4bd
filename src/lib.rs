//! tablegraph: an AppSync-style GraphQL API server on one DynamoDB table.
//!
//! Read in this order:
//! - [`model`]: `schema.graphql` → a validated [`model::Model`] (pure);
//! - [`keys`]: the single-table key, sort-value and cursor codec (pure);
//! - [`store`]: the only user of the DynamoDB SDK, and the embedded store;
//! - [`changes`]: the table's change stream as events, shared between replicas;
//! - [`loaders`]: per-request batching of reads by key;
//! - [`engine`]: reads, writes and authorization rules over the table, one operation each;
//! - [`resolvers`]: declarative resolvers of `resolvers/`, validated against the model;
//! - [`functions`]: the functions (`@function`) that resolve the schema's own fields, over HTTP;
//! - [`graphql`]: the dynamic schema built from the model, and its resolvers;
//! - [`access_plan`]: the storage access of every field, as `tablegraph plan` prints it;
//! - [`http`]: the router and the GraphQL-over-HTTP handler;
//! - [`auth`]: API keys and JWT bearer tokens;
//! - [`migrate`]: making the table match the model;
//! - [`check`]: the table's invariants, verified over a full scan;
//! - [`transfer`]: the table to and from JSON lines;
//! - [`progress`]: how long work tells how far it got;
//! - [`demo`]: the demo data set, written through the API;
//! - [`config`], [`telemetry`], [`app`], [`cli`]: wiring.

// The futures of batch writes nest deeply enough (resolver → engine → SDK) that proving them
// `Send` passes the compiler's default depth of 128.
#![recursion_limit = "256"]

pub mod access_plan;
pub mod amplify_import;
pub mod amplify_project;
pub mod app;
pub mod auth;
pub mod changes;
pub mod check;
pub mod cli;
pub mod config;
pub mod demo;
pub mod engine;
pub mod functions;
pub mod graphql;
pub mod http;
pub mod keys;
pub mod loaders;
pub mod local_aws;
pub mod migrate;
pub mod model;
pub mod progress;
pub mod resolvers;
pub mod slot_lock;
pub mod store;
pub mod telemetry;
pub mod transfer;
