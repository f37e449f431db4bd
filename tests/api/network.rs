//! The same binary against a DynamoDB-compatible endpoint over the network: dynoxide's HTTP
//! server on a loopback port, `tablegraph migrate`, then `tablegraph serve` as a process.

use std::process::Stdio;

use serde_json::{Value, json};
use tablegraph::store::{Credentials, Store, StoreTuning};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Starts dynoxide's HTTP server in this process; answers its endpoint URL.
pub(crate) async fn start_dynoxide() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port for dynoxide");
    let address = listener.local_addr().expect("the listener's address");
    let database = dynoxide::Database::memory().expect("an in-memory dynoxide database");
    tokio::spawn(dynoxide::server::serve_on(listener, database));
    format!("http://{address}")
}

/// The binary under test, with a clean environment of AWS settings.
pub(crate) fn tablegraph(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tablegraph"));
    command
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("RUST_LOG", "info")
        .env_remove("TABLEGRAPH_LISTEN")
        .env_remove("TABLEGRAPH_DATA_DIR")
        .env_remove("TABLEGRAPH_MEMORY")
        .env_remove("TABLEGRAPH_DYNAMODB_ENDPOINT")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .kill_on_drop(true);
    command
}

pub(crate) async fn run(args: &[&str]) -> (bool, String, String) {
    let output = tablegraph(args).output().await.expect("the binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `tablegraph serve --dynamodb-endpoint <endpoint>` on a free loopback port: the process (ended
/// when dropped) and the address it listens on.
pub(crate) async fn serve(endpoint: &str) -> (tokio::process::Child, String) {
    serve_with(endpoint, &[]).await
}

/// The same, with more arguments.
pub(crate) async fn serve_with(endpoint: &str, more: &[&str]) -> (tokio::process::Child, String) {
    let mut args = vec![
        "serve",
        "--dynamodb-endpoint",
        endpoint,
        "--listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(more);
    let mut server = tablegraph(&args)
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let stderr = server.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let address = loop {
        let line = lines
            .next_line()
            .await
            .expect("serve's log is readable")
            .expect("serve logs where it listens before it exits");
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.trim_end_matches("/graphql").to_owned();
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (server, address)
}

async fn post(client: &reqwest::Client, url: &str, query: &str, variables: Value) -> Value {
    client
        .post(url)
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("the server answers JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_creates_the_table_and_exactly_the_schema_s_indexes_once() {
    let endpoint = start_dynoxide().await;
    let args = [
        "migrate",
        "--dynamodb-endpoint",
        &endpoint,
        "--table",
        "farms",
    ];
    let (ok, stdout, stderr) = run(&args).await;
    assert!(ok, "migrate succeeds: {stderr}");
    assert!(stdout.contains("created table farms"), "{stdout}");
    let (ok, again, stderr) = run(&args).await;
    assert!(ok, "migrate succeeds again: {stderr}");
    assert!(
        !again.contains("created"),
        "the second run changes nothing: {again}"
    );
    assert!(again.contains("up to date"), "{again}");

    let store = Store::connect(
        Some(&endpoint),
        Credentials::Local,
        "farms",
        &StoreTuning::default(),
    )
    .await;
    let status = store
        .describe_table()
        .await
        .expect("the table can be described")
        .expect("the table exists");
    assert!(status.active);
    assert_eq!(
        status.indexes.into_iter().collect::<Vec<_>>(),
        [(1, true), (2, true), (3, true), (4, true)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_a_table_that_was_not_migrated() {
    let endpoint = start_dynoxide().await;
    let (ok, _, stderr) = run(&[
        "serve",
        "--dynamodb-endpoint",
        &endpoint,
        "--listen",
        "127.0.0.1:0",
    ])
    .await;
    assert!(!ok, "serve stops");
    assert!(
        stderr.contains("run `tablegraph migrate` first"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_farm_walkthrough_runs_over_the_network_path() {
    let endpoint = start_dynoxide().await;
    let (ok, _, stderr) = run(&["migrate", "--dynamodb-endpoint", &endpoint]).await;
    assert!(ok, "migrate succeeds: {stderr}");

    let (mut server, address) = serve(&endpoint).await;

    let url = format!("http://{address}/graphql");
    let client = reqwest::Client::new();
    let body = post(
        &client,
        &url,
        "mutation { createFarm(input: { name: \"Net Farm\" }) { id } }",
        json!({}),
    )
    .await;
    let farm = body["data"]["createFarm"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_owned();
    for name in ["Daisy", "bessie"] {
        post(
            &client,
            &url,
            "mutation($n: String!, $f: ID!) { createCow(input: { name: $n, farmId: $f }) { id } }",
            json!({ "n": name, "f": farm }),
        )
        .await;
    }
    post(
        &client,
        &url,
        "mutation($f: ID!) { createChicken(input: { name: \"Chuck\", farmId: $f }) { id } }",
        json!({ "f": farm }),
    )
    .await;
    let body = post(
        &client,
        &url,
        "{ farmByName(name: \"NET FARM\") {
            cows { edges { node { name farm { name } } } }
            animals { edges { node { __typename } } }
        } }",
        json!({}),
    )
    .await;
    assert_eq!(
        body["data"]["farmByName"]["cows"]["edges"],
        json!([
            { "node": { "name": "bessie", "farm": { "name": "Net Farm" } } },
            { "node": { "name": "Daisy", "farm": { "name": "Net Farm" } } },
        ]),
        "{body}"
    );
    assert_eq!(
        body["data"]["farmByName"]["animals"]["edges"],
        json!([
            { "node": { "__typename": "Cow" } },
            { "node": { "__typename": "Chicken" } },
            { "node": { "__typename": "Cow" } },
        ])
    );
    let body = post(
        &client,
        &url,
        "mutation { createFarm(input: { name: \"net farm\" }) { id } }",
        json!({}),
    )
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"],
        "UniqueConstraintViolation"
    );

    let (ok, _, stderr) = run(&["healthcheck", "--listen", &address]).await;
    assert!(ok, "healthcheck passes against a running server: {stderr}");
    server.kill().await.expect("the server stops");
    let (ok, _, _) = run(&["healthcheck", "--listen", &address]).await;
    assert!(!ok, "healthcheck fails when nothing answers");
}

/// `tablegraph store` on a free loopback port with `data_dir`: the process and its endpoint.
async fn store(data_dir: &std::path::Path) -> (tokio::process::Child, String) {
    let mut store = tablegraph(&["store", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("store starts");
    let mut lines = BufReader::new(store.stderr.take().expect("piped stderr")).lines();
    let endpoint = loop {
        let line = lines
            .next_line()
            .await
            .expect("the store's log is readable")
            .expect("the store logs where it listens before it exits");
        if let Some(rest) = line.split("store listening on ").nth(1) {
            break rest.trim().to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (store, endpoint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_table_of_one_tablegraph_store() {
    let dir = std::env::temp_dir().join(format!("tablegraph-store-{}", uuid::Uuid::now_v7()));
    let (_store, endpoint) = store(&dir).await;
    let address = endpoint.trim_start_matches("http://");

    let (healthy, _, stderr) = run(&["healthcheck", "--store", "--listen", address]).await;
    assert!(healthy, "the store answers its health check: {stderr}");
    let (healthy, _, _) = run(&["healthcheck", "--listen", address]).await;
    assert!(!healthy, "a store is no GraphQL server: it has no /healthz");

    let second = tablegraph(&["store", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .output()
        .await
        .expect("the binary runs");
    assert!(
        !second.status.success(),
        "a second store on one directory is refused"
    );
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("in use"), "{said}");

    let (ok, _, stderr) = run(&["migrate", "--dynamodb-endpoint", &endpoint]).await;
    assert!(ok, "migrate succeeds: {stderr}");
    let (_one, first) = serve(&endpoint).await;
    let (_two, second) = serve(&endpoint).await;
    let client = reqwest::Client::new();
    let created = post(
        &client,
        &format!("http://{first}/graphql"),
        "mutation { createFarm(input: { name: \"Shared\" }) { id } }",
        json!({}),
    )
    .await;
    let id = created["data"]["createFarm"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"));
    let read = post(
        &client,
        &format!("http://{second}/graphql"),
        "{ farmByName(name: \"shared\") { id name } }",
        json!({}),
    )
    .await;
    assert_eq!(
        read["data"]["farmByName"],
        json!({ "id": id, "name": "Shared" }),
        "the other replica reads what the first wrote: {read}"
    );
    let duplicate = post(
        &client,
        &format!("http://{second}/graphql"),
        "mutation { createFarm(input: { name: \"SHARED\" }) { id } }",
        json!({}),
    )
    .await;
    assert_eq!(
        duplicate["errors"][0]["extensions"]["errorType"], "UniqueConstraintViolation",
        "one table, one set of unique values: {duplicate}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tablegraph` with no AWS settings at all, and a home without `~/.aws`.
fn bare_tablegraph(args: &[&str], home: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tablegraph"));
    command
        .args(args)
        .env_clear()
        .env("HOME", home)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn a_loopback_endpoint_needs_no_aws_settings_and_another_endpoint_names_what_to_set() {
    let endpoint = start_dynoxide().await;
    let home = crate::helpers::scratch("home");
    std::fs::create_dir_all(&home).expect("a home directory");
    // A store on this machine: local credentials and region, no provider chain.
    let output = bare_tablegraph(&["migrate", "--dynamodb-endpoint", &endpoint], &home)
        .output()
        .await
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("created table tablegraph"),
        "{output:?}"
    );
    assert!(!stderr.to_lowercase().contains("imds"), "{stderr}");
    assert!(!stderr.contains("credentials"), "{stderr}");

    // Any other endpoint with no credentials found: one line naming what to set. (Instance
    // metadata is off, so that no machine's role answers for it.)
    let output = bare_tablegraph(
        &[
            "migrate",
            "--dynamodb-endpoint",
            "https://dynamodb.example.invalid",
        ],
        &home,
    )
    .env("AWS_EC2_METADATA_DISABLED", "true")
    .output()
    .await
    .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("AWS_ACCESS_KEY_ID"), "{stderr}");
    assert!(
        stderr.contains("https://dynamodb.example.invalid"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&home).expect("the home directory is removable");
}
