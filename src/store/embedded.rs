//! The embedded store: dynoxide's DynamoDB-compatible database in this process, reached
//! through the same SDK client as Amazon DynamoDB, whose HTTP client hands each request to
//! dynoxide's operations without a socket (`in_process.rs`). `tablegraph store` starts it with
//! dynoxide's HTTP server on the address it is given, as the endpoint of several `serve`
//! replicas.
//!
//! # Why its own thread and runtime
//!
//! dynoxide's storage calls are synchronous SQLite work. On the server's runtime they would
//! block request workers; on a runtime of their own they only ever wait on each other. Inside
//! `serve` nothing listens, so the store is never reachable from outside the process.
//!
//! Its change stream is indexed and trimmed by us (`stream_upkeep.rs`), so a write costs the
//! same after a million as after the first.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use super::error::StoreError;
use super::in_process;
use super::stream_upkeep;

/// The SQLite file of a data directory.
const DATABASE_FILE: &str = "tablegraph.db";

/// Where the embedded store keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddedLocation {
    /// A SQLite file `tablegraph.db` in this directory, created if missing.
    Directory(PathBuf),
    /// Nothing persists: for tests and demos.
    Memory,
}

impl EmbeddedLocation {
    /// Whether a store is there already: a directory that holds a store's database (memory
    /// always starts empty, and is always there).
    pub fn holds_a_store(&self) -> bool {
        match self {
            EmbeddedLocation::Directory(dir) => dir.join(DATABASE_FILE).is_file(),
            EmbeddedLocation::Memory => true,
        }
    }
}

/// A running embedded store. Dropping it stops the store and waits for its thread.
pub struct EmbeddedStore {
    /// Where its HTTP server listens, when it has one (`tablegraph store`).
    endpoint: Option<String>,
    /// The database this process's own SDK client hands its requests to (`in_process.rs`).
    database: in_process::Shared,
    runtime: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// `tablegraph.lock` of its directory, locked for as long as the store runs: two processes
    /// each running dynoxide on one SQLite file would each keep their own view of its stream
    /// and caches, so a second one is refused. The operating system lets go of the lock when
    /// the process ends, however it ends.
    _lock: Option<std::fs::File>,
}

impl EmbeddedStore {
    /// Starts the store for this process's own client ([`EmbeddedStore::http_client`]), with
    /// no listener.
    pub fn start(location: &EmbeddedLocation) -> Result<EmbeddedStore, StoreError> {
        EmbeddedStore::launch(location, None)
    }

    /// Starts the store with dynoxide's HTTP server listening on `address`, for other
    /// processes (`tablegraph store`).
    pub fn start_on(
        location: &EmbeddedLocation,
        address: std::net::SocketAddr,
    ) -> Result<EmbeddedStore, StoreError> {
        EmbeddedStore::launch(location, Some(address))
    }

    fn launch(
        location: &EmbeddedLocation,
        address: Option<std::net::SocketAddr>,
    ) -> Result<EmbeddedStore, StoreError> {
        let unavailable = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::Unavailable(format!("embedded store: {what}: {e}"))
        };
        let opening = |e: &dyn std::fmt::Display| unavailable("opening the database", e);
        let mut lock = None;
        let (connections, file) = match location {
            EmbeddedLocation::Memory => {
                let connections = in_process::Connections::memory().map_err(|e| opening(&e))?;
                stream_upkeep::index(connections.location()).map_err(|e| opening(&e))?;
                (connections, None)
            }
            EmbeddedLocation::Directory(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| unavailable(&format!("creating {}", dir.display()), &e))?;
                lock = Some(lock_directory(dir)?);
                let file = dir.join(DATABASE_FILE);
                let connections = in_process::Connections::file(&file.to_string_lossy())
                    .map_err(|e| opening(&e))?;
                stream_upkeep::index(connections.location()).map_err(|e| opening(&e))?;
                (connections, Some(file))
            }
        };

        // dynoxide's HTTP server, for `tablegraph store` only: the listener and its URL.
        let (listener, endpoint) = match address {
            None => (None, None),
            Some(address) => {
                let listener = std::net::TcpListener::bind(address)
                    .map_err(|e| unavailable(&format!("binding {address}"), &e))?;
                listener
                    .set_nonblocking(true)
                    .map_err(|e| unavailable("configuring the listener", &e))?;
                let bound = listener
                    .local_addr()
                    .map_err(|e| unavailable("reading the listener address", &e))?;
                (Some(listener), Some(format!("http://{bound}")))
            }
        };
        // One worker per core: concurrent calls read their requests and write their answers
        // as JSON (and, with a listener, do their HTTP work) side by side, and reads run side
        // by side on readers (`in_process.rs`); dynoxide holds its lock only while each
        // operation on its own connection runs.
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("embedded-store")
            .enable_all()
            .build()
            .map_err(|e| unavailable("starting its runtime", &e))?;
        let handle = runtime.handle().clone();

        let (stop, stopped) = oneshot::channel::<()>();
        let served = connections.writer().clone();
        let thread = std::thread::Builder::new()
            .name("embedded-store".into())
            .spawn(move || {
                runtime.block_on(async move {
                    if let Some(file) = file {
                        tokio::spawn(trim_stream_records(file));
                    }
                    let Some(listener) = listener else {
                        let _ = stopped.await;
                        return;
                    };
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(e) => {
                            tracing::error!(error = %e, "embedded store could not listen");
                            return;
                        }
                    };
                    let shutdown = async move {
                        let _ = stopped.await;
                    };
                    if let Err(e) =
                        dynoxide::server::serve_with_shutdown(listener, served, shutdown).await
                    {
                        tracing::error!(error = %e, "embedded store stopped");
                    }
                });
            })
            .map_err(|e| unavailable("starting its thread", &e))?;
        tracing::info!(address = ?endpoint, ?location, "embedded store started");
        Ok(EmbeddedStore {
            endpoint,
            database: Arc::new(RwLock::new(Some(Arc::new(connections)))),
            runtime: handle,
            stop: Some(stop),
            thread: Some(thread),
            _lock: lock,
        })
    }

    /// The URL of its HTTP server, when it was started with one.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// The SDK HTTP client that hands requests to this store in-process (`in_process.rs`).
    /// Once the store is dropped, its calls fail as a stopped server's would.
    pub(super) fn http_client(&self) -> aws_smithy_runtime_api::client::http::SharedHttpClient {
        in_process::client(self.database.clone(), self.runtime.clone())
    }
}

/// Takes the lock of the data directory `dir`, or says which directory another process holds.
fn lock_directory(dir: &std::path::Path) -> Result<std::fs::File, StoreError> {
    let path = dir.join("tablegraph.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| {
            StoreError::Unavailable(format!("embedded store: opening {}: {e}", path.display()))
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(StoreError::DataDirInUse(dir.display().to_string()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::Unavailable(format!(
            "embedded store: locking {}: {e}",
            path.display()
        ))),
    }
}

/// Deletes the stream records past their retention from `file` now and every
/// [`stream_upkeep::TRIM_EVERY`], for as long as the store's runtime runs.
async fn trim_stream_records(file: PathBuf) {
    let mut every = tokio::time::interval(stream_upkeep::TRIM_EVERY);
    loop {
        every.tick().await;
        let file = file.clone();
        let cutoff = stream_upkeep::cutoff(stream_upkeep::RETENTION);
        match tokio::task::spawn_blocking(move || stream_upkeep::trim_file(&file, cutoff)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(removed)) => {
                tracing::info!(removed, "stream records past their retention deleted")
            }
            Ok(Err(error)) => tracing::warn!(%error, "stream records could not be trimmed"),
            Err(error) => tracing::warn!(%error, "stream records could not be trimmed"),
        }
    }
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        // Calls already running keep their handle on the database until they finish; no new
        // one starts.
        self.database
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
