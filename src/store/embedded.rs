//! The embedded store: dynoxide's DynamoDB-compatible HTTP server, started in-process on
//! 127.0.0.1 and reached through the same SDK client as Amazon DynamoDB. `tablegraph store`
//! starts it alone on the address it is given, as the endpoint of several `serve` replicas.
//!
//! # Why its own thread and runtime
//!
//! dynoxide's storage calls are synchronous SQLite work. On the server's runtime they would
//! block request workers; on a thread of their own they only ever wait on each other. Inside
//! `serve` the store binds loopback only, so it is never reachable from outside the machine.
//!
//! Its change stream is indexed and trimmed by us (`stream_upkeep.rs`), so a write costs the
//! same after a million as after the first.

use std::path::PathBuf;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use super::error::StoreError;
use super::stream_upkeep;

/// Where the embedded store keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddedLocation {
    /// A SQLite file `tablegraph.db` in this directory, created if missing.
    Directory(PathBuf),
    /// Nothing persists: for tests and demos.
    Memory,
}

/// A running embedded store. Dropping it stops the server and waits for its thread.
pub struct EmbeddedStore {
    endpoint: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// `tablegraph.lock` of its directory, locked for as long as the store runs: two processes
    /// each running dynoxide on one SQLite file would each keep their own view of its stream
    /// and caches, so a second one is refused. The operating system lets go of the lock when
    /// the process ends, however it ends.
    _lock: Option<std::fs::File>,
}

impl EmbeddedStore {
    /// Starts the store on a free port of 127.0.0.1, for this process's own client.
    pub fn start(location: &EmbeddedLocation) -> Result<EmbeddedStore, StoreError> {
        EmbeddedStore::start_on(location, (std::net::Ipv4Addr::LOCALHOST, 0).into())
    }

    /// Starts the store listening on `address`, for other processes (`tablegraph store`).
    pub fn start_on(
        location: &EmbeddedLocation,
        address: std::net::SocketAddr,
    ) -> Result<EmbeddedStore, StoreError> {
        let unavailable = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::Unavailable(format!("embedded store: {what}: {e}"))
        };
        let opening = |e: &dyn std::fmt::Display| unavailable("opening the database", e);
        let mut lock = None;
        let (database, file) = match location {
            EmbeddedLocation::Memory => {
                let database = dynoxide::Database::memory().map_err(|e| opening(&e))?;
                stream_upkeep::index_memory(&database, &std::env::temp_dir())
                    .map_err(|e| opening(&e))?;
                (database, None)
            }
            EmbeddedLocation::Directory(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| unavailable(&format!("creating {}", dir.display()), &e))?;
                lock = Some(lock_directory(dir)?);
                let file = dir.join("tablegraph.db");
                let database =
                    dynoxide::Database::new(&file.to_string_lossy()).map_err(|e| opening(&e))?;
                stream_upkeep::index_file(&file).map_err(|e| opening(&e))?;
                (database, Some(file))
            }
        };

        let listener = std::net::TcpListener::bind(address)
            .map_err(|e| unavailable(&format!("binding {address}"), &e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| unavailable("configuring the listener", &e))?;
        let address = listener
            .local_addr()
            .map_err(|e| unavailable("reading the listener address", &e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("embedded-store")
            .enable_all()
            .build()
            .map_err(|e| unavailable("starting its runtime", &e))?;

        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("embedded-store".into())
            .spawn(move || {
                runtime.block_on(async move {
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
                    if let Some(file) = file {
                        tokio::spawn(trim_stream_records(file));
                    }
                    if let Err(e) =
                        dynoxide::server::serve_with_shutdown(listener, database, shutdown).await
                    {
                        tracing::error!(error = %e, "embedded store stopped");
                    }
                });
            })
            .map_err(|e| unavailable("starting its thread", &e))?;
        tracing::info!(%address, ?location, "embedded store started");
        Ok(EmbeddedStore {
            endpoint: format!("http://{address}"),
            stop: Some(stop),
            thread: Some(thread),
            _lock: lock,
        })
    }

    /// The URL the SDK client uses.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
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
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
