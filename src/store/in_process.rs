//! The SDK's HTTP client for the embedded store of this process: each request the SDK builds
//! (serialized as DynamoDB's JSON, not signed: [`UNSIGNED`]) is handed to dynoxide's
//! operations directly, and the answer comes back as the HTTP response DynamoDB would send,
//! for the SDK to parse. So the SDK's path (serialization, error parsing, the store's
//! retries) runs as it does against DynamoDB, but for the signature, and without a socket, an
//! HTTP server or a second HTTP parse in between.
//!
//! # Why not dynoxide's HTTP server on loopback
//!
//! It was the path until measured: a profile of the Koan page (W2, 1 connection, `perf record`
//! on `serve --memory`) spent ≈ 7 % of the process's CPU in the kernel (loopback TCP, the
//! wake-ups of two runtimes) and ≈ 4 % in hyper on both sides, and dynoxide's server parses
//! every body twice (once to a `serde_json::Value` to check it is JSON, once into the
//! request), makes two UUIDs and a CRC32 per answer and copies the answer's body. Here a call
//! is one parse of the request and one serialization of the answer (`bench/PROFILE.md`).
//! dynoxide's router is private; its operations, request and answer types and error bodies
//! are its public Rust API, which is what this calls. Its HTTP server still serves
//! `tablegraph store`, and the tests of `--dynamodb-endpoint` go through it.
//!
//! The operations run on the embedded store's own runtime (threads named `embedded-store`):
//! they are synchronous SQLite work and must not block the server's request workers.
//!
//! # Why readers beside dynoxide's connection
//!
//! dynoxide serializes every operation on one SQLite connection behind one lock. Measured on
//! 16 cores at 392e847 (`bench/PROFILE.md`), that lock capped the Koan page at 64 connections
//! at 2.7 × its 1-connection rate, about three cores busy of sixteen, tablegraph and the
//! hand-written peer alike. So [`Connections`] keeps dynoxide's database for every write and
//! every other call, and answers `GetItem`, `BatchGetItem`, `Query` and `Scan` on reader
//! connections to the same SQLite database, opened as dynoxide databases of their own (its
//! public API; no change in dynoxide), one per call running at that moment. SQLite keeps them
//! consistent: a read that begins after a write has finished sees it, as DynamoDB's strongly
//! consistent reads do. A read is not one snapshot, though: `BatchGetItem` reads its keys one
//! after another and may see a write that finishes meanwhile for some of them and not others,
//! as DynamoDB's may (the single lock used to rule that out; nothing here relies on it).
//! `TransactGetItems`, which must see one moment for all its items, stays on the writer.
//!
//! - In memory the database is SQLite's `memdb` (`file:/name?vfs=memdb`): shared by the
//!   connections of this process, gone with the last of them, at most 1 GiB
//!   (`SQLITE_MEMDB_DEFAULT_MAXSIZE`; a write past it fails), and readers open it read-only.
//!   Its locking is SQLite's rollback journal's: reads run side by side, but a write cannot
//!   commit while a read is in progress, a read cannot begin while a write is, and SQLite's busy
//!   handler waits for the other by sleeping, 1 ms at first and longer on each try (810 to
//!   1,356 sleeps in 8 s of reads from 16 connections beside writes from 2, counted with
//!   `strace`, `bench/PROFILE.md`). So [`Connections`] keeps them apart itself, with a lock
//!   (`gate`) that each read holds shared and every other call on the writer exclusively, for
//!   the operation only (not while JSON is read or written): a write waits for the reads in
//!   progress, and a read for the write in progress, each woken as soon as the other ends,
//!   and SQLite never meets a lock taken. As before the readers, when every call queued on
//!   dynoxide's lock, a wait has no time limit.
//! - In a file (write-ahead log) readers open it read-only too, and reads and the write run
//!   side by side.
//!
//! A reader keeps dynoxide's cache of the tables' definitions, so after a call that changes a
//! table (`CreateTable`, `UpdateTable`, `DeleteTable`, `UpdateTimeToLive`) the idle readers
//! are closed and new ones opened as needed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use aws_smithy_runtime_api::client::auth::AuthSchemeId;
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpClient, SharedHttpConnector, http_client_fn,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use dynoxide::{Database, DynoxideError};

/// The SDK's scheme for a request that is not signed (smithy's `noAuth`), preferred by the
/// clients of this store (`allow_no_auth().auth_scheme_preference([UNSIGNED])`). A request
/// handed over in this process meets no network and no one who verifies a signature (dynoxide
/// verifies none), and SigV4 (a canonical request, SHA-256 over it and the body, an HMAC chain)
/// was a quarter of the instructions of a one-item read: 172,000 of 707,000 per W1 request
/// (`bench/PROFILE.md`). A store across a network, dynoxide's HTTP server included, is signed.
pub(super) const UNSIGNED: AuthSchemeId = AuthSchemeId::new("noAuth");

/// The connections the client hands its requests to; `None` once the embedded store stopped.
pub(super) type Shared = Arc<RwLock<Option<Arc<Connections>>>>;

/// The embedded store's database: dynoxide's own connection, which every write and every call
/// other than a plain read goes through, and the readers.
pub(super) struct Connections {
    writer: Database,
    /// In memory only: held shared by each read (on a reader, or on the writer when no reader
    /// opens) and exclusively by every other call on the writer, so that SQLite never finds a
    /// lock taken (the module doc says why). On Linux `std`'s lock (futex-based since Rust
    /// 1.62) lets no new read in while a write waits, and wakes a waiting write before waiting
    /// reads: a stream of reads cannot hold writes off, while a stream of writes, one at a time
    /// on the writer, holds reads off between them. `std` leaves that policy to each platform.
    /// So a read must never take it again inside a read: with a write waiting, it would wait
    /// for itself.
    gate: Option<RwLock<()>>,
    /// Where the writer's database is: a path, or a SQLite URI in memory.
    at: String,
    readers: Readers,
}

struct Readers {
    /// Where a reader opens: the writer's database, read-only in memory.
    at: String,
    /// Readers open and not in use, each with the [`Readers::tables`] it was opened under.
    idle: Mutex<Vec<(u64, Database)>>,
    /// Counts the calls that changed a table; a reader opened before the last one is closed.
    tables: AtomicU64,
    /// Whether the last reader this tried to open could not be: its warning is logged once,
    /// when opening starts to fail, not for every read that then runs on the writer (where
    /// the cause, file descriptors run out for one, would log as fast as reads arrive).
    failing: AtomicBool,
}

/// Names each in-memory database of this process.
static MEMORY_DATABASES: AtomicU64 = AtomicU64::new(0);

impl Connections {
    /// A new, empty database in memory, with readers.
    pub(super) fn memory() -> Result<Connections, DynoxideError> {
        let name = format!(
            "/tablegraph-{}-{}",
            std::process::id(),
            MEMORY_DATABASES.fetch_add(1, Ordering::Relaxed)
        );
        let at = format!("file:{name}?vfs=memdb");
        Ok(Connections::with_readers(
            Database::new(&at)?,
            at,
            format!("file:{name}?vfs=memdb&mode=ro"),
            Some(RwLock::new(())),
        ))
    }

    /// The database in the file at `path` (created if missing), with readers.
    pub(super) fn file(path: &str) -> Result<Connections, DynoxideError> {
        // The readers open it read-only: SQLite's URI, with the characters it reads as
        // delimiters escaped.
        let mut readers_at = String::from("file:");
        for c in path.chars() {
            match c {
                '%' => readers_at.push_str("%25"),
                '?' => readers_at.push_str("%3f"),
                '#' => readers_at.push_str("%23"),
                c => readers_at.push(c),
            }
        }
        readers_at.push_str("?mode=ro");
        Ok(Connections::with_readers(
            Database::new(path)?,
            path.to_owned(),
            readers_at,
            None,
        ))
    }

    fn with_readers(
        writer: Database,
        at: String,
        readers_at: String,
        gate: Option<RwLock<()>>,
    ) -> Connections {
        Connections {
            writer,
            gate,
            at,
            readers: Readers {
                at: readers_at,
                idle: Mutex::new(Vec::new()),
                tables: AtomicU64::new(0),
                failing: AtomicBool::new(false),
            },
        }
    }

    /// dynoxide's own connection: every write goes through it. A restore through it
    /// (`restore_from`) belongs before the first read (readers opened before it keep the old
    /// tables' definitions), and in memory from a snapshot out of write-ahead-log mode
    /// (`memdb` cannot open one). A call made on it directly passes by the gate, so nothing of
    /// this module may run beside it: its users are dynoxide's HTTP server in `tablegraph
    /// store` (`embedded.rs`), whose process makes no call through this module, and B2's
    /// restore (`bench/baselines`), before its first call.
    pub(super) fn writer(&self) -> &Database {
        &self.writer
    }

    /// Where another connection opens this database: a path, or a SQLite URI in memory.
    pub(super) fn location(&self) -> &str {
        &self.at
    }

    /// Runs the read `call` on a reader that nothing else is using: an idle one, or one opened
    /// now. A reader that cannot be opened leaves the call to the writer.
    fn read<T>(&self, call: impl FnOnce(&Database) -> T) -> T {
        let _shared = self
            .gate
            .as_ref()
            .map(|gate| gate.read().unwrap_or_else(PoisonError::into_inner));
        let readers = &self.readers;
        let tables = readers.tables.load(Ordering::Acquire);
        // Taken before the match: a guard in its scrutinee would hold the idle list through
        // the arms, opening readers and reading on the writer one at a time.
        let idle = readers.idle().pop();
        let reader = match idle {
            Some((opened, reader)) if opened == tables => reader,
            _ => match Database::new(&readers.at) {
                Ok(reader) => {
                    if readers.failing.swap(false, Ordering::Relaxed) {
                        tracing::info!("embedded store: readers open again");
                    }
                    reader
                }
                Err(error) => {
                    if !readers.failing.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            %error,
                            "embedded store: a reader could not open; reads run on the writer \
                             until one does"
                        );
                    }
                    return call(&self.writer);
                }
            },
        };
        let answer = call(&reader);
        if readers.tables.load(Ordering::Acquire) == tables {
            readers.idle().push((tables, reader));
        }
        answer
    }

    /// Runs `call` on the writer; in memory, with no read in progress beside it.
    fn on_writer<T>(&self, call: impl FnOnce(&Database) -> T) -> T {
        let _exclusive = self
            .gate
            .as_ref()
            .map(|gate| gate.write().unwrap_or_else(PoisonError::into_inner));
        call(&self.writer)
    }

    /// Runs `call`, which may change a table, on the writer, then retires the idle readers,
    /// whose cached table definitions may be out of date; in memory before any read begins.
    fn changing_tables<T>(&self, call: impl FnOnce(&Database) -> T) -> T {
        self.on_writer(|writer| {
            let answer = call(writer);
            self.readers.tables.fetch_add(1, Ordering::AcqRel);
            self.readers.idle().clear();
            answer
        })
    }
}

impl Readers {
    /// The idle readers, to take one from or give one back.
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Database)>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An SDK HTTP client whose requests run on `runtime` against `database`'s connections.
pub(super) fn client(database: Shared, runtime: tokio::runtime::Handle) -> SharedHttpClient {
    let connector = SharedHttpConnector::new(InProcess { database, runtime });
    http_client_fn(move |_settings, _components| connector.clone())
}

struct InProcess {
    database: Shared,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InProcess")
    }
}

impl HttpConnector for InProcess {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        // `DynamoDB_20120810.Query`, `DynamoDBStreams_20120810.GetRecords`: the operation.
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|target| target.rsplit_once('.'))
            .map(|(_, operation)| operation.to_owned())
            .unwrap_or_default();
        let body = request.body().bytes().map(<[u8]>::to_vec);
        let database = self
            .database
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let runtime = self.runtime.clone();
        HttpConnectorFuture::new(async move {
            let Some(database) = database else {
                return Err(ConnectorError::io("the embedded store has stopped".into()));
            };
            // The SDK's DynamoDB requests are bodies in memory, never streams.
            let Some(body) = body else {
                return Err(ConnectorError::user("a streamed request body".into()));
            };
            let (status, json) = runtime
                .spawn(async move { answer(&database, &operation, &body) })
                .await
                .map_err(|e| ConnectorError::io(e.into()))?;
            let status =
                StatusCode::try_from(status).map_err(|e| ConnectorError::other(e.into(), None))?;
            let mut response = HttpResponse::new(status, SdkBody::from(json));
            response
                .headers_mut()
                .insert("content-type", "application/x-amz-json-1.0");
            Ok(response)
        })
    }
}

/// The HTTP status and JSON body DynamoDB answers `operation` with.
fn answer(connections: &Connections, operation: &str, body: &[u8]) -> (u16, String) {
    match run(connections, operation, body) {
        Ok(json) => (200, json),
        Err(error) => (error.status_code(), error.to_json()),
    }
}

fn run(connections: &Connections, operation: &str, body: &[u8]) -> Result<String, DynoxideError> {
    // Each arm: the request read from its JSON, the operation on the connection `$how` gives
    // it, the answer written as JSON; only the operation holds the gate.
    macro_rules! on {
        ($how:ident, $method:ident) => {{
            let request = from_json(body)?;
            let answer = connections.$how(|db| db.$method(request))?;
            to_json(&answer)
        }};
    }
    match operation {
        "GetItem" => on!(read, get_item),
        "BatchGetItem" => on!(read, batch_get_item),
        "Query" => on!(read, query),
        "Scan" => on!(read, scan),
        "CreateTable" => on!(changing_tables, create_table),
        "UpdateTable" => on!(changing_tables, update_table),
        "DeleteTable" => on!(changing_tables, delete_table),
        "UpdateTimeToLive" => on!(changing_tables, update_time_to_live),
        "PutItem" => on!(on_writer, put_item),
        "UpdateItem" => on!(on_writer, update_item),
        "DeleteItem" => on!(on_writer, delete_item),
        "BatchWriteItem" => on!(on_writer, batch_write_item),
        "TransactWriteItems" => on!(on_writer, transact_write_items),
        "TransactGetItems" => on!(on_writer, transact_get_items),
        "DescribeTable" => on!(on_writer, describe_table),
        "ListTables" => on!(on_writer, list_tables),
        "DescribeTimeToLive" => on!(on_writer, describe_time_to_live),
        "ListStreams" => on!(on_writer, list_streams),
        "DescribeStream" => on!(on_writer, describe_stream),
        "GetShardIterator" => on!(on_writer, get_shard_iterator),
        "GetRecords" => on!(on_writer, get_records),
        _ => Err(DynoxideError::SerializationException(format!(
            "UnknownOperationException: {operation}"
        ))),
    }
}

fn from_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, DynoxideError> {
    serde_json::from_slice(body).map_err(|e| DynoxideError::SerializationException(e.to_string()))
}

fn to_json<T: serde::Serialize>(answer: &T) -> Result<String, DynoxideError> {
    serde_json::to_string(answer).map_err(|e| DynoxideError::InternalServerError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(connections: &Connections, operation: &str, body: &str) -> serde_json::Value {
        let (status, json) = answer(connections, operation, body.as_bytes());
        assert_eq!(status, 200, "{operation}: {json}");
        serde_json::from_str(&json).expect("an answer in JSON")
    }

    fn table(connections: &Connections) {
        call(
            connections,
            "CreateTable",
            r#"{"TableName":"things","BillingMode":"PAY_PER_REQUEST",
                "KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],
                "AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}]}"#,
        );
    }

    fn put(connections: &Connections, pk: &str, g: &str) {
        call(
            connections,
            "PutItem",
            &format!(
                r#"{{"TableName":"things","Item":{{"pk":{{"S":"{pk}"}},"g":{{"S":"{g}"}}}}}}"#
            ),
        );
    }

    fn get(connections: &Connections, pk: &str) -> serde_json::Value {
        call(
            connections,
            "GetItem",
            &format!(r#"{{"TableName":"things","Key":{{"pk":{{"S":"{pk}"}}}}}}"#),
        )["Item"]
            .clone()
    }

    fn idle_readers(connections: &Connections) -> usize {
        connections.readers.idle().len()
    }

    fn scratch_file() -> (std::path::PathBuf, String) {
        let dir = std::env::temp_dir().join(format!(
            "tablegraph-readers-{}-{}",
            std::process::id(),
            MEMORY_DATABASES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let file = dir.join("tablegraph.db").to_string_lossy().into_owned();
        (dir, file)
    }

    #[test]
    fn a_read_runs_on_a_reader_of_its_own_beside_a_read_in_progress() {
        let connections = Connections::memory().expect("a database in memory");
        table(&connections);
        put(&connections, "a", "x");
        assert_eq!(
            idle_readers(&connections),
            0,
            "writes and table changes use no reader"
        );
        connections.read(|_| {
            // The reader above is in use: this read opens another, and sees the item.
            assert_eq!(get(&connections, "a")["g"]["S"], "x");
        });
        assert_eq!(
            idle_readers(&connections),
            2,
            "both readers are kept for later reads"
        );
        assert_eq!(get(&connections, "a")["g"]["S"], "x");
        assert_eq!(
            idle_readers(&connections),
            2,
            "an idle reader is used again"
        );
    }

    #[test]
    fn a_read_sees_every_write_before_it_in_memory_and_in_a_file() {
        let (dir, file) = scratch_file();
        for connections in [
            Connections::memory().expect("a database in memory"),
            Connections::file(&file).expect("a database in a file"),
        ] {
            table(&connections);
            assert_eq!(get(&connections, "a"), serde_json::Value::Null);
            for value in ["x", "y", "z"] {
                put(&connections, "a", value);
                assert_eq!(get(&connections, "a")["g"]["S"], value);
            }
            call(
                &connections,
                "DeleteItem",
                r#"{"TableName":"things","Key":{"pk":{"S":"a"}}}"#,
            );
            assert_eq!(get(&connections, "a"), serde_json::Value::Null);
            assert!(idle_readers(&connections) >= 1, "the reads ran on readers");
        }
        std::fs::remove_dir_all(dir).ok();
    }

    /// Whether `beside`, started on a thread of its own while `holding` is in progress, ran
    /// before `holding` ended. `holding` gets the wait to call while in progress: it returns
    /// once `beside` has run, or once `beside`'s thread is asleep in the kernel (as on a lock
    /// it waits for), read from `/proc`; then `beside` runs on.
    #[cfg(target_os = "linux")]
    fn ran_during(holding: impl FnOnce(&mut dyn FnMut()), beside: impl FnOnce() + Send) -> bool {
        let ran = AtomicBool::new(false);
        let mut ran_during = false;
        let mut beside = Some(beside);
        std::thread::scope(|scope| {
            let mut started = None;
            holding(&mut || {
                let (task, found) = std::sync::mpsc::channel();
                let (ran, beside) = (&ran, beside.take().expect("one wait"));
                started = Some(scope.spawn(move || {
                    let this = std::fs::read_link("/proc/thread-self").expect("Linux's /proc");
                    task.send(this).expect("`holding` waits for it");
                    beside();
                    ran.store(true, Ordering::SeqCst);
                }));
                let stat = std::path::Path::new("/proc")
                    .join(found.recv().expect("the thread started"))
                    .join("stat");
                loop {
                    if ran.load(Ordering::SeqCst) {
                        ran_during = true;
                        return;
                    }
                    // `TID (name) STATE ...`: `S` is asleep, waiting for something. A thread
                    // that is gone has run: the next turn sees it.
                    let state = std::fs::read_to_string(&stat).unwrap_or_default();
                    if state
                        .rsplit_once(") ")
                        .is_some_and(|(_, rest)| rest.starts_with('S'))
                    {
                        return;
                    }
                    std::thread::yield_now();
                }
            });
            started.expect("holding waited").join().expect("beside ran");
        });
        ran_during
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn in_memory_a_write_waits_for_the_reads_in_progress_and_a_read_for_a_write() {
        // In memory SQLite would make them wait by sleeping in its busy handler, 1 ms and
        // more per try: they wait for each other in this process instead.
        let connections = Connections::memory().expect("a database in memory");
        table(&connections);
        put(&connections, "a", "x");
        let wrote = ran_during(
            |wait| connections.read(|_| wait()),
            || put(&connections, "b", "y"),
        );
        assert!(!wrote, "a write ran while a read was in progress");
        let read = ran_during(
            |wait| connections.on_writer(|_| wait()),
            || assert_eq!(get(&connections, "a")["g"]["S"], "x"),
        );
        assert!(!read, "a read ran while a write was in progress");
        assert_eq!(
            get(&connections, "b")["g"]["S"],
            "y",
            "the write waited, then ran"
        );
    }

    /// What the server logs, as its subscriber would write it.
    #[derive(Clone, Default)]
    struct Logged(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Logged {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("the log").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Logged {
        fn lines_with(&self, text: &str) -> usize {
            let logged = self.0.lock().expect("the log");
            String::from_utf8_lossy(&logged)
                .lines()
                .filter(|line| line.contains(text))
                .count()
        }
    }

    #[test]
    fn a_reader_that_cannot_open_is_logged_once_until_one_opens_again() {
        let mut connections = Connections::memory().expect("a database in memory");
        table(&connections);
        put(&connections, "a", "x");
        let readers_at = connections.readers.at.clone();
        // Where no reader can open: read-only, in a folder that does not exist.
        let nowhere = "file:/tablegraph-no-such-folder/tablegraph.db?mode=ro".to_owned();
        let logged = Logged::default();
        let sink = logged.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            connections.readers.at = nowhere.clone();
            for _ in 0..3 {
                assert_eq!(get(&connections, "a")["g"]["S"], "x", "read on the writer");
            }
            assert_eq!(idle_readers(&connections), 0, "no reader opened");
            assert_eq!(logged.lines_with("a reader could not open"), 1);

            connections.readers.at = readers_at;
            for _ in 0..2 {
                assert_eq!(get(&connections, "a")["g"]["S"], "x");
            }
            assert_eq!(idle_readers(&connections), 1, "a reader opened");
            assert_eq!(logged.lines_with("readers open again"), 1);

            // Failing again, after readers opened, is a new warning.
            connections.readers.idle().clear();
            connections.readers.at = nowhere;
            assert_eq!(get(&connections, "a")["g"]["S"], "x");
            assert_eq!(logged.lines_with("a reader could not open"), 2);
        });
    }

    #[test]
    fn an_index_added_after_a_reader_opened_is_read_at_once() {
        let connections = Connections::memory().expect("a database in memory");
        table(&connections);
        put(&connections, "a", "x");
        // A reader opens and caches the table's definition, without the index.
        assert_eq!(get(&connections, "a")["g"]["S"], "x");
        assert_eq!(idle_readers(&connections), 1);
        call(
            &connections,
            "UpdateTable",
            r#"{"TableName":"things",
                "AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},
                                        {"AttributeName":"g","AttributeType":"S"}],
                "GlobalSecondaryIndexUpdates":[{"Create":{"IndexName":"byG",
                    "KeySchema":[{"AttributeName":"g","KeyType":"HASH"}],
                    "Projection":{"ProjectionType":"ALL"}}}]}"#,
        );
        let found = call(
            &connections,
            "Query",
            r#"{"TableName":"things","IndexName":"byG","KeyConditionExpression":"g = :g",
                "ExpressionAttributeValues":{":g":{"S":"x"}}}"#,
        );
        assert_eq!(found["Count"], 1, "{found}");
    }

    #[test]
    fn a_reader_cannot_write_in_memory_or_in_a_file() {
        // A name SQLite's URIs would read otherwise, escaped for the readers.
        let (dir, file) = scratch_file();
        let file = file.replace("tablegraph.db", "a%20b?c#d.db");
        for connections in [
            Connections::memory().expect("a database in memory"),
            Connections::file(&file).expect("a database in a file"),
        ] {
            table(&connections);
            put(&connections, "a", "x");
            let written = connections.read(|reader| {
                reader.put_item(from_json(
                    br#"{"TableName":"things","Item":{"pk":{"S":"b"}}}"#,
                )?)
            });
            assert!(written.is_err(), "a reader wrote: {written:?}");
            assert_eq!(idle_readers(&connections), 1, "the reader opened");
            assert_eq!(get(&connections, "a")["g"]["S"], "x");
            assert_eq!(get(&connections, "b"), serde_json::Value::Null);
        }
        assert!(
            std::path::Path::new(&file).exists(),
            "the file kept its name"
        );
        std::fs::remove_dir_all(dir).ok();
    }
}
