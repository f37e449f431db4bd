//! The API's generated types and the fields that answer them: each `@model` type's object
//! with its stored fields, relations, connections (Relay's and Amplify's), `@targets` lists and
//! fields served by resolver files or functions; the `@edge` types; the non-model types; the
//! interfaces a schema declares; the mutations' input types.

pub(in crate::graphql) mod amplify;
pub(in crate::graphql) mod connection;
pub(in crate::graphql) mod custom;
pub(in crate::graphql) mod declared;
pub(in crate::graphql) mod edge_types;
pub(in crate::graphql) mod embedded;
pub(in crate::graphql) mod fields;
pub(in crate::graphql) mod inputs;
pub(in crate::graphql) mod objects;
pub(in crate::graphql) mod own_fields;
pub(in crate::graphql) mod search;
pub(in crate::graphql) mod sync;
pub(in crate::graphql) mod targets;
