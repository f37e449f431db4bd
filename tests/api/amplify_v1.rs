//! A schema written for Amplify's GraphQL transformer v1 (`tests/fixtures/amplify-v1/`), served
//! as v1 served it: `@key` as the primary key or an index, `@connection` by name, bare, or over
//! a `keyName:` index, with the keys v1 made up written through the create inputs and read back
//! through the relations; v1's API (the keys out of the types, subscriptions without filters);
//! and an index sorted by `id`, the warehouse example of Amplify's docs.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with_schema};
use crate::network::run;

const SCHEMA: &str = "tests/fixtures/amplify-v1/schema.graphql";

async fn create(app: &TestApp, type_name: &str, input: Value) -> String {
    let body = app
        .graphql(
            &format!(
                "mutation($input: Create{type_name}Input!) {{ create{type_name}(input: $input) {{ id }} }}"
            ),
            json!({ "input": input }),
        )
        .await;
    body["data"][format!("create{type_name}")]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_owned()
}

fn sorted(values: &Value, field: &str) -> Vec<String> {
    let mut found: Vec<String> = values
        .as_array()
        .unwrap_or_else(|| panic!("{values}"))
        .iter()
        .map(|v| v[field].to_string())
        .collect();
    found.sort();
    found
}

#[tokio::test]
async fn v1_connections_write_and_read_through_the_keys_v1_made_up() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let author = create(&app, "Author", json!({ "name": "Ada" })).await;
    let post = create(
        &app,
        "Post",
        json!({ "title": "Lambing", "postAuthorId": author }),
    )
    .await;
    for text in ["first", "second"] {
        create(
            &app,
            "Comment",
            json!({ "text": text, "commentPostId": post }),
        )
        .await;
    }
    create(
        &app,
        "Tag",
        json!({ "label": "spring", "postTagsId": post }),
    )
    .await;
    for stars in [5, 3] {
        create(&app, "Like", json!({ "postID": post, "stars": stars })).await;
    }
    let body = app
        .graphql(
            "query($id: ID!) { getPost(id: $id) { title author { name }
                comments { items { text post { title } } }
                tags { items { label } }
                likes { items { stars post { title } } } } }",
            json!({ "id": post }),
        )
        .await;
    let got = &body["data"]["getPost"];
    assert_eq!(got["author"]["name"], "Ada", "{body}");
    assert_eq!(
        sorted(&got["comments"]["items"], "text"),
        ["\"first\"", "\"second\""],
        "{body}"
    );
    assert_eq!(
        got["comments"]["items"][0]["post"]["title"], "Lambing",
        "{body}"
    );
    assert_eq!(sorted(&got["tags"]["items"], "label"), ["\"spring\""]);
    // Over the index `@key(name: "byPost")` sorts by stars.
    assert_eq!(sorted(&got["likes"]["items"], "stars"), ["3", "5"]);
    assert_eq!(got["likes"]["items"][0]["post"]["title"], "Lambing");
    // The keys v1 made up are no fields of the types: asked for, refused as AppSync does.
    let refused = app
        .graphql("{ listComments { items { commentPostId } } }", json!({}))
        .await;
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("commentPostId")),
        "{refused}"
    );
}

#[tokio::test]
async fn an_index_sorted_by_id_answers_its_key_condition() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let mut ids = Vec::new();
    for quantity in [1, 2, 3] {
        ids.push(
            create(
                &app,
                "Inventory",
                json!({ "warehouseID": "north", "quantity": quantity }),
            )
            .await,
        );
    }
    create(
        &app,
        "Inventory",
        json!({ "warehouseID": "south", "quantity": 9 }),
    )
    .await;
    ids.sort();
    let body = app
        .graphql(
            "query($gt: ID) { inventoryByWarehouse(warehouseID: \"north\", id: { gt: $gt }, sortDirection: DESC) { items { id } } }",
            json!({ "gt": ids[0] }),
        )
        .await;
    let got: Vec<&str> = body["data"]["inventoryByWarehouse"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(|item| item["id"].as_str())
        .collect();
    assert_eq!(got, [ids[2].as_str(), ids[1].as_str()], "{body}");
}

#[tokio::test]
async fn the_api_is_v1s() {
    let (ok, sdl, stderr) = run(&["schema", "--schema", SCHEMA, "--amplify-strict"]).await;
    assert!(ok, "{stderr}");
    let type_block = |name: &str| {
        let start = sdl
            .find(&format!("type {name} "))
            .or_else(|| sdl.find(&format!("input {name} ")))
            .unwrap_or_else(|| panic!("{name} in {sdl}"));
        let end = sdl[start..].find('}').map_or(sdl.len(), |end| start + end);
        sdl[start..end].to_owned()
    };
    // The key is in the inputs, not in the type or its filter.
    assert!(type_block("CreateCommentInput").contains("commentPostId: ID"));
    assert!(type_block("UpdateCommentInput").contains("commentPostId: ID"));
    assert!(!type_block("Comment").contains("commentPostId"));
    assert!(!type_block("ModelCommentFilterInput").contains("commentPostId"));
    // v1 filtered on what the schema declares: not on the times it adds.
    assert!(!type_block("ModelCommentFilterInput").contains("createdAt"));
    // Subscriptions without filters.
    let subscription = type_block("Subscription");
    assert!(
        subscription.contains("onCreateComment: Comment"),
        "{subscription}"
    );
    assert!(!sdl.contains("ModelSubscription"), "{sdl}");
}

#[tokio::test]
async fn a_key_naming_no_node_is_refused_naming_the_field_and_nothing_is_written() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let refused = app
        .graphql(
            "mutation($input: CreateCommentInput!) { createComment(input: $input) { id } }",
            json!({ "input": { "text": "orphan", "commentPostId": "no-such-post" } }),
        )
        .await;
    assert!(refused["data"]["createComment"].is_null(), "{refused}");
    let error = &refused["errors"][0];
    assert_eq!(
        error["message"], "commentPostId: there is no Post with id no-such-post",
        "{refused}"
    );
    assert_eq!(error["errorType"], "BadUserInput", "{refused}");
    let listed = app
        .graphql("{ listComments { items { id } } }", json!({}))
        .await;
    assert_eq!(
        listed["data"]["listComments"]["items"],
        json!([]),
        "{listed}"
    );
}
