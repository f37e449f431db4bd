//! The process: data persists under `--data-dir` across restarts, and SIGTERM stops the server
//! gracefully.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, Command};

struct Server {
    child: Child,
    log: Lines<BufReader<ChildStderr>>,
    url: String,
}

async fn start(data_dir: &std::path::Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_LOG", "info")
        .env_remove("TABLEGRAPH_MEMORY")
        .env_remove("TABLEGRAPH_DYNAMODB_ENDPOINT")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("serve starts");
    let mut log = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let url = loop {
        let line = log
            .next_line()
            .await
            .expect("the log is readable")
            .expect("serve logs where it listens");
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.trim().to_owned();
        }
    };
    Server { child, log, url }
}

impl Server {
    async fn graphql(&self, query: &str) -> Value {
        reqwest::Client::new()
            .post(&self.url)
            .json(&json!({ "query": query }))
            .send()
            .await
            .expect("the server answers")
            .json()
            .await
            .expect("JSON")
    }

    /// Sends SIGTERM and waits for a clean exit; answers whether the log said it stopped.
    async fn terminate(mut self) -> bool {
        let pid = self.child.id().expect("the server is running").to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .expect("kill runs");
        assert!(status.success());
        let mut stopped = false;
        while let Ok(Some(line)) = self.log.next_line().await {
            stopped |= line.contains("stopped");
        }
        let exit = self.child.wait().await.expect("the server exits");
        assert!(exit.success(), "a graceful stop exits 0: {exit}");
        stopped
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_a_restart_and_sigterm_stops_gracefully() {
    let dir = std::env::temp_dir().join(format!("tablegraph-data-{}", uuid::Uuid::now_v7()));
    let server = start(&dir).await;
    let body = server
        .graphql("mutation { createFarm(input: { name: \"Persistent\" }) { id } }")
        .await;
    assert!(body["data"]["createFarm"]["id"].is_string(), "{body}");
    assert!(server.terminate().await, "the log says the server stopped");
    assert!(
        dir.join("tablegraph.db").exists(),
        "the store is a file under --data-dir"
    );

    let server = start(&dir).await;
    let body = server
        .graphql("{ farmByName(name: \"persistent\") { name } }")
        .await;
    assert_eq!(body["data"]["farmByName"]["name"], "Persistent", "{body}");
    assert!(server.terminate().await);
    std::fs::remove_dir_all(&dir).expect("the data directory is removable");
}

/// The first GraphQL block of README.md that contains `needle`.
fn readme_query(needle: &str) -> String {
    let readme = std::fs::read_to_string(crate::helpers::repository_file("README.md"))
        .expect("README.md exists");
    readme
        .split("```graphql")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .find(|block| block.contains(needle))
        .unwrap_or_else(|| panic!("README.md shows a query with {needle}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_data_set_loads_once_and_answers_the_readme_koan_query() {
    let dir = std::env::temp_dir().join(format!("tablegraph-demo-{}", uuid::Uuid::now_v7()));
    let demo = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tablegraph"));
        command
            .args(["demo", "--data-dir"])
            .arg(&dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("TABLEGRAPH_MEMORY")
            .env_remove("TABLEGRAPH_DYNAMODB_ENDPOINT");
        command
    };
    let first = demo().output().await.expect("demo runs");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(String::from_utf8_lossy(&first.stdout).contains("loaded the demo data set"));
    let second = demo().output().await.expect("demo runs again");
    assert!(second.status.success());
    assert!(String::from_utf8_lossy(&second.stdout).contains("already loaded"));

    let server = start(&dir).await;
    let body = server.graphql(&readme_query("teamByName")).await;
    let edges = body["data"]["teamByName"]["goals"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .clone();
    assert_eq!(edges.len(), 3, "{body}");
    assert!(
        edges
            .iter()
            .all(|e| e["node"]["leads"].as_array().is_some_and(|l| !l.is_empty()))
    );
    let body = server.graphql(&readme_query("farmByName")).await;
    assert!(body["errors"].is_null(), "{body}");
    assert!(server.terminate().await);
    std::fs::remove_dir_all(&dir).expect("the data directory is removable");
}
