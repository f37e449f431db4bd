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
    start_with(data_dir, &[]).await
}

/// Starts `serve` on `data_dir` with more arguments (a schema).
async fn start_with(data_dir: &std::path::Path, args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .args(args)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_an_open_event_stream_and_stops() {
    let dir = std::env::temp_dir().join(format!("tablegraph-sse-{}", uuid::Uuid::now_v7()));
    let server = start(&dir).await;
    let mut stream = reqwest::Client::new()
        .post(&server.url)
        .header("accept", "text/event-stream")
        .json(&json!({ "query": "subscription { onCreateFarm { id } }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(stream.status(), 200);
    // The subscription is open: a created farm reaches it.
    let body = server
        .graphql("mutation { createFarm(input: { name: \"Streamed\" }) { id } }")
        .await;
    assert!(body["data"]["createFarm"]["id"].is_string(), "{body}");
    let events = crate::helpers::sse_events(&mut stream, 1).await;
    assert_eq!(events[0].0, "next", "{events:?}");
    // SIGTERM: the stream completes and the server exits, without waiting for the client.
    let stopping = tokio::spawn(server.terminate());
    let mut rest = String::new();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Ok(Some(chunk)) = stream.chunk().await {
            rest.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream was still open: {rest}");
    assert!(rest.contains("event: complete"), "{rest}");
    assert!(
        stopping.await.expect("the task"),
        "the log says the server stopped"
    );
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

/// The answer to a write, when it was acknowledged: failures (the server being killed) are not
/// acknowledgements.
async fn acknowledged(
    client: &reqwest::Client,
    url: &str,
    query: &str,
    variables: Value,
) -> Option<Value> {
    let request = client
        .post(url)
        .json(&json!({ "query": query, "variables": variables }));
    let body: Value = request.send().await.ok()?.json().await.ok()?;
    body["errors"].is_null().then_some(body)
}

/// What one writer had acknowledged when the server was killed.
#[derive(Default)]
struct Acknowledged {
    farms: Vec<(String, String)>,
    users: Vec<(String, String)>,
    memberships: Vec<(String, String, String)>,
}

/// Writes farms, users, goals and memberships until told to stop; answers what was
/// acknowledged. Failures (the server being killed) are not acknowledgements.
async fn write_storm(
    url: String,
    worker: usize,
    stop: tokio::sync::watch::Receiver<bool>,
    acked: tokio::sync::mpsc::UnboundedSender<()>,
) -> Acknowledged {
    let client = reqwest::Client::new();
    let post =
        |query: &'static str, variables: Value| acknowledged(&client, &url, query, variables);
    let mut done = Acknowledged::default();
    let mut goals: Vec<String> = Vec::new();
    for n in 0.. {
        if *stop.borrow() {
            break;
        }
        match n % 4 {
            0 => {
                let name = format!("Farm {worker}-{n}");
                if let Some(body) = post(
                    "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
                    json!({ "n": name }),
                )
                .await
                {
                    done.farms.push((
                        name,
                        body["data"]["createFarm"]["id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    ));
                }
            }
            1 => {
                if let Some(body) = post(
                    "mutation { createGoal(input: { title: \"Crash\", kind: OBJECTIVE }) { id } }",
                    json!({}),
                )
                .await
                {
                    goals.push(
                        body["data"]["createGoal"]["id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    );
                }
            }
            2 => {
                let email = format!("user{worker}-{n}@example.com");
                if let Some(body) = post("mutation($e: AWSEmail!) { createUser(input: { name: \"U\", email: $e }) { id } }", json!({ "e": email })).await {
                    done.users.push((email, body["data"]["createUser"]["id"].as_str().unwrap_or_default().to_owned()));
                }
            }
            _ => {
                let (Some(goal), Some((_, user))) = (goals.last(), done.users.last()) else {
                    continue;
                };
                let role = ["LEAD", "CONTRIBUTOR"][n % 2];
                let added = post(
                    "mutation($g: ID!, $u: ID!, $r: GoalRole!) { addGoalMembership(input: { from: $g, to: $u, role: $r }) { role } }",
                    json!({ "g": goal, "u": user, "r": role }),
                )
                .await;
                if added.is_some() {
                    done.memberships
                        .push((goal.clone(), user.clone(), role.to_owned()));
                }
            }
        }
        let _ = acked.send(());
    }
    done
}

/// Runs 8 writers of `storm` against the server at `url`, kills it (SIGKILL) once they have
/// had 200 writes acknowledged, while writes are in flight, and answers what each writer had
/// acknowledged.
async fn killed_mid_storm<S, F, T>(child: &mut Child, url: &str, storm: S) -> Vec<T>
where
    S: Fn(
        String,
        usize,
        tokio::sync::watch::Receiver<bool>,
        tokio::sync::mpsc::UnboundedSender<()>,
    ) -> F,
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (acked, mut acks) = tokio::sync::mpsc::unbounded_channel();
    let writers: Vec<_> = (0..8)
        .map(|worker| {
            tokio::spawn(storm(
                url.to_owned(),
                worker,
                stopped.clone(),
                acked.clone(),
            ))
        })
        .collect();
    for _ in 0..200 {
        acks.recv().await.expect("the writers are running");
    }
    child.start_kill().expect("SIGKILL");
    child.wait().await.expect("the server dies");
    let _ = stop.send(true);
    let mut done = Vec::new();
    for writer in writers {
        done.push(writer.await.expect("a writer ends"));
    }
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_write_storm_loses_no_acknowledged_write() {
    let dir = std::env::temp_dir().join(format!("tablegraph-crash-{}", uuid::Uuid::now_v7()));
    let Server {
        mut child,
        mut log,
        url,
    } = start(&dir).await;
    // Keep reading the log so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = log.next_line().await {} });

    let mut all = Acknowledged::default();
    for done in killed_mid_storm(&mut child, &url, write_storm).await {
        all.farms.extend(done.farms);
        all.users.extend(done.users);
        all.memberships.extend(done.memberships);
    }
    assert!(all.farms.len() + all.users.len() + all.memberships.len() > 50);

    // The table on disk keeps every invariant.
    let (ok, report, _) = crate::helpers::run_tablegraph(&["check"], &dir).await;
    assert!(ok && report.contains("no violations"), "{report}");

    // Every acknowledged write is there after a restart.
    let server = start(&dir).await;
    for (name, id) in &all.farms {
        let body = server
            .graphql(&format!("{{ farmByName(name: \"{name}\") {{ id }} }}"))
            .await;
        assert_eq!(
            body["data"]["farmByName"]["id"],
            id.as_str(),
            "farm {name}: {body}"
        );
    }
    for (email, id) in &all.users {
        let body = server
            .graphql(&format!("{{ userByEmail(email: \"{email}\") {{ id }} }}"))
            .await;
        assert_eq!(
            body["data"]["userByEmail"]["id"],
            id.as_str(),
            "user {email}: {body}"
        );
    }
    for (goal, user, role) in &all.memberships {
        let body = server
            .graphql(&format!("{{ goal(id: \"{goal}\") {{ members(first: 100) {{ totalCount edges {{ role node {{ ... on User {{ id }} }} }} }} }} }}"))
            .await;
        let edges = body["data"]["goal"]["members"]["edges"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            body["data"]["goal"]["members"]["totalCount"],
            edges.len(),
            "the count of {goal}'s members is exact after the kill: {body}"
        );
        assert!(
            edges.iter().any(|e| e["node"]["id"] == user.as_str()),
            "membership {goal} → {user} ({role}) is missing: {body}"
        );
    }
    // The farms' count is every farm the list holds.
    let mut listed = 0;
    let mut after = Value::Null;
    let total = loop {
        let body = server
            .graphql(&format!(
                "{{ listFarms(first: 100, after: {after}) {{ totalCount edges {{ cursor }} pageInfo {{ hasNextPage endCursor }} }} }}"
            ))
            .await;
        let list = &body["data"]["listFarms"];
        listed += list["edges"].as_array().map_or(0, Vec::len);
        if list["pageInfo"]["hasNextPage"] != true {
            break list["totalCount"]
                .as_u64()
                .unwrap_or_else(|| panic!("{body}"));
        }
        after = list["pageInfo"]["endCursor"].clone();
    };
    assert_eq!(total, listed as u64);
    assert!(listed >= all.farms.len());
    assert!(server.terminate().await);
    std::fs::remove_dir_all(&dir).expect("removable");
}

const DATASTORE_SCHEMA: &str = "tests/fixtures/amplify-datastore-app/schema.graphql";

/// A note as one writer last had a write of it acknowledged.
struct SyncedNote {
    id: String,
    version: i64,
    body: String,
    deleted: bool,
}

/// Creates notes and updates and deletes them by `_version`, as DataStore's outbox sends them,
/// until told to stop; answers each note's last acknowledged state.
async fn synced_write_storm(
    url: String,
    worker: usize,
    stop: tokio::sync::watch::Receiver<bool>,
    acked: tokio::sync::mpsc::UnboundedSender<()>,
) -> Vec<SyncedNote> {
    let client = reqwest::Client::new();
    let post =
        |query: &'static str, variables: Value| acknowledged(&client, &url, query, variables);
    let mut notes: Vec<SyncedNote> = Vec::new();
    for n in 0.. {
        if *stop.borrow() {
            break;
        }
        let body = format!("{worker}-{n}");
        let done = match (n % 4, notes.last_mut()) {
            (1 | 2, Some(note)) if !note.deleted => post(
                "mutation($id: ID!, $b: String, $v: Int) { updateNote(input: { id: $id, body: $b, _version: $v }) { _version } }",
                json!({ "id": note.id, "b": body, "v": note.version }),
            )
            .await
            .map(|answer| {
                note.version = answer["data"]["updateNote"]["_version"].as_i64().unwrap_or_default();
                note.body = body;
            }),
            (3, Some(note)) if !note.deleted && n % 8 == 3 => post(
                "mutation($id: ID!, $v: Int) { deleteNote(input: { id: $id, _version: $v }) { _version } }",
                json!({ "id": note.id, "v": note.version }),
            )
            .await
            .map(|answer| {
                note.version = answer["data"]["deleteNote"]["_version"].as_i64().unwrap_or_default();
                note.deleted = true;
            }),
            _ => post(
                "mutation($b: String) { createNote(input: { title: \"crash\", body: $b }) { id _version } }",
                json!({ "b": body }),
            )
            .await
            .map(|answer| {
                let created = &answer["data"]["createNote"];
                notes.push(SyncedNote {
                    id: created["id"].as_str().unwrap_or_default().to_owned(),
                    version: created["_version"].as_i64().unwrap_or_default(),
                    body,
                    deleted: false,
                });
            }),
        };
        if done.is_some() {
            let _ = acked.send(());
        }
    }
    notes
}

/// Every page of a sync from `last_sync` (0: a base sync): each item's id, `_version`, body and
/// `_deleted`.
async fn sync_all(server: &Server, last_sync: i64) -> Vec<Value> {
    let mut items = Vec::new();
    let mut token = Value::Null;
    loop {
        let body = server
            .graphql(&format!(
                "{{ syncNotes(lastSync: {last_sync}, limit: 100, nextToken: {token}) {{ items {{ id body _version _deleted }} nextToken }} }}"
            ))
            .await;
        let page = &body["data"]["syncNotes"];
        items.extend(
            page["items"]
                .as_array()
                .cloned()
                .unwrap_or_else(|| panic!("{body}")),
        );
        token = page["nextToken"].clone();
        if token.is_null() {
            return items;
        }
    }
}

/// Kill -9 during a burst of DataStore's writes (creates, and updates and deletes naming their
/// `_version`) loses no acknowledged write: `check` is clean on the table left on disk, every
/// acknowledged write is there after a restart, and a delta sync since before the burst
/// answers every note written, as the node now stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_burst_of_synced_writes_loses_none() {
    let dir = std::env::temp_dir().join(format!("tablegraph-sync-crash-{}", uuid::Uuid::now_v7()));
    let schema = ["--schema", DATASTORE_SCHEMA];
    let Server {
        mut child,
        mut log,
        url,
    } = start_with(&dir, &schema).await;
    tokio::spawn(async move { while let Ok(Some(_)) = log.next_line().await {} });
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64;

    let notes: Vec<SyncedNote> = killed_mid_storm(&mut child, &url, synced_write_storm)
        .await
        .into_iter()
        .flatten()
        .collect();
    assert!(notes.iter().any(|n| n.deleted) && notes.iter().any(|n| n.version > 1));

    let (ok, report, _) =
        crate::helpers::run_tablegraph(&["check", "--schema", DATASTORE_SCHEMA], &dir).await;
    assert!(ok && report.contains("no violations"), "{report}");

    let server = start_with(&dir, &schema).await;
    let delta = sync_all(&server, before).await;
    let base = sync_all(&server, 0).await;
    for note in &notes {
        let body = server
            .graphql(&format!(
                "{{ getNote(id: \"{}\") {{ body _version _deleted }} }}",
                note.id
            ))
            .await;
        let stored = &body["data"]["getNote"];
        // A write sent after the last acknowledged one may have committed before the kill.
        let version = stored["_version"].as_i64().unwrap_or_default();
        assert!(
            version == note.version || (version == note.version + 1 && !note.deleted),
            "note {} was acknowledged at _version {}: {body}",
            note.id,
            note.version
        );
        if version == note.version {
            assert_eq!(stored["body"], note.body.as_str(), "{body}");
            assert_eq!(stored["_deleted"] == true, note.deleted, "{body}");
        }
        for (sync, items) in [("delta", &delta), ("base", &base)] {
            assert!(
                items
                    .iter()
                    .any(|item| item["id"] == note.id.as_str() && item["_version"] == version),
                "the {sync} sync answers note {} at _version {version}",
                note.id
            );
        }
    }
    assert!(server.terminate().await);
    std::fs::remove_dir_all(&dir).expect("removable");
}
