//! `tablegraph import --amplify-tables`: an Amplify app's tables (one per model type, keyed by
//! `id`, with DataStore's bookkeeping) made on dynoxide's HTTP server with the SDK, read into
//! the one table; `check` is clean afterwards, the API answers the data, and a second run
//! writes nothing again.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use serde_json::{Value, json};

use crate::helpers::{repository_file, scratch};
use crate::network::{run, serve_with, start_dynoxide};

const SUFFIX: &str = "k3mvq2yz-dev";

/// An SDK client of `endpoint`, as the Amplify app's own tables would be written.
fn client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_dynamodb::config::Region::new("eu-west-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "test",
        ))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

/// An item of an Amplify table: its attributes.
type AmplifyItem = Vec<(String, AttributeValue)>;

/// An item as Amplify's resolvers (and DataStore) store one.
fn amplify_item(type_name: &str, id: &str, fields: &[(&str, AttributeValue)]) -> AmplifyItem {
    let mut item = vec![
        ("id".to_owned(), s(id)),
        ("__typename".to_owned(), s(type_name)),
        ("createdAt".to_owned(), s("2024-03-01T09:30:00.000Z")),
        ("updatedAt".to_owned(), s("2024-03-02T10:00:00.000Z")),
        ("_version".to_owned(), AttributeValue::N("1".to_owned())),
        (
            "_lastChangedAt".to_owned(),
            AttributeValue::N("1709371200000".to_owned()),
        ),
    ];
    item.extend(fields.iter().map(|(n, v)| ((*n).to_owned(), v.clone())));
    item
}

/// An Amplify model's table: keyed by `id`, billed per request.
async fn make_table(client: &aws_sdk_dynamodb::Client, table: &str) {
    client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("an attribute definition"),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .expect("a key schema"),
        )
        .send()
        .await
        .expect("the Amplify table is made");
}

async fn make_tables(endpoint: &str) {
    let client = client(endpoint);
    let tables: [(&str, Vec<AmplifyItem>); 5] = [
        (
            "Blog",
            vec![amplify_item("Blog", "b1", &[("name", s("Farm diary"))])],
        ),
        (
            "Post",
            vec![
                amplify_item(
                    "Post",
                    "p1",
                    &[
                        ("title", s("Lambing")),
                        ("blogPostsId", s("b1")),
                        ("legacyViews", AttributeValue::N("7".into())),
                    ],
                ),
                // The blog was deleted; Amplify kept the post's key.
                amplify_item(
                    "Post",
                    "p2",
                    &[("title", s("Orphan")), ("blogPostsId", s("gone"))],
                ),
                // Deleted by DataStore.
                amplify_item(
                    "Post",
                    "p3",
                    &[
                        ("title", s("Gone")),
                        ("_deleted", AttributeValue::Bool(true)),
                    ],
                ),
            ],
        ),
        (
            "Comment",
            vec![
                amplify_item(
                    "Comment",
                    "c1",
                    &[("postID", s("p1")), ("content", s("First!"))],
                ),
                amplify_item(
                    "Comment",
                    "c2",
                    &[("postID", s("p1")), ("content", s("Lovely"))],
                ),
                // A content that is no String.
                amplify_item(
                    "Comment",
                    "c3",
                    &[
                        ("postID", s("p1")),
                        ("content", AttributeValue::N("42".into())),
                    ],
                ),
            ],
        ),
        (
            "Team",
            vec![amplify_item("Team", "t1", &[("name", s("Shearers"))])],
        ),
        (
            "Project",
            vec![amplify_item(
                "Project",
                "pr1",
                &[("name", s("Spring")), ("projectTeamId", s("t1"))],
            )],
        ),
    ];
    for (type_name, items) in tables {
        let table = format!("{type_name}-{SUFFIX}");
        make_table(&client, &table).await;
        for item in items {
            client
                .put_item()
                .table_name(&table)
                .set_item(Some(item.into_iter().collect()))
                .send()
                .await
                .expect("an Amplify item is written");
        }
    }
}

async fn post(url: &str, query: &str) -> Value {
    reqwest::Client::new()
        .post(url)
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("JSON")
}

#[tokio::test]
async fn an_amplify_apps_tables_become_nodes_relations_and_counts_and_check_is_clean() {
    let endpoint = start_dynoxide().await;
    make_tables(&endpoint).await;
    // The schema in a directory of its own: `migrate` pins its slots beside it.
    let dir = scratch("amplify-import");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let schema = dir.join("schema.graphql");
    std::fs::copy(
        repository_file("tests/fixtures/amplify-relations/schema.graphql"),
        &schema,
    )
    .expect("the schema is copied");
    let schema = schema.to_str().expect("a UTF-8 path");
    let store = ["--schema", schema, "--dynamodb-endpoint", endpoint.as_str()];
    // Without the default schema's data migrations.
    let migrations = dir.join("migrations");
    std::fs::create_dir_all(&migrations).expect("an empty migrations directory");
    let migrations = migrations.to_str().expect("a UTF-8 path");
    let (ok, out, err) =
        run(&[&["migrate", "--migrations", migrations][..], &store].concat()).await;
    assert!(ok, "{out}{err}");

    // A wrong suffix names the table it looked for.
    let (ok, _, err) =
        run(&[&["import", "--amplify-tables", "nope-dev"][..], &store].concat()).await;
    assert!(!ok);
    assert!(
        err.contains("the Amplify table Blog-nope-dev of Blog does not exist"),
        "{err}"
    );

    let (ok, out, err) = run(&[&["import", "--amplify-tables", SUFFIX][..], &store].concat()).await;
    assert!(ok, "{out}{err}");
    for said in [
        "Blog-k3mvq2yz-dev: 1 written, 0 already there, 0 deleted by DataStore left out",
        "Post-k3mvq2yz-dev: 2 written, 0 already there, 1 deleted by DataStore left out",
        "p2 written without blogPostsId: no such node",
        "legacyViews: not in the schema, left out of 1 items",
        "Comment-k3mvq2yz-dev: 2 written",
        "left out c3: content holds a value that is no Comment.content, as the schema declares it",
    ] {
        assert!(out.contains(said), "{said}:\n{out}");
    }
    // DataStore's bookkeeping is no field of the schema either, and is not reported as lost.
    assert!(!out.contains("_version"), "{out}");

    let (ok, out, err) = run(&[&["check"][..], &store].concat()).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("no violations"), "{out}");

    // Run again: everything is there already, nothing is written twice (counts stay exact).
    let (ok, out, err) = run(&[&["import", "--amplify-tables", SUFFIX][..], &store].concat()).await;
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("Post-k3mvq2yz-dev: 0 written, 2 already there"),
        "{out}"
    );
    let (ok, out, _) = run(&[&["check"][..], &store].concat()).await;
    assert!(ok && out.contains("no violations"), "{out}");

    let (_server, address) = serve_with(&endpoint, &["--schema", schema]).await;
    let url = format!("http://{address}/graphql");
    let blog = post(
        &url,
        "{ getBlog(id: \"b1\") { name createdAt posts { items { title comments { items { content } } } } } }",
    )
    .await;
    assert_eq!(
        blog["data"]["getBlog"],
        json!({
            "name": "Farm diary",
            "createdAt": "2024-03-01T09:30:00.000Z",
            "posts": { "items": [{
                "title": "Lambing",
                "comments": { "items": [{ "content": "First!" }, { "content": "Lovely" }] }
            }] }
        }),
        "{blog}"
    );
    let posts = post(&url, "{ listPosts { items { id blogPostsId } } }").await;
    assert_eq!(
        posts["data"]["listPosts"]["items"],
        json!([{ "id": "p1", "blogPostsId": "b1" }, { "id": "p2", "blogPostsId": null }]),
        "{posts}"
    );
    let project = post(&url, "{ getProject(id: \"pr1\") { team { name } } }").await;
    assert_eq!(
        project["data"]["getProject"]["team"]["name"], "Shearers",
        "{project}"
    );
}

#[tokio::test]
async fn a_parent_of_the_same_type_read_later_is_waited_for_and_one_never_read_is_said() {
    let endpoint = start_dynoxide().await;
    let client = client(&endpoint);
    let suffix = "selfref-dev";
    let table = format!("Note-{suffix}");
    make_table(&client, &table).await;
    // Replies before the notes they answer, whichever order the Scan reads them in; one answers
    // a note that was deleted; one's id is taken by nothing else.
    for item in [
        amplify_item(
            "Note",
            "a-reply",
            &[("text", s("Agreed")), ("parentId", s("z-root"))],
        ),
        amplify_item(
            "Note",
            "b-reply",
            &[("text", s("Me too")), ("parentId", s("a-reply"))],
        ),
        amplify_item("Note", "z-root", &[("text", s("Start"))]),
        amplify_item(
            "Note",
            "m-stray",
            &[("text", s("Lost")), ("parentId", s("deleted"))],
        ),
        amplify_item(
            "Note",
            "q-bad",
            &[("text", s("When")), ("due", s("not a date"))],
        ),
    ] {
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(item.into_iter().collect()))
            .send()
            .await
            .expect("an Amplify item is written");
    }
    let dir = scratch("amplify-import-self");
    std::fs::create_dir_all(dir.join("migrations")).expect("a scratch directory");
    let schema = dir.join("schema.graphql");
    std::fs::write(
        &schema,
        "type Note @model {
           id: ID!
           text: String!
           due: AWSDate
           parentId: ID @index(name: \"byParent\")
           parent: Note @belongsTo(fields: [\"parentId\"])
           replies: [Note] @hasMany(indexName: \"byParent\", fields: [\"id\"])
         }",
    )
    .expect("the schema is written");
    let schema = schema.to_str().expect("a UTF-8 path");
    let migrations = dir.join("migrations");
    let migrations = migrations.to_str().expect("a UTF-8 path");
    let store = ["--schema", schema, "--dynamodb-endpoint", endpoint.as_str()];
    let (ok, out, err) =
        run(&[&["migrate", "--migrations", migrations][..], &store].concat()).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = run(&[&["import", "--amplify-tables", suffix][..], &store].concat()).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("Note-selfref-dev: 4 written"), "{out}");
    assert!(out.contains("m-stray written without parentId"), "{out}");
    assert!(!out.contains("a-reply written without"), "{out}");
    assert!(
        out.contains("left out q-bad: due holds a value that is no Note.due"),
        "{out}"
    );
    let (ok, out, _) = run(&[&["check"][..], &store].concat()).await;
    assert!(ok && out.contains("no violations"), "{out}");
    let (_server, address) = serve_with(&endpoint, &["--schema", schema]).await;
    let root = post(
        &format!("http://{address}/graphql"),
        "{ getNote(id: \"z-root\") { replies { items { id replies { items { id } } } } } }",
    )
    .await;
    assert_eq!(
        root["data"]["getNote"]["replies"]["items"],
        json!([{ "id": "a-reply", "replies": { "items": [{ "id": "b-reply" }] } }]),
        "{root}"
    );
}
