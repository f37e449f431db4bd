//! Start-up and shutdown: schema file → model → listener → store and table → GraphQL schema →
//! router. Everything is built here once; a failure stops start-up with a precise message.
//!
//! The listener is bound as soon as the schema is read, and while the rest starts (opening the
//! store, upgrading stored formats: minutes on a large table) it answers `/healthz` with
//! `starting` and `/readyz` with 503 and what start-up waits for (`http::starting_router`).
//! Then that server stops and the API's own serves on the same socket: connections that arrive
//! between the two wait in the kernel's queue.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crate::auth::{AuthSetupError, Authenticator};
use crate::changes::{self, EventHub};
use crate::config::{ConnectionLimits, ServeConfig, StoreConfig, StoreTarget};
use crate::engine;
use crate::graphql;
use crate::http::{self, AppState};
use crate::migrate::{self, MigrationError};
use crate::model::{DialectChoice, Model, ModelError};
use crate::resolvers::{ResolverError, Resolvers};
use crate::store::{Credentials, EmbeddedStore, Store, StoreError, TableStatus};

/// Why the server did not start. A variant with a `source` leaves it out of its own message:
/// the error is printed once with its chain (`{:#}`), which names the cause.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot read {path}")]
    ReadSchema {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Migration(#[from] MigrationError),
    #[error(transparent)]
    Auth(#[from] AuthSetupError),
    #[error(transparent)]
    Resolver(#[from] ResolverError),
    #[error(transparent)]
    SlotLock(#[from] crate::slot_lock::LockError),
    #[error("{0}: {1}")]
    AmplifyFlags(String, String),
    #[error("cannot build the GraphQL schema: {0}")]
    Schema(String),
    #[error(transparent)]
    Functions(#[from] crate::functions::FunctionsError),
    #[error(
        "{0} has owner or group rules, and {1} token issuers are configured: a user of one \
         issuer could be taken for a user of another with the same {2}; configure one \
         --jwt-issuer for a schema with owner or group rules"
    )]
    IssuersShareIdentities(String, usize, &'static str),
    #[error("cannot serve TLS: {0}")]
    Tls(#[from] http::TlsError),
    #[error("cannot listen on {address}")]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
}

/// The `resolvers/` directory of a schema: `dir` when given, else the one beside the schema.
pub fn resolvers_dir(schema: &Path, dir: Option<&Path>) -> std::path::PathBuf {
    match dir {
        Some(dir) => dir.to_owned(),
        None => schema
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("resolvers"),
    }
}

/// Reads and validates a schema file and its resolvers; errors name the files as given.
/// Amplify's feature flags come from `choice`, then from the `amplify/cli.json` of the
/// schema's directory or the nearest one above it (a flag `choice` got from the command line
/// wins).
pub fn load_schema(
    schema: &Path,
    dir: Option<&Path>,
    choice: &DialectChoice,
) -> Result<(Model, Resolvers), StartupError> {
    let dir = resolvers_dir(schema, dir);
    let shown = schema.display().to_string();
    let source = read_schema(schema)?;
    let choice = with_cli_json(schema, choice)?;
    let model = Model::parse_with_resolver_files(
        &shown,
        &source.text,
        &Resolvers::fields_in(&dir),
        &Resolvers::functions_in(&dir)?,
        &crate::slot_lock::read(schema)?,
        &choice,
    )
    .map_err(|error| source.locate(error))?;
    let resolvers = Resolvers::load(&dir, &model)?;
    Ok((model, resolvers))
}

/// `choice` with the flags of the `amplify/cli.json` of the schema's directory or the nearest
/// one above it, where the command line chose none.
pub fn with_cli_json(schema: &Path, choice: &DialectChoice) -> Result<DialectChoice, StartupError> {
    let mut choice = choice.clone();
    if let Some(cli_json) = amplify_cli_json(schema) {
        let text =
            std::fs::read_to_string(&cli_json).map_err(|source| StartupError::ReadSchema {
                path: cli_json.display().to_string(),
                source,
            })?;
        choice.flags.read_cli_json(&text).map_err(|message| {
            StartupError::AmplifyFlags(cli_json.display().to_string(), message)
        })?;
        tracing::info!(file = %cli_json.display(), "read Amplify's feature flags");
    }
    if let Some(conf) = transform_conf(schema) {
        let text = std::fs::read_to_string(&conf).map_err(|source| StartupError::ReadSchema {
            path: conf.display().to_string(),
            source,
        })?;
        choice
            .conflict
            .read_transform_conf(&text)
            .map_err(|message| StartupError::AmplifyFlags(conf.display().to_string(), message))?;
    }
    Ok(choice)
}

/// The `transform.conf.json` beside the schema (an Amplify API's folder keeps it beside
/// `schema.graphql` or the `schema/` folder), whose `ResolverConfig` turns on conflict
/// detection.
fn transform_conf(schema: &Path) -> Option<std::path::PathBuf> {
    let conf = schema.parent()?.join("transform.conf.json");
    conf.is_file().then_some(conf)
}

/// A schema's text, and the files it was read from.
pub struct SchemaSource {
    pub text: String,
    /// Each file and the line of the text it starts at (from 1).
    files: Vec<(String, usize)>,
}

impl SchemaSource {
    /// `error` (at a line of the joined text) at the line of the file that holds it.
    fn locate(&self, mut error: ModelError) -> ModelError {
        if let Some((file, first)) = self
            .files
            .iter()
            .rev()
            .find(|(_, first)| *first <= error.line)
        {
            error.file = file.clone();
            error.line = error.line + 1 - first;
        }
        error
    }
}

/// The schema at `schema`: a file, or a directory whose `.graphql` files, in name order, are
/// one schema (Amplify's `schema/` folder).
pub fn read_schema(schema: &Path) -> Result<SchemaSource, StartupError> {
    let unreadable = |path: &Path| {
        let path = path.display().to_string();
        move |source| StartupError::ReadSchema { path, source }
    };
    if !schema.is_dir() {
        let text = std::fs::read_to_string(schema).map_err(unreadable(schema))?;
        let files = vec![(schema.display().to_string(), 1)];
        return Ok(SchemaSource { text, files });
    }
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(schema)
        .map_err(unreadable(schema))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "graphql"))
        .collect();
    paths.sort();
    let mut source = SchemaSource {
        text: String::new(),
        files: Vec::new(),
    };
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(unreadable(&path))?;
        let first = source.text.lines().count() + 1;
        source.files.push((path.display().to_string(), first));
        source.text.push_str(&text);
        if !text.ends_with('\n') {
            source.text.push('\n');
        }
    }
    Ok(source)
}

/// The `amplify/cli.json` of the schema's directory or of the nearest directory above it (an
/// Amplify project keeps its schema in `amplify/backend/api/<name>/`).
fn amplify_cli_json(schema: &Path) -> Option<std::path::PathBuf> {
    let start = std::fs::canonicalize(schema).ok()?;
    start
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("amplify").join("cli.json"))
        .find(|file| file.is_file())
}

/// A connected store, and the embedded server behind it when there is one.
pub struct OpenStore {
    pub store: Store,
    /// Kept alive as long as the store is used; dropping it stops the embedded server.
    embedded: Option<EmbeddedStore>,
}

impl OpenStore {
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }
}

pub async fn open_store(config: &StoreConfig) -> Result<OpenStore, StartupError> {
    match &config.target {
        StoreTarget::Embedded(location) => {
            let embedded = EmbeddedStore::start(location)?;
            let store = Store::connect_in_process(&embedded, &config.table, &config.tuning).await;
            Ok(OpenStore {
                store,
                embedded: Some(embedded),
            })
        }
        StoreTarget::Endpoint(url) => {
            let credentials = Credentials::for_endpoint(url);
            let store =
                Store::connect_with_credentials(url, credentials, &config.table, &config.tuning)
                    .await?;
            Ok(OpenStore {
                store,
                embedded: None,
            })
        }
    }
}

/// Whether any rule admits the callers of `provider`.
fn has_rules_of(model: &Model, provider: crate::model::Provider) -> bool {
    let type_rules = model.types.iter().flat_map(|type_def| {
        type_def
            .auth
            .iter()
            .chain(type_def.fields.iter().flat_map(|f| &f.auth))
    });
    type_rules
        .chain(model.own_fields.iter().flat_map(|own| &own.auth))
        .any(|rule| rule.provider == provider)
}

/// Owner and group rules compare a claim's value (`sub`, a user name, a group) with what a
/// node stores, whoever issued the token: with several issuers, one issuer's user could hold
/// another's name. Such schemas take one issuer.
fn refuse_mixed_identities(model: &Model, issuers: usize) -> Result<(), StartupError> {
    if issuers < 2 {
        return Ok(());
    }
    let personal = |rule: &crate::model::AuthRule| {
        !matches!(
            rule.allow,
            crate::model::Allow::Private
                | crate::model::Allow::Public
                | crate::model::Allow::Custom
        )
    };
    let ruled = model.types.iter().find(|type_def| {
        type_def
            .auth
            .iter()
            .chain(type_def.fields.iter().flat_map(|f| &f.auth))
            .any(personal)
    });
    match ruled {
        Some(type_def) => Err(StartupError::IssuersShareIdentities(
            type_def.name.clone(),
            issuers,
            "user name or group",
        )),
        None => Ok(()),
    }
}

/// How long a stopping server waits for its WebSockets to close.
const CLOSING_SOCKETS: std::time::Duration = std::time::Duration::from_secs(5);

/// The listening socket, shared by the server that answers while start-up runs and the one
/// that serves the API after it.
#[derive(Clone)]
struct SharedListener(Arc<tokio::net::TcpListener>);

/// The server that answers while start-up runs (`http::starting_router`), and what start-up
/// is doing. Stopped when the API serves, or when start-up fails (dropped).
struct Starting {
    phase: tokio::sync::watch::Sender<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Starting {
    fn serve(
        listener: SharedListener,
        limits: ConnectionLimits,
        tls: Option<http::Tls>,
    ) -> Starting {
        let phase = tokio::sync::watch::Sender::new("reading the schema".to_owned());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let router = http::starting_router(phase.subscribe());
        let server = tokio::spawn(async move {
            let stopped = async {
                let _ = stopped.await;
            };
            http::serve(listener.0, router, limits, None, tls, stopped).await;
        });
        Starting {
            phase,
            stop: Some(stop),
            server: Some(server),
        }
    }

    /// Start-up now does `what`: logged, and told on `/readyz`.
    fn phase(&self, what: impl Into<String>) {
        let what = what.into();
        tracing::info!("starting: {what}");
        self.phase.send_replace(what);
    }

    /// Start-up now does `what` (a progress line: told on `/readyz` only; `info` logs it).
    fn progress(&self, what: String) {
        self.phase.send_replace(what);
    }

    /// Stops the server, and waits for the requests it is answering.
    async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A server ready to run: bound, with its store open and table checked.
pub struct Application {
    listener: SharedListener,
    /// Answers while start-up runs; stopped when the API serves.
    starting: Option<Starting>,
    router: axum::Router,
    limits: ConnectionLimits,
    /// The certificate served, when the server speaks TLS.
    tls: Option<http::Tls>,
    state: AppState,
    store: OpenStore,
    events: EventHub,
}

impl Application {
    /// Starts up in the order the module's documentation gives: the schema, the listener
    /// (answering `/healthz` and `/readyz` from then on), the credentials' keys, the store and
    /// its table, the change stream, then the API. Each phase is logged as it begins.
    pub async fn build(config: &ServeConfig) -> Result<Application, StartupError> {
        let (model, resolvers) = load_schema(
            &config.schema_path,
            config.resolvers_dir.as_deref(),
            &config.dialect,
        )?;
        let model = Arc::new(model);
        log_dialect(&model);
        refuse_mixed_identities(&model, config.http.auth.jwt.len())?;
        warn_about_schema(&model, config);
        let (listener, tls, starting) = listen(config).await?;
        starting.phase("reading the credentials' keys");
        let authenticator = Authenticator::from_config(&config.http.auth).await?;
        starting.phase("opening the store");
        let mut store = open_store(&config.store).await?;
        if store.is_embedded() {
            prepare_embedded_table(&starting, &store.store, &model, config).await?;
        }
        starting.phase("checking the table");
        let table = migrate::verify_table(&store.store, &model).await?;
        if !store.is_embedded() {
            warn_of_pending_migrations(&store.store, &model).await?;
        }
        starting.phase("following the table's change stream");
        let events = EventHub::new(
            config.http.graphql.max_pending_events,
            config.http.graphql.max_subscriptions,
        );
        store.store = with_the_cache(store.store, &table, config);
        follow_changes(&events, &store, table.stream, config).await?;
        let options = graphql::SchemaOptions {
            resolvers: Arc::new(resolvers),
            functions: Arc::new(functions(&model, config).await?),
            denied_fields: config.http.auth.lambda_authorizer.is_some(),
            ..config.http.graphql.clone()
        };
        starting.phase("building the API");
        let api = ApiParts {
            model,
            options,
            events: &events,
            store: &store.store,
            authenticator,
        };
        let state = build_state(api, config)?;
        let router = http::router(state.clone(), &config.http);
        starting.phase("ready to serve the API");
        Ok(Application {
            listener,
            starting: Some(starting),
            router,
            limits: config.http.connections,
            tls,
            state,
            store,
            events,
        })
    }

    /// A handle on the table the server uses (for tools and tests that inspect it).
    pub fn store(&self) -> Store {
        self.store.store.clone()
    }

    /// The events subscriptions read (for tests that must know a subscription is in place).
    pub fn events(&self) -> EventHub {
        self.events.clone()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .0
            .local_addr()
            .expect("a bound TCP listener has a local address")
    }

    /// Serves until `shutdown` resolves, then lets running requests finish.
    pub async fn run_until_stopped(
        mut self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        if let Some(starting) = self.starting.take() {
            starting.finish().await;
        }
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        tracing::info!("listening on {scheme}://{}/graphql", self.local_addr());
        // A renewed certificate is served without a restart.
        let watching = self.tls.as_ref().map(http::Tls::watch);
        let state = self.state.clone();
        let shutdown = async move {
            shutdown.await;
            // WebSockets outlive the HTTP exchange that opened them: told apart.
            state.close_connections();
        };
        http::serve(
            self.listener.0,
            self.router,
            self.limits,
            Some(self.state.http_metrics()),
            self.tls,
            shutdown,
        )
        .await;
        if let Some(watching) = watching {
            watching.abort();
        }
        // Each WebSocket sends its close frame before the process ends; a peer that does not
        // read it gets a few seconds, no more.
        let _ = tokio::time::timeout(CLOSING_SOCKETS, self.state.connections_closed()).await;
        tracing::info!("stopped");
        drop(self.store);
        Ok(())
    }
}

/// Which dialect the schema is served in, and Amplify's flags when it is Amplify's.
fn log_dialect(model: &Model) {
    tracing::info!("{}", model.dialect);
    if model.dialect.language == crate::model::SchemaLanguage::Amplify {
        tracing::info!(flags = %model.dialect.flags.describe().join(", "), "Amplify's feature flags");
    }
}

/// What in the schema serves but may not be meant: the model's warnings, index slots not
/// pinned yet, and rules of a provider no flag configures (they admit nobody).
fn warn_about_schema(model: &Model, config: &ServeConfig) {
    for warning in &model.warnings {
        tracing::warn!("{warning}");
    }
    let unpinned = crate::slot_lock::unpinned(&config.schema_path, model);
    if !unpinned.is_empty() {
        tracing::info!(
            slots = %unpinned.join(", "),
            "index slots not pinned in {} yet: `tablegraph migrate` pins them, so that editing \
             the schema never moves them",
            crate::slot_lock::FILE_NAME
        );
    }
    if config.http.auth.lambda_authorizer.is_none()
        && has_rules_of(model, crate::model::Provider::Function)
    {
        tracing::warn!(
            "the schema has @aws_lambda or allow: custom rules and no --lambda-authorizer is \
             given: they admit nobody"
        );
    }
    if config.http.auth.iam_credentials.is_none()
        && has_rules_of(model, crate::model::Provider::Iam)
    {
        tracing::warn!(
            "the schema has @aws_iam or provider: iam rules and no --iam-credentials is \
             given: they admit nobody"
        );
    }
}

/// Binds the listener and starts the server that answers while start-up runs.
async fn listen(
    config: &ServeConfig,
) -> Result<(SharedListener, Option<http::Tls>, Starting), StartupError> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartupError::Listen {
            address: config.listen,
            source,
        })?;
    let listener = SharedListener(Arc::new(listener));
    let tls = config.http.tls.as_ref().map(http::Tls::load).transpose()?;
    let starting = Starting::serve(listener.clone(), config.http.connections, tls.clone());
    if let Ok(address) = listener.0.local_addr() {
        let scheme = if tls.is_some() { "https" } else { "http" };
        tracing::info!("starting: answering /healthz and /readyz on {scheme}://{address}");
    }
    Ok((listener, tls, starting))
}

/// The embedded store is ours: its table is made to match the schema, and what it holds is
/// brought to today's stored formats.
async fn prepare_embedded_table(
    starting: &Starting,
    store: &Store,
    model: &Model,
    config: &ServeConfig,
) -> Result<(), StartupError> {
    starting.phase("making the table match the schema");
    let report = migrate::ensure_table(store, model).await?;
    // A table made just now holds nothing written in an earlier format: the shipped
    // migrations are recorded as done, so that the next start does not run them.
    // (A store in memory starts empty every time: there is no next start to spare.)
    if report.created_table {
        let persistent = matches!(
            config.store.target,
            StoreTarget::Embedded(crate::store::EmbeddedLocation::Directory(_))
        );
        if persistent {
            migrate::record_builtins_applied(store, model).await?;
        }
    } else {
        starting.phase("upgrading stored formats");
        let pace = migrate::Pace::new(config.progress_every);
        let progress = |step: migrate::Step<'_>| {
            if let migrate::Step::Page { name, run } = step {
                starting.progress(format!(
                    "upgrading stored formats: {name}: {}",
                    pace.status(run)
                ));
            }
            if let Some(line) = pace.line(step) {
                tracing::info!("stored formats: {line}");
            }
        };
        migrate::upgrade_formats(store, model, &progress).await?;
    }
    Ok(())
}

/// A store of another process is upgraded by `tablegraph migrate`, not here: told when it
/// has yet to be.
async fn warn_of_pending_migrations(store: &Store, model: &Model) -> Result<(), StartupError> {
    let pending = migrate::pending_builtins(store, model).await?;
    if !pending.is_empty() {
        tracing::warn!(
            migrations = %pending.join(", "),
            "the table's items may predate today's formats; run `tablegraph migrate`"
        );
    }
    Ok(())
}

/// The store, reading through the cache when it is on. The read cache is kept exact by the
/// change stream, so it is on only when the stream is.
fn with_the_cache(store: Store, table: &TableStatus, config: &ServeConfig) -> Store {
    match (&table.stream, config.cache.bytes) {
        (_, 0) => {
            tracing::info!("the read cache is off (--cache-bytes 0)");
            store
        }
        (None, _) => {
            tracing::warn!(
                "the read cache is off: it is kept exact by the table's change stream, which is off"
            );
            store
        }
        (Some(_), bytes) => {
            let store = store.with_cache(&config.cache);
            tracing::info!(
                bytes,
                max_lag_ms = config.cache.max_lag.as_millis() as u64,
                "the read cache is on, kept exact by the table's change stream"
            );
            store
        }
    }
}

/// Subscriptions read the table's change stream, when it is on.
async fn follow_changes(
    events: &EventHub,
    store: &OpenStore,
    stream: Option<String>,
    config: &ServeConfig,
) -> Result<(), StartupError> {
    match stream {
        // The embedded store's stream is this process's alone; any other may have
        // other replicas reading it, so its shards are read under leases.
        Some(arn) if store.is_embedded() => {
            events
                .follow(store.store.clone(), arn, changes::EMBEDDED_POLL)
                .await?;
        }
        Some(arn) => {
            if config.scopes.cursor_keys.is_none() {
                tracing::warn!(
                    "no --cursor-key: each replica signs cursors with its own key, so a \
                     cursor one replica issued is refused by another; give them all one"
                );
            }
            events
                .follow_with_replicas(
                    store.store.clone(),
                    arn,
                    config.stream_lease,
                    changes::DYNAMODB_POLL,
                )
                .await?;
        }
        None => tracing::warn!(
            "the table's change stream is off, so subscriptions answer SubscriptionsUnavailable; \
             `tablegraph migrate` turns it on"
        ),
    }
    Ok(())
}

/// What the API's state is built from.
struct ApiParts<'a> {
    model: Arc<Model>,
    options: graphql::SchemaOptions,
    events: &'a EventHub,
    store: &'a Store,
    authenticator: Option<Authenticator>,
}

/// The GraphQL API, the rules its scopes hold callers to, and the state requests share.
fn build_state(parts: ApiParts<'_>, config: &ServeConfig) -> Result<AppState, StartupError> {
    let auth = &config.http.auth;
    let claims = engine::ClaimNames {
        owner: auth.owner_claim.clone(),
        groups: (auth.groups_claim.clone())
            .unwrap_or_else(|| engine::DEFAULT_GROUPS_CLAIM.to_owned()),
    };
    let rules = Arc::new(engine::Rules::of(&parts.model, claims));
    let api = graphql::Api::build(parts.model, &parts.options, parts.events.clone())
        .map_err(|e| StartupError::Schema(e.to_string()))?;
    let scopes =
        engine::ScopeSource::configured(parts.store.clone(), &config.scopes).with_rules(rules);
    Ok(AppState::new(
        api,
        scopes,
        parts.store.clone(),
        parts.events.clone(),
        parts.authenticator,
        &config.http,
    ))
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}

/// The functions the schema's own fields call, every one configured; a field that calls none
/// is told once, as it answers only errors.
async fn functions(
    model: &Model,
    config: &ServeConfig,
) -> Result<crate::functions::Functions, StartupError> {
    // `functions.toml` beside the schema lists functions too.
    let file = config.schema_path.with_file_name("functions.toml");
    let functions_config = match std::fs::read_to_string(&file) {
        Ok(text) => config
            .functions
            .clone()
            .with_file(&file.display().to_string(), &text)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => config.functions.clone(),
        Err(e) => {
            return Err(crate::functions::FunctionsError(format!(
                "cannot read {}: {e}",
                file.display()
            ))
            .into());
        }
    };
    let (timeout, request_timeout) = (config.functions.timeout, config.http.request_timeout);
    if !functions_config.endpoints.is_empty() && timeout >= request_timeout {
        return Err(crate::functions::FunctionsError(format!(
            "--function-timeout-secs ({}) must be under --request-timeout-secs ({}), so that a \
             slow function is its field's error, not the whole request's",
            timeout.as_secs(),
            request_timeout.as_secs()
        ))
        .into());
    }
    let functions = crate::functions::Functions::new(&functions_config).await?;
    functions.check_named(model.computed_fields().flat_map(|computed| {
        computed.functions.iter().map(move |function| {
            (
                format!("{}.{}", computed.owner, computed.name),
                function.clone(),
            )
        })
    }))?;
    // A LAMBDA conflict handler is a function like any other.
    functions.check_named(
        model
            .types
            .iter()
            .filter_map(|type_def| match &type_def.conflict {
                Some(crate::model::ConflictHandler::Lambda(function)) => Some((
                    format!("{}'s LAMBDA conflict handler", type_def.name),
                    function.clone(),
                )),
                _ => None,
            }),
    )?;
    // An `@http` URL's `${env}` and `${aws_region}` must stand for something.
    let http_calls = model.computed_fields().filter_map(|computed| computed.http);
    for call in http_calls {
        functions.url_of(&call.url)?;
    }
    for own in model
        .own_fields
        .iter()
        .filter(|own| own.functions.is_empty() && own.http.is_none())
    {
        tracing::warn!(
            "{}.{} has no resolver: it answers null with an error until it gets \
             @function(name:) or @http",
            own.root.name(),
            own.name
        );
    }
    Ok(functions)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(address: SocketAddr, path: &str) -> (u16, String) {
        let response = reqwest::get(format!("http://{address}{path}"))
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        (status, response.text().await.expect("a body"))
    }

    #[tokio::test]
    async fn while_it_starts_the_server_is_alive_not_ready_and_says_what_it_waits_for() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let address = listener.local_addr().expect("an address");
        let listener = SharedListener(Arc::new(listener));
        let starting = Starting::serve(listener.clone(), ConnectionLimits::default(), None);
        starting.phase("upgrading stored formats");
        assert_eq!(get(address, "/healthz").await, (200, "starting".to_owned()));
        assert_eq!(
            get(address, "/readyz").await,
            (503, "starting: upgrading stored formats".to_owned())
        );
        starting.progress("upgrading stored formats: 40 of about 100 items scanned".to_owned());
        let (status, body) = get(address, "/readyz").await;
        assert_eq!(status, 503);
        assert!(body.contains("40 of about 100"), "{body}");
        let (status, body) = get(address, "/graphql?query=%7B__typename%7D").await;
        assert_eq!(status, 503);
        assert!(
            body.contains("\"errorType\":\"ServiceUnavailable\""),
            "{body}"
        );

        // Then the API's server takes the same socket.
        starting.finish().await;
        let api = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
        let limits = ConnectionLimits::default();
        tokio::spawn(http::serve(
            listener.0,
            api,
            limits,
            None,
            None,
            std::future::pending(),
        ));
        assert_eq!(get(address, "/healthz").await, (200, "ok".to_owned()));
    }
}
