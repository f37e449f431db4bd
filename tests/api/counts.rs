//! `totalCount` on lists, `@hasMany` and edge connections: counts kept in the transaction of
//! every write that adds or removes a member (on the parent node, or on the type index shards'
//! counter items), read with no extra storage call for a connection and with the page's level
//! for a list; refused where it is not kept; exact after a storm of concurrent creates, moves,
//! deletes and edge changes; filled by `migrate` for data written before counts.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::helpers::{
    TestApp, error_message, error_type, repository_file, run_tablegraph, scratch, spawn_app,
};

const FARM: &str = "query($id: ID!) { farm(id: $id) {
    cows(first: 1) { totalCount }
    chickens(first: 1) { totalCount }
    animals(first: 1) { totalCount }
} }";

/// The counts of farm `id`'s cows, chickens and animals.
async fn farm_counts(app: &TestApp, id: &str) -> (u64, u64, u64) {
    let body = app.graphql(FARM, json!({ "id": id })).await;
    let farm = &body["data"]["farm"];
    let count = |field: &str| {
        farm[field]["totalCount"]
            .as_u64()
            .unwrap_or_else(|| panic!("{field}: {body}"))
    };
    (count("cows"), count("chickens"), count("animals"))
}

async fn list_count(app: &TestApp, list: &str) -> u64 {
    let body = app
        .graphql(
            &format!("{{ {list}(first: 0) {{ totalCount }} }}"),
            json!({}),
        )
        .await;
    body["data"][list]["totalCount"]
        .as_u64()
        .unwrap_or_else(|| panic!("{body}"))
}

#[tokio::test]
async fn counts_follow_creates_moves_deletes_and_edges() {
    let app = spawn_app().await;
    assert_eq!(list_count(&app, "listFarms").await, 0);
    let north = app.create_farm("North").await;
    let south = app.create_farm("South").await;
    let mut cows = Vec::new();
    for name in ["A", "B", "C"] {
        cows.push(app.create_animal("Cow", name, &north).await);
    }
    app.create_animal("Chicken", "Hen", &north).await;
    assert_eq!(farm_counts(&app, &north).await, (3, 1, 4));
    assert_eq!(farm_counts(&app, &south).await, (0, 0, 0));
    assert_eq!(list_count(&app, "listFarms").await, 2);
    assert_eq!(list_count(&app, "listCows").await, 3);

    // A list's count is read with its page, in one level: one Query per shard and one
    // BatchGetItem of the shards' counters. A connection's count is its parent's.
    let (body, calls) = app
        .graphql_counted(
            "{ listCows(first: 2) { totalCount edges { node { name } } } }",
            json!({}),
        )
        .await;
    assert_eq!(body["data"]["listCows"]["totalCount"], 3, "{body}");
    let mut sorted = calls.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "BatchGetItem",
            "Query:GSI03",
            "Query:GSI03",
            "Query:GSI03",
            "Query:GSI03"
        ],
        "{calls:?}"
    );
    let (_, calls) = app.graphql_counted(FARM, json!({ "id": north })).await;
    assert_eq!(
        calls,
        ["BatchGetItem", "Query:GSI01", "Query:GSI01", "Query:GSI02"]
    );
    // A page of nothing reads nothing: a count alone costs its counters, or its parent.
    let (body, calls) = app
        .graphql_counted("{ listCows(first: 0) { totalCount } }", json!({}))
        .await;
    assert_eq!(body["data"]["listCows"]["totalCount"], 3, "{body}");
    assert_eq!(calls, ["BatchGetItem"]);
    let (body, calls) = app
        .graphql_counted(
            "query($id: ID!) { farm(id: $id) { cows(first: 0) { totalCount edges { cursor } }
               animals(first: 0) { totalCount } } }",
            json!({ "id": north }),
        )
        .await;
    assert_eq!(body["data"]["farm"]["cows"]["totalCount"], 3, "{body}");
    assert_eq!(body["data"]["farm"]["cows"]["edges"], json!([]), "{body}");
    assert_eq!(calls, ["BatchGetItem"]);
    // Its arguments are still checked: a forged cursor is refused.
    let body = app
        .graphql(
            "{ listCows(first: 0, after: \"forged\") { totalCount } }",
            json!({}),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    // Asked whether more pages follow, it reads what it needs to answer.
    let body = app
        .graphql(
            "{ listCows(first: 0) { pageInfo { hasNextPage } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["listCows"]["pageInfo"]["hasNextPage"], true,
        "{body}"
    );

    // A cow moved to another farm leaves one count for the other.
    let body = app
        .graphql(
            "mutation($id: ID!, $farm: ID!) { updateCow(input: { id: $id, farmId: $farm }) { id } }",
            json!({ "id": cows[0], "farm": south }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(farm_counts(&app, &north).await, (2, 1, 3));
    assert_eq!(farm_counts(&app, &south).await, (1, 0, 1));
    // Deleted, in a batch.
    let body = app
        .graphql(
            "mutation($ids: [ID!]!) { deleteCows(ids: $ids) { id } }",
            json!({ "ids": [cows[1], cows[2]] }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(farm_counts(&app, &north).await, (0, 1, 1));
    assert_eq!(list_count(&app, "listCows").await, 1);
    // A farm deleted under its cow: moving the cow away again counts nothing down on it.
    let body = app
        .graphql(
            "mutation($id: ID!) { deleteFarm(id: $id) { id } }",
            json!({ "id": south }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    let body = app
        .graphql(
            "mutation($id: ID!, $farm: ID!) { updateCow(input: { id: $id, farmId: $farm }) { id } }",
            json!({ "id": cows[0], "farm": north }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(farm_counts(&app, &north).await, (1, 1, 2));
    assert_eq!(list_count(&app, "listFarms").await, 1);

    // Edges: counted at both ends once, whatever their metadata becomes.
    let goal = app
        .create("Goal", json!({ "title": "Grow", "kind": "OBJECTIVE" }))
        .await;
    let mut users = Vec::new();
    for n in 0..3 {
        users.push(
            app.create(
                "User",
                json!({ "name": format!("U{n}"), "email": format!("u{n}@example.com") }),
            )
            .await,
        );
    }
    let add = |user: String, role: &'static str| {
        let app = &app;
        let goal = goal.clone();
        async move {
            let body = app
                .graphql(
                    "mutation($g: ID!, $u: ID!, $r: GoalRole!) { addGoalMembership(input: { from: $g, to: $u, role: $r }) { role } }",
                    json!({ "g": goal, "u": user, "r": role }),
                )
                .await;
            assert!(body["errors"].is_null(), "{body}");
        }
    };
    for user in &users {
        add(user.clone(), "CONTRIBUTOR").await;
    }
    add(users[0].clone(), "LEAD").await;
    assert_eq!(
        membership_counts(&app, &goal, &users[0]).await,
        (json!(3), json!(1))
    );
    let body = app
        .graphql(
            "mutation($g: ID!, $u: ID!) { removeGoalMembership(from: $g, to: $u) }",
            json!({ "g": goal, "u": users[1] }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        membership_counts(&app, &goal, &users[0]).await,
        (json!(2), json!(1))
    );
    // A user deleted takes its edge, and the goal's count of it.
    let body = app
        .graphql(
            "mutation($u: ID!) { deleteUser(id: $u) { id } }",
            json!({ "u": users[2] }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        membership_counts(&app, &goal, &users[0]).await,
        (json!(1), json!(1))
    );
    app.assert_table_consistent().await;
}

/// The count of `goal`'s members and of `user`'s goals.
async fn membership_counts(app: &TestApp, goal: &str, user: &str) -> (Value, Value) {
    let body = app
        .graphql(
            "query($g: ID!, $u: ID!) {
                goal(id: $g) { members { totalCount } }
                user(id: $u) { goals { totalCount } }
            }",
            json!({ "g": goal, "u": user }),
        )
        .await;
    (
        body["data"]["goal"]["members"]["totalCount"].clone(),
        body["data"]["user"]["goals"]["totalCount"].clone(),
    )
}

#[tokio::test]
async fn a_count_of_part_of_a_connection_is_refused_before_anything_is_read() {
    let app = spawn_app().await;
    let farm = app.create_farm("Counted").await;
    app.create_animal("Cow", "Bess", &farm).await;
    for (query, said) in [(
        "{ listFarms(filter: { name: { beginsWith: \"C\" } }) { totalCount } }",
        "not kept for a page with filter",
    )] {
        let (body, calls) = app.graphql_counted(query, json!({})).await;
        assert_eq!(error_type(&body), "BadUserInput", "{body}");
        assert!(
            body["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains(said)),
            "{body}"
        );
        assert!(calls.is_empty(), "{query}: {calls:?}");
    }
    // An index keeps no count: its page's type has none to ask for.
    let (body, calls) = app
        .graphql_counted(
            "{ cowsByBreed(breed: \"Jersey\") { totalCount } }",
            json!({}),
        )
        .await;
    assert_eq!(error_type(&body), "ValidationError", "{body}");
    assert!(error_message(&body).contains("totalCount"), "{body}");
    assert!(calls.is_empty(), "{calls:?}");
    let body = app
        .graphql(
            "{ __type(name: \"CowIndexConnection\") { fields { name } } }",
            json!({}),
        )
        .await;
    let fields: Vec<&str> = body["data"]["__type"]["fields"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(|field| field["name"].as_str())
        .collect();
    assert_eq!(fields, ["edges", "pageInfo"], "{body}");
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { cows(name: { eq: \"bess\" }) { totalCount } } }",
            json!({ "id": farm }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not kept for a page with a key condition")),
        "{body}"
    );
}

/// A tiny deterministic generator, so the storm's choices are fixed by its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_are_exact_after_a_storm_of_creates_moves_and_deletes() {
    let app = std::sync::Arc::new(spawn_app().await);
    let mut farms = Vec::new();
    for n in 0..4 {
        farms.push(app.create_farm(&format!("Storm {n}")).await);
    }
    let farms = std::sync::Arc::new(farms);
    let clients: Vec<_> = (0..8u64)
        .map(|client| {
            let app = app.clone();
            let farms = farms.clone();
            tokio::spawn(async move {
                let mut rng = Rng(0x5EED_0000 + client);
                let mut mine: Vec<String> = Vec::new();
                for op in 0..25 {
                    let farm = &farms[rng.below(farms.len())];
                    let body = match rng.below(5) {
                        0 | 1 if mine.len() < 6 => {
                            let kind = ["Cow", "Chicken"][rng.below(2)];
                            app.graphql(
                                &format!("mutation($f: ID!, $n: String!) {{ create{kind}(input: {{ name: $n, farmId: $f }}) {{ id }} }}"),
                                json!({ "f": farm, "n": format!("c{client}-{op}") }),
                            )
                            .await
                        }
                        0..=2 if !mine.is_empty() => {
                            let id = &mine[rng.below(mine.len())];
                            let kind = if id.starts_with("Cow") { "Cow" } else { "Chicken" };
                            let id = id.split_once(':').expect("kind:id").1;
                            app.graphql(
                                &format!("mutation($id: ID!, $f: ID!) {{ update{kind}(input: {{ id: $id, farmId: $f }}) {{ id }} }}"),
                                json!({ "id": id, "f": farm }),
                            )
                            .await
                        }
                        _ if !mine.is_empty() => {
                            let at = rng.below(mine.len());
                            let id = mine.remove(at);
                            let (kind, id) = id.split_once(':').expect("kind:id");
                            app.graphql(
                                &format!("mutation($id: ID!) {{ delete{kind}(id: $id) {{ id }} }}"),
                                json!({ "id": id }),
                            )
                            .await
                        }
                        _ => continue,
                    };
                    assert!(
                        body["errors"].is_null()
                            || body["errors"][0]["extensions"]["errorType"] == "ConflictUnhandled",
                        "{body}"
                    );
                    for kind in ["Cow", "Chicken"] {
                        if let Some(id) = body["data"][format!("create{kind}")]["id"].as_str() {
                            mine.push(format!("{kind}:{id}"));
                        }
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await.expect("a client ends");
    }

    // Every farm's counts equal its members read page by page, and the lists' counts their
    // nodes.
    let mut listed: BTreeMap<&str, u64> = BTreeMap::new();
    for farm in farms.iter() {
        let mut members = Vec::new();
        for field in ["cows", "chickens", "animals"] {
            let body = app
                .graphql(
                    &format!("query($id: ID!) {{ farm(id: $id) {{ {field}(first: 100) {{ totalCount edges {{ cursor }} pageInfo {{ hasNextPage }} }} }} }}"),
                    json!({ "id": farm }),
                )
                .await;
            let connection = &body["data"]["farm"][field];
            assert_eq!(connection["pageInfo"]["hasNextPage"], false, "{body}");
            let read = connection["edges"].as_array().map_or(0, Vec::len) as u64;
            assert_eq!(connection["totalCount"], read, "{field} of {farm}: {body}");
            members.push(read);
        }
        assert_eq!(members[0] + members[1], members[2]);
        *listed.entry("listCows").or_default() += members[0];
        *listed.entry("listChickens").or_default() += members[1];
    }
    for (list, count) in listed {
        assert_eq!(list_count(&app, list).await, count, "{list}");
    }
    app.assert_table_consistent().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_counts_what_was_written_before_counts() {
    let dir = scratch("counts-fill");
    let fixture = repository_file("tests/fixtures/migrations/before-type-index.jsonl");
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    let (ok, stdout, stderr) =
        run_tablegraph(&["import", fixture.to_str().expect("a path")], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok, "{stdout}");
    assert!(
        stdout.contains("counts (totalCount) that differ from the members and edges"),
        "{stdout}"
    );
    let (ok, stdout, stderr) = run_tablegraph(&["migrate", "--dry-run"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("migration builtin-counts:"), "{stdout}");
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    let body = crate::migrations::with_server(&dir, "schema.graphql", |url| async move {
        crate::migrations::graphql(&url, "{ listFarms(first: 0) { totalCount } }", json!({})).await
    })
    .await;
    assert_eq!(body["data"]["listFarms"]["totalCount"], 5, "{body}");
    std::fs::remove_dir_all(&dir).expect("removable");
}

/// The version of goal `id`.
async fn goal_version(app: &TestApp, id: &str) -> i64 {
    let body = app
        .graphql(
            "query($g: ID!) { goal(id: $g) { version } }",
            json!({ "g": id }),
        )
        .await;
    body["data"]["goal"]["version"]
        .as_i64()
        .unwrap_or_else(|| panic!("{body}"))
}

/// Children created and edges added beside the parent's own updates all land: they add to
/// the parent's counts and edge set without moving its version, so the updates, each pinned
/// to the version its writer last saw, hold; the counts and the edge set end exact and
/// `check` finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_and_edges_written_beside_a_parents_updates_leave_its_version() {
    let app = std::sync::Arc::new(spawn_app().await);
    let parent = app
        .create("Goal", json!({ "title": "Parent", "kind": "OBJECTIVE" }))
        .await;
    let child = |n: usize| json!({ "title": format!("Child {n:02}"), "kind": "KEY_RESULT", "parentId": parent });
    let member = |app: std::sync::Arc<TestApp>, goal: String, n: usize| async move {
        let user = app
            .create(
                "User",
                json!({ "name": format!("Member {n}"), "email": format!("member{n}@example.com") }),
            )
            .await;
        app.graphql(
            "mutation($g: ID!, $u: ID!) { addGoalMembership(input: { from: $g, to: $u, role: CONTRIBUTOR }) { role } }",
            json!({ "g": goal, "u": user }),
        )
        .await
    };

    // One after another: neither a child nor an edge moves the parent's version.
    assert_eq!(goal_version(&app, &parent).await, 1);
    app.create("Goal", child(0)).await;
    let body = member(app.clone(), parent.clone(), 0).await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(goal_version(&app, &parent).await, 1);

    // At once: the owner's updates, each on the version it saw, beside more children and edges.
    let owner = {
        let app = app.clone();
        let parent = parent.clone();
        tokio::spawn(async move {
            let mut version = 1;
            for n in 0..8 {
                let body = app
                    .graphql(
                        "mutation($g: ID!, $t: String!, $v: Int) { updateGoal(input: { id: $g, title: $t, expectedVersion: $v }) { version } }",
                        json!({ "g": parent, "t": format!("Parent {n}"), "v": version }),
                    )
                    .await;
                version = body["data"]["updateGoal"]["version"]
                    .as_i64()
                    .unwrap_or_else(|| panic!("update {n} on version {version}: {body}"));
            }
            version
        })
    };
    let writers: Vec<_> = (1..=8)
        .map(|n| {
            let app = app.clone();
            let parent = parent.clone();
            let child = child(n);
            tokio::spawn(async move {
                app.create("Goal", child).await;
                let body = member(app.clone(), parent, n).await;
                assert!(body["errors"].is_null(), "{body}");
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("a writer ends");
    }
    assert_eq!(owner.await.expect("the owner ends"), 9);

    let body = app
        .graphql(
            "query($g: ID!) { goal(id: $g) { title version
                children(first: 100) { totalCount edges { cursor } }
                members(first: 100) { totalCount edges { cursor } }
                leads { id } } }",
            json!({ "g": parent }),
        )
        .await;
    let goal = &body["data"]["goal"];
    assert_eq!(goal["title"], "Parent 7", "{body}");
    assert_eq!(goal["version"], 9, "{body}");
    for (connection, want) in [("children", 9), ("members", 9)] {
        assert_eq!(goal[connection]["totalCount"], want, "{connection}: {body}");
        assert_eq!(
            goal[connection]["edges"].as_array().map_or(0, Vec::len),
            want,
            "{connection}: {body}"
        );
    }
    app.assert_table_consistent().await;
}

/// A goal deleted while edges are added to it: each add either lands before the delete, which
/// then removes it too (an edge changes the goal's edge counts, so a delete that read its edges
/// before fails and reads them again), or finds no goal. No edge outlives its goal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_deleted_while_edges_are_added_leaves_none_behind() {
    let app = std::sync::Arc::new(spawn_app().await);
    for round in 0..4 {
        let goal = app
            .create(
                "Goal",
                json!({ "title": format!("Doomed {round}"), "kind": "OBJECTIVE" }),
            )
            .await;
        let mut users = Vec::new();
        for n in 0..6 {
            users.push(
                app.create(
                    "User",
                    json!({ "name": format!("U{round}-{n}"), "email": format!("u{round}-{n}@example.com") }),
                )
                .await,
            );
        }
        let adds: Vec<_> = users
            .into_iter()
            .map(|user| {
                let app = app.clone();
                let goal = goal.clone();
                tokio::spawn(async move {
                    app.graphql(
                        "mutation($g: ID!, $u: ID!) { addGoalMembership(input: { from: $g, to: $u, role: CONTRIBUTOR }) { role } }",
                        json!({ "g": goal, "u": user }),
                    )
                    .await
                })
            })
            .collect();
        let body = app
            .graphql(
                "mutation($g: ID!) { deleteGoal(id: $g) { id } }",
                json!({ "g": goal }),
            )
            .await;
        assert_eq!(body["data"]["deleteGoal"]["id"], goal.as_str(), "{body}");
        for add in adds {
            let body = add.await.expect("an add ends");
            assert!(
                body["errors"].is_null()
                    || error_type(&body) == "BadUserInput"
                    || error_type(&body) == "ConflictUnhandled",
                "{body}"
            );
        }
        let body = app
            .graphql(
                "query($g: ID!) { goal(id: $g) { id } }",
                json!({ "g": goal }),
            )
            .await;
        assert!(body["data"]["goal"].is_null(), "{body}");
    }
    app.assert_table_consistent().await;
}
