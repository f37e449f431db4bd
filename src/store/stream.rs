//! The table's change stream: DynamoDB Streams with `NEW_AND_OLD_IMAGES`, read through the SDK's
//! streams client (the embedded store serves the same API on the same endpoint).
//!
//! A [`StreamTail`] follows every open shard from the moment it was opened: it keeps one shard
//! iterator per shard, asks each for what it has past its position, and when a shard closes
//! (DynamoDB rolls shards over every few hours, or splits them) it looks the stream up again
//! and starts the closed shard's children at their beginning, so nothing between is lost.
//!
//! Every call goes through the store's retry loop: throttling (Amazon DynamoDB serves about two
//! readers per shard at full speed) delays records, it does not lose them.
//!
//! Invariant: records come out in the order of their shard; a record is handed out once per
//! tail.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{StreamSpecification, StreamViewType};
use aws_sdk_dynamodbstreams::types::{AttributeValue, OperationType, ShardIteratorType};
use futures::TryFutureExt as _;

use super::client::Store;
use super::error::{StoreError, classify};
use super::item::{AttrValue, Item};
use super::retry;

/// Records one GetRecords call returns at most (DynamoDB's own limit is 1000).
const RECORDS_PER_CALL: i32 = 1000;
/// How often the stream's shards are looked up again to find shards opened since, besides
/// when a shard closes.
const REDESCRIBE_EVERY: Duration = Duration::from_secs(60);

/// One change the table's stream recorded: the item before and after the write.
#[derive(Debug, Clone)]
pub struct StreamRecord {
    pub old: Option<Item>,
    pub new: Option<Item>,
}

/// Where one shard is being read.
struct ShardPosition {
    /// `None` once the shard has closed and every record of it was read.
    iterator: Option<String>,
}

/// Follows the table's stream from where it was opened.
pub struct StreamTail {
    store: Store,
    arn: String,
    shards: Vec<ShardPosition>,
    /// Every shard ever followed, so a shard is never started twice.
    known: HashSet<String>,
    described_at: Instant,
}

impl Store {
    /// Turns the table's stream on with both images, as subscriptions need.
    pub async fn enable_stream(&self) -> Result<(), StoreError> {
        self.client
            .update_table()
            .table_name(self.table.as_ref())
            .stream_specification(stream_specification()?)
            .send()
            .await
            .map(drop)
            .map_err(classify)
    }

    /// Starts following the stream `arn` at its newest records: what is written from now on.
    pub async fn tail_stream(&self, arn: &str) -> Result<StreamTail, StoreError> {
        let mut tail = StreamTail {
            store: self.clone(),
            arn: arn.to_owned(),
            shards: Vec::new(),
            known: HashSet::new(),
            described_at: Instant::now(),
        };
        for shard in tail.open_shards().await? {
            // Shards open now start at their end; shards found later start at their beginning.
            let iterator = tail.iterator(&shard, ShardIteratorType::Latest).await?;
            tail.known.insert(shard);
            tail.shards.push(ShardPosition { iterator });
        }
        Ok(tail)
    }
}

pub(super) fn stream_specification() -> Result<StreamSpecification, StoreError> {
    StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))
}

impl StreamTail {
    /// What every shard recorded since the last call, shard by shard. An empty answer means
    /// nothing was written; the caller decides how long to wait before asking again.
    pub async fn next_records(&mut self) -> Result<Vec<StreamRecord>, StoreError> {
        let mut records = Vec::new();
        let mut closed = false;
        for position in &mut self.shards {
            let Some(iterator) = position.iterator.clone() else {
                continue;
            };
            let output = retry::call(|| {
                self.store
                    .streams
                    .get_records()
                    .shard_iterator(iterator.clone())
                    .limit(RECORDS_PER_CALL)
                    .send()
                    .map_err(classify)
            })
            .await?;
            position.iterator = output.next_shard_iterator().map(str::to_owned);
            closed |= position.iterator.is_none();
            records.extend(
                output
                    .records
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|record| {
                        let change = record.dynamodb?;
                        let removed = record.event_name == Some(OperationType::Remove);
                        Some(StreamRecord {
                            old: change.old_image.map(item_from_stream),
                            new: if removed {
                                None
                            } else {
                                change.new_image.map(item_from_stream)
                            },
                        })
                    }),
            );
        }
        if closed || self.described_at.elapsed() >= REDESCRIBE_EVERY {
            self.follow_new_shards().await?;
        }
        Ok(records)
    }

    /// Starts the shards opened since the stream was last looked up, at their beginning.
    async fn follow_new_shards(&mut self) -> Result<(), StoreError> {
        self.shards.retain(|position| position.iterator.is_some());
        for shard in self.open_shards().await? {
            if self.known.contains(&shard) {
                continue;
            }
            let iterator = self
                .iterator(&shard, ShardIteratorType::TrimHorizon)
                .await?;
            self.known.insert(shard);
            self.shards.push(ShardPosition { iterator });
        }
        self.described_at = Instant::now();
        Ok(())
    }

    /// The ids of the stream's newest shards: those no other shard descends from. A shard that
    /// closed has children (DynamoDB rolls shards over, or splits them), so these are the ones
    /// written to; the stream's last shards once it was turned off are read to their end. (A
    /// shard's `EndingSequenceNumber` would tell too, but the embedded store sets it to the
    /// newest record of an open shard.)
    async fn open_shards(&self) -> Result<Vec<String>, StoreError> {
        let mut shards = Vec::new();
        let mut parents = HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let output = retry::call(|| {
                self.store
                    .streams
                    .describe_stream()
                    .stream_arn(&self.arn)
                    .set_exclusive_start_shard_id(after.clone())
                    .send()
                    .map_err(classify)
            })
            .await?;
            let Some(description) = output.stream_description else {
                break;
            };
            for shard in description.shards.unwrap_or_default() {
                if let Some(parent) = shard.parent_shard_id {
                    parents.insert(parent);
                }
                if let Some(id) = shard.shard_id {
                    shards.push(id);
                }
            }
            match description.last_evaluated_shard_id {
                Some(last) => after = Some(last),
                None => break,
            }
        }
        shards.retain(|shard| !parents.contains(shard));
        Ok(shards)
    }

    async fn iterator(
        &self,
        shard: &str,
        kind: ShardIteratorType,
    ) -> Result<Option<String>, StoreError> {
        let output = retry::call(|| {
            self.store
                .streams
                .get_shard_iterator()
                .stream_arn(&self.arn)
                .shard_id(shard)
                .shard_iterator_type(kind.clone())
                .send()
                .map_err(classify)
        })
        .await?;
        Ok(output.shard_iterator)
    }
}

/// An item as the stream carries it (the streams SDK has its own `AttributeValue`).
fn item_from_stream(item: HashMap<String, AttributeValue>) -> Item {
    item.into_iter()
        .map(|(name, value)| (name, value_from_stream(value)))
        .collect()
}

fn value_from_stream(value: AttributeValue) -> AttrValue {
    match value {
        AttributeValue::S(s) => AttrValue::S(s),
        AttributeValue::N(n) => AttrValue::N(n),
        AttributeValue::Bool(b) => AttrValue::Bool(b),
        AttributeValue::Ss(set) => AttrValue::Ss(set.into_iter().collect()),
        AttributeValue::L(list) => AttrValue::L(list.into_iter().map(value_from_stream).collect()),
        AttributeValue::M(map) => AttrValue::M(item_from_stream(map)),
        _ => AttrValue::Null,
    }
}
