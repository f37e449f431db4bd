//! Many replicas on one change stream, with nothing beside DynamoDB: one replica reads each
//! shard, and hands what it read to the others through the table.
//!
//! Amazon DynamoDB serves about two readers per shard at full speed; more are throttled. So
//! each shard has a **lease** (`STREAM#<shard>`, `LEASE`): the replica that holds it reads the
//! shard, and writes the changes it read to the shard's **relay** (`STREAM#<shard>`,
//! `RELAY#<first sequence number>`), in the same transaction that moves the lease's checkpoint
//! (the last record read) and its chain (the last relay item). Every other replica Queries the
//! relay partition past the last item it saw. Whatever the number of replicas, one reads each
//! shard, and each of the others makes one consistent Query per shard per poll.
//!
//! - **Exactly once.** The holder publishes a batch to its own subscribers only once the
//!   transaction that relays it has committed; a follower publishes relay items in key order,
//!   each once. A relay item names the one before it (`previous`); a follower that finds the
//!   chain broken (it fell behind the relay's retention) tells its subscribers they missed
//!   events rather than going on as if nothing happened.
//! - **Fenced.** The relay write is conditional on the lease still being the writer's, with the
//!   chain where it left it. A holder that lost its lease (it paused past the lease's expiry and
//!   another replica took over) fails that condition, publishes nothing, and becomes a follower
//!   from its last relay item; its records are relayed by the new holder.
//! - **Taking over.** A lease renewed every third of its duration is alive; each renewal also
//!   moves its checkpoint past the records read that were no changes. A replica that finds
//!   one expired (read consistently) takes it with a write conditional on the owner and expiry it
//!   read, so only one replica wins. The new holder first follows the relay to the lease's chain
//!   end, then reads the shard after the lease's checkpoint: nothing is lost between holders
//!   and nothing is relayed twice. A lease that expired more than [`REPLAY_AT_MOST`] ago (every
//!   replica was down) restarts at the shard's newest record, as a first start does.
//! - **Bounded.** The holder deletes relay items older than [`RELAY_KEEP`]; an item carries the
//!   changes of one read, up to `RELAY_ITEM_BYTES` (`relay_items.rs`). A changed item too large to ride in a relay
//!   item (near DynamoDB's 400 KB) is relayed by its key, and followers read it by that key.
//! - **Shards that close** (DynamoDB rolls them over every few hours) are read to their end; the
//!   holder then writes a last relay item that tells followers to stop following the shard. New
//!   shards are found by describing the stream every third of a lease's duration.
//!
//! Records of these items are in the stream too; they are not changes (`change_of`), so they are
//! never relayed, and a read that found only them writes nothing.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::change::{Change, change_of};
use super::relay_items::{
    Batch, Relayed, batches, change_from_entry, now_ms, number, relay_item, text,
};
use crate::keys;
use crate::store::{
    AttrValue, Bound, Clause, Item, Key, RangeQuery, ShardReader, ShardStart, Store, StoreError,
    Touched, Write,
};

/// How long a lease lasts unless renewed, by default.
pub const LEASE_DURATION: Duration = Duration::from_secs(10);
/// A lease that expired longer ago than this is not resumed where it stopped: every replica
/// was down, and the records since are no one's news.
pub const REPLAY_AT_MOST: Duration = Duration::from_secs(5 * 60);
/// How long relay items are kept.
pub const RELAY_KEEP: Duration = Duration::from_secs(5 * 60);
/// The shortest time between two of a holder's words on how far it read (`Relay::heartbeat`).
const HEARTBEAT_EVERY_AT_LEAST: Duration = Duration::from_millis(100);
/// How far behind a replica without a read cache may learn it is: a subscriber joins once the
/// replica's position passes the moment it asked, so this bounds how long joining takes.
const HEARTBEAT_LAG: Duration = Duration::from_secs(1);
/// Relay items one follower Query reads at most.
const RELAY_PAGE: usize = 100;
/// Old relay items deleted per clean-up at most.
const CLEAN_PAGE: usize = 25;

/// What one round of reading found.
#[derive(Default)]
pub(super) struct Round {
    /// The changes, in the order of their shard.
    pub changes: Vec<Change>,
    /// Whether a follower found relay items missing: its subscribers missed events.
    pub gap: bool,
    /// Whether nothing at all was read (the caller waits before the next round).
    pub idle: bool,
    /// The stream records read (by this replica, from the shards it holds).
    pub records: usize,
    /// What every record read changed, for the read cache: the holder's own records, with
    /// their images, and what the relay items followed say (`touched`).
    pub touched: Vec<Touched>,
    /// From when on every committed write has been read or relayed, for every shard; `None`
    /// while a shard's is not known.
    pub position: Option<Instant>,
}

/// The lease of one shard, as stored.
#[derive(Debug, Clone, PartialEq)]
struct Lease {
    owner: String,
    /// Milliseconds since the epoch.
    expires: i64,
    /// The sequence number of the last record relayed ("" before the first).
    checkpoint: String,
    /// The key of the last relay item ("" before the first).
    relay: String,
    /// Milliseconds since the epoch when the holder's last read of the shard that caught up
    /// with it began: every record committed before is relayed (0: not known).
    read_at: i64,
}

enum Role {
    Following,
    Holding {
        reader: Box<ShardReader>,
        checkpoint: String,
        lease: Lease,
    },
}

struct Shard {
    id: String,
    partition: String,
    role: Role,
    /// The last relay item published here (read as a follower, or written as the holder).
    cursor: String,
    /// Where the shard is read from when no lease says where: its newest record for shards
    /// open when this replica started, its oldest for shards found since.
    fresh_start: ShardStart,
    /// The shard was read to its end and its last relay item published.
    done: bool,
    /// Every record committed before this (milliseconds since the epoch) was read here: as
    /// the holder, by its own reads; as a follower, by the lease's `read_at`.
    read_at: i64,
}

/// This replica's part in reading the stream `arn` with the other replicas.
pub(super) struct Relay {
    store: Store,
    arn: String,
    /// This replica, in leases.
    me: String,
    duration: Duration,
    shards: Vec<Shard>,
    known: HashSet<String>,
    looked: Instant,
    cleaned: Instant,
    /// How often held leases say how far their shard was read, so that the followers know how
    /// far behind they are (`Round::position`): their read caches, and the subscribers that
    /// join once the position passes the moment they asked (`events`).
    heartbeat: Duration,
    beat: Instant,
}

impl Relay {
    /// Joins the replicas reading `arn`: finds the stream's shards, takes the leases no one
    /// holds, and follows the relay of the others from their newest item.
    /// `me` names this replica in leases: a replica that starts again under the same name takes
    /// its own leases back at once.
    pub async fn start(
        store: Store,
        arn: String,
        me: String,
        duration: Duration,
    ) -> Result<Relay, StoreError> {
        let mut relay = Relay {
            store,
            arn,
            me,
            duration,
            shards: Vec::new(),
            known: HashSet::new(),
            looked: Instant::now(),
            cleaned: Instant::now(),
            heartbeat: HEARTBEAT_EVERY_AT_LEAST,
            beat: Instant::now(),
        };
        // Every quarter of the lag a cache allows (or of a second without one), and at least as
        // often as leases are renewed.
        let lag = relay
            .store
            .cache()
            .map_or(HEARTBEAT_LAG, |cache| cache.max_lag());
        relay.heartbeat = (lag / 4).min(duration / 3).max(HEARTBEAT_EVERY_AT_LEAST);
        for shard in relay.store.open_shards(&relay.arn).await? {
            relay.add(shard, ShardStart::Latest).await?;
        }
        // Nothing is published before the first round: the cursors start at each chain's end.
        relay.take_free_leases(&mut Round::default()).await?;
        Ok(relay)
    }

    /// How many shards this replica reads (holds the lease of).
    pub fn holding(&self) -> usize {
        self.shards
            .iter()
            .filter(|shard| matches!(shard.role, Role::Holding { .. }))
            .count()
    }

    async fn add(&mut self, id: String, fresh_start: ShardStart) -> Result<(), StoreError> {
        let partition = keys::stream_partition(&id);
        let cursor = read_lease(&self.store, &partition)
            .await?
            .map(|lease| lease.relay)
            .unwrap_or_default();
        self.known.insert(id.clone());
        self.shards.push(Shard {
            id,
            partition,
            role: Role::Following,
            cursor,
            fresh_start,
            done: false,
            read_at: 0,
        });
        Ok(())
    }

    /// One round: each shard read once, as its holder or from its relay. Every third of a lease's
    /// duration, leases are renewed, free ones taken and new shards looked for.
    pub async fn round(&mut self) -> Result<Round, StoreError> {
        let mut round = Round {
            idle: true,
            ..Round::default()
        };
        for index in 0..self.shards.len() {
            self.read(index, &mut round).await?;
        }
        // A shard read to its end has children: looked for now, and read before the position
        // says anything again.
        let ended = self.shards.iter().any(|shard| shard.done);
        self.shards.retain(|shard| !shard.done);
        let oldest = self.shards.iter().map(|shard| shard.read_at).min();
        round.position = match oldest {
            _ if ended => None,
            Some(0) => None,
            Some(at) => {
                // A millisecond more: the two clocks' readings are rounded down.
                let ago = u64::try_from(now_ms() - at + 1).unwrap_or(0);
                Instant::now().checked_sub(Duration::from_millis(ago))
            }
            None => Some(Instant::now()),
        };
        if self.beat.elapsed() >= self.heartbeat {
            self.beat = Instant::now();
            self.renew().await?;
        }
        if ended || self.looked.elapsed() >= self.duration / 3 {
            self.looked = Instant::now();
            self.renew().await?;
            for shard in self.store.open_shards(&self.arn).await? {
                if !self.known.contains(&shard) {
                    self.add(shard, ShardStart::Oldest).await?;
                }
            }
            self.take_free_leases(&mut round).await?;
        }
        if self.cleaned.elapsed() >= RELAY_KEEP / 10 {
            self.cleaned = Instant::now();
            self.clean().await?;
        }
        Ok(round)
    }

    async fn read(&mut self, index: usize, round: &mut Round) -> Result<(), StoreError> {
        let shard = &mut self.shards[index];
        let Role::Holding {
            reader,
            checkpoint,
            lease,
        } = &mut shard.role
        else {
            return follow(&self.store, shard, true, round).await;
        };
        let began = now_ms();
        let records = reader.next_records().await?;
        let ended = reader.is_ended();
        let caught_up = !reader.is_behind();
        round.idle &= records.is_empty() && !ended;
        round.records += records.len();
        let last_read = records.last().map(|record| record.sequence.clone());
        let changes: Vec<Relayed> = records
            .into_iter()
            .filter_map(|record| {
                let sequence = record.sequence.clone();
                let touched = Touched::of(&record);
                let texts = touched
                    .as_ref()
                    .map(Touched::to_strings)
                    .unwrap_or_default();
                round.touched.extend(touched);
                let change = change_of(record);
                (change.is_some() || !texts.is_empty()).then_some((sequence, change, texts))
            })
            .collect();
        let read_at = if caught_up { began } else { lease.read_at };
        let mut batches = batches(&changes);
        match (&last_read, batches.last_mut()) {
            // The last batch covers the records read after its last change too.
            (Some(last), Some(batch)) => batch.checkpoint = last.clone(),
            // Records that are no changes (leases, relay items) need no relay item; the next
            // renewal moves the lease's checkpoint past them, so that a replica taking over
            // does not start from an old place, or from the shard's newest record.
            (Some(last), None) => *checkpoint = last.clone(),
            (None, _) => {}
        }
        if ended {
            // Tell the followers to stop following the shard, under the lease as ever.
            let at = batches
                .last()
                .map_or(checkpoint.clone(), |b| b.checkpoint.clone());
            batches.push(Batch {
                key: format!("{}#END", keys::relay_key(&at)),
                checkpoint: at,
                entries: Vec::new(),
                changes: Vec::new(),
                touched: Vec::new(),
                last: true,
            });
        }
        let count = batches.len();
        for (at, batch) in batches.into_iter().enumerate() {
            // Only the last item's lease says the read is relayed: a follower that finds an
            // earlier one has not seen the rest yet.
            let read_at = if at + 1 == count {
                read_at
            } else {
                lease.read_at
            };
            let item = relay_item(
                &shard.partition,
                &batch.key,
                &lease.relay,
                batch.entries,
                batch.touched,
                batch.last,
            );
            let next = Lease {
                expires: expiry(self.duration),
                checkpoint: batch.checkpoint.clone(),
                relay: batch.key.clone(),
                read_at,
                ..lease.clone()
            };
            if !commit(&self.store, &shard.partition, item, lease, &next).await? {
                lost(shard);
                return Ok(());
            }
            *lease = next;
            *checkpoint = batch.checkpoint;
            shard.cursor = batch.key;
            shard.done |= batch.last;
            round.changes.extend(batch.changes);
        }
        shard.read_at = read_at;
        Ok(())
    }

    /// Renews the leases this replica holds, with the checkpoint moved to the last record read.
    async fn renew(&mut self) -> Result<(), StoreError> {
        for shard in &mut self.shards {
            let Role::Holding {
                lease, checkpoint, ..
            } = &mut shard.role
            else {
                continue;
            };
            let next = Lease {
                expires: expiry(self.duration),
                checkpoint: checkpoint.clone(),
                read_at: shard.read_at,
                ..lease.clone()
            };
            let write = Write::Put {
                item: lease_item(&shard.partition, &next),
                condition: held(lease),
            };
            match self.store.transact_write(vec![write]).await {
                Ok(()) => *lease = next,
                Err(StoreError::ConditionFailed { .. }) => lost(shard),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Takes the leases that no replica holds (none yet, or expired), one conditional write
    /// each; a replica that loses the race goes on following.
    async fn take_free_leases(&mut self, round: &mut Round) -> Result<(), StoreError> {
        for index in 0..self.shards.len() {
            if matches!(self.shards[index].role, Role::Holding { .. }) {
                continue;
            }
            let partition = self.shards[index].partition.clone();
            let found = read_lease(&self.store, &partition).await?;
            let now = now_ms();
            let (condition, previous) = match &found {
                None => (vec![Clause::NotExists], None),
                Some(lease) if lease.expires < now || lease.owner == self.me => (
                    vec![
                        Clause::Equals("owner".into(), AttrValue::S(lease.owner.clone())),
                        Clause::Equals("expiresAt".into(), AttrValue::N(lease.expires.to_string())),
                    ],
                    Some(lease),
                ),
                Some(_) => continue,
            };
            let lease = Lease {
                owner: self.me.clone(),
                expires: expiry(self.duration),
                checkpoint: previous.map(|l| l.checkpoint.clone()).unwrap_or_default(),
                relay: previous.map(|l| l.relay.clone()).unwrap_or_default(),
                read_at: previous.map_or(0, |l| l.read_at),
            };
            let write = Write::Put {
                item: lease_item(&partition, &lease),
                condition,
            };
            match self.store.transact_write(vec![write]).await {
                Ok(()) => {}
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(error) => return Err(error),
            }
            // Ours. First what the last holder relayed, then the shard after it.
            let shard = &mut self.shards[index];
            while shard.cursor < lease.relay {
                let before = shard.cursor.clone();
                follow(&self.store, shard, false, round).await?;
                if shard.cursor == before {
                    break;
                }
            }
            let resumable = previous.is_some_and(|l| {
                !l.checkpoint.is_empty() && now - l.expires < REPLAY_AT_MOST.as_millis() as i64
            });
            let start = if resumable {
                ShardStart::After(lease.checkpoint.clone())
            } else if found.is_some() {
                // What was written since the last holder stopped is not read: whoever kept
                // anything of it (a read cache) hears of a gap.
                round.gap = true;
                ShardStart::Latest
            } else {
                shard.fresh_start.clone()
            };
            let reader = self.store.read_shard(&self.arn, &shard.id, start).await?;
            shard.cursor = lease.relay.clone();
            shard.role = Role::Holding {
                reader: Box::new(reader),
                checkpoint: lease.checkpoint.clone(),
                lease,
            };
            tracing::info!(shard = %shard.id, "reading a shard of the change stream for the replicas");
        }
        Ok(())
    }

    /// Deletes the relay items past [`RELAY_KEEP`] of the shards this replica holds, oldest
    /// first (key order is time order), until the first one still kept.
    async fn clean(&mut self) -> Result<(), StoreError> {
        let cutoff = now_ms() - RELAY_KEEP.as_millis() as i64;
        for shard in &self.shards {
            if !matches!(shard.role, Role::Holding { .. }) {
                continue;
            }
            loop {
                let items = self
                    .store
                    .query_range(&relay_range(&shard.partition, "", CLEAN_PAGE))
                    .await?;
                let old: Vec<Write> = items
                    .iter()
                    .take_while(|item| number(item, "writtenAt") < cutoff)
                    .map(|item| Write::Delete {
                        key: Key {
                            pk: shard.partition.clone(),
                            sk: text(item, keys::SK),
                        },
                        condition: Vec::new(),
                    })
                    .collect();
                let more = old.len() == items.len() && !old.is_empty();
                if !old.is_empty() {
                    self.store.transact_write(old).await?;
                }
                if !more {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Publishes the relay items of `shard` past its cursor, in order. `heartbeat`: the lease is
/// read first, so that what it says was read before its `read_at` is then in the relay.
async fn follow(
    store: &Store,
    shard: &mut Shard,
    heartbeat: bool,
    round: &mut Round,
) -> Result<(), StoreError> {
    let read_at = match heartbeat {
        true => read_lease(store, &shard.partition)
            .await?
            .map(|l| l.read_at),
        false => None,
    };
    let items = store
        .query_range(&relay_range(&shard.partition, &shard.cursor, RELAY_PAGE))
        .await?;
    round.idle &= items.is_empty();
    let items_read = items.len();
    for item in items {
        if text(&item, "previous") != shard.cursor {
            round.gap = true;
        }
        if let Some(AttrValue::L(entries)) = item.get("changes") {
            for entry in entries {
                if let Some(change) = change_from_entry(store, entry).await? {
                    round.changes.push(change);
                }
            }
        }
        if let Some(AttrValue::Ss(touched)) = item.get("touched") {
            round
                .touched
                .extend(Touched::from_strings(touched.iter().map(String::as_str)));
        }
        shard.cursor = text(&item, keys::SK);
        if item.get("last") == Some(&AttrValue::Bool(true)) {
            shard.done = true;
            break;
        }
    }
    // A page short of the limit is the relay's end: the shard is read up to the lease's word.
    if let Some(read_at) = read_at
        && items_read < RELAY_PAGE
    {
        shard.read_at = read_at;
    }
    Ok(())
}

/// The holder lost its lease: it goes on as a follower, from the last item it relayed.
fn lost(shard: &mut Shard) {
    tracing::info!(shard = %shard.id, "another replica reads this shard of the change stream now");
    shard.role = Role::Following;
}

/// Writes `relay` and moves the lease from `lease` to `next`, if the lease is still as this
/// replica left it. Answers whether it was.
async fn commit(
    store: &Store,
    partition: &str,
    relay: Item,
    lease: &Lease,
    next: &Lease,
) -> Result<bool, StoreError> {
    let writes = vec![
        Write::Put {
            item: relay,
            condition: vec![Clause::NotExists],
        },
        Write::Put {
            item: lease_item(partition, next),
            condition: held(lease),
        },
    ];
    match store.transact_write(writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed { .. }) => Ok(false),
        Err(error) => Err(error),
    }
}

/// The condition that the lease is still `lease`'s holder's, with its chain where it was.
fn held(lease: &Lease) -> Vec<Clause> {
    vec![
        Clause::Equals("owner".into(), AttrValue::S(lease.owner.clone())),
        Clause::Equals("relay".into(), AttrValue::S(lease.relay.clone())),
    ]
}

fn lease_item(partition: &str, lease: &Lease) -> Item {
    Item::from_iter([
        (keys::PK.to_owned(), AttrValue::S(partition.to_owned())),
        (
            keys::SK.to_owned(),
            AttrValue::S(keys::STREAM_LEASE.to_owned()),
        ),
        ("owner".to_owned(), AttrValue::S(lease.owner.clone())),
        (
            "expiresAt".to_owned(),
            AttrValue::N(lease.expires.to_string()),
        ),
        (
            "checkpoint".to_owned(),
            AttrValue::S(lease.checkpoint.clone()),
        ),
        ("relay".to_owned(), AttrValue::S(lease.relay.clone())),
        ("readAt".to_owned(), AttrValue::N(lease.read_at.to_string())),
    ])
}

async fn read_lease(store: &Store, partition: &str) -> Result<Option<Lease>, StoreError> {
    let key = Key {
        pk: partition.to_owned(),
        sk: keys::STREAM_LEASE.to_owned(),
    };
    Ok(store.get_item_consistent(&key).await?.map(|item| Lease {
        owner: text(&item, "owner"),
        expires: number(&item, "expiresAt"),
        checkpoint: text(&item, "checkpoint"),
        relay: text(&item, "relay"),
        read_at: number(&item, "readAt"),
    }))
}

/// The relay items of `partition` after `after`, oldest first, read consistently.
fn relay_range<'a>(partition: &'a str, after: &str, limit: usize) -> RangeQuery<'a> {
    let (first, end) = keys::RELAY_KEYS;
    RangeQuery {
        index: None,
        partition,
        lower: Some(Bound::exclusive(if after.is_empty() {
            first
        } else {
            after
        })),
        upper: Some(Bound::exclusive(end)),
        filter: None,
        forward: true,
        limit,
        consistent: true,
    }
}

fn expiry(duration: Duration) -> i64 {
    now_ms() + duration.as_millis() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::change::ChangeKind;
    use crate::changes::relay_items::entry_of;
    use crate::changes::relay_items::tests::farm;
    use crate::store::MAX_ITEM_BYTES;

    async fn store() -> Store {
        crate::store::loopback_store("relay").await
    }

    async fn put(store: &Store, item: Item) {
        let write = Write::Put {
            item,
            condition: Vec::new(),
        };
        store.transact_write(vec![write]).await.expect("a write");
    }

    fn following(cursor: &str) -> Shard {
        Shard {
            id: "s".into(),
            partition: keys::stream_partition("s"),
            role: Role::Following,
            cursor: cursor.into(),
            fresh_start: ShardStart::Latest,
            done: false,
            read_at: 0,
        }
    }

    fn names(round: &Round) -> Vec<String> {
        round
            .changes
            .iter()
            .map(|change| change.id.clone())
            .collect()
    }

    #[tokio::test]
    async fn a_follower_publishes_the_relay_in_order_and_tells_a_broken_chain() {
        let store = store().await;
        let partition = keys::stream_partition("s");
        let (k1, k2, k3) = (
            keys::relay_key("1"),
            keys::relay_key("2"),
            keys::relay_key("3"),
        );
        let entries = |ids: &[&str]| ids.iter().map(|id| entry_of(&farm(id, 10))).collect();
        put(
            &store,
            relay_item(
                &partition,
                &k1,
                "",
                entries(&["f1", "f2"]),
                Vec::new(),
                false,
            ),
        )
        .await;
        put(
            &store,
            relay_item(&partition, &k2, &k1, entries(&["f3"]), Vec::new(), false),
        )
        .await;

        let mut shard = following("");
        let mut round = Round::default();
        follow(&store, &mut shard, false, &mut round)
            .await
            .expect("the relay reads");
        assert_eq!(names(&round), ["f1", "f2", "f3"]);
        assert!(!round.gap);
        assert_eq!(shard.cursor, k2);

        // An item whose predecessor is gone (k3 names k2, but the follower saw only k1).
        put(
            &store,
            relay_item(&partition, &k3, &k2, entries(&["f4"]), Vec::new(), true),
        )
        .await;
        let mut behind = following(&k1);
        let mut round = Round::default();
        store
            .transact_write(vec![Write::Delete {
                key: Key {
                    pk: partition.clone(),
                    sk: k2.clone(),
                },
                condition: Vec::new(),
            }])
            .await
            .expect("a delete");
        follow(&store, &mut behind, false, &mut round)
            .await
            .expect("the relay reads");
        assert_eq!(names(&round), ["f4"]);
        assert!(round.gap, "the follower missed f3 and says so");
        assert!(behind.done, "the last item of a shard ends following it");
    }

    #[tokio::test]
    async fn an_entry_that_carries_only_a_key_is_read_by_it() {
        let store = store().await;
        let big = farm("f1", MAX_ITEM_BYTES - 100);
        let stored = big.new.as_ref().expect("a created farm").as_ref().clone();
        // What the table holds by then: the farm, under its key.
        let mut now = stored.clone();
        now.insert("notes".into(), AttrValue::S("shorter".into()));
        put(&store, now).await;
        let partition = keys::stream_partition("s");
        let key = keys::relay_key("1");
        put(
            &store,
            relay_item(
                &partition,
                &key,
                "",
                vec![entry_of(&big)],
                Vec::new(),
                false,
            ),
        )
        .await;

        let mut shard = following("");
        let mut round = Round::default();
        follow(&store, &mut shard, false, &mut round)
            .await
            .expect("the relay reads");
        let change = &round.changes[0];
        assert_eq!(change.kind(), ChangeKind::Created);
        let item = change.new.as_ref().expect("the item");
        assert_eq!(item.get("notes"), Some(&AttrValue::S("shorter".into())));
    }

    #[tokio::test]
    async fn a_holder_whose_lease_was_taken_relays_nothing() {
        let store = store().await;
        let partition = keys::stream_partition("s");
        let mine = Lease {
            owner: "me".into(),
            expires: now_ms() - 1,
            checkpoint: "5".into(),
            relay: keys::relay_key("4"),
            read_at: 0,
        };
        // Another replica found the lease expired and took it, with the chain where it was.
        let theirs = Lease {
            owner: "them".into(),
            expires: expiry(LEASE_DURATION),
            ..mine.clone()
        };
        put(&store, lease_item(&partition, &theirs)).await;

        let key = keys::relay_key("6");
        let item = relay_item(
            &partition,
            &key,
            &mine.relay,
            vec![entry_of(&farm("f6", 10))],
            Vec::new(),
            false,
        );
        let next = Lease {
            checkpoint: "6".into(),
            relay: key.clone(),
            ..mine.clone()
        };
        let committed = commit(&store, &partition, item, &mine, &next)
            .await
            .expect("the store answers");
        assert!(!committed, "the write is fenced off");
        let relayed = store
            .query_range(&relay_range(&partition, "", 10))
            .await
            .expect("the relay reads");
        assert!(relayed.is_empty(), "no relay item was written");
        let lease = read_lease(&store, &partition)
            .await
            .expect("the lease reads")
            .expect("a lease");
        assert_eq!(lease, theirs, "the new holder's lease is untouched");
    }
}
