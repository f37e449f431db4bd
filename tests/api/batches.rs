//! Batch mutations (`create<Types>`, `update<Types>`, `delete<Types>`), all or nothing in one
//! transaction; conditions on updates and deletes (`condition: Model<Type>ConditionInput`); and
//! `@default` values of creates.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_type, repository_file, spawn_app, spawn_app_with_schema};

const CREATE_FARMS: &str =
    "mutation($input: [CreateFarmInput!]!) { createFarms(input: $input) { id name } }";
const UPDATE_FARMS: &str =
    "mutation($input: [UpdateFarmInput!]!) { updateFarms(input: $input) { id name version } }";
const DELETE_FARMS: &str = "mutation($ids: [ID!]!) { deleteFarms(ids: $ids) { id name } }";

fn farms(names: &[String]) -> Value {
    Value::Array(names.iter().map(|name| json!({ "name": name })).collect())
}

fn names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|n| format!("{prefix} {n}")).collect()
}

/// The farm `id`'s name, or `None` when there is no such farm.
async fn farm_name(app: &TestApp, id: &str) -> Option<String> {
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { name } }",
            json!({ "id": id }),
        )
        .await;
    body["data"]["farm"]["name"].as_str().map(str::to_owned)
}

fn index(body: &Value) -> Option<u64> {
    body["errors"][0]["extensions"]["index"].as_u64()
}

#[tokio::test]
async fn a_batch_of_creates_is_one_storage_call_and_every_node_is_there() {
    let app = spawn_app().await;
    let names = names("Batch", 25);
    let (body, calls) = app
        .graphql_counted(CREATE_FARMS, json!({ "input": farms(&names) }))
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        calls,
        ["TransactWriteItems"],
        "one transaction, nothing else"
    );
    let created = body["data"]["createFarms"].as_array().expect("a list");
    assert_eq!(created.len(), 25);
    for (farm, name) in created.iter().zip(&names) {
        assert_eq!(farm["name"], json!(name), "in the order of the input");
        let id = farm["id"].as_str().expect("an id");
        assert_eq!(farm_name(&app, id).await.as_deref(), Some(name.as_str()));
    }
    let report = app.assert_table_consistent().await;
    assert_eq!((report.nodes, report.unique_values), (25, 25));
}

#[tokio::test]
async fn a_member_that_fails_first_in_the_middle_or_last_fails_the_batch_and_writes_nothing() {
    let app = spawn_app().await;
    app.create_farm("Taken").await;
    for position in [0, 12, 24] {
        let mut names = names(&format!("At {position}"), 25);
        names[position] = "taken".to_owned();
        let body = app
            .graphql(CREATE_FARMS, json!({ "input": farms(&names) }))
            .await;
        assert_eq!(error_type(&body), "UniqueConstraintViolation", "{body}");
        assert_eq!(index(&body), Some(position as u64), "{body}");
        assert_eq!(body["errors"][0]["path"], json!(["createFarms", position]));
        assert_eq!(body["errors"][0]["extensions"]["field"], "name");
    }
    let report = app.assert_table_consistent().await;
    assert_eq!(report.nodes, 1, "only the farm made before");

    // Updates: one member expects a version its farm no longer has.
    let mut ids = Vec::new();
    for name in names("Kept", 5) {
        ids.push(app.create_farm(&name).await);
    }
    for position in [0, 2, 4] {
        let input: Vec<Value> = ids
            .iter()
            .enumerate()
            .map(|(n, id)| {
                let version = if n == position { 7 } else { 1 };
                json!({ "id": id, "name": format!("Renamed {n}"), "expectedVersion": version })
            })
            .collect();
        let body = app.graphql(UPDATE_FARMS, json!({ "input": input })).await;
        assert_eq!(error_type(&body), "VersionMismatch", "{body}");
        assert_eq!(index(&body), Some(position as u64), "{body}");
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(farm_name(&app, id).await, Some(format!("Kept {n}")));
        }
    }

    // Deletes: one member is no id at all.
    for position in [0, 2, 4] {
        let mut members = ids.clone();
        members[position] = "not#an#id".to_owned();
        let body = app.graphql(DELETE_FARMS, json!({ "ids": members })).await;
        assert_eq!(error_type(&body), "BadUserInput", "{body}");
        assert_eq!(index(&body), Some(position as u64), "{body}");
    }
    for id in &ids {
        assert!(farm_name(&app, id).await.is_some(), "nothing was deleted");
    }
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn updates_and_deletes_in_a_batch_commit_together() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for name in names("Old", 3) {
        ids.push(app.create_farm(&name).await);
    }
    let input: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| json!({ "id": id, "name": format!("New {n}") }))
        .collect();
    let body = app.graphql(UPDATE_FARMS, json!({ "input": input })).await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(body["data"]["updateFarms"][2]["version"], 2);
    // The old names are free again, the new ones taken.
    let again = app
        .graphql(CREATE_FARMS, json!({ "input": farms(&names("Old", 3)) }))
        .await;
    assert!(again["errors"].is_null(), "{again}");
    let taken = app
        .graphql(
            CREATE_FARMS,
            json!({ "input": farms(&["new 1".to_owned()]) }),
        )
        .await;
    assert_eq!(error_type(&taken), "UniqueConstraintViolation");

    // An id with no farm fails the batch: nothing is deleted.
    let missing = "0190f7d0-0000-7000-8000-00000000dead";
    let body = app
        .graphql(DELETE_FARMS, json!({ "ids": [ids[0], missing, ids[2]] }))
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert_eq!(index(&body), Some(1));
    assert_eq!(farm_name(&app, &ids[0]).await.as_deref(), Some("New 0"));
    let body = app
        .graphql(DELETE_FARMS, json!({ "ids": [ids[0], ids[2]] }))
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(body["data"]["deleteFarms"][0]["name"], "New 0");
    assert_eq!(body["data"]["deleteFarms"][1]["name"], "New 2");
    assert_eq!(farm_name(&app, &ids[0]).await, None);
    assert_eq!(farm_name(&app, &ids[1]).await.as_deref(), Some("New 1"));
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_batch_is_refused_before_any_write_when_it_needs_more_than_one_transaction() {
    let app = spawn_app().await;
    let images = |count: usize| -> Value {
        Value::Array(
            (0..count)
                .map(|n| json!({ "url": format!("https://example.com/{n}.png") }))
                .collect(),
        )
    };
    let query = "mutation($input: [CreateImageInput!]!) { createImages(input: $input) { id } }";
    let body = app.graphql(query, json!({ "input": images(101) })).await;
    assert_eq!(error_type(&body), "TransactionTooLarge", "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("needs at least 101 writes")),
        "{body}"
    );
    assert_eq!(app.assert_table_consistent().await.nodes, 0);
    // Each image is one write, and the counters of the type index shards they fall in one
    // each: 97 images all but surely fill the four shards, one write too many.
    let body = app.graphql(query, json!({ "input": images(97) })).await;
    assert_eq!(error_type(&body), "TransactionTooLarge", "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("needs 101 writes")),
        "{body}"
    );
    let body = app.graphql(query, json!({ "input": images(96) })).await;
    assert!(
        body["errors"].is_null(),
        "exactly one transaction's worth: {body}"
    );
    assert_eq!(app.assert_table_consistent().await.nodes, 96);
}

#[tokio::test]
async fn two_members_taking_one_unique_value_are_refused_on_the_later_one() {
    let app = spawn_app().await;
    let names = vec!["Twin".to_owned(), "Other".to_owned(), " TWIN ".to_owned()];
    let body = app
        .graphql(CREATE_FARMS, json!({ "input": farms(&names) }))
        .await;
    assert_eq!(error_type(&body), "UniqueConstraintViolation", "{body}");
    assert_eq!(index(&body), Some(2));
    let id = app.create_farm("Once").await;
    let input = json!([{ "id": id, "name": "A" }, { "id": id, "name": "B" }]);
    let body = app.graphql(UPDATE_FARMS, json!({ "input": input })).await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert_eq!(index(&body), Some(1));
    assert_eq!(app.assert_table_consistent().await.nodes, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_batches_that_collide_on_a_unique_value_let_exactly_one_through() {
    let app = spawn_app().await;
    let batches = (0..8).map(|n| {
        let app = &app;
        async move {
            let mut names = names(&format!("Racer {n}"), 5);
            names[n % 5] = "Contested".to_owned();
            app.graphql(CREATE_FARMS, json!({ "input": farms(&names) }))
                .await
        }
    });
    let bodies = futures::future::join_all(batches).await;
    let winners = bodies
        .iter()
        .filter(|body| body["errors"].is_null())
        .count();
    assert_eq!(winners, 1, "{bodies:?}");
    for body in bodies.iter().filter(|body| !body["errors"].is_null()) {
        assert_eq!(error_type(body), "UniqueConstraintViolation", "{body}");
    }
    let report = app.assert_table_consistent().await;
    assert_eq!(report.nodes, 5, "the winner's five farms and no other");
}

#[tokio::test]
async fn a_condition_that_does_not_hold_on_the_stored_node_writes_nothing() {
    let app = spawn_app().await;
    let id = app.create_farm("Hill").await;
    let update = "mutation($id: ID!, $name: String!, $condition: ModelFarmConditionInput) {
        updateFarm(input: { id: $id, name: $name }, condition: $condition) { name } }";
    let refused = app
        .graphql(
            update,
            json!({ "id": id, "name": "Vale", "condition": { "name": { "eq": "Dale" } } }),
        )
        .await;
    assert_eq!(error_type(&refused), "ConditionalCheckFailed", "{refused}");
    assert_eq!(refused["data"]["updateFarm"], Value::Null);
    assert_eq!(farm_name(&app, &id).await.as_deref(), Some("Hill"));

    let condition = json!({
        "and": [{ "name": { "beginsWith": "Hi" } }, { "logoId": { "attributeExists": false } }],
        "not": { "name": { "eq": "Vale" } },
    });
    let body = app
        .graphql(
            update,
            json!({ "id": id, "name": "Vale", "condition": condition }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(farm_name(&app, &id).await.as_deref(), Some("Vale"));

    let delete = "mutation($id: ID!, $condition: ModelFarmConditionInput) {
        deleteFarm(id: $id, condition: $condition) { name } }";
    let refused = app
        .graphql(
            delete,
            json!({ "id": id, "condition": { "name": { "ne": "Vale" } } }),
        )
        .await;
    assert_eq!(error_type(&refused), "ConditionalCheckFailed", "{refused}");
    assert_eq!(farm_name(&app, &id).await.as_deref(), Some("Vale"));
    let body = app
        .graphql(
            delete,
            json!({ "id": id, "condition": { "name": { "eq": "Vale" } } }),
        )
        .await;
    assert_eq!(body["data"]["deleteFarm"]["name"], "Vale", "{body}");
    assert_eq!(farm_name(&app, &id).await, None);
}

#[tokio::test]
async fn a_create_stores_each_default_the_input_leaves_out_and_the_sdl_shows_them() {
    let app = spawn_app_with_schema("tests/fixtures/defaults.graphql").await;
    let create = "mutation($input: CreatePostInput!) {
        createPost(input: $input) { title status views rating pinned publishedOn } }";
    let body = app
        .graphql(create, json!({ "input": { "title": "Hello" } }))
        .await;
    assert_eq!(
        body["data"]["createPost"],
        json!({ "title": "Hello", "status": "DRAFT", "views": 0, "rating": 2.5,
                "pinned": false, "publishedOn": "2026-01-01" }),
        "{body}"
    );
    let body = app
        .graphql(
            create,
            json!({ "input": { "title": "Out", "status": "PUBLISHED", "views": 7 } }),
        )
        .await;
    assert_eq!(body["data"]["createPost"]["status"], "PUBLISHED", "{body}");
    assert_eq!(body["data"]["createPost"]["views"], 7);
    assert_eq!(body["data"]["createPost"]["pinned"], false);

    let schema = repository_file("tests/fixtures/defaults.graphql");
    let (ok, sdl, stderr) =
        crate::network::run(&["schema", "--schema", &schema.to_string_lossy()]).await;
    assert!(ok, "{stderr}");
    assert!(sdl.contains("status: Status! = DRAFT"), "{sdl}");
    assert!(sdl.contains("views: Int = 0"), "{sdl}");
}

#[tokio::test]
async fn a_batch_update_may_hand_a_unique_value_from_one_member_to_another() {
    let app = spawn_app().await;
    let a = app.create_farm("Alpha").await;
    let b = app.create_farm("Beta").await;
    let c = app.create_farm("Gamma").await;
    // A swap, and a value freed by one member and taken by another.
    let input = json!([
        { "id": a, "name": "Beta" },
        { "id": b, "name": "ALPHA" },
        { "id": c, "name": "Delta" },
    ]);
    let body = app.graphql(UPDATE_FARMS, json!({ "input": input })).await;
    assert!(body["errors"].is_null(), "{body}");
    let input = json!([{ "id": a, "name": "Epsilon" }, { "id": b, "name": "Gamma" }]);
    let body = app.graphql(UPDATE_FARMS, json!({ "input": input })).await;
    assert!(
        body["errors"].is_null(),
        "Gamma was freed by the batch before: {body}"
    );
    assert_eq!(farm_name(&app, &a).await.as_deref(), Some("Epsilon"));
    assert_eq!(farm_name(&app, &b).await.as_deref(), Some("Gamma"));
    assert_eq!(farm_name(&app, &c).await.as_deref(), Some("Delta"));
    // A value held by a node outside the batch is still refused.
    let input = json!([{ "id": a, "name": "Zeta" }, { "id": b, "name": "delta" }]);
    let body = app.graphql(UPDATE_FARMS, json!({ "input": input })).await;
    assert_eq!(error_type(&body), "UniqueConstraintViolation", "{body}");
    assert_eq!(index(&body), Some(1));
    let report = app.assert_table_consistent().await;
    assert_eq!((report.nodes, report.unique_values), (3, 3));
    let by_name = "query($name: String!) { farmByName(name: $name) { id } }";
    let body = app.graphql(by_name, json!({ "name": "alpha" })).await;
    assert_eq!(body["data"]["farmByName"], Value::Null, "Alpha is free");
    let body = app.graphql(by_name, json!({ "name": "Epsilon" })).await;
    assert_eq!(body["data"]["farmByName"]["id"], json!(a));
}

#[tokio::test]
async fn a_batch_delete_may_take_nodes_joined_by_edges_and_sharing_a_source() {
    let app = spawn_app_with_schema("examples/social/schema.graphql").await;
    let mut users = Vec::new();
    for name in ["Frodo", "Sam", "Merry", "Pippin"] {
        users.push(app.create("User", json!({ "name": name })).await);
    }
    let befriend = "mutation($from: ID!, $to: ID!) {
        addFriend(input: { from: $from, to: $to, since: \"2026-01-01\" }) { since } }";
    // Frodo and Sam are friends both ways; Merry calls both friends; Sam calls Pippin one.
    for (from, to) in [(0, 1), (1, 0), (2, 0), (2, 1), (1, 3)] {
        let body = app
            .graphql(befriend, json!({ "from": users[from], "to": users[to] }))
            .await;
        assert!(body["errors"].is_null(), "{body}");
    }
    let (body, calls) = app
        .graphql_counted(
            "mutation($ids: [ID!]!) { deleteUsers(ids: $ids) { name } }",
            json!({ "ids": [users[0], users[1]] }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        calls.iter().filter(|c| *c == "TransactWriteItems").count(),
        1,
        "{calls:?}"
    );
    let body = app
        .graphql(
            "query($id: ID!) { user(id: $id) { friendList { name } friends { edges { node { name } } } } }",
            json!({ "id": users[2] }),
        )
        .await;
    assert_eq!(
        body["data"]["user"],
        json!({ "friendList": [], "friends": { "edges": [] } }),
        "Merry's edges to both are gone, and so are their entries in her edge set"
    );
    let report = app.assert_table_consistent().await;
    assert_eq!((report.nodes, report.edges), (2, 0));
}

#[tokio::test]
async fn a_condition_dynamodb_would_not_take_is_refused_before_anything_is_read() {
    let app = spawn_app().await;
    let id = app.create_farm("Hill").await;
    let update = "mutation($id: ID!, $condition: ModelFarmConditionInput) {
        updateFarm(input: { id: $id, name: \"Vale\" }, condition: $condition) { name } }";
    let many: Vec<String> = (0..101).map(|n| format!("Farm {n}")).collect();
    let ors: Vec<Value> = (0..200)
        .map(|n| json!({ "name": { "eq": format!("Farm {n}") } }))
        .collect();
    for condition in [json!({ "name": { "in": many } }), json!({ "or": ors })] {
        let (body, calls) = app
            .graphql_counted(update, json!({ "id": id, "condition": condition }))
            .await;
        assert_eq!(error_type(&body), "BadUserInput", "{body}");
        assert!(
            body["errors"][0]["message"].as_str().is_some_and(
                |m| m.starts_with("condition:") && m.contains("DynamoDB takes at most")
            ),
            "{body}"
        );
        assert!(calls.is_empty(), "{calls:?}");
    }
    let condition = json!({ "name": { "in": ["Hill", "Dale"] } });
    let body = app
        .graphql(update, json!({ "id": id, "condition": condition }))
        .await;
    assert_eq!(body["data"]["updateFarm"]["name"], "Vale", "{body}");
}
