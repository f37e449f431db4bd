//! The example schemas: a social graph and transitive access, served by the same binary.

use serde_json::{Value, json};

use crate::helpers::{TestApp, id_at, repository_file, spawn_app_with_schema};

async fn create(app: &TestApp, kind: &str, name: &str) -> String {
    let query = format!("mutation($n: String!) {{ create{kind}(input: {{ name: $n }}) {{ id }} }}");
    let body = app.graphql(&query, json!({ "n": name })).await;
    id_at(&body, &format!("/data/create{kind}/id"))
}

async fn connect(app: &TestApp, edge: &str, from: &str, to: &str, metadata: &str) {
    let query = format!(
        "mutation($f: ID!, $t: ID!) {{ add{edge}(input: {{ from: $f, to: $t{metadata} }}) {{ createdAt }} }}"
    );
    let body = app.graphql(&query, json!({ "f": from, "t": to })).await;
    assert!(body["errors"].is_null(), "{body}");
}

fn names(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("edges in {connection}"))
        .iter()
        .map(|e| e["node"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn who_considers_gandalf_a_friend_is_an_incoming_edge_query() {
    let app = spawn_app_with_schema("examples/social/schema.graphql").await;
    let gandalf = create(&app, "User", "Gandalf").await;
    let frodo = create(&app, "User", "Frodo").await;
    let sam = create(&app, "User", "Sam").await;
    let shire = create(&app, "Place", "The Shire").await;
    let rivendell = create(&app, "Place", "Rivendell").await;
    connect(&app, "Friend", &sam, &gandalf, ", since: \"2021-03-01\"").await;
    connect(&app, "Friend", &frodo, &gandalf, ", since: \"2019-09-22\"").await;
    connect(&app, "Friend", &frodo, &sam, ", since: \"2001-04-06\"").await;
    connect(&app, "Visited", &frodo, &rivendell, ", on: \"3018-10-20\"").await;
    connect(&app, "Visited", &frodo, &shire, ", on: \"2968-09-22\"").await;

    let (body, calls) = app
        .graphql_counted(
            "{ userByName(name: \"gandalf\") { friendOf { edges { since node { name } } } } }",
            json!({}),
        )
        .await;
    let friend_of = &body["data"]["userByName"]["friendOf"];
    assert_eq!(
        names(friend_of),
        ["Frodo", "Sam"],
        "oldest friendship first: {body}"
    );
    assert_eq!(friend_of["edges"][0]["since"], "2019-09-22");
    // The unique name, the user, the inverse slot, the friends.
    assert_eq!(
        calls,
        [
            "BatchGetItem",
            "BatchGetItem",
            "Query:GSI01",
            "BatchGetItem"
        ]
    );

    let body = app
        .graphql(
            "query($f: ID!) { user(id: $f) {
                friends { edges { since node { name } } }
                friendList { name }
                visited { edges { on node { name } } }
            } }",
            json!({ "f": frodo }),
        )
        .await;
    let frodo_view = &body["data"]["user"];
    // Outgoing edges live in Frodo's partition, keyed by their target: creation order of the
    // targets. The incoming side above is the one sorted by the edge's date.
    assert_eq!(names(&frodo_view["friends"]), ["Gandalf", "Sam"], "{body}");
    let mut list: Vec<&str> = frodo_view["friendList"]
        .as_array()
        .map(|l| l.iter().filter_map(|u| u["name"].as_str()).collect())
        .unwrap_or_default();
    list.sort_unstable();
    assert_eq!(list, ["Gandalf", "Sam"]);
    assert_eq!(names(&frodo_view["visited"]), ["The Shire", "Rivendell"]);
    let body = app
        .graphql(
            "query($p: ID!) { place(id: $p) { visitors { edges { on node { name } } } } }",
            json!({ "p": rivendell }),
        )
        .await;
    assert_eq!(names(&body["data"]["place"]["visitors"]), ["Frodo"]);
}

#[tokio::test]
async fn the_products_alice_can_reach_cost_two_storage_calls() {
    let app = spawn_app_with_schema("examples/access/schema.graphql").await;
    let alice = create(&app, "User", "alice").await;
    let bob = create(&app, "User", "bob").await;
    let groups = [
        create(&app, "Group", "g1").await,
        create(&app, "Group", "g2").await,
    ];
    let products = [
        create(&app, "Product", "prod1").await,
        create(&app, "Product", "prod2").await,
        create(&app, "Product", "prod3").await,
    ];
    connect(&app, "MemberOf", &alice, &groups[0], "").await;
    connect(&app, "MemberOf", &alice, &groups[1], "").await;
    connect(&app, "MemberOf", &bob, &groups[0], "").await;
    connect(&app, "Subscribes", &groups[0], &products[0], "").await;
    connect(&app, "Subscribes", &groups[0], &products[1], "").await;
    connect(&app, "Subscribes", &groups[1], &products[1], "").await;
    connect(&app, "Subscribes", &groups[1], &products[2], "").await;

    let reach = "query($u: ID!) { user(id: $u) { groups { products { id } } } }";
    let (body, calls) = app.graphql_counted(reach, json!({ "u": alice })).await;
    let mut reached: Vec<String> = body["data"]["user"]["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .flat_map(|g| g["products"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["id"].as_str().map(str::to_owned))
        .collect();
    reached.sort();
    reached.dedup();
    let mut expected = products.to_vec();
    expected.sort();
    assert_eq!(reached, expected);
    // alice, then her groups (whose edge sets name the products).
    assert_eq!(calls, ["BatchGetItem", "BatchGetItem"]);

    let (body, _) = app.graphql_counted(reach, json!({ "u": bob })).await;
    let bob_reaches: Vec<&Value> = body["data"]["user"]["groups"][0]["products"]
        .as_array()
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    assert_eq!(bob_reaches.len(), 2, "{body}");

    // With the products' names, one more batch.
    let (body, calls) = app
        .graphql_counted(
            "query($u: ID!) { user(id: $u) { groups { name products { name } } } }",
            json!({ "u": alice }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(calls, ["BatchGetItem", "BatchGetItem", "BatchGetItem"]);
}

/// The fuzz target `schema_parse` starts from copies of the repository's schemas (libFuzzer
/// reads its seeds from one folder): each copy is its schema as it is now, and each seed
/// copies one.
#[test]
fn the_schema_fuzz_seeds_are_todays_schemas() {
    let mut sources = vec![
        (
            "seed-schema.graphql".to_owned(),
            "schema.graphql".to_owned(),
        ),
        (
            "seed-no-list.graphql".to_owned(),
            "tests/fixtures/no-list/schema.graphql".to_owned(),
        ),
    ];
    for entry in std::fs::read_dir(repository_file("examples")).expect("the examples") {
        let dir = entry.expect("an example").path();
        if dir.join("schema.graphql").exists() {
            let name = dir.file_name().expect("a name").to_string_lossy();
            sources.push((
                format!("seed-{name}.graphql"),
                format!("examples/{name}/schema.graphql"),
            ));
        }
    }
    let read = |path: &str| {
        std::fs::read_to_string(repository_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    for (seed, source) in &sources {
        assert!(
            read(&format!("fuzz/corpus/schema_parse/{seed}")) == read(source),
            "fuzz/corpus/schema_parse/{seed} is not {source}: copy it again"
        );
    }
    for entry in std::fs::read_dir(repository_file("fuzz/corpus/schema_parse")).expect("the seeds")
    {
        let name = entry
            .expect("a seed")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            !name.starts_with("seed-") || sources.iter().any(|(seed, _)| *seed == name),
            "fuzz/corpus/schema_parse/{name} copies no schema of the repository"
        );
    }
}

/// `examples/functions/server.py`, on a port of its own.
pub(crate) struct FunctionsServer {
    _child: tokio::process::Child,
    port: String,
}

impl FunctionsServer {
    pub(crate) async fn start() -> FunctionsServer {
        use tokio::io::AsyncBufReadExt as _;
        let mut child = tokio::process::Command::new("python3")
            .arg(crate::helpers::repository_file(
                "examples/functions/server.py",
            ))
            .arg("0")
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let stdout = child.stdout.take().expect("its output");
        let port = tokio::io::BufReader::new(stdout)
            .lines()
            .next_line()
            .await
            .expect("a line")
            .expect("the port");
        FunctionsServer {
            _child: child,
            port,
        }
    }

    /// `serve --env dev --function forecast-dev=… --function health=…`: the flags give the
    /// functions of the example's `functions.toml` this server's port instead of 9000.
    pub(crate) fn config(&self) -> tablegraph::functions::FunctionsConfig {
        let at = |path: &str| format!("http://127.0.0.1:{}/{path}", self.port);
        tablegraph::functions::FunctionsConfig {
            env: Some("dev".to_owned()),
            endpoints: vec![
                ("forecast-dev".to_owned(), at("forecast")),
                ("health".to_owned(), at("health")),
            ],
            ..Default::default()
        }
    }
}

/// `examples/functions`: its Python functions server, its `functions.toml` (its addresses
/// overridden by `--function`, its batch size kept) and its schema answer the README's query.
#[tokio::test]
async fn the_functions_example_answers_through_its_python_functions() {
    let server = FunctionsServer::start().await;
    let app = crate::helpers::spawn_app_with_functions(
        "examples/functions/schema.graphql",
        server.config(),
    )
    .await;
    for name in ["Barn", "Silo north"] {
        app.create("Sensor", serde_json::json!({ "name": name }))
            .await;
    }
    let body = app
        .graphql(
            "{ forecast(city: \"Lyon\") { summary } \
               listSensors(first: 10) { edges { node { name health } } } }",
            serde_json::json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(body["data"]["forecast"]["summary"], "Sunny over Lyon");
    let mut healths: Vec<(String, i64)> = body["data"]["listSensors"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|edge| {
            (
                edge["node"]["name"].as_str().unwrap_or_default().to_owned(),
                edge["node"]["health"].as_i64().unwrap_or_default(),
            )
        })
        .collect();
    healths.sort();
    assert_eq!(
        healths,
        [("Barn".to_owned(), 72), ("Silo north".to_owned(), 30)]
    );
}
