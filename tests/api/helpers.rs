//! Starting a server for one test and talking GraphQL to it.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde_json::{Value, json};
use tablegraph::app::Application;
use tablegraph::changes::EventHub;
use tablegraph::config::{HttpConfig, ServeConfig, StoreConfig, StoreTarget};
use tablegraph::engine::ScopeSettings;
use tablegraph::functions::FunctionsConfig;
use tablegraph::model::Model;
use tablegraph::store::{EmbeddedLocation, Store, StoreTuning};

pub struct TestApp {
    pub address: SocketAddr,
    pub client: reqwest::Client,
    /// The server's table, for checking what was stored.
    pub store: Store,
    pub model: Model,
    /// What subscriptions read, to know when one is in place.
    pub events: EventHub,
}

/// Asserts that `printed` is the golden file `golden` (a repository path); with
/// `UPDATE_GOLDEN` set, rewrites the file first (then review its diff).
pub fn assert_golden(golden: &str, printed: &str) {
    let path = repository_file(golden);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, printed).expect("the golden file is writable");
    }
    let expected = std::fs::read_to_string(&path).expect("the golden file exists");
    assert!(
        printed == expected,
        "the printed SDL differs from {golden}; run UPDATE_GOLDEN=1 cargo test and review the diff"
    );
}

pub fn repository_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Starts the server with the default schema on a fresh in-memory store, on a free port.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(HttpConfig::default()).await
}

pub async fn spawn_app_with(http: HttpConfig) -> TestApp {
    spawn(http, "schema.graphql", StoreTuning::default()).await
}

/// Starts the server with the schema at `schema` (relative to the repository).
pub async fn spawn_app_with_schema(schema: &str) -> TestApp {
    spawn(HttpConfig::default(), schema, StoreTuning::default()).await
}

/// Starts the server with the schema at `schema` and these HTTP settings.
pub async fn spawn_app_with_schema_and(schema: &str, http: HttpConfig) -> TestApp {
    spawn(http, schema, StoreTuning::default()).await
}

/// Starts the server with the default schema on a store with simulated latency or faults.
pub async fn spawn_app_tuned(http: HttpConfig, tuning: StoreTuning) -> TestApp {
    spawn(http, "schema.graphql", tuning).await
}

/// Starts the server with the schema at `schema`, these HTTP settings and this store.
pub async fn spawn_schema_tuned(http: HttpConfig, schema: &str, tuning: StoreTuning) -> TestApp {
    spawn(http, schema, tuning).await
}

/// Starts the server with the default schema, each request's scope made with `scopes`.
pub async fn spawn_app_scoped(scopes: ScopeSettings) -> TestApp {
    spawn_configured(
        Settings {
            scopes,
            ..Settings::default()
        },
        "schema.graphql",
    )
    .await
}

/// Starts the server with the schema at `schema`, each request's scope made with `scopes`.
pub async fn spawn_schema_scoped(schema: &str, scopes: ScopeSettings) -> TestApp {
    spawn_configured(
        Settings {
            scopes,
            ..Settings::default()
        },
        schema,
    )
    .await
}

/// Starts the server with the schema at `schema`, its functions as `functions` says.
pub async fn spawn_app_with_functions(schema: &str, functions: FunctionsConfig) -> TestApp {
    spawn_app_with_functions_and(schema, HttpConfig::default(), functions).await
}

/// The same, with these HTTP settings (credentials).
pub async fn spawn_app_with_functions_and(
    schema: &str,
    http: HttpConfig,
    functions: FunctionsConfig,
) -> TestApp {
    spawn_configured(
        Settings {
            http,
            functions,
            ..Settings::default()
        },
        schema,
    )
    .await
}

async fn spawn(http: HttpConfig, schema: &str, tuning: StoreTuning) -> TestApp {
    spawn_configured(
        Settings {
            http,
            tuning,
            ..Settings::default()
        },
        schema,
    )
    .await
}

/// A server for `schema` in the language, shape and Amplify flags of `dialect`.
pub async fn spawn_app_as(
    schema: &str,
    http: HttpConfig,
    dialect: tablegraph::model::DialectChoice,
    functions: FunctionsConfig,
) -> TestApp {
    spawn_configured(
        Settings {
            http,
            dialect,
            functions,
            ..Settings::default()
        },
        schema,
    )
    .await
}

/// The settings a test server starts with besides its schema. The read cache is off unless
/// asked for, so that the tests that count storage calls count a cold read's.
#[derive(Default)]
struct Settings {
    http: HttpConfig,
    scopes: ScopeSettings,
    functions: FunctionsConfig,
    tuning: StoreTuning,
    dialect: tablegraph::model::DialectChoice,
    cache: tablegraph::store::CacheSettings,
    /// The store: the embedded one in memory unless given.
    target: Option<StoreTarget>,
}

/// A server for `schema` with the read cache by `cache`, on the embedded store.
pub async fn spawn_app_cached(schema: &str, cache: tablegraph::store::CacheSettings) -> TestApp {
    spawn_configured(
        Settings {
            cache,
            ..Settings::default()
        },
        schema,
    )
    .await
}

/// A server for `schema` with `http`'s credentials and the read cache by `cache`.
pub async fn spawn_cached_with(
    schema: &str,
    http: HttpConfig,
    cache: tablegraph::store::CacheSettings,
) -> TestApp {
    spawn_configured(
        Settings {
            http,
            cache,
            ..Settings::default()
        },
        schema,
    )
    .await
}

/// A replica serving the default schema from the table at `endpoint` (made by `migrate`), with
/// the read cache by `cache`.
pub async fn spawn_replica(endpoint: &str, cache: tablegraph::store::CacheSettings) -> TestApp {
    spawn_configured(
        Settings {
            cache,
            target: Some(StoreTarget::Endpoint(endpoint.to_owned())),
            ..Settings::default()
        },
        "schema.graphql",
    )
    .await
}

/// A replica serving `schema` from the table at `endpoint` (made by `migrate`), with `http`'s
/// credentials and `functions`.
pub async fn spawn_replica_with(
    endpoint: &str,
    schema: &str,
    http: HttpConfig,
    functions: FunctionsConfig,
) -> TestApp {
    spawn_configured(
        Settings {
            http,
            functions,
            target: Some(StoreTarget::Endpoint(endpoint.to_owned())),
            ..Settings::default()
        },
        schema,
    )
    .await
}

async fn spawn_configured(settings: Settings, schema: &str) -> TestApp {
    let Settings {
        http,
        scopes,
        functions,
        tuning,
        dialect,
        cache,
        target,
    } = settings;
    let config = ServeConfig {
        dialect: dialect.clone(),
        progress_every: tablegraph::progress::PACE,
        listen: "127.0.0.1:0".parse().expect("a literal socket address"),
        schema_path: repository_file(schema),
        resolvers_dir: None,
        cache,
        stream_lease: tablegraph::changes::LEASE_DURATION,
        store: StoreConfig {
            target: target.unwrap_or(StoreTarget::Embedded(EmbeddedLocation::Memory)),
            table: "tablegraph".to_owned(),
            tuning,
        },
        scopes,
        functions,
        http,
    };
    let application = Application::build(&config)
        .await
        .expect("the test server starts");
    let address = application.local_addr();
    let store = application.store();
    let events = application.events();
    tokio::spawn(application.run_until_stopped(std::future::pending()));
    TestApp {
        address,
        client: reqwest::Client::new(),
        store,
        events,
        model: tablegraph::app::load_schema(&repository_file(schema), None, &dialect)
            .expect("the schema loads")
            .0,
    }
}

impl TestApp {
    /// Checks every invariant of the table and panics with the violations if any is broken.
    pub async fn assert_table_consistent(&self) -> tablegraph::check::Report {
        let report = tablegraph::check::check(&self.store, &self.model)
            .await
            .expect("the table can be scanned");
        assert!(
            report.is_clean(),
            "broken invariants: {:#?}",
            report.violations
        );
        report
    }

    /// The server's `/metrics`, as a scraper reads it.
    pub async fn metrics(&self) -> String {
        self.client
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("answers")
            .text()
            .await
            .expect("a body")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// POSTs a GraphQL request and returns the response body.
    pub async fn graphql(&self, query: &str, variables: Value) -> Value {
        self.post(query, variables, false).await
    }

    /// POSTs a GraphQL request with `headers` (credentials, say); answers the status and the
    /// body (`null` when it is not JSON).
    pub async fn graphql_with(
        &self,
        headers: &[(&str, &str)],
        query: &str,
        variables: Value,
    ) -> (u16, Value) {
        let mut request = self
            .client
            .post(self.url("/graphql"))
            .json(&json!({ "query": query, "variables": variables }));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the server answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// POSTs a GraphQL request asking for its storage calls; returns the body and the calls as
    /// `Operation` or `Operation:index` strings.
    pub async fn graphql_counted(&self, query: &str, variables: Value) -> (Value, Vec<String>) {
        let body = self.post(query, variables, true).await;
        let calls = call_names(&body["extensions"]["storageCalls"])
            .expect("the response lists its storage calls");
        (body, calls)
    }

    /// The same, with the reads the read cache answered, named the same way.
    pub async fn graphql_cached(
        &self,
        query: &str,
        variables: Value,
    ) -> (Value, Vec<String>, Vec<String>) {
        let (body, calls) = self.graphql_counted(query, variables).await;
        let hits = call_names(&body["extensions"]["cacheHits"]).unwrap_or_default();
        (body, calls, hits)
    }

    async fn post(&self, query: &str, variables: Value, count: bool) -> Value {
        let mut request = self
            .client
            .post(self.url("/graphql"))
            .json(&json!({ "query": query, "variables": variables }));
        if count {
            request = request.header("x-tablegraph-storage-calls", "1");
        }
        let response = request.send().await.expect("the server answers");
        assert_eq!(response.status(), 200, "GraphQL requests answer 200");
        response.json().await.expect("the server answers JSON")
    }

    /// Creates a node of type `kind` from `input` (its `Create<Kind>Input`); answers its id.
    pub async fn create(&self, kind: &str, input: Value) -> String {
        let query = format!(
            "mutation($input: Create{kind}Input!) {{ create{kind}(input: $input) {{ id }} }}"
        );
        let body = self.graphql(&query, json!({ "input": input })).await;
        id_at(&body, &format!("/data/create{kind}/id"))
    }

    pub async fn create_farm(&self, name: &str) -> String {
        let body = self
            .graphql(
                "mutation($name: String!) { createFarm(input: { name: $name }) { id } }",
                json!({ "name": name }),
            )
            .await;
        id_at(&body, "/data/createFarm/id")
    }

    pub async fn create_animal(&self, kind: &str, name: &str, farm_id: &str) -> String {
        let query = format!(
            "mutation($name: String!, $farmId: ID!) {{ create{kind}(input: {{ name: $name, farmId: $farmId }}) {{ id }} }}"
        );
        let body = self
            .graphql(&query, json!({ "name": name, "farmId": farm_id }))
            .await;
        id_at(&body, &format!("/data/create{kind}/id"))
    }
}

/// The string at a JSON pointer, or a panic that shows the whole response.
/// Storage calls (or cache hits) as `Operation` or `Operation:index` strings.
fn call_names(calls: &Value) -> Option<Vec<String>> {
    let names = calls
        .as_array()?
        .iter()
        .map(|call| match call["index"].as_str() {
            Some(index) => format!("{}:{index}", call["operation"].as_str().unwrap_or("?")),
            None => call["operation"].as_str().unwrap_or("?").to_owned(),
        })
        .collect();
    Some(names)
}

pub fn id_at(body: &Value, pointer: &str) -> String {
    body.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {body}"))
        .to_owned()
}

/// The `extensions.errorType` of the first error, or a panic that shows the response.
pub fn error_type(body: &Value) -> &str {
    body["errors"][0]["extensions"]["errorType"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error with an errorType in {body}"))
}

/// The message of the first error, or "" when there is none.
pub fn error_message(body: &Value) -> &str {
    body["errors"][0]["message"].as_str().unwrap_or_default()
}

/// A fresh path under the system's temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tablegraph-{name}-{}", uuid::Uuid::now_v7()))
}

/// The `tablegraph` binary with `args`, on the embedded store in `dir`, from the repository
/// root, ignoring store settings of the environment.
pub fn tablegraph(args: &[&str], dir: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tablegraph"));
    command
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("TABLEGRAPH_MEMORY")
        .env_remove("TABLEGRAPH_DYNAMODB_ENDPOINT")
        .env_remove("TABLEGRAPH_SIMULATED_LATENCY_MS");
    command
}

/// Runs [`tablegraph`] to the end; answers (success, stdout, stderr).
pub async fn run_tablegraph(args: &[&str], dir: &std::path::Path) -> (bool, String, String) {
    let output = tablegraph(args, dir)
        .output()
        .await
        .expect("the binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Reads a Server-Sent Events body until it holds `events` events; answers them as (name,
/// data) pairs.
pub async fn sse_events(response: &mut reqwest::Response, events: usize) -> Vec<(String, String)> {
    let mut text = String::new();
    loop {
        let parsed: Vec<(String, String)> = text
            .split("\n\n")
            .filter(|block| block.contains("event:"))
            .map(|block| {
                let field = |name: &str| {
                    block
                        .lines()
                        .filter_map(|line| line.strip_prefix(name))
                        .map(str::trim_start)
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                (field("event:"), field("data:"))
            })
            .collect();
        // An event is whole once the blank line after it arrived.
        let whole = text.matches("\n\n").count();
        if parsed.len() >= events && whole >= events {
            return parsed;
        }
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), response.chunk())
            .await
            .expect("the server sends the event in time")
            .expect("the stream is readable")
            .expect("the stream is still open");
        text.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
    }
}

/// The HS256 secret of the tokens the per-user rule tests make.
pub(crate) const RULES_SECRET: &str = "a-test-secret-that-is-long-enough-for-hs256";
pub(crate) const RULES_ISSUER: &str = "local";

/// Server settings that let in `api_key` and the tokens [`user_token`] makes.
pub fn api_key_and_tokens(api_key: &str) -> HttpConfig {
    use tablegraph::auth::{AuthConfig, DEFAULT_REFETCH_INTERVAL, JwtConfig, JwtKeys};
    HttpConfig {
        auth: AuthConfig {
            api_keys: vec![api_key.to_owned()],
            jwt: vec![JwtConfig {
                keys: JwtKeys::Hs256Secret(RULES_SECRET.to_owned()),
                issuer: RULES_ISSUER.to_owned(),
                audience: None,
                refetch_interval: DEFAULT_REFETCH_INTERVAL,
            }],
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    }
}

/// A token of user `sub` in `groups`, for a server set up by [`api_key_and_tokens`].
pub fn user_token(sub: &str, groups: &[&str]) -> String {
    tablegraph::auth::hs256_token(
        RULES_SECRET,
        &tablegraph::auth::TokenClaims {
            issuer: RULES_ISSUER.to_owned(),
            audience: None,
            subject: sub.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            expires_in: std::time::Duration::from_secs(600),
        },
    )
    .expect("a token")
}
