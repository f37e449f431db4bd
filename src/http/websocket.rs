//! GraphQL over WebSocket at `/graphql`, through async-graphql-axum: the `graphql-transport-ws`
//! protocol of the graphql-ws library (Apollo, urql, Relay, GraphiQL), and the legacy
//! `graphql-ws` protocol of subscriptions-transport-ws for older Apollo clients.
//!
//! Credentials come in `connection_init`'s payload (`x-api-key` or `Authorization`, at its top
//! level or under `headers`, as clients send them), or else with the upgrade request's headers:
//! a browser cannot set headers on a WebSocket; credentials in the upgrade's headers are checked
//! before it is answered (401 when they are wrong). At most `--max-pending-sockets` sockets
//! wait for `connection_init` (`pending`), each with a 4 KiB read buffer, and a message may be
//! as large as a request body (`--max-body-bytes`). A connection whose token expires is closed
//! then (`4403`); when the server shuts down, every connection is closed with `1012` (service
//! restart), which clients retry.
//!
//! # The protocol's close codes
//!
//! async-graphql's WebSocket closes with 1002 where graphql-transport-ws names a reason
//! (`4400` invalid message, `4403` forbidden), with 1011 for a subscribe before the
//! acknowledgement (`4401` unauthorized), has no initialisation timeout (`4408`), and lets a
//! second `subscribe` with an id in use replace the first (`4409`). Clients act on these codes
//! (graphql-ws does not retry 4400–4499 but 4408 and 4429), so this module keeps them: it reads
//! the client's messages on their way in, and maps the close frames on their way out.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_graphql::Data;
use async_graphql::http::{ALL_WEBSOCKET_PROTOCOLS, WebSocketProtocols};
use async_graphql_axum::{GraphQLProtocol, GraphQLWebSocket};
use axum::extract::FromRequestParts;
use axum::extract::ws::{CloseFrame, Message, WebSocketUpgrade};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};

use super::state::AppState;
use crate::auth::{API_KEY_HEADER, Authenticator, Caller, RequestContext};
use crate::graphql::RequestHeaders;

/// How long a client has to send `connection_init` after the upgrade.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
/// The bytes a socket reads into at once (tungstenite allocates them up front: 128 KiB by
/// default, which 5,000 sockets that never send `connection_init` turned into 485 MB). A
/// larger message is read in several reads.
const READ_BUFFER_BYTES: usize = 4 * 1024;
/// What a socket buffers before it writes: events are small, and flushed one by one.
const WRITE_BUFFER_BYTES: usize = 8 * 1024;
/// The start of the message of a refused `connection_init`, to tell its close frame from
/// others that async-graphql sends with the same code.
const FORBIDDEN: &str = "Forbidden";

/// Whether `headers` ask to upgrade the connection to a WebSocket.
pub(super) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case("websocket"))
}

/// Answers an upgrade request: the WebSocket, or a clear error.
pub(super) async fn upgrade(state: AppState, mut parts: Parts) -> Response {
    let Ok(protocol) = GraphQLProtocol::from_request_parts(&mut parts, &()).await else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "a GraphQL WebSocket must ask for the graphql-transport-ws subprotocol \
             (Sec-WebSocket-Protocol: graphql-transport-ws), or graphql-ws for \
             subscriptions-transport-ws clients",
        );
    };
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            return refuse(rejection.status(), &rejection.body_text());
        }
    };
    let header_credentials = Credentials::from_headers(&parts.headers);
    // The upgrade's headers: what the connection's functions see as `request.headers`, and a
    // Lambda authorizer as `requestHeaders`.
    let headers = super::state::request_headers(&parts.headers);
    // Credentials sent with the upgrade are checked before it is answered: a wrong one costs
    // no socket.
    if let Some(auth) = state.inner.auth.as_deref()
        && !header_credentials.is_empty()
        && let Err(reason) = caller(Some(auth), &header_credentials, &headers).await
    {
        auth.refused(crate::auth::Transport::Http, &reason);
        let body = crate::graphql::appsync::error_body(&reason, "UnauthorizedException");
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    // The protocol the extractor chose: the first of the client's it knows.
    let legacy = parts
        .headers
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            value
                .split(',')
                .find_map(|p| p.trim().parse::<WebSocketProtocols>().ok())
        })
        == Some(WebSocketProtocols::SubscriptionsTransportWS);
    bounded(upgrade, &state)
        .protocols(ALL_WEBSOCKET_PROTOCOLS)
        .on_upgrade(move |socket| {
            serve(state, socket, protocol, legacy, header_credentials, headers)
        })
}

/// `upgrade` with the bounds of every GraphQL WebSocket: small buffers, and messages no larger
/// than a request body.
pub(super) fn bounded(upgrade: WebSocketUpgrade, state: &AppState) -> WebSocketUpgrade {
    let max_message = state.inner.max_message_bytes;
    upgrade
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_message_size(max_message)
        .max_frame_size(max_message)
}

/// A refused upgrade, as a GraphQL error body in JSON.
fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "errors": [{ "message": message }] });
    (status, axum::Json(body)).into_response()
}

/// Credentials a client presented, by name.
#[derive(Debug, Default, Clone)]
struct Credentials {
    authorization: Option<String>,
    api_key: Option<String>,
}

impl Credentials {
    fn from_headers(headers: &HeaderMap) -> Credentials {
        let value = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Credentials {
            authorization: value(header::AUTHORIZATION.as_str()),
            api_key: value(API_KEY_HEADER),
        }
    }

    /// The credentials in a `connection_init` payload, names matched without regard to case.
    fn from_payload(payload: &serde_json::Value) -> Credentials {
        let find = |object: Option<&serde_json::Map<String, serde_json::Value>>, name: &str| {
            object?
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .and_then(|(_, value)| value.as_str())
                .map(str::to_owned)
        };
        let top = payload.as_object();
        let headers = payload.get("headers").and_then(|h| h.as_object());
        Credentials {
            authorization: find(top, "authorization").or_else(|| find(headers, "authorization")),
            api_key: find(top, API_KEY_HEADER).or_else(|| find(headers, API_KEY_HEADER)),
        }
    }

    fn is_empty(&self) -> bool {
        self.authorization.is_none() && self.api_key.is_none()
    }
}

/// Who the connection's caller is, or why not.
async fn caller(
    auth: Option<&Authenticator>,
    credentials: &Credentials,
    headers: &RequestHeaders,
) -> Result<Caller, String> {
    match auth {
        None => Ok(Caller::Anonymous),
        Some(auth) => auth
            .authenticate(
                credentials.authorization.as_deref(),
                credentials.api_key.as_deref(),
                &RequestContext {
                    headers: headers.0.clone(),
                    ..RequestContext::default()
                },
            )
            .await
            .map_err(|reason| reason.to_string()),
    }
}

/// What the protocol shim knows of a connection.
struct Session {
    /// Operation ids running now.
    running: HashSet<String>,
    initialised: bool,
    /// How many may run at once.
    most: usize,
}

async fn serve(
    state: AppState,
    socket: axum::extract::ws::WebSocket,
    protocol: GraphQLProtocol,
    legacy: bool,
    header_credentials: Credentials,
    headers: RequestHeaders,
) {
    let _counted = Counted::new(state.clone());
    let waiting = Arc::new(state.inner.pending.enter());
    let (socket_sink, socket_stream) = socket.split();
    // Everything the connection sends passes one channel: the protocol's messages and this
    // module's own close frames, in order.
    let (sender, receiver) = futures::channel::mpsc::channel::<Message>(16);
    let writer = tokio::spawn(
        receiver
            .map(move |message| Ok(close_code(message, legacy)))
            .forward(socket_sink),
    );
    let session = Arc::new(Mutex::new(Session {
        running: HashSet::new(),
        initialised: false,
        most: state.inner.max_subscriptions_per_connection,
    }));
    let (init_seen, init_wait) = tokio::sync::oneshot::channel::<()>();
    let mut init_seen = Some(init_seen);
    let incoming = {
        let session = session.clone();
        let sender = sender.clone();
        let waiting = Arc::clone(&waiting);
        socket_stream
            .filter_map(move |message| {
                let verdict = match &message {
                    Ok(Message::Text(text)) => inspect(&session, text.as_str(), legacy),
                    _ => Verdict::Pass,
                };
                if let (Verdict::Initialising, Some(seen)) = (&verdict, init_seen.take()) {
                    waiting.initialised();
                    let _ = seen.send(());
                }
                let mut sender = sender.clone();
                async move {
                    match verdict {
                        Verdict::Pass | Verdict::Initialising => Some(message),
                        Verdict::Answer(answer) => {
                            // Answered here: async-graphql never sees the operation.
                            let _ = sender.send(answer).await;
                            None
                        }
                        Verdict::Close(frame) => {
                            let _ = sender.send(frame).await;
                            // Nothing more is read: async-graphql's side ends with its input.
                            Some(Err(axum::Error::new(std::io::Error::other("closed"))))
                        }
                    }
                }
            })
            .take_while(|message| futures::future::ready(message.is_ok()))
    };
    let outgoing = {
        let session = session.clone();
        sender.clone().with(move |message: Message| {
            if let Message::Text(text) = &message {
                finished(&session, text.as_str());
            }
            futures::future::ready(Ok::<_, futures::channel::mpsc::SendError>(message))
        })
    };
    let auth = state.inner.auth.clone();
    // When the connection's token expires (seconds since the epoch), once it is known.
    let (expiry_known, expiry) = tokio::sync::oneshot::channel::<u64>();
    let mut closing = state.inner.closing.subscribe();
    let connection =
        GraphQLWebSocket::new_with_pair(outgoing, incoming, state.transport(), protocol)
            .on_connection_init(move |payload| async move {
                let presented = Credentials::from_payload(&payload);
                let credentials = if presented.is_empty() {
                    header_credentials
                } else {
                    presented
                };
                let caller = caller(auth.as_deref(), &credentials, &headers)
                    .await
                    .map_err(|reason| {
                        if let Some(auth) = &auth {
                            auth.refused(crate::auth::Transport::WebSocket, &reason);
                        }
                        async_graphql::Error::new(format!("{FORBIDDEN}: {reason}"))
                    })?;
                if let Some(exp) = caller.expires_at() {
                    let _ = expiry_known.send(exp);
                }
                let mut data = Data::default();
                data.insert(caller);
                data.insert(headers);
                Ok(data)
            })
            .serve();
    let close = tokio::select! {
        () = connection => None,
        () = init_deadline(init_wait) => Some((4408, "Connection initialisation timeout")),
        () = waiting.evicted() => Some((
            4408,
            "Connection initialisation timeout: too many connections wait to initialise",
        )),
        () = token_expiry(expiry) => Some((4403, "Forbidden: the token expired")),
        // 1012 (service restart): clients reconnect, to another replica or this one restarted.
        _ = closing.wait_for(|closing| *closing) => Some((1012, "the server is restarting")),
    };
    end(sender, close).await;
    let _ = writer.await;
}

/// Ends the connection's output: with the close frame `close`, when this side closes it.
async fn end(mut sender: futures::channel::mpsc::Sender<Message>, close: Option<(u16, &str)>) {
    if let Some((code, reason)) = close {
        let _ = sender
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await;
    }
}

/// Counts a connection as open while it lives: in the state (shutdown waits for none) and in
/// `/metrics`.
pub(super) struct Counted(AppState);

impl Counted {
    pub(super) fn new(state: AppState) -> Counted {
        Counted::count(&state, 1);
        Counted(state)
    }

    fn count(state: &AppState, change: isize) {
        state.inner.sockets.send_modify(|open| {
            *open = open.saturating_add_signed(change);
            state.inner.metrics.websocket_connections(*open);
        });
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        Counted::count(&self.0, -1);
    }
}

/// Resolves when the connection's token expires; never when it has none.
async fn token_expiry(expiry: tokio::sync::oneshot::Receiver<u64>) {
    match expiry.await {
        Ok(exp) => crate::auth::expired(Some(exp)).await,
        Err(_) => std::future::pending().await,
    }
}

/// Resolves when `connection_init` did not come in time.
async fn init_deadline(init_seen: tokio::sync::oneshot::Receiver<()>) {
    if tokio::time::timeout(INIT_TIMEOUT, init_seen).await.is_ok() {
        std::future::pending::<()>().await;
    }
}

enum Verdict {
    /// Passed on to async-graphql.
    Pass,
    /// `connection_init`, passed on.
    Initialising,
    /// Answered here with this message (a `subscribe` past the connection's limit).
    Answer(Message),
    /// The connection ends with this close frame (a `subscribe` whose id is in use).
    Close(Message),
}

#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
}

/// What an incoming message means to the shim.
fn inspect(session: &Mutex<Session>, text: &str, legacy: bool) -> Verdict {
    let Ok(envelope) = serde_json::from_str::<Envelope>(text) else {
        return Verdict::Pass;
    };
    let mut session = lock(session);
    match (envelope.kind.as_str(), envelope.id) {
        ("connection_init", _) => {
            session.initialised = true;
            Verdict::Initialising
        }
        ("subscribe" | "start", Some(id)) => {
            if !session.initialised {
                // async-graphql closes the connection (4401).
                return Verdict::Pass;
            }
            if session.running.contains(&id) {
                // The legacy protocol lets a `start` replace its id's operation.
                return if legacy {
                    Verdict::Pass
                } else {
                    Verdict::Close(Message::Close(Some(CloseFrame {
                        code: 4409,
                        reason: format!("Subscriber for {id} already exists").into(),
                    })))
                };
            }
            if session.running.len() >= session.most {
                return Verdict::Answer(too_many(&id, session.most));
            }
            session.running.insert(id);
            Verdict::Pass
        }
        ("complete" | "stop", Some(id)) => {
            session.running.remove(&id);
            Verdict::Pass
        }
        _ => Verdict::Pass,
    }
}

/// The `error` message for a `subscribe` past the connection's limit of `most` operations.
fn too_many(id: &str, most: usize) -> Message {
    let message = serde_json::json!({
        "id": id,
        "type": "error",
        "payload": [crate::graphql::appsync::error_entry(
            &format!("this connection runs its most operations at once ({most}); complete one first"),
            "LimitExceeded",
        )],
    });
    Message::text(message.to_string())
}

/// Forgets an operation once the server completed it or answered it with errors.
fn finished(session: &Mutex<Session>, text: &str) {
    if let Ok(Envelope { kind, id: Some(id) }) = serde_json::from_str::<Envelope>(text)
        && matches!(kind.as_str(), "complete" | "error")
    {
        lock(session).running.remove(&id);
    }
}

/// The close frame graphql-transport-ws names for what async-graphql closes with.
fn close_code(message: Message, legacy: bool) -> Message {
    let Message::Close(Some(frame)) = &message else {
        return message;
    };
    if legacy {
        return Message::Close(Some(CloseFrame {
            code: frame.code,
            reason: within_close_frame(frame.reason.as_str()).into(),
        }));
    }
    let reason = frame.reason.as_str();
    let code = match (frame.code, reason) {
        (1002, reason) if reason.starts_with(FORBIDDEN) => 4403,
        (1002, _) => 4400,
        (1011, _) => 4401,
        (code, _) => code,
    };
    let reason = match code {
        4401 => "Unauthorized",
        _ => reason,
    };
    Message::Close(Some(CloseFrame {
        code,
        reason: within_close_frame(reason).into(),
    }))
}

/// `reason`, cut to the 123 bytes a close frame can carry.
fn within_close_frame(reason: &str) -> &str {
    const MOST: usize = 123;
    if reason.len() <= MOST {
        return reason;
    }
    let mut end = MOST;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    &reason[..end]
}

fn lock(session: &Mutex<Session>) -> std::sync::MutexGuard<'_, Session> {
    session
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(message: Message) -> (u16, String) {
        match message {
            Message::Close(Some(frame)) => (frame.code, frame.reason.to_string()),
            other => panic!("not a close frame: {other:?}"),
        }
    }

    fn close(code: u16, reason: &str) -> Message {
        Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        }))
    }

    #[test]
    fn async_graphql_s_close_frames_get_the_protocol_s_codes() {
        let refused = close_code(close(1002, "Forbidden: the API key is not valid"), false);
        assert_eq!(closed(refused).0, 4403);
        assert_eq!(
            closed(close_code(close(1002, "unknown variant"), false)).0,
            4400
        );
        let early = closed(close_code(
            close(1011, "The handshake is not completed."),
            false,
        ));
        assert_eq!(early, (4401, "Unauthorized".to_owned()));
        assert_eq!(closed(close_code(close(4429, "Too many"), false)).0, 4429);
        // The legacy protocol has no such codes.
        assert_eq!(
            closed(close_code(close(1002, "Forbidden: no"), true)).0,
            1002
        );
    }

    #[test]
    fn a_long_reason_is_cut_to_what_a_close_frame_carries() {
        let long = "é".repeat(100);
        let (_, reason) = closed(close_code(close(1002, &long), false));
        assert!(reason.len() <= 123 && long.starts_with(&reason), "{reason}");
    }

    #[test]
    fn ids_in_use_and_the_connection_s_limit_are_caught() {
        let session = Mutex::new(Session {
            running: HashSet::new(),
            initialised: false,
            most: 2,
        });
        let subscribe = |id: &str| format!(r#"{{"type":"subscribe","id":"{id}","payload":{{}}}}"#);
        // Before connection_init, async-graphql answers (4401).
        assert!(matches!(
            inspect(&session, &subscribe("a"), false),
            Verdict::Pass
        ));
        assert!(matches!(
            inspect(&session, r#"{"type":"connection_init"}"#, false),
            Verdict::Initialising
        ));
        assert!(matches!(
            inspect(&session, &subscribe("a"), false),
            Verdict::Pass
        ));
        match inspect(&session, &subscribe("a"), false) {
            Verdict::Close(frame) => assert_eq!(
                closed(frame),
                (4409, "Subscriber for a already exists".to_owned())
            ),
            _ => panic!("an id in use closes the connection"),
        }
        assert!(matches!(
            inspect(&session, &subscribe("b"), false),
            Verdict::Pass
        ));
        match inspect(&session, &subscribe("c"), false) {
            Verdict::Answer(Message::Text(text)) => {
                assert!(
                    text.contains("LimitExceeded") && text.contains("(2)"),
                    "{text}"
                );
            }
            _ => panic!("past the limit, the subscribe is answered here"),
        }
        // A completed id is free again, whoever completed it.
        finished(&session, r#"{"type":"complete","id":"a"}"#);
        assert!(matches!(
            inspect(&session, &subscribe("a"), false),
            Verdict::Pass
        ));
        assert!(matches!(
            inspect(&session, r#"{"type":"complete","id":"b"}"#, false),
            Verdict::Pass
        ));
        assert!(matches!(
            inspect(&session, &subscribe("c"), false),
            Verdict::Pass
        ));
    }

    #[test]
    fn credentials_are_found_in_a_payload_as_clients_send_them() {
        let top = Credentials::from_payload(&serde_json::json!({ "X-API-KEY": "k" }));
        assert_eq!(top.api_key.as_deref(), Some("k"));
        let nested = Credentials::from_payload(
            &serde_json::json!({ "headers": { "authorization": "Bearer t" } }),
        );
        assert_eq!(nested.authorization.as_deref(), Some("Bearer t"));
        assert!(Credentials::from_payload(&serde_json::json!(null)).is_empty());
    }
}
