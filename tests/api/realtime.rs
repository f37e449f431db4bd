//! AppSync's real-time protocol, spoken as a raw client: the handshake's credentials (in a
//! `header-<base64url>` subprotocol, as Amplify v6 sends them, or in the `header` query
//! parameter), `connection_init` → `connection_ack` and `ka`, `start` → `start_ack` and `data`,
//! `stop` → `complete`, and each mistake answered as AppSync answers it, the server unharmed.

use std::time::Duration;

use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tablegraph::config::HttpConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::helpers::{TestApp, api_key_and_tokens, spawn_app_with, user_token};

/// A bound on waiting for the server, so that a missing message fails the test instead of
/// hanging it. Nothing waits for it to pass.
const PATIENCE: Duration = Duration::from_secs(20);
const API_KEY: &str = "da2-realtime";

/// How a client hands over its credentials.
#[derive(Clone, Copy)]
pub(crate) enum Via {
    /// In a `header-<base64url>` subprotocol beside `graphql-ws` (Amplify v6).
    Subprotocol,
    /// In the `header` and `payload` query parameters (AppSync's documented handshake).
    Query,
}

#[derive(Debug)]
pub(crate) enum Received {
    Json(Value),
    Closed(u16),
}

pub(crate) struct Client {
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
}

impl Client {
    pub(crate) async fn open(app: &TestApp, path: &str, header: Option<&str>, via: Via) -> Client {
        let mut url = format!("ws://{}{path}", app.address);
        let mut protocols = "graphql-ws".to_owned();
        if let Some(header) = header {
            match via {
                Via::Subprotocol => {
                    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header);
                    protocols.push_str(&format!(", header-{encoded}"));
                }
                Via::Query => {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(header);
                    let encoded: String =
                        url::form_urlencoded::byte_serialize(encoded.as_bytes()).collect();
                    url.push_str(&format!("?header={encoded}&payload=e30%3D"));
                }
            }
        }
        let mut request = url.into_client_request().expect("a WebSocket request");
        request.headers_mut().insert(
            "sec-websocket-protocol",
            protocols.parse().expect("a header value"),
        );
        let (socket, response) = tokio_tungstenite::connect_async(request)
            .await
            .expect("the server upgrades the connection");
        assert_eq!(response.headers()["sec-websocket-protocol"], "graphql-ws");
        Client { socket }
    }

    /// Opens a connection with `header`'s credentials and has it acknowledged; its first `ka`
    /// follows the acknowledgement.
    pub(crate) async fn connected(app: &TestApp, header: &Value, via: Via) -> Client {
        let mut client =
            Client::open(app, "/graphql/realtime", Some(&header.to_string()), via).await;
        client.send(json!({ "type": "connection_init" })).await;
        let ack = client.json().await;
        assert_eq!(ack["type"], "connection_ack", "{ack}");
        assert_eq!(ack["payload"]["connectionTimeoutMs"], 300_000, "{ack}");
        let ka: Value = serde_json::from_str(&client.raw().await).expect("JSON");
        assert_eq!(ka, json!({ "type": "ka" }));
        client
    }

    pub(crate) async fn send(&mut self, message: Value) {
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .expect("the message is sent");
    }

    /// A `start` as Amplify sends it: the request as a JSON string, credentials beside it.
    pub(crate) async fn start(
        &mut self,
        id: &str,
        query: &str,
        variables: Value,
        authorization: &Value,
    ) {
        let data = json!({ "query": query, "variables": variables }).to_string();
        self.send(json!({
            "id": id,
            "type": "start",
            "payload": { "data": data, "extensions": { "authorization": authorization } },
        }))
        .await;
    }

    /// A `start` that must be acknowledged: its `start_ack` is the next message.
    pub(crate) async fn started(
        &mut self,
        id: &str,
        query: &str,
        variables: Value,
        authorization: &Value,
    ) {
        self.start(id, query, variables, authorization).await;
        let ack = self.json().await;
        assert_eq!(ack, json!({ "type": "start_ack", "id": id }));
    }

    /// The next message, `ka`s included, as its text form (or the close).
    pub(crate) async fn raw(&mut self) -> String {
        loop {
            let message = tokio::time::timeout(PATIENCE, self.socket.next())
                .await
                .expect("the server sends something in time")
                .expect("the connection is open")
                .expect("a WebSocket message");
            match message {
                Message::Text(text) => return text.to_string(),
                Message::Close(frame) => {
                    let code: u16 = frame.map_or(1005, |f| f.code.into());
                    return format!("closed {code}");
                }
                _ => continue,
            }
        }
    }

    /// The next message that is not a `ka`.
    pub(crate) async fn receive(&mut self) -> Received {
        loop {
            let text = self.raw().await;
            if let Some(code) = text.strip_prefix("closed ") {
                return Received::Closed(code.parse().expect("a close code"));
            }
            let value: Value = serde_json::from_str(&text).expect("JSON");
            if value["type"] != "ka" {
                return Received::Json(value);
            }
        }
    }

    pub(crate) async fn json(&mut self) -> Value {
        match self.receive().await {
            Received::Json(value) => value,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    pub(crate) async fn closed(&mut self) -> u16 {
        match self.receive().await {
            Received::Closed(code) => code,
            other => panic!("expected the connection to close, got {other:?}"),
        }
    }
}

fn api_key_header() -> Value {
    json!({ "host": "127.0.0.1", "x-api-key": API_KEY })
}

async fn create_farm(app: &TestApp, name: &str) {
    let (status, body) = app
        .graphql_with(
            &[("x-api-key", API_KEY)],
            "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
            json!({ "n": name }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("errors").is_none(), "{body}");
}

const BY_FILTER: &str = "subscription OnCreateFarm($filter: ModelSubscriptionFarmFilterInput) {
  onCreateFarm(filter: $filter) { name }
}";

#[tokio::test]
async fn a_subscription_receives_exactly_the_events_its_filter_chooses_and_stop_completes_it() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    for (round, via) in [Via::Subprotocol, Via::Query].into_iter().enumerate() {
        let mut client = Client::connected(&app, &api_key_header(), via).await;
        let filter = json!({ "filter": { "name": { "beginsWith": "Hi" } } });
        client
            .started("1", BY_FILTER, filter, &api_key_header())
            .await;
        app.events.until_subscribers(1).await;
        for name in ["Acre", "Hilltop", "Bell", "Hillside"] {
            create_farm(&app, &format!("{name} {round}")).await;
        }
        for name in ["Hilltop", "Hillside"] {
            let name = format!("{name} {round}");
            assert_eq!(
                client.json().await,
                json!({ "type": "data", "id": "1", "payload": { "data": {
                    "onCreateFarm": { "name": name }
                } } })
            );
        }
        client.send(json!({ "type": "stop", "id": "1" })).await;
        assert_eq!(
            client.json().await,
            json!({ "type": "complete", "id": "1" })
        );
        app.events.until_at_most_subscribers(0).await;
    }
}

#[tokio::test]
async fn a_user_pool_token_without_bearer_opens_the_connection_at_graphql_too() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    let token = user_token("alice", &[]);
    let header = json!({ "host": "127.0.0.1", "Authorization": token });
    // At `/graphql`, the credentials in the handshake say which protocol the socket speaks.
    let mut client = Client::open(&app, "/graphql", Some(&header.to_string()), Via::Query).await;
    client.send(json!({ "type": "connection_init" })).await;
    assert_eq!(client.json().await["type"], "connection_ack");
    client
        .start(
            "a",
            "subscription { onCreateFarm { name } }",
            json!({}),
            &header,
        )
        .await;
    // `start_ack` comes once the subscription is in place: a write from then on reaches it
    // (the embedded store's reader, resting while nobody subscribed, has opened the stream).
    assert_eq!(client.json().await["type"], "start_ack");
    create_farm(&app, "Ridge").await;
    let event = client.json().await;
    assert_eq!(
        event["payload"]["data"]["onCreateFarm"]["name"], "Ridge",
        "{event}"
    );
}

#[tokio::test]
async fn handshake_mistakes_are_answered_with_connection_error_and_close() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    let encoded =
        |header: Value| base64::engine::general_purpose::STANDARD.encode(header.to_string());
    for (header, error_type, code) in [
        ("not base64 at all!".to_owned(), "BadRequestException", 4400),
        (
            base64::engine::general_purpose::STANDARD.encode("[1, 2]"),
            "BadRequestException",
            4400,
        ),
        (
            encoded(json!({ "x-api-key": API_KEY })),
            "BadRequestException",
            4400,
        ),
        (
            encoded(json!({ "host": "127.0.0.1", "x-api-key": "da2-wrong" })),
            "UnauthorizedException",
            4401,
        ),
    ] {
        // The raw header, as a broken client would send it.
        let url = format!(
            "ws://{}/graphql/realtime?header={}&payload=e30%3D",
            app.address,
            url::form_urlencoded::byte_serialize(header.as_bytes()).collect::<String>()
        );
        let mut request = url.into_client_request().expect("a WebSocket request");
        request.headers_mut().insert(
            "sec-websocket-protocol",
            "graphql-ws".parse().expect("a value"),
        );
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("the server upgrades the connection");
        let mut client = Client { socket };
        client.send(json!({ "type": "connection_init" })).await;
        let error = client.json().await;
        assert_eq!(error["type"], "connection_error", "{header}: {error}");
        assert_eq!(
            error["payload"]["errors"][0]["errorType"], error_type,
            "{error}"
        );
        assert_eq!(client.closed().await, code, "{header}");
    }
}

#[tokio::test]
async fn protocol_mistakes_are_answered_as_appsync_answers_them_and_the_server_carries_on() {
    let app = spawn_app_with(HttpConfig {
        max_subscriptions_per_connection: 2,
        ..api_key_and_tokens(API_KEY)
    })
    .await;
    // A `start` before `connection_init`.
    let header = api_key_header().to_string();
    let mut early = Client::open(&app, "/graphql/realtime", Some(&header), Via::Subprotocol).await;
    early
        .start(
            "e",
            "subscription { onCreateFarm { name } }",
            json!({}),
            &api_key_header(),
        )
        .await;
    let error = early.json().await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["id"], "e");
    assert_eq!(
        error["payload"]["errors"][0]["errorType"],
        "BadRequestException"
    );

    let mut client = Client::connected(&app, &api_key_header(), Via::Subprotocol).await;
    let error_type = |message: &Value| message["payload"]["errors"][0]["errorType"].clone();
    // A message type the protocol does not have.
    client.send(json!({ "type": "subscribe", "id": "x" })).await;
    let error = client.json().await;
    assert_eq!(
        (error["type"].clone(), error_type(&error)),
        (json!("error"), json!("UnsupportedOperation"))
    );
    // Not JSON.
    client
        .socket
        .send(Message::text("{nope"))
        .await
        .expect("sent");
    assert_eq!(error_type(&client.json().await), "BadRequestException");
    // A query is not a subscription.
    client
        .start(
            "q",
            "query { listFarms { edges { node { name } } } }",
            json!({}),
            &api_key_header(),
        )
        .await;
    let error = client.json().await;
    assert_eq!(
        (error["id"].clone(), error_type(&error)),
        (json!("q"), json!("UnsupportedOperation"))
    );
    // A document that does not validate: an error, and no start_ack.
    client
        .start(
            "v",
            "subscription { onCreateFarm { nope } }",
            json!({}),
            &api_key_header(),
        )
        .await;
    let error = client.json().await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["id"], "v");
    // Credentials of its own that do not hold.
    let wrong = json!({ "host": "127.0.0.1", "x-api-key": "da2-wrong" });
    client
        .start(
            "w",
            "subscription { onCreateFarm { name } }",
            json!({}),
            &wrong,
        )
        .await;
    let error = client.json().await;
    assert_eq!(
        (error["id"].clone(), error_type(&error)),
        (json!("w"), json!("UnauthorizedException"))
    );
    // The same id twice, and more than the connection may run.
    for id in ["1", "2"] {
        client
            .started(
                id,
                "subscription { onCreateFarm { name } }",
                json!({}),
                &api_key_header(),
            )
            .await;
    }
    client
        .start(
            "1",
            "subscription { onCreateFarm { name } }",
            json!({}),
            &api_key_header(),
        )
        .await;
    assert_eq!(error_type(&client.json().await), "DuplicatedOperationError");
    client
        .start(
            "3",
            "subscription { onCreateFarm { name } }",
            json!({}),
            &api_key_header(),
        )
        .await;
    let error = client.json().await;
    assert_eq!(
        (error["id"].clone(), error_type(&error)),
        (json!("3"), json!("MaxSubscriptionsReachedError"))
    );
    // Stopping one makes room; the connection still delivers.
    client.send(json!({ "type": "stop", "id": "2" })).await;
    assert_eq!(
        client.json().await,
        json!({ "type": "complete", "id": "2" })
    );
    // Its place in the hub is given up, so that the count below is of "1" and "3".
    app.events.until_at_most_subscribers(1).await;
    client
        .started(
            "3",
            "subscription { onCreateFarm { name } }",
            json!({}),
            &api_key_header(),
        )
        .await;
    app.events.until_subscribers(2).await;
    create_farm(&app, "After").await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let event = client.json().await;
        assert_eq!(
            event["payload"]["data"]["onCreateFarm"]["name"], "After",
            "{event}"
        );
        ids.push(event["id"].as_str().unwrap_or_default().to_owned());
    }
    ids.sort();
    assert_eq!(ids, ["1", "3"]);
    // The server is unharmed.
    let health = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(health.status(), 200);
    // A plain GET of the real-time endpoint is told what it is.
    let plain = app
        .client
        .get(app.url("/graphql/realtime"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(plain.status(), 400);
}

#[tokio::test]
async fn a_connection_whose_token_expires_is_told_and_closed() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    let header = json!({ "host": "127.0.0.1", "Authorization": brief_token("brief", 4) });
    let mut client = Client::connected(&app, &header, Via::Subprotocol).await;
    // The server's own timer ends it; PATIENCE only bounds the wait.
    let error = client.json().await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(
        error["payload"]["errors"][0]["errorType"],
        "UnauthorizedException"
    );
    assert_eq!(client.closed().await, 4403);
}

#[tokio::test]
async fn an_owner_rule_chooses_the_events_of_an_amplify_app_s_codegen_subscription() {
    let app = crate::helpers::spawn_app_with_schema_and(
        "tests/fixtures/amplify/quick-notes/schema.graphql",
        api_key_and_tokens(API_KEY),
    )
    .await;
    let (alice, bob) = (user_token("alice", &[]), user_token("bob", &[]));
    // As aws-amplify sends a user pool's token: no `Bearer`.
    let header = json!({ "host": "127.0.0.1", "Authorization": alice });
    let mut client = Client::connected(&app, &header, Via::Subprotocol).await;
    client
        .start(
            "notes",
            "subscription OnCreateNote {\n  onCreateNote {\n    id\n    title\n  }\n}",
            json!({}),
            &header,
        )
        .await;
    assert_eq!(client.json().await["type"], "start_ack");
    app.events.until_subscribers(1).await;
    for (token, title) in [(&bob, "Bob's"), (&alice, "Alice's")] {
        let (status, body) = app
            .graphql_with(
                &[("authorization", token)],
                "mutation($t: String!) { createNote(input: { title: $t, text: \"x\" }) { id } }",
                json!({ "t": title }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(body.get("errors").is_none(), "{body}");
    }
    // Bob's note came first; Alice is told of hers only.
    let event = client.json().await;
    assert_eq!(
        event["payload"]["data"]["onCreateNote"]["title"], "Alice's",
        "{event}"
    );
}

#[tokio::test]
async fn a_socket_that_never_sends_connection_init_is_closed_with_4408() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    let header = api_key_header().to_string();
    let mut idle = Client::open(&app, "/graphql/realtime", Some(&header), Via::Subprotocol).await;
    // The server's own timer (10 s) ends it; PATIENCE only bounds the wait.
    assert_eq!(idle.closed().await, 4408);
}

#[tokio::test]
async fn a_subscription_that_ends_on_an_error_says_so_and_a_stopped_id_can_be_used_again() {
    let mut http = api_key_and_tokens(API_KEY);
    http.graphql.max_event_bytes = 400;
    let app = spawn_app_with(http).await;
    let mut client = Client::connected(&app, &api_key_header(), Via::Subprotocol).await;
    let query = "subscription { onCreateFarm { name } }";
    // Started, stopped, and started again under the same id.
    client
        .started("1", query, json!({}), &api_key_header())
        .await;
    client.send(json!({ "type": "stop", "id": "1" })).await;
    assert_eq!(
        client.json().await,
        json!({ "type": "complete", "id": "1" })
    );
    app.events.until_at_most_subscribers(0).await;
    client
        .started("1", query, json!({}), &api_key_header())
        .await;
    app.events.until_subscribers(1).await;
    create_farm(&app, "Small").await;
    let event = client.json().await;
    assert_eq!(
        event["payload"]["data"]["onCreateFarm"]["name"], "Small",
        "{event}"
    );
    // An event over --max-event-bytes ends the subscription with an `error`, which aws-amplify
    // hands its subscriber (a `data` without data it would drop).
    create_farm(&app, &"L".repeat(600)).await;
    let error = client.json().await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["id"], "1");
    assert_eq!(
        error["payload"]["errors"][0]["errorType"], "EventTooLarge",
        "{error}"
    );
    // The id is free again.
    client
        .started("1", query, json!({}), &api_key_header())
        .await;
}

/// A token of `sub` that expires in `seconds`.
fn brief_token(sub: &str, seconds: u64) -> String {
    tablegraph::auth::hs256_token(
        crate::helpers::RULES_SECRET,
        &tablegraph::auth::TokenClaims {
            issuer: crate::helpers::RULES_ISSUER.to_owned(),
            audience: None,
            subject: sub.to_owned(),
            groups: Vec::new(),
            expires_in: Duration::from_secs(seconds),
        },
    )
    .expect("a token")
}

#[tokio::test]
async fn a_subscription_started_with_its_own_token_ends_when_that_token_expires() {
    let app = spawn_app_with(api_key_and_tokens(API_KEY)).await;
    // The connection's credentials are an API key, which does not expire.
    let mut client = Client::connected(&app, &api_key_header(), Via::Subprotocol).await;
    let own = json!({ "host": "127.0.0.1", "Authorization": brief_token("brief", 3) });
    let query = "subscription { onCreateFarm { name } }";
    client.started("brief", query, json!({}), &own).await;
    // The server's own timer ends it; PATIENCE only bounds the wait.
    let error = client.json().await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["id"], "brief", "{error}");
    assert_eq!(
        error["payload"]["errors"][0]["errorType"], "UnauthorizedException",
        "{error}"
    );
    // The connection lives on, and the expired subscription receives nothing more: the next
    // message is the event of a subscription started after it.
    client
        .started("key", query, json!({}), &api_key_header())
        .await;
    create_farm(&app, "After Expiry").await;
    let event = client.json().await;
    assert_eq!(event["type"], "data", "{event}");
    assert_eq!(event["id"], "key", "{event}");
    // Only the subscription with the API key is left.
    app.events.until_at_most_subscribers(1).await;
}

#[tokio::test]
async fn starts_that_are_refused_are_each_answered_and_hold_no_slot() {
    let mut http = api_key_and_tokens(API_KEY);
    http.max_subscriptions_per_connection = 3;
    let app = spawn_app_with(http).await;
    let mut client = Client::connected(&app, &api_key_header(), Via::Subprotocol).await;
    let deep = format!(
        "subscription {{ onCreateFarm(filter: {}{{}}{}) {{ name }} }}",
        "{ and: [".repeat(1_000),
        "] }".repeat(1_000)
    );
    let refused = [
        // Does not parse.
        "subscription { onCreateFarm { name }".to_owned(),
        // Over the nesting limit, before it is parsed.
        deep,
        // Parses, but does not validate: refused as it runs.
        "subscription { onCreateFarm { noSuchField } }".to_owned(),
    ];
    // Ten times the connection's three slots.
    for round in 0..10 {
        for (n, query) in refused.iter().enumerate() {
            let id = format!("{round}-{n}");
            client.start(&id, query, json!({}), &api_key_header()).await;
            let error = client.json().await;
            assert_eq!(error["type"], "error", "{id}: {error}");
            assert_eq!(error["id"], id.as_str(), "{error}");
            assert!(
                error["payload"]["errors"][0]["errorType"].is_string(),
                "{error}"
            );
        }
    }
    // Every slot is free: three subscriptions start.
    for id in ["a", "b", "c"] {
        client
            .started(
                id,
                "subscription { onCreateFarm { name } }",
                json!({}),
                &api_key_header(),
            )
            .await;
    }
    create_farm(&app, "Still Serving").await;
    let mut ids: Vec<String> = Vec::new();
    for _ in 0..3 {
        let event = client.json().await;
        assert_eq!(event["type"], "data", "{event}");
        ids.push(event["id"].as_str().unwrap_or_default().to_owned());
    }
    ids.sort();
    assert_eq!(ids, ["a", "b", "c"]);
}
