//! The arguments several commands share: the schema, and where the table is; and both, opened.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::app;
use crate::config::{StoreConfig, StoreTarget};
use crate::store::{EmbeddedLocation, StoreTuning};

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The schema file.
    #[arg(long, env = "TABLEGRAPH_SCHEMA", default_value = "schema.graphql")]
    pub schema: PathBuf,
    /// The directory of declarative resolvers (`<Type>.<field>.toml`); by default the
    /// `resolvers/` directory beside the schema.
    #[arg(long, env = "TABLEGRAPH_RESOLVERS")]
    pub resolvers: Option<PathBuf>,
}

/// Where the table lives. Precedence: `--dynamodb-endpoint`, then `--memory`, then
/// `--data-dir`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Keep the embedded store's data in this directory.
    #[arg(long, env = "TABLEGRAPH_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Run the embedded store in memory: nothing persists.
    #[arg(long, env = "TABLEGRAPH_MEMORY")]
    pub memory: bool,
    /// Use this DynamoDB-compatible endpoint (e.g. https://dynamodb.eu-west-1.amazonaws.com)
    /// instead of the embedded store; region and credentials come from the AWS environment.
    #[arg(long, env = "TABLEGRAPH_DYNAMODB_ENDPOINT")]
    pub dynamodb_endpoint: Option<String>,
    /// The table's name.
    #[arg(long, env = "TABLEGRAPH_TABLE", default_value = "tablegraph")]
    pub table: String,
    /// Benchmarks only: no storage call answers sooner than this many milliseconds after it
    /// was sent, like a round trip to DynamoDB in the same region (the store's own work
    /// overlaps the wait).
    #[arg(long, env = "TABLEGRAPH_SIMULATED_LATENCY_MS", hide = true)]
    pub simulated_latency_ms: Option<u64>,
}

impl StoreArgs {
    /// Refuses a data directory that holds no store, and creates nothing: for the commands
    /// that read a table (`check`, `export`, `migrate --dry-run`), which on a mistyped directory
    /// would report an empty table as sound, or back it up.
    pub(super) fn require_a_store(&self) -> anyhow::Result<()> {
        if let StoreTarget::Embedded(location) = self.config().target
            && !location.holds_a_store()
        {
            anyhow::bail!(
                "no tablegraph data in {}: give the directory `serve` used",
                self.data_dir.display()
            );
        }
        Ok(())
    }

    pub fn config(&self) -> StoreConfig {
        let target = match (&self.dynamodb_endpoint, self.memory) {
            (Some(url), _) => StoreTarget::Endpoint(url.clone()),
            (None, true) => StoreTarget::Embedded(EmbeddedLocation::Memory),
            (None, false) => {
                StoreTarget::Embedded(EmbeddedLocation::Directory(self.data_dir.clone()))
            }
        };
        StoreConfig {
            target,
            table: self.table.clone(),
            tuning: StoreTuning {
                latency: self.simulated_latency_ms.map(Duration::from_millis),
                faults: None,
            },
        }
    }
}

/// The model and an open store whose table matches it: made to match on the embedded store,
/// verified on an endpoint.
pub(super) async fn open_existing(
    schema: &SchemaArgs,
    store: &StoreArgs,
) -> anyhow::Result<(crate::model::Model, app::OpenStore)> {
    let (model, _) = app::load_schema(&schema.schema, schema.resolvers.as_deref())?;
    let open = app::open_store(&store.config()).await?;
    if open.is_embedded() {
        crate::migrate::ensure_table(&open.store, &model).await?;
    } else {
        crate::migrate::verify_table(&open.store, &model).await?;
    }
    Ok((model, open))
}
