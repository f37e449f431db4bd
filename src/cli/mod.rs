//! The command line: `serve`, `migrate`, `schema`, `healthcheck`. Every flag also reads a
//! `TABLEGRAPH_*` environment variable, for containers. The arguments several commands share
//! are in `args`; the bodies of `migrate` and `check` in `maintenance`.

mod args;
mod maintenance;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::app::{self, Application};
use crate::auth::{AuthConfig, DEFAULT_REFETCH_INTERVAL, JwtConfig, JwtKeys};
use crate::config::{ConnectionLimits, HttpConfig, ServeConfig};
use crate::graphql::{QueryLimits, SchemaOptions};
use crate::store::EmbeddedLocation;

use args::open_existing;
pub use args::{SchemaArgs, StoreArgs};

#[derive(Debug, Parser)]
#[command(
    name = "tablegraph",
    version,
    about = "An AppSync-style GraphQL API on one DynamoDB table"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the GraphQL API (GraphiQL at /graphql in a browser). Creates the data directory
    /// and its store when they do not exist.
    Serve(Box<ServeArgs>),
    /// Create the table and the indexes the schema needs, then apply the pending data
    /// migrations of `migrations/` in name order; safe to run again. Creates the data
    /// directory and its store when they do not exist (with --dry-run, refuses a directory
    /// that holds no store).
    Migrate {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// The directory of data migrations (`*.toml`).
        #[arg(long, env = "TABLEGRAPH_MIGRATIONS", default_value = "migrations")]
        migrations: PathBuf,
        /// Print what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Tests only: how often, in milliseconds, a running migration's progress is printed
        /// when stderr is no terminal (2000 by default).
        #[arg(long, hide = true, default_value_t = 2000)]
        progress_every_ms: u64,
    },
    /// Load the demo data set (farms, goals, users, teams) into the default schema's table.
    /// Creates the data directory and its store when they do not exist.
    Demo {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Verify every invariant of the table (unique values, relation slots, edges, edge sets);
    /// exit 1 when one is broken. Refuses a data directory that holds no store.
    Check {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// Fix what is broken, then check again.
        #[arg(long)]
        repair: bool,
    },
    /// Write every item of the table as JSON lines (DynamoDB's JSON form). Refuses a data
    /// directory that holds no store.
    Export {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// The file to write; standard output when left out.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Write the items of a JSON-lines file (as `export` writes them) into the table. The file
    /// is read and checked whole first: a malformed one writes (and creates) nothing. Creates
    /// the data directory and its store when they do not exist.
    Import {
        #[command(flatten)]
        schema: SchemaArgs,
        #[command(flatten)]
        store: StoreArgs,
        /// The file to read.
        file: PathBuf,
    },
    /// Print, for every field, the storage access it makes: operation, table or index, key
    /// template, how it batches.
    Plan {
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Print the client-facing SDL of the schema.
    Schema {
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Print a JWT signed with an HS256 secret, for trying per-user rules locally with a server
    /// started with the same `--jwt-hs256-secret` and `--jwt-issuer`. Not for production:
    /// there, tokens come from your identity provider.
    Token {
        /// The secret `serve --jwt-hs256-secret` verifies with (at least 32 bytes).
        #[arg(long, env = "TABLEGRAPH_JWT_HS256_SECRET", hide_env_values = true)]
        jwt_hs256_secret: String,
        /// The `iss` claim.
        #[arg(long, env = "TABLEGRAPH_JWT_ISSUER")]
        jwt_issuer: String,
        /// The `aud` claim, when the server wants one.
        #[arg(long, env = "TABLEGRAPH_JWT_AUDIENCE")]
        jwt_audience: Option<String>,
        /// The `sub` claim: who the caller is.
        #[arg(long)]
        sub: String,
        /// A group of the caller, in `cognito:groups` (repeat for several).
        #[arg(long = "group")]
        groups: Vec<String>,
        /// Seconds until the token expires.
        #[arg(long, default_value_t = 3600)]
        expires_in: u64,
    },
    /// Exit 0 when a server answers /healthz (for container health checks).
    Healthcheck {
        /// The address the server listens on.
        #[arg(long, env = "TABLEGRAPH_LISTEN", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Check a `tablegraph store` at that address instead (it answers `GET /`).
        #[arg(long, conflicts_with = "ready")]
        store: bool,
        /// Ask /readyz instead: exit 0 only once the API serves and the store answers (for a
        /// load balancer's or a dependent service's check; /healthz answers during start-up).
        #[arg(long)]
        ready: bool,
    },
    /// Serve the embedded store alone, as a DynamoDB-compatible endpoint for several `serve
    /// --dynamodb-endpoint` replicas (see compose.yaml). It checks no credentials: keep it on a
    /// private network.
    Store {
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1:8000")]
        listen: SocketAddr,
        /// The directory of its SQLite file; one process at a time.
        #[arg(long, env = "TABLEGRAPH_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        /// Keep everything in memory (for tests and demos).
        #[arg(long, env = "TABLEGRAPH_MEMORY")]
        memory: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on.
    #[arg(long, env = "TABLEGRAPH_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub schema: SchemaArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Refuse request bodies larger than this many bytes (413).
    #[arg(long, env = "TABLEGRAPH_MAX_BODY_BYTES", default_value_t = HttpConfig::default().max_body_bytes)]
    pub max_body_bytes: usize,
    /// Answer 408 to requests still running after this many seconds.
    #[arg(long, env = "TABLEGRAPH_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Refuse queries nested deeper than this many fields.
    #[arg(long, env = "TABLEGRAPH_MAX_DEPTH", default_value_t = QueryLimits::default().max_depth)]
    pub max_depth: usize,
    /// Refuse queries that cost more: each field counts once per time it is resolved, so page
    /// sizes multiply.
    #[arg(long, env = "TABLEGRAPH_MAX_COST", default_value_t = QueryLimits::default().max_cost)]
    pub max_cost: u64,
    /// Refuse operations with more aliases than this.
    #[arg(long, env = "TABLEGRAPH_MAX_ALIASES", default_value_t = QueryLimits::default().max_aliases)]
    pub max_aliases: usize,
    /// Refuse operations that select more root fields than this.
    #[arg(long, env = "TABLEGRAPH_MAX_ROOT_FIELDS", default_value_t = QueryLimits::default().max_root_fields)]
    pub max_root_fields: usize,
    /// Storage calls one request may make; fields past it answer an error.
    #[arg(long, env = "TABLEGRAPH_MAX_STORAGE_CALLS", default_value_t = SchemaOptions::default().max_storage_calls)]
    pub max_storage_calls: usize,
    /// Items a filtered page (`filter:` on a list, index query or connection) may evaluate; a
    /// page that reaches it before it is full ends there, and says so in `extensions.filters`.
    #[arg(long, env = "TABLEGRAPH_MAX_FILTER_READ_ITEMS", default_value_t = SchemaOptions::default().max_filter_read_items, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_filter_read_items: usize,
    /// A subscription event whose answer is larger than this many bytes reaches its subscriber
    /// as an `EventTooLarge` error instead.
    #[arg(long, env = "TABLEGRAPH_MAX_EVENT_BYTES", default_value_t = SchemaOptions::default().max_event_bytes)]
    pub max_event_bytes: usize,
    /// Subscriptions this server holds at most, over all its connections.
    #[arg(long, env = "TABLEGRAPH_MAX_SUBSCRIPTIONS", default_value_t = SchemaOptions::default().max_subscriptions)]
    pub max_subscriptions: usize,
    /// Events a subscriber may fall behind by; past it, its subscription ends with an
    /// `EventsMissed` error.
    #[arg(long, env = "TABLEGRAPH_MAX_PENDING_EVENTS", default_value_t = SchemaOptions::default().max_pending_events)]
    pub max_pending_events: usize,
    /// Operations one WebSocket connection may run at once.
    #[arg(long, env = "TABLEGRAPH_MAX_SUBSCRIPTIONS_PER_CONNECTION", default_value_t = HttpConfig::default().max_subscriptions_per_connection)]
    pub max_subscriptions_per_connection: usize,
    /// Seconds a replica's lease on a shard of the table's change stream lasts unless renewed
    /// (every third of it): when a replica stops, another reads its shards after this long.
    /// Only for a store other than the embedded one, whose stream this process reads alone.
    #[arg(long, env = "TABLEGRAPH_STREAM_LEASE_SECS", default_value_t = default_lease_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub stream_lease_secs: u64,
    /// Sign Relay cursors with this secret, so that a client cannot forge one; every replica
    /// must be given the same. Without it, each process signs with a random key of its own.
    #[arg(long, env = "TABLEGRAPH_CURSOR_KEY", hide_env_values = true)]
    pub cursor_key: Option<String>,
    /// While rotating the cursor key: the key before, whose cursors are still accepted.
    #[arg(
        long,
        env = "TABLEGRAPH_CURSOR_KEY_PREVIOUS",
        hide_env_values = true,
        requires = "cursor_key"
    )]
    pub cursor_key_previous: Option<String>,
    /// Require this API key in an `x-api-key` header (repeat for several; the variable takes a
    /// comma-separated list).
    #[arg(
        long = "api-key",
        env = "TABLEGRAPH_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub api_keys: Vec<String>,
    /// Accept JWT bearer tokens signed by a key of this JWKS file.
    #[arg(
        long,
        env = "TABLEGRAPH_JWT_JWKS_FILE",
        group = "jwt_keys",
        requires = "jwt_issuer"
    )]
    pub jwt_jwks_file: Option<PathBuf>,
    /// Accept JWT bearer tokens signed by a key of the JWKS served at this URL (kept as its
    /// Cache-Control says, fetched again for an unknown key at most once a minute).
    #[arg(
        long,
        env = "TABLEGRAPH_JWT_JWKS_URL",
        group = "jwt_keys",
        requires = "jwt_issuer"
    )]
    pub jwt_jwks_url: Option<String>,
    /// Accept JWT bearer tokens signed with this HS256 secret (at least 32 bytes).
    #[arg(
        long,
        env = "TABLEGRAPH_JWT_HS256_SECRET",
        group = "jwt_keys",
        requires = "jwt_issuer",
        hide_env_values = true
    )]
    pub jwt_hs256_secret: Option<String>,
    /// The `iss` a token must carry; repeat for several issuers (the variable takes a
    /// comma-separated list). Without a JWKS file, URL or secret, each issuer's keys are found
    /// by OIDC discovery (`<issuer>/.well-known/openid-configuration`).
    #[arg(long, env = "TABLEGRAPH_JWT_ISSUER", value_delimiter = ',')]
    pub jwt_issuer: Vec<String>,
    /// The audience a token must be for, when set: in `aud` (an ID token) or `client_id` (a
    /// Cognito access token). `AUD` applies to every issuer; `ISSUER=AUD` to that issuer only
    /// (repeat for each).
    #[arg(
        long,
        env = "TABLEGRAPH_JWT_AUDIENCE",
        value_delimiter = ',',
        requires = "jwt_issuer"
    )]
    pub jwt_audience: Vec<String>,
    /// Refuse tokens that expire further ahead than this (`3600`, `90m`, `24h`, `7d`)
    /// [default: 24h].
    #[arg(long, env = "TABLEGRAPH_JWT_MAX_LIFETIME", value_name = "DURATION", value_parser = duration_arg)]
    pub jwt_max_lifetime: Option<Duration>,
    /// The token claim that names a node's owner for `@auth` owner rules [default: `sub`, or
    /// `cognito:username` / `username` for a Cognito user pool's tokens].
    #[arg(long, env = "TABLEGRAPH_OWNER_CLAIM")]
    pub owner_claim: Option<String>,
    /// The token claim that lists the caller's groups for `@auth` group rules.
    #[arg(
        long,
        env = "TABLEGRAPH_GROUPS_CLAIM",
        default_value = "cognito:groups"
    )]
    pub groups_claim: String,
    /// Let browsers' scripts send this request header too (repeat for several; the variable
    /// takes a comma-separated list). Allowed already: content-type, authorization, x-api-key,
    /// x-tablegraph-storage-calls, traceparent, tracestate, x-request-id,
    /// apollographql-client-name and -version, x-amz-user-agent, x-amz-date,
    /// x-amz-security-token, x-graphql-event-stream-token, accept.
    #[arg(
        long = "cors-allow-header",
        env = "TABLEGRAPH_CORS_ALLOW_HEADERS",
        value_delimiter = ',',
        value_name = "NAME",
        value_parser = header_name
    )]
    pub cors_allow_headers: Vec<String>,
    /// Close a connection that sends no request head within this many seconds: a new
    /// connection that sends nothing, or one sending a request's head too slowly.
    #[arg(long, env = "TABLEGRAPH_HEADER_READ_TIMEOUT_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout_secs: u64,
    /// Let at most this many WebSockets wait for `connection_init` at once; past it the one
    /// that waited longest is closed (`4408`, which clients retry).
    #[arg(long, env = "TABLEGRAPH_MAX_PENDING_SOCKETS", default_value_t = HttpConfig::default().max_pending_sockets, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_pending_sockets: usize,
    /// Close a kept-alive connection after this many seconds with no request running.
    #[arg(long, env = "TABLEGRAPH_IDLE_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_secs: u64,
    /// Keep at most this many connections open: at the cap, a new connection closes the
    /// oldest idle one (or itself, when none is idle). Default: three quarters of the
    /// process's limit on open files.
    #[arg(long, env = "TABLEGRAPH_MAX_CONNECTIONS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Production mode: no introspection, no field suggestions, no GraphiQL, no storage-call
    /// reports in responses.
    #[arg(long, env = "TABLEGRAPH_PRODUCTION")]
    pub production: bool,
    /// Export traces over OTLP/HTTP to this collector (`http://localhost:4318`; spans go to its
    /// `/v1/traces`): a span per request and one per storage call. The standard `OTEL_*`
    /// variables also turn them on and tune them.
    #[arg(long, env = "TABLEGRAPH_OTLP_ENDPOINT", value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// A request header's name (RFC 9110's token), lower-cased.
fn header_name(name: &str) -> Result<String, String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("{name:?} is not a header name"));
    }
    Ok(name.to_ascii_lowercase())
}

/// A duration given as seconds, or a number with `s`, `m`, `h` or `d`.
fn duration_arg(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "{text:?}: write seconds, or a number with s, m, h or d"
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&secs| secs > 0)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?}: write a positive whole number, as 3600 or 24h"))
}

const fn default_lease_secs() -> u64 {
    crate::changes::LEASE_DURATION.as_secs()
}

impl ServeArgs {
    /// `--jwt-audience` values as (issuer, audience): the issuer is `None` for a value that
    /// names no configured issuer before its `=`.
    fn audiences(&self) -> impl Iterator<Item = (Option<&str>, &str)> {
        self.jwt_audience
            .iter()
            .map(|value| match value.split_once('=') {
                Some((issuer, audience)) if self.jwt_issuer.iter().any(|known| known == issuer) => {
                    (Some(issuer), audience)
                }
                _ => (None, value.as_str()),
            })
    }

    /// The audience tokens of `issuer` must be for: its own, else the one for every issuer.
    fn audience_of(&self, issuer: &str) -> Option<String> {
        let mut every = None;
        for (named, audience) in self.audiences() {
            match named {
                Some(named) if named == issuer => return Some(audience.to_owned()),
                Some(_) => {}
                None => every = Some(audience.to_owned()),
            }
        }
        every
    }

    /// Refuses keys named for several issuers at once: a JWKS file, URL or secret is one
    /// issuer's; and two audiences for the same issuers.
    pub fn check_issuers(&self) -> anyhow::Result<()> {
        let mut seen: Vec<Option<&str>> = Vec::new();
        for (issuer, _) in self.audiences() {
            anyhow::ensure!(
                !seen.contains(&issuer),
                "--jwt-audience is given twice for {}: give one AUD for every issuer, or \
                 ISSUER=AUD once for each",
                issuer.unwrap_or("every issuer")
            );
            seen.push(issuer);
        }
        let named_keys = self.jwt_jwks_file.is_some()
            || self.jwt_jwks_url.is_some()
            || self.jwt_hs256_secret.is_some();
        if named_keys && self.jwt_issuer.len() > 1 {
            anyhow::bail!(
                "--jwt-jwks-file, --jwt-jwks-url and --jwt-hs256-secret are the keys of one \
                 issuer; with several --jwt-issuer, leave them out and each issuer's keys are \
                 found by OIDC discovery"
            );
        }
        Ok(())
    }

    pub fn config(&self) -> ServeConfig {
        let mut http = HttpConfig {
            max_body_bytes: self.max_body_bytes,
            request_timeout: Duration::from_secs(self.request_timeout_secs),
            graphql: SchemaOptions {
                limits: QueryLimits {
                    max_depth: self.max_depth,
                    max_cost: self.max_cost,
                    max_aliases: self.max_aliases,
                    max_root_fields: self.max_root_fields,
                },
                max_storage_calls: self.max_storage_calls,
                max_filter_read_items: self.max_filter_read_items,
                max_event_bytes: self.max_event_bytes,
                max_subscriptions: self.max_subscriptions,
                max_pending_events: self.max_pending_events,
                ..SchemaOptions::default()
            },
            max_subscriptions_per_connection: self.max_subscriptions_per_connection,
            cors_allow_headers: self.cors_allow_headers.clone(),
            max_pending_sockets: self.max_pending_sockets,
            connections: ConnectionLimits {
                header_read_timeout: Duration::from_secs(self.header_read_timeout_secs),
                idle_timeout: Duration::from_secs(self.idle_timeout_secs),
                max_connections: self
                    .max_connections
                    .map(|cap| usize::try_from(cap).unwrap_or(usize::MAX)),
            },
            ..HttpConfig::default()
        };
        let keys = match (
            &self.jwt_jwks_file,
            &self.jwt_jwks_url,
            &self.jwt_hs256_secret,
        ) {
            (Some(path), _, _) => JwtKeys::JwksFile(path.clone()),
            (None, Some(url), _) => JwtKeys::JwksUrl(url.clone()),
            (None, None, Some(secret)) => JwtKeys::Hs256Secret(secret.clone()),
            (None, None, None) => JwtKeys::Discovered,
        };
        http.auth = AuthConfig {
            api_keys: self.api_keys.clone(),
            jwt: self
                .jwt_issuer
                .iter()
                .map(|issuer| JwtConfig {
                    keys: keys.clone(),
                    issuer: issuer.clone(),
                    audience: self.audience_of(issuer),
                    refetch_interval: DEFAULT_REFETCH_INTERVAL,
                })
                .collect(),
            owner_claim: self.owner_claim.clone(),
            jwt_max_lifetime: self.jwt_max_lifetime,
            groups_claim: Some(self.groups_claim.clone()),
        };
        http.cursor_keys = self.cursor_key.as_deref().map(|key| {
            std::sync::Arc::new(crate::keys::CursorKeys::from_secrets(
                key,
                self.cursor_key_previous.as_deref(),
            ))
        });
        if self.production {
            http.graphiql = false;
            http.expose_storage_calls = false;
            http.graphql.introspection = false;
        }
        ServeConfig {
            listen: self.listen,
            schema_path: self.schema.schema.clone(),
            resolvers_dir: self.schema.resolvers.clone(),
            store: self.store.config(),
            stream_lease: Duration::from_secs(self.stream_lease_secs),
            http,
        }
    }
}

impl Cli {
    /// Where spans go: only `serve` exports them (see [`crate::telemetry::TraceExport`]).
    pub fn traces(&self) -> Option<crate::telemetry::TraceExport> {
        match &self.command {
            Command::Serve(args) => {
                crate::telemetry::TraceExport::from_flag_and_env(args.otlp_endpoint.clone())
            }
            _ => None,
        }
    }
}

/// Runs a command; the process exit code follows its result.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => {
            args.check_issuers()?;
            let application = Application::build(&args.config()).await?;
            application
                .run_until_stopped(app::shutdown_signal())
                .await?;
        }
        Command::Migrate {
            schema,
            store,
            migrations,
            dry_run,
            progress_every_ms,
        } => {
            let every = Duration::from_millis(progress_every_ms);
            maintenance::migrate(&schema, &store, &migrations, dry_run, every).await?;
        }
        Command::Demo { schema, store } => {
            let (model, open) = open_existing(&schema, &store).await?;
            let outcome = crate::demo::load(&open.store, Arc::new(model)).await?;
            let mut out = std::io::stdout().lock();
            match outcome {
                crate::demo::DemoOutcome::Loaded { writes } => {
                    writeln!(out, "loaded the demo data set ({writes} mutations)")?;
                }
                crate::demo::DemoOutcome::AlreadyLoaded => {
                    writeln!(out, "the demo data set is already loaded")?;
                }
            }
        }
        Command::Schema { schema } => {
            let (model, resolvers) = app::load_schema(&schema.schema, schema.resolvers.as_deref())?;
            let sdl = crate::graphql::print_sdl(Arc::new(model), Arc::new(resolvers))
                .map_err(|e| anyhow::anyhow!("cannot build the GraphQL schema: {e}"))?;
            std::io::stdout().lock().write_all(sdl.as_bytes())?;
        }
        Command::Check {
            schema,
            store,
            repair,
        } => maintenance::check(&schema, &store, repair).await?,
        Command::Export {
            schema,
            store,
            output,
        } => {
            store.require_a_store()?;
            let (_model, open) = open_existing(&schema, &store).await?;
            let count = match output {
                Some(path) => {
                    let file = std::fs::File::create(&path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                    let mut out = std::io::BufWriter::new(file);
                    crate::transfer::export(&open.store, &mut out).await?
                }
                None => crate::transfer::export(&open.store, &mut std::io::stdout().lock()).await?,
            };
            writeln!(std::io::stderr().lock(), "exported {count} items")?;
        }
        Command::Import {
            schema,
            store,
            file,
        } => {
            // The file is read and checked whole before the store is opened (or made).
            let input = std::fs::File::open(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let import = crate::transfer::read_import(std::io::BufReader::new(input))
                .with_context(|| {
                    format!("{} was not imported; nothing was written", file.display())
                })?;
            let (model, open) = open_existing(&schema, &store).await?;
            let count = crate::transfer::import(&open.store, &import).await?;
            // The items may be in earlier formats: the next `migrate` looks at every node again.
            crate::migrate::forget_builtins(&open.store, &model).await?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "imported {count} items")?;
            if import.migration_records > 0 {
                writeln!(
                    out,
                    "left out {} records of tablegraph's own format migrations: they describe the \
                     table the file came from, and the next `migrate` applies them here",
                    import.migration_records
                )?;
            }
            if import.stream_items > 0 {
                writeln!(
                    out,
                    "left out {} stream leases and relay items: they belong to the change stream \
                     of the table the file came from",
                    import.stream_items
                )?;
            }
            writeln!(
                out,
                "run `tablegraph migrate` to bring them to today's formats (their type index, \
                 unique values, counts)"
            )?;
        }
        Command::Plan { schema } => {
            let (model, resolvers) = app::load_schema(&schema.schema, schema.resolvers.as_deref())?;
            let plans = crate::access_plan::plan(&model, &resolvers);
            std::io::stdout()
                .lock()
                .write_all(crate::access_plan::render(&plans).as_bytes())?;
        }
        Command::Token {
            jwt_hs256_secret,
            jwt_issuer,
            jwt_audience,
            sub,
            groups,
            expires_in,
        } => {
            let token = crate::auth::hs256_token(
                &jwt_hs256_secret,
                &crate::auth::TokenClaims {
                    issuer: jwt_issuer,
                    audience: jwt_audience,
                    subject: sub,
                    groups,
                    expires_in: Duration::from_secs(expires_in),
                },
            )?;
            writeln!(std::io::stdout().lock(), "{token}")?;
        }
        Command::Healthcheck {
            listen,
            store,
            ready,
        } => healthcheck(listen, store, ready).await?,
        Command::Store {
            listen,
            data_dir,
            memory,
        } => {
            let location = if memory {
                EmbeddedLocation::Memory
            } else {
                EmbeddedLocation::Directory(data_dir)
            };
            let store = crate::store::EmbeddedStore::start_on(&location, listen)?;
            tracing::info!(
                "store listening on {}",
                store.endpoint().unwrap_or_default()
            );
            app::shutdown_signal().await;
            drop(store);
            tracing::info!("stopped");
        }
    }
    Ok(())
}

async fn healthcheck(listen: SocketAddr, store: bool, ready: bool) -> anyhow::Result<()> {
    let mut address = listen;
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let path = match (store, ready) {
        (true, _) => "",
        (false, true) => "readyz",
        (false, false) => "healthz",
    };
    let url = format!("http://{address}/{path}");
    let response = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()?
        .get(&url)
        .send()
        .await
        .with_context(|| format!("no answer from {url}"))?;
    anyhow::ensure!(
        response.status().is_success(),
        "{url} answered {}",
        response.status()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(args: &[&str]) -> Result<ServeConfig, clap::Error> {
        let argv = ["tablegraph", "serve"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Serve(serve) => Ok(serve.config()),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_token_lifetime_is_seconds_or_a_number_with_its_unit() {
        for (given, secs) in [
            ("3600", 3600),
            ("90m", 5400),
            ("24h", 86_400),
            ("7d", 604_800),
        ] {
            assert_eq!(
                duration_arg(given),
                Ok(Duration::from_secs(secs)),
                "{given}"
            );
        }
        for refused in ["", "0", "h", "1.5h", "-1", "3w", "99999999999999999999d"] {
            assert!(duration_arg(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn api_keys_and_a_token_verifier_come_from_flags() {
        let config = serve(&[
            "--api-key",
            "one",
            "--api-key",
            "two",
            "--jwt-hs256-secret",
            "s3cret",
            "--jwt-issuer",
            "https://issuer.example",
        ])
        .expect("valid flags");
        assert_eq!(config.http.auth.api_keys, ["one", "two"]);
        let jwt = config
            .http
            .auth
            .jwt
            .first()
            .cloned()
            .expect("tokens are on");
        assert_eq!(jwt.issuer, "https://issuer.example");
        assert!(matches!(jwt.keys, JwtKeys::Hs256Secret(ref s) if s == "s3cret"));
    }

    #[test]
    fn issuers_alone_are_discovered_and_named_keys_belong_to_one_issuer() {
        let config = serve(&[
            "--jwt-issuer",
            "https://one.example",
            "--jwt-issuer",
            "https://two.example",
        ])
        .expect("valid flags");
        let issuers: Vec<&str> = config
            .http
            .auth
            .jwt
            .iter()
            .map(|j| j.issuer.as_str())
            .collect();
        assert_eq!(issuers, ["https://one.example", "https://two.example"]);
        assert!(
            config
                .http
                .auth
                .jwt
                .iter()
                .all(|j| matches!(j.keys, JwtKeys::Discovered))
        );
        let url = serve(&[
            "--jwt-jwks-url",
            "https://one.example/keys",
            "--jwt-issuer",
            "https://one.example",
        ])
        .expect("valid flags");
        assert!(
            matches!(&url.http.auth.jwt[0].keys, JwtKeys::JwksUrl(u) if u == "https://one.example/keys")
        );
        let argv = [
            "tablegraph",
            "serve",
            "--jwt-jwks-url",
            "https://one.example/keys",
            "--jwt-issuer",
            "https://one.example",
            "--jwt-issuer",
            "https://two.example",
        ];
        let Command::Serve(args) = Cli::try_parse_from(argv).expect("parses").command else {
            panic!("serve");
        };
        assert!(args.check_issuers().is_err());
    }

    #[test]
    fn an_audience_is_for_every_issuer_or_for_the_one_it_names() {
        let parse = |audiences: &[&str]| {
            let mut argv = vec![
                "tablegraph",
                "serve",
                "--jwt-issuer",
                "https://one.example",
                "--jwt-issuer",
                "https://two.example",
            ];
            for audience in audiences {
                argv.extend(["--jwt-audience", audience]);
            }
            let Command::Serve(args) = Cli::try_parse_from(argv).expect("parses").command else {
                panic!("serve");
            };
            args
        };
        let audiences = |args: &ServeArgs| {
            args.config()
                .http
                .auth
                .jwt
                .iter()
                .map(|issuer| issuer.audience.clone())
                .collect::<Vec<_>>()
        };
        let args = parse(&["https://one.example=client-one", "every-api"]);
        assert!(args.check_issuers().is_ok());
        assert_eq!(
            audiences(&args),
            [Some("client-one".to_owned()), Some("every-api".to_owned())]
        );
        let args = parse(&["https://two.example=client-two"]);
        assert_eq!(audiences(&args), [None, Some("client-two".to_owned())]);
        assert!(parse(&["a", "b"]).check_issuers().is_err());
        assert!(
            parse(&["https://one.example=a", "https://one.example=b"])
                .check_issuers()
                .is_err()
        );
    }

    #[test]
    fn a_token_verifier_needs_an_issuer_and_one_kind_of_key() {
        assert!(serve(&["--jwt-hs256-secret", "s3cret"]).is_err());
        assert!(serve(&["--jwt-jwks-url", "https://one.example/keys"]).is_err());
        assert!(
            serve(&[
                "--jwt-hs256-secret",
                "s3cret",
                "--jwt-jwks-file",
                "keys.json",
                "--jwt-issuer",
                "https://issuer.example",
            ])
            .is_err()
        );
    }
}
