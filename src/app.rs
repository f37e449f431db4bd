//! Start-up and shutdown: schema file → model → store and table → GraphQL schema → router →
//! listener. Everything is built here once; a failure stops start-up with a precise message.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crate::auth::{AuthSetupError, Authenticator};
use crate::config::{ServeConfig, StoreConfig, StoreTarget};
use crate::engine::{self, EventHub};
use crate::graphql;
use crate::http::{self, AppState};
use crate::migrate::{self, MigrationError};
use crate::model::{Model, ModelError};
use crate::resolvers::{ResolverError, Resolvers};
use crate::store::{Credentials, EmbeddedStore, Store, StoreError};

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
    #[error("cannot build the GraphQL schema: {0}")]
    Schema(String),
    #[error(
        "{0} has owner or group rules, and {1} token issuers are configured: a user of one \
         issuer could be taken for a user of another with the same {2}; configure one \
         --jwt-issuer for a schema with owner or group rules"
    )]
    IssuersShareIdentities(String, usize, &'static str),
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
pub fn load_schema(schema: &Path, dir: Option<&Path>) -> Result<(Model, Resolvers), StartupError> {
    let dir = resolvers_dir(schema, dir);
    let shown = schema.display().to_string();
    let source = std::fs::read_to_string(schema).map_err(|source| StartupError::ReadSchema {
        path: shown.clone(),
        source,
    })?;
    let model = Model::parse_with_resolvers(&shown, &source, &Resolvers::fields_in(&dir))?;
    let resolvers = Resolvers::load(&dir, &model)?;
    Ok((model, resolvers))
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
            crate::model::Allow::Private | crate::model::Allow::Public
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

/// A server ready to run: bound, with its store open and table checked.
pub struct Application {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    state: AppState,
    store: OpenStore,
    events: EventHub,
}

impl Application {
    pub async fn build(config: &ServeConfig) -> Result<Application, StartupError> {
        let (model, resolvers) = load_schema(&config.schema_path, config.resolvers_dir.as_deref())?;
        let model = Arc::new(model);
        refuse_mixed_identities(&model, config.http.auth.jwt.len())?;
        let authenticator = Authenticator::from_config(&config.http.auth).await?;
        let store = open_store(&config.store).await?;
        if store.is_embedded() {
            // The embedded store is ours: make its table match the schema.
            let report = migrate::ensure_table(&store.store, &model).await?;
            // A table made just now holds nothing written in an earlier format: the shipped
            // migrations are recorded as done, so that the next start does not run them.
            // (A store in memory starts empty every time: there is no next start to spare.)
            if report.created_table {
                let persistent = matches!(
                    config.store.target,
                    StoreTarget::Embedded(crate::store::EmbeddedLocation::Directory(_))
                );
                if persistent {
                    migrate::record_builtins_applied(&store.store, &model).await?;
                }
            } else {
                migrate::upgrade_formats(&store.store, &model).await?;
            }
        }
        let table = migrate::verify_table(&store.store, &model).await?;
        if !store.is_embedded() {
            let pending = migrate::pending_builtins(&store.store, &model).await?;
            if !pending.is_empty() {
                tracing::warn!(
                    migrations = %pending.join(", "),
                    "the table's items may predate today's formats; run `tablegraph migrate`"
                );
            }
        }
        let events = EventHub::new(
            config.http.graphql.max_pending_events,
            config.http.graphql.max_subscriptions,
        );
        match table.stream {
            // The embedded store's stream is this process's alone; any other may have
            // other replicas reading it, so its shards are read under leases.
            Some(arn) if store.is_embedded() => {
                events
                    .follow(store.store.clone(), arn, engine::EMBEDDED_POLL)
                    .await?;
            }
            Some(arn) => {
                if config.http.cursor_keys.is_none() {
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
                        engine::DYNAMODB_POLL,
                    )
                    .await?;
            }
            None => tracing::warn!(
                "the table's change stream is off, so subscriptions answer SubscriptionsUnavailable; \
                 `tablegraph migrate` turns it on"
            ),
        }
        let options = graphql::SchemaOptions {
            resolvers: Arc::new(resolvers),
            ..config.http.graphql.clone()
        };
        let auth = &config.http.auth;
        let claims = engine::ClaimNames {
            owner: auth.owner_claim.clone(),
            groups: (auth.groups_claim.clone())
                .unwrap_or_else(|| engine::DEFAULT_GROUPS_CLAIM.to_owned()),
        };
        let rules = Arc::new(engine::Rules::of(&model, claims));
        let api = graphql::Api::build(model, &options, events.clone())
            .map_err(|e| StartupError::Schema(e.to_string()))?;
        let state = AppState::new(
            api,
            rules,
            store.store.clone(),
            events.clone(),
            authenticator,
            &config.http,
        );
        let router = http::router(state.clone(), &config.http);
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| StartupError::Listen {
                address: config.listen,
                source,
            })?;
        Ok(Application {
            listener,
            router,
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
            .local_addr()
            .expect("a bound TCP listener has a local address")
    }

    /// Serves until `shutdown` resolves, then lets running requests finish.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        tracing::info!("listening on http://{}/graphql", self.local_addr());
        let state = self.state.clone();
        let shutdown = async move {
            shutdown.await;
            // WebSockets outlive the HTTP exchange that opened them: told apart.
            state.close_connections();
        };
        let result = axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await;
        // Each WebSocket sends its close frame before the process ends; a peer that does not
        // read it gets a few seconds, no more.
        let _ = tokio::time::timeout(CLOSING_SOCKETS, self.state.connections_closed()).await;
        tracing::info!("stopped");
        drop(self.store);
        result
    }
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
