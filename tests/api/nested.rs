//! Nested creates: a node created with the node its `@belongsTo` points at, with new or linked
//! elements of its `@hasMany` relations and with edges from it, all in one transaction; and a
//! nested input that fails writes nothing.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_message, error_type, id_at, spawn_app};

const CREATE_FARM: &str = "mutation($input: CreateFarmInput!) {
    createFarm(input: $input) {
        id name logo { url }
        cows { edges { node { name farmId } } }
        chickens { edges { node { name } } }
    } }";

/// The farm `id` with its logo's url and its cows' names.
async fn farm(app: &TestApp, id: &str) -> Value {
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) {
                name logo { url } cows { edges { node { name } } } } }",
            json!({ "id": id }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    body["data"]["farm"].clone()
}

fn names(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .expect("a connection")
        .iter()
        .map(|edge| edge["node"]["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[tokio::test]
async fn a_farm_its_logo_and_its_animals_are_created_in_one_transaction() {
    let app = spawn_app().await;
    let input = json!({
        "name": "Nested",
        "logo": { "create": { "url": "https://example.com/nested.png" } },
        "cows": { "create": [{ "name": "Daisy" }, { "name": "Bella" }] },
        "chickens": { "create": [{ "name": "Henny" }] },
    });
    let (body, calls) = app
        .graphql_counted(CREATE_FARM, json!({ "input": input }))
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        calls.iter().filter(|c| *c == "TransactWriteItems").count(),
        1,
        "one transaction for the whole tree: {calls:?}"
    );
    assert_eq!(
        calls[0], "TransactWriteItems",
        "nothing read first: {calls:?}"
    );
    let created = &body["data"]["createFarm"];
    let id = created["id"].as_str().expect("an id");
    assert_eq!(created["logo"]["url"], "https://example.com/nested.png");
    assert_eq!(
        names(&created["cows"]),
        ["Bella", "Daisy"],
        "sorted by name"
    );
    for cow in created["cows"]["edges"].as_array().expect("cows") {
        assert_eq!(cow["node"]["farmId"], id, "each cow points at the new farm");
    }
    assert_eq!(names(&created["chickens"]), ["Henny"]);
    let report = app.assert_table_consistent().await;
    assert_eq!(
        (report.nodes, report.unique_values),
        (5, 1),
        "farm, logo, two cows, a chicken; the farm's name"
    );
}

#[tokio::test]
async fn link_moves_existing_nodes_under_the_new_one() {
    let app = spawn_app().await;
    let old = app.create_farm("Old").await;
    let daisy = app.create_animal("Cow", "Daisy", &old).await;
    app.create_animal("Cow", "Bella", &old).await;
    let image = app
        .create("Image", json!({ "url": "https://example.com/a.png" }))
        .await;
    let input = json!({
        "name": "New",
        "logo": { "link": image },
        "cows": { "link": [daisy], "create": [{ "name": "Clover" }] },
    });
    let body = app.graphql(CREATE_FARM, json!({ "input": input })).await;
    assert!(body["errors"].is_null(), "{body}");
    let new = id_at(&body, "/data/createFarm/id");
    let new_farm = farm(&app, &new).await;
    assert_eq!(new_farm["logo"]["url"], "https://example.com/a.png");
    assert_eq!(names(&new_farm["cows"]), ["Clover", "Daisy"]);
    assert_eq!(names(&farm(&app, &old).await["cows"]), ["Bella"]);
    let body = app
        .graphql(
            "query($id: ID!) { cow(id: $id) { version farm { name } } }",
            json!({ "id": daisy }),
        )
        .await;
    assert_eq!(
        body["data"]["cow"],
        json!({ "version": 2, "farm": { "name": "New" } })
    );
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_child_may_create_the_node_it_belongs_to() {
    let app = spawn_app().await;
    let body = app
        .graphql(
            "mutation { createCow(input: { name: \"Solo\", farm: { create: { name: \"Home\" } } }) {
                name farm { name cows { edges { node { name } } } } } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(body["data"]["createCow"]["farm"]["name"], "Home");
    assert_eq!(names(&body["data"]["createCow"]["farm"]["cows"]), ["Solo"]);
    let body = app
        .graphql(
            "mutation { createCow(input: { name: \"Stray\" }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert_eq!(
        error_message(&body),
        "Cow.farmId is required: give farmId or farm"
    );
    let report = app.assert_table_consistent().await;
    assert_eq!(report.nodes, 2);
}

#[tokio::test]
async fn goals_are_created_with_their_members_and_sub_goals_and_their_edge_sets() {
    let app = spawn_app().await;
    let ada = app
        .create("User", json!({ "name": "Ada", "email": "ada@example.com" }))
        .await;
    let team = app.create("Team", json!({ "name": "Core" })).await;
    let input = json!({
        "title": "Ship",
        "kind": "OBJECTIVE",
        "members": { "add": [
            { "to": ada, "role": "LEAD" },
            { "to": team, "role": "TEAM", "since": "2026-01-02" },
        ] },
        "children": { "create": [{
            "title": "Test",
            "kind": "KEY_RESULT",
            // A second new goal with an edge to the same user: the user is bumped once.
            "members": { "add": [{ "to": ada, "role": "CONTRIBUTOR" }] },
        }] },
    });
    let (body, calls) = app
        .graphql_counted(
            "mutation($input: CreateGoalInput!) { createGoal(input: $input) {
                id leads { name } teams { name }
                children { edges { node { title parentId leads { name } } } } } }",
            json!({ "input": input }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        calls[..2],
        ["BatchGetItem", "TransactWriteItems"],
        "the edges' targets in one read, then one transaction: {calls:?}"
    );
    assert_eq!(
        calls.iter().filter(|c| *c == "TransactWriteItems").count(),
        1,
        "{calls:?}"
    );
    let goal = &body["data"]["createGoal"];
    assert_eq!(
        goal["leads"],
        json!([{ "name": "Ada" }]),
        "from the edge set"
    );
    assert_eq!(goal["teams"], json!([{ "name": "Core" }]));
    let child = &goal["children"]["edges"][0]["node"];
    assert_eq!(child["title"], "Test");
    assert_eq!(child["parentId"], goal["id"]);
    assert_eq!(child["leads"], json!([]), "a contributor, not a lead");
    let body = app
        .graphql(
            "query($id: ID!) { user(id: $id) { goals { edges { role node { title } } } } }",
            json!({ "id": ada }),
        )
        .await;
    let mut goals: Vec<String> = body["data"]["user"]["goals"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|edge| format!("{} {}", edge["node"]["title"], edge["role"]))
        .collect();
    goals.sort();
    assert_eq!(goals, ["\"Ship\" \"LEAD\"", "\"Test\" \"CONTRIBUTOR\""]);
    let report = app.assert_table_consistent().await;
    assert_eq!((report.nodes, report.edges), (4, 3));
}

#[tokio::test]
async fn a_nested_input_that_fails_anywhere_writes_nothing() {
    let app = spawn_app().await;
    let taken = app.create_farm("Taken").await;
    let cow = app.create_animal("Cow", "Daisy", &taken).await;
    let missing = "01J0000000000000000000MISS";
    let cases = [
        (
            "createCow",
            json!({ "name": "C", "farm": { "create": { "name": "taken" } } }),
            "UniqueConstraintViolation",
        ),
        (
            "createFarm",
            json!({ "name": "F", "cows": { "link": [missing] } }),
            "BadUserInput",
        ),
        (
            "createFarm",
            json!({ "name": "F", "cows": { "link": [cow, cow] } }),
            "BadUserInput",
        ),
        (
            "createFarm",
            json!({ "name": "F", "logo": { "link": missing } }),
            "BadUserInput",
        ),
        (
            "createFarm",
            json!({ "name": "F", "logoId": missing, "logo": { "create": { "url": "u" } } }),
            "BadUserInput",
        ),
        (
            "createFarm",
            json!({ "name": "F", "logo": { "create": { "url": "u" }, "link": missing } }),
            "BadUserInput",
        ),
        (
            "createFarm",
            json!({ "name": "F", "logo": {} }),
            "BadUserInput",
        ),
        (
            "createGoal",
            json!({ "title": "G", "kind": "OBJECTIVE",
                    "members": { "add": [{ "to": missing, "role": "LEAD" }] } }),
            "BadUserInput",
        ),
        (
            "createGoal",
            json!({ "title": "G", "kind": "OBJECTIVE",
                    "members": { "add": [{ "to": taken, "role": "LEAD" }] } }),
            "BadUserInput",
        ),
    ];
    for (field, input, expected) in cases {
        let kind = field.trim_start_matches("create");
        let query =
            format!("mutation($input: Create{kind}Input!) {{ {field}(input: $input) {{ id }} }}");
        let body = app.graphql(&query, json!({ "input": input })).await;
        assert_eq!(error_type(&body), expected, "{input}: {body}");
        assert_eq!(body["data"][field], Value::Null, "{body}");
        let report = app.assert_table_consistent().await;
        assert_eq!(
            (report.nodes, report.edges),
            (2, 0),
            "{input} wrote nothing"
        );
    }
    assert_eq!(names(&farm(&app, &taken).await["cows"]), ["Daisy"]);
}

#[tokio::test]
async fn a_tree_of_exactly_one_transaction_is_written_and_one_more_write_is_refused() {
    let app = spawn_app().await;
    let cows = |count: usize| -> Value {
        (0..count)
            .map(|n| json!({ "name": format!("Cow {n:03}") }))
            .collect()
    };
    // The farm, its name's unique item and its type index shard's counter take three writes;
    // each cow one, and the counters of the cows' type index shards four (94 cows all but
    // surely fall in each of the four shards). The farm's counts of its cows go into the farm.
    let body = app
        .graphql(
            CREATE_FARM,
            json!({ "input": { "name": "Too big", "cows": { "create": cows(94) } } }),
        )
        .await;
    assert_eq!(error_type(&body), "TransactionTooLarge", "{body}");
    assert!(
        error_message(&body).contains("needs 101 writes"),
        "{}",
        error_message(&body)
    );
    assert_eq!(app.assert_table_consistent().await.nodes, 0);
    let body = app
        .graphql(
            CREATE_FARM,
            json!({ "input": { "name": "Just right", "cows": { "create": cows(93) } } }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(app.assert_table_consistent().await.nodes, 94);
}

#[tokio::test]
async fn a_batch_of_creates_may_nest_and_a_member_failing_deep_down_names_its_position() {
    let app = spawn_app().await;
    let query = "mutation($input: [CreateFarmInput!]!) { createFarms(input: $input) {
        name cows { edges { node { name } } } } }";
    let input = json!([
        { "name": "One", "cows": { "create": [{ "name": "A" }] } },
        { "name": "Two", "logo": { "create": { "url": "u" } }, "cows": { "create": [{ "name": "B" }] } },
    ]);
    let body = app.graphql(query, json!({ "input": input })).await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(names(&body["data"]["createFarms"][1]["cows"]), ["B"]);
    let input = json!([
        { "name": "Three" },
        { "name": "Four", "logo": { "link": "01J0000000000000000000MISS" } },
    ]);
    let body = app.graphql(query, json!({ "input": input })).await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["index"], 1, "{body}");
    assert_eq!(app.assert_table_consistent().await.nodes, 5);
}

#[tokio::test]
async fn a_tree_that_cannot_fit_is_refused_before_anything_is_read() {
    let app = spawn_app().await;
    let ids: Vec<String> = (0..101)
        .map(|n| format!("01J00000000000000000{n:06}"))
        .collect();
    let (body, calls) = app
        .graphql_counted(
            CREATE_FARM,
            json!({ "input": { "name": "Links", "cows": { "link": ids } } }),
        )
        .await;
    assert_eq!(error_type(&body), "TransactionTooLarge", "{body}");
    assert!(calls.is_empty(), "nothing read: {calls:?}");
}

#[tokio::test]
async fn two_references_to_one_node_that_want_different_types_name_the_one_that_is_wrong() {
    let app = spawn_app().await;
    let ada = app
        .create("User", json!({ "name": "Ada", "email": "ada@example.com" }))
        .await;
    // The edge may point at a user; the parent must be a goal.
    let input = json!({
        "title": "Odd",
        "kind": "OBJECTIVE",
        "parentId": ada,
        "members": { "add": [{ "to": ada, "role": "LEAD" }] },
    });
    let body = app
        .graphql(
            "mutation($input: CreateGoalInput!) { createGoal(input: $input) { id } }",
            json!({ "input": input }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert_eq!(
        error_message(&body),
        format!("parentId: there is no Goal with id {ada}")
    );
    assert_eq!(app.assert_table_consistent().await.nodes, 1);
}
