//! The arguments several commands share: the schema, and where the table is; and both, opened.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::app;
use crate::config::{StoreConfig, StoreTarget};
use crate::model::{AmplifyFlags, ApiShape, ConflictConfig, DialectChoice, SchemaLanguage};
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
    /// The language the schema is written in: `amplify` (Amplify's GraphQL transformer v2) or
    /// `tablegraph`. Without it: Amplify's when the schema uses Amplify's relation arguments or
    /// none of tablegraph's own directives.
    #[arg(
        long,
        env = "TABLEGRAPH_SCHEMA_LANGUAGE",
        value_name = "amplify|tablegraph"
    )]
    pub schema_language: Option<SchemaLanguage>,
    /// The API generated: `amplify` (`getPost`, `listPosts(filter, limit, nextToken)` →
    /// `items`/`nextToken`, `deletePost(input:)`) or `relay` (`post`, Relay connections).
    /// Without it, the shape follows the schema's language.
    #[arg(long, env = "TABLEGRAPH_API_SHAPE", value_name = "amplify|relay")]
    pub api_shape: Option<ApiShape>,
    /// One of Amplify's feature flags (`enableAutoIndexQueryNames=false`); repeatable. They
    /// win over the `amplify/cli.json` found beside the schema or above it.
    #[arg(long = "amplify-flag", env = "TABLEGRAPH_AMPLIFY_FLAGS", value_delimiter = ',',
          value_name = "NAME=VALUE", value_parser = amplify_flag)]
    pub amplify_flags: Vec<(String, String)>,
    /// In Amplify's API shape, serve exactly what Amplify's transformer generates: none of
    /// tablegraph's additions (the README's Amplify section lists them).
    #[arg(long, env = "TABLEGRAPH_AMPLIFY_STRICT")]
    pub amplify_strict: bool,
    /// An Amplify Gen 1 project's root: serve its API's schema (`amplify/backend/api/<name>/`,
    /// one file or the `schema/` folder) with the flags of `amplify/cli.json`, those it does not
    /// name settled by the deployed API the project keeps (`src/graphql/schema.json` or the
    /// API's `build/schema.graphql`). Instead of --schema.
    #[arg(
        long,
        env = "TABLEGRAPH_AMPLIFY_PROJECT",
        value_name = "DIR",
        conflicts_with = "schema"
    )]
    pub amplify_project: Option<PathBuf>,
    /// Conflict detection on every model (AppSync's `conflictDetection`, which DataStore
    /// needs): `VERSION` serves `_version`, `_deleted`, `_lastChangedAt` and `sync<Types>`;
    /// `NONE` turns it off. Wins over `transform.conf.json`'s `ResolverConfig`, which is read
    /// beside the schema otherwise.
    #[arg(long, env = "TABLEGRAPH_CONFLICT_DETECTION", value_name = "VERSION|NONE",
          value_parser = ["VERSION", "NONE"])]
    pub conflict_detection: Option<String>,
    /// How a write with a stale `_version` is resolved: `AUTOMERGE` (the default),
    /// `OPTIMISTIC_CONCURRENCY` (refused as `ConflictUnhandled`) or `LAMBDA` (the function
    /// --lambda-conflict-handler names decides).
    #[arg(long, env = "TABLEGRAPH_CONFLICT_HANDLER", requires = "conflict_detection",
          value_name = "AUTOMERGE|OPTIMISTIC_CONCURRENCY|LAMBDA",
          value_parser = ["AUTOMERGE", "OPTIMISTIC_CONCURRENCY", "LAMBDA"])]
    pub conflict_handler: Option<String>,
    /// The function a `LAMBDA` conflict handler calls (AppSync's `LambdaConflictHandler`): one
    /// of the server's functions, `--function NAME=URL` or `lambda:`.
    #[arg(
        long,
        env = "TABLEGRAPH_LAMBDA_CONFLICT_HANDLER",
        value_name = "FUNCTION",
        required_if_eq("conflict_handler", "LAMBDA"),
        requires = "conflict_handler"
    )]
    pub lambda_conflict_handler: Option<String>,
    /// How long each write stays in its type's delta record, in minutes (AppSync's
    /// `DeltaSyncTableTTL`): a DataStore sync whose `lastSync` is more recent reads only the
    /// changes since; an older one reads the whole type. 30 when not given.
    #[arg(long, env = "TABLEGRAPH_DELTA_SYNC_TABLE_TTL", value_name = "MINUTES",
          value_parser = clap::value_parser!(u32).range(1..=10080))]
    pub delta_sync_table_ttl: Option<u32>,
}

fn amplify_flag(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: give NAME=VALUE"))?;
    AmplifyFlags::default().set_text(name, value, "")?;
    Ok((name.to_owned(), value.to_owned()))
}

impl SchemaArgs {
    /// The language, shape and flags chosen on the command line.
    pub fn dialect(&self) -> DialectChoice {
        let mut flags = AmplifyFlags::default();
        for (name, value) in &self.amplify_flags {
            // Checked when the arguments were read.
            let _ = flags.set_text(name, value, crate::model::AMPLIFY_FLAG_ARGUMENT);
        }
        DialectChoice {
            language: self.schema_language,
            shape: self.api_shape,
            flags,
            strict: self.amplify_strict,
            conflict: self.conflict_config(),
        }
    }

    /// The conflict detection the command line chose; none chosen leaves it to
    /// `transform.conf.json`.
    fn conflict_config(&self) -> ConflictConfig {
        let config = match &self.conflict_detection {
            // The names were checked when the arguments were read.
            Some(detection) => ConflictConfig::from_arguments(
                detection,
                self.conflict_handler.as_deref(),
                self.lambda_conflict_handler.as_deref(),
            )
            .unwrap_or_default(),
            None => ConflictConfig::default(),
        };
        ConflictConfig {
            delta_sync_minutes: self.delta_sync_table_ttl,
            ..config
        }
    }

    /// The schema's path and the language, shape and flags to read it with: as chosen, or
    /// with `--amplify-project`, the project's schema and flags (see `amplify_project`).
    pub fn resolved(&self) -> anyhow::Result<(PathBuf, DialectChoice)> {
        let Some(root) = &self.amplify_project else {
            return Ok((self.schema.clone(), self.dialect()));
        };
        let project = crate::amplify_project::AmplifyProject::open(root)?;
        let choice = project.settle(&self.dialect())?;
        Ok((project.schema, choice))
    }

    /// The schema's path: `--schema`, or the project's (see [`SchemaArgs::resolved`]).
    pub fn schema_path(&self) -> PathBuf {
        self.amplify_project
            .as_deref()
            .and_then(|root| crate::amplify_project::AmplifyProject::open(root).ok())
            .map_or_else(|| self.schema.clone(), |project| project.schema)
    }

    /// Reads and validates the schema and its resolvers as chosen.
    pub fn load(&self) -> anyhow::Result<(crate::model::Model, crate::resolvers::Resolvers)> {
        let (schema, choice) = self.resolved()?;
        Ok(app::load_schema(
            &schema,
            self.resolvers.as_deref(),
            &choice,
        )?)
    }
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
    /// Tests only: how often, in milliseconds, a long phase's progress is printed (or logged)
    /// at most when stderr is no terminal (2000 by default).
    #[arg(
        long,
        env = "TABLEGRAPH_PROGRESS_EVERY_MS",
        hide = true,
        default_value_t = 2000
    )]
    pub progress_every_ms: u64,
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

    /// How often a long phase's progress is told at most.
    pub fn progress_every(&self) -> Duration {
        Duration::from_millis(self.progress_every_ms)
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
    let (model, _) = schema.load()?;
    let open = app::open_store(&store.config()).await?;
    if open.is_embedded() {
        crate::migrate::ensure_table(&open.store, &model).await?;
    } else {
        crate::migrate::verify_table(&open.store, &model).await?;
    }
    Ok((model, open))
}

/// How far a walk of the whole table got, told on stderr: the items read, of about the table's
/// item count (`export`, `check`).
pub(super) async fn walk_progress(
    open: &app::OpenStore,
    store: &StoreArgs,
) -> anyhow::Result<crate::progress::SharedTold> {
    let about = open
        .store
        .describe_table()
        .await?
        .and_then(|status| status.item_count);
    Ok(crate::progress::SharedTold::new(
        crate::progress::Told::on_stderr(
            "items read",
            crate::progress::Total::about(about),
            store.progress_every(),
        ),
    ))
}
