//! Amplify's API shape, as its codegen's operations call it: `get<Type>`, `list<Types>(filter,
//! limit, nextToken)` → `items`/`nextToken`, index queries by Amplify's default names,
//! `create<Type>(input: { id }, condition)`, `update<Type>(input, condition)`,
//! `delete<Type>(input: { id }, condition)`, and AppSync's error shape.

use serde_json::{Value, json};

use crate::helpers::{TestApp, repository_file, spawn_app_with_schema};
use crate::network::run;

const SCHEMA: &str = "tests/fixtures/amplify-relations/schema.graphql";
const GOLDEN: &str = "tests/golden/amplify-relations.graphql";
const CONDITION_FAILED: &str = "DynamoDB:ConditionalCheckFailedException";

async fn app() -> TestApp {
    spawn_app_with_schema(SCHEMA).await
}

fn no_errors(body: &Value) {
    assert!(body.get("errors").is_none(), "{body}");
}

#[tokio::test]
async fn codegen_style_operations_create_get_list_page_update_and_delete() {
    let app = app().await;
    // A create with the id the client chose, as Amplify's clients may send.
    let created = app
        .graphql(
            "mutation CreateBlog($input: CreateBlogInput!, $condition: ModelBlogConditionInput) {
               createBlog(input: $input, condition: $condition) { id name createdAt updatedAt }
             }",
            json!({ "input": { "id": "blog-1", "name": "Farm diary" } }),
        )
        .await;
    no_errors(&created);
    assert_eq!(created["data"]["createBlog"]["id"], "blog-1");
    // The same id again fails as DynamoDB's condition does in Amplify, with AppSync's error
    // shape: `errorType` beside the message as well as in `extensions`.
    let again = app
        .graphql(
            "mutation { createBlog(input: { id: \"blog-1\", name: \"Other\" }) { id } }",
            json!({}),
        )
        .await;
    assert!(again["data"]["createBlog"].is_null(), "{again}");
    assert_eq!(again["errors"][0]["errorType"], CONDITION_FAILED, "{again}");
    assert_eq!(
        again["errors"][0]["extensions"]["errorType"], CONDITION_FAILED,
        "{again}"
    );
    assert!(again["errors"][0]["errorInfo"].is_null(), "{again}");
    let got = app
        .graphql(
            "query GetBlog($id: ID!) { getBlog(id: $id) { id name } }",
            json!({ "id": "blog-1" }),
        )
        .await;
    assert_eq!(got["data"]["getBlog"]["name"], "Farm diary", "{got}");

    for title in ["Lambing", "Shearing", "Haymaking"] {
        let post = app
            .graphql(
                "mutation($t: String!) { createPost(input: { title: $t, blogPostsId: \"blog-1\" }) { id } }",
                json!({ "t": title }),
            )
            .await;
        no_errors(&post);
    }
    // Paging with limit and nextToken until the token is null.
    let list = "query ListPosts($filter: ModelPostFilterInput, $limit: Int, $nextToken: String) {
                  listPosts(filter: $filter, limit: $limit, nextToken: $nextToken) {
                    items { id title } nextToken
                  }
                }";
    let mut titles = Vec::new();
    let mut token = Value::Null;
    let mut pages = 0;
    loop {
        let page = app
            .graphql(list, json!({ "limit": 2, "nextToken": token }))
            .await;
        no_errors(&page);
        pages += 1;
        let items = page["data"]["listPosts"]["items"]
            .as_array()
            .expect("items")
            .clone();
        assert!(items.len() <= 2, "{page}");
        titles.extend(
            items
                .iter()
                .map(|i| i["title"].as_str().unwrap_or("").to_owned()),
        );
        token = page["data"]["listPosts"]["nextToken"].clone();
        if token.is_null() {
            break;
        }
        assert!(pages < 5, "paging never ends: {page}");
    }
    assert_eq!(titles, ["Lambing", "Shearing", "Haymaking"]);
    // A filter, and apps' `limit: 1000`.
    let filtered = app
        .graphql(
            list,
            json!({ "filter": { "title": { "beginsWith": "S" } }, "limit": 1000 }),
        )
        .await;
    assert_eq!(
        filtered["data"]["listPosts"]["items"],
        json!([{ "id": filtered["data"]["listPosts"]["items"][0]["id"], "title": "Shearing" }]),
        "{filtered}"
    );
    // Amplify's `size` and `attributeType`, evaluated by the store as it reads.
    let sized = app
        .graphql(
            list,
            json!({ "filter": { "title": { "size": { "gt": 7 }, "attributeType": "string" } } }),
        )
        .await;
    let mut long: Vec<&str> = sized["data"]["listPosts"]["items"]
        .as_array()
        .map(|items| items.iter().filter_map(|i| i["title"].as_str()).collect())
        .unwrap_or_default();
    long.sort_unstable();
    assert_eq!(long, ["Haymaking", "Shearing"], "{sized}");
    let typed = app
        .graphql(
            list,
            json!({ "filter": { "title": { "attributeType": "number" } } }),
        )
        .await;
    assert_eq!(typed["data"]["listPosts"]["items"], json!([]), "{typed}");
    // The default limit is Amplify's 100.
    let all = app
        .graphql("{ listPosts { items { id } nextToken } }", json!({}))
        .await;
    assert_eq!(
        all["data"]["listPosts"]["items"].as_array().map(Vec::len),
        Some(3)
    );
    assert!(all["data"]["listPosts"]["nextToken"].is_null(), "{all}");
    let negative = app
        .graphql("{ listPosts(limit: -1) { items { id } } }", json!({}))
        .await;
    let message = negative["errors"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("limit"), "{negative}");

    let first = filtered["data"]["listPosts"]["items"][0]["id"].clone();
    let update =
        "mutation UpdatePost($input: UpdatePostInput!, $condition: ModelPostConditionInput) {
                    updatePost(input: $input, condition: $condition) { id title }
                  }";
    let refused = app
        .graphql(
            update,
            json!({ "input": { "id": first, "title": "Clipping" },
                    "condition": { "title": { "eq": "Lambing" } } }),
        )
        .await;
    let too_short = app
        .graphql(
            update,
            json!({ "input": { "id": first, "title": "Clipping" },
                    "condition": { "title": { "size": { "le": 3 } } } }),
        )
        .await;
    assert_eq!(
        too_short["errors"][0]["errorType"], CONDITION_FAILED,
        "{too_short}"
    );
    assert_eq!(
        refused["errors"][0]["errorType"], CONDITION_FAILED,
        "{refused}"
    );
    let updated = app
        .graphql(
            update,
            json!({ "input": { "id": first, "title": "Clipping" },
                    "condition": { "title": { "eq": "Shearing" } } }),
        )
        .await;
    assert_eq!(
        updated["data"]["updatePost"]["title"], "Clipping",
        "{updated}"
    );
    let deleted = app
        .graphql(
            "mutation DeletePost($input: DeletePostInput!, $condition: ModelPostConditionInput) {
               deletePost(input: $input, condition: $condition) { id title }
             }",
            json!({ "input": { "id": first } }),
        )
        .await;
    assert_eq!(
        deleted["data"]["deletePost"]["title"], "Clipping",
        "{deleted}"
    );
    let gone = app
        .graphql(
            "query($id: ID!) { getPost(id: $id) { id } }",
            json!({ "id": first }),
        )
        .await;
    assert!(gone["data"]["getPost"].is_null(), "{gone}");
    // Deleting what is not there fails its condition, as Amplify's delete does.
    let again = app
        .graphql(
            "mutation($id: ID!) { deletePost(input: { id: $id }) { id } }",
            json!({ "id": first }),
        )
        .await;
    assert_eq!(again["errors"][0]["errorType"], CONDITION_FAILED, "{again}");
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_create_condition_holds_only_for_a_node_not_there_yet() {
    let app = app().await;
    let absent = app
        .graphql(
            "mutation { createTeam(input: { name: \"Shearers\" }, condition: { name: { attributeExists: false } }) { name } }",
            json!({}),
        )
        .await;
    assert_eq!(absent["data"]["createTeam"]["name"], "Shearers", "{absent}");
    let asks_a_value = app
        .graphql(
            "mutation { createTeam(input: { name: \"Balers\" }, condition: { name: { eq: \"Balers\" } }) { name } }",
            json!({}),
        )
        .await;
    assert_eq!(
        asks_a_value["errors"][0]["errorType"], CONDITION_FAILED,
        "{asks_a_value}"
    );
    let teams = app
        .graphql("{ listTeams { items { name } } }", json!({}))
        .await;
    assert_eq!(
        teams["data"]["listTeams"]["items"],
        json!([{ "name": "Shearers" }])
    );
}

#[tokio::test]
async fn index_queries_and_has_many_fields_page_by_amplifys_names_without_n_plus_one() {
    let app = app().await;
    let blog = app
        .graphql(
            "mutation { createBlog(input: { id: \"b\", name: \"Diary\" }) { id } }",
            json!({}),
        )
        .await;
    no_errors(&blog);
    for (post, title) in [("p1", "Lambing"), ("p2", "Shearing")] {
        let created = app
            .graphql(
                "mutation($id: ID!, $t: String!) { createPost(input: { id: $id, title: $t, blogPostsId: \"b\" }) { id } }",
                json!({ "id": post, "t": title }),
            )
            .await;
        no_errors(&created);
        for content in ["Fine", "Good", "Great"] {
            let comment = app
                .graphql(
                    "mutation($p: ID!, $c: String!) { createComment(input: { postID: $p, content: $c }) { id } }",
                    json!({ "p": post, "c": format!("{content} {post}") }),
                )
                .await;
            no_errors(&comment);
        }
    }
    // `@index(name: "byPost", sortKeyFields: ["content"])` without queryField: Amplify's
    // default name, its key condition named after the sort field, and sortDirection.
    let by_post = app
        .graphql(
            "query($p: ID!, $token: String) {
               commentsByPostIDAndContent(postID: $p, content: { beginsWith: \"G\" },
                                          sortDirection: DESC, limit: 1, nextToken: $token) {
                 items { content } nextToken
               }
             }",
            json!({ "p": "p1" }),
        )
        .await;
    assert_eq!(
        by_post["data"]["commentsByPostIDAndContent"]["items"],
        json!([{ "content": "Great p1" }]),
        "{by_post}"
    );
    let token = by_post["data"]["commentsByPostIDAndContent"]["nextToken"].clone();
    assert!(token.is_string(), "{by_post}");
    let rest = app
        .graphql(
            "query($p: ID!, $token: String) {
               commentsByPostIDAndContent(postID: $p, content: { beginsWith: \"G\" },
                                          sortDirection: DESC, limit: 1, nextToken: $token) {
                 items { content } nextToken
               }
             }",
            json!({ "p": "p1", "token": token }),
        )
        .await;
    assert_eq!(
        rest["data"]["commentsByPostIDAndContent"]["items"],
        json!([{ "content": "Good p1" }]),
        "{rest}"
    );
    // A codegen `listPosts` at depth 3: each level one round of calls, whatever the number of
    // posts (a Query per post's comments, run together, never one per comment).
    let (body, calls) = app
        .graphql_counted(
            "query ListPosts($filter: ModelPostFilterInput, $limit: Int, $nextToken: String) {
               listPosts(filter: $filter, limit: $limit, nextToken: $nextToken) {
                 items { id title blog { name } comments { items { id content } nextToken } }
                 nextToken
               }
             }",
            json!({}),
        )
        .await;
    no_errors(&body);
    let items = body["data"]["listPosts"]["items"]
        .as_array()
        .expect("items");
    assert_eq!(items.len(), 2, "{body}");
    assert_eq!(items[0]["blog"]["name"], "Diary", "{body}");
    assert_eq!(
        items[1]["comments"]["items"].as_array().map(Vec::len),
        Some(3),
        "{body}"
    );
    let list_queries = calls.iter().filter(|c| c.starts_with("Query")).count();
    let batches = calls.iter().filter(|c| *c == "BatchGetItem").count();
    let scans = calls.iter().filter(|c| c.starts_with("Scan")).count();
    // The type index's shards, then one Query for each post's comments; the posts' blog in
    // one batch.
    assert_eq!(scans, 0, "{calls:?}");
    assert_eq!(batches, 1, "{calls:?}");
    assert_eq!(list_queries, 4 + items.len(), "{calls:?}");
}

#[test]
fn the_printed_sdl_is_amplifys_shape_and_matches_its_golden_file() {
    let model = tablegraph::app::load_schema(&repository_file(SCHEMA), None, &Default::default())
        .expect("the schema loads");
    let printed = tablegraph::graphql::print_sdl(std::sync::Arc::new(model.0), Default::default())
        .expect("the schema builds");
    crate::helpers::assert_golden(GOLDEN, &printed);
    for line in [
        "getBlog(id: ID!): Blog",
        "deleteBlog(input: DeleteBlogInput!, condition: ModelBlogConditionInput): Blog",
        "type ModelPostConnection {",
        "items: [Post]!",
        "nextToken: String",
        "commentsByPostIDAndContent(",
    ] {
        let flat = printed.replace(['\n', '\t'], " ");
        let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&line), "{line} is not in the SDL:\n{printed}");
    }
}

#[tokio::test]
async fn the_shape_and_language_can_be_chosen_and_plan_says_which() {
    let schema = SCHEMA;
    let (ok, plan, _) = run(&["plan", "--schema", schema]).await;
    assert!(ok, "{plan}");
    assert!(
        plan.contains("API shape amplify (follows the language)"),
        "{plan}"
    );
    assert!(
        plan.contains("schema language amplify (detected: Amplify's @hasMany on Blog.posts)"),
        "{plan}"
    );
    let (ok, relay, _) = run(&["schema", "--schema", schema, "--api-shape", "relay"]).await;
    assert!(ok, "{relay}");
    assert!(relay.contains("blog(id: ID!): Blog"), "{relay}");
    assert!(relay.contains("type BlogConnection"), "{relay}");
    // Without Amplify's flag, an @index without queryField has no query.
    let (ok, flagged, _) = run(&[
        "schema",
        "--schema",
        schema,
        "--amplify-flag",
        "enableAutoIndexQueryNames=false",
    ])
    .await;
    assert!(ok, "{flagged}");
    assert!(!flagged.contains("commentsByPostIDAndContent"), "{flagged}");
    let (ok, _, error) = run(&[
        "schema",
        "--schema",
        schema,
        "--amplify-flag",
        "noSuchFlag=true",
    ])
    .await;
    assert!(!ok);
    assert!(error.contains("noSuchFlag"), "{error}");
    // The default schema is tablegraph's, with Relay's shape.
    let (ok, plan, _) = run(&["plan"]).await;
    assert!(ok, "{plan}");
    assert!(
        plan.contains("schema language tablegraph (detected: tablegraph's @unique"),
        "{plan}"
    );
}

#[tokio::test]
async fn a_many_to_many_relation_is_served_through_amplifys_join_type() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-many-to-many/schema.graphql").await;
    let made = app
        .graphql(
            "mutation {
               a: createPost(input: { id: \"p1\", title: \"Lambing\" }) { id }
               b: createTag(input: { id: \"t1\", label: \"spring\" }) { id }
               c: createTag(input: { id: \"t2\", label: \"sheep\" }) { id }
             }",
            json!({}),
        )
        .await;
    no_errors(&made);
    for tag in ["t1", "t2"] {
        let joined = app
            .graphql(
                "mutation CreatePostTags($input: CreatePostTagsInput!) {
                   createPostTags(input: $input) { id postId tagId post { title } tag { label } }
                 }",
                json!({ "input": { "postId": "p1", "tagId": tag } }),
            )
            .await;
        no_errors(&joined);
    }
    // A join to a tag that is not there is refused (Amplify would write it).
    let dangling = app
        .graphql(
            "mutation { createPostTags(input: { postId: \"p1\", tagId: \"nope\" }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(
        dangling["errors"][0]["errorType"], "BadUserInput",
        "{dangling}"
    );
    let post = app
        .graphql(
            "query { getPost(id: \"p1\") { tags { items { tag { label } } nextToken } } }",
            json!({}),
        )
        .await;
    let mut labels: Vec<String> = post["data"]["getPost"]["tags"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["tag"]["label"].as_str().unwrap_or("").to_owned())
        .collect();
    labels.sort();
    assert_eq!(labels, ["sheep", "spring"], "{post}");
    let tag = app
        .graphql(
            "query { getTag(id: \"t1\") { posts { items { post { title } } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        tag["data"]["getTag"]["posts"]["items"],
        json!([{ "post": { "title": "Lambing" } }]),
        "{tag}"
    );
    // The join type's own index queries, by Amplify's names.
    let by_tag = app
        .graphql(
            "query { postTagsByTagId(tagId: \"t2\") { items { postId } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        by_tag["data"]["postTagsByTagId"]["items"],
        json!([{ "postId": "p1" }]),
        "{by_tag}"
    );
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn limit_defaults_to_amplifys_100_is_honoured_to_1000_and_a_forged_next_token_is_refused() {
    let app = app().await;
    let inputs: Vec<Value> = (0..1001)
        .map(|n| json!({ "name": format!("Team {n:04}") }))
        .collect();
    for chunk in inputs.chunks(40) {
        let made = app
            .graphql(
                "mutation($input: [CreateTeamInput!]!) { createTeams(input: $input) { id } }",
                json!({ "input": chunk }),
            )
            .await;
        no_errors(&made);
    }
    let list = "query($limit: Int, $nextToken: String) {
                  listTeams(limit: $limit, nextToken: $nextToken) { items { name } nextToken }
                }";
    let count = |page: &Value| page["data"]["listTeams"]["items"].as_array().map(Vec::len);
    // Without a limit, Amplify's 100 (not tablegraph's 20), and a token for the rest.
    let first = app.graphql(list, json!({})).await;
    assert_eq!(count(&first), Some(100), "{first}");
    let token = first["data"]["listTeams"]["nextToken"].clone();
    let rest = app
        .graphql(list, json!({ "nextToken": token, "limit": 1000 }))
        .await;
    assert_eq!(count(&rest), Some(901), "{rest}");
    assert!(rest["data"]["listTeams"]["nextToken"].is_null(), "{rest}");
    // A limit above 100 is honoured, as Amplify's is: 500 where there are 500.
    let five_hundred = app.graphql(list, json!({ "limit": 500 })).await;
    assert_eq!(count(&five_hundred), Some(500), "{five_hundred}");
    // Past 1000 it is read as 1000, and nextToken goes on.
    let clamped = app.graphql(list, json!({ "limit": 5000 })).await;
    assert_eq!(count(&clamped), Some(1000), "{clamped}");
    let token = clamped["data"]["listTeams"]["nextToken"].clone();
    let last = app.graphql(list, json!({ "nextToken": token })).await;
    assert_eq!(count(&last), Some(1), "{last}");
    // DynamoDB takes no page of nothing, and neither does Amplify's API.
    for limit in [0, -5] {
        let refused = app.graphql(list, json!({ "limit": limit })).await;
        let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert_eq!(
            message,
            format!("limit must be 1 or more, not {limit}"),
            "{refused}"
        );
    }
    // A token that was not handed out, or one of another list, is refused.
    for title in ["One", "Two"] {
        let post = app
            .graphql(
                "mutation($t: String!) { createPost(input: { title: $t }) { id } }",
                json!({ "t": title }),
            )
            .await;
        no_errors(&post);
    }
    let posts = app
        .graphql("{ listPosts(limit: 1) { nextToken } }", json!({}))
        .await;
    let foreign = posts["data"]["listPosts"]["nextToken"].clone();
    assert!(foreign.is_string(), "{posts}");
    let tampered = json!(format!("{}x", token.as_str().unwrap_or("")));
    for forged in [json!("not-a-token"), tampered, foreign] {
        let refused = app.graphql(list, json!({ "nextToken": forged })).await;
        assert_eq!(
            refused["errors"][0]["errorType"], "BadUserInput",
            "{refused}"
        );
        // Named as the client sent it.
        let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("nextToken: "), "{refused}");
        assert!(refused["data"]["listTeams"].is_null(), "{refused}");
    }
}

#[tokio::test]
async fn a_primary_key_field_names_its_node_in_get_list_update_and_delete() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-primary-key/schema.graphql").await;
    let sdl =
        tablegraph::graphql::print_sdl(std::sync::Arc::new(app.model.clone()), Default::default())
            .expect("the schema builds");
    let flat = sdl.split_whitespace().collect::<Vec<_>>().join(" ");
    for line in [
        "getPost(slug: String!): Post",
        "input DeletePostInput { slug: String! }",
    ] {
        assert!(flat.contains(line), "{line}:\n{sdl}");
    }
    let created = app
        .graphql(
            "mutation($input: CreatePostInput!) { createPost(input: $input) { id slug title } }",
            json!({ "input": { "slug": "first-post", "title": "Lambing" } }),
        )
        .await;
    assert_eq!(
        created["data"]["createPost"],
        json!({ "id": "first-post", "slug": "first-post", "title": "Lambing" }),
        "{created}"
    );
    let taken = app
        .graphql(
            "mutation { createPost(input: { slug: \"first-post\", title: \"Again\" }) { slug } }",
            json!({}),
        )
        .await;
    assert_eq!(taken["errors"][0]["errorType"], CONDITION_FAILED, "{taken}");
    // A `#` in a key value is escaped into the id, and names the node all the same.
    let odd = app
        .graphql(
            "mutation { createPost(input: { slug: \"50%#1\", title: \"Odd\" }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(odd["data"]["createPost"]["id"], "50%25%231", "{odd}");
    let got = app
        .graphql(
            "query($s: String!) { getPost(slug: $s) { title } }",
            json!({ "s": "50%#1" }),
        )
        .await;
    assert_eq!(got["data"]["getPost"]["title"], "Odd", "{got}");
    let comment = app
        .graphql(
            "mutation { createComment(input: { postSlug: \"first-post\", text: \"Lovely\" }) { id } }",
            json!({}),
        )
        .await;
    no_errors(&comment);
    let post = app
        .graphql(
            "{ getPost(slug: \"first-post\") { title comments { items { text } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        post["data"]["getPost"],
        json!({ "title": "Lambing", "comments": { "items": [{ "text": "Lovely" }] } }),
        "{post}"
    );
    // The list takes the key as codegen sends it: one node, or every node without it.
    let one = app
        .graphql(
            "query ListPosts($slug: String, $limit: Int) { listPosts(slug: $slug, limit: $limit) { items { slug } nextToken } }",
            json!({ "slug": "first-post" }),
        )
        .await;
    assert_eq!(
        one["data"]["listPosts"]["items"],
        json!([{ "slug": "first-post" }]),
        "{one}"
    );
    let all = app
        .graphql("{ listPosts { items { slug } } }", json!({}))
        .await;
    assert_eq!(
        all["data"]["listPosts"]["items"].as_array().map(Vec::len),
        Some(2),
        "{all}"
    );
    let updated = app
        .graphql(
            "mutation { updatePost(input: { slug: \"first-post\", title: \"Shearing\" }, condition: { title: { eq: \"Lambing\" } }) { title } }",
            json!({}),
        )
        .await;
    assert_eq!(
        updated["data"]["updatePost"]["title"], "Shearing",
        "{updated}"
    );
    let deleted = app
        .graphql(
            "mutation { deletePost(input: { slug: \"50%#1\" }) { slug } }",
            json!({}),
        )
        .await;
    assert_eq!(deleted["data"]["deletePost"]["slug"], "50%#1", "{deleted}");
    let gone = app
        .graphql("{ getPost(slug: \"50%#1\") { slug } }", json!({}))
        .await;
    assert!(gone["data"]["getPost"].is_null(), "{gone}");
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn model_timestamps_renames_or_leaves_out_the_times_as_amplify_does() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-timestamps/schema.graphql").await;
    let mut ids = Vec::new();
    for text in ["first", "second", "third"] {
        let note = app
            .graphql(
                "mutation($t: String!) { createNote(input: { text: $t, day: \"mon\" }) { id createdOn updatedOn } }",
                json!({ "t": text }),
            )
            .await;
        no_errors(&note);
        let note = &note["data"]["createNote"];
        assert_eq!(note["createdOn"], note["updatedOn"], "{note}");
        ids.push(note["id"].clone());
    }
    // The update time moves on an update; the creation time stays.
    let created = app
        .graphql(
            "query($id: ID!) { getNote(id: $id) { createdOn } }",
            json!({ "id": ids[0] }),
        )
        .await["data"]["getNote"]["createdOn"]
        .clone();
    let updated = app
        .graphql(
            "mutation($id: ID!) { updateNote(input: { id: $id, text: \"first, again\" }) { createdOn updatedOn } }",
            json!({ "id": ids[0] }),
        )
        .await;
    no_errors(&updated);
    assert_eq!(updated["data"]["updateNote"]["createdOn"], created);
    assert!(
        updated["data"]["updateNote"]["updatedOn"].as_str() > created.as_str(),
        "{updated}"
    );
    // The renamed time is a sort key field, a filter's field and a condition's.
    let by_day = app
        .graphql(
            "query { notesByDay(day: \"mon\", sortDirection: DESC) { items { text } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        by_day["data"]["notesByDay"]["items"],
        json!([{ "text": "third" }, { "text": "second" }, { "text": "first, again" }])
    );
    let filtered = app
        .graphql(
            "query($at: String!) { listNotes(filter: { createdOn: { gt: $at } }) { items { text } } }",
            json!({ "at": created }),
        )
        .await;
    assert_eq!(
        filtered["data"]["listNotes"]["items"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{filtered}"
    );
    // The default names are not fields of a type that renamed or left them out.
    for query in [
        "query { listNotes { items { createdAt } } }",
        "query { listTags { items { updatedAt } } }",
        "query { listPins { items { updatedAt } } }",
    ] {
        let body = app.graphql(query, json!({})).await;
        assert!(
            body["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Unknown field")),
            "{query}: {body}"
        );
    }
    let tag = app
        .graphql(
            "mutation { createTag(input: { name: \"red\" }) { id name } }",
            json!({}),
        )
        .await;
    no_errors(&tag);
    let pin = app
        .graphql(
            "mutation { createPin(input: { label: \"here\" }) { label createdAt } }",
            json!({}),
        )
        .await;
    no_errors(&pin);
    assert!(pin["data"]["createPin"]["createdAt"].is_string(), "{pin}");
    app.assert_table_consistent().await;
}
