//! The root types: `Query` (nodes by id, by unique value, lists and index queries),
//! `Mutation` (creates, updates, deletes, edges added and removed) and `Subscription`.

mod conflicts;
pub(in crate::graphql) mod mutation;
pub(in crate::graphql) mod query;
pub(in crate::graphql) mod subscription;
