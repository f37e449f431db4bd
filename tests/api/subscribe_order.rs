//! A subscription delivers the events of writes committed after it is in place, and none from
//! before it asked: three cows created, then a subscription to their farm's `onCreateCow`, then
//! a fourth cow: the first event is the fourth cow's, on every transport and across replicas.
//! The servers keep their read cache on, as `serve` does by default: it keeps the embedded
//! store's stream reader reading while nobody subscribes, which is how earlier writes reached a
//! new subscriber.

use serde_json::{Value, json};
use tablegraph::store::CacheSettings;

use crate::helpers::{TestApp, spawn_app_cached};
use crate::network::{run, serve, start_dynoxide};
use crate::realtime::{Client as RealtimeClient, Via};
use crate::sse::{self, Events};
use crate::subscriptions::{Client as WsClient, Received, post_at, until_subscriptions};

const ON_CREATE_COW: &str = "subscription($farmId: ID!) { onCreateCow(farmId: $farmId) { name } }";

#[derive(Debug, Clone, Copy)]
enum Transport {
    GraphqlTransportWs,
    LegacyWs,
    SseDistinct,
    SseSingle,
    Realtime,
}

/// A subscription open on some transport, whose next event's cow name can be read.
enum Open {
    Ws(WsClient, &'static str),
    Sse(Events, bool),
    Realtime(RealtimeClient),
}

impl Open {
    async fn next_cow(&mut self) -> Value {
        match self {
            Open::Ws(client, "graphql-transport-ws") => {
                client.next_of("cows").await["data"]["onCreateCow"]["name"].clone()
            }
            Open::Ws(client, _) => match client.receive().await {
                Received::Json(data) => {
                    assert_eq!(data["type"], "data", "{data}");
                    data["payload"]["data"]["onCreateCow"]["name"].clone()
                }
                other => panic!("expected an event, got {other:?}"),
            },
            Open::Sse(events, single) => {
                let (event, data) = events.next(1).await.remove(0);
                assert_eq!(event, "next", "{data}");
                let payload = if *single { &data["payload"] } else { &data };
                payload["data"]["onCreateCow"]["name"].clone()
            }
            Open::Realtime(client) => {
                let data = client.json().await;
                assert_eq!(data["type"], "data", "{data}");
                data["payload"]["data"]["onCreateCow"]["name"].clone()
            }
        }
    }
}

/// Subscribes to the cows of `farm` over `transport`; answers once the subscription is in
/// place, as the transport tells it (`start_ack`), or as the server counts it (the others
/// acknowledge no subscription).
async fn subscribe(app: &TestApp, transport: Transport, farm: &str, before: usize) -> Open {
    let variables = json!({ "farmId": farm });
    let open = match transport {
        Transport::GraphqlTransportWs | Transport::LegacyWs => {
            let protocol = match transport {
                Transport::GraphqlTransportWs => "graphql-transport-ws",
                _ => "graphql-ws",
            };
            let mut client = WsClient::open(app.address, protocol).await;
            client
                .send(json!({ "type": "connection_init", "payload": {} }))
                .await;
            match client.receive().await {
                Received::Json(ack) => assert_eq!(ack["type"], "connection_ack", "{ack}"),
                other => panic!("expected connection_ack, got {other:?}"),
            }
            let kind = match transport {
                Transport::GraphqlTransportWs => "subscribe",
                _ => "start",
            };
            client
                .send(json!({ "id": "cows", "type": kind, "payload": {
                    "query": ON_CREATE_COW, "variables": variables } }))
                .await;
            Open::Ws(client, protocol)
        }
        Transport::SseDistinct => {
            let response = app
                .client
                .post(app.url("/graphql"))
                .header("accept", "text/event-stream")
                .json(&json!({ "query": ON_CREATE_COW, "variables": variables }))
                .send()
                .await
                .expect("a stream");
            Open::Sse(Events::new(response), false)
        }
        Transport::SseSingle => {
            let token = sse::reserve(app).await;
            let stream = sse::open(app, &token).await;
            let accepted = app
                .client
                .post(app.url("/graphql"))
                .header(sse::TOKEN, &token)
                .json(&json!({ "query": ON_CREATE_COW, "variables": variables,
                    "extensions": { "operationId": "cows" } }))
                .send()
                .await
                .expect("an answer");
            assert_eq!(accepted.status(), 202);
            Open::Sse(Events::new(stream), true)
        }
        Transport::Realtime => {
            let header = json!({ "host": "127.0.0.1" });
            let mut client = RealtimeClient::connected(app, &header, Via::Subprotocol).await;
            client
                .started("cows", ON_CREATE_COW, variables, &header)
                .await;
            Open::Realtime(client)
        }
    };
    app.events.until_subscribers(before + 1).await;
    open
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_receives_no_write_made_before_it_subscribed_on_any_transport() {
    let app = spawn_app_cached("schema.graphql", CacheSettings::default()).await;
    let transports = [
        Transport::GraphqlTransportWs,
        Transport::LegacyWs,
        Transport::SseDistinct,
        Transport::SseSingle,
        Transport::Realtime,
    ];
    let mut held = Vec::new();
    for (n, transport) in transports.into_iter().enumerate() {
        let farm = app.create_farm(&format!("Ordered {n}")).await;
        for cow in ["First", "Second", "Third"] {
            app.create_animal("Cow", cow, &farm).await;
        }
        let mut open = subscribe(&app, transport, &farm, n).await;
        app.create_animal("Cow", "Fourth", &farm).await;
        assert_eq!(open.next_cow().await, "Fourth", "over {transport:?}");
        held.push(open);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn across_replicas_a_subscriber_receives_no_write_made_before_it_subscribed() {
    let endpoint = start_dynoxide().await;
    let (ok, _, stderr) = run(&["migrate", "--dynamodb-endpoint", &endpoint]).await;
    assert!(ok, "migrate succeeds: {stderr}");
    let (_writer, writer) = serve(&endpoint).await;
    let (_reader, reader) = serve(&endpoint).await;
    let farm = post_at(
        &writer,
        "mutation { createFarm(input: { name: \"Replicated\" }) { id } }",
        json!({}),
    )
    .await["createFarm"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let cow =
        "mutation($n: String!, $f: ID!) { createCow(input: { name: $n, farmId: $f }) { id } }";
    for name in ["First", "Second", "Third"] {
        post_at(&writer, cow, json!({ "n": name, "f": farm })).await;
    }
    let mut client = WsClient::connected_at(reader.parse().expect("an address"), json!({})).await;
    client
        .subscribe("cows", ON_CREATE_COW, json!({ "farmId": farm }))
        .await;
    until_subscriptions(&reader, 1).await;
    post_at(&writer, cow, json!({ "n": "Fourth", "f": farm })).await;
    let first = client.next_of("cows").await;
    assert_eq!(first["data"]["onCreateCow"]["name"], "Fourth", "{first}");
}
