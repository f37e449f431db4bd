//! What Amplify's transformer makes of shapes a plain reading would serve otherwise
//! (`tests/fixtures/amplify-transformer/`): an enum filtered by its literals, written inline;
//! `[String]` fields in filters; a declared time served as declared and kept when a create
//! gives it; and `--amplify-strict`, which serves Amplify's API without tablegraph's additions.

use serde_json::json;

use crate::helpers::spawn_app_with_schema;
use crate::network::run;

const SCHEMA: &str = "tests/fixtures/amplify-transformer/schema.graphql";

/// An SDL without its descriptions, each definition's arguments on one line.
fn flat(sdl: &str) -> String {
    let text: Vec<&str> = sdl
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('"'))
        .collect();
    text.join(" ").replace("( ", "(").replace(" )", ")")
}

fn titles(body: &serde_json::Value, list: &str) -> Vec<String> {
    let mut titles: Vec<String> = body["data"][list]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|item| item["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    titles.sort();
    titles
}

#[tokio::test]
async fn an_enum_literal_filters_inline_and_a_list_of_strings_filters_by_membership() {
    let app = spawn_app_with_schema(SCHEMA).await;
    for (title, status, tags) in [
        ("Lambing", "ACTIVE", json!(["farm", "spring"])),
        ("Shearing", "DONE", json!(["farm"])),
        ("Taxes", "ACTIVE", json!(["office"])),
    ] {
        let created = app
            .graphql(
                "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }",
                json!({ "input": { "title": title, "status": status, "tags": tags } }),
            )
            .await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    // The enum's literal, written in the document as Amplify's apps write it.
    let active = app
        .graphql(
            "{ listTasks(filter: { status: { eq: ACTIVE } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert_eq!(titles(&active, "listTasks"), ["Lambing", "Taxes"]);
    let not_done = app
        .graphql(
            "{ listTasks(filter: { status: { ne: DONE } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert_eq!(titles(&not_done, "listTasks"), ["Lambing", "Taxes"]);
    // A string is no literal of the enum: refused as AppSync refuses it, naming the type.
    let refused = app
        .graphql(
            "{ listTasks(filter: { status: { eq: \"ACTIVE\" } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert!(refused["data"].is_null(), "{refused}");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("an enum value is written without quotes")),
        "{refused}"
    );
    let farm = app
        .graphql(
            "{ listTasks(filter: { tags: { contains: \"farm\" } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert_eq!(titles(&farm, "listTasks"), ["Lambing", "Shearing"]);
}

#[tokio::test]
async fn a_declared_time_is_served_as_declared_and_kept_when_a_create_gives_it() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let given = "2021-03-04T05:06:07.000Z";
    let created = app
        .graphql(
            "mutation($input: CreateTaskInput!) { createTask(input: $input) { id createdAt } }",
            json!({ "input": { "title": "Old", "createdAt": given } }),
        )
        .await;
    assert_eq!(
        created["data"]["createTask"]["createdAt"], given,
        "{created}"
    );
    let fresh = app
        .graphql(
            "mutation { createTask(input: { title: \"New\" }) { id createdAt updatedAt } }",
            json!({}),
        )
        .await;
    let task = &fresh["data"]["createTask"];
    assert_eq!(task["createdAt"], task["updatedAt"], "{fresh}");
    assert_ne!(task["createdAt"], given, "{fresh}");
    // An update may set it too, as Amplify's resolvers let it.
    let id = task["id"].as_str().expect("an id");
    let updated = app
        .graphql(
            "mutation($input: UpdateTaskInput!) { updateTask(input: $input) { createdAt } }",
            json!({ "input": { "id": id, "createdAt": given } }),
        )
        .await;
    assert_eq!(
        updated["data"]["updateTask"]["createdAt"], given,
        "{updated}"
    );
}

#[tokio::test]
async fn amplify_strict_serves_amplifys_api_without_tablegraphs_additions() {
    let (ok, loose, _) = run(&["schema", "--schema", SCHEMA]).await;
    assert!(ok, "{loose}");
    let (ok, strict, _) = run(&["schema", "--schema", SCHEMA, "--amplify-strict"]).await;
    assert!(ok, "{strict}");
    let (loose, strict) = (flat(&loose), flat(&strict));
    // What Amplify's transformer declares, in both.
    for api in [&loose, &strict] {
        assert!(api.contains("createdAt: String!"), "{api}");
        assert!(api.contains("input ModelStatusInput {"), "{api}");
        assert!(api.contains("tags: ModelStringInput"), "{api}");
        assert!(api.contains("input ModelFloatInput {"), "{api}");
        assert!(!api.contains("input TaskInput"), "{api}");
    }
    // The owner field the rule adds is the server's to set, and its subscriptions take it.
    for api in [&loose, &strict] {
        let create = api
            .split("input CreateNoteInput {")
            .nth(1)
            .and_then(|rest| rest.split('}').next())
            .expect("CreateNoteInput");
        assert!(!create.contains("owner"), "{create}");
        assert!(
            api.contains("onCreateNote(filter: ModelSubscriptionNoteFilterInput, owner: String)"),
            "{api}"
        );
    }
    // tablegraph's additions, and --amplify-strict without them.
    for addition in [
        "nodes(ids: [ID!]!): [Node]",
        "interface Node",
        "createTasks(",
        "version: Int!",
        "expectedVersion: Int",
        "listTasks(sortDirection: ModelSortDirection",
    ] {
        assert!(loose.contains(addition), "{addition} in {loose}");
        assert!(!strict.contains(addition), "{addition} in {strict}");
    }
    assert!(strict.contains("listTasks(filter: ModelTaskFilterInput, limit: Int, nextToken: String): ModelTaskConnection"), "{strict}");
}

#[tokio::test]
async fn a_required_relation_is_served_required_and_the_key_hasone_adds_is_required() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-required/schema.graphql").await;
    let types = app
        .graphql(
            "{ lot: __type(name: \"Lot\") { fields { name type { kind } } }
               input: __type(name: \"CreateLotInput\") { inputFields { name type { kind } } } }",
            json!({}),
        )
        .await;
    let kind = |list: &serde_json::Value, name: &str| {
        list.as_array()
            .and_then(|fields| fields.iter().find(|f| f["name"] == name))
            .map(|f| f["type"]["kind"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_else(|| panic!("{name} in {types}"))
    };
    let lot = &types["data"]["lot"]["fields"];
    let input = &types["data"]["input"]["inputFields"];
    assert_eq!(kind(lot, "auction"), "NON_NULL");
    assert_eq!(kind(lot, "item"), "NON_NULL");
    // Beside tablegraph's nested creates (`item: { create }` gives it too) the key is optional
    // in the input; in Amplify's API exactly, required.
    assert_eq!(kind(input, "lotItemId"), "SCALAR");
    let (ok, strict, stderr) = run(&[
        "schema",
        "--schema",
        "tests/fixtures/amplify-required/schema.graphql",
        "--amplify-strict",
    ])
    .await;
    assert!(ok, "{stderr}");
    let strict = flat(&strict);
    assert!(strict.contains("lotItemId: ID!"), "{strict}");
    assert!(strict.contains("auctionLotsId: ID "), "{strict}");
    assert!(strict.contains("auction: Auction! "), "{strict}");
    let create = |query: &'static str, variables: serde_json::Value| app.graphql(query, variables);
    let auction = create(
        "mutation { createAuction(input: { name: \"Spring\" }) { id } }",
        json!({}),
    )
    .await;
    let auction = auction["data"]["createAuction"]["id"].clone();
    let item = create(
        "mutation { createItem(input: { title: \"Ewe\" }) { id } }",
        json!({}),
    )
    .await;
    let item = item["data"]["createItem"]["id"].clone();
    // Without the key @hasOne requires, refused before anything is written.
    let refused = create(
        "mutation($a: ID) { createLot(input: { order: 1, auctionLotsId: $a }) { id } }",
        json!({ "a": auction }),
    )
    .await;
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("lotItemId")),
        "{refused}"
    );
    let made = create(
        "mutation($a: ID, $i: ID!) { createLot(input: { order: 1, auctionLotsId: $a, lotItemId: $i }) {
            auction { name } item { title } } }",
        json!({ "a": auction, "i": item }),
    )
    .await;
    assert_eq!(
        made["data"]["createLot"],
        json!({ "auction": { "name": "Spring" }, "item": { "title": "Ewe" } }),
        "{made}"
    );
    // Without its optional key, the required relation answers AppSync's error.
    let orphan = create(
        "mutation($i: ID!) { createLot(input: { order: 2, lotItemId: $i }) { order auction { name } } }",
        json!({ "i": item }),
    )
    .await;
    assert_eq!(
        orphan["errors"][0]["message"],
        "Cannot return null for non-nullable type: 'Auction' within parent 'Lot' (/createLot/auction)",
        "{orphan}"
    );
}
