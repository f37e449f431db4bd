//! Per-request batching: every read by key in one request goes through one [`ItemLoader`], so a
//! level of a query costs one BatchGetItem however many parents asked.
//!
//! Invariant: a key is fetched at most once per request (later loads are served from the
//! request's cache), and a batch holds at most 100 keys per BatchGetItem call.
//!
//! # Why batches close by yielding, not by a timer
//!
//! A timer-based loader (wait 1 ms, then fetch what has accumulated) splits a level into several
//! calls whenever the machine is busy, so the number of calls would depend on load. Here the
//! first load of a batch yields to the executor a fixed number of times before it fetches. All
//! resolvers of one level run as futures of the same request task, so each yield lets every
//! sibling run up to its own load; the batch then holds the whole level regardless of timing
//! or of other requests. Nodes of every type share `NODE#<id>` keys, so one loader serves all
//! types, and unique-value lookups ride in the same batches.
//!
//! Keys the process's read cache (`store::cache`) holds, all of them, are answered at once
//! instead: a batch that would make no storage call is not worth its yields (each one polls
//! every sibling of the request again).
//!
//! # Why not the `dataloader` crate
//!
//! The `dataloader` crate (0.18, `cached::Loader`) batches the same way, by yielding, and it was
//! tried here: with a `Cache` of our own for failures and offered items, every batching test
//! held (the Koan page is three calls alone and under 32 clients). But it costs far more under
//! load. Its `load_many` yields its fixed number of times on every call, even when every key is
//! already cached, and it holds its lock across a batch's fetch, so a request's cache hits wait
//! behind the batch in flight. Measured on a 2-core machine, builds without LTO alternated three
//! times on a seeded `serve --memory`, the first two pages of 100 goals (W3@100 of
//! `bench/run.sh`) with `wrk -t2 -c32`: 82–85 req/s on the crate, 134–166 req/s on this loader;
//! with `wrk -t1 -c1`, 47–59 against 53–63 req/s. The full benchmark showed the same at 32
//! connections (W3@100 193 → 125 req/s, W2 297 → 204, `bench/PROFILE.md`). It would also need
//! its errors kept out of its cache by hand, and it has no "insert unless known" for items read
//! from an index.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::OnceCell;

use crate::store::{Item, Map, Store, StoreError};

/// Yields before a batch is fetched. Each yield lets every ready future of the request run once;
/// results of one level wake the next level's resolvers within two passes, so a few more are
/// margin for nested lists.
const YIELDS_BEFORE_FETCH: usize = 6;

type BatchResult = Result<Map<Arc<Item>>, Arc<StoreError>>;

/// Loads items whose `PK` and `SK` equal the key, batched and cached for one request.
pub struct ItemLoader {
    store: Store,
    state: Mutex<LoaderState>,
}

#[derive(Default)]
struct LoaderState {
    /// Finished loads: key → the item, or `None` when it does not exist.
    cache: Map<Option<Arc<Item>>>,
    /// Keys waiting in the open batch or in flight, and the batch that will answer them.
    pending: Map<Arc<Batch>>,
    /// The batch new keys join; taken when it starts fetching.
    open: Option<Arc<Batch>>,
}

#[derive(Default)]
struct Batch {
    keys: Mutex<Vec<String>>,
    result: OnceCell<BatchResult>,
}

impl ItemLoader {
    pub fn new(store: Store) -> ItemLoader {
        ItemLoader {
            store,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, LoaderState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The item stored under `key`, if any.
    pub async fn load(&self, key: &str) -> Result<Option<Arc<Item>>, Arc<StoreError>> {
        let mut items = self.load_many(std::slice::from_ref(&key)).await?;
        Ok(items.pop().flatten())
    }

    /// The items stored under `keys`, in their order. One future for the lot: a level of a
    /// query asks for all of its keys at once instead of one future per key, each yielding
    /// and waking on its own.
    pub async fn load_many<K: AsRef<str>>(
        &self,
        keys: &[K],
    ) -> Result<Vec<Option<Arc<Item>>>, Arc<StoreError>> {
        let mut items = vec![None; keys.len()];
        if self.answer_from_read_cache(keys, &mut items) {
            return Ok(items);
        }
        // The batches that will answer the keys not cached yet, and for each such key its
        // position and its batch's.
        let mut batches: Vec<Arc<Batch>> = Vec::new();
        let mut waiting: Vec<(usize, usize)> = Vec::new();
        {
            let mut state = self.state();
            for (at, key) in keys.iter().enumerate() {
                let key = key.as_ref();
                if let Some(cached) = state.cache.get(key) {
                    items[at] = cached.clone();
                    continue;
                }
                let batch = match state.pending.get(key) {
                    Some(batch) => batch.clone(),
                    None => {
                        let batch = state.open.get_or_insert_with(Arc::default).clone();
                        lock(&batch.keys).push(key.to_owned());
                        state.pending.insert(key.to_owned(), batch.clone());
                        batch
                    }
                };
                let index = match batches.iter().position(|seen| Arc::ptr_eq(seen, &batch)) {
                    Some(index) => index,
                    None => {
                        batches.push(batch);
                        batches.len() - 1
                    }
                };
                waiting.push((at, index));
            }
        }
        if waiting.is_empty() {
            return Ok(items);
        }
        for _ in 0..YIELDS_BEFORE_FETCH {
            tokio::task::yield_now().await;
        }
        let results = futures::future::join_all(
            batches
                .iter()
                .map(|batch| batch.result.get_or_init(|| self.fetch(batch))),
        )
        .await;
        let mut state = self.state();
        let mut failure = None;
        for (at, index) in waiting {
            let key = keys[at].as_ref();
            // Either way the key leaves its batch, so a later load after a failure tries again;
            // unless a newer batch already holds it (after a failure, a later load may have).
            if state
                .pending
                .get(key)
                .is_some_and(|pending| Arc::ptr_eq(pending, &batches[index]))
            {
                state.pending.remove(key);
            }
            match results[index] {
                Ok(found) => {
                    let item = found.get(key).cloned();
                    state.cache.insert(key.to_owned(), item.clone());
                    items[at] = item;
                }
                Err(error) => failure = Some(error.clone()),
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(items),
        }
    }

    /// Answers `keys` at once, without waiting for the level's batch, when the request knows
    /// some and the process's read cache holds all the others (and none is in a batch already):
    /// a batch would make no storage call, so it is not worth its wait. Fills `items` and the
    /// request's cache; `false` (with nothing changed) otherwise.
    fn answer_from_read_cache<K: AsRef<str>>(
        &self,
        keys: &[K],
        items: &mut [Option<Arc<Item>>],
    ) -> bool {
        let Some(cache) = self.store.cache() else {
            return false;
        };
        let mut state = self.state();
        let unknown: Vec<&str> = keys
            .iter()
            .map(AsRef::as_ref)
            .filter(|key| !state.cache.contains_key(*key))
            .collect();
        if unknown.iter().any(|key| state.pending.contains_key(*key)) {
            return false;
        }
        if !unknown.is_empty() {
            let Some(found) = self.store.read_cached(cache, &unknown) else {
                return false;
            };
            for (key, item) in unknown.into_iter().zip(found) {
                state.cache.insert(key.to_owned(), item);
            }
        }
        for (at, key) in keys.iter().enumerate() {
            items[at] = state.cache.get(key.as_ref()).cloned().flatten();
        }
        true
    }

    async fn fetch(&self, batch: &Arc<Batch>) -> BatchResult {
        {
            // Close the batch: later keys start a new one.
            let mut state = self.state();
            if state
                .open
                .as_ref()
                .is_some_and(|open| Arc::ptr_eq(open, batch))
            {
                state.open = None;
            }
        }
        let keys = lock(&batch.keys).clone();
        self.store.batch_get_items(&keys).await.map_err(Arc::new)
    }

    /// Records what a write left under `key`, so reads later in the request see it.
    pub fn prime(&self, key: &str, item: Option<Arc<Item>>) {
        self.state().cache.insert(key.to_owned(), item);
    }

    /// Drops what the request knows of `key` (after a write that changed it), so the next load
    /// reads it again.
    pub fn forget(&self, key: &str) {
        self.state().cache.remove(key);
    }

    /// Caches an item read some other way (a Query of an index), unless the request already
    /// knows the key: what it wrote or read by key is at least as fresh as an index.
    pub fn offer(&self, key: &str, item: Arc<Item>) {
        self.state()
            .cache
            .entry(key.to_owned())
            .or_insert(Some(item));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
