//! One admission path for every transport: each hostile input (no credentials, an expired
//! token, brackets nested 2,000 deep, a document over the token limit, a name of hundreds of
//! kilobytes, a syntax error) is sent through each transport (POST, GET, GET by a persisted
//! query's hash, APQ registration over POST, graphql-transport-ws, AppSync's real-time `start`,
//! SSE in both modes), and each transport refuses it the same way; nothing refused is kept as a
//! persisted query, and the server answers afterwards.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::helpers::{
    RULES_ISSUER, RULES_SECRET, TestApp, api_key_and_tokens, spawn_app_with,
    spawn_app_with_schema_and, user_token,
};
use crate::persisted::persisted;
use crate::realtime::{Client as RealtimeClient, Via};
use crate::sse::{self, Events};
use crate::subscriptions::{Client as WsClient, Received as WsReceived};

const API_KEY: &str = "da2-admission";
const QUERY: &str = "{ listFarms { edges { node { id name } } } }";

/// How a request presents itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credentials {
    ApiKey,
    None,
    /// A token of the right issuer and key, expired an hour ago.
    Expired,
}

/// What is sent: credentials and a document.
#[derive(Debug, Clone)]
struct Input {
    name: &'static str,
    credentials: Credentials,
    /// The document sent in a request body or a WebSocket message.
    body: String,
    /// The same kind of document sized to fit in a URL (the `http` crate's URIs hold at most
    /// 64 KB).
    url: String,
}

/// How a transport answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Refused for its credentials (a 401, a `4403` close, a `connection_error`).
    Unauthorized,
    /// A request error: its message, and whether it names a limit (`QueryLimitExceeded`).
    Refused { message: String, limit: bool },
}

#[derive(Debug, Clone, Copy)]
enum Transport {
    Post,
    Get,
    /// A GET by a persisted query's hash (with its query too, as Apollo's retry sends it,
    /// where the document is new).
    GetByHash,
    /// A POST of the query with its hash: APQ's registration.
    PostByHash,
    GraphqlTransportWs,
    Realtime,
    SseDistinct,
    SseSingle,
}

const TRANSPORTS: [Transport; 8] = [
    Transport::Post,
    Transport::Get,
    Transport::GetByHash,
    Transport::PostByHash,
    Transport::GraphqlTransportWs,
    Transport::Realtime,
    Transport::SseDistinct,
    Transport::SseSingle,
];

fn expired_token() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({ "sub": "ann", "iss": RULES_ISSUER, "exp": now - 3600, "iat": now - 7200 }),
        &jsonwebtoken::EncodingKey::from_secret(RULES_SECRET.as_bytes()),
    )
    .expect("a token")
}

fn nested(depth: usize) -> String {
    format!(
        "{{ farm(id: {}\"x\"{}) {{ id }} }}",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

/// A document of `tokens` names inside one selection set.
fn many_tokens(tokens: usize) -> String {
    format!("{{ __typename {}}}", "a ".repeat(tokens))
}

fn long_name(bytes: usize) -> String {
    format!("query {} {{ __typename }}", "N".repeat(bytes))
}

fn inputs() -> Vec<Input> {
    let same = |name, credentials, document: String| Input {
        name,
        credentials,
        url: document.clone(),
        body: document,
    };
    vec![
        same("no credentials", Credentials::None, QUERY.to_owned()),
        same("an expired token", Credentials::Expired, QUERY.to_owned()),
        same("nesting 2,000 deep", Credentials::ApiKey, nested(2_000)),
        Input {
            name: "over the token limit",
            credentials: Credentials::ApiKey,
            // 0.9 MB in a body; 40 KB (20,000 tokens) in a URL.
            body: many_tokens(450_000),
            url: many_tokens(20_000),
        },
        Input {
            name: "a long operation name",
            credentials: Credentials::ApiKey,
            body: long_name(500_000),
            url: long_name(30_000),
        },
        same(
            "a syntax error",
            Credentials::ApiKey,
            "{ farm(id: \"x\") { id }".to_owned(),
        ),
    ]
}

/// The headers of `credentials`.
fn headers(credentials: Credentials) -> Vec<(&'static str, String)> {
    match credentials {
        Credentials::ApiKey => vec![("x-api-key", API_KEY.to_owned())],
        Credentials::None => Vec::new(),
        Credentials::Expired => vec![("authorization", format!("Bearer {}", expired_token()))],
    }
}

/// The outcome of an HTTP answer whose body is a GraphQL response.
async fn http_outcome(response: reqwest::Response) -> Outcome {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if status == 401 {
        assert_eq!(
            body["errors"][0]["extensions"]["errorType"], "UnauthorizedException",
            "{body}"
        );
        return Outcome::Unauthorized;
    }
    assert!(status == 200 || status == 400, "{status}: {body}");
    assert!(body.get("data").is_none(), "nothing ran: {body}");
    errors_outcome(&body["errors"])
}

/// The outcome of a GraphQL `errors` list.
fn errors_outcome(errors: &Value) -> Outcome {
    let error = &errors[0];
    Outcome::Refused {
        message: error["message"].as_str().unwrap_or_default().to_owned(),
        limit: error["extensions"]["errorType"] == "QueryLimitExceeded"
            || error["errorType"] == "QueryLimitExceeded",
    }
}

async fn send(app: &TestApp, transport: Transport, input: &Input) -> Outcome {
    match transport {
        Transport::Post => post(app, input, json!({ "query": input.body })).await,
        Transport::PostByHash => {
            let body = json!({ "query": input.body, "extensions": persisted(&input.body) });
            post(app, input, body).await
        }
        Transport::Get => get(app, input, &[("query", input.url.clone())]).await,
        Transport::GetByHash if input.url == QUERY => {
            // Held already (registered with credentials): the hash alone.
            let extensions = persisted(QUERY).to_string();
            get(app, input, &[("extensions", extensions)]).await
        }
        Transport::GetByHash => {
            let extensions = persisted(&input.url).to_string();
            let parameters = [("query", input.url.clone()), ("extensions", extensions)];
            get(app, input, &parameters).await
        }
        Transport::GraphqlTransportWs => transport_ws(app, input).await,
        Transport::Realtime => realtime(app, input).await,
        Transport::SseDistinct => sse_distinct(app, input).await,
        Transport::SseSingle => sse_single(app, input).await,
    }
}

async fn post(app: &TestApp, input: &Input, body: Value) -> Outcome {
    let mut request = app.client.post(app.url("/graphql")).json(&body);
    for (name, value) in headers(input.credentials) {
        request = request.header(name, value);
    }
    http_outcome(request.send().await.expect("an answer")).await
}

async fn get(app: &TestApp, input: &Input, parameters: &[(&str, String)]) -> Outcome {
    let mut request = app.client.get(app.url("/graphql")).query(parameters);
    for (name, value) in headers(input.credentials) {
        request = request.header(name, value);
    }
    http_outcome(request.send().await.expect("an answer")).await
}

async fn transport_ws(app: &TestApp, input: &Input) -> Outcome {
    let payload = match input.credentials {
        Credentials::ApiKey => json!({ "x-api-key": API_KEY }),
        Credentials::None => json!({}),
        Credentials::Expired => json!({ "Authorization": format!("Bearer {}", expired_token()) }),
    };
    let mut client = WsClient::open(app.address, "graphql-transport-ws").await;
    client
        .send(json!({ "type": "connection_init", "payload": payload }))
        .await;
    match client.receive().await {
        WsReceived::Closed(4403, _) => return Outcome::Unauthorized,
        WsReceived::Json(ack) if ack["type"] == "connection_ack" => {}
        other => panic!("{}: expected connection_ack, got {other:?}", input.name),
    }
    client.subscribe("1", &input.body, json!({})).await;
    let payload = client.next_of("1").await;
    assert!(payload["data"].is_null(), "nothing ran: {payload}");
    errors_outcome(&payload["errors"])
}

async fn realtime(app: &TestApp, input: &Input) -> Outcome {
    let header = match input.credentials {
        Credentials::ApiKey => json!({ "host": "127.0.0.1", "x-api-key": API_KEY }),
        Credentials::None => json!({ "host": "127.0.0.1" }),
        Credentials::Expired => json!({ "host": "127.0.0.1", "Authorization": expired_token() }),
    };
    let mut client = RealtimeClient::open(
        app,
        "/graphql/realtime",
        Some(&header.to_string()),
        Via::Subprotocol,
    )
    .await;
    client.send(json!({ "type": "connection_init" })).await;
    let init = client.json().await;
    if init["type"] == "connection_error" {
        assert_eq!(
            init["payload"]["errors"][0]["errorType"], "UnauthorizedException",
            "{init}"
        );
        return Outcome::Unauthorized;
    }
    assert_eq!(init["type"], "connection_ack", "{init}");
    // With the connection's credentials as its own, as Amplify sends them.
    client.start("1", &input.body, json!({}), &header).await;
    let answer = client.json().await;
    assert_eq!(answer["type"], "error", "{}: {answer}", input.name);
    assert_eq!(answer["id"], "1", "{answer}");
    errors_outcome(&answer["payload"]["errors"])
}

async fn sse_distinct(app: &TestApp, input: &Input) -> Outcome {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .header("accept", "text/event-stream")
        .json(&json!({ "query": input.body }));
    for (name, value) in headers(input.credentials) {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("an answer");
    if response.status() == 401 {
        return Outcome::Unauthorized;
    }
    let mut events = Events::new(response);
    let (event, data) = events.next(1).await.remove(0);
    assert_eq!(event, "next", "{data}");
    assert!(data["data"].is_null(), "nothing ran: {data}");
    errors_outcome(&data["errors"])
}

async fn sse_single(app: &TestApp, input: &Input) -> Outcome {
    let mut reserve = app.client.put(app.url("/graphql"));
    for (name, value) in headers(input.credentials) {
        reserve = reserve.header(name, value);
    }
    let reserved = reserve.send().await.expect("an answer");
    if reserved.status() == 401 {
        return Outcome::Unauthorized;
    }
    assert_eq!(reserved.status(), 201);
    let token = reserved.text().await.expect("the token");
    let mut events = Events::new(sse::open(app, &token).await);
    let mut operation = app
        .client
        .post(app.url("/graphql"))
        .header(sse::TOKEN, &token)
        .json(&json!({ "query": input.body, "extensions": { "operationId": "op" } }));
    for (name, value) in headers(input.credentials) {
        operation = operation.header(name, value);
    }
    let accepted = operation.send().await.expect("an answer");
    assert_eq!(accepted.status(), 202, "{}", input.name);
    let (event, data) = events.next(1).await.remove(0);
    assert_eq!(event, "next", "{data}");
    assert_eq!(data["id"], "op", "{data}");
    errors_outcome(&data["payload"]["errors"])
}

/// What every transport must answer `input`.
fn expected(input: &Input) -> Outcome {
    let limit = |message: &str| Outcome::Refused {
        message: message.to_owned(),
        limit: true,
    };
    match input.name {
        "no credentials" | "an expired token" => Outcome::Unauthorized,
        "nesting 2,000 deep" => {
            limit("the document nests its brackets more than 128 deep; at most 128 are allowed")
        }
        "over the token limit" => {
            limit("the document has more than 15000 tokens; at most 15000 are allowed")
        }
        // The name's length differs between a body and a URL: only the start is compared.
        "a long operation name" => limit("a name of"),
        _ => Outcome::Refused {
            message: "syntax".to_owned(),
            limit: false,
        },
    }
}

/// Whether `outcome` is what `expected` says (a name's refusal by its start, a syntax error by
/// its being one).
fn matches(outcome: &Outcome, expected: &Outcome) -> bool {
    match (outcome, expected) {
        (
            Outcome::Refused { message, limit },
            Outcome::Refused {
                message: wanted,
                limit: wanted_limit,
            },
        ) if wanted == "syntax" => !limit && !wanted_limit && message.contains("expected"),
        (
            Outcome::Refused { message, limit },
            Outcome::Refused {
                message: wanted,
                limit: true,
            },
        ) if wanted == "a name of" => *limit && message.starts_with(wanted),
        (outcome, expected) => outcome == expected,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transport_refuses_each_hostile_input_the_same_way_and_the_server_lives_on() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    let (status, registered) = app
        .graphql_with(&[("x-api-key", API_KEY)], QUERY, json!({}))
        .await;
    assert_eq!(status, 200, "{registered}");
    // QUERY held by its hash, for the GET by hash of the credential cases.
    let (status, _) = post_json(
        &app,
        json!({ "query": QUERY, "extensions": persisted(QUERY) }),
    )
    .await;
    assert_eq!(status, 200);
    for input in inputs() {
        let wanted = expected(&input);
        for transport in TRANSPORTS {
            let outcome = send(&app, transport, &input).await;
            assert!(
                matches(&outcome, &wanted),
                "{} over {transport:?}: {outcome:?}, expected {wanted:?}",
                input.name
            );
        }
    }
    // None of the refused documents is held by its hash.
    for input in inputs().iter().filter(|input| input.body != QUERY) {
        for document in [&input.body, &input.url] {
            let (_, body) = post_json(&app, json!({ "extensions": persisted(document) })).await;
            assert_eq!(
                body["errors"][0]["message"], "PersistedQueryNotFound",
                "{}: {body}",
                input.name
            );
        }
    }
    let (status, alive) = app
        .graphql_with(&[("x-api-key", API_KEY)], "{ __typename }", json!({}))
        .await;
    assert_eq!(
        (status, &alive["data"]),
        (200, &json!({ "__typename": "Query" }))
    );
}

#[tokio::test]
async fn a_get_by_hash_runs_with_the_caller_s_own_identity() {
    let app =
        spawn_app_with_schema_and("examples/notes/schema.graphql", api_key_and_tokens(API_KEY))
            .await;
    let ann = format!("Bearer {}", user_token("ann", &[]));
    let (_, created) = app
        .graphql_with(
            &[("authorization", ann.as_str())],
            "mutation { createNote(input: { title: \"Ann's\" }) { id } }",
            json!({}),
        )
        .await;
    let id = created["data"]["createNote"]["id"]
        .as_str()
        .expect("a note")
        .to_owned();
    let query = "query Note($id: ID!) { note(id: $id) { title } }";
    let by_hash = |authorization: Option<&str>| {
        let mut request = app.client.get(app.url("/graphql")).query(&[
            ("extensions", persisted(query).to_string()),
            ("variables", json!({ "id": id }).to_string()),
        ]);
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        request.send()
    };
    // Registered by Ann over POST, then read by its hash alone, as Apollo's
    // `useGETForHashedQueries` does.
    let registered = app
        .client
        .post(app.url("/graphql"))
        .header("authorization", &ann)
        .json(&json!({ "query": query, "variables": { "id": id }, "extensions": persisted(query) }))
        .send()
        .await
        .expect("an answer");
    assert_eq!(registered.status(), 200);
    let owner = by_hash(Some(&ann)).await.expect("an answer");
    assert_eq!(owner.status(), 200);
    let body: Value = owner.json().await.expect("JSON");
    assert_eq!(body["data"]["note"]["title"], "Ann's", "{body}");
    let anonymous = by_hash(None).await.expect("an answer");
    assert_eq!(anonymous.status(), 401);
    let body: Value = anonymous.json().await.expect("JSON");
    assert!(body.get("data").is_none(), "{body}");
}

#[tokio::test]
async fn the_persisted_query_store_keeps_no_document_a_limit_refused() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    // Twelve distinct documents of 0.9 MB, each over the token limit, sent with their hashes.
    for n in 0..12 {
        let document = format!("{} # {n}", many_tokens(450_000));
        let body = json!({ "query": document, "extensions": persisted(&document) });
        let (_, answer) = post_json(&app, body).await;
        assert_eq!(
            answer["errors"][0]["extensions"]["errorType"], "QueryLimitExceeded",
            "{answer}"
        );
        let (_, answer) = post_json(&app, json!({ "extensions": persisted(&document) })).await;
        assert_eq!(answer["errors"][0]["message"], "PersistedQueryNotFound");
    }
    // A document that parses but does not validate is not kept either.
    let invalid = "{ noSuchField }";
    let body = json!({ "query": invalid, "extensions": persisted(invalid) });
    let (_, answer) = post_json(&app, body).await;
    assert!(answer.get("data").is_none(), "{answer}");
    let (_, answer) = post_json(&app, json!({ "extensions": persisted(invalid) })).await;
    assert_eq!(answer["errors"][0]["message"], "PersistedQueryNotFound");
}

async fn post_json(app: &TestApp, body: Value) -> (u16, Value) {
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("x-api-key", API_KEY)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}
