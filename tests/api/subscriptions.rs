//! Subscriptions over WebSocket (graphql-transport-ws, and the legacy graphql-ws), fed by the
//! table's change stream: mutations over HTTP, writes made outside the API, filters, nested
//! fields, edges, and the protocol's close codes.

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tablegraph::auth::AuthConfig;
use tablegraph::config::HttpConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::helpers::{TestApp, id_at, spawn_app, spawn_app_with, sse_events};
use crate::network::{run, serve, serve_with, start_dynoxide};

/// A bound on waiting for the server, so that a missing message fails the test instead of
/// hanging it. Nothing waits for it to pass.
const PATIENCE: Duration = Duration::from_secs(20);

/// What the server sent.
#[derive(Debug)]
pub(crate) enum Received {
    Json(Value),
    Closed(u16, String),
}

/// A GraphQL WebSocket client, as small as the protocol allows.
pub(crate) struct Client {
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
}

impl Client {
    pub(crate) async fn open(address: SocketAddr, protocol: &str) -> Client {
        let mut request = format!("ws://{address}/graphql")
            .into_client_request()
            .expect("a WebSocket request");
        request.headers_mut().insert(
            "sec-websocket-protocol",
            protocol.parse().expect("a header value"),
        );
        let (socket, response) = tokio_tungstenite::connect_async(request)
            .await
            .expect("the server upgrades the connection");
        assert_eq!(
            response.headers()["sec-websocket-protocol"],
            protocol,
            "the server speaks the protocol asked for"
        );
        Client { socket }
    }

    /// Opens a graphql-transport-ws connection and has it acknowledged.
    pub(crate) async fn connected(app: &TestApp, payload: Value) -> Client {
        Client::connected_at(app.address, payload).await
    }

    /// The same, to the server at `address`.
    pub(crate) async fn connected_at(address: SocketAddr, payload: Value) -> Client {
        let mut client = Client::open(address, "graphql-transport-ws").await;
        client
            .send(json!({ "type": "connection_init", "payload": payload }))
            .await;
        match client.receive().await {
            Received::Json(message) => assert_eq!(message["type"], "connection_ack", "{message}"),
            other => panic!("expected connection_ack, got {other:?}"),
        }
        client
    }

    pub(crate) async fn send(&mut self, message: Value) {
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .expect("the message is sent");
    }

    pub(crate) async fn subscribe(&mut self, id: &str, query: &str, variables: Value) {
        self.send(json!({
            "id": id,
            "type": "subscribe",
            "payload": { "query": query, "variables": variables },
        }))
        .await;
    }

    pub(crate) async fn receive(&mut self) -> Received {
        loop {
            let message = tokio::time::timeout(PATIENCE, self.socket.next())
                .await
                .expect("the server sends something in time")
                .expect("the connection is open")
                .expect("a WebSocket message");
            match message {
                Message::Text(text) => {
                    let value: Value = serde_json::from_str(&text).expect("JSON");
                    if value["type"] == "ping" || value["type"] == "ka" {
                        continue;
                    }
                    return Received::Json(value);
                }
                Message::Close(frame) => {
                    let (code, reason) = frame.map_or((1005, String::new()), |f| {
                        (f.code.into(), f.reason.to_string())
                    });
                    return Received::Closed(code, reason);
                }
                _ => continue,
            }
        }
    }

    /// The payload of the next `next` message of operation `id`.
    pub(crate) async fn next_of(&mut self, id: &str) -> Value {
        match self.receive().await {
            Received::Json(message) => {
                assert_eq!(message["type"], "next", "{message}");
                assert_eq!(message["id"], id, "{message}");
                message["payload"].clone()
            }
            other => panic!("expected an event for {id}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_batch_reaches_subscribers_as_one_event_per_node() {
    let app = spawn_app().await;
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe("1", "subscription { onCreateFarm { name } }", json!({}))
        .await;
    app.events.until_subscribers(1).await;
    let body = app
        .graphql(
            "mutation { createFarms(input: [{ name: \"East\" }, { name: \"West\" }]) { id } }",
            json!({}),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    // One transaction: DynamoDB Streams orders records per item, not across them.
    let mut names = Vec::new();
    for _ in 0..2 {
        names.push(client.next_of("1").await["data"]["onCreateFarm"]["name"].clone());
    }
    names.sort_by_key(|name| name.to_string());
    assert_eq!(names, [json!("East"), json!("West")]);
}

/// Records the server's reader took from the table's change stream so far.
fn stream_records_read(app: &TestApp) -> u64 {
    app.events
        .render_metrics()
        .lines()
        .find_map(|line| line.strip_prefix("tablegraph_stream_records_total "))
        .and_then(|value| value.parse().ok())
        .expect("the counter is reported")
}

#[tokio::test]
async fn the_embedded_stream_is_not_read_while_nobody_subscribes() {
    let app = spawn_app().await;
    tokio::time::timeout(PATIENCE, app.events.until_resting())
        .await
        .expect("with nobody subscribed the reader rests");
    let at_rest = stream_records_read(&app);
    // Written while nobody listens: for nobody, so the stream is not asked for them.
    for name in ["One", "Two", "Three"] {
        app.create_farm(name).await;
    }
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe("1", "subscription { onCreateFarm { name } }", json!({}))
        .await;
    app.events.until_subscribers(1).await;
    app.create_farm("Four").await;
    // The first event is the first write made once the subscription was in place.
    assert_eq!(
        client.next_of("1").await["data"]["onCreateFarm"]["name"],
        "Four"
    );
    let after_four = stream_records_read(&app);
    app.create_farm("Five").await;
    assert_eq!(
        client.next_of("1").await["data"]["onCreateFarm"]["name"],
        "Five"
    );
    let after_five = stream_records_read(&app);
    // The reader started again at the stream's newest records: the first three farms (and
    // their unique names) were never read, only what the fourth create wrote, which is as
    // much as the fifth wrote.
    assert!(after_four > at_rest);
    assert_eq!(
        after_four - at_rest,
        after_five - after_four,
        "only the fourth create's records"
    );
}

#[tokio::test]
async fn a_nested_create_reaches_subscribers_as_one_event_per_node_and_edge() {
    let app = spawn_app().await;
    let farm = app.create_farm("Old").await;
    let moved = app.create_animal("Cow", "Moved", &farm).await;
    let ann = app
        .create("User", json!({ "name": "Ann", "email": "ann@example.com" }))
        .await;
    let mut client = Client::connected(&app, json!({})).await;
    for (id, query) in [
        ("farm", "subscription { onCreateFarm { name } }"),
        ("cow", "subscription { onCreateCow { name } }"),
        ("moved", "subscription { onUpdateCow { name farmId } }"),
        ("goal", "subscription { onCreateGoal { title } }"),
        ("edge", "subscription { onGoalMembershipAdded { role } }"),
    ] {
        client.subscribe(id, query, json!({})).await;
    }
    app.events.until_subscribers(5).await;
    // Events of the writes above may still be on their way from the change stream: pass them
    // by, up to a marker written after them.
    app.create_farm("Ready").await;
    loop {
        match client.receive().await {
            Received::Json(message)
                if message["payload"]["data"]["onCreateFarm"]["name"] == "Ready" =>
            {
                break;
            }
            Received::Json(_) => {}
            other => panic!("expected an event, got {other:?}"),
        }
    }
    let body = app
        .graphql(
            "mutation($moved: ID!) { createFarm(input: { name: \"New\",
                cows: { create: [{ name: \"Born\" }], link: [$moved] } }) { id } }",
            json!({ "moved": moved }),
        )
        .await;
    let new = id_at(&body, "/data/createFarm/id");
    let body = app
        .graphql(
            "mutation($ann: ID!) { createGoal(input: { title: \"Top\", kind: OBJECTIVE,
                children: { create: [{ title: \"Sub\", kind: KEY_RESULT,
                    members: { add: [{ to: $ann, role: LEAD }] } }] } }) { id } }",
            json!({ "ann": ann }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    let mut events = Vec::new();
    for _ in 0..6 {
        match client.receive().await {
            Received::Json(message) => {
                assert_eq!(message["type"], "next", "{message}");
                events.push(format!("{} {}", message["id"], message["payload"]["data"]));
            }
            other => panic!("expected an event, got {other:?}"),
        }
    }
    events.sort();
    assert_eq!(
        events,
        [
            r#""cow" {"onCreateCow":{"name":"Born"}}"#.to_owned(),
            r#""edge" {"onGoalMembershipAdded":{"role":"LEAD"}}"#.to_owned(),
            r#""farm" {"onCreateFarm":{"name":"New"}}"#.to_owned(),
            r#""goal" {"onCreateGoal":{"title":"Sub"}}"#.to_owned(),
            r#""goal" {"onCreateGoal":{"title":"Top"}}"#.to_owned(),
            format!(r#""moved" {{"onUpdateCow":{{"farmId":"{new}","name":"Moved"}}}}"#),
        ]
    );
    // Nothing more: the next event is a later write's.
    app.create_farm("Marker").await;
    assert_eq!(
        client.next_of("farm").await,
        json!({ "data": { "onCreateFarm": { "name": "Marker" } } })
    );
}

#[tokio::test]
async fn a_created_node_reaches_a_subscriber_with_its_nested_fields() {
    let app = spawn_app().await;
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe(
            "1",
            "subscription { onCreateCow { name farm { name } } }",
            json!({}),
        )
        .await;
    app.events.until_subscribers(1).await;

    let farm = app.create_farm("Ridge").await;
    app.create_animal("Cow", "Daisy", &farm).await;
    assert_eq!(
        client.next_of("1").await,
        json!({ "data": { "onCreateCow": { "name": "Daisy", "farm": { "name": "Ridge" } } } })
    );
}

#[tokio::test]
async fn arguments_and_enhanced_filters_choose_the_events() {
    let app = spawn_app().await;
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe(
            "by-name",
            "subscription { onCreateFarm(name: \"Bell\") { name } }",
            json!({}),
        )
        .await;
    client
        .subscribe(
            "by-filter",
            "subscription($f: ModelSubscriptionFarmFilterInput) { onCreateFarm(filter: $f) { name } }",
            json!({ "f": { "or": [
                { "name": { "beginsWith": "Hi" } },
                { "name": { "in": ["Zed", "Yew"] } },
            ], "name": { "ne": "Hilltop" } } }),
        )
        .await;
    app.events.until_subscribers(2).await;

    for name in ["Acre", "Bell", "Hilltop", "Hillside", "Yew"] {
        app.create_farm(name).await;
    }
    // Events arrive in commit order: each subscription's first events are the ones it chose.
    let mut by_name = Vec::new();
    let mut by_filter = Vec::new();
    while by_name.is_empty() || by_filter.len() < 2 {
        let Received::Json(message) = client.receive().await else {
            panic!("the connection closed");
        };
        let name = message["payload"]["data"]["onCreateFarm"]["name"].clone();
        match message["id"].as_str() {
            Some("by-name") => by_name.push(name),
            Some("by-filter") => by_filter.push(name),
            _ => panic!("unexpected {message}"),
        }
    }
    assert_eq!(by_name, [json!("Bell")]);
    assert_eq!(by_filter, [json!("Hillside"), json!("Yew")]);
}

#[tokio::test]
async fn updates_and_deletes_reach_their_subscribers_and_bookkeeping_is_no_update() {
    let app = spawn_app().await;
    let goal = app
        .create("Goal", json!({ "title": "Ship", "kind": "OBJECTIVE" }))
        .await;
    let ann = app
        .create("User", json!({ "name": "Ann", "email": "ann@example.com" }))
        .await;
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe(
            "u",
            "subscription($id: ID) { onUpdateGoal(id: $id) { title version } }",
            json!({ "id": goal }),
        )
        .await;
    client
        .subscribe(
            "d",
            "subscription { onDeleteUser(name: \"Ann\") { name } }",
            json!({}),
        )
        .await;
    app.events.until_subscribers(2).await;

    // Adding an edge bumps the goal's version and edge set: nothing a client reads changes.
    let body = app
        .graphql(
            "mutation($g: ID!, $u: ID!) { addGoalMembership(input: { from: $g, to: $u, role: LEAD }) { role } }",
            json!({ "g": goal, "u": ann }),
        )
        .await;
    assert_eq!(body["data"]["addGoalMembership"]["role"], "LEAD", "{body}");
    let body = app
        .graphql(
            "mutation($g: ID!) { updateGoal(input: { id: $g, title: \"Ship it\" }) { version } }",
            json!({ "g": goal }),
        )
        .await;
    let version = body["data"]["updateGoal"]["version"].clone();
    assert_eq!(
        client.next_of("u").await,
        json!({ "data": { "onUpdateGoal": { "title": "Ship it", "version": version } } }),
        "the first update event is the title's"
    );

    let body = app
        .graphql(
            "mutation($u: ID!) { deleteUser(id: $u) { id } }",
            json!({ "u": ann }),
        )
        .await;
    assert_eq!(body["data"]["deleteUser"]["id"], ann.as_str(), "{body}");
    assert_eq!(
        client.next_of("d").await,
        json!({ "data": { "onDeleteUser": { "name": "Ann" } } })
    );
}

#[tokio::test]
async fn edges_added_and_removed_reach_their_subscribers() {
    let app = spawn_app().await;
    let goal = app
        .create("Goal", json!({ "title": "Ship", "kind": "OBJECTIVE" }))
        .await;
    let other = app
        .create("Goal", json!({ "title": "Other", "kind": "OBJECTIVE" }))
        .await;
    let ann = app
        .create("User", json!({ "name": "Ann", "email": "ann@example.com" }))
        .await;
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe(
            "added",
            "subscription($g: ID) { onGoalMembershipAdded(from: $g) { role to { ... on User { name } } } }",
            json!({ "g": goal }),
        )
        .await;
    client
        .subscribe(
            "removed",
            "subscription($u: ID) { onGoalMembershipRemoved(to: $u) { role from { title } } }",
            json!({ "u": ann }),
        )
        .await;
    app.events.until_subscribers(2).await;

    let add = "mutation($g: ID!, $u: ID!) { addGoalMembership(input: { from: $g, to: $u, role: LEAD }) { role } }";
    app.graphql(add, json!({ "g": other, "u": ann })).await;
    app.graphql(add, json!({ "g": goal, "u": ann })).await;
    assert_eq!(
        client.next_of("added").await,
        json!({ "data": { "onGoalMembershipAdded": { "role": "LEAD", "to": { "name": "Ann" } } } }),
        "the edge from the other goal is not this subscription's"
    );
    let body = app
        .graphql(
            "mutation($g: ID!, $u: ID!) { removeGoalMembership(from: $g, to: $u) }",
            json!({ "g": goal, "u": ann }),
        )
        .await;
    assert!(body["errors"].is_null(), "{body}");
    assert_eq!(
        client.next_of("removed").await,
        json!({ "data": { "onGoalMembershipRemoved": { "role": "LEAD", "from": { "title": "Ship" } } } })
    );
}

#[tokio::test]
async fn the_legacy_graphql_ws_protocol_is_spoken_for_older_apollo_clients() {
    let app = spawn_app().await;
    let mut client = Client::open(app.address, "graphql-ws").await;
    client
        .send(json!({ "type": "connection_init", "payload": {} }))
        .await;
    let Received::Json(ack) = client.receive().await else {
        panic!("no acknowledgement");
    };
    assert_eq!(ack["type"], "connection_ack");
    client
        .send(json!({ "id": "1", "type": "start", "payload": {
            "query": "subscription { onCreateFarm { name } }" } }))
        .await;
    app.events.until_subscribers(1).await;
    app.create_farm("Legacy Acres").await;
    let Received::Json(data) = client.receive().await else {
        panic!("no event");
    };
    assert_eq!(data["type"], "data", "{data}");
    assert_eq!(
        data["payload"],
        json!({ "data": { "onCreateFarm": { "name": "Legacy Acres" } } })
    );
}

fn with_api_key() -> HttpConfig {
    HttpConfig {
        auth: AuthConfig {
            api_keys: vec!["da2-subscriber".into()],
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    }
}

#[tokio::test]
async fn connection_init_carries_the_credentials() {
    let app = spawn_app_with(with_api_key()).await;
    // In the payload, as graphql-ws clients send them, or under `headers`.
    Client::connected(&app, json!({ "x-api-key": "da2-subscriber" })).await;
    Client::connected(
        &app,
        json!({ "headers": { "X-Api-Key": "da2-subscriber" } }),
    )
    .await;

    let mut refused = Client::open(app.address, "graphql-transport-ws").await;
    refused
        .send(json!({ "type": "connection_init", "payload": { "x-api-key": "wrong" } }))
        .await;
    match refused.receive().await {
        Received::Closed(code, reason) => {
            assert_eq!(code, 4403, "{reason}");
            assert!(reason.starts_with("Forbidden"), "{reason}");
        }
        other => panic!("expected 4403, got {other:?}"),
    }
}

#[tokio::test]
async fn the_protocol_s_close_codes_are_kept() {
    let app = spawn_app().await;
    // A subscribe before the acknowledgement.
    let mut early = Client::open(app.address, "graphql-transport-ws").await;
    early
        .subscribe("1", "subscription { onCreateFarm { name } }", json!({}))
        .await;
    match early.receive().await {
        Received::Closed(code, _) => assert_eq!(code, 4401),
        other => panic!("expected 4401, got {other:?}"),
    }
    // A message that is not the protocol's.
    let mut garbled = Client::connected(&app, json!({})).await;
    garbled.send(json!({ "type": "nonsense" })).await;
    match garbled.receive().await {
        Received::Closed(code, _) => assert_eq!(code, 4400),
        other => panic!("expected 4400, got {other:?}"),
    }
    // A second connection_init.
    let mut again = Client::connected(&app, json!({})).await;
    again
        .send(json!({ "type": "connection_init", "payload": {} }))
        .await;
    match again.receive().await {
        Received::Closed(code, _) => assert_eq!(code, 4429),
        other => panic!("expected 4429, got {other:?}"),
    }
    // Two subscriptions under one id.
    let mut twice = Client::connected(&app, json!({})).await;
    twice
        .subscribe("same", "subscription { onCreateFarm { name } }", json!({}))
        .await;
    twice
        .subscribe("same", "subscription { onDeleteFarm { name } }", json!({}))
        .await;
    match twice.receive().await {
        Received::Closed(code, reason) => {
            assert_eq!(code, 4409, "{reason}");
            assert!(reason.contains("same"), "{reason}");
        }
        other => panic!("expected 4409, got {other:?}"),
    }
}

#[tokio::test]
async fn a_connection_that_never_initialises_is_closed_with_4408() {
    let app = spawn_app().await;
    let mut idle = Client::open(app.address, "graphql-transport-ws").await;
    // The server's own timer (10 s) ends it; PATIENCE only bounds the wait.
    match idle.receive().await {
        Received::Closed(code, reason) => {
            assert_eq!(code, 4408, "{reason}");
        }
        other => panic!("expected 4408, got {other:?}"),
    }
}

#[tokio::test]
async fn an_upgrade_without_a_subprotocol_is_told_which_to_ask_for() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/graphql"))
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("a JSON body");
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("graphql-transport-ws"), "{body}");
}

/// The SDK's own DynamoDB client on `endpoint`: another program's, not the API's.
pub(crate) fn raw_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "test", "test", None, None, "test",
            ))
            .build(),
    )
}

/// Waits until the server at `address` reports `count` open subscriptions in `/metrics`: a
/// subscription is in place once its resolver ran, which the protocol does not acknowledge.
pub(crate) async fn until_subscriptions(address: &str, count: usize) {
    let client = reqwest::Client::new();
    let wanted = format!("tablegraph_subscriptions {count}");
    let asking = async {
        loop {
            let text = client
                .get(format!("http://{address}/metrics"))
                .send()
                .await
                .expect("the server answers")
                .text()
                .await
                .expect("a text body");
            if text.lines().any(|line| line == wanted) {
                return;
            }
        }
    };
    tokio::time::timeout(PATIENCE, asking)
        .await
        .expect("the subscriptions are in place in time");
}

/// The shards of the change stream the server at `address` reads for the other replicas.
async fn shards_read(address: &str) -> usize {
    let text = reqwest::get(format!("http://{address}/metrics"))
        .await
        .expect("the server answers")
        .text()
        .await
        .expect("a text body");
    text.lines()
        .find_map(|line| line.strip_prefix("tablegraph_stream_shards_read "))
        .and_then(|value| value.parse().ok())
        .expect("the gauge is reported")
}

/// Waits until a stream shard's lease in the table at `endpoint` names a checkpoint.
async fn until_a_lease_has_a_checkpoint(endpoint: &str) {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    let sdk = raw_client(endpoint);
    let asking = async {
        loop {
            let page = sdk
                .scan()
                .table_name("tablegraph")
                .filter_expression("SK = :lease AND checkpoint <> :none")
                .expression_attribute_values(":lease", A::S("LEASE".into()))
                .expression_attribute_values(":none", A::S(String::new()))
                .send()
                .await
                .expect("a scan");
            if page.count() > 0 {
                return;
            }
        }
    };
    tokio::time::timeout(PATIENCE, asking)
        .await
        .expect("the lease moves its checkpoint in time");
}

/// Creates a farm named `name` through the server at `address`.
async fn create_farm_at(address: &str, name: &str) {
    post_at(
        address,
        "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
        json!({ "n": name }),
    )
    .await;
}

/// POSTs `query` to the server at `address`, which must answer it without errors; the
/// answer's data.
pub(crate) async fn post_at(address: &str, query: &str, variables: Value) -> Value {
    let body: Value = reqwest::Client::new()
        .post(format!("http://{address}/graphql"))
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
        .expect("the replica answers")
        .json()
        .await
        .expect("JSON");
    assert!(body["errors"].is_null(), "{body}");
    body["data"].clone()
}

/// The name in an `onCreateFarm` event.
async fn created_farm(client: &mut Client) -> Value {
    client.next_of("farms").await["data"]["onCreateFarm"]["name"].clone()
}

/// `migrate` on `endpoint`, then three `serve` processes on it (with `more` arguments), each
/// with a client holding `subscriptions` (id, query) once they are in place.
async fn three_replicas(
    endpoint: &str,
    more: &[&str],
    subscriptions: &[(&str, &str)],
) -> (Vec<(tokio::process::Child, String)>, Vec<Client>) {
    let (ok, _, stderr) = run(&["migrate", "--dynamodb-endpoint", endpoint]).await;
    assert!(ok, "migrate succeeds: {stderr}");
    let mut replicas = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..3 {
        let (process, address) = serve_with(endpoint, more).await;
        let mut client =
            Client::connected_at(address.parse().expect("an address"), json!({})).await;
        for (id, query) in subscriptions {
            client.subscribe(id, query, json!({})).await;
        }
        until_subscriptions(&address, subscriptions.len()).await;
        replicas.push((process, address));
        clients.push(client);
    }
    (replicas, clients)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_sees_each_write_once_including_writes_made_outside_the_api() {
    let endpoint = start_dynoxide().await;
    let subscriptions = [
        ("farms", "subscription { onCreateFarm { name } }"),
        ("updates", "subscription { onUpdateFarm { name } }"),
    ];
    let (replicas, mut clients) = three_replicas(&endpoint, &[], &subscriptions).await;

    // Another program writes a node item with the SDK, not through the API.
    let sdk = raw_client(&endpoint);
    use aws_sdk_dynamodb::types::AttributeValue as A;
    let id = "0190f7d0-0000-7000-8000-000000000001";
    sdk.put_item()
        .table_name("tablegraph")
        .item("PK", A::S(format!("NODE#{id}")))
        .item("SK", A::S(format!("NODE#{id}")))
        .item("__typename", A::S("Farm".into()))
        .item("id", A::S(id.into()))
        .item("name", A::S("Imported Acres".into()))
        .item("version", A::N("1".into()))
        .item("createdAt", A::S("2026-01-01T00:00:00Z".into()))
        .item("updatedAt", A::S("2026-01-01T00:00:00Z".into()))
        .send()
        .await
        .expect("a raw PutItem");
    for client in &mut clients {
        assert_eq!(created_farm(client).await, "Imported Acres");
    }
    sdk.update_item()
        .table_name("tablegraph")
        .key("PK", A::S(format!("NODE#{id}")))
        .key("SK", A::S(format!("NODE#{id}")))
        .update_expression("SET #n = :n")
        .expression_attribute_names("#n", "name")
        .expression_attribute_values(":n", A::S("Renamed Acres".into()))
        .send()
        .await
        .expect("a raw UpdateItem");
    for client in &mut clients {
        assert_eq!(
            client.next_of("updates").await,
            json!({ "data": { "onUpdateFarm": { "name": "Renamed Acres" } } })
        );
    }

    // A mutation through one replica reaches the subscribers of all three, once: the next
    // event each receives is the one after it.
    for (name, (_, address)) in [("Via One", &replicas[0]), ("Via Three", &replicas[2])] {
        create_farm_at(address, name).await;
    }
    for client in &mut clients {
        assert_eq!(created_farm(client).await, "Via One");
        assert_eq!(created_farm(client).await, "Via Three");
    }

    // One replica reads the stream; the other two follow what it relays.
    let mut readers = 0;
    for (_, address) in &replicas {
        readers += shards_read(address).await;
    }
    assert_eq!(readers, 1, "one reader for the table's one shard");

    // The lease and the relay items are no inconsistency to `check` (the farm written with
    // the SDK lacks its unique item, which `check` does report), and no data to `export`.
    let (_, stdout, _) = run(&["check", "--dynamodb-endpoint", &endpoint]).await;
    assert!(stdout.contains("MissingUniqueValue"), "{stdout}");
    assert!(stdout.contains("stream leases and relay items"), "{stdout}");
    assert!(!stdout.contains("UnknownItem"), "{stdout}");
    let (ok, exported, stderr) = run(&["export", "--dynamodb-endpoint", &endpoint]).await;
    assert!(ok, "export succeeds: {stderr}");
    assert!(exported.contains("Via Three"), "{exported}");
    assert!(!exported.contains("STREAM#"), "{exported}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_replica_reading_the_stream_stops_another_takes_over_and_nothing_is_lost() {
    let endpoint = start_dynoxide().await;
    let subscriptions = [("farms", "subscription { onCreateFarm { name } }")];
    let (mut replicas, mut clients) =
        three_replicas(&endpoint, &["--stream-lease-secs", "2"], &subscriptions).await;
    // No change written yet: the reader's renewals alone move its lease's checkpoint past the
    // records it read, so that whoever takes over starts there and not at the newest record.
    until_a_lease_has_a_checkpoint(&endpoint).await;

    // The reader dies without a word; writes go on meanwhile, through a survivor.
    let mut reading = None;
    for (n, (_, address)) in replicas.iter().enumerate() {
        if shards_read(address).await == 1 {
            reading = Some(n);
        }
    }
    let reading = reading.expect("a replica reads the shard");
    let (mut reader, _) = replicas.remove(reading);
    drop(clients.remove(reading));
    reader.kill().await.expect("the reader is killed");
    create_farm_at(&replicas[0].1, "While Nobody Reads").await;
    create_farm_at(&replicas[1].1, "And After").await;
    // Once its lease expired a survivor took over, from where the dead one stopped: every write
    // reaches both survivors' subscribers, in order, once each.
    for client in &mut clients {
        assert_eq!(created_farm(client).await, "While Nobody Reads");
        assert_eq!(created_farm(client).await, "And After");
    }
    create_farm_at(&replicas[0].1, "Last").await;
    for client in &mut clients {
        assert_eq!(created_farm(client).await, "Last");
    }
    let readers = shards_read(&replicas[0].1).await + shards_read(&replicas[1].1).await;
    assert_eq!(readers, 1, "one survivor reads the shard");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_turns_the_change_stream_on_for_a_table_made_without_it() {
    let endpoint = start_dynoxide().await;
    let sdk = raw_client(&endpoint);
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let mut create = sdk
        .create_table()
        .table_name("tablegraph")
        .billing_mode(BillingMode::PayPerRequest);
    for (name, key) in [("PK", KeyType::Hash), ("SK", KeyType::Range)] {
        create = create
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .expect("a definition"),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(name)
                    .key_type(key)
                    .build()
                    .expect("a key"),
            );
    }
    create.send().await.expect("a table without a stream");

    let (ok, stdout, stderr) = run(&["migrate", "--dynamodb-endpoint", &endpoint]).await;
    assert!(ok, "migrate succeeds: {stderr}");
    assert!(
        stdout.contains("turned on the table's change stream"),
        "{stdout}"
    );
    let (ok, again, _) = run(&["migrate", "--dynamodb-endpoint", &endpoint]).await;
    assert!(
        ok && !again.contains("turned on"),
        "once is enough: {again}"
    );

    // And a replica then serves subscriptions on it.
    let (_process, address) = serve(&endpoint).await;
    let mut client = Client::connected_at(address.parse().expect("an address"), json!({})).await;
    client
        .subscribe("farms", "subscription { onCreateFarm { name } }", json!({}))
        .await;
    until_subscriptions(&address, 1).await;
    create_farm_at(&address, "Streamed").await;
    assert_eq!(created_farm(&mut client).await, "Streamed");
}

#[tokio::test]
async fn server_sent_events_carry_subscriptions_and_single_answers() {
    let app = spawn_app().await;
    let mut response = app
        .client
        .post(app.url("/graphql"))
        .header("accept", "text/event-stream")
        .json(&json!({ "query": "subscription { onCreateFarm { name } }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/event-stream")),
        "{:?}",
        response.headers()
    );
    app.events.until_subscribers(1).await;
    app.create_farm("Streamed Acres").await;
    let events = sse_events(&mut response, 1).await;
    let (name, data) = events
        .iter()
        .find(|(name, _)| name == "next")
        .expect("a next event");
    assert_eq!(name, "next");
    let data: Value = serde_json::from_str(data).expect("JSON data");
    assert_eq!(
        data,
        json!({ "data": { "onCreateFarm": { "name": "Streamed Acres" } } })
    );

    // A query answers one `next`, then `complete`.
    let mut response = app
        .client
        .post(app.url("/graphql"))
        .header("accept", "text/event-stream")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("the server answers");
    let events: Vec<(String, String)> = sse_events(&mut response, 2)
        .await
        .into_iter()
        .filter(|(name, _)| !name.is_empty())
        .collect();
    assert_eq!(events[0].0, "next");
    assert_eq!(
        serde_json::from_str::<Value>(&events[0].1).expect("JSON"),
        json!({ "data": { "__typename": "Query" } })
    );
    assert_eq!(events[1].0, "complete");
}

#[tokio::test]
async fn limits_answer_errors_that_name_them() {
    let mut config = HttpConfig {
        max_subscriptions_per_connection: 1,
        ..HttpConfig::default()
    };
    config.graphql.max_event_bytes = 120;
    config.graphql.max_subscriptions = 2;
    let app = spawn_app_with(config).await;

    // One operation at a time on this connection.
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe(
            "big",
            "subscription { onCreateFarm { id name createdAt updatedAt } }",
            json!({}),
        )
        .await;
    client
        .subscribe("second", "subscription { onDeleteFarm { id } }", json!({}))
        .await;
    match client.receive().await {
        Received::Json(message) => {
            assert_eq!(message["type"], "error", "{message}");
            assert_eq!(message["id"], "second", "{message}");
            assert_eq!(
                message["payload"][0]["extensions"]["errorType"], "LimitExceeded",
                "{message}"
            );
        }
        other => panic!("expected an error message, got {other:?}"),
    }
    app.events.until_subscribers(1).await;

    // An event over the size limit is an error naming it, not a silent drop.
    app.create_farm("A farm with a name long enough to pass the limit")
        .await;
    let payload = client.next_of("big").await;
    assert_eq!(
        payload["errors"][0]["extensions"]["errorType"], "EventTooLarge",
        "{payload}"
    );
    assert!(
        payload["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-event-bytes")),
        "{payload}"
    );

    // The server's own cap: a second connection may hold one more, not two.
    let mut other = Client::connected(&app, json!({})).await;
    other
        .subscribe("ok", "subscription { onDeleteFarm { id } }", json!({}))
        .await;
    app.events.until_subscribers(2).await;
    let mut third = Client::connected(&app, json!({})).await;
    third
        .subscribe("over", "subscription { onDeleteFarm { id } }", json!({}))
        .await;
    let payload = third.next_of("over").await;
    assert_eq!(
        payload["errors"][0]["extensions"]["errorType"], "LimitExceeded",
        "{payload}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_closes_websockets_with_a_code_clients_retry_on() {
    let endpoint = start_dynoxide().await;
    let (ok, _, stderr) = run(&["migrate", "--dynamodb-endpoint", &endpoint]).await;
    assert!(ok, "migrate succeeds: {stderr}");
    let (mut process, address) = serve(&endpoint).await;
    let mut client = Client::connected_at(address.parse().expect("an address"), json!({})).await;
    client
        .subscribe("farms", "subscription { onCreateFarm { name } }", json!({}))
        .await;
    until_subscriptions(&address, 1).await;

    let pid = process.id().expect("the server runs").to_string();
    let status = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(status.success());
    match client.receive().await {
        Received::Closed(code, reason) => assert_eq!(code, 1012, "{reason}"),
        other => panic!("expected 1012, got {other:?}"),
    }
    let exit = tokio::time::timeout(Duration::from_secs(10), process.wait())
        .await
        .expect("the server ends within 10 s")
        .expect("its status");
    assert!(exit.success(), "{exit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_falls_behind_is_told_it_missed_events() {
    let mut config = HttpConfig::default();
    config.graphql.max_pending_events = 2;
    let app = spawn_app_with(config).await;
    let logo = {
        let body = app
            .graphql(
                "mutation { createImage(input: { url: \"https://example.com/l.png\" }) { id } }",
                json!({}),
            )
            .await;
        id_at(&body, "/data/createImage/id")
    };
    let mut client = Client::connected(&app, json!({})).await;
    // Each event reads the farm's logo: slower than the stream hands events out.
    client
        .subscribe(
            "slow",
            "subscription { onCreateFarm { name logo { url } } }",
            json!({}),
        )
        .await;
    app.events.until_subscribers(1).await;
    let creates = (0..40).map(|n| {
        app.graphql(
            "mutation($n: String!, $l: ID) { createFarm(input: { name: $n, logoId: $l }) { id } }",
            json!({ "n": format!("Burst {n}"), "l": logo }),
        )
    });
    futures::future::join_all(creates).await;
    loop {
        match client.receive().await {
            Received::Json(message) if message["type"] == "next" => {
                let errors = &message["payload"]["errors"];
                if errors.is_null() {
                    continue;
                }
                assert_eq!(
                    errors[0]["extensions"]["errorType"], "EventsMissed",
                    "{message}"
                );
                break;
            }
            other => panic!("expected events, then EventsMissed; got {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_event_limit_leaves_queries_over_the_transports_whole() {
    let mut config = HttpConfig::default();
    config.graphql.max_event_bytes = 60;
    let app = spawn_app_with(config).await;
    let name = "A farm whose name alone is longer than the event limit";
    app.create_farm(name).await;
    let query = "query($n: String!) { farmByName(name: $n) { name } }";
    let over_http = app.graphql(query, json!({ "n": name })).await;
    assert_eq!(over_http["data"]["farmByName"]["name"], name, "{over_http}");
    let mut client = Client::connected(&app, json!({})).await;
    client.subscribe("q", query, json!({ "n": name })).await;
    assert_eq!(
        client.next_of("q").await,
        json!({ "data": { "farmByName": { "name": name } } })
    );
}

#[tokio::test]
async fn sockets_that_never_initialise_are_held_to_a_number_and_a_client_still_subscribes() {
    let app = spawn_app_with(HttpConfig {
        auth: AuthConfig {
            api_keys: vec!["key".to_owned()],
            ..AuthConfig::default()
        },
        max_pending_sockets: 5,
        ..HttpConfig::default()
    })
    .await;
    let mut bare = Vec::new();
    for _ in 0..20 {
        bare.push(Client::open(app.address, "graphql-transport-ws").await);
    }
    // The 15 that waited longest were closed as newer ones came, with the initialisation
    // timeout's code, which clients retry.
    for (n, client) in bare.iter_mut().take(15).enumerate() {
        match client.receive().await {
            Received::Closed(code, reason) => {
                assert_eq!(code, 4408, "socket {n}: {reason}");
                assert!(reason.contains("too many"), "{reason}");
            }
            other => panic!("socket {n}: expected 4408, got {other:?}"),
        }
    }
    // A real client is let in (it makes the oldest of the five close) and subscribes.
    let mut client = Client::connected(&app, json!({ "x-api-key": "key" })).await;
    client
        .subscribe("1", "subscription { onCreateFarm { name } }", json!({}))
        .await;
    app.events.until_subscribers(1).await;
    let created = app
        .client
        .post(app.url("/graphql"))
        .header("x-api-key", "key")
        .json(&json!({ "query": "mutation { createFarm(input: { name: \"Held\" }) { id } }" }))
        .send()
        .await
        .expect("answers");
    assert_eq!(created.status(), 200);
    assert_eq!(
        client.next_of("1").await["data"]["onCreateFarm"]["name"],
        "Held"
    );
}

#[tokio::test]
async fn a_wrong_credential_in_the_upgrade_s_headers_is_refused_before_the_upgrade() {
    let app = spawn_app_with(HttpConfig {
        auth: AuthConfig {
            api_keys: vec!["key".to_owned()],
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    })
    .await;
    let mut request = format!("ws://{}/graphql", app.address)
        .into_client_request()
        .expect("a WebSocket request");
    request.headers_mut().insert(
        "sec-websocket-protocol",
        "graphql-transport-ws".parse().expect("a header value"),
    );
    request
        .headers_mut()
        .insert("x-api-key", "wrong".parse().expect("a header value"));
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401);
        }
        Err(other) => panic!("expected a 401, got {other}"),
        Ok(_) => panic!("the upgrade was answered"),
    }
}

/// `/metrics` times each event from its node's update time to its delivery: a creation and an
/// update are measured, a deletion (which carries no time of its own) is counted but not timed.
#[tokio::test]
async fn metrics_time_each_event_from_its_write_to_its_delivery() {
    let app = spawn_app().await;
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe("farms", "subscription { onCreateFarm { id } }", json!({}))
        .await;
    client
        .subscribe("gone", "subscription { onDeleteFarm { id } }", json!({}))
        .await;
    app.events.until_subscribers(2).await;
    let id = app.create("Farm", json!({ "name": "Timed" })).await;
    client.next_of("farms").await;
    let deleted = app
        .graphql(
            "mutation ($id: ID!) { deleteFarm(id: $id) { id } }",
            json!({ "id": id }),
        )
        .await;
    assert!(deleted["errors"].is_null(), "{deleted}");
    client.next_of("gone").await;
    let text = app.metrics().await;
    let value = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .and_then(|value| value.parse::<f64>().ok())
    };
    assert_eq!(
        value("tablegraph_subscription_events_total{outcome=\"delivered\"}"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        value("tablegraph_subscription_delivery_seconds_count"),
        Some(1.0),
        "{text}"
    );
}
