//! Amplify's `@http`: a real HTTP server in this test binary answers the fields, and records
//! each request it is sent (method, path, query, headers, body).

use std::sync::{Arc, Mutex};

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::IntoResponse as _;
use serde_json::{Value, json};
use tablegraph::functions::FunctionsConfig;

use crate::helpers::{TestApp, spawn_app_with_functions};

const SCHEMA: &str = "tests/fixtures/http/schema.graphql";

/// A request the endpoint was sent.
#[derive(Debug, Clone)]
struct Sent {
    method: Method,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Value,
}

type Requests = Arc<Mutex<Vec<Sent>>>;

async fn endpoint(
    State(requests): State<Requests>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    let sent = Sent {
        method: method.clone(),
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    requests.lock().expect("the requests").push(sent.clone());
    let json = |status: StatusCode, value: Value| (status, axum::Json(value)).into_response();
    match (method, uri.path()) {
        (Method::GET, "/health") => "all good".into_response(),
        (Method::GET, "/forecast") => json(StatusCode::OK, json!("sunny")),
        (Method::GET, "/posts") => json(
            StatusCode::OK,
            json!([{ "id": "p-1", "title": "Hay" }, { "id": "p-2", "title": "Straw" }]),
        ),
        (Method::POST, "/posts") => json(
            StatusCode::CREATED,
            json!({ "id": "p-3", "title": sent.body["title"], "views": sent.body["views"] }),
        ),
        (Method::GET, path) if path.starts_with("/posts/") => json(
            StatusCode::OK,
            json!({ "id": path.trim_start_matches("/posts/"), "title": "Hay", "views": 7 }),
        ),
        // Sent on to another origin, which must never be asked.
        (Method::GET, "/missing/redirect") => (
            StatusCode::FOUND,
            [(
                axum::http::header::LOCATION,
                format!(
                    "http://{}/stolen",
                    sent.headers["x-elsewhere"].to_str().unwrap_or("")
                ),
            )],
        )
            .into_response(),
        // A chunked answer that never ends: no length to refuse it by.
        (Method::GET, "/missing/endless") => {
            let chunk = axum::body::Bytes::from(vec![b' '; 64 * 1024]);
            let endless =
                futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
            axum::body::Body::from_stream(endless).into_response()
        }
        (Method::DELETE, path) if path.starts_with("/posts/") => json(
            StatusCode::OK,
            json!({ "id": path.trim_start_matches("/posts/") }),
        ),
        _ => (StatusCode::NOT_FOUND, "no such post").into_response(),
    }
}

async fn app() -> (TestApp, Requests) {
    let requests: Requests = Arc::default();
    let router = axum::Router::new()
        .fallback(endpoint)
        .with_state(requests.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    let functions = FunctionsConfig {
        env: Some(address.to_string()),
        ..FunctionsConfig::default()
    };
    (spawn_app_with_functions(SCHEMA, functions).await, requests)
}

fn last(requests: &Requests) -> Sent {
    requests
        .lock()
        .expect("the requests")
        .last()
        .cloned()
        .expect("a request was sent")
}

#[tokio::test]
async fn a_get_fills_the_path_sends_the_query_and_passes_headers_on() {
    let (app, requests) = app().await;
    let body: Value = app
        .client
        .post(app.url("/graphql"))
        .header("x-trace-note", "from the client")
        .json(&json!({
            "query": "query($p: QueryGetPostParamsInput!) { getPost(params: $p, query: { verbose: true }) { id title views } }",
            "variables": { "p": { "id": "p/1 x" } },
        }))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert!(body["errors"].is_null(), "{body}");
    let sent = last(&requests);
    assert_eq!(sent.method, Method::GET);
    // The path parameter is one encoded segment.
    assert_eq!(sent.path, "/posts/p%2F1%20x");
    assert_eq!(sent.query.as_deref(), Some("verbose=true"));
    assert_eq!(
        body["data"]["getPost"],
        json!({ "id": "p%2F1%20x", "title": "Hay", "views": 7 })
    );
    // The directive's header, the client's headers passed on, JSON asked for.
    assert_eq!(sent.headers["x-probe"], "tablegraph");
    assert_eq!(sent.headers["x-trace-note"], "from the client");
    assert_eq!(sent.headers["accept"], "application/json");

    let body = app
        .graphql(
            "{ listPosts(query: { limit: 2, tag: \"barn\" }) { id title } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["listPosts"],
        json!([{ "id": "p-1", "title": "Hay" }, { "id": "p-2", "title": "Straw" }]),
        "{body}"
    );
    let query = last(&requests).query.unwrap_or_default();
    let mut pairs: Vec<&str> = query.split('&').collect();
    pairs.sort_unstable();
    assert_eq!(pairs, ["limit=2", "tag=barn"]);

    // A String field takes a text answer as it is.
    let body = app.graphql("{ health }", json!({})).await;
    assert_eq!(body["data"]["health"], "all good", "{body}");
}

#[tokio::test]
async fn a_post_sends_its_body_and_delete_sends_no_query() {
    let (app, requests) = app().await;
    let body = app
        .graphql(
            "mutation { addPost(body: { title: \"Oats\", views: 3 }) { id title views } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["addPost"],
        json!({ "id": "p-3", "title": "Oats", "views": 3 }),
        "{body}"
    );
    let sent = last(&requests);
    assert_eq!(sent.method, Method::POST);
    assert_eq!(sent.body, json!({ "title": "Oats", "views": 3 }));
    assert_eq!(sent.headers["content-type"], "application/json");

    // A required argument in neither `query` nor `body` is refused before any call.
    let count = requests.lock().expect("the requests").len();
    let body = app
        .graphql(
            "mutation { addPost(query: { views: 3 }) { id } }",
            json!({}),
        )
        .await;
    assert!(body["data"]["addPost"].is_null(), "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"],
        "BadRequestException"
    );
    assert_eq!(requests.lock().expect("the requests").len(), count);

    let body = app
        .graphql(
            "mutation { removePost(params: { id: \"p-9\" }, query: { soft: true }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(body["data"]["removePost"]["id"], "p-9", "{body}");
    let sent = last(&requests);
    assert_eq!((sent.method, sent.query), (Method::DELETE, None));
}

#[tokio::test]
async fn a_path_parameter_that_would_walk_the_path_is_refused_before_any_call() {
    let (app, requests) = app().await;
    for id in ["..", ".", ""] {
        let body = app
            .graphql(
                "query($id: String!) { getPost(params: { id: $id }) { id } }",
                json!({ "id": id }),
            )
            .await;
        assert!(body["data"]["getPost"].is_null(), "{body}");
        assert_eq!(
            body["errors"][0]["extensions"]["errorType"],
            "BadRequestException"
        );
    }
    assert!(requests.lock().expect("the requests").is_empty());
}

#[tokio::test]
async fn an_endpoints_error_status_is_the_fields_error_and_the_rest_stands() {
    let (app, _requests) = app().await;
    let body = app
        .graphql(
            "{ missing(params: { id: \"p-0\" }) { id } health }",
            json!({}),
        )
        .await;
    assert!(body["data"]["missing"].is_null(), "{body}");
    assert_eq!(body["data"]["health"], "all good");
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"], "404",
        "{body}"
    );
    assert_eq!(body["errors"][0]["message"], "no such post");
    assert_eq!(body["errors"][0]["path"], json!(["missing"]));
}

#[tokio::test]
async fn an_http_field_of_a_model_type_is_answered_per_node() {
    let (app, requests) = app().await;
    app.create_farm("Hillside").await;
    let body = app
        .graphql("{ listFarms { items { name forecast } } }", json!({}))
        .await;
    assert_eq!(
        body["data"]["listFarms"]["items"][0],
        json!({ "name": "Hillside", "forecast": "sunny" }),
        "{body}"
    );
    assert_eq!(last(&requests).path, "/forecast");
}

/// What `tablegraph COMMAND --schema` prints for the @http schema.
fn printed(command: &str) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args([command, "--schema", SCHEMA])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("TABLEGRAPH_SCHEMA")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn plan_and_schema_show_amplifys_arguments_and_each_call() {
    let sdl = printed("schema");
    for line in [
        "getPost(params: QueryGetPostParamsInput!, query: QueryGetPostQueryInput): Post",
        "listPosts(query: QueryListPostsQueryInput!): [Post]",
        "addPost(query: MutationAddPostQueryInput, body: MutationAddPostBodyInput): Post",
        "input QueryGetPostParamsInput {",
    ] {
        assert!(sdl.contains(line), "{line} in:\n{sdl}");
    }
    let plan = printed("plan");
    assert!(plan.contains("GET http://${env}/posts/:id"), "{plan}");
    assert!(plan.contains("POST http://${env}/posts"), "{plan}");
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_an_endless_answer_is_refused_at_its_limit() {
    let (app, requests) = app().await;
    // Another origin, which records whatever reaches it.
    let elsewhere: Requests = Arc::default();
    let router = axum::Router::new()
        .fallback(endpoint)
        .with_state(elsewhere.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let other = listener.local_addr().expect("an address").to_string();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let (_, body) = app
        .graphql_with(
            &[
                ("x-elsewhere", other.as_str()),
                ("x-api-key", "the caller's"),
            ],
            "{ missing(params: { id: \"redirect\" }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"], "302",
        "{body}"
    );
    assert_eq!(last(&requests).path, "/missing/redirect");
    assert!(
        elsewhere.lock().expect("the requests").is_empty(),
        "the redirect was followed to another origin"
    );

    let body = app
        .graphql("{ missing(params: { id: \"endless\" }) { id } }", json!({}))
        .await;
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("more than 6 MB"), "{body}");
}
