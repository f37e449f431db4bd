//! `list<Types>`: every node of a type from its sharded type index, a page being one Query per
//! shard (one level), merged, every node exactly once across pages in both directions and both
//! orders; and `migrate` filling the index for nodes written before it existed.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::helpers::{
    TestApp, repository_file, run_tablegraph, scratch, spawn_app, spawn_app_with_schema,
};

/// A listed type, as the tests create and read it.
struct Listed {
    /// `Farm`: `createFarms`, `CreateFarmInput`, `listFarms`.
    name: &'static str,
    /// The Query its type index is read with: `Query:GSI01`.
    query: &'static str,
    /// The input of its `n`th node.
    input: fn(usize) -> Value,
}

/// Farm's type index: slot 1 (farms belong to no relation), 4 shards by default.
const FARMS: Listed = Listed {
    name: "Farm",
    query: "Query:GSI01",
    input: |n| json!({ "name": format!("Listed {n:05}") }),
};
/// Images: slot 1 too, no relation, no unique field.
const IMAGES: Listed = Listed {
    name: "Image",
    query: "Query:GSI01",
    input: |n| json!({ "url": format!("https://example.com/{n:05}.png") }),
};
/// Goals belong to their parent goal's `children` in slot 1: their index is slot 2.
const GOALS: Listed = Listed {
    name: "Goal",
    query: "Query:GSI02",
    input: |n| json!({ "title": format!("Goal {n:05}"), "kind": "OBJECTIVE" }),
};
/// Notes, whose list is sorted by title (`tests/fixtures/list-sorted`).
const NOTES: Listed = Listed {
    name: "Note",
    query: "Query:GSI01",
    input: |n| {
        let fruit = ["apple", "Banana", "cherry", "banana split"][n % 4];
        json!({ "title": format!("{fruit} {:02}", (n * 7) % 30), "stars": n % 5 })
    },
};
const SHARDS: usize = 4;

/// Creates `count` nodes of `listed` in batches; answers their ids.
async fn create(app: &TestApp, listed: &Listed, from: usize, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let numbers: Vec<usize> = (from..from + count).collect();
    let name = listed.name;
    for batch in numbers.chunks(40) {
        let input: Vec<Value> = batch.iter().map(|n| (listed.input)(*n)).collect();
        let body = app
            .graphql(
                &format!(
                    "mutation($input: [Create{name}Input!]!) {{ create{name}s(input: $input) {{ id }} }}"
                ),
                json!({ "input": input }),
            )
            .await;
        let created = body["data"][format!("create{name}s")]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"));
        ids.extend(
            created
                .iter()
                .map(|node| node["id"].as_str().expect("an id").to_owned()),
        );
    }
    ids
}

/// Every id of `listed`, read in pages of `size` with `arguments` (`sortDirection`), going
/// forward (`first`/`after`) or backward (`last`/`before`); each page must cost one Query per
/// shard.
async fn read_all(
    app: &TestApp,
    listed: &Listed,
    size: usize,
    forward: bool,
    arguments: &str,
) -> Vec<String> {
    let list = format!("list{}s", listed.name);
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let (count, position) = if forward {
            ("first", "after")
        } else {
            ("last", "before")
        };
        let at = cursor
            .as_ref()
            .map(|c| format!(", {position}: \"{c}\""))
            .unwrap_or_default();
        let query = format!(
            "{{ {list}({count}: {size}{at}{arguments}) {{
                edges {{ node {{ id }} }}
                pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
            }} }}"
        );
        let (body, calls) = app.graphql_counted(&query, json!({})).await;
        assert_eq!(
            calls,
            vec![listed.query.to_owned(); SHARDS],
            "one Query per shard: {body}"
        );
        let page_of = &body["data"][&list];
        let mut page: Vec<String> = page_of["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|e| e["node"]["id"].as_str().expect("an id").to_owned())
            .collect();
        assert!(page.len() <= size);
        let info = &page_of["pageInfo"];
        let more = if forward {
            info["hasNextPage"] == true
        } else {
            info["hasPreviousPage"] == true
        };
        if more {
            assert_eq!(page.len(), size, "a page that says more follows is full");
        }
        if forward {
            ids.append(&mut page);
        } else {
            page.append(&mut ids);
            ids = page;
        }
        if !more {
            return ids;
        }
        let next = if forward {
            &info["endCursor"]
        } else {
            &info["startCursor"]
        };
        cursor = Some(next.as_str().expect("a cursor").to_owned());
    }
}

async fn assert_listed(app: &TestApp, listed: &Listed, ids: &[String]) {
    let ascending: Vec<String> = ids
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(ascending.len(), ids.len(), "ids are unique");
    let descending: Vec<String> = ascending.iter().rev().cloned().collect();
    for size in [1, 50, 100] {
        if size == 1 && ids.len() > 5 {
            continue;
        }
        assert_eq!(
            read_all(app, listed, size, true, "").await,
            ascending,
            "forward, {size}"
        );
        assert_eq!(
            read_all(app, listed, size, false, "").await,
            ascending,
            "backward, {size}"
        );
        assert_eq!(
            read_all(app, listed, size, true, ", sortDirection: DESC").await,
            descending,
            "forward down, {size}"
        );
        assert_eq!(
            read_all(app, listed, size, false, ", sortDirection: DESC").await,
            descending,
            "backward down, {size}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_holds_every_node_once_in_both_directions_and_orders() {
    let app = spawn_app().await;
    for listed in [&FARMS, &IMAGES, &GOALS] {
        let mut ids = Vec::new();
        assert_listed(&app, listed, &ids).await;
        for count in [1, 99, 100, 101] {
            let more = create(&app, listed, ids.len(), count - ids.len()).await;
            ids.extend(more);
            assert_listed(&app, listed, &ids).await;
        }
    }
    // The nodes are offered to the request's loader: their relations cost one level more.
    let (body, calls) = app
        .graphql_counted(
            "{ listFarms(first: 3) { edges { node { name cows(first: 2) { edges { node { name } } } } } } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        calls.len(),
        SHARDS + 3,
        "then one Query per farm's cows: {calls:?}"
    );
    app.assert_table_consistent().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_sorted_by_a_field_pages_in_its_order_and_takes_its_key_condition() {
    let app = spawn_app_with_schema("tests/fixtures/list-sorted/schema.graphql").await;
    let ids = create(&app, &NOTES, 0, 60).await;
    let mut sorted: Vec<(String, String, String)> = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let title = (NOTES.input)(n)["title"]
            .as_str()
            .expect("a title")
            .to_owned();
        sorted.push((title.to_lowercase(), id.clone(), title));
    }
    sorted.sort();
    let expected: Vec<String> = sorted.iter().map(|(_, id, _)| id.clone()).collect();
    let descending: Vec<String> = expected.iter().rev().cloned().collect();
    for size in [7, 100] {
        assert_eq!(read_all(&app, &NOTES, size, true, "").await, expected);
        assert_eq!(read_all(&app, &NOTES, size, false, "").await, expected);
        assert_eq!(
            read_all(&app, &NOTES, size, true, ", sortDirection: DESC").await,
            descending
        );
    }
    // A key condition on the sort field bounds every shard; it compares as the list sorts.
    let bananas: Vec<String> = sorted
        .iter()
        .filter(|(title, _, _)| title.starts_with("banana"))
        .map(|(_, id, _)| id.clone())
        .collect();
    assert_eq!(
        read_all(
            &app,
            &NOTES,
            10,
            true,
            ", title: { beginsWith: \"BANANA\" }"
        )
        .await,
        bananas
    );
    let body = app
        .graphql(
            "{ listNotes(title: { beginsWith: \"b\" }, filter: { stars: { eq: 0 } }, first: 100) {
                edges { node { title stars } }
            } }",
            json!({}),
        )
        .await;
    let edges = body["data"]["listNotes"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"));
    assert!(!edges.is_empty());
    assert!(edges.iter().all(|e| {
        e["node"]["stars"] == 0
            && e["node"]["title"]
                .as_str()
                .is_some_and(|t| t.to_lowercase().starts_with('b'))
    }));
    app.assert_table_consistent().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_nodes_page_through_while_others_are_created() {
    let app = spawn_app().await;
    for listed in [&FARMS, &IMAGES, &GOALS] {
        let ids = create(&app, listed, 0, 1000).await;
        let before: BTreeSet<String> = ids.into_iter().collect();
        let mut known = before.clone();
        // Page forward (or backward, down) while a writer adds nodes: every node that existed
        // before is read once, and nothing twice.
        for (forward, arguments) in [(true, ""), (false, ", sortDirection: DESC")] {
            let (seen, added) = tokio::join!(
                read_all(&app, listed, 100, forward, arguments),
                create(&app, listed, known.len(), 100)
            );
            let unique: BTreeSet<&String> = seen.iter().collect();
            assert_eq!(unique.len(), seen.len(), "no {} twice", listed.name);
            assert!(
                before.iter().all(|id| unique.contains(id)),
                "every {} created before paging began",
                listed.name
            );
            known.extend(added);
            assert!(
                seen.iter().all(|id| known.contains(id)),
                "only {}s",
                listed.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_or_foreign_cursor_is_refused() {
    let app = spawn_app().await;
    let farm = app.create_farm("Cursor Farm").await;
    app.create_animal("Cow", "Daisy", &farm).await;
    let body = app
        .graphql(
            "query($f: ID!) { farm(id: $f) { cows(first: 1) { edges { cursor } } } }",
            json!({ "f": farm }),
        )
        .await;
    let foreign = body["data"]["farm"]["cows"]["edges"][0]["cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_owned();
    for cursor in [foreign.as_str(), "bm90IGEgY3Vyc29y"] {
        let body = app
            .graphql(
                "query($c: String!) { listFarms(after: $c) { edges { cursor } } }",
                json!({ "c": cursor }),
            )
            .await;
        assert_eq!(
            crate::helpers::error_type(&body),
            "BadUserInput",
            "{cursor}: {body}"
        );
    }
}

/// The farms of the fixture `before-type-index.jsonl`, written before the type index existed;
/// two of them are in shards 4 and 5 of 8 (0 and 1 of 4).
const FIXTURE_FARMS: [&str; 5] = ["Alder", "Birch", "Cedar", "Elm", "Fir"];

/// The names and versions `listFarms` answers on the store in `dir`, served with `schema`.
async fn listed(dir: &std::path::Path, schema: &str) -> (Vec<String>, Vec<i64>) {
    let body = crate::migrations::with_server(dir, schema, |url| async move {
        crate::migrations::graphql(
            &url,
            "{ listFarms(first: 100) { edges { node { name version } } } }",
            json!({}),
        )
        .await
    })
    .await;
    let edges = body["data"]["listFarms"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .clone();
    let mut names: Vec<String> = edges
        .iter()
        .filter_map(|e| e["node"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort_unstable();
    let versions = edges
        .iter()
        .filter_map(|e| e["node"]["version"].as_i64())
        .collect();
    (names, versions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_puts_nodes_written_before_the_type_index_in_it() {
    let dir = scratch("type-index");
    let fixture = repository_file("tests/fixtures/migrations/before-type-index.jsonl");
    // A table made by `migrate` before the import: the import brings nodes of an earlier format.
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    let (ok, stdout, stderr) =
        run_tablegraph(&["import", fixture.to_str().expect("a path")], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("run `tablegraph migrate`"), "{stdout}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok, "the farms lack their type index: {stdout}");
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("builtin-type-index-Farm"), "{stdout}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    let (names, versions) = listed(&dir, "schema.graphql").await;
    assert_eq!(names, FIXTURE_FARMS);
    assert_eq!(versions, [1; 5], "a place in the index is no new version");

    // Another shard count fills the index again; so does going back to the first one.
    let eight = "tests/fixtures/list-shards/schema.graphql";
    let (ok, stdout, stderr) = run_tablegraph(&["migrate", "--schema", eight], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(listed(&dir, eight).await.0, FIXTURE_FARMS, "8 shards");
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(
        listed(&dir, "schema.graphql").await.0,
        FIXTURE_FARMS,
        "4 shards again"
    );
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_under_a_schema_without_the_list_takes_the_node_out_of_the_index() {
    let dir = scratch("no-list");
    let id = crate::migrations::with_server(&dir, "schema.graphql", |url| async move {
        let body = crate::migrations::graphql(
            &url,
            "mutation { createFarm(input: { name: \"Listed Once\" }) { id } }",
            json!({}),
        )
        .await;
        body["data"]["createFarm"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{body}"))
            .to_owned()
    })
    .await;
    let unlisted = "tests/fixtures/no-list/schema.graphql";
    let (ok, stdout, _) = run_tablegraph(&["check", "--schema", unlisted], &dir).await;
    assert!(
        !ok,
        "the farm still holds its shard of an index the schema dropped: {stdout}"
    );
    let body = crate::migrations::with_server(&dir, unlisted, |url| async move {
        crate::migrations::graphql(
            &url,
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"Unlisted\" }) { name } }",
            json!({ "id": id }),
        )
        .await
    })
    .await;
    assert_eq!(body["data"]["updateFarm"]["name"], "Unlisted", "{body}");
    let (ok, stdout, _) = run_tablegraph(&["check", "--schema", unlisted], &dir).await;
    assert!(ok, "the update took the farm out of the index: {stdout}");
    std::fs::remove_dir_all(&dir).expect("removable");
}
