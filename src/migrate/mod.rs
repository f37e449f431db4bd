//! Table lifecycle: making the table's indexes match the model, then applying the data
//! migrations of `migrations/` (see [`data`]).
//!
//! Invariant: the table never loses an index here. Indexes the model no longer uses are
//! reported and left alone, because dropping one is irreversible and other deployments of the
//! same table may still read it.

mod data;
mod nodes;
mod progress;
mod run;

use std::time::Duration;

pub use data::{DataMigrationError, Migration, MigrationRun, builtin_migrations, load_migrations};
pub use progress::{PACE, Pace, Progress, Step, describe};
pub use run::{apply_migrations, forget_builtins, record_builtins_applied};

use crate::model::Model;
use crate::store::{Store, StoreError, TableStatus};

/// How often the table is polled while DynamoDB builds it or an index.
const POLL_EVERY: Duration = Duration::from_millis(250);
/// How long to wait for the table or an index to become ACTIVE (DynamoDB may take minutes to
/// back-fill an index over a large table).
const WAIT_AT_MOST: Duration = Duration::from_secs(30 * 60);

#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("table {table} does not exist; run `tablegraph migrate` first")]
    TableMissing { table: String },
    #[error("table {table} lacks the indexes {missing}; run `tablegraph migrate` first")]
    IndexesMissing { table: String, missing: String },
    #[error("table {table} did not become ACTIVE within {} seconds", WAIT_AT_MOST.as_secs())]
    NotActive { table: String },
    #[error(transparent)]
    Data(#[from] DataMigrationError),
}

/// What `migrate` changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableReport {
    pub created_table: bool,
    pub created_indexes: Vec<u8>,
    /// Whether the table's change stream was turned on (subscriptions read it).
    pub enabled_stream: bool,
    /// Generic indexes the table has that the model does not use.
    pub unused_indexes: Vec<u8>,
}

/// The changes that bring a table to the model's indexes: pure, so it is tested directly.
pub fn plan_indexes(status: Option<&TableStatus>, model: &Model) -> (bool, Vec<u8>, Vec<u8>) {
    match status {
        None => (true, model.indexes.clone(), Vec::new()),
        Some(status) => {
            let missing = model
                .indexes
                .iter()
                .copied()
                .filter(|slot| !status.indexes.contains_key(slot))
                .collect();
            let unused = status
                .indexes
                .keys()
                .copied()
                .filter(|slot| !model.indexes.contains(slot))
                .collect();
            (false, missing, unused)
        }
    }
}

/// Creates the table and the indexes the model needs, one index per UpdateTable as DynamoDB
/// requires, waiting for each to become ACTIVE, and turns its change stream on (both images).
/// Running it again changes nothing.
pub async fn ensure_table(store: &Store, model: &Model) -> Result<TableReport, MigrationError> {
    let status = store.describe_table().await?;
    let (create, missing, unused_indexes) = plan_indexes(status.as_ref(), model);
    let mut report = TableReport {
        unused_indexes,
        ..TableReport::default()
    };
    if create {
        store.create_table(&missing).await?;
        report.created_table = true;
        report.created_indexes = missing;
        wait_until_active(store).await?;
        return Ok(report);
    }
    wait_until_active(store).await?;
    if status.is_some_and(|status| status.stream.is_none()) {
        store.enable_stream().await?;
        wait_until_active(store).await?;
        report.enabled_stream = true;
    }
    for slot in missing {
        store.create_index(slot).await?;
        wait_until_active(store).await?;
        report.created_indexes.push(slot);
    }
    Ok(report)
}

/// Brings the items of a table `serve` owns (the embedded store's) to today's formats: the
/// [`builtin_migrations`], applied as `migrate` applies them, each step told to `progress`.
/// Unique values another node now holds are logged rather than fatal: the engine still lets
/// their nodes change or drop them.
pub async fn upgrade_formats(
    store: &Store,
    model: &Model,
    progress: Progress<'_>,
) -> Result<(), MigrationError> {
    let builtins = builtin_migrations(model);
    match apply_migrations(store, model, &builtins, false, progress).await {
        Ok(runs) => {
            for run in runs.iter().filter(|run| run.changed > 0) {
                tracing::info!(migration = %run.name, changed = run.changed, "stored formats upgraded");
            }
            Ok(())
        }
        Err(DataMigrationError::Collisions { name, collisions }) => {
            tracing::warn!(
                migration = %name,
                collisions = %collisions.join("; "),
                "unique values that are now the same value as another node's; change one of each pair"
            );
            Ok(())
        }
        Err(other) => Err(other.into()),
    }
}

/// The [`builtin_migrations`] a table has not had: what `serve` warns about on a table it does
/// not own (`tablegraph migrate` applies them).
pub async fn pending_builtins(store: &Store, model: &Model) -> Result<Vec<String>, StoreError> {
    let mut pending = Vec::new();
    for migration in builtin_migrations(model) {
        if !run::is_applied(store, &migration).await? {
            pending.push(migration.name);
        }
    }
    Ok(pending)
}

/// Checks that the table exists with every index the model reads, without changing anything:
/// what `serve` does against a table it does not own. Answers what it found.
pub async fn verify_table(store: &Store, model: &Model) -> Result<TableStatus, MigrationError> {
    let table = store.table_name().to_owned();
    let Some(status) = store.describe_table().await? else {
        return Err(MigrationError::TableMissing { table });
    };
    let missing: Vec<String> = model
        .indexes
        .iter()
        .filter(|slot| status.indexes.get(slot) != Some(&true))
        .map(|slot| crate::keys::gsi_name(*slot))
        .collect();
    if missing.is_empty() {
        Ok(status)
    } else {
        Err(MigrationError::IndexesMissing {
            table,
            missing: missing.join(", "),
        })
    }
}

async fn wait_until_active(store: &Store) -> Result<(), MigrationError> {
    let deadline = tokio::time::Instant::now() + WAIT_AT_MOST;
    loop {
        if let Some(status) = store.describe_table().await?
            && status.active
            && status.indexes.values().all(|active| *active)
        {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(MigrationError::NotActive {
                table: store.table_name().to_owned(),
            });
        }
        // Polling DynamoDB's own state: there is no notification to wait on.
        tokio::time::sleep(POLL_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn model_with_indexes(indexes: Vec<u8>) -> Model {
        let mut model = Model::parse("schema.graphql", "type A @model { x: Int }")
            .expect("a one-type schema is valid");
        model.indexes = indexes;
        model
    }

    #[test]
    fn a_missing_table_is_created_with_every_index() {
        let model = model_with_indexes(vec![1, 2]);
        assert_eq!(plan_indexes(None, &model), (true, vec![1, 2], vec![]));
    }

    #[test]
    fn only_missing_indexes_are_added_and_unused_ones_kept() {
        let model = model_with_indexes(vec![1, 2]);
        let status = TableStatus {
            active: true,
            indexes: BTreeMap::from([(1, true), (3, true)]),
            stream: None,
            item_count: None,
        };
        assert_eq!(
            plan_indexes(Some(&status), &model),
            (false, vec![2], vec![3])
        );
    }
}
