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
use super::item::{AttrValue, Item, StreamRecord};
use super::retry;

/// Records one GetRecords call returns at most (DynamoDB's own limit is 1000).
const RECORDS_PER_CALL: i32 = 1000;
/// An answer whose records come this near to GetRecords' 1 MB may have stopped at that limit,
/// records left behind.
const NEAR_A_CALLS_BYTES: i64 = 768 * 1024;
/// How often the stream's shards are looked up again to find shards opened since, besides
/// when a shard closes.
const REDESCRIBE_EVERY: Duration = Duration::from_secs(60);

/// Where a shard is read from.
#[derive(Debug, Clone)]
pub enum ShardStart {
    /// What is written from now on.
    Latest,
    /// The oldest record the stream still holds.
    Oldest,
    /// The records after the one with this sequence number.
    After(String),
}

/// One shard of the table's stream, read in order.
pub struct ShardReader {
    store: Store,
    /// `None` once the shard has closed and every record of it was read.
    iterator: Option<String>,
    /// The last call answered as many records, or nearly as many bytes, as a call may: more
    /// may be waiting.
    full: bool,
}

/// Follows the table's stream from where it was opened.
pub struct StreamTail {
    store: Store,
    arn: String,
    shards: Vec<ShardReader>,
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
        for shard in self.open_shards(arn).await? {
            // Shards open now start at their end; shards found later start at their beginning.
            let reader = self.read_shard(arn, &shard, ShardStart::Latest).await?;
            tail.known.insert(shard);
            tail.shards.push(reader);
        }
        Ok(tail)
    }

    /// Starts reading one shard of the stream `arn` at `start`.
    pub async fn read_shard(
        &self,
        arn: &str,
        shard: &str,
        start: ShardStart,
    ) -> Result<ShardReader, StoreError> {
        let (kind, after) = match start {
            ShardStart::Latest => (ShardIteratorType::Latest, None),
            ShardStart::Oldest => (ShardIteratorType::TrimHorizon, None),
            ShardStart::After(sequence) => (ShardIteratorType::AfterSequenceNumber, Some(sequence)),
        };
        let output = retry::call(|| {
            self.streams
                .get_shard_iterator()
                .stream_arn(arn)
                .shard_id(shard)
                .shard_iterator_type(kind.clone())
                .set_sequence_number(after.clone())
                .send()
                .map_err(classify)
        })
        .await?;
        Ok(ShardReader {
            store: self.clone(),
            iterator: output.shard_iterator,
            full: false,
        })
    }

    /// The ids of the stream's newest shards: those no other shard descends from. A shard that
    /// closed has children (DynamoDB rolls shards over, or splits them), so these are the ones
    /// written to; the stream's last shards once it was turned off are read to their end. (A
    /// shard's `EndingSequenceNumber` would tell too, but the embedded store sets it to the
    /// newest record of an open shard.)
    pub async fn open_shards(&self, arn: &str) -> Result<Vec<String>, StoreError> {
        let mut shards = Vec::new();
        let mut parents = HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let output = retry::call(|| {
                self.streams
                    .describe_stream()
                    .stream_arn(arn)
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
}

impl ShardReader {
    /// What the shard recorded since the last call, in order. An empty answer means nothing
    /// was written; the caller decides how long to wait before asking again.
    pub async fn next_records(&mut self) -> Result<Vec<StreamRecord>, StoreError> {
        let Some(iterator) = self.iterator.clone() else {
            return Ok(Vec::new());
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
        self.iterator = output.next_shard_iterator().map(str::to_owned);
        let bytes: i64 = (output.records().iter())
            .filter_map(|record| record.dynamodb.as_ref()?.size_bytes)
            .sum();
        self.full =
            output.records().len() >= RECORDS_PER_CALL as usize || bytes >= NEAR_A_CALLS_BYTES;
        Ok(output
            .records
            .unwrap_or_default()
            .into_iter()
            .filter_map(|record| {
                let change = record.dynamodb?;
                let removed = record.event_name == Some(OperationType::Remove);
                Some(StreamRecord {
                    sequence: change.sequence_number.unwrap_or_default(),
                    old: change.old_image.map(item_from_stream),
                    new: if removed {
                        None
                    } else {
                        change.new_image.map(item_from_stream)
                    },
                })
            })
            .collect())
    }

    /// Whether the shard has closed and every record of it was read.
    pub fn is_ended(&self) -> bool {
        self.iterator.is_none()
    }

    /// Whether the last read may have left records behind (it read as many records, or nearly
    /// as many bytes, as a call may): reading it did not catch up with the shard.
    pub fn is_behind(&self) -> bool {
        self.full
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
        for reader in &mut self.shards {
            records.extend(reader.next_records().await?);
            closed |= reader.is_ended();
        }
        if closed || self.described_at.elapsed() >= REDESCRIBE_EVERY {
            self.follow_new_shards().await?;
        }
        Ok(records)
    }

    /// Whether the last [`StreamTail::next_records`] may have left records behind in a shard.
    pub fn is_behind(&self) -> bool {
        self.shards.iter().any(ShardReader::is_behind)
    }

    /// Starts the shards opened since the stream was last looked up, at their beginning.
    async fn follow_new_shards(&mut self) -> Result<(), StoreError> {
        self.shards.retain(|reader| !reader.is_ended());
        for shard in self.store.open_shards(&self.arn).await? {
            if self.known.contains(&shard) {
                continue;
            }
            let reader = self
                .store
                .read_shard(&self.arn, &shard, ShardStart::Oldest)
                .await?;
            self.known.insert(shard);
            self.shards.push(reader);
        }
        self.described_at = Instant::now();
        Ok(())
    }
}

/// An item as the stream carries it (the streams SDK has its own `AttributeValue`).
fn item_from_stream(item: HashMap<String, AttributeValue>) -> Item {
    Item::from_distinct(
        item.into_iter()
            .map(|(name, value)| (name, value_from_stream(value)))
            .collect(),
    )
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
