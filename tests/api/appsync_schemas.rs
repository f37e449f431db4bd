//! Schemas written the way AppSync and Amplify users write them, served unchanged:
//! `examples/events` (a schema block, AppSync's directives and scalars, types without `@model`
//! stored inside their node, a subscription declared with `@aws_subscribe`) and
//! `examples/blog` (`@auth` rules, an interface the posts implement, `extend type`, an input
//! type, a declared subscription with arguments).

use serde_json::{Value, json};
use tablegraph::store::{AttrValue, Key, StoreTuning};

use crate::helpers::{TestApp, api_key_and_tokens, spawn_schema_tuned, user_token};
use crate::subscriptions::Client;

const API_KEY: &str = "example-key";

async fn app(schema: &str) -> TestApp {
    spawn_schema_tuned(api_key_and_tokens(API_KEY), schema, StoreTuning::default()).await
}

/// The headers of a caller: `None` for the API key, else a user and their groups.
fn headers(user: Option<(&str, &[&str])>) -> Vec<(&'static str, String)> {
    match user {
        None => vec![("x-api-key", API_KEY.to_owned())],
        Some((sub, groups)) => vec![(
            "authorization",
            format!("Bearer {}", user_token(sub, groups)),
        )],
    }
}

async fn run(app: &TestApp, user: Option<(&str, &[&str])>, query: &str, variables: Value) -> Value {
    let mut request = app
        .client
        .post(format!("http://{}/graphql", app.address))
        .json(&json!({ "query": query, "variables": variables }));
    for (name, value) in headers(user) {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("the server answers");
    assert_eq!(response.status(), 200);
    response.json().await.expect("a JSON body")
}

fn payload(user: Option<(&str, &[&str])>) -> Value {
    let mut payload = serde_json::Map::new();
    for (name, value) in headers(user) {
        payload.insert(name.to_owned(), Value::from(value));
    }
    Value::Object(payload)
}

async fn stored(app: &TestApp, id: &str) -> tablegraph::store::Item {
    app.store
        .get_item_consistent(&Key::same(format!("NODE#{id}")))
        .await
        .expect("the store answers")
        .expect("the node is stored")
}

const CREATE_EVENT: &str = "mutation ($input: CreateEventInput!) { createEvent(input: $input) {
    id name when tags website details venue { address phone location { latitude longitude } } } }";

fn event(name: &str) -> Value {
    json!({
        "name": name,
        "when": "2026-12-03T18:30:00.000Z",
        "tags": ["rust", "meetup"],
        "website": "https://example.com/events/rust",
        "details": "{\"capacity\":80}",
        "venue": {
            "address": "1 Main St",
            "phone": "+1 206 555 0100",
            "location": { "latitude": 47.6, "longitude": -122.3 },
        },
    })
}

#[tokio::test]
async fn the_events_example_stores_its_venues_inside_the_events() {
    let app = app("examples/events/schema.graphql").await;
    let input = event("Rust meetup");
    let created = run(&app, None, CREATE_EVENT, json!({ "input": input })).await;
    assert!(created.get("errors").is_none(), "{created}");
    let mut answered = created["data"]["createEvent"].clone();
    let id = answered["id"].as_str().expect("an id").to_owned();
    answered.as_object_mut().expect("an object").remove("id");
    assert_eq!(answered, input);

    // One item: the venue is a map inside it, its location a map inside that.
    let item = stored(&app, &id).await;
    let Some(AttrValue::M(venue)) = item.get("venue") else {
        panic!("the venue is stored as a map: {item:?}");
    };
    assert_eq!(
        venue.get("address"),
        Some(&AttrValue::S("1 Main St".into()))
    );
    assert!(
        matches!(venue.get("location"), Some(AttrValue::M(_))),
        "{venue:?}"
    );

    // Changing the venue replaces it whole; a member of Organizers may do it.
    let organizer: &[&str] = &["Organizers"];
    let updated = run(
        &app,
        Some(("olga", organizer)),
        "mutation ($id: ID!) { updateEvent(input: { id: $id, venue: { address: \"2 Side St\" } }) {
            venue { address phone location { latitude } } } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        updated["data"]["updateEvent"]["venue"],
        json!({ "address": "2 Side St", "phone": null, "location": null }),
        "{updated}"
    );

    // The backstage is the organizers' alone: they set and read it; the API key reads null
    // with an error.
    let set = run(
        &app,
        Some(("olga", organizer)),
        "mutation ($id: ID!) { updateEvent(input: { id: $id, backstage: { budget: 250.5 } }) {
            backstage { budget notes } } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        set["data"]["updateEvent"]["backstage"],
        json!({ "budget": 250.5, "notes": null }),
        "{set}"
    );
    let by_key = run(
        &app,
        None,
        "query ($id: ID!) { event(id: $id) { name backstage { budget } } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        by_key["data"]["event"],
        json!({ "name": "Rust meetup", "backstage": null }),
        "{by_key}"
    );
    assert_eq!(
        by_key["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{by_key}"
    );

    // Someone outside Organizers, without the API key, is refused and changes nothing.
    let refused = run(
        &app,
        Some(("mallory", &[])),
        "mutation ($id: ID!) { updateEvent(input: { id: $id, name: \"Mine now\" }) { name } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{refused}"
    );
    let read = run(
        &app,
        None,
        "query ($id: ID!) { event(id: $id) { name venue { address } } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        read["data"]["event"],
        json!({ "name": "Rust meetup", "venue": { "address": "2 Side St" } })
    );
}

#[tokio::test]
async fn a_bad_value_inside_a_venue_is_refused_and_nothing_is_written() {
    let app = app("examples/events/schema.graphql").await;
    for (path, bad) in [
        ("phone", json!("CALL-ME")),
        ("address", Value::Null),
        ("location", json!({ "latitude": 1.0 })),
    ] {
        let mut input = event("Bad venue");
        input["venue"][path] = bad;
        let answer = run(&app, None, CREATE_EVENT, json!({ "input": input })).await;
        assert!(answer["data"].is_null(), "{path}: {answer}");
        assert!(
            !answer["errors"][0]["message"]
                .as_str()
                .unwrap_or_default()
                .is_empty()
        );
    }
    let listed = run(
        &app,
        None,
        "{ listEvents { edges { node { id } } } }",
        json!({}),
    )
    .await;
    assert_eq!(listed["data"]["listEvents"]["edges"], json!([]), "{listed}");
}

#[tokio::test]
async fn a_declared_subscription_delivers_the_comments_of_its_event() {
    let app = app("examples/events/schema.graphql").await;
    let mut ids = Vec::new();
    for name in ["Rust meetup", "Go meetup"] {
        let created = run(&app, None, CREATE_EVENT, json!({ "input": event(name) })).await;
        ids.push(
            created["data"]["createEvent"]["id"]
                .as_str()
                .expect("an id")
                .to_owned(),
        );
    }
    let mut client = Client::connected(&app, payload(None)).await;
    client
        .subscribe(
            "1",
            "subscription ($e: ID) { subscribeToEventComments(eventId: $e) { content event { name } } }",
            json!({ "e": ids[0] }),
        )
        .await;
    app.events.until_subscribers(1).await;
    let comment = "mutation ($e: ID!, $c: String!) {
        createComment(input: { eventId: $e, content: $c, writtenAt: 1764786600 }) { id } }";
    for (event, content) in [(&ids[1], "See you in Go"), (&ids[0], "See you in Rust")] {
        let written = run(&app, None, comment, json!({ "e": event, "c": content })).await;
        assert!(written.get("errors").is_none(), "{written}");
    }
    let delivered = client.next_of("1").await;
    assert_eq!(
        delivered["data"]["subscribeToEventComments"],
        json!({ "content": "See you in Rust", "event": { "name": "Rust meetup" } }),
        "the other event's comment is not delivered"
    );
}

async fn blog_with_post(app: &TestApp) -> (String, String) {
    let ann: &[&str] = &[];
    let blog = run(
        app,
        Some(("ann", ann)),
        "mutation { createBlog(input: { name: \"Ann's notes\" }) { id owner } }",
        json!({}),
    )
    .await;
    assert_eq!(blog["data"]["createBlog"]["owner"], "ann", "{blog}");
    let blog = blog["data"]["createBlog"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let post = run(
        app,
        Some(("ann", ann)),
        "mutation ($b: ID!) { createPost(input: { blogId: $b, title: \"Hello\", status: DRAFT,
            tags: [\"intro\"], rating: 4 }) { id } }",
        json!({ "b": blog }),
    )
    .await;
    let post = post["data"]["createPost"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    (blog, post)
}

#[tokio::test]
async fn the_blog_example_reads_posts_through_their_interface() {
    let app = app("examples/blog/schema.graphql").await;
    let (_, post) = blog_with_post(&app).await;
    let query = "query ($p: ID!) {
        node(id: $p) { ... on Publication { title status } }
        post(id: $p) { rating tags blog { name } }
    }";
    for reader in [None, Some(("bob", &[] as &[&str]))] {
        let read = run(&app, reader, query, json!({ "p": post })).await;
        assert!(read.get("errors").is_none(), "{read}");
        assert_eq!(
            read["data"]["node"],
            json!({ "title": "Hello", "status": "DRAFT" })
        );
        assert_eq!(
            read["data"]["post"],
            json!({ "rating": 4, "tags": ["intro"], "blog": { "name": "Ann's notes" } })
        );
    }
    // The interface is part of the API as declared.
    let introspected = run(
        &app,
        None,
        "{ __type(name: \"Publication\") { kind fields { name } possibleTypes { name } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        introspected["data"]["__type"],
        json!({
            "kind": "INTERFACE",
            "fields": [{ "name": "title" }, { "name": "status" }],
            "possibleTypes": [{ "name": "Post" }],
        })
    );

    // Only the owner changes a post; bob's attempt changes nothing.
    let bob: &[&str] = &[];
    let refused = run(
        &app,
        Some(("bob", bob)),
        "mutation ($p: ID!) { updatePost(input: { id: $p, title: \"Bob's\" }) { title } }",
        json!({ "p": post }),
    )
    .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{refused}"
    );
    let read = run(
        &app,
        None,
        "query ($p: ID!) { post(id: $p) { title version } }",
        json!({ "p": post }),
    )
    .await;
    assert_eq!(
        read["data"]["post"],
        json!({ "title": "Hello", "version": 1 })
    );
}

#[tokio::test]
async fn a_declared_subscription_filters_on_its_arguments() {
    let app = app("examples/blog/schema.graphql").await;
    let (blog, post) = blog_with_post(&app).await;
    let mut client = Client::connected(&app, payload(Some(("bob", &[])))).await;
    client
        .subscribe(
            "1",
            "subscription ($b: ID) { onPostChanged(blogId: $b, status: PUBLISHED) { title status } }",
            json!({ "b": blog }),
        )
        .await;
    app.events.until_subscribers(1).await;
    let ann: &[&str] = &[];
    let update = "mutation ($p: ID!, $t: String!, $s: PostStatus!) {
        updatePost(input: { id: $p, title: $t, status: $s }) { id } }";
    for (title, status) in [("Still a draft", "DRAFT"), ("Hello, world", "PUBLISHED")] {
        let written = run(
            &app,
            Some(("ann", ann)),
            update,
            json!({ "p": post, "t": title, "s": status }),
        )
        .await;
        assert!(written.get("errors").is_none(), "{written}");
    }
    let delivered = client.next_of("1").await;
    assert_eq!(
        delivered["data"]["onPostChanged"],
        json!({ "title": "Hello, world", "status": "PUBLISHED" }),
        "the draft's update is not delivered"
    );
}
