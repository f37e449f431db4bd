//! Per-request batching: every read by key in one request goes through one [`ItemLoader`], so a
//! level of a query costs one BatchGetItem however many parents asked.
//!
//! Invariant: a key is fetched at most once per request (later loads are served from the
//! request's cache), and a batch is split into BatchGetItem calls of at most 100 keys, sent
//! together.
//!
//! The batching and the cache are the `dataloader` crate's cached [`Loader`]: the first load of
//! a batch yields to the executor a fixed number of times before it fetches, instead of waiting
//! on a timer. All resolvers of one level run as futures of the same request task, so each
//! yield lets every sibling run up to its own load; the batch then holds the whole level
//! regardless of timing or of other requests (a timer would split a level into several calls
//! whenever the machine is busy). Nodes of every type share `NODE#<id>` keys, so one loader
//! serves all types, and unique-value lookups ride in the same batches.
//!
//! What this module adds to the crate's loader: a failed batch is an answer for each of its
//! keys (the crate's batch function cannot fail) that is dropped from the cache once read, so a
//! later load tries again; and items read some other way (a Query of an index) are *offered*,
//! never replacing what the request wrote or read by key.

use std::collections::HashMap;
use std::sync::Arc;

use dataloader::BatchFn;
use dataloader::cached::{Cache, Loader};

use crate::store::{Item, Store, StoreError};

/// Yields before a batch is fetched. Each yield lets every ready future of the request run once;
/// results of one level wake the next level's resolvers within two passes, so a few more are
/// margin for nested lists.
const YIELDS_BEFORE_FETCH: usize = 6;

/// What the request knows of one key.
#[derive(Clone)]
enum Known {
    /// Read by key or written by this request: the item, or `None` when there is none.
    Item(Option<Arc<Item>>),
    /// Read some other way; replaced by anything read by key or written.
    Offered(Arc<Item>),
    /// The batch that should have read it failed.
    Failed(Arc<StoreError>),
}

/// Loads items whose `PK` and `SK` equal the key, batched and cached for one request.
pub struct ItemLoader {
    loader: Loader<String, Known, ReadItems, KnownItems>,
}

/// The batch function: one BatchGetItem per 100 keys, all sent at once.
struct ReadItems {
    store: Store,
}

impl BatchFn<String, Known> for ReadItems {
    async fn load(&mut self, keys: &[String]) -> HashMap<String, Known> {
        match self.store.batch_get_items(keys).await {
            Ok(mut found) => keys
                .iter()
                .map(|key| {
                    let item = found.remove(key).map(Arc::new);
                    (key.clone(), Known::Item(item))
                })
                .collect(),
            Err(error) => {
                let error = Arc::new(error);
                keys.iter()
                    .map(|key| (key.clone(), Known::Failed(error.clone())))
                    .collect()
            }
        }
    }
}

/// The request's cache, where an offered item never replaces a known one.
#[derive(Default)]
struct KnownItems(HashMap<String, Known>);

impl Cache for KnownItems {
    type Key = String;
    type Val = Known;

    fn get(&mut self, key: &String) -> Option<&Known> {
        self.0.get(key)
    }

    fn insert(&mut self, key: String, known: Known) {
        if matches!(known, Known::Offered(_)) && self.0.contains_key(&key) {
            return;
        }
        self.0.insert(key, known);
    }

    fn remove(&mut self, key: &String) -> Option<Known> {
        self.0.remove(key)
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

impl ItemLoader {
    pub fn new(store: Store) -> ItemLoader {
        let loader = Loader::with_cache(ReadItems { store }, KnownItems::default())
            .with_yield_count(YIELDS_BEFORE_FETCH)
            // A level is one batch however large: the store splits it into BatchGetItem calls
            // and sends them together, where the crate's limit would fetch each part in turn.
            .with_max_batch_size(usize::MAX);
        ItemLoader { loader }
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
        let wanted = keys.iter().map(|key| key.as_ref().to_owned()).collect();
        let known = self
            .loader
            .try_load_many(wanted)
            .await
            // The batch function answers every key it is given, so the crate's "could not
            // look up" cannot happen; should it, the request fails rather than guess.
            .map_err(|error| Arc::new(StoreError::Other(error.to_string())))?;
        let mut items = Vec::with_capacity(keys.len());
        let mut failure = None;
        for key in keys {
            match known.get(key.as_ref()) {
                Some(Known::Item(item)) => items.push(item.clone()),
                Some(Known::Offered(item)) => items.push(Some(item.clone())),
                Some(Known::Failed(error)) => failure = Some(error.clone()),
                None => failure = Some(Arc::new(StoreError::Other("key not loaded".into()))),
            }
        }
        match failure {
            Some(error) => {
                // A failure is not remembered: a later load of these keys tries again.
                for (key, answer) in known {
                    if matches!(answer, Known::Failed(_)) {
                        self.loader.clear(key).await;
                    }
                }
                Err(error)
            }
            None => Ok(items),
        }
    }

    /// Records what a write left under `key`, so reads later in the request see it.
    pub async fn prime(&self, key: &str, item: Option<Arc<Item>>) {
        self.loader.prime(key.to_owned(), Known::Item(item)).await;
    }

    /// Drops what the request knows of `key` (after a write that changed it), so the next load
    /// reads it again.
    pub async fn forget(&self, key: &str) {
        self.loader.clear(key.to_owned()).await;
    }

    /// Caches an item read some other way (a Query of an index), unless the request already
    /// knows the key: what it wrote or read by key is at least as fresh as an index.
    pub async fn offer(&self, key: &str, item: Arc<Item>) {
        self.loader
            .prime(key.to_owned(), Known::Offered(item))
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str) -> Arc<Item> {
        let mut item = Item::new();
        item.insert("name".into(), crate::store::AttrValue::S(name.into()));
        Arc::new(item)
    }

    fn name(known: Option<&Known>) -> Option<String> {
        let item = match known? {
            Known::Item(item) => item.clone()?,
            Known::Offered(item) => item.clone(),
            Known::Failed(_) => return Some("failed".into()),
        };
        Some(item.get("name")?.as_str()?.to_owned())
    }

    #[test]
    fn an_offered_item_never_replaces_what_the_request_read_or_wrote() {
        let mut cache = KnownItems::default();
        cache.insert("NODE#a".into(), Known::Item(Some(item("written"))));
        cache.insert("NODE#a".into(), Known::Offered(item("from an index")));
        assert_eq!(
            name(cache.get(&"NODE#a".into())).as_deref(),
            Some("written")
        );

        cache.insert("NODE#b".into(), Known::Item(None));
        cache.insert("NODE#b".into(), Known::Offered(item("from an index")));
        assert!(matches!(
            cache.get(&"NODE#b".into()),
            Some(Known::Item(None))
        ));
    }

    #[test]
    fn a_read_by_key_replaces_an_offered_item() {
        let mut cache = KnownItems::default();
        cache.insert("NODE#a".into(), Known::Offered(item("from an index")));
        assert_eq!(
            name(cache.get(&"NODE#a".into())).as_deref(),
            Some("from an index")
        );
        cache.insert("NODE#a".into(), Known::Item(Some(item("read by key"))));
        assert_eq!(
            name(cache.get(&"NODE#a".into())).as_deref(),
            Some("read by key")
        );
    }
}
