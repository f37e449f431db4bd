//! The only module that talks to DynamoDB: one shared `aws-sdk-dynamodb` client, the table's
//! operations named by what they cost, and the embedded store launcher.
//!
//! Invariant: SDK types never leave this module. Callers see [`Item`], [`Write`] and
//! [`StoreError`]; every call is recorded in the request's [`CallLog`] when one is attached.
//!
//! # Why retries live here
//!
//! `UnprocessedKeys` and `TransactionConflict` are normal DynamoDB answers under load, not
//! failures. They are retried with jittered exponential backoff under a fixed budget, so a
//! resolver either gets the whole answer or a clean `Throttled`/`TransactionConflict` error.

mod calls;
mod embedded;
mod error;
mod item;
mod table;
mod write;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

pub use calls::{CallLog, CallRecord};
pub use embedded::{EmbeddedLocation, EmbeddedStore};
pub use error::StoreError;
pub use item::{AttrValue, Item, item_size};
pub use table::TableStatus;
pub use write::{Clause, Write};

use crate::keys;

/// DynamoDB's limit of keys per BatchGetItem.
pub const MAX_BATCH_GET_KEYS: usize = 100;
/// DynamoDB's limit of items per TransactWriteItems.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
/// DynamoDB's limit on one item's size.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// How many times a partial or conflicting answer is retried before giving up.
const RETRY_ATTEMPTS: u32 = 8;
const RETRY_BASE: Duration = Duration::from_millis(10);
const RETRY_CAP: Duration = Duration::from_millis(500);

/// How the client signs its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// The usual AWS chain: environment, profile, container or instance role.
    Environment,
    /// Fixed local credentials, for the embedded store, which does not check them.
    Local,
}

/// A handle on the table. Cheap to clone; clones share the SDK client and its connection pool.
#[derive(Clone)]
pub struct Store {
    client: Client,
    table: Arc<str>,
    /// The calls of the request this handle serves, if it serves one.
    calls: Option<Arc<CallLog>>,
}

/// A read of one relation slot, between optional exclusive bounds.
#[derive(Debug, Clone)]
pub struct SlotQuery<'a> {
    pub slot: u8,
    pub partition: &'a str,
    /// Only sort keys strictly above this one.
    pub after: Option<&'a str>,
    /// Only sort keys strictly below this one.
    pub before: Option<&'a str>,
    /// Ascending sort order when true.
    pub forward: bool,
    pub limit: usize,
}

impl Store {
    /// Connects to the table `table` at `endpoint` (DynamoDB's regional endpoint when `None`).
    /// Region and credentials come from the AWS environment; a missing region means us-east-1.
    pub async fn connect(endpoint: Option<&str>, credentials: Credentials, table: &str) -> Store {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_attempt_timeout(Duration::from_secs(10))
                    .build(),
            );
        if let Some(url) = endpoint {
            loader = loader.endpoint_url(url);
        }
        if credentials == Credentials::Local {
            // Nothing to look up: no region or credential provider chain (and no instance
            // metadata calls) for a store on this machine.
            loader = loader
                .region(aws_config::Region::new("us-east-1"))
                .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                    "tablegraph",
                    "local",
                    None,
                    None,
                    "tablegraph-local",
                ));
        }
        let shared = loader.load().await;
        let mut config = aws_sdk_dynamodb::config::Builder::from(&shared);
        if shared.region().is_none() {
            config = config.region(aws_sdk_dynamodb::config::Region::new("us-east-1"));
        }
        Store {
            client: Client::from_conf(config.build()),
            table: Arc::from(table),
            calls: None,
        }
    }

    /// A handle that records its calls in `calls`.
    pub fn recording(&self, calls: Arc<CallLog>) -> Store {
        Store {
            calls: Some(calls),
            ..self.clone()
        }
    }

    pub fn table_name(&self) -> &str {
        &self.table
    }

    fn record(&self, call: CallRecord) {
        if let Some(calls) = &self.calls {
            calls.record(call);
        }
    }

    /// Refuses a call once the request has spent its budget of storage calls.
    fn begin_call(&self) -> Result<(), StoreError> {
        match &self.calls {
            Some(calls) => calls.begin(),
            None => Ok(()),
        }
    }

    /// Reads items whose `PK` and `SK` both equal each key (nodes, unique values), in chunks of
    /// at most 100 keys per BatchGetItem, run concurrently. Missing keys are absent from the
    /// answer.
    pub async fn batch_get_items(
        &self,
        keys: &[String],
    ) -> Result<HashMap<String, Item>, StoreError> {
        let chunks = keys
            .chunks(MAX_BATCH_GET_KEYS)
            .map(|chunk| self.batch_get_chunk(chunk));
        let mut found = HashMap::with_capacity(keys.len());
        for chunk in futures::future::try_join_all(chunks).await? {
            found.extend(chunk);
        }
        Ok(found)
    }

    async fn batch_get_chunk(&self, keys: &[String]) -> Result<HashMap<String, Item>, StoreError> {
        let mut pending = Some(keys_and_attributes(keys)?);
        let mut found = HashMap::with_capacity(keys.len());
        let mut attempt = 0;
        while let Some(request) = pending.take() {
            self.begin_call()?;
            let asked = request.keys().len();
            let output = self
                .client
                .batch_get_item()
                .request_items(self.table.to_string(), request)
                .send()
                .await
                .map_err(error::classify);
            let output = match output {
                Ok(output) => output,
                Err(StoreError::Throttled(_)) if attempt < RETRY_ATTEMPTS => {
                    // Nothing was read: ask again for the same keys after a pause.
                    attempt += 1;
                    backoff(attempt).await;
                    pending = Some(keys_and_attributes(keys)?);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let items: Vec<Item> = output
                .responses
                .unwrap_or_default()
                .remove(self.table.as_ref())
                .unwrap_or_default()
                .into_iter()
                .map(item::item_from_sdk)
                .collect();
            self.record(CallRecord {
                operation: "BatchGetItem",
                index: None,
                keys: Some(asked),
                items: Some(items.len()),
            });
            for item in items {
                if let Some(AttrValue::S(pk)) = item.get("PK") {
                    found.insert(pk.clone(), item);
                }
            }
            pending = output
                .unprocessed_keys
                .and_then(|mut unprocessed| unprocessed.remove(self.table.as_ref()))
                .filter(|rest| !rest.keys().is_empty());
            if pending.is_some() {
                attempt += 1;
                if attempt > RETRY_ATTEMPTS {
                    return Err(StoreError::Throttled(
                        "BatchGetItem left keys unprocessed after every retry".into(),
                    ));
                }
                backoff(attempt).await;
            }
        }
        Ok(found)
    }

    /// Reads one item by key with a strongly consistent GetItem: for the read of a
    /// read-modify-write, which must see the latest version.
    pub async fn get_item_consistent(&self, key: &str) -> Result<Option<Item>, StoreError> {
        self.begin_call()?;
        let output = self
            .client
            .get_item()
            .table_name(self.table.as_ref())
            .set_key(Some(key_map(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(error::classify)?;
        let item = output.item.map(item::item_from_sdk);
        self.record(CallRecord {
            operation: "GetItem",
            index: None,
            keys: Some(1),
            items: Some(usize::from(item.is_some())),
        });
        Ok(item)
    }

    /// Queries one relation slot's index. Follows DynamoDB's pages until `limit` items are read
    /// or the range ends; each page is one recorded Query call.
    pub async fn query_slot(&self, query: &SlotQuery<'_>) -> Result<Vec<Item>, StoreError> {
        if let (Some(after), Some(before)) = (query.after, query.before)
            && after >= before
        {
            return Ok(Vec::new());
        }
        let index = keys::gsi_name(query.slot);
        let pk = keys::slot_partition_attribute(query.slot);
        let sk = keys::slot_sort_attribute(query.slot);
        let mut condition = "#pk = :pk".to_owned();
        let mut values = HashMap::from([(
            ":pk".to_owned(),
            AttributeValue::S(query.partition.to_owned()),
        )]);
        // BETWEEN is inclusive, so both bounds are read and dropped below.
        let mut extra = 0;
        match (query.after, query.before) {
            (Some(after), Some(before)) => {
                condition.push_str(" AND #sk BETWEEN :after AND :before");
                values.insert(":after".into(), AttributeValue::S(after.to_owned()));
                values.insert(":before".into(), AttributeValue::S(before.to_owned()));
                extra = 2;
            }
            (Some(after), None) => {
                condition.push_str(" AND #sk > :after");
                values.insert(":after".into(), AttributeValue::S(after.to_owned()));
            }
            (None, Some(before)) => {
                condition.push_str(" AND #sk < :before");
                values.insert(":before".into(), AttributeValue::S(before.to_owned()));
            }
            (None, None) => {}
        }
        let mut names = HashMap::from([("#pk".to_owned(), pk)]);
        if query.after.is_some() || query.before.is_some() {
            names.insert("#sk".to_owned(), sk.clone());
        }
        let mut items = Vec::new();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            self.begin_call()?;
            let want = query.limit + extra - items.len();
            let output = self
                .client
                .query()
                .table_name(self.table.as_ref())
                .index_name(&index)
                .key_condition_expression(&condition)
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .scan_index_forward(query.forward)
                .limit(i32::try_from(want).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(error::classify)?;
            let page = output.items.unwrap_or_default();
            self.record(CallRecord {
                operation: "Query",
                index: Some(index.clone()),
                keys: None,
                items: Some(page.len()),
            });
            items.extend(page.into_iter().map(item::item_from_sdk));
            match output.last_evaluated_key {
                Some(key) if items.len() < query.limit + extra => start = Some(key),
                _ => break,
            }
        }
        if extra > 0 {
            items.retain(|item| {
                let key = item.get(&sk).and_then(AttrValue::as_str);
                key != query.after && key != query.before
            });
        }
        items.truncate(query.limit);
        Ok(items)
    }

    /// Writes all of `writes` or none, as one TransactWriteItems. Transaction conflicts are
    /// retried; a failed condition answers which write failed.
    pub async fn transact_write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        if writes.len() > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::Validation(format!(
                "{} writes exceed the transaction limit of {MAX_TRANSACTION_ITEMS}",
                writes.len()
            )));
        }
        let mut attempt = 0;
        loop {
            self.begin_call()?;
            // A new token per attempt: the attempt before was definitely cancelled.
            let token = crate::keys::new_id();
            let result = write::execute(&self.client, &self.table, &writes, &token).await;
            self.record(CallRecord {
                operation: "TransactWriteItems",
                index: None,
                keys: Some(writes.len()),
                items: None,
            });
            match result {
                Err(StoreError::TransactionConflict | StoreError::Throttled(_))
                    if attempt < RETRY_ATTEMPTS =>
                {
                    attempt += 1;
                    backoff(attempt).await;
                }
                other => return other,
            }
        }
    }
}

fn key_map(key: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("PK".to_owned(), AttributeValue::S(key.to_owned())),
        ("SK".to_owned(), AttributeValue::S(key.to_owned())),
    ])
}

fn keys_and_attributes(keys: &[String]) -> Result<KeysAndAttributes, StoreError> {
    let mut request = KeysAndAttributes::builder();
    for key in keys {
        request = request.keys(key_map(key));
    }
    request
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))
}

/// Full-jitter exponential backoff: a random pause up to `base * 2^attempt`, capped.
async fn backoff(attempt: u32) {
    let ceiling = RETRY_BASE
        .saturating_mul(1 << attempt.min(16))
        .min(RETRY_CAP);
    let pause = ceiling.mul_f64(fastrand::f64());
    tokio::time::sleep(pause).await;
}
