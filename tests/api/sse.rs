//! graphql-sse's single connection mode, as its PROTOCOL.md describes it: `PUT` reserves a
//! stream (201 and a token), a `GET` with the token opens it, operations are `POST`ed with the
//! token and `extensions.operationId` (202) and answered on the stream as `{ id, payload }`,
//! `DELETE ?operationId=` stops one. The npm client drives the same mode in
//! `clients/subscriptions.mjs`.

use std::time::Duration;

use serde_json::{Value, json};
use tablegraph::config::HttpConfig;

use crate::helpers::{TestApp, api_key_and_tokens, spawn_app, spawn_app_with};

pub(crate) const TOKEN: &str = "x-graphql-event-stream-token";

/// Reserves a stream without credentials; its token.
pub(crate) async fn reserve(app: &TestApp) -> String {
    let response = app
        .client
        .put(app.url("/graphql"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 201);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/plain")),
        "{:?}",
        response.headers()
    );
    response.text().await.expect("the token")
}

/// Opens the stream of the reservation `token`.
pub(crate) async fn open(app: &TestApp, token: &str) -> reqwest::Response {
    app.client
        .get(app.url("/graphql"))
        .header("accept", "text/event-stream")
        .header(TOKEN, token)
        .send()
        .await
        .expect("the server answers")
}

async fn operate(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.client
        .post(app.url("/graphql"))
        .header(TOKEN, token)
        .json(&body)
        .send()
        .await
        .expect("the server answers")
}

/// An open event stream, read event by event across calls.
pub(crate) struct Events {
    response: reqwest::Response,
    /// What arrived and is not yet read as events.
    text: String,
}

impl Events {
    pub(crate) fn new(response: reqwest::Response) -> Events {
        Events {
            response,
            text: String::new(),
        }
    }

    /// The next `count` events (keep-alive comments skipped), each as its name and JSON data.
    pub(crate) async fn next(&mut self, count: usize) -> Vec<(String, Value)> {
        let mut events = Vec::new();
        while events.len() < count {
            if let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .filter_map(|line| line.strip_prefix(name))
                        .map(str::trim_start)
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                if block.contains("event:") {
                    let data = serde_json::from_str(&field("data:")).expect("JSON data");
                    events.push((field("event:"), data));
                }
                continue;
            }
            // Bounded: a stream that only sends keep-alives would otherwise be read forever.
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("{count} events within 20 s; got {events:?}"))
                .expect("the stream is readable")
                .expect("the stream is still open");
            self.text
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
        events
    }
}

#[tokio::test]
async fn operations_answer_on_the_reserved_stream_by_their_ids() {
    let app = spawn_app().await;
    let token = reserve(&app).await;
    let stream = open(&app, &token).await;
    assert_eq!(stream.status(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/event-stream"))
    );
    let mut stream = Events::new(stream);
    // One reservation, one stream.
    assert_eq!(open(&app, &token).await.status(), 409);

    let subscribed = operate(
        &app,
        &token,
        json!({ "query": "subscription { onCreateFarm { name } }",
                "extensions": { "operationId": "farms" } }),
    )
    .await;
    assert_eq!(subscribed.status(), 202);
    assert_eq!(subscribed.text().await.expect("a body"), "");
    app.events.until_subscribers(1).await;
    // An id in use is refused; an operation without one too.
    let again = operate(
        &app,
        &token,
        json!({ "query": "subscription { onCreateFarm { id } }",
                "extensions": { "operationId": "farms" } }),
    )
    .await;
    assert_eq!(again.status(), 409);
    let anonymous = operate(&app, &token, json!({ "query": "{ __typename }" })).await;
    assert_eq!(anonymous.status(), 400);

    app.create_farm("Streamed Once").await;
    let events = stream.next(1).await;
    assert_eq!(
        events,
        [(
            "next".to_owned(),
            json!({ "id": "farms", "payload": { "data": { "onCreateFarm": { "name": "Streamed Once" } } } })
        )]
    );

    // A query answers one `next` and its `complete`, on the same stream.
    let queried = operate(
        &app,
        &token,
        json!({ "query": "{ farmByName(name: \"streamed once\") { name } }",
                "extensions": { "operationId": "q1" } }),
    )
    .await;
    assert_eq!(queried.status(), 202);
    let events = stream.next(2).await;
    assert_eq!(
        events,
        [
            (
                "next".to_owned(),
                json!({ "id": "q1", "payload": { "data": { "farmByName": { "name": "Streamed Once" } } } })
            ),
            ("complete".to_owned(), json!({ "id": "q1" })),
        ]
    );
    // A document that does not validate is its operation's one answer.
    let invalid = operate(
        &app,
        &token,
        json!({ "query": "{ farmByName(name: 1) { colour } }",
                "extensions": { "operationId": "bad" } }),
    )
    .await;
    assert_eq!(invalid.status(), 202);
    let events = stream.next(2).await;
    assert_eq!(events[0].1["id"], "bad");
    assert!(
        events[0].1["payload"]["errors"][0]["message"].is_string(),
        "{events:?}"
    );
    assert_eq!(events[1], ("complete".to_owned(), json!({ "id": "bad" })));

    // DELETE stops the subscription: it completes, and the server holds it no more.
    let stopped = app
        .client
        .delete(app.url("/graphql?operationId=farms"))
        .header(TOKEN, &token)
        .send()
        .await
        .expect("the server answers");
    assert_eq!(stopped.status(), 200);
    app.events.until_at_most_subscribers(0).await;
    let events = stream.next(1).await;
    assert_eq!(events, [("complete".to_owned(), json!({ "id": "farms" }))]);
    let no_id = app
        .client
        .delete(app.url("/graphql"))
        .header(TOKEN, &token)
        .send()
        .await
        .expect("the server answers");
    assert_eq!(no_id.status(), 400);
}

#[tokio::test]
async fn a_stream_that_closes_stops_its_operations_and_ends_its_reservation() {
    let app = spawn_app().await;
    let token = reserve(&app).await;
    // Operations may be sent before the stream opens; their events wait for it.
    for id in ["a", "b"] {
        let response = operate(
            &app,
            &token,
            json!({ "query": "subscription { onCreateFarm { name } }",
                    "extensions": { "operationId": id } }),
        )
        .await;
        assert_eq!(response.status(), 202);
    }
    app.events.until_subscribers(2).await;
    app.create_farm("Early").await;
    // The token also opens the stream as a query parameter, as a browser's EventSource sends it.
    let stream = app
        .client
        .get(app.url(&format!("/graphql?token={token}")))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("the server answers");
    assert_eq!(stream.status(), 200);
    let mut stream = Events::new(stream);
    let mut ids: Vec<String> = stream
        .next(2)
        .await
        .into_iter()
        .map(|(_, data)| data["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    drop(stream);
    app.events.until_at_most_subscribers(0).await;
    // The reservation ended with its stream.
    let late = operate(
        &app,
        &token,
        json!({ "query": "{ __typename }", "extensions": { "operationId": "late" } }),
    )
    .await;
    assert_eq!(late.status(), 404);
    assert_eq!(open(&app, &token).await.status(), 404);
}

#[tokio::test]
async fn unknown_expired_and_other_callers_tokens_find_no_stream() {
    let app = spawn_app().await;
    assert_eq!(open(&app, "no-such-token").await.status(), 404);
    let made_up = operate(
        &app,
        "no-such-token",
        json!({ "query": "{ __typename }", "extensions": { "operationId": "1" } }),
    )
    .await;
    assert_eq!(made_up.status(), 404);

    // A reservation that waits longer than its time to live for its stream is forgotten.
    let http = HttpConfig {
        sse_reservation_ttl: Duration::ZERO,
        ..HttpConfig::default()
    };
    let hasty = spawn_app_with(http).await;
    let token = reserve(&hasty).await;
    assert_eq!(open(&hasty, &token).await.status(), 404);

    // A reservation belongs to the caller who made it.
    let guarded = spawn_app_with(api_key_and_tokens("sse-key")).await;
    let ann = crate::helpers::user_token("ann", &[]);
    let dan = crate::helpers::user_token("dan", &[]);
    let response = guarded
        .client
        .put(guarded.url("/graphql"))
        .bearer_auth(&ann)
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 201);
    let token = response.text().await.expect("the token");
    let as_dan = guarded
        .client
        .post(guarded.url("/graphql"))
        .bearer_auth(&dan)
        .header(TOKEN, &token)
        .json(&json!({ "query": "{ __typename }", "extensions": { "operationId": "1" } }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(as_dan.status(), 404);
    let as_ann = guarded
        .client
        .post(guarded.url("/graphql"))
        .bearer_auth(&ann)
        .header(TOKEN, &token)
        .json(&json!({ "query": "{ __typename }", "extensions": { "operationId": "1" } }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(as_ann.status(), 202);
    // Without credentials, no reservation.
    let bare = guarded
        .client
        .put(guarded.url("/graphql"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(bare.status(), 401);
}

#[tokio::test]
async fn browsers_may_reserve_and_stop_streams_across_origins() {
    let app = spawn_app().await;
    for method in ["PUT", "DELETE"] {
        let response = app
            .client
            .request(reqwest::Method::OPTIONS, app.url("/graphql"))
            .header("origin", "https://farm.example")
            .header("access-control-request-method", method)
            .header("access-control-request-headers", TOKEN)
            .send()
            .await
            .expect("the server answers");
        let allowed = |name: &str| {
            response.headers()[name]
                .to_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert!(allowed("access-control-allow-methods").contains(method));
        assert!(allowed("access-control-allow-headers").contains(TOKEN));
    }
}

/// A client that gives `text/event-stream` a quality of 0 refuses a stream: it gets JSON, in
/// the media type it prefers.
#[tokio::test]
async fn a_stream_refused_by_its_quality_is_not_answered() {
    let app = crate::helpers::spawn_app().await;
    for (accept, media) in [
        (
            "text/event-stream;q=0, application/json",
            "application/json",
        ),
        (
            "text/event-stream;q=0, application/graphql-response+json",
            "application/graphql-response+json",
        ),
    ] {
        let response = app
            .client
            .post(app.url("/graphql"))
            .header("accept", accept)
            .json(&json!({ "query": "{ __typename }" }))
            .send()
            .await
            .expect("an answer");
        assert_eq!(response.status(), 200, "{accept}");
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(content_type.starts_with(media), "{accept}: {content_type}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["data"]["__typename"], "Query", "{body}");
    }
}
