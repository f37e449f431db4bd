//! Secondary indexes (`@index`): the default schema's `Cow.breed` index, read by
//! `cowsByBreed(breed:)` with a key condition on its sort field, `sortDirection`, `filter` and
//! paging, one Query of its own slot per page; kept by every write; filled by `migrate` for
//! nodes written before it existed.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_type, run_tablegraph, scratch, spawn_app};

/// Creates a cow named `name` of `breed` (none for `null`) on `farm`; answers its id.
async fn cow(app: &TestApp, farm: &str, name: &str, breed: Value) -> String {
    app.create(
        "Cow",
        json!({ "name": name, "farmId": farm, "breed": breed }),
    )
    .await
}

/// The names `cowsByBreed` answers for `arguments`, with its storage calls.
async fn by_breed(app: &TestApp, arguments: &str) -> (Vec<String>, Value, Vec<String>) {
    let query = format!(
        "{{ cowsByBreed({arguments}) {{
            edges {{ node {{ name breed farm {{ name }} }} }}
            pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
        }} }}"
    );
    let (body, calls) = app.graphql_counted(&query, json!({})).await;
    let names = body["data"]["cowsByBreed"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{arguments}: {body}"))
        .iter()
        .map(|e| e["node"]["name"].as_str().expect("a name").to_owned())
        .collect();
    (names, body, calls)
}

#[tokio::test]
async fn an_index_query_reads_one_value_sorted_by_its_sort_field() {
    let app = spawn_app().await;
    let north = app.create_farm("North Pasture").await;
    let south = app.create_farm("South Pasture").await;
    for (farm, name, breed) in [
        (&north, "bessie", json!("Jersey")),
        (&north, "Clara", json!("Jersey")),
        (&south, "Amber", json!("Jersey")),
        (&south, "Dot", json!("Jersey")),
        (&north, "Hilda", json!("Holstein")),
        (&south, "Nobody", Value::Null),
        (&south, "Lower", json!("jersey")),
    ] {
        cow(&app, farm, name, breed).await;
    }

    // One partition, sorted by name as the sort compares (ignoring case); the value itself is
    // matched exactly. The farms of the page come in one batch.
    let (names, body, calls) = by_breed(&app, "breed: \"Jersey\"").await;
    assert_eq!(names, ["Amber", "bessie", "Clara", "Dot"]);
    assert_eq!(calls, ["Query:GSI04", "BatchGetItem"], "{body}");
    assert_eq!(
        body["data"]["cowsByBreed"]["edges"][0]["node"]["farm"]["name"],
        "South Pasture"
    );
    assert_eq!(by_breed(&app, "breed: \"jersey\"").await.0, ["Lower"]);
    assert!(by_breed(&app, "breed: \"Angus\"").await.0.is_empty());

    // Key condition, order, filter and paging.
    let (names, _, calls) = by_breed(&app, "breed: \"Jersey\", name: { beginsWith: \"B\" }").await;
    assert_eq!(names, ["bessie"]);
    assert_eq!(calls, ["Query:GSI04", "BatchGetItem"]);
    let (names, _, _) =
        by_breed(&app, "breed: \"Jersey\", name: { between: [\"b\", \"c\"] }").await;
    assert_eq!(names, ["bessie"]);
    let (names, _, _) = by_breed(&app, "breed: \"Jersey\", sortDirection: DESC, first: 3").await;
    assert_eq!(names, ["Dot", "Clara", "bessie"]);
    let (names, body, _) = by_breed(
        &app,
        &format!("breed: \"Jersey\", filter: {{ farmId: {{ eq: \"{north}\" }} }}"),
    )
    .await;
    assert_eq!(names, ["bessie", "Clara"]);
    assert_eq!(body["extensions"]["filters"][0]["path"], "cowsByBreed");
    let (first, body, _) = by_breed(&app, "breed: \"Jersey\", first: 2").await;
    assert_eq!(first, ["Amber", "bessie"]);
    let info = &body["data"]["cowsByBreed"]["pageInfo"];
    assert_eq!(info["hasNextPage"], true);
    let (rest, body, _) = by_breed(
        &app,
        &format!("breed: \"Jersey\", first: 2, after: {}", info["endCursor"]),
    )
    .await;
    assert_eq!(rest, ["Clara", "Dot"]);
    assert_eq!(
        body["data"]["cowsByBreed"]["pageInfo"]["hasNextPage"],
        false
    );
    let (before, _, _) = by_breed(
        &app,
        &format!("breed: \"Jersey\", last: 5, before: {}", info["endCursor"]),
    )
    .await;
    assert_eq!(before, ["Amber"]);
    // A cursor of another value's partition is refused.
    let body = app
        .graphql(
            "query($after: String) { cowsByBreed(breed: \"Holstein\", after: $after) { edges { cursor } } }",
            json!({ "after": info["endCursor"] }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn writes_move_a_node_between_index_partitions_and_out_of_the_index() {
    let app = spawn_app().await;
    let farm = app.create_farm("Moving Farm").await;
    let id = cow(&app, &farm, "Mabel", json!("Jersey")).await;
    let update = |breed: Value| {
        let app = &app;
        let id = id.clone();
        async move {
            let body = app
                .graphql(
                    "mutation($id: ID!, $breed: String) { updateCow(input: { id: $id, breed: $breed }) { breed } }",
                    json!({ "id": id, "breed": breed }),
                )
                .await;
            assert!(body["errors"].is_null(), "{body}");
        }
    };
    update(json!("Angus")).await;
    assert!(by_breed(&app, "breed: \"Jersey\"").await.0.is_empty());
    assert_eq!(by_breed(&app, "breed: \"Angus\"").await.0, ["Mabel"]);
    // A rename moves its place in the partition.
    let body = app
        .graphql(
            "mutation($id: ID!) { updateCow(input: { id: $id, name: \"Aaron\" }) { name } }",
            json!({ "id": id }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    cow(&app, &farm, "Bree", json!("Angus")).await;
    assert_eq!(
        by_breed(&app, "breed: \"Angus\"").await.0,
        ["Aaron", "Bree"]
    );
    update(Value::Null).await;
    assert_eq!(by_breed(&app, "breed: \"Angus\"").await.0, ["Bree"]);
    app.assert_table_consistent().await;
    let body = app
        .graphql(
            "mutation($id: ID!) { deleteCow(id: $id) { id } }",
            json!({ "id": id }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    app.assert_table_consistent().await;

    // A value too long for a key is refused before anything is written, in a write and in a
    // query.
    let long = "x".repeat(2100);
    let body = app
        .graphql(
            "mutation($farm: ID!, $breed: String) { createCow(input: { name: \"Long\", farmId: $farm, breed: $breed }) { id } }",
            json!({ "farm": farm, "breed": long }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too long for its index byBreed")),
        "{body}"
    );
    let (body, calls) = app
        .graphql_counted(
            "query($breed: String!) { cowsByBreed(breed: $breed) { edges { node { id } } } }",
            json!({ "breed": long }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert!(calls.is_empty());
    let (names, _, _) = by_breed(&app, "breed: \"Angus\"").await;
    assert_eq!(names, ["Bree"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_puts_nodes_written_before_the_index_in_it() {
    let dir = scratch("index-fill");
    let before = "tests/fixtures/no-index/schema.graphql";
    let versions = crate::migrations::with_server(&dir, before, |url| async move {
        let body = crate::migrations::graphql(
            &url,
            "mutation { createFarm(input: { name: \"Old Farm\", cows: { create: [
                { name: \"Ivy\", breed: \"Dexter\" }, { name: \"Fern\", breed: \"Dexter\" },
                { name: \"Gus\", breed: \"Angus\" }, { name: \"Hal\" }
            ] } }) { cows { edges { node { version } } } } }",
            json!({}),
        )
        .await;
        body["data"]["createFarm"]["cows"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .len()
    })
    .await;
    assert_eq!(versions, 4);
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok, "the cows lack their index entries: {stdout}");
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("builtin-index-Cow-byBreed"), "{stdout}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    // Run again, nothing is left to do.
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("builtin-index-Cow-byBreed: already applied"),
        "{stdout}"
    );
    let body = crate::migrations::with_server(&dir, "schema.graphql", |url| async move {
        crate::migrations::graphql(
            &url,
            "{ cowsByBreed(breed: \"Dexter\") { edges { node { name version } } } }",
            json!({}),
        )
        .await
    })
    .await;
    assert_eq!(
        body["data"]["cowsByBreed"]["edges"],
        json!([
            { "node": { "name": "Fern", "version": 1 } },
            { "node": { "name": "Ivy", "version": 1 } },
        ]),
        "an index entry is no new version: {body}"
    );
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test]
async fn pages_of_the_longest_index_value_and_sort_keys_go_on_from_their_cursors() {
    let app = spawn_app().await;
    let farm = app.create_farm("Long Names Farm").await;
    // The longest breed the index holds (`Cow#byBreed#<breed>` fills a partition key), and names
    // that fill a sort key but for a byte (`<name>#<36-character id>`): the cursors of these
    // pages are longer than the 4,096 characters cursors were once held to.
    let breed = "b".repeat(2048 - "Cow#byBreed#".len());
    for name in ["a", "c", "e"] {
        cow(&app, &farm, &name.repeat(986), json!(breed)).await;
    }
    let page = |after: Value, before: Value| {
        let app = &app;
        let breed = &breed;
        async move {
            let body = app
                .graphql(
                    "query($breed: String!, $after: String, $before: String) {
                        cowsByBreed(breed: $breed, first: 1, after: $after, before: $before) {
                            edges { node { name } }
                            pageInfo { hasNextPage endCursor }
                        } }",
                    json!({ "breed": breed, "after": after, "before": before }),
                )
                .await;
            assert!(body["errors"].is_null(), "{body}");
            let connection = &body["data"]["cowsByBreed"];
            let names: Vec<char> = connection["edges"]
                .as_array()
                .expect("edges")
                .iter()
                .map(|e| {
                    e["node"]["name"]
                        .as_str()
                        .expect("a name")
                        .chars()
                        .next()
                        .expect("a letter")
                })
                .collect();
            (names, connection["pageInfo"].clone())
        }
    };
    let (names, first) = page(Value::Null, Value::Null).await;
    assert_eq!(names, ['a']);
    assert!(
        first["endCursor"].as_str().expect("a cursor").len() > 4096,
        "{first}"
    );
    let (names, second) = page(first["endCursor"].clone(), Value::Null).await;
    assert_eq!(names, ['c']);
    assert_eq!(second["hasNextPage"], true);
    let (names, _) = page(first["endCursor"].clone(), second["endCursor"].clone()).await;
    assert!(names.is_empty(), "nothing lies between two neighbours");
    let (names, last) = page(second["endCursor"].clone(), Value::Null).await;
    assert_eq!(names, ['e']);
    assert_eq!(last["hasNextPage"], false);
    app.assert_table_consistent().await;
}
