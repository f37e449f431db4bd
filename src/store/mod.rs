//! The only module that talks to DynamoDB: one shared `aws-sdk-dynamodb` client, the table's
//! operations named by what they cost, and the embedded store launcher.
//!
//! Invariant: SDK types never leave this module. Callers see [`Item`], [`Write`] and
//! [`StoreError`]; every call is recorded in the request's [`CallLog`] when one is attached.
//!
//! # Why retries live here
//!
//! `UnprocessedKeys`, throttling, `TransactionConflict`, timeouts and 5xx answers are normal
//! under load, not failures. Every call retries them in one loop (`retry.rs`, on `backon`),
//! with jittered exponential backoff under a fixed budget of attempts (the SDK's own retries
//! are off, so retries never multiply). A resolver gets the whole answer or, once the budget is
//! spent, a transient [`StoreError`] it reports as `StorageUnavailable`. Each attempt counts
//! against the request's call budget and in `/metrics`; a request's reported calls are the
//! answered ones.
//!
//! A transaction whose answer was lost (a timeout) is retried with the same client request
//! token from then on, so DynamoDB applies it at most once; before any answer was lost, a
//! definite refusal (conflict, throttling) gives the next attempt a new token. The embedded
//! store of this process loses no answers and gets no token ([`Store::connect_in_process`]).

mod cache;
mod calls;
mod client;
mod embedded;
mod error;
mod filter;
mod in_process;
mod item;
mod key;
mod metrics;
mod reads;
mod retry;
mod simulate;
mod stream;
mod stream_upkeep;
mod table;
mod write;

pub use cache::{
    CacheSettings, DEFAULT_MAX_LAG as DEFAULT_CACHE_MAX_LAG, Partition, ReadCache, Touched,
    default_cache_bytes,
};
pub use calls::{CallLog, CallRecord};
pub use client::{Credentials, Store};
#[cfg(test)]
pub(crate) use client::{loopback_store, loopback_store_indexed};
pub use embedded::{EmbeddedLocation, EmbeddedStore};
pub use error::StoreError;
pub use filter::{Filter, Test, compare as compare_values};
pub use item::{
    AttrValue, DELETED, Item, Map, OWN_FIELD_VERSION, RangePage, StreamRecord, StringSet, VERSION,
    item_from_json, item_size, item_to_json, value_from_plain_json, value_size,
    value_to_plain_json,
};
pub use key::{Bound, Key, MAX_BATCH_GET_KEYS, MAX_ITEM_BYTES, MAX_TRANSACTION_ITEMS, RangeQuery};
pub use metrics::StoreMetrics;
pub use reads::ScanPage;
pub use retry::RETRY_ATTEMPTS;
pub use simulate::{Fault, FaultPlan, StoreTuning};
pub use stream::{ShardReader, ShardStart, StreamTail};
pub use table::TableStatus;
pub use write::{Changes, Clause, Write};
