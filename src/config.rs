//! Settings, gathered once at start-up from flags and `TABLEGRAPH_*` variables (see `cli`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::auth::AuthConfig;
use crate::engine::ScopeSettings;
use crate::functions::FunctionsConfig;
use crate::graphql::SchemaOptions;
use crate::store::{EmbeddedLocation, StoreTuning};

/// Where the table lives and what it is called.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub target: StoreTarget,
    pub table: String,
    /// Simulated latency and injected faults (tests and benchmarks only).
    pub tuning: StoreTuning,
}

#[derive(Debug, Clone)]
pub enum StoreTarget {
    /// The embedded store, started in-process; the table is created on start.
    Embedded(EmbeddedLocation),
    /// A DynamoDB-compatible endpoint; the table must have been created by `migrate`.
    Endpoint(String),
}

/// HTTP limits and the GraphQL schema's own limits.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Larger request bodies are refused with 413 before they are read.
    pub max_body_bytes: usize,
    /// A request still running after this answers 408 and is dropped.
    pub request_timeout: Duration,
    pub graphiql: bool,
    /// Whether a client may ask for its storage calls in `extensions` (they name indexes).
    pub expose_storage_calls: bool,
    pub graphql: SchemaOptions,
    /// API keys and tokens; with none configured the API is open.
    pub auth: AuthConfig,
    /// Operations one WebSocket connection may run at once; past it, a `subscribe` answers
    /// an `error` message (`LimitExceeded`).
    pub max_subscriptions_per_connection: usize,
    /// Request headers a browser's script may send besides those every client needs
    /// (`--cors-allow-header`): a CORS preflight allows both.
    pub cors_allow_headers: Vec<String>,
    /// How long a graphql-sse reservation (`PUT /graphql`) waits for its stream to open.
    pub sse_reservation_ttl: Duration,
    /// How long a connection may stay silent, and how many may be open.
    pub connections: ConnectionLimits,
    /// WebSockets that may wait for `connection_init` at once (`--max-pending-sockets`); past
    /// it the one that waited longest closes with `4408`.
    pub max_pending_sockets: usize,
    /// The certificate and key to serve `https://` and `wss://` with (`--tls-cert`,
    /// `--tls-key`); plain HTTP without.
    pub tls: Option<TlsFiles>,
}

/// A certificate chain and its private key, in PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
}

/// How the server bounds its TCP connections (`http::serve`).
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// A connection's first byte, and each request's head once its first byte came, must
    /// arrive within this (`--header-read-timeout-secs`).
    pub header_read_timeout: Duration,
    /// A kept-alive connection with no request running is closed after this
    /// (`--idle-timeout-secs`).
    pub idle_timeout: Duration,
    /// Connections open at once (`--max-connections`); `None`: three quarters of the
    /// process's descriptor limit.
    pub max_connections: Option<usize>,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: None,
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            // Large enough for any item DynamoDB accepts (400 KB), so oversized values get a
            // precise GraphQL error rather than a bare 413.
            max_body_bytes: 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            graphiql: true,
            expose_storage_calls: true,
            graphql: SchemaOptions::default(),
            auth: AuthConfig::default(),
            max_subscriptions_per_connection: 100,
            cors_allow_headers: Vec::new(),
            sse_reservation_ttl: Duration::from_secs(60),
            connections: ConnectionLimits::default(),
            tls: None,
            max_pending_sockets: 256,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub schema_path: PathBuf,
    /// The declarative resolvers; `None` means the `resolvers/` directory beside the schema.
    pub resolvers_dir: Option<PathBuf>,
    pub store: StoreConfig,
    /// The read cache in front of the store (`store::cache`); off in [`CacheSettings::off`].
    pub cache: crate::store::CacheSettings,
    /// How long a replica's lease on a shard of the table's change stream lasts unless renewed
    /// (`changes/relay.rs`); a replica that stops is replaced as the shard's reader after it.
    pub stream_lease: Duration,
    /// What each request's scope is made with: its read limits and cursor keys.
    pub scopes: ScopeSettings,
    /// Where the functions of `@function` fields run.
    pub functions: FunctionsConfig,
    pub http: HttpConfig,
    /// The schema's language, the API's shape and Amplify's flags, where chosen.
    pub dialect: crate::model::DialectChoice,
    /// How often a start-up phase's progress is logged at most ([`crate::progress::PACE`]).
    pub progress_every: Duration,
}
