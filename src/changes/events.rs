//! Change events from the table's change stream, for subscriptions: every write is seen,
//! whoever made it (this replica, another one, an import, a migration, another program).
//!
//! One reader per process follows the stream ([`crate::store::StreamTail`]) and publishes each
//! record of a node or an edge as a [`Change`] on a broadcast channel (`tokio::sync::broadcast`);
//! each subscription holds a receiver. Records of unique-value and migration items are not
//! events, nor are updates that change no field a client reads (the counts, the edge set, the
//! relation slots).
//!
//! **A subscriber joins between two rounds of reading.** It notes when it asked, and the reader
//! hands it its receiver after the first round that has read every write committed before that
//! (the round's `position`: on the embedded store, a round that caught up with the stream; with
//! other replicas, the oldest of the shards' positions that their holders report). So a
//! subscriber receives every write committed once it is in place, and none committed before it
//! asked, even when the reader was behind, or another subscriber kept it reading: a receiver
//! taken from the channel at once would be handed the records the reader had not yet read
//! (three writes made just before a subscription arrived within 20 ms of it). Joining costs a
//! subscription one round of the reader, which a joiner starts at once.
//!
//! The embedded store's reader rests while nobody subscribes: it asks the stream nothing (an
//! idle poll cost the store about 0.8 ms of CPU every 20 ms). When a subscriber arrives it
//! starts again at the stream's newest records; after a failure of the stream it opens the
//! stream again, and joiners wait for its next round either way. A reader that also reads for
//! other replicas never rests, nor does one that feeds the process's read cache
//! (`store::cache`): with nobody subscribing, it asks at most every quarter of the cache's
//! allowed lag (and every 250 ms at most), woken when a subscriber arrives.
//!
//! Each round also hands the read cache what every record read touched (whether or not it is
//! an event) and from when on every committed write has been read; a failure of the stream or a
//! gap in the relay empties the cache.
//!
//! Nothing is dropped silently: a subscriber that falls more events behind than the hub keeps
//! ([`EVENT_BUFFER`] unless told otherwise), or that was in place when the reader lost its
//! place in the stream, receives an [`Event::Missed`] and its subscription ends with an error
//! saying so.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram};
use tokio::sync::{Notify, broadcast, oneshot, watch};

use super::change::{Change, ChangeKind, change_of};
use super::relay::{Relay, Round};
use crate::store::Filter;
use crate::store::{Item, ReadCache, Store, StoreError, StreamTail, Touched};
use crate::telemetry::Metrics;

/// Events a subscriber may fall behind by before it is told it missed some, by default.
pub const EVENT_BUFFER: usize = 4096;
/// How long the reader waits before asking Amazon DynamoDB's stream again after an empty
/// answer: it allows five GetRecords calls per second per shard, shared by every reader.
pub const DYNAMODB_POLL: Duration = Duration::from_millis(250);
/// The same for the embedded store, which has no such limit: an idle poll costs it one local
/// call, and events arrive within this.
pub const EMBEDDED_POLL: Duration = Duration::from_millis(20);
/// How long a reader of the embedded store's stream kept for the read cache alone waits after
/// an empty answer at most (a quarter of `--cache-max-lag` when that is less).
const UNWATCHED_POLL: Duration = Duration::from_millis(250);
/// How long the reader waits after the stream failed before it starts again.
const AFTER_FAILURE: Duration = Duration::from_secs(1);

/// What a subscriber receives.
#[derive(Debug, Clone)]
pub enum Event {
    Changed(Arc<Change>),
    /// Events were lost between the stream and this subscriber (it was too slow, or the
    /// reader had to start again); what it has seen is no longer the whole story.
    Missed,
}

/// The events of this process: a reader of the table's stream feeds it, subscriptions read it.
#[derive(Clone)]
pub struct EventHub {
    /// Subscribers the hub holds at most.
    most: usize,
    sender: broadcast::Sender<Event>,
    /// Whether a reader feeds the hub (the table's stream is on).
    following: Arc<AtomicBool>,
    /// Places taken by subscribers, in place or waiting for the reader: the limit counts
    /// them, and the reader rests while there are none.
    subscribers: Arc<watch::Sender<usize>>,
    /// Subscribers in place, for whoever must know a subscription is in place before it
    /// writes.
    in_place: Arc<watch::Sender<usize>>,
    /// Whether the reader reads the stream: `false` while it rests, nobody subscribing (and
    /// for a moment before it looks whether anybody does), and while it opens the stream
    /// again after a failure.
    reading: Arc<watch::Sender<bool>>,
    /// Subscribers waiting for the reader to hand them their receivers.
    joiners: Arc<Joiners>,
    metrics: Arc<HubMetrics>,
}

/// The subscribers waiting to join, and how they wake the reader.
#[derive(Default)]
struct Joiners {
    waiting: Mutex<Vec<Joiner>>,
    /// Told when one arrives: an idle reader reads again at once.
    arrived: Notify,
}

/// A subscriber waiting to join: when it asked, and where its receiver goes.
struct Joiner {
    since: Instant,
    admit: oneshot::Sender<broadcast::Receiver<Event>>,
}

impl Joiners {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Joiner>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands a receiver to each joiner that asked at or before `position`, the instant from
    /// which on every committed write has been read and sent: it receives what is sent from
    /// now on. Called by the reader between rounds, after a round's sends.
    fn admit(&self, position: Instant, sender: &broadcast::Sender<Event>) {
        let mut waiting = self.lock();
        for joiner in waiting.extract_if(.., |joiner| joiner.since <= position) {
            // A joiner that gave up (its subscription dropped) is forgotten.
            let _ = joiner.admit.send(sender.subscribe());
        }
    }
}

/// One subscriber's place in the events.
pub struct EventReceiver {
    receiver: broadcast::Receiver<Event>,
    _place: Place,
    in_place: Arc<watch::Sender<usize>>,
    metrics: Arc<HubMetrics>,
}

/// A place taken among the hub's subscribers; given back when dropped.
struct Place(Arc<watch::Sender<usize>>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.send_modify(|taken| *taken -= 1);
    }
}

const SUBSCRIPTIONS: &str = "tablegraph_subscriptions";
const EVENTS: &str = "tablegraph_subscription_events_total";
const STREAM_RECORDS: &str = "tablegraph_stream_records_total";
const SHARDS_READ: &str = "tablegraph_stream_shards_read";
const STREAM_LAG: &str = "tablegraph_stream_lag_seconds";
const DELIVERY: &str = "tablegraph_subscription_delivery_seconds";

/// Upper bounds (seconds) of the delivery latency's buckets.
const DELIVERY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// `/metrics` of the subscriptions: how many are open, the events they were handed and the
/// ones they missed, how long after its write an event was handed over, the stream records
/// read, and how far behind the stream the reader is.
struct HubMetrics {
    registry: Metrics,
    open: Gauge,
    delivered: Counter,
    missed: Counter,
    delivery: Histogram,
    records: Counter,
    shards_read: Gauge,
    lag: Gauge,
}

impl Default for HubMetrics {
    fn default() -> Self {
        let registry = Metrics::new(&DELIVERY_BUCKETS);
        registry.describe_histogram(
            DELIVERY,
            "From a node's update time to its event handed to a subscription (creations and \
             updates; a deletion or a published answer carries no time of its own).",
        );
        registry.describe_gauge(
            STREAM_LAG,
            "How long ago the reader had read every write committed (its last round's \
             position): how far behind the table's change stream events are.",
        );
        registry.describe_gauge(SUBSCRIPTIONS, "Subscriptions open now.");
        registry.describe_counter(
            EVENTS,
            "Events handed to subscriptions (`delivered`), or lost to one that fell behind \
             or while the stream was read again (`missed`).",
        );
        registry.describe_counter(
            STREAM_RECORDS,
            "Records read from the table's change stream.",
        );
        registry.describe_gauge(
            SHARDS_READ,
            "Shards of the change stream this replica reads for the others (holds the lease of).",
        );
        HubMetrics {
            open: registry.gauge(SUBSCRIPTIONS, &[]),
            shards_read: registry.gauge(SHARDS_READ, &[]),
            delivered: registry.counter(EVENTS, &[("outcome", "delivered")]),
            missed: registry.counter(EVENTS, &[("outcome", "missed")]),
            records: registry.counter(STREAM_RECORDS, &[]),
            delivery: registry.histogram(DELIVERY, &[]),
            lag: registry.gauge(STREAM_LAG, &[]),
            registry,
        }
    }
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub::new(EVENT_BUFFER, usize::MAX)
    }
}

impl EventHub {
    /// A hub whose subscribers may fall `pending` events behind before they miss some (at
    /// least 1), and that holds at most `most` subscribers.
    pub fn new(pending: usize, most: usize) -> EventHub {
        EventHub {
            most,
            sender: broadcast::Sender::new(pending.max(1)),
            following: Arc::default(),
            subscribers: Arc::new(watch::Sender::new(0)),
            in_place: Arc::new(watch::Sender::new(0)),
            reading: Arc::new(watch::Sender::new(true)),
            joiners: Arc::default(),
            metrics: Arc::default(),
        }
    }
}

impl EventHub {
    /// Starts reading the stream `arn` of `store`'s table, alone: the embedded store's stream,
    /// which no other process reads. Once this answers, every write committed from then on
    /// reaches the hub's subscribers; the reading goes on in a task of its own, which ends
    /// when every handle on the hub is gone. After an empty answer the reader waits
    /// `idle_poll` before it asks again.
    pub async fn follow(
        &self,
        store: Store,
        arn: String,
        idle_poll: Duration,
    ) -> Result<(), StoreError> {
        self.read_from(Source::Alone { store, arn }, idle_poll)
            .await
    }

    /// The same, with the other replicas on the same table (`relay.rs`): this replica reads
    /// the shards whose lease it holds, and the relay of the others; each write reaches the
    /// hub's subscribers once. Leases last `lease` unless renewed.
    pub async fn follow_with_replicas(
        &self,
        store: Store,
        arn: String,
        lease: Duration,
        idle_poll: Duration,
    ) -> Result<(), StoreError> {
        let me = crate::keys::new_id();
        let source = Source::WithReplicas {
            store,
            arn,
            me,
            lease,
        };
        self.read_from(source, idle_poll).await
    }

    async fn read_from(&self, source: Source, idle_poll: Duration) -> Result<(), StoreError> {
        let mut reader = Some(source.open().await?);
        self.following.store(true, Ordering::Relaxed);
        let sender = self.sender.downgrade();
        let metrics = self.metrics.clone();
        let cache = source.store().cache().cloned();
        let alone = matches!(source, Source::Alone { .. });
        // Only a reader of its own stream may rest: a relay reads for other replicas too, and
        // a read cache needs every record, subscribers or not. A reader that does not rest for
        // subscribers polls at the cache's pace while nobody subscribes.
        let mut attention = (alone && cache.is_none()).then(|| Attention {
            subscribers: self.subscribers.subscribe(),
            reading: self.reading.clone(),
        });
        let pace = Pace {
            idle_poll,
            unwatched_poll: match &cache {
                Some(cache) if alone => (cache.max_lag() / 4).min(UNWATCHED_POLL).max(idle_poll),
                _ => idle_poll,
            },
            subscribers: self.subscribers.subscribe(),
            joiners: self.joiners.clone(),
        };
        tokio::spawn(async move {
            loop {
                let opening = match reader.take() {
                    Some(reader) => Ok(reader),
                    None => source.open().await,
                };
                let outcome = match opening {
                    Ok(reader) => {
                        // Opened at the stream's newest records: whoever waited is in place.
                        if let Some(attention) = &attention {
                            attention.awake();
                        }
                        let cache = cache.as_deref();
                        read(
                            reader,
                            attention.as_mut(),
                            &sender,
                            &metrics,
                            cache,
                            pace.clone(),
                        )
                        .await
                    }
                    Err(error) => Err(error),
                };
                match outcome {
                    Ok(Stop::HubGone) => return,
                    // Opened again at the stream's newest records, above.
                    Ok(Stop::Rested) => continue,
                    Err(error) => {
                        tracing::warn!(%error, "the table's change stream failed; reading it again");
                        if let Some(cache) = &cache {
                            cache.lost("the change stream failed");
                        }
                        // New subscribers wait for the stream to be opened again; the
                        // subscribers in place are told rather than left to guess.
                        if let Some(attention) = &attention {
                            attention.not_reading();
                        }
                        match sender.upgrade() {
                            Some(sender) => drop(sender.send(Event::Missed)),
                            None => return,
                        }
                    }
                }
                tokio::time::sleep(AFTER_FAILURE).await;
            }
        });
        Ok(())
    }

    /// Whether a reader of the table's stream feeds the hub.
    pub fn is_following(&self) -> bool {
        self.following.load(Ordering::Relaxed)
    }

    /// A receiver of the events of writes committed from now on, unless the hub holds its
    /// most subscribers already (`None`). The count is checked and taken in one step, so
    /// concurrent subscriptions cannot pass the limit together. With a reader, the receiver
    /// comes from it between two rounds (see the module doc): every write committed once this
    /// answers reaches the receiver, and none committed before it was called.
    pub async fn subscribe(&self) -> Option<EventReceiver> {
        let taken = self.subscribers.send_if_modified(|taken| {
            let room = *taken < self.most;
            if room {
                *taken += 1;
            }
            room
        });
        if !taken {
            return None;
        }
        let place = Place(self.subscribers.clone());
        let receiver = match self.is_following() {
            true => {
                let (admit, admitted) = oneshot::channel();
                let since = Instant::now();
                {
                    let mut waiting = self.joiners.lock();
                    // Those who gave up waiting (their subscription dropped) are forgotten.
                    waiting.retain(|joiner| !joiner.admit.is_closed());
                    waiting.push(Joiner { since, admit });
                }
                self.joiners.arrived.notify_one();
                // The joiners live as long as `self`: the reader answers, or the wait goes on.
                admitted.await.ok()?
            }
            false => self.sender.subscribe(),
        };
        let receiver = EventReceiver {
            receiver,
            _place: place,
            in_place: self.in_place.clone(),
            metrics: self.metrics.clone(),
        };
        self.in_place.send_modify(|in_place| {
            *in_place += 1;
            self.metrics.open.set(*in_place as f64);
        });
        Some(receiver)
    }

    /// Resolves once the reader says it is not reading: it rests while nobody subscribes (on
    /// the embedded store; a reader for other replicas never rests), says so a moment before
    /// it looks whether anybody does, and while it opens the stream again after a failure.
    /// With nobody subscribing, writes from then on are not read.
    pub async fn until_resting(&self) {
        let mut reading = self.reading.subscribe();
        let _ = reading.wait_for(|reading| !*reading).await;
    }

    /// Subscribers the hub holds at most.
    pub fn most(&self) -> usize {
        self.most
    }

    /// The subscriptions' metrics in Prometheus' text exposition format.
    pub fn render_metrics(&self) -> String {
        self.metrics.registry.render()
    }

    /// Resolves once at least `count` receivers are in place: every write committed from
    /// then on reaches them.
    pub async fn until_subscribers(&self, count: usize) {
        let mut in_place = self.in_place.subscribe();
        // The sender lives as long as `self`, so the wait cannot fail.
        let _ = in_place.wait_for(|in_place| *in_place >= count).await;
    }

    /// Resolves once at most `count` receivers are in place: the others have ended.
    pub async fn until_at_most_subscribers(&self, count: usize) {
        let mut in_place = self.in_place.subscribe();
        let _ = in_place.wait_for(|in_place| *in_place <= count).await;
    }
}

impl EventReceiver {
    /// The next event, or `None` when the hub is gone.
    pub async fn next(&mut self) -> Option<Event> {
        match self.receiver.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                self.metrics.missed.increment(missed);
                Some(Event::Missed)
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// Counts `change` handed to the subscriber, and how long after its write.
    pub fn delivered(&self, change: &Change) {
        self.metrics.delivered.increment(1);
        let written = match change.kind() {
            ChangeKind::Created | ChangeKind::Updated => change.new.as_ref(),
            ChangeKind::Deleted => None,
        };
        if let Some(delay) = written
            .and_then(|item| item.get("updatedAt"))
            .and_then(|value| value.as_str())
            .and_then(commit_delay)
        {
            self.metrics.delivery.record(delay.as_secs_f64());
        }
    }
}

impl Drop for EventReceiver {
    fn drop(&mut self) {
        self.in_place.send_modify(|in_place| {
            *in_place -= 1;
            self.metrics.open.set(*in_place as f64);
        });
    }
}

/// The reader's side of the hub's subscribers: it rests while there are none.
struct Attention {
    subscribers: watch::Receiver<usize>,
    reading: Arc<watch::Sender<bool>>,
}

impl Attention {
    /// Waits, reading nothing, while nobody subscribes. `Some(true)` after it rested (what
    /// was written meanwhile was for nobody, so the stream is to be read again from its
    /// newest records), `Some(false)` when there are subscribers, `None` once the hub is gone.
    async fn rest_while_unwatched(&mut self) -> Option<bool> {
        if *self.subscribers.borrow_and_update() > 0 {
            return Some(false);
        }
        // Said before the count is read again: a subscriber arriving from here on waits until
        // the reader reads again, and one that arrived before is in the count.
        self.not_reading();
        if *self.subscribers.borrow_and_update() > 0 {
            self.awake();
            return Some(false);
        }
        // Fails once every handle on the hub, and so the count's sender, is gone.
        self.subscribers.wait_for(|alive| *alive > 0).await.ok()?;
        Some(true)
    }

    /// Tells the waiting subscribers that the stream is read from here on.
    fn awake(&self) {
        self.reading.send_replace(true);
    }

    /// Tells new subscribers to wait: the stream is not read until [`Attention::awake`].
    fn not_reading(&self) {
        self.reading.send_replace(false);
    }
}

/// What one subscription waits for: changes of one node or edge type (or published answers of
/// some mutations, by their typenames), of some kinds, whose item satisfies a filter (the item
/// after the change; before it, for a deletion).
#[derive(Debug, Clone)]
pub struct Watch {
    pub typenames: Vec<String>,
    pub kinds: Vec<ChangeKind>,
    pub filter: Filter,
}

impl Watch {
    /// The item to hand the subscriber when it wants `change`.
    pub fn wants(&self, change: &Change) -> Option<Arc<Item>> {
        if !self.typenames.contains(&change.typename) || !self.kinds.contains(&change.kind()) {
            return None;
        }
        let item = change.new.as_ref().or(change.old.as_ref())?;
        self.filter.matches(item).then(|| item.clone())
    }
}

/// Where the hub's changes come from.
enum Source {
    /// The table's stream, read by this process alone.
    Alone { store: Store, arn: String },
    /// The table's stream, read with the other replicas; `me` names this one in leases.
    WithReplicas {
        store: Store,
        arn: String,
        me: String,
        lease: Duration,
    },
}

enum Reader {
    Alone(StreamTail),
    WithReplicas(Relay),
}

impl Source {
    fn store(&self) -> &Store {
        match self {
            Source::Alone { store, .. } | Source::WithReplicas { store, .. } => store,
        }
    }

    async fn open(&self) -> Result<Reader, StoreError> {
        Ok(match self {
            Source::Alone { store, arn } => Reader::Alone(store.tail_stream(arn).await?),
            Source::WithReplicas {
                store,
                arn,
                me,
                lease,
            } => Reader::WithReplicas(
                Relay::start(store.clone(), arn.clone(), me.clone(), *lease).await?,
            ),
        })
    }
}

impl Reader {
    async fn round(&mut self) -> Result<Round, StoreError> {
        match self {
            Reader::Alone(tail) => {
                let began = Instant::now();
                let records = tail.next_records().await?;
                Ok(Round {
                    idle: records.is_empty(),
                    records: records.len(),
                    touched: records.iter().filter_map(Touched::of).collect(),
                    changes: records.into_iter().filter_map(change_of).collect(),
                    gap: false,
                    position: (!tail.is_behind()).then_some(began),
                })
            }
            Reader::WithReplicas(relay) => relay.round().await,
        }
    }

    /// The shards this replica reads for the others.
    fn shards_read(&self) -> usize {
        match self {
            Reader::Alone(_) => 0,
            Reader::WithReplicas(relay) => relay.holding(),
        }
    }
}

/// Why the reader stopped reading, short of a failure.
enum Stop {
    /// Every handle on the hub is gone.
    HubGone,
    /// It rested, nobody subscribing, until somebody did: the stream is to be opened again at
    /// its newest records.
    Rested,
}

/// How long the reader waits after an empty round: `idle_poll` while anybody subscribes,
/// `unwatched_poll` otherwise (the read cache's pace), woken when a subscriber arrives.
#[derive(Clone)]
struct Pace {
    idle_poll: Duration,
    unwatched_poll: Duration,
    subscribers: watch::Receiver<usize>,
    joiners: Arc<Joiners>,
}

impl Pace {
    async fn wait(&mut self) {
        let poll = match self.unwatched_poll == self.idle_poll
            || *self.subscribers.borrow_and_update() > 0
        {
            true => self.idle_poll,
            false => self.unwatched_poll,
        };
        let joined = self.joiners.arrived.notified();
        let counted = self.subscribers.changed();
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            () = joined => {}
            _ = counted, if poll == self.unwatched_poll => {}
        }
    }
}

/// What a round read, applied to the read cache: its records' keys and partitions evicted, a
/// gap empties it, and its position says how far the cache is behind.
fn feed(cache: &ReadCache, round: &Round) {
    if round.gap {
        cache.lost("the relay of another replica has a gap");
    }
    cache.apply(&round.touched);
    for touched in &round.touched {
        if let Some(delay) = touched.updated_at.as_deref().and_then(commit_delay) {
            cache.observe_delay(delay);
        }
    }
    if let Some(position) = round.position {
        cache.caught_up(position);
    }
}

/// How long ago a node's stored update time was.
fn commit_delay(updated: &str) -> Option<Duration> {
    let updated =
        time::OffsetDateTime::parse(updated, &time::format_description::well_known::Rfc3339)
            .ok()?;
    let ago = time::OffsetDateTime::now_utc() - updated;
    ago.try_into().ok()
}

/// Reads the stream into the hub until the hub is gone, the reader rested, or the stream
/// fails.
async fn read(
    mut reader: Reader,
    mut attention: Option<&mut Attention>,
    sender: &broadcast::WeakSender<Event>,
    metrics: &HubMetrics,
    cache: Option<&ReadCache>,
    mut pace: Pace,
) -> Result<Stop, StoreError> {
    loop {
        metrics.shards_read.set(reader.shards_read() as f64);
        let round = reader.round().await?;
        metrics.records.increment(round.records as u64);
        if let Some(cache) = cache {
            feed(cache, &round);
        }
        let Some(sender) = sender.upgrade() else {
            return Ok(Stop::HubGone);
        };
        if round.gap {
            let _ = sender.send(Event::Missed);
        }
        for change in round.changes {
            // No subscriber is not an error: the event is for nobody.
            let _ = sender.send(Event::Changed(Arc::new(change)));
        }
        if let Some(position) = round.position {
            metrics.lag.set(
                Instant::now()
                    .saturating_duration_since(position)
                    .as_secs_f64(),
            );
        }
        // Joiners who asked before the round's position have seen none of what it sent.
        if let Some(position) = round.position {
            pace.joiners.admit(position, &sender);
        }
        drop(sender);
        // Not even a busy stream is read for nobody.
        if let Some(attention) = attention.as_deref_mut() {
            match attention.rest_while_unwatched().await {
                None => return Ok(Stop::HubGone),
                Some(true) => return Ok(Stop::Rested),
                Some(false) => {}
            }
        }
        if round.idle {
            // Polling the stream: DynamoDB Streams has no push.
            pace.wait().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;
    use crate::store::{AttrValue, StreamRecord};

    fn item(pairs: &[(&str, &str)]) -> Item {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), AttrValue::S((*value).to_owned())))
            .collect()
    }

    fn record(old: Option<Item>, new: Option<Item>) -> StreamRecord {
        StreamRecord {
            old,
            new,
            ..StreamRecord::default()
        }
    }

    fn farm(name: &str, version: &str) -> Item {
        let mut farm = item(&[
            (keys::PK, "NODE#f1"),
            (keys::SK, "NODE#f1"),
            ("__typename", "Farm"),
            ("id", "f1"),
            ("name", name),
        ]);
        farm.insert("version".into(), AttrValue::N(version.into()));
        farm
    }

    #[tokio::test]
    async fn a_gap_in_the_relay_empties_the_read_cache_and_a_round_says_how_far_it_read() {
        let settings = crate::store::CacheSettings {
            bytes: 1 << 20,
            max_lag: Duration::from_secs(60),
        };
        let store = crate::store::loopback_store("gaps")
            .await
            .with_cache(&settings);
        let cache = store.cache().expect("on").clone();
        assert!(cache.weight() == 0);
        let read = Instant::now();
        feed(
            &cache,
            &Round {
                touched: Touched::of(&record(None, Some(farm("Ridge", "1"))))
                    .into_iter()
                    .collect(),
                position: Some(read),
                ..Round::default()
            },
        );
        tokio::time::timeout(Duration::from_secs(1), cache.until_caught_up(read))
            .await
            .expect("caught up to the round's position");
        // Fill it through a read of the store, then lose the relay's thread.
        store
            .batch_get_items(&[keys::node_key("f1")])
            .await
            .expect("a read");
        assert!(cache.weight() > 0, "the read filled the cache");
        feed(
            &cache,
            &Round {
                gap: true,
                ..Round::default()
            },
        );
        assert_eq!(cache.weight(), 0, "emptied");
        let later = Instant::now();
        let waiting = tokio::time::timeout(Duration::from_millis(50), cache.until_caught_up(later));
        assert!(
            waiting.await.is_err(),
            "not caught up until a round says so"
        );
    }

    #[test]
    fn node_items_are_changes_of_their_type() {
        let change = change_of(record(None, Some(farm("Ridge", "1")))).expect("an event");
        assert_eq!(
            (change.typename.as_str(), change.id.as_str()),
            ("Farm", "f1")
        );
        assert_eq!(change.kind(), ChangeKind::Created);
        let change = change_of(record(Some(farm("Ridge", "1")), None)).expect("an event");
        assert_eq!(change.kind(), ChangeKind::Deleted);
    }

    /// Conflict detection's delete makes a tombstone, which is the node's delete; its removal
    /// past its `_ttl` is no event again, and the stream's `DELTA#` records are none at all.
    #[test]
    fn a_tombstone_is_its_nodes_delete_and_its_removal_no_event() {
        let mut tombstone = farm("Ridge", "2");
        tombstone.insert(crate::store::DELETED.into(), AttrValue::Bool(true));
        let deleted = change_of(record(Some(farm("Ridge", "1")), Some(tombstone.clone())));
        assert_eq!(deleted.map(|c| c.kind()), Some(ChangeKind::Deleted));
        assert!(change_of(record(Some(tombstone), None)).is_none());
        let delta = item(&[(keys::PK, "DELTA#Farm"), (keys::SK, "1700000000000#f1#2")]);
        assert!(change_of(record(None, Some(delta))).is_none());
    }

    #[test]
    fn an_update_that_moves_only_what_clients_do_not_read_is_no_event() {
        let mut bumped = farm("Ridge", "2");
        bumped.insert("updatedAt".into(), AttrValue::S("later".into()));
        bumped.insert("PK01".into(), AttrValue::S("Farm#x".into()));
        bumped.insert(
            "edges".into(),
            AttrValue::Ss(["Member#u1".to_owned()].into()),
        );
        assert!(change_of(record(Some(farm("Ridge", "1")), Some(bumped))).is_none());
        let renamed = change_of(record(Some(farm("Ridge", "1")), Some(farm("Hill", "2"))));
        assert_eq!(renamed.map(|c| c.kind()), Some(ChangeKind::Updated));
        // A field cleared or set is a change either way round.
        let mut with_logo = farm("Ridge", "1");
        with_logo.insert("logoId".into(), AttrValue::S("i1".into()));
        let cleared = change_of(record(Some(with_logo.clone()), Some(farm("Ridge", "2"))));
        assert_eq!(cleared.map(|c| c.kind()), Some(ChangeKind::Updated));
        let set = change_of(record(Some(farm("Ridge", "1")), Some(with_logo)));
        assert_eq!(set.map(|c| c.kind()), Some(ChangeKind::Updated));
    }

    #[test]
    fn edges_are_changes_named_by_their_source_and_unique_items_are_none() {
        let edge = item(&[
            (keys::PK, "NODE#g1"),
            (keys::SK, "GoalMembership#u1"),
            ("__typename", "GoalMembership"),
            ("from", "g1"),
            ("to", "u1"),
        ]);
        let change = change_of(record(None, Some(edge))).expect("an event");
        assert_eq!(
            (change.typename.as_str(), change.id.as_str()),
            ("GoalMembership", "g1")
        );
        let unique = item(&[
            (keys::PK, "Farm#name#ridge"),
            (keys::SK, "Farm#name#ridge"),
            ("__typename", "Farm#name"),
        ]);
        assert!(change_of(record(None, Some(unique))).is_none());
    }

    #[tokio::test]
    async fn a_subscriber_wakes_a_resting_reader_and_is_in_place_only_once_a_round_admits_it() {
        let hub = EventHub::new(8, 4);
        hub.following.store(true, Ordering::Relaxed);
        let mut attention = Attention {
            subscribers: hub.subscribers.subscribe(),
            reading: hub.reading.clone(),
        };
        let resting = tokio::spawn(async move {
            let woken = attention.rest_while_unwatched().await;
            (attention, woken)
        });
        hub.until_resting().await;
        let subscribing = tokio::spawn({
            let hub = hub.clone();
            async move { hub.subscribe().await }
        });
        let (attention, woken) = resting.await.expect("the reader's task");
        assert_eq!(woken, Some(true), "a subscriber wakes the reader");
        // Nobody is in place before a round admits it.
        hub.joiners.arrived.notified().await;
        assert_eq!(*hub.in_place.borrow(), 0);
        hub.joiners.admit(Instant::now(), &hub.sender);
        let receiver = subscribing.await.expect("the subscriber's task");
        assert!(receiver.is_some());
        hub.until_subscribers(1).await;
        // With a subscriber in place the reader does not rest.
        let mut attention = attention;
        assert_eq!(attention.rest_while_unwatched().await, Some(false));
        drop(receiver);
        assert_eq!(*hub.in_place.borrow(), 0);
        assert_eq!(*hub.subscribers.borrow(), 0);
    }

    #[tokio::test]
    async fn a_joiner_receives_only_what_rounds_past_when_it_asked_send() {
        let hub = EventHub::new(8, 4);
        hub.following.store(true, Ordering::Relaxed);
        let before = Instant::now();
        let subscribing = tokio::spawn({
            let hub = hub.clone();
            async move { hub.subscribe().await }
        });
        hub.joiners.arrived.notified().await;
        // A round whose position is before the joiner asked: what it sent is not the joiner's,
        // and the joiner waits on.
        let old = change_of(record(None, Some(farm("Old", "1")))).expect("an event");
        let _ = hub.sender.send(Event::Changed(Arc::new(old)));
        hub.joiners.admit(before, &hub.sender);
        assert_eq!(hub.joiners.lock().len(), 1, "still waiting");
        assert_eq!(*hub.in_place.borrow(), 0);
        // A round past it admits the joiner, which receives what is sent from then on.
        hub.joiners.admit(Instant::now(), &hub.sender);
        assert!(hub.joiners.lock().is_empty());
        let mut receiver = subscribing
            .await
            .expect("the subscriber's task")
            .expect("a receiver");
        let new = change_of(record(None, Some(farm("New", "1")))).expect("an event");
        let _ = hub.sender.send(Event::Changed(Arc::new(new)));
        match receiver.next().await {
            Some(Event::Changed(change)) => {
                let name = change
                    .new
                    .as_ref()
                    .and_then(|item| item.get("name"))
                    .cloned();
                assert_eq!(name, Some(AttrValue::S("New".into())));
            }
            other => panic!("expected the new farm, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_hub_holds_at_most_the_subscribers_it_is_allowed() {
        let hub = EventHub::new(8, 2);
        let first = hub.subscribe().await.expect("room for one");
        let second = hub.subscribe().await.expect("room for two");
        assert!(hub.subscribe().await.is_none(), "no room for a third");
        drop(first);
        assert!(
            hub.subscribe().await.is_some(),
            "a place freed is taken again"
        );
        drop(second);
    }
}
