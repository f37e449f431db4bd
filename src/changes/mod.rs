//! The table's change stream as events: what each committed write did to a node or an edge
//! ([`Change`]), published to the process's subscribers ([`EventHub`]), and shared between
//! replicas through the table (`relay`) so that one replica reads each shard.
//!
//! A layer of its own between `store` and `engine`: it reads the stream and the table through
//! `store`, and knows of the schema only the key layout (`keys`). The engine records the
//! changes its writes commit (`engine::RequestScope`); subscriptions (`graphql`) hold a
//! receiver of the hub.

mod change;
mod events;
mod relay;
mod relay_items;

pub use change::{Change, ChangeKind, PUBLISHED_ANSWER, published_typename};
pub use events::{
    DYNAMODB_POLL, EMBEDDED_POLL, EVENT_BUFFER, Event, EventHub, EventReceiver, Watch,
};
pub use relay::LEASE_DURATION;
