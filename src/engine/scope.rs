//! What one request's operations share: a store handle that records its calls under the
//! request's budget, the request's [`ItemLoader`], what its filtered pages read, and the
//! changes its writes committed.
//!
//! Invariant: a scope lives for one request; nothing in it is shared between requests.

use std::sync::{Arc, Mutex, MutexGuard};

use super::rules::{Access, Identity, Rules};
use crate::auth::Caller;
use crate::keys::CursorKeys;
use crate::loaders::ItemLoader;
use crate::model::Operation;
use crate::store::{CallLog, Store};

pub struct RequestScope {
    pub store: Store,
    pub loader: ItemLoader,
    pub calls: Arc<CallLog>,
    /// The keys the request's cursors are signed and checked with.
    pub cursors: Arc<CursorKeys>,
    /// Items a filtered page may evaluate (`--max-filter-read-items`).
    pub filter_budget: usize,
    /// Who the request acts for.
    pub identity: Identity,
    /// The model's `@auth` rules.
    pub rules: Arc<Rules>,
    /// What each filtered page of the request read, named by where the front end asked for
    /// it.
    filter_reads: Mutex<Vec<(String, FilterRead)>>,
}

/// What request scopes are made from: the store and the budget of calls of one request. A
/// subscription keeps one and makes a scope for each event it resolves.
#[derive(Clone)]
pub struct ScopeSource {
    store: Store,
    max_storage_calls: usize,
    cursors: Arc<CursorKeys>,
    filter_budget: usize,
    rules: Arc<Rules>,
}

/// What a filtered page read: items evaluated, items that met the filter, and where it stopped
/// when the budget ran out before the page was settled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterRead {
    pub evaluated: usize,
    pub matched: usize,
    /// The sort key the page ends at: the next page starts past it.
    pub budget_stop: Option<String>,
    /// The caller's `@auth` rules filtered the page too: the counts include nodes the caller
    /// may not read, so they are not told (`extensions.filters` leaves them out).
    pub rules: bool,
}

/// Items a filtered page evaluates at most, unless configured otherwise.
pub const DEFAULT_FILTER_BUDGET: usize = 1000;

/// What every request's scope is made with: `serve`'s limits on a request's reads and the keys
/// its cursors are signed with, handed as they are from the command line to [`ScopeSource`].
#[derive(Debug, Clone)]
pub struct ScopeSettings {
    /// Storage calls one request may make; past it, fields answer `BadUserInput`
    /// (`--max-storage-calls`).
    pub max_storage_calls: usize,
    /// Items a filtered page may evaluate before it stops short (`--max-filter-read-items`).
    pub filter_budget: usize,
    /// The keys Relay cursors are signed with (`--cursor-key`); `None`: this process's own.
    pub cursor_keys: Option<Arc<CursorKeys>>,
}

impl Default for ScopeSettings {
    fn default() -> Self {
        ScopeSettings {
            max_storage_calls: 500,
            filter_budget: DEFAULT_FILTER_BUDGET,
            cursor_keys: None,
        }
    }
}

impl ScopeSource {
    /// Scopes whose cursors are signed with this process's own keys.
    pub fn new(store: Store, max_storage_calls: usize) -> ScopeSource {
        ScopeSource {
            store,
            max_storage_calls,
            cursors: CursorKeys::of_this_process(),
            filter_budget: DEFAULT_FILTER_BUDGET,
            rules: Arc::default(),
        }
    }

    /// Scopes made with `settings`.
    pub fn configured(store: Store, settings: &ScopeSettings) -> ScopeSource {
        let source = ScopeSource::new(store, settings.max_storage_calls)
            .with_filter_budget(settings.filter_budget);
        match &settings.cursor_keys {
            Some(keys) => source.with_cursor_keys(keys.clone()),
            None => source,
        }
    }

    /// The same, applying `rules` to every caller.
    pub fn with_rules(mut self, rules: Arc<Rules>) -> ScopeSource {
        self.rules = rules;
        self
    }

    /// The same, with filtered pages evaluating at most `items` items each.
    pub fn with_filter_budget(mut self, items: usize) -> ScopeSource {
        self.filter_budget = items.max(1);
        self
    }

    /// The same, with cursors signed with `keys` (shared by replicas).
    pub fn with_cursor_keys(mut self, keys: Arc<CursorKeys>) -> ScopeSource {
        self.cursors = keys;
        self
    }

    /// What `caller` may read of nodes that may be of any of `types`.
    pub fn read_access(&self, caller: Option<&Caller>, types: &[&str]) -> Access {
        let identity = caller.map_or(Identity::Anonymous, Identity::of);
        super::rules::read_access(&self.rules, &identity, types)
    }

    /// Whether `rules` (AppSync's `@aws_*` on a field) admit `caller`; no rules admit everyone
    /// the API let in.
    pub fn admits_caller(&self, caller: Option<&Caller>, rules: &[crate::model::AuthRule]) -> bool {
        let identity = caller.map_or(Identity::Anonymous, Identity::of);
        self.rules.admit_caller(&identity, rules)
    }

    /// Refuses a filter of `caller`'s on nodes of `types` that tests a field it may not read.
    pub fn check_filter(
        &self,
        caller: Option<&Caller>,
        types: &[&str],
        filter: &crate::store::Filter,
    ) -> Result<(), super::error::EngineError> {
        let identity = caller.map_or(Identity::Anonymous, Identity::of);
        super::rules::check_filter_fields(&self.rules, &identity, types, filter)
    }

    /// A fresh scope for `caller` (an anonymous one when `None`): its own loader, its own
    /// budget.
    pub fn scope(&self, caller: Option<&Caller>) -> RequestScope {
        let mut scope =
            RequestScope::signing(&self.store, self.max_storage_calls, self.cursors.clone());
        scope.filter_budget = self.filter_budget;
        scope.rules = self.rules.clone();
        scope.identity = caller.map_or(Identity::Anonymous, Identity::of);
        scope
    }
}

impl RequestScope {
    /// A scope of an offline tool (no rule binds it), whose cursors are signed with this
    /// process's own keys.
    pub fn new(store: &Store, max_storage_calls: usize) -> RequestScope {
        RequestScope::signing(store, max_storage_calls, CursorKeys::of_this_process())
    }

    /// A scope of an offline tool's writes (a migration's) over `store` as it is: its calls are
    /// recorded where `store` records them, under no budget of the scope's own.
    pub fn of_tool(store: &Store) -> RequestScope {
        RequestScope::over(
            store.clone(),
            Arc::new(CallLog::with_budget(usize::MAX)),
            CursorKeys::of_this_process(),
        )
    }

    fn signing(store: &Store, max_storage_calls: usize, cursors: Arc<CursorKeys>) -> RequestScope {
        let calls = Arc::new(CallLog::with_budget(max_storage_calls));
        RequestScope::over(store.recording(calls.clone()), calls, cursors)
    }

    /// A scope whose reads and writes go to `store` as it is; `calls` is what it reports.
    fn over(store: Store, calls: Arc<CallLog>, cursors: Arc<CursorKeys>) -> RequestScope {
        RequestScope {
            loader: ItemLoader::new(store.clone()),
            store,
            calls,
            cursors,
            filter_budget: DEFAULT_FILTER_BUDGET,
            identity: Identity::Tool,
            rules: Arc::default(),
            filter_reads: Mutex::default(),
        }
    }

    /// What the request's caller may do to nodes of `type_name` by `operation`.
    pub fn access(&self, type_name: &str, operation: Operation) -> Access {
        self.rules.access(&self.identity, type_name, operation)
    }

    /// What the caller may read of nodes that may be of any of `types`.
    pub fn read_access(&self, types: &[&str]) -> Access {
        super::rules::read_access(&self.rules, &self.identity, types)
    }

    /// Whether the caller may read `field` of `item`, a node of `type_name`: a field with
    /// rules of its own is read by those the rules allow.
    pub fn may_read_field(&self, type_name: &str, field: &str, item: &crate::store::Item) -> bool {
        !self.rules.field_has_rules(type_name, field)
            || super::rules::admits(
                &self
                    .rules
                    .field_access(&self.identity, type_name, field, Operation::Read),
                item,
            )
    }

    /// Notes what a filtered page read, under `at` (where the request asked for it).
    pub fn note_filter_read(&self, at: String, read: FilterRead) {
        lock(&self.filter_reads).push((at, read));
    }

    /// What the request's filtered pages read, in the order they were noted.
    pub fn filter_reads(&self) -> Vec<(String, FilterRead)> {
        lock(&self.filter_reads).clone()
    }
}

/// A poisoned lock only means another resolver of the request panicked; the map is still whole.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
