//! Amplify (transformer v2) schemas as Amplify's CLI writes them: the sandbox's
//! `input AMPLIFY { globalAuthRule }`, owner fields typed `ID`, `@searchable`.

use serde_json::{Value, json};

use crate::helpers::{TestApp, api_key_and_tokens, spawn_app_with_schema_and, user_token};

const SCHEMA: &str = "tests/fixtures/amplify-sandbox/schema.graphql";
const API_KEY: &str = "da2-sandbox";

async fn app() -> TestApp {
    spawn_app_with_schema_and(SCHEMA, api_key_and_tokens(API_KEY)).await
}

/// Runs `query` as the caller `header` (`x-api-key` or `Authorization`) says; the answer.
async fn call(app: &TestApp, header: (&str, &str), query: &str, variables: Value) -> Value {
    app.graphql_with(&[header], query, variables).await.1
}

#[tokio::test]
async fn the_sandboxs_global_rule_opens_types_without_rules_to_api_keys_only() {
    let app = app().await;
    let create = "mutation { createTodo(input: { name: \"Feed the hens\" }) { id name } }";
    let by_key = call(&app, ("x-api-key", API_KEY), create, json!({})).await;
    assert_eq!(
        by_key["data"]["createTodo"]["name"], "Feed the hens",
        "{by_key}"
    );
    // `{ allow: public }` is API keys' rule: a signed-in user is not admitted by it.
    let token = user_token("ann", &[]);
    let by_token = call(&app, ("authorization", &token), create, json!({})).await;
    assert!(by_token["data"]["createTodo"].is_null(), "{by_token}");
    assert_eq!(
        by_token["errors"][0]["extensions"]["errorType"],
        "Unauthorized"
    );
}

#[tokio::test]
async fn an_owner_field_typed_id_names_its_owner() {
    let app = app().await;
    let ann = user_token("ann", &[]);
    let created = call(
        &app,
        ("authorization", &ann),
        "mutation { createDiary(input: { text: \"Rain all day\" }) { id authorId } }",
        json!({}),
    )
    .await;
    assert_eq!(
        created["data"]["createDiary"]["authorId"], "ann",
        "{created}"
    );
    let id = created["data"]["createDiary"]["id"].clone();
    let read = "query($id: ID!) { getDiary(id: $id) { text } }";
    let by_ann = call(&app, ("authorization", &ann), read, json!({ "id": id })).await;
    assert_eq!(
        by_ann["data"]["getDiary"]["text"], "Rain all day",
        "{by_ann}"
    );
    let bob = user_token("bob", &[]);
    let by_bob = call(&app, ("authorization", &bob), read, json!({ "id": id })).await;
    assert!(by_bob["data"]["getDiary"].is_null(), "{by_bob}");
}

#[tokio::test]
async fn a_searchable_type_serves_its_search_query_from_the_table() {
    let app = app().await;
    let created = call(
        &app,
        ("x-api-key", API_KEY),
        "mutation { createPost(input: { title: \"Lambing season\" }) { title } }",
        json!({}),
    )
    .await;
    assert_eq!(
        created["data"]["createPost"]["title"], "Lambing season",
        "{created}"
    );
    let search = call(
        &app,
        ("x-api-key", API_KEY),
        "{ searchPosts(filter: { title: { matchPhrase: \"lambing\" } }) { total items { title } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        search["data"]["searchPosts"],
        json!({ "total": 1, "items": [{ "title": "Lambing season" }] }),
        "{search}"
    );
}

#[tokio::test]
async fn amplifys_relations_load_with_amplifys_keys_and_read_through_their_slots() {
    let app =
        crate::helpers::spawn_app_with_schema("tests/fixtures/amplify-relations/schema.graphql")
            .await;
    let blog = app
        .graphql(
            "mutation { createBlog(input: { name: \"Farm diary\" }) { id } }",
            json!({}),
        )
        .await;
    let blog = blog["data"]["createBlog"]["id"]
        .as_str()
        .expect("a blog")
        .to_owned();
    // Amplify's implicit key of the bare @hasMany Blog.posts.
    let post = app
        .graphql(
            "mutation($blog: ID!) { createPost(input: { title: \"Lambing\", blogPostsId: $blog }) { id blog { name } } }",
            json!({ "blog": blog }),
        )
        .await;
    assert_eq!(
        post["data"]["createPost"]["blog"]["name"], "Farm diary",
        "{post}"
    );
    let post = post["data"]["createPost"]["id"]
        .as_str()
        .expect("a post")
        .to_owned();
    for content in ["First!", "Lovely"] {
        let comment = app
            .graphql(
                "mutation($post: ID!, $c: String!) { createComment(input: { postID: $post, content: $c }) { post { title } } }",
                json!({ "post": post, "c": content }),
            )
            .await;
        assert_eq!(
            comment["data"]["createComment"]["post"]["title"], "Lambing",
            "{comment}"
        );
    }
    let (body, calls) = app
        .graphql_counted(
            "query($blog: ID!) { getBlog(id: $blog) { posts { items { title comments { items { content } } } } } }",
            json!({ "blog": blog }),
        )
        .await;
    let posts = &body["data"]["getBlog"]["posts"]["items"];
    assert_eq!(posts[0]["title"], "Lambing", "{body}");
    assert_eq!(
        posts[0]["comments"]["items"],
        json!([{ "content": "First!" }, { "content": "Lovely" }]),
        "{body}"
    );
    // The blog, its posts' slot, then the index `byPost` their comments name (in its slot,
    // sorted by content): one call a level, no Scan.
    assert_eq!(
        calls,
        ["BatchGetItem", "Query:GSI02", "Query:GSI02"],
        "{body}"
    );

    let team = app
        .graphql(
            "mutation { createTeam(input: { name: \"Shearers\" }) { id } }",
            json!({}),
        )
        .await;
    let team = team["data"]["createTeam"]["id"].clone();
    let project = app
        .graphql(
            "mutation($team: ID!) { createProject(input: { name: \"Spring\", projectTeamId: $team }) { team { name } } }",
            json!({ "team": team }),
        )
        .await;
    assert_eq!(
        project["data"]["createProject"]["team"]["name"], "Shearers",
        "{project}"
    );
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn migrate_pins_the_slots_it_chose_and_an_edited_schema_keeps_them() {
    let dir = crate::helpers::scratch("slot-lock");
    std::fs::create_dir_all(&dir).expect("a directory");
    let schema = dir.join("schema.graphql");
    let fixture =
        crate::helpers::repository_file("tests/fixtures/amplify-relations/schema.graphql");
    std::fs::copy(&fixture, &schema).expect("copied");
    let schema_arg = schema.to_str().expect("a UTF-8 path").to_owned();
    // `run_tablegraph` gives the data directory (`dir`); this schema has no data migrations.
    let migrations = dir.join("migrations");
    std::fs::create_dir_all(&migrations).expect("a directory");
    let migrations = migrations.to_str().expect("a UTF-8 path").to_owned();
    let migrate = [
        "migrate",
        "--schema",
        &schema_arg,
        "--migrations",
        &migrations,
    ];
    let (ok, stdout, stderr) = crate::helpers::run_tablegraph(&migrate, &dir).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("pinned the index slots in"), "{stdout}");
    let lock = std::fs::read_to_string(dir.join("slots.lock")).expect("the lock file");
    assert!(lock.contains("\"Post:Blog.posts\" = 2"), "{lock}");
    assert!(lock.contains("\"Comment@byPost\" = 2"), "{lock}");
    // Nothing new to pin the second time.
    let (ok, stdout, _) = crate::helpers::run_tablegraph(&migrate, &dir).await;
    assert!(ok && !stdout.contains("pinned"), "{stdout}");

    // A relation declared before Blog.posts: Blog.posts keeps GSI02, the new one takes a free one.
    let text = std::fs::read_to_string(&schema).expect("the schema");
    // (With two lists of posts on Blog, Post.blog says which key it reads.)
    let edited = text
        .replace(
            "  posts: [Post] @hasMany",
            "  drafts: [Post] @hasMany\n  posts: [Post] @hasMany",
        )
        .replace(
            "blog: Blog @belongsTo\n",
            "blog: Blog @belongsTo(fields: [\"blogPostsId\"])\n",
        );
    std::fs::write(&schema, edited).expect("written");
    let plan = std::process::Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args(["plan", "--schema", &schema_arg])
        .output()
        .expect("runs");
    let plan = String::from_utf8_lossy(&plan.stdout).into_owned();
    let line = |key: &str| {
        plan.lines()
            .find(|line| line.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("{key} in {plan}"))
            .to_owned()
    };
    assert!(line("Post:Blog.posts ").contains("GSI02  pinned"), "{plan}");
    assert!(
        line("Post:Blog.drafts ").contains("GSI03  not pinned yet"),
        "{plan}"
    );
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test]
async fn a_refusal_names_appsyncs_error_type_where_aws_clients_read_it() {
    let app = app().await;
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("x-api-key", "da2-wrong")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["x-amzn-errortype"],
        "UnauthorizedException"
    );
}

#[tokio::test]
async fn model_arguments_name_and_leave_out_root_fields_as_amplify_does() {
    let app = app().await;
    let key = ("x-api-key", API_KEY);
    let added = call(
        &app,
        key,
        "mutation { addItem(input: { label: \"Rake\" }) { id label } }",
        json!({}),
    )
    .await;
    let id = added["data"]["addItem"]["id"].clone();
    assert_eq!(added["data"]["addItem"]["label"], "Rake", "{added}");
    let got = call(
        &app,
        key,
        "query($id: ID!) { getItem(id: $id) { label } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(got["data"]["getItem"]["label"], "Rake", "{got}");
    // Left out: the list, the other mutations (and their batches), the subscriptions. The
    // batch of the create kept stays, by tablegraph's name (`createItems`).
    for (query, absent) in [
        ("{ listItems { edges { node { id } } } }", "listItems"),
        (
            "mutation { updateItem(input: { id: \"x\" }) { id } }",
            "updateItem",
        ),
        ("mutation { deleteItem(id: \"x\") { id } }", "deleteItem"),
        ("mutation { updateItems(input: []) { id } }", "updateItems"),
        ("subscription { onCreateItem { id } }", "onCreateItem"),
    ] {
        let answer = call(&app, key, query, json!({})).await;
        let message = answer["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(absent), "{absent}: {answer}");
    }
}
