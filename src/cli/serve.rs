//! `tablegraph serve`'s flags, in the groups its help shows them (Listening, Store,
//! Credentials, Limits, Subscriptions, Telemetry), each turned into the settings of the part of
//! the server that uses it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::args::{SchemaArgs, StoreArgs};
use crate::auth::{AuthConfig, DEFAULT_REFETCH_INTERVAL, JwtConfig, JwtKeys};
use crate::config::{ConnectionLimits, HttpConfig, ServeConfig};
use crate::engine::ScopeSettings;
use crate::functions::FunctionsConfig;
use crate::graphql::{PersistedSettings, QueryLimits, SchemaOptions};
use crate::store::CacheSettings;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten, next_help_heading = "Listening")]
    pub listen: ListenArgs,
    #[command(flatten, next_help_heading = "Store")]
    pub schema: SchemaArgs,
    #[command(flatten, next_help_heading = "Store")]
    pub store: StoreArgs,
    #[command(flatten, next_help_heading = "Credentials")]
    pub credentials: CredentialArgs,
    #[command(flatten, next_help_heading = "Limits")]
    pub limits: LimitArgs,
    #[command(flatten, next_help_heading = "Read cache")]
    pub cache: CacheArgs,
    #[command(flatten, next_help_heading = "Subscriptions")]
    pub subscriptions: SubscriptionArgs,
    #[command(flatten, next_help_heading = "Functions")]
    pub functions: FunctionArgs,
    #[command(flatten, next_help_heading = "Telemetry")]
    pub telemetry: TelemetryArgs,
}

/// The read cache in front of the store (`store::cache`), kept exact by the change stream.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// Keep at most this many bytes of items and pages read, in each process; 0 turns the
    /// cache off. Default: a sixteenth of the memory the process may use (its cgroup's limit,
    /// else the machine's), between 16 MiB and 256 MiB.
    #[arg(long, env = "TABLEGRAPH_CACHE_BYTES")]
    pub cache_bytes: Option<u64>,
    /// Serve from the cache only while the table's change stream was read up to at most this
    /// long ago (`500ms`, `1s`, `5s`): how far behind another replica's writes a read may be.
    /// Reads bypass the cache while the stream is further behind.
    #[arg(long, env = "TABLEGRAPH_CACHE_MAX_LAG", value_name = "DURATION", default_value = "1s", value_parser = duration_arg)]
    pub cache_max_lag: Duration,
}

impl CacheArgs {
    pub fn settings(&self) -> CacheSettings {
        CacheSettings {
            bytes: self
                .cache_bytes
                .unwrap_or_else(crate::store::default_cache_bytes),
            max_lag: self.cache_max_lag,
        }
    }
}

/// Where the server listens, how it bounds its connections, and what it shows.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// The address to listen on.
    #[arg(long, env = "TABLEGRAPH_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Close a connection that sends no request head within this many seconds: a new
    /// connection that sends nothing, or one sending a request's head too slowly.
    #[arg(long, env = "TABLEGRAPH_HEADER_READ_TIMEOUT_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout_secs: u64,
    /// Close a kept-alive connection after this many seconds with no request running.
    #[arg(long, env = "TABLEGRAPH_IDLE_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_secs: u64,
    /// Keep at most this many connections open: at the cap, a new connection closes the
    /// oldest idle one (or itself, when none is idle). Default: three quarters of the
    /// process's limit on open files.
    #[arg(long, env = "TABLEGRAPH_MAX_CONNECTIONS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Let at most this many WebSockets wait for `connection_init` at once; past it the one
    /// that waited longest is closed (`4408`, which clients retry).
    #[arg(long, env = "TABLEGRAPH_MAX_PENDING_SOCKETS", default_value_t = HttpConfig::default().max_pending_sockets, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_pending_sockets: usize,
    /// Serve https:// and wss:// with this certificate chain (PEM), with --tls-key. Read
    /// again on SIGHUP and when the file changes.
    #[arg(
        long,
        env = "TABLEGRAPH_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(
        long,
        env = "TABLEGRAPH_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<std::path::PathBuf>,
    /// Keep at most this many automatic persisted queries (Apollo's APQ) by their hash; 0
    /// turns them off.
    #[arg(long, env = "TABLEGRAPH_MAX_PERSISTED_QUERIES", default_value_t = PersistedSettings::default().most)]
    pub max_persisted_queries: usize,
    /// Keep the automatic persisted queries within this many bytes: their texts, and the
    /// parsed documents of the small ones.
    #[arg(long, env = "TABLEGRAPH_MAX_PERSISTED_QUERY_BYTES", default_value_t = PersistedSettings::default().most_bytes)]
    pub max_persisted_query_bytes: usize,
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
    /// Production mode: no introspection, no field suggestions, no GraphiQL, no storage-call
    /// reports in responses.
    #[arg(long, env = "TABLEGRAPH_PRODUCTION")]
    pub production: bool,
}

/// Who may call the API, and the keys of what it hands out.
#[derive(Debug, Args)]
pub struct CredentialArgs {
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
    /// Let this function decide on requests whose Authorization header holds no JWT of a
    /// configured issuer, as AppSync's Lambda authorizer: an http:// or https:// URL sent the
    /// authorizer's event as a JSON POST, or lambda:FUNCTION.
    #[arg(long, env = "TABLEGRAPH_LAMBDA_AUTHORIZER", value_name = "URL")]
    pub lambda_authorizer: Option<String>,
    /// Seconds the authorizer's decision on a token is kept, when its answer gives no
    /// ttlOverride.
    #[arg(long, env = "TABLEGRAPH_LAMBDA_AUTHORIZER_TTL", value_name = "SECS", default_value_t = crate::auth::DEFAULT_TTL.as_secs())]
    pub lambda_authorizer_ttl: u64,
    /// Accept requests signed with Signature Version 4 by the long-term access keys this TOML
    /// file lists (a table per access key id: secret, account_id, user_arn, and optionally
    /// username), as AppSync's IAM authorization.
    #[arg(long, env = "TABLEGRAPH_IAM_CREDENTIALS", value_name = "FILE")]
    pub iam_credentials: Option<std::path::PathBuf>,
    /// The region an IAM signature's credential scope must name (its service must be
    /// `appsync`) [default: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1].
    #[arg(long, env = "TABLEGRAPH_IAM_REGION", requires = "iam_credentials")]
    pub iam_region: Option<String>,
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
    /// Seal Relay cursors (AES-256-GCM-SIV) under a key derived from this secret, so that a
    /// client can neither read nor forge one; every replica must be given the same. Without
    /// it, each process seals with a random key of its own.
    #[arg(long, env = "TABLEGRAPH_CURSOR_KEY", hide_env_values = true)]
    pub cursor_key: Option<String>,
    /// While rotating the cursor key: the key before, whose cursors are still accepted.
    #[arg(
        long,
        env = "TABLEGRAPH_CURSOR_KEY_PREVIOUS",
        hide_env_values = true,
        value_name = "OLD",
        requires = "cursor_key"
    )]
    pub cursor_key_previous: Option<String>,
}

/// What one request may ask of the server.
#[derive(Debug, Args)]
pub struct LimitArgs {
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
    #[arg(long, env = "TABLEGRAPH_MAX_STORAGE_CALLS", default_value_t = ScopeSettings::default().max_storage_calls)]
    pub max_storage_calls: usize,
    /// Items a filtered page (`filter:` on a list, index query or connection) may evaluate; a
    /// page that reaches it before it is full ends there, and says so in `extensions.filters`.
    #[arg(long, env = "TABLEGRAPH_MAX_FILTER_READ_ITEMS", default_value_t = ScopeSettings::default().filter_budget, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_filter_read_items: usize,
}

/// Subscriptions, and the change stream they are fed from.
#[derive(Debug, Args)]
pub struct SubscriptionArgs {
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
}

/// Where the functions of the schema's own fields (`@function(name:)`) run.
#[derive(Debug, Args)]
pub struct FunctionArgs {
    /// Call function NAME at URL: an HTTP endpoint that receives each call's event as a JSON
    /// POST and answers the field's value as JSON, or lambda:FUNCTION, an AWS Lambda function
    /// (its name or ARN) invoked through the SDK (repeat for several; the variable takes a
    /// space-separated list, as a URL holds no space but may hold commas).
    #[arg(
        long = "function",
        env = "TABLEGRAPH_FUNCTIONS",
        value_delimiter = ' ',
        value_name = "NAME=URL",
        value_parser = function_endpoint
    )]
    pub functions: Vec<(String, String)>,
    /// Send function NAME the calls of one level of a request together, at most MAX a call, as
    /// a list of events answered by a list of values (AppSync's BatchInvoke; repeat for
    /// several; the variable takes a space-separated list).
    #[arg(
        long = "function-batch",
        env = "TABLEGRAPH_FUNCTION_BATCH",
        value_delimiter = ' ',
        value_name = "NAME=MAX",
        value_parser = function_batch
    )]
    pub function_batch: Vec<(String, usize)>,
    /// What `${env}` in a function's name stands for, as Amplify names functions per
    /// environment (`getSensorData-${env}`).
    #[arg(long, env = "TABLEGRAPH_ENV", value_name = "ENV")]
    pub env: Option<String>,
    /// A call that has not answered after this many seconds is the field's error.
    #[arg(long, env = "TABLEGRAPH_FUNCTION_TIMEOUT_SECS", default_value_t = FunctionsConfig::default().timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub function_timeout_secs: u64,
    /// Calls of one function that may run at once; others wait their turn.
    #[arg(long, env = "TABLEGRAPH_FUNCTION_CONCURRENCY", default_value_t = FunctionsConfig::default().concurrency, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub function_concurrency: usize,
    /// The address of the Lambda API that lambda:FUNCTION addresses are invoked at, instead of
    /// the region's (a local emulator; AWS_ENDPOINT_URL_LAMBDA works too).
    #[arg(long, env = "TABLEGRAPH_LAMBDA_ENDPOINT", value_name = "URL")]
    pub lambda_endpoint: Option<String>,
}

impl FunctionArgs {
    fn config(&self) -> FunctionsConfig {
        FunctionsConfig {
            endpoints: self.functions.clone(),
            env: self.env.clone(),
            timeout: Duration::from_secs(self.function_timeout_secs),
            concurrency: self.function_concurrency,
            batch: self.function_batch.clone(),
            lambda_endpoint: self.lambda_endpoint.clone(),
        }
    }
}

/// `NAME=URL`.
fn function_endpoint(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, url)) if !name.is_empty() && !url.is_empty() => {
            Ok((name.to_owned(), url.to_owned()))
        }
        _ => Err("give NAME=URL".to_owned()),
    }
}

/// `NAME=MAX`, MAX a positive number.
fn function_batch(text: &str) -> Result<(String, usize), String> {
    match text.split_once('=') {
        Some((name, max)) if !name.is_empty() => match max.parse::<usize>() {
            Ok(max) if max > 0 => Ok((name.to_owned(), max)),
            _ => Err("MAX must be a whole number above 0".to_owned()),
        },
        _ => Err("give NAME=MAX".to_owned()),
    }
}

/// Where traces go.
#[derive(Debug, Args)]
pub struct TelemetryArgs {
    /// Export traces over OTLP/HTTP to this collector (`http://localhost:4318`; spans go to its
    /// `/v1/traces`): a span per request and one per storage call. The standard `OTEL_*`
    /// variables also turn them on and tune them.
    #[arg(long, env = "TABLEGRAPH_OTLP_ENDPOINT", value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

impl ServeArgs {
    /// The server's settings.
    pub fn config(&self) -> ServeConfig {
        let listen = &self.listen;
        let limits = &self.limits;
        let subscriptions = &self.subscriptions;
        let mut http = HttpConfig {
            max_body_bytes: limits.max_body_bytes,
            request_timeout: Duration::from_secs(limits.request_timeout_secs),
            graphql: SchemaOptions {
                limits: limits.query_limits(),
                max_event_bytes: subscriptions.max_event_bytes,
                max_subscriptions: subscriptions.max_subscriptions,
                max_pending_events: subscriptions.max_pending_events,
                persisted: PersistedSettings {
                    most: listen.max_persisted_queries,
                    most_bytes: listen.max_persisted_query_bytes,
                },
                ..SchemaOptions::default()
            },
            max_subscriptions_per_connection: subscriptions.max_subscriptions_per_connection,
            cors_allow_headers: listen.cors_allow_headers.clone(),
            max_pending_sockets: listen.max_pending_sockets,
            connections: listen.connection_limits(),
            tls: listen
                .tls_cert
                .clone()
                .zip(listen.tls_key.clone())
                .map(|(cert, key)| crate::config::TlsFiles { cert, key }),
            auth: self.credentials.auth_config(&self.functions),
            ..HttpConfig::default()
        };
        if listen.production {
            http.graphiql = false;
            http.expose_storage_calls = false;
            http.graphql.introspection = false;
        }
        ServeConfig {
            listen: listen.listen,
            schema_path: self.schema.schema.clone(),
            resolvers_dir: self.schema.resolvers.clone(),
            store: self.store.config(),
            cache: self.cache.settings(),
            stream_lease: Duration::from_secs(subscriptions.stream_lease_secs),
            functions: self.functions.config(),
            scopes: ScopeSettings {
                max_storage_calls: limits.max_storage_calls,
                filter_budget: limits.max_filter_read_items,
                cursor_keys: self.credentials.cursor_keys(),
            },
            http,
            dialect: self.schema.dialect(),
            progress_every: self.store.progress_every(),
        }
    }
}

impl ListenArgs {
    fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            max_connections: self
                .max_connections
                .map(|cap| usize::try_from(cap).unwrap_or(usize::MAX)),
        }
    }
}

impl LimitArgs {
    fn query_limits(&self) -> QueryLimits {
        QueryLimits {
            max_depth: self.max_depth,
            max_cost: self.max_cost,
            max_aliases: self.max_aliases,
            max_root_fields: self.max_root_fields,
        }
    }
}

impl CredentialArgs {
    /// The API keys, token issuers and Lambda authorizer the server accepts; the authorizer is
    /// called as functions are (`functions`: its timeout, the Lambda API's address).
    fn auth_config(&self, functions: &FunctionArgs) -> AuthConfig {
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
        AuthConfig {
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
            lambda_authorizer: self.lambda_authorizer.as_ref().map(|address| {
                crate::auth::LambdaAuthorizerConfig {
                    address: address.clone(),
                    ttl: Duration::from_secs(self.lambda_authorizer_ttl),
                    timeout: Duration::from_secs(functions.function_timeout_secs),
                    lambda_endpoint: functions.lambda_endpoint.clone(),
                }
            }),
            iam_credentials: self.iam_credentials.clone(),
            iam_region: self.iam_region.clone(),
        }
    }

    /// The keys cursors are sealed with, when given.
    fn cursor_keys(&self) -> Option<std::sync::Arc<crate::keys::CursorKeys>> {
        self.cursor_key.as_deref().map(|key| {
            std::sync::Arc::new(crate::keys::CursorKeys::from_secrets(
                key,
                self.cursor_key_previous.as_deref(),
            ))
        })
    }

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
}

/// A request header's name (RFC 9110's token), lower-cased.
fn header_name(name: &str) -> Result<String, String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("{name:?} is not a header name"));
    }
    Ok(name.to_ascii_lowercase())
}

/// A duration given as seconds, or a number with `ms`, `s`, `m`, `h` or `d`.
pub(super) fn duration_arg(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let millis = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "{text:?}: write seconds, or a number with ms, s, m, h or d"
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(millis))
        .filter(|&millis| millis > 0)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?}: write a positive whole number, as 3600 or 24h"))
}

const fn default_lease_secs() -> u64 {
    crate::changes::LEASE_DURATION.as_secs()
}
