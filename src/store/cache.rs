//! The read cache of one process: items read by key and pages of one partition, kept exact by
//! the table's change stream, in front of the reads that answer clients (`batch_get_items` for
//! the loader, `query_page` for connections and lists). Writes, consistent reads, unique checks
//! and conditions never look at it.
//!
//! # How it stays exact
//!
//! Every entry remembers where the cache's eviction counter stood when the read that filled it
//! began. Dropping a key or a partition ("evicting") moves the counter and marks the key's
//! stripe (one of [`STRIPES`], by hash) with the new count; an entry is good only while its
//! stripe's mark, and the marks of the whole cache and of every index page, are not past the
//! count it began at. So:
//! - a commit of this process marks the keys it wrote and their partitions as it returns
//!   (read-your-writes: the next read goes to the store);
//! - every record of the stream marks its item's key and the partitions it was in and moved to
//!   (the table's, and each index's, before and after), whoever wrote it (another replica, a
//!   program with the SDK, a TTL deletion), as it arrives;
//! - a read that began before a mark never counts as fresh, whenever it finishes: the race of
//!   a read with an eviction is lost by the read, without a lock between the two;
//! - entries are never filled from the stream, only dropped by it, so an old record arriving
//!   after a newer commit can cost a read but never roll an entry back.
//!
//! A commit of this process does not know which index partitions the items it updated were in
//! (DynamoDB's transactions answer no old images), so it voids every index page of the cache;
//! the table's partitions it names exactly.
//!
//! # How far behind it may be
//!
//! The reader of the stream says, after each round, from when on every committed write has been
//! seen (`caught_up`). Reads use the cache only while that is at most `max_lag` ago; otherwise
//! (a stalled poll, a lease being taken over, the reader starting) they go to the store and fill
//! nothing. A reader that lost its place in the stream empties the cache ([`ReadCache::lost`]).
//! On a store other than this process's embedded one, index pages also expire `max_lag` after
//! they were read: an index is eventually consistent, and its read may trail the stream.
//!
//! # Why `quick_cache`
//!
//! Entries are bounded by their estimated bytes (`--cache-bytes`) with `quick_cache`'s weighted
//! S3-FIFO: a lookup takes a shard's read lock and no background task runs, where `moka`
//! keeps a housekeeping thread and a write log per cache, and `lru` (the persisted queries'
//! cache) bounds entries by count and takes a lock per lookup. Hits, misses, evictions by
//! cause, bytes and lag are in `/metrics` (`tablegraph_cache_*`).

use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram};
use tokio::sync::watch;

use super::item::{AttrValue, Item, RangePage, StreamRecord, item_size};
use super::key::RangeQuery;
use super::write::Write;
use crate::keys;
use crate::telemetry::Metrics;

/// Stripes of eviction marks: a mark voids the entries of every key hashed to its stripe, so
/// more stripes void fewer bystanders (16,384 stripes: 128 KB).
const STRIPES: usize = 16_384;
/// `ReadCache::caught_up` before the stream was ever read.
const NEVER: i64 = i64::MIN;
/// What an entry costs besides its item's bytes: the key's copy, the entry, the map's slot.
const ENTRY_OVERHEAD: usize = 160;
/// What each attribute of a cached item costs besides its name and value bytes.
const ATTRIBUTE_OVERHEAD: usize = 56;

/// How big the cache may grow and how far behind the stream it may serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSettings {
    /// The most bytes its entries may take (estimated); 0 turns the cache off.
    pub bytes: u64,
    /// How far behind the stream reads may be before they bypass the cache.
    pub max_lag: Duration,
}

impl CacheSettings {
    /// No cache: every read goes to the store.
    pub fn off() -> CacheSettings {
        CacheSettings {
            bytes: 0,
            max_lag: DEFAULT_MAX_LAG,
        }
    }
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings::off()
    }
}

/// `--cache-max-lag`'s default.
pub const DEFAULT_MAX_LAG: Duration = Duration::from_secs(1);

/// `--cache-bytes`'s default: a sixteenth of the memory this process may use (its cgroup's
/// limit, else the machine's), between 16 MiB and 256 MiB.
pub fn default_cache_bytes() -> u64 {
    const MIB: u64 = 1024 * 1024;
    let limit = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    let machine = || {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|line| line.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    };
    let memory = limit.or_else(machine).unwrap_or(1024 * MIB);
    (memory / 16).clamp(16 * MIB, 256 * MIB)
}

/// The partition a page was read from: the table's (`index: None`) or a slot index's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Partition {
    pub index: Option<u8>,
    pub value: String,
}

/// What one stream record changed, for the cache: the item's key when it is one read by key
/// (`PK` equal to `SK`), the partitions it was in or moved to, and the update time its new
/// image carries (a node's `updatedAt`), which says how late the record arrived.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Touched {
    pub key: Option<String>,
    pub partitions: Vec<Partition>,
    pub updated_at: Option<String>,
}

impl Touched {
    /// What `record` changed; `None` for the stream's own relay and lease items, which no read
    /// of a client touches.
    pub fn of(record: &StreamRecord) -> Option<Touched> {
        let image = record.new.as_ref().or(record.old.as_ref())?;
        let pk = image.get(keys::PK)?.as_str()?;
        if keys::is_stream_partition(pk) {
            return None;
        }
        let sk = image.get(keys::SK).and_then(AttrValue::as_str);
        let mut partitions = vec![Partition {
            index: None,
            value: pk.to_owned(),
        }];
        for item in [&record.old, &record.new].into_iter().flatten() {
            for (name, value) in item.iter() {
                let Some(slot) = name.strip_prefix("PK").and_then(|d| d.parse::<u8>().ok()) else {
                    continue;
                };
                let Some(value) = value.as_str() else {
                    continue;
                };
                let partition = Partition {
                    index: Some(slot),
                    value: value.to_owned(),
                };
                if !partitions.contains(&partition) {
                    partitions.push(partition);
                }
            }
        }
        Some(Touched {
            key: (sk == Some(pk)).then(|| pk.to_owned()),
            partitions,
            updated_at: (record.new.as_ref())
                .and_then(|new| new.get("updatedAt")?.as_str().map(str::to_owned)),
        })
    }

    /// As text, for another replica (`changes::relay`): `I<key>`, `T<partition>`,
    /// `<NN><partition>`.
    pub fn to_strings(&self) -> Vec<String> {
        let mut texts: Vec<String> = self.key.iter().map(|key| format!("I{key}")).collect();
        texts.extend(self.partitions.iter().map(|p| match p.index {
            None => format!("T{}", p.value),
            Some(slot) => format!("{slot:02}{}", p.value),
        }));
        texts
    }

    /// Read back from [`Touched::to_strings`]'s texts, of any number of records: one
    /// [`Touched`] per text.
    pub fn from_strings<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<Touched> {
        texts
            .into_iter()
            .filter_map(|text| {
                if let Some(key) = text.strip_prefix('I') {
                    return Some(Touched {
                        key: Some(key.to_owned()),
                        ..Touched::default()
                    });
                }
                let partition = match text.strip_prefix('T') {
                    Some(value) => Partition {
                        index: None,
                        value: value.to_owned(),
                    },
                    None => Partition {
                        index: Some(text.get(..2)?.parse().ok()?),
                        value: text.get(2..)?.to_owned(),
                    },
                };
                Some(Touched {
                    partitions: vec![partition],
                    ..Touched::default()
                })
            })
            .collect()
    }
}

/// What a cached read found.
#[derive(Clone)]
enum Cached {
    Item(Option<Arc<Item>>),
    Page(Arc<RangePage>),
}

#[derive(Clone)]
struct Entry {
    cached: Cached,
    /// The eviction count when the read that filled it began.
    began: u64,
    /// The stripe of its key (an item) or of its partition (a page).
    stripe: usize,
    /// For a page of an index: when it was read, and that it answers to index-wide marks.
    index_page: Option<Instant>,
    weight: u64,
}

#[derive(Clone)]
struct Weigh;

impl quick_cache::Weighter<String, Entry> for Weigh {
    fn weight(&self, _key: &String, entry: &Entry) -> u64 {
        entry.weight
    }
}

/// Counts the entries the bound pushed out (and those refused as larger than it).
#[derive(Clone)]
struct PushedOut(Counter);

impl quick_cache::Lifecycle<String, Entry> for PushedOut {
    type RequestState = ();

    fn on_evict(&self, _state: &mut (), _key: String, _entry: Entry) {
        self.0.increment(1);
    }
}

type Entries =
    quick_cache::sync::Cache<String, Entry, Weigh, foldhash::fast::RandomState, PushedOut>;

/// The read cache of one process (see the module doc). Shared by every handle on the store.
pub struct ReadCache {
    entries: Entries,
    bytes: u64,
    marks: Box<[AtomicU64]>,
    /// The eviction count.
    count: AtomicU64,
    /// Entries that began before this are void.
    emptied: AtomicU64,
    /// Index pages that began before this are void.
    index_pages_voided: AtomicU64,
    hasher: foldhash::fast::FixedState,
    max_lag: Duration,
    /// Whether index pages expire after `max_lag` (a store other than this process's own).
    index_pages_expire: bool,
    /// From when on every committed write has been seen, as micros since `origin` (before it
    /// when negative; `i64::MIN`: never).
    caught_up: watch::Sender<i64>,
    origin: Instant,
    metrics: CacheMetrics,
}

impl ReadCache {
    /// A cache by `settings`, or none when they turn it off. `remote`: the store is not this
    /// process's embedded one.
    pub fn new(settings: &CacheSettings, remote: bool) -> Option<Arc<ReadCache>> {
        if settings.bytes == 0 {
            return None;
        }
        let metrics = CacheMetrics::new();
        let estimated = usize::try_from(settings.bytes / 1024)
            .unwrap_or(usize::MAX)
            .max(16);
        let entries = Entries::with(
            estimated,
            settings.bytes,
            Weigh,
            foldhash::fast::RandomState::default(),
            PushedOut(metrics.evicted_size.clone()),
        );
        Some(Arc::new(ReadCache {
            entries,
            bytes: settings.bytes,
            marks: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            emptied: AtomicU64::new(0),
            index_pages_voided: AtomicU64::new(0),
            hasher: foldhash::fast::FixedState::default(),
            max_lag: settings.max_lag,
            index_pages_expire: remote,
            caught_up: watch::Sender::new(NEVER),
            origin: Instant::now(),
            metrics,
        }))
    }

    /// Where a read begins: `Some(count)` when the cache may answer it, `None` while the
    /// stream's reader is more than `max_lag` behind (or has not started).
    pub(super) fn begin(&self) -> Option<u64> {
        // The count first: a `lost` after the freshness check then voids what this read fills.
        let count = self.count.load(Ordering::Acquire);
        if !self.is_fresh() {
            self.metrics.bypassed.increment(1);
            return None;
        }
        Some(count)
    }

    /// Whether the stream was read up to at most `max_lag` ago: the cache may answer. (Not
    /// counted as a bypass: [`ReadCache::begin`] counts the read that then goes to the store.)
    pub(super) fn is_fresh(&self) -> bool {
        let caught_up = *self.caught_up.borrow();
        let now = self.micros(Instant::now());
        now.saturating_sub(caught_up) <= self.max_lag.as_micros() as i64
    }

    /// The item under `key` as cached: `Some(None)` when it is known not to exist, `None` when
    /// the cache does not know.
    pub(super) fn item(&self, key: &str) -> Option<Option<Arc<Item>>> {
        let found = self.lookup_item(key);
        match found {
            Some(_) => self.metrics.hits_items.increment(1),
            None => self.metrics.misses_items.increment(1),
        }
        found
    }

    /// The items under `keys` as cached, when the cache holds every one (counted as hits then;
    /// as nothing otherwise: the keys are then read as usual, and counted there).
    pub(super) fn all_items(&self, keys: &[&str]) -> Option<Vec<Option<Arc<Item>>>> {
        let found = keys
            .iter()
            .map(|key| self.lookup_item(key))
            .collect::<Option<Vec<_>>>()?;
        self.metrics.hits_items.increment(found.len() as u64);
        Some(found)
    }

    fn lookup_item(&self, key: &str) -> Option<Option<Arc<Item>>> {
        match self.entries.get(key) {
            Some(entry) if self.good(&entry) => match entry.cached {
                Cached::Item(item) => Some(item),
                Cached::Page(_) => None,
            },
            _ => None,
        }
    }

    /// Keeps what a read of `key` that began at `began` found.
    pub(super) fn fill_item(&self, key: &str, item: Option<Arc<Item>>, began: u64) {
        let weight = item.as_deref().map_or(0, weight_of) + key.len() + ENTRY_OVERHEAD;
        self.fill(
            key.to_owned(),
            Entry {
                cached: Cached::Item(item),
                began,
                stripe: self.stripe(key),
                index_page: None,
                weight: weight as u64,
            },
        );
    }

    /// The page `query` read, as cached.
    pub(super) fn page(&self, query: &RangeQuery<'_>) -> Option<Arc<RangePage>> {
        let found = match self.entries.get(page_key(query).as_str()) {
            Some(entry) if self.good(&entry) => match entry.cached {
                Cached::Page(page) => Some(page),
                Cached::Item(_) => None,
            },
            _ => None,
        };
        match found {
            Some(_) => self.metrics.hits_pages.increment(1),
            None => self.metrics.misses_pages.increment(1),
        }
        found
    }

    /// Keeps the page `query` read, by a read that began at `began`.
    pub(super) fn fill_page(&self, query: &RangeQuery<'_>, page: Arc<RangePage>, began: u64) {
        let partition = Partition {
            index: query.index,
            value: query.partition.to_owned(),
        };
        let key = page_key(query);
        let weight = page.items.iter().map(|item| weight_of(item)).sum::<usize>()
            + page.stopped_at.as_ref().map_or(0, String::len)
            + key.len()
            + ENTRY_OVERHEAD;
        self.fill(
            key,
            Entry {
                cached: Cached::Page(page),
                began,
                stripe: self.partition_stripe(&partition),
                index_page: query.index.map(|_| Instant::now()),
                weight: weight as u64,
            },
        );
    }

    fn fill(&self, key: String, entry: Entry) {
        // An entry that began before a mark is void at once; keeping it would only push out a
        // good one. One past the bound is refused by the cache itself.
        if self.good(&entry) {
            // Taken out first: `quick_cache` reports a replaced value as evicted, and only what
            // the bound pushes out is counted so.
            self.entries.remove(key.as_str());
            self.entries.insert(key, entry);
        }
        self.metrics.bytes.set(self.entries.weight() as f64);
    }

    fn good(&self, entry: &Entry) -> bool {
        let began = entry.began;
        if self.marks[entry.stripe].load(Ordering::Acquire) > began
            || self.emptied.load(Ordering::Acquire) > began
        {
            return false;
        }
        match entry.index_page {
            None => true,
            Some(read) => {
                self.index_pages_voided.load(Ordering::Acquire) <= began
                    && !(self.index_pages_expire && read.elapsed() > self.max_lag)
            }
        }
    }

    /// A new eviction count, past every read begun so far.
    fn next_count(&self) -> u64 {
        self.count.fetch_add(1, Ordering::AcqRel) + 1
    }

    fn mark(&self, stripe: usize, count: u64) {
        self.marks[stripe].fetch_max(count, Ordering::AcqRel);
    }

    /// What a transaction of this process committed: its keys and their table partitions are
    /// marked, and every index page voided (see the module doc).
    pub(super) fn committed(&self, writes: &[Write]) {
        let count = self.next_count();
        let mut indexed = false;
        for write in writes {
            let key = write.key();
            if keys::is_stream_partition(&key.pk) {
                continue;
            }
            indexed = true;
            if key.pk == key.sk {
                self.mark(self.stripe(&key.pk), count);
            }
            self.mark(
                self.partition_stripe(&Partition {
                    index: None,
                    value: key.pk,
                }),
                count,
            );
            self.metrics.evicted_write.increment(1);
        }
        if indexed {
            self.index_pages_voided.fetch_max(count, Ordering::AcqRel);
        }
    }

    /// What the stream says was changed: each record's key and partitions are marked. (Even
    /// when the entry holds the record's new image: a read begun before the write may still
    /// be on its way with the image before it.)
    pub fn apply(&self, touched: &[Touched]) {
        if touched.is_empty() {
            return;
        }
        let count = self.next_count();
        for touched in touched {
            if let Some(key) = &touched.key {
                self.mark(self.stripe(key), count);
                self.metrics.evicted_stream.increment(1);
            }
            for partition in &touched.partitions {
                self.mark(self.partition_stripe(partition), count);
            }
        }
    }

    /// Every committed write before `position` has been applied.
    pub fn caught_up(&self, position: Instant) {
        let micros = self.micros(position);
        self.caught_up.send_if_modified(|at| {
            let later = micros > *at;
            if later {
                *at = micros;
            }
            later
        });
        self.metrics.entries.set(self.entries.len() as f64);
        self.metrics.bytes.set(self.entries.weight() as f64);
    }

    /// The reader lost its place in the stream (a failure, a gap in the relay, events missed):
    /// what the cache holds may be stale, so it is emptied, and reads bypass it until the
    /// reader has caught up again.
    pub fn lost(&self, why: &str) {
        // Not fresh first, then the mark: a read that found the cache fresh loaded its count
        // before the mark, so what it fills is void.
        self.caught_up.send_replace(NEVER);
        let count = self.next_count();
        self.emptied.fetch_max(count, Ordering::AcqRel);
        self.entries.clear();
        self.metrics.emptied.increment(1);
        self.metrics.bytes.set(0.0);
        tracing::warn!(
            why,
            "the read cache was emptied: it lost its place in the change stream"
        );
    }

    /// Resolves once every write committed before `instant` has been applied: for tests and
    /// tools that wait on the stream instead of sleeping.
    pub async fn until_caught_up(&self, instant: Instant) {
        let micros = self.micros(instant);
        let mut caught_up = self.caught_up.subscribe();
        let _ = caught_up.wait_for(|at| *at >= micros).await;
    }

    /// How far behind the stream reads may be before they bypass the cache.
    pub fn max_lag(&self) -> Duration {
        self.max_lag
    }

    /// The bound on the entries' bytes.
    pub fn capacity(&self) -> u64 {
        self.bytes
    }

    /// The entries' bytes now (estimated as they are weighed).
    pub fn weight(&self) -> u64 {
        self.entries.weight()
    }

    /// The cache's metrics in Prometheus' text exposition format.
    pub fn render_metrics(&self) -> String {
        let caught_up = *self.caught_up.borrow();
        if caught_up != NEVER {
            let lag = self.micros(Instant::now()).saturating_sub(caught_up);
            self.metrics.lag.set(lag as f64 / 1e6);
        }
        self.metrics.entries.set(self.entries.len() as f64);
        self.metrics.bytes.set(self.entries.weight() as f64);
        self.metrics.registry.render()
    }

    /// Records how long after its commit a write was applied, by its item's update time.
    pub fn observe_delay(&self, delay: Duration) {
        self.metrics.delay.record(delay.as_secs_f64());
    }

    /// `instant` as micros since the cache began, negative before.
    fn micros(&self, instant: Instant) -> i64 {
        match instant.checked_duration_since(self.origin) {
            Some(after) => after.as_micros() as i64,
            None => -(self.origin.duration_since(instant).as_micros() as i64),
        }
    }

    fn stripe(&self, key: &str) -> usize {
        (self.hasher.hash_one(key) as usize) % STRIPES
    }

    fn partition_stripe(&self, partition: &Partition) -> usize {
        (self.hasher.hash_one(partition) as usize) % STRIPES
    }
}

/// What an item costs in the cache, estimated: its bytes and a share per attribute.
fn weight_of(item: &Item) -> usize {
    item_size(item) + item.len() * ATTRIBUTE_OVERHEAD
}

/// A page's key in the cache: everything that makes its answer.
fn page_key(query: &RangeQuery<'_>) -> String {
    use std::fmt::Write as _;
    let mut key = String::with_capacity(query.partition.len() + 64);
    let _ = write!(
        key,
        "\u{1}{:?}\u{1}{}\u{1}{:?}\u{1}{:?}\u{1}{:?}\u{1}{}\u{1}{}",
        query.index,
        query.partition,
        query.lower,
        query.upper,
        query.filter,
        query.forward,
        query.limit
    );
    key
}

struct CacheMetrics {
    registry: Metrics,
    hits_items: Counter,
    hits_pages: Counter,
    misses_items: Counter,
    misses_pages: Counter,
    bypassed: Counter,
    evicted_write: Counter,
    evicted_stream: Counter,
    evicted_size: Counter,
    emptied: Counter,
    bytes: Gauge,
    entries: Gauge,
    lag: Gauge,
    delay: Histogram,
}

const HITS: &str = "tablegraph_cache_hits_total";
const MISSES: &str = "tablegraph_cache_misses_total";
const BYPASSED: &str = "tablegraph_cache_bypassed_total";
const EVICTIONS: &str = "tablegraph_cache_evictions_total";
const EMPTIED: &str = "tablegraph_cache_emptied_total";
const BYTES: &str = "tablegraph_cache_bytes";
const ENTRIES: &str = "tablegraph_cache_entries";
const LAG: &str = "tablegraph_cache_lag_seconds";
const DELAY: &str = "tablegraph_cache_eviction_delay_seconds";

impl CacheMetrics {
    fn new() -> CacheMetrics {
        let registry = Metrics::new(&[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0]);
        registry.describe_counter(HITS, "Reads the cache answered, by kind (item, page).");
        registry.describe_counter(MISSES, "Reads the cache did not answer, by kind.");
        registry.describe_counter(
            BYPASSED,
            "Reads that bypassed the cache: the change stream was read longer ago than --cache-max-lag.",
        );
        registry.describe_counter(
            EVICTIONS,
            "Keys dropped from the cache, by cause (write: this process's commit; stream: a record \
             of the change stream; size: pushed out by --cache-bytes, or a key two reads filled \
             at once).",
        );
        registry.describe_counter(
            EMPTIED,
            "Times the cache was emptied because its reader lost its place in the change stream.",
        );
        registry.describe_gauge(BYTES, "Bytes the cache's entries take (estimated).");
        registry.describe_gauge(ENTRIES, "Entries in the cache.");
        registry.describe_gauge(LAG, "How long ago the change stream was last read up to.");
        registry.describe_histogram(
            DELAY,
            "From a node's update time to the stream record that dropped it from the cache.",
        );
        CacheMetrics {
            hits_items: registry.counter(HITS, &[("read", "item")]),
            hits_pages: registry.counter(HITS, &[("read", "page")]),
            misses_items: registry.counter(MISSES, &[("read", "item")]),
            misses_pages: registry.counter(MISSES, &[("read", "page")]),
            bypassed: registry.counter(BYPASSED, &[]),
            evicted_write: registry.counter(EVICTIONS, &[("cause", "write")]),
            evicted_stream: registry.counter(EVICTIONS, &[("cause", "stream")]),
            evicted_size: registry.counter(EVICTIONS, &[("cause", "size")]),
            emptied: registry.counter(EMPTIED, &[]),
            bytes: registry.gauge(BYTES, &[]),
            entries: registry.gauge(ENTRIES, &[]),
            lag: registry.gauge(LAG, &[]),
            delay: registry.histogram(DELAY, &[]),
            registry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::key::Key;

    fn cache(bytes: u64) -> Arc<ReadCache> {
        let settings = CacheSettings {
            bytes,
            max_lag: Duration::from_secs(60),
        };
        let cache = ReadCache::new(&settings, false).expect("a cache");
        cache.caught_up(Instant::now());
        cache
    }

    fn farm(name: &str, version: &str) -> Item {
        Item::from_iter([
            (keys::PK.to_owned(), AttrValue::S("NODE#f1".into())),
            (keys::SK.to_owned(), AttrValue::S("NODE#f1".into())),
            ("name".to_owned(), AttrValue::S(name.into())),
            ("version".to_owned(), AttrValue::N(version.into())),
            ("PK01".to_owned(), AttrValue::S("Farm#all".into())),
        ])
    }

    fn record(old: Option<Item>, new: Option<Item>) -> StreamRecord {
        StreamRecord {
            old,
            new,
            ..StreamRecord::default()
        }
    }

    fn page_query(index: Option<u8>, partition: &str) -> RangeQuery<'_> {
        RangeQuery {
            index,
            partition,
            lower: None,
            upper: None,
            filter: None,
            forward: true,
            limit: 10,
            consistent: false,
        }
    }

    fn page(name: &str) -> Arc<RangePage> {
        Arc::new(RangePage {
            items: vec![Arc::new(farm(name, "1"))],
            evaluated: 1,
            stopped_at: None,
        })
    }

    #[test]
    fn a_read_that_began_before_an_eviction_never_fills_the_cache() {
        let cache = cache(1 << 20);
        let began = cache.begin().expect("caught up");
        // The item changes while the read is on its way: its stream record arrives first.
        let touched = Touched::of(&record(Some(farm("Old", "1")), Some(farm("New", "2"))));
        cache.apply(&[touched.expect("a node's record")]);
        cache.fill_item("NODE#f1", Some(Arc::new(farm("Old", "1"))), began);
        assert!(
            cache.item("NODE#f1").is_none(),
            "the stale read was not kept"
        );
        // A read that begins after the eviction is kept.
        let began = cache.begin().expect("caught up");
        cache.fill_item("NODE#f1", Some(Arc::new(farm("New", "2"))), began);
        let cached = cache.item("NODE#f1").flatten().expect("kept");
        assert_eq!(cached.get("name"), Some(&AttrValue::S("New".into())));
    }

    #[test]
    fn an_old_record_after_a_newer_read_drops_the_entry_and_never_rolls_it_back() {
        let cache = cache(1 << 20);
        let began = cache.begin().expect("caught up");
        cache.fill_item("NODE#f1", Some(Arc::new(farm("Three", "3"))), began);
        // A record of version 2 arrives late: the entry is read again, never made version 2.
        let late = Touched::of(&record(Some(farm("One", "1")), Some(farm("Two", "2"))));
        cache.apply(&[late.expect("a record")]);
        assert!(cache.item("NODE#f1").is_none());
        // Two reads begin before a write; one is answered after it (version 4), one before
        // (version 3). The record comes between their fills: even though the entry holds what
        // the record says, the late fill of version 3 must not replace it.
        let (first, second) = (cache.begin(), cache.begin());
        let (first, second) = (first.expect("caught up"), second.expect("caught up"));
        cache.fill_item("NODE#f1", Some(Arc::new(farm("Four", "4"))), first);
        let write = Touched::of(&record(Some(farm("Three", "3")), Some(farm("Four", "4"))));
        cache.apply(&[write.expect("a record")]);
        cache.fill_item("NODE#f1", Some(Arc::new(farm("Three", "3"))), second);
        assert!(
            cache.item("NODE#f1").is_none(),
            "neither read began after the write"
        );
    }

    #[test]
    fn a_record_drops_the_pages_of_the_partitions_its_item_left_and_joined() {
        let cache = cache(1 << 20);
        let began = cache.begin().expect("caught up");
        let (before, after, other) = (
            page_query(Some(1), "Farm#all"),
            page_query(Some(1), "Farm#new"),
            page_query(Some(1), "Farm#other"),
        );
        for query in [&before, &after, &other] {
            cache.fill_page(query, page("x"), began);
        }
        let mut moved = farm("Moved", "2");
        moved.insert("PK01".into(), AttrValue::S("Farm#new".into()));
        let touched = Touched::of(&record(Some(farm("Moved", "1")), Some(moved)));
        cache.apply(&[touched.expect("a record")]);
        assert!(cache.page(&before).is_none() && cache.page(&after).is_none());
        assert!(
            cache.page(&other).is_some(),
            "an unrelated partition keeps its page"
        );
    }

    #[test]
    fn a_commit_drops_its_keys_and_table_partitions_and_every_index_page() {
        let cache = cache(1 << 20);
        let began = cache.begin().expect("caught up");
        cache.fill_item("NODE#f1", Some(Arc::new(farm("A", "1"))), began);
        cache.fill_item("NODE#f2", None, began);
        let edges = page_query(None, "NODE#f1");
        let index = page_query(Some(2), "Animal#f9");
        cache.fill_page(&edges, page("e"), began);
        cache.fill_page(&index, page("i"), began);
        cache.committed(&[Write::Delete {
            key: Key::same("NODE#f1".into()),
            condition: Vec::new(),
        }]);
        assert!(cache.item("NODE#f1").is_none() && cache.page(&edges).is_none());
        assert!(
            cache.page(&index).is_none(),
            "which index pages it touched is not known"
        );
        assert_eq!(
            cache.item("NODE#f2"),
            Some(None),
            "another key is still known absent"
        );
        // The stream's own items are none of the cache's business.
        let began = cache.begin().expect("caught up");
        cache.fill_page(&index, page("i"), began);
        cache.committed(&[Write::Delete {
            key: Key::same(keys::stream_partition("s")),
            condition: Vec::new(),
        }]);
        assert!(cache.page(&index).is_some());
    }

    #[test]
    fn a_cache_behind_the_stream_or_that_lost_it_is_bypassed_and_emptied() {
        let settings = CacheSettings {
            bytes: 1 << 20,
            max_lag: Duration::from_millis(50),
        };
        let cache = ReadCache::new(&settings, false).expect("a cache");
        assert!(cache.begin().is_none(), "never read the stream: bypassed");
        let long_ago = Instant::now() - Duration::from_secs(5);
        cache.caught_up(long_ago);
        assert!(cache.begin().is_none(), "five seconds behind: bypassed");
        cache.caught_up(Instant::now());
        let began = cache.begin().expect("caught up");
        cache.fill_item("NODE#f1", Some(Arc::new(farm("A", "1"))), began);
        assert!(cache.weight() > 0);
        cache.lost("a test");
        assert_eq!(cache.weight(), 0, "emptied");
        assert!(
            cache.begin().is_none(),
            "bypassed until the stream is read again"
        );
        cache.caught_up(Instant::now());
        assert!(cache.item("NODE#f1").is_none(), "what it held is gone");
    }

    #[test]
    fn the_cache_never_grows_past_its_bound() {
        let cache = cache(64 * 1024);
        let began = cache.begin().expect("caught up");
        let big = |n: usize| {
            let mut item = farm("Big", "1");
            item.insert("notes".into(), AttrValue::S("x".repeat(20 * 1024 + n)));
            Arc::new(item)
        };
        for n in 0..50 {
            cache.fill_item(&format!("NODE#{n}"), Some(big(n)), began);
            assert!(cache.weight() <= cache.capacity(), "{}", cache.weight());
        }
        // An entry larger than the whole cache is refused, not kept.
        let mut huge = farm("Huge", "1");
        huge.insert("notes".into(), AttrValue::S("x".repeat(200 * 1024)));
        cache.fill_item("NODE#huge", Some(Arc::new(huge)), began);
        assert!(cache.item("NODE#huge").is_none());
        assert!(cache.weight() <= cache.capacity());
        assert!(size_evictions(&cache) > 0.0, "{}", cache.render_metrics());
        // Filling a key again replaces its entry: nothing was pushed out.
        let roomy = self::cache(1 << 20);
        let began = roomy.begin().expect("caught up");
        for _ in 0..3 {
            roomy.fill_item("NODE#f1", Some(Arc::new(farm("A", "1"))), began);
        }
        assert_eq!(size_evictions(&roomy), 0.0);
    }

    fn size_evictions(cache: &ReadCache) -> f64 {
        let metrics = cache.render_metrics();
        metrics
            .lines()
            .find_map(|line| {
                line.strip_prefix("tablegraph_cache_evictions_total{cause=\"size\"} ")?
                    .parse()
                    .ok()
            })
            .unwrap_or(0.0)
    }

    #[test]
    fn what_a_record_touched_crosses_to_other_replicas_as_text() {
        let touched =
            Touched::of(&record(Some(farm("A", "1")), Some(farm("B", "2")))).expect("a record");
        let texts = touched.to_strings();
        assert_eq!(texts, ["INODE#f1", "TNODE#f1", "01Farm#all"]);
        let read = Touched::from_strings(texts.iter().map(String::as_str));
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].key.as_deref(), Some("NODE#f1"));
        assert_eq!(
            read[2].partitions,
            [Partition {
                index: Some(1),
                value: "Farm#all".into()
            }]
        );
        let lease = Item::from_iter([
            (
                keys::PK.to_owned(),
                AttrValue::S(keys::stream_partition("s")),
            ),
            (keys::SK.to_owned(), AttrValue::S("LEASE".into())),
        ]);
        assert!(Touched::of(&record(None, Some(lease))).is_none());
    }
}
