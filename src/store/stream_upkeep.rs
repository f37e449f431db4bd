//! Keeping the embedded store's change stream as cheap after a million writes as after the
//! first: an index on its stream records, and a retention of 24 hours, as DynamoDB Streams has.
//!
//! # Why we reach into dynoxide's SQLite file
//!
//! dynoxide keeps every stream record of every table in one SQLite table (`_stream_records`)
//! whose only index is its row id, and keeps them for ever. Each write finds its sequence number
//! with `MAX(CAST(sequence_number AS INTEGER))` over that table, and each `GetRecords` filters
//! and sorts on the same expression, so both scanned every record ever written: with SQLite 3.40
//! and 400,000 records each took 78 ms, where one index on `(table_name, CAST(sequence_number
//! AS INTEGER))` brings both under 20 µs (the index answers the `MAX` directly and the read as
//! a range). dynoxide 3.2 has no option for either, so:
//!
//! - the index is added to the database the embedded store opens, through a second connection
//!   before the server starts (in memory too: that database is one the process's connections
//!   share, `in_process::Connections`);
//! - for a file, records older than [`RETENTION`] are deleted every [`TRIM_EVERY`], oldest first
//!   and a row-id range at a time, so a write waits on one small batch at most (dynoxide's own
//!   connection waits on SQLite's busy timeout, not an error). A store in memory lives as long
//!   as its process and keeps its records; it is for tests and demos.
//!
//! The SQL below names dynoxide's table and columns: `Cargo.lock` pins the version, and the
//! tests here check the plan of dynoxide's own two queries, so an upgrade that renames them
//! fails a test rather than a benchmark.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, params};

/// How long stream records are kept: DynamoDB Streams' retention.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
/// How often records past [`RETENTION`] are deleted from a file.
pub const TRIM_EVERY: Duration = Duration::from_secs(10 * 60);
/// Records deleted per statement at most.
const TRIM_BATCH: i64 = 5_000;
/// How long our connection waits for dynoxide's to finish a write.
const BUSY: Duration = Duration::from_secs(30);

const INDEX: &str = "CREATE INDEX IF NOT EXISTS tablegraph_stream_records_sequence \
                     ON _stream_records (table_name, CAST(sequence_number AS INTEGER))";

/// Adds the index to the dynoxide database at `location`: a file's path, or the SQLite URI of
/// a database in memory (`in_process::Connections`), through a second connection.
pub fn index(location: &str) -> rusqlite::Result<()> {
    let connection = Connection::open(location)?;
    connection.busy_timeout(BUSY)?;
    connection.execute_batch(INDEX)
}

/// Deletes the stream records written before `cutoff` (seconds since the epoch) from the
/// database in the file at `path`, oldest first; answers how many.
pub fn trim_file(path: &Path, cutoff: i64) -> rusqlite::Result<usize> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(BUSY)?;
    let mut removed = 0;
    loop {
        // Row ids grow with time, so the oldest record comes first and a batch is a range.
        let oldest: Option<(i64, i64)> = connection
            .query_row(
                "SELECT id, created_at FROM _stream_records ORDER BY id LIMIT 1",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let Some((first, written)) = oldest else {
            break;
        };
        if written >= cutoff {
            break;
        }
        let deleted = connection.execute(
            "DELETE FROM _stream_records WHERE id < ?1 AND created_at < ?2",
            params![first + TRIM_BATCH, cutoff],
        )?;
        removed += deleted;
        if deleted == 0 {
            break;
        }
    }
    Ok(removed)
}

/// Seconds since the epoch, `ago` before now.
pub fn cutoff(ago: Duration) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.saturating_sub(ago).as_secs() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// dynoxide 3.2's two queries over its stream records, as it sends them.
    const NEXT_SEQUENCE: &str = "SELECT COALESCE(MAX(CAST(sequence_number AS INTEGER)), 0) + 1 \
                                 FROM _stream_records WHERE table_name = ?1";
    const READ_RECORDS: &str = "SELECT event_name, keys_json, new_image, old_image, \
                                sequence_number, created_at, user_identity, event_id \
                                FROM _stream_records \
                                WHERE table_name = ?1 AND shard_id = ?2 \
                                AND CAST(sequence_number AS INTEGER) > ?3 \
                                ORDER BY CAST(sequence_number AS INTEGER) ASC LIMIT ?4";

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tablegraph-{name}-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    }

    fn plan(connection: &Connection, query: &str) -> String {
        let mut statement = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
            .expect("dynoxide's query is valid against its table");
        let count = statement.parameter_count();
        let values: Vec<i64> = vec![0; count];
        statement
            .query_map(rusqlite::params_from_iter(values), |row| {
                row.get::<_, String>(3)
            })
            .expect("a plan")
            .collect::<Result<Vec<_>, _>>()
            .expect("a plan")
            .join("; ")
    }

    fn assert_indexed(location: &str) {
        let connection = Connection::open(location).expect("the database opens");
        for query in [NEXT_SEQUENCE, READ_RECORDS] {
            let plan = plan(&connection, query);
            assert!(
                plan.contains("INDEX tablegraph_stream_records_sequence"),
                "{query} → {plan}"
            );
        }
    }

    #[test]
    fn dynoxide_s_stream_queries_use_the_index_in_a_file() {
        let dir = scratch("index-file");
        let file = dir.join("tablegraph.db");
        let database =
            dynoxide::Database::new(&file.to_string_lossy()).expect("dynoxide opens the file");
        let connection = Connection::open(&file).expect("the database opens");
        // Without the index, both queries scan every record.
        assert!(!plan(&connection, NEXT_SEQUENCE).contains("INDEX"));
        let path = file.to_string_lossy();
        index(&path).expect("the index is added");
        assert_indexed(&path);
        // Adding it again, as every start does, changes nothing.
        index(&path).expect("the index is there already");
        drop(database);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn dynoxide_s_stream_queries_use_the_index_in_memory() {
        // Where the embedded store keeps a database in memory (`EmbeddedStore::start`).
        let connections =
            crate::store::in_process::Connections::memory().expect("dynoxide opens a database");
        index(connections.location()).expect("the index is added");
        assert_indexed(connections.location());
        drop(connections);
    }

    #[test]
    fn trimming_deletes_the_records_older_than_the_cutoff_and_no_others() {
        let dir = scratch("trim");
        let file = dir.join("tablegraph.db");
        let database =
            dynoxide::Database::new(&file.to_string_lossy()).expect("dynoxide opens the file");
        index(&file.to_string_lossy()).expect("the index is added");
        let connection = Connection::open(&file).expect("the database opens");
        // Eleven thousand old records (more than two batches) and a thousand newer ones.
        for n in 0..12_000_i64 {
            let written = if n < 11_000 { 1_000 } else { 5_000 };
            connection
                .execute(
                    "INSERT INTO _stream_records (table_name, event_name, keys_json, \
                     sequence_number, shard_id, created_at) \
                     VALUES ('t', 'INSERT', '{}', ?1, 'shardId-00000001-t', ?2)",
                    params![(n + 1).to_string(), written],
                )
                .expect("a record");
        }
        assert_eq!(trim_file(&file, 5_000).expect("the trim runs"), 11_000);
        let (left, oldest): (i64, i64) = connection
            .query_row(
                "SELECT COUNT(*), MIN(CAST(sequence_number AS INTEGER)) FROM _stream_records",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("the records left");
        assert_eq!((left, oldest), (1_000, 11_001));
        assert_eq!(trim_file(&file, 5_000).expect("the trim runs"), 0);
        drop(database);
        std::fs::remove_dir_all(dir).ok();
    }
}
