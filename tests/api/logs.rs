//! The log an operator reads, from the process: expected refusals are no warnings, and a
//! request's events carry its request id.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, ChildStderr, Command};

/// `tablegraph serve --memory` with `RUST_LOG` as given (unset for `None`); answers the
/// process, its log so far and the URL it listens on.
async fn serve(rust_log: Option<&str>) -> (Child, Vec<String>, String, ChildStderr) {
    serve_with(rust_log, &[]).await
}

/// The same, with more flags.
async fn serve_with(
    rust_log: Option<&str>,
    flags: &[&str],
) -> (Child, Vec<String>, String, ChildStderr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tablegraph"));
    command
        .args(["serve", "--memory", "--listen", "127.0.0.1:0"])
        .args(flags)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("TABLEGRAPH_DYNAMODB_ENDPOINT")
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    match rust_log {
        Some(filter) => command.env("RUST_LOG", filter),
        None => command.env_remove("RUST_LOG"),
    };
    let mut child = command.spawn().expect("serve starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut lines = Vec::new();
    let url = loop {
        let mut line = String::new();
        let read = stderr
            .read_line(&mut line)
            .await
            .expect("the log is readable");
        assert!(read > 0, "serve exited before listening: {lines:#?}");
        let listening = line
            .split("listening on ")
            .nth(1)
            .map(|url| url.trim().to_owned());
        lines.push(line);
        if let Some(url) = listening {
            break url;
        }
    };
    (child, lines, url, stderr.into_inner())
}

/// Stops the server with SIGTERM and answers the rest of its log.
pub(crate) async fn stop(child: Child, stderr: ChildStderr) -> Vec<String> {
    let pid = child.id().expect("the server is running").to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(status.success());
    let mut lines = Vec::new();
    let mut stderr = BufReader::new(stderr).lines();
    while let Some(line) = stderr.next_line().await.expect("the log is readable") {
        lines.push(line);
    }
    let output = child.wait_with_output().await.expect("the server exits");
    assert!(output.status.success(), "a graceful stop exits 0");
    lines
}

async fn create_farm(url: &str, name: &str) -> Value {
    reqwest::Client::new()
        .post(url)
        .json(&json!({
            "query": "mutation($name: String!) { createFarm(input: { name: $name }) { id } }",
            "variables": { "name": name },
        }))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_start_and_a_refused_duplicate_log_no_warnings() {
    let (child, mut log, url, stderr) = serve(None).await;
    let first = create_farm(&url, "Twice").await;
    assert!(first["data"]["createFarm"]["id"].is_string(), "{first}");
    let second = create_farm(&url, "twice").await;
    assert_eq!(
        second["errors"][0]["extensions"]["errorType"], "UniqueConstraintViolation",
        "{second}"
    );
    log.extend(stop(child, stderr).await);
    // The store answered 400 twice (DescribeTable of a table not yet created, and the
    // transaction refused on the unique value); neither is a warning.
    let warnings: Vec<&String> = log.iter().filter(|line| line.contains("WARN")).collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
    assert!(
        log.iter()
            .any(|line| line.contains("INFO") && line.contains("stopped")),
        "the log was read to the end: {log:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_logged_under_its_request_id() {
    let (child, mut log, url, stderr) = serve(Some("info,tablegraph=debug")).await;
    let response = reqwest::Client::new()
        .post(&url)
        .header("x-request-id", "farm-log-7")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    log.extend(stop(child, stderr).await);
    let answered: Vec<&String> = log
        .iter()
        .filter(|line| line.contains("answered"))
        .collect();
    assert_eq!(answered.len(), 1, "{log:#?}");
    assert!(
        answered[0].contains("request_id=farm-log-7") && answered[0].contains("status=200"),
        "{answered:#?}"
    );
}

/// A probe loop's refused requests are counted in `/metrics` and told once at INFO (each at
/// DEBUG), not a line each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_are_counted_and_told_once_a_minute() {
    let (child, mut log, url, stderr) = serve_with(Some("info"), &["--api-key", "the-key"]).await;
    let client = reqwest::Client::new();
    let probes = 40;
    for _ in 0..probes {
        let response = client
            .post(&url)
            .header("x-api-key", "a-guess")
            .json(&json!({ "query": "{ __typename }" }))
            .send()
            .await
            .expect("the server answers");
        assert_eq!(response.status(), 401);
    }
    let metrics = client
        .get(url.replace("/graphql", "/metrics"))
        .send()
        .await
        .expect("the server answers")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains(&format!(
            "tablegraph_auth_refused_total{{transport=\"http\"}} {probes}"
        )),
        "{metrics}"
    );
    log.extend(stop(child, stderr).await);
    let told: Vec<&String> = log.iter().filter(|line| line.contains("refused")).collect();
    assert_eq!(told.len(), 1, "{told:#?}");
    assert!(told[0].contains("INFO"), "{told:#?}");
}
