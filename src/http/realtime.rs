//! AppSync's real-time WebSocket protocol, as AWS documents it ("Building a real-time WebSocket
//! client" in the AppSync developer guide) and `aws-amplify`'s subscriptions speak it: at
//! `/graphql/realtime`, and at `/graphql` for a socket that carries its credentials the AppSync
//! way (a `header-<base64url>` subprotocol or a `header` query parameter; without them,
//! `/graphql` speaks graphql-transport-ws and graphql-ws, in `websocket`).
//!
//! The handshake carries the connection's credentials: `header`, base64 JSON of `host` and
//! `x-api-key` or `Authorization` (a JWT with or without `Bearer`, a Lambda authorizer's token, or
//! IAM's SigV4 signature with its `x-amz-date` and the other headers it signed: of a POST of `{}`
//! to the endpoint's `/connect`, and, in a `start`, of a POST of its `payload.data` to the
//! endpoint, checked as a signed HTTP request is), in the query string or, as Amplify v6 sends it,
//! in a `header-<base64url>` subprotocol beside `graphql-ws`. Then `connection_init` →
//! `connection_ack` (with `connectionTimeoutMs`) and a `ka` every minute; `start` (`payload.data`,
//! a JSON string holding the query and its variables; `payload.extensions.authorization`, the
//! credentials of that subscription, which may differ from the connection's) → `start_ack`, a
//! `data` message per event, and `error` messages in AppSync's shape; `stop` → `complete`.
//! AppSync's error types name what goes wrong: `UnauthorizedException`, `BadRequestException`,
//! `MaxSubscriptionsReachedError`, `DuplicatedOperationError`, `UnsupportedOperation`.
//!
//! Each subscription runs through [`Transport`](crate::graphql::Transport), as those of
//! graphql-transport-ws and SSE do: the same engine, rules, filters, limits and relays. The
//! socket keeps the bounds of the others: the connection count, the sockets waiting for
//! `connection_init` (`--max-pending-sockets`), the operations per connection, the message
//! size; it closes when the token expires (`4403`) and when the server stops (`1012`).
//!
//! No crate speaks this protocol on a server (async-graphql's WebSocket knows
//! graphql-transport-ws and graphql-ws only), so this module is the protocol alone, over
//! axum's WebSocket.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_graphql::Data;
use axum::extract::FromRequestParts;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::state::AppState;
use super::websocket::Counted;
use crate::auth::{API_KEY_HEADER, Caller, RequestContext, SignedRequest};
use crate::graphql::{Admitted, RequestHeaders, appsync};

/// The subprotocol AppSync's clients ask for (beside the one carrying their credentials).
const PROTOCOL: &str = "graphql-ws";
/// The prefix of the subprotocol that carries the credentials, base64url-encoded.
const HEADER_PROTOCOL: &str = "header-";
/// How long a client waits for a `ka` before it gives the connection up, as AppSync says.
const CONNECTION_TIMEOUT_MS: u64 = 300_000;
/// How often a `ka` is sent: well within [`CONNECTION_TIMEOUT_MS`].
const KEEP_ALIVE: Duration = Duration::from_secs(60);
/// How long a client has to send `connection_init` after the upgrade.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
/// The messages a connection may have waiting to be written: past it, the client reads too
/// slowly and the connection closes (`1008`) rather than hold its events in memory.
const QUEUE: usize = 256;
/// How long the last messages of a closing connection may take to be written.
const WRITE_PATIENCE: Duration = Duration::from_secs(5);

/// Whether an upgrade to `/graphql` carries AppSync's credentials, and so speaks its protocol.
pub(super) fn carries_credentials(parts: &Parts) -> bool {
    header_subprotocol(&parts.headers).is_some() || header_parameter(parts).is_some()
}

/// `/graphql/realtime`: an upgrade to AppSync's protocol, or a clear error.
pub(super) async fn realtime(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, _) = request.into_parts();
    if !super::websocket::is_upgrade(&parts.headers) {
        let body = json!({ "errors": [appsync::realtime_entry(
            "/graphql/realtime takes a WebSocket that speaks AppSync's real-time protocol; send \
             queries and mutations to /graphql",
            "BadRequestException",
        )] });
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    upgrade(state, parts).await
}

/// Answers an upgrade to AppSync's protocol. A handshake whose `header` cannot be read is
/// answered on the socket, at `connection_init`, as AppSync answers it.
pub(super) async fn upgrade(state: AppState, mut parts: Parts) -> Response {
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            let body = json!({ "errors": [{ "message": rejection.body_text() }] });
            return (rejection.status(), axum::Json(body)).into_response();
        }
    };
    let handshake = Handshake::read(&parts);
    let headers = super::state::request_headers(&parts.headers);
    let endpoint = endpoint_of(parts.uri.path());
    super::websocket::bounded(upgrade, &state)
        .protocols([PROTOCOL])
        .on_upgrade(move |socket| serve(state, socket, handshake, (headers, endpoint)))
}

/// What went wrong, as AppSync names it: its error type, its HTTP-like code and a message.
#[derive(Debug, Clone)]
struct Refusal {
    error_type: std::borrow::Cow<'static, str>,
    code: u16,
    message: String,
}

impl Refusal {
    fn bad_request(message: impl Into<String>) -> Refusal {
        Refusal {
            error_type: "BadRequestException".into(),
            code: 400,
            message: message.into(),
        }
    }

    fn unauthorized(message: impl Into<String>) -> Refusal {
        Refusal {
            error_type: "UnauthorizedException".into(),
            code: 401,
            message: message.into(),
        }
    }

    /// A request error of the admission, with the type it names (`QueryLimitExceeded`,
    /// `InvalidSyntax` …).
    fn of(error: &async_graphql::ServerError) -> Refusal {
        Refusal {
            error_type: appsync::error_type(error).into(),
            code: 400,
            message: error.message.clone(),
        }
    }

    /// Its entry of an `errors` list.
    fn error(&self) -> Value {
        appsync::realtime_refusal(&self.error_type, self.code, &self.message)
    }
}

/// The credentials a handshake or a `start` presents: the entries of its `header` (or
/// `authorization`) object, names in lower case. `None`: it presented none.
#[derive(Debug, Default, Clone)]
struct Handshake {
    credentials: Option<HashMap<String, String>>,
}

impl Handshake {
    fn read(parts: &Parts) -> Result<Handshake, Refusal> {
        let encoded = header_subprotocol(&parts.headers).or_else(|| header_parameter(parts));
        let Some(encoded) = encoded else {
            return Ok(Handshake::default());
        };
        let decoded = decode(&encoded).ok_or_else(|| {
            Refusal::bad_request("the header parameter is not base64-encoded JSON")
        })?;
        let object = serde_json::from_slice::<Value>(&decoded)
            .ok()
            .and_then(|value| value.as_object().cloned())
            .ok_or_else(|| Refusal::bad_request("the header parameter is not a JSON object"))?;
        let credentials = credentials_of(&object)?;
        Ok(Handshake {
            credentials: Some(credentials),
        })
    }
}

/// The entries of a credentials object, checked as AppSync checks them: `host` is given.
fn credentials_of(
    object: &serde_json::Map<String, Value>,
) -> Result<HashMap<String, String>, Refusal> {
    let credentials: HashMap<String, String> = object
        .iter()
        .filter_map(|(name, value)| Some((name.to_ascii_lowercase(), value.as_str()?.to_owned())))
        .collect();
    if !credentials.contains_key("host") {
        return Err(Refusal::bad_request(
            "the credentials name no host: give the API's host, as AppSync's clients do",
        ));
    }
    Ok(credentials)
}

/// base64 in any of its alphabets, padded or not (the query parameter is standard base64, the
/// subprotocol base64url).
fn decode(encoded: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let trimmed = encoded.trim_end_matches('=');
    URL_SAFE_NO_PAD
        .decode(trimmed)
        .or_else(|_| STANDARD_NO_PAD.decode(trimmed))
        .ok()
}

/// The credentials Amplify v6 sends in a `header-<base64url>` subprotocol.
fn header_subprotocol(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(|protocol| protocol.trim().strip_prefix(HEADER_PROTOCOL))
        .map(str::to_owned)
}

/// The `header` query parameter of the handshake AppSync documents.
fn header_parameter(parts: &Parts) -> Option<String> {
    let query = parts.uri.query()?;
    // A `+` of base64 sent unencoded reads as a space in a query string: read back as `+`.
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "header")
        .map(|(_, value)| value.replace(' ', "+"))
}

/// The path of the GraphQL endpoint a socket at `path` stands for: `/graphql` for
/// `/graphql/realtime`, as Amplify derives the one from the other.
fn endpoint_of(path: &str) -> String {
    path.strip_suffix("/realtime").unwrap_or(path).to_owned()
}

/// The request IAM credentials are a signature of, as AppSync's clients sign it (AppSync's
/// "Building a real-time WebSocket client", and aws-amplify's `awsRealTimeIAMHeader`): a POST
/// to the endpoint's `/connect` of `{}` for the handshake, a POST to the endpoint of the
/// `start`'s `payload.data` for a subscription; the credentials object holds the headers signed.
struct Signed<'a> {
    path: String,
    body: &'a str,
}

impl Signed<'_> {
    fn handshake(endpoint: &str) -> Signed<'static> {
        Signed {
            path: format!("{endpoint}/connect"),
            body: "{}",
        }
    }

    fn request(self, credentials: Option<&HashMap<String, String>>) -> SignedRequest {
        let headers = credentials
            .into_iter()
            .flatten()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        SignedRequest {
            method: "POST".to_owned(),
            path_and_query: self.path,
            authority: None,
            headers,
            body: bytes::Bytes::copy_from_slice(self.body.as_bytes()),
        }
    }
}

/// Who presents `credentials` (signed, for IAM, as `signed` says): with no authentication
/// configured, anyone.
async fn caller_of(
    state: &AppState,
    credentials: Option<&HashMap<String, String>>,
    headers: &RequestHeaders,
    signed: Signed<'_>,
) -> Result<Caller, Refusal> {
    let Some(auth) = state.inner.auth.as_deref() else {
        return Ok(Caller::Anonymous);
    };
    let get = |name: &str| credentials.and_then(|c| c.get(name)).map(String::as_str);
    auth.authenticate(
        get(header::AUTHORIZATION.as_str()),
        get(API_KEY_HEADER),
        &RequestContext {
            headers: headers.0.clone(),
            signed: signed.request(credentials),
            ..RequestContext::default()
        },
    )
    .await
    .map_err(|reason| match reason {
        // Not the client's fault, and worth retrying: not a 401, which AppSync's clients
        // give up on.
        crate::auth::Unauthorized::AuthorizerUnavailable => Refusal {
            error_type: "InternalFailure".into(),
            code: 500,
            message: reason.to_string(),
        },
        reason => Refusal::unauthorized(reason.to_string()),
    })
}

/// One connection: what it has said and what runs on it.
struct Connection {
    state: AppState,
    out: mpsc::Sender<Message>,
    handshake: Result<Handshake, Refusal>,
    headers: RequestHeaders,
    /// The path of the GraphQL endpoint the socket stands for (what IAM credentials sign).
    endpoint: String,
    /// The connection's caller, once `connection_init` is acknowledged.
    caller: Option<Caller>,
    /// The subscriptions running, by id.
    running: HashMap<String, Running>,
    /// The generation the next subscription gets: an id may be used again once stopped.
    next_generation: u64,
    /// Told of each subscription that ends by itself.
    done: mpsc::UnboundedSender<Ended>,
    /// The client reads too slowly: its messages no longer fit the queue.
    overwhelmed: bool,
}

/// A subscription running on the connection.
struct Running {
    generation: u64,
    task: tokio::task::AbortHandle,
}

/// A subscription that ended by itself: its events are over (`complete`), or it failed (its
/// `error` sent).
struct Ended {
    id: String,
    generation: u64,
    failed: bool,
}

impl Drop for Connection {
    /// Its subscriptions end with it, however it ends.
    fn drop(&mut self) {
        for running in self.running.values() {
            running.task.abort();
        }
    }
}

async fn serve(
    state: AppState,
    socket: WebSocket,
    handshake: Result<Handshake, Refusal>,
    (headers, endpoint): (RequestHeaders, String),
) {
    let _counted = Counted::new(state.clone());
    let waiting = state.inner.pending.enter();
    let (sink, mut incoming) = socket.split();
    let (out, outgoing) = mpsc::channel::<Message>(QUEUE);
    let writer = tokio::spawn(tokio_stream_of(outgoing).map(Ok).forward(sink));
    let (done, mut ended) = mpsc::unbounded_channel::<Ended>();
    let mut closing = state.inner.closing.subscribe();
    let mut connection = Connection {
        state,
        out,
        handshake,
        headers,
        endpoint,
        caller: None,
        running: HashMap::new(),
        next_generation: 0,
        done,
        overwhelmed: false,
    };
    let mut keep_alive =
        tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    let init_deadline = tokio::time::sleep(INIT_TIMEOUT);
    tokio::pin!(init_deadline);
    let evicted = waiting.evicted();
    tokio::pin!(evicted);
    let mut expiry = futures::future::Either::Left(std::future::pending::<()>());
    let close = loop {
        if connection.overwhelmed {
            break Some((1008, "the client reads its messages too slowly".to_owned()));
        }
        let acknowledged = connection.caller.is_some();
        tokio::select! {
            message = incoming.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    match connection.on_message(text.as_str()).await {
                        Step::Go => {}
                        Step::Acknowledged(exp) => {
                            waiting.initialised();
                            expiry = futures::future::Either::Right(Box::pin(crate::auth::expired(exp)));
                        }
                        Step::Close(code, reason) => break Some((code, reason)),
                    }
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break None,
                Some(Ok(_)) => {}
            },
            _ = keep_alive.tick(), if acknowledged => connection.send(json!({ "type": "ka" })),
            () = &mut init_deadline, if !acknowledged => {
                break Some((4408, "Connection initialisation timeout".to_owned()));
            }
            () = &mut evicted, if !acknowledged => break Some((
                4408,
                "Connection initialisation timeout: too many connections wait to initialise"
                    .to_owned(),
            )),
            () = &mut expiry => {
                connection.send(json!({ "type": "error", "payload": { "errors": [
                    Refusal::unauthorized("Token has expired.").error()
                ] } }));
                break Some((4403, "Forbidden: the token expired".to_owned()));
            }
            // 1012 (service restart): clients reconnect, to another replica or this one restarted.
            () = async { let _ = closing.wait_for(|closing| *closing).await; } => {
                break Some((1012, "the server is restarting".to_owned()));
            }
            Some(ended) = ended.recv() => connection.ended(ended),
        }
    };
    for (_, running) in connection.running.drain() {
        running.task.abort();
    }
    if let Some((code, reason)) = close {
        // Not waited for: a client that reads nothing does not hold the connection open.
        let _ = connection.out.try_send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })));
    }
    drop(connection);
    let writing = writer.abort_handle();
    if tokio::time::timeout(WRITE_PATIENCE, writer).await.is_err() {
        writing.abort();
    }
}

/// The receiver as a stream.
fn tokio_stream_of(mut receiver: mpsc::Receiver<Message>) -> impl futures::Stream<Item = Message> {
    futures::stream::poll_fn(move |context| receiver.poll_recv(context))
}

/// What a message leaves the connection to do.
enum Step {
    Go,
    /// `connection_init` was acknowledged; the caller's token expires then (seconds since the
    /// epoch), if it does.
    Acknowledged(Option<u64>),
    /// The connection ends with this close frame.
    Close(u16, String),
}

impl Connection {
    /// Queues `message`; a queue that is full marks the client as too slow.
    fn send(&mut self, message: Value) {
        if let Err(mpsc::error::TrySendError::Full(_)) =
            self.out.try_send(Message::text(message.to_string()))
        {
            self.overwhelmed = true;
        }
    }

    /// An `error` message about the operation `id` (or the connection, without one).
    fn error(&mut self, id: Option<&str>, refusal: Refusal) {
        let mut message = json!({ "type": "error", "payload": { "errors": [refusal.error()] } });
        if let Some(id) = id {
            message["id"] = json!(id);
        }
        self.send(message);
    }

    /// A subscription ended by itself: forgotten (unless its id names a newer one) and, when
    /// its events are over, `complete`d.
    fn ended(&mut self, ended: Ended) {
        let current = self
            .running
            .get(&ended.id)
            .is_some_and(|running| running.generation == ended.generation);
        if !current {
            return;
        }
        self.running.remove(&ended.id);
        if !ended.failed {
            self.send(json!({ "type": "complete", "id": ended.id }));
        }
    }

    async fn on_message(&mut self, text: &str) -> Step {
        let Some(message) = serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
        else {
            self.error(
                None,
                Refusal::bad_request("a message is a JSON object with a type"),
            );
            return Step::Go;
        };
        let id = message.get("id").and_then(Value::as_str);
        match message.get("type").and_then(Value::as_str) {
            Some("connection_init") => self.connection_init().await,
            Some("start") => {
                self.start(id, message.get("payload")).await;
                Step::Go
            }
            Some("stop") => {
                if let Some(id) = id {
                    if let Some(running) = self.running.remove(id) {
                        running.task.abort();
                    }
                    self.send(json!({ "type": "complete", "id": id }));
                }
                Step::Go
            }
            other => {
                let named = other.unwrap_or("a message without a type");
                self.error(
                    id,
                    Refusal {
                        error_type: "UnsupportedOperation".into(),
                        code: 400,
                        message: format!("{named} is not supported through the realtime channel"),
                    },
                );
                Step::Go
            }
        }
    }

    /// `connection_init`: the handshake's credentials, checked; `connection_ack` and a first
    /// `ka`, or `connection_error` and the end of the connection.
    async fn connection_init(&mut self) -> Step {
        if self.caller.is_some() {
            self.acknowledge();
            return Step::Go;
        }
        let checked = match &self.handshake {
            Ok(handshake) => {
                let signed = Signed::handshake(&self.endpoint);
                caller_of(
                    &self.state,
                    handshake.credentials.as_ref(),
                    &self.headers,
                    signed,
                )
                .await
            }
            Err(refusal) => Err(refusal.clone()),
        };
        match checked {
            Ok(caller) => {
                let exp = caller.expires_at();
                self.caller = Some(caller);
                self.acknowledge();
                Step::Acknowledged(exp)
            }
            Err(refusal) => {
                match &self.state.inner.auth {
                    Some(auth) if refusal.code == 401 => {
                        auth.refused(crate::auth::Transport::Realtime, &refusal.message);
                    }
                    _ => tracing::info!(
                        reason = %refusal.message,
                        "refused an AppSync real-time connection"
                    ),
                }
                self.send(json!({
                    "type": "connection_error",
                    "payload": { "errors": [refusal.error()] },
                }));
                let code = match refusal.code {
                    401 => 4401,
                    _ => 4400,
                };
                Step::Close(code, refusal.error_type.into_owned())
            }
        }
    }

    fn acknowledge(&mut self) {
        self.send(json!({
            "type": "connection_ack",
            "payload": { "connectionTimeoutMs": CONNECTION_TIMEOUT_MS },
        }));
        self.send(json!({ "type": "ka" }));
    }

    /// `start`: a subscription, run with the credentials of its own `authorization` (or the
    /// connection's).
    async fn start(&mut self, id: Option<&str>, payload: Option<&Value>) {
        let Some(id) = id.filter(|id| !id.is_empty()) else {
            self.error(None, Refusal::bad_request("start needs an id"));
            return;
        };
        match self.request_of(id, payload).await {
            Ok((request, caller, own)) => self.run(id.to_owned(), request, caller, own),
            Err(refusal) => self.error(Some(id), refusal),
        }
    }

    /// The admitted request and the caller of a `start` (and whether the `start` brought
    /// credentials of its own), or why it cannot run: its credentials are checked first (its own `authorization`, or the connection's), then the
    /// request passes the admission every transport's requests pass.
    async fn request_of(
        &self,
        id: &str,
        payload: Option<&Value>,
    ) -> Result<(Admitted, Caller, bool), Refusal> {
        let Some(connection_caller) = &self.caller else {
            return Err(Refusal::bad_request(
                "start before connection_ack: send connection_init first",
            ));
        };
        if self.running.contains_key(id) {
            return Err(Refusal {
                error_type: "DuplicatedOperationError".into(),
                code: 400,
                message: format!("Duplicate operation with Id {id}"),
            });
        }
        let most = self.state.inner.max_subscriptions_per_connection;
        if self.running.len() >= most {
            return Err(Refusal {
                error_type: "MaxSubscriptionsReachedError".into(),
                code: 400,
                message: format!("Max number of {most} subscriptions reached"),
            });
        }
        // Each subscription may bring credentials of its own, as AppSync allows.
        let authorization = payload
            .and_then(|payload| payload.pointer("/extensions/authorization"))
            .and_then(Value::as_object);
        let own = authorization.is_some();
        let caller = match authorization {
            Some(object) => {
                let credentials = credentials_of(object)?;
                let signed = Signed {
                    path: self.endpoint.clone(),
                    body: payload
                        .and_then(|payload| payload.get("data"))
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                };
                caller_of(&self.state, Some(&credentials), &self.headers, signed).await?
            }
            None => connection_caller.clone(),
        };
        let request = request_in(payload)?;
        let mut admitted = self
            .state
            .inner
            .api
            .admit(request)
            .map_err(|error| Refusal::of(&error))?;
        if let Some(kind) = admitted.operation_type()
            && kind != async_graphql::parser::types::OperationType::Subscription
        {
            return Err(Refusal {
                error_type: "UnsupportedOperation".into(),
                code: 400,
                message: format!(
                    "the realtime channel takes subscriptions; send a {kind} to /graphql"
                ),
            });
        }
        Ok((admitted, caller, own))
    }

    /// Runs a subscription: `start_ack` once it is in place (every event from then on reaches
    /// it), a `data` message per event, and `complete` when its events are over; an `error`
    /// instead when it cannot run, or when it ends on an error (`EventsMissed`,
    /// `EventTooLarge`), which aws-amplify hands its subscriber where it would drop a `data`
    /// without data.
    fn run(&mut self, id: String, admitted: Admitted, caller: Caller, own_credentials: bool) {
        let (in_place, placed) = crate::graphql::InPlace::new();
        // A subscription started with a token of its own ends when that token expires; the
        // connection's token ends the whole connection instead.
        let expires = own_credentials.then(|| caller.expires_at()).flatten();
        let mut data = Data::default();
        data.insert(caller);
        data.insert(self.headers.clone());
        data.insert(in_place);
        let events = self
            .state
            .transport()
            .stream(admitted, Some(Arc::new(data)));
        let out = self.out.clone();
        let done = self.done.clone();
        let generation = self.next_generation;
        self.next_generation += 1;
        let running_id = id.clone();
        let task = tokio::spawn(async move {
            let ended = forward(&running_id, events, placed, expires, &out).await;
            // The connection sends `complete`, unless the id has been stopped or used again.
            let _ = done.send(Ended {
                id: running_id,
                generation,
                failed: ended == Forwarded::Failed,
            });
        });
        self.running.insert(
            id,
            Running {
                generation,
                task: task.abort_handle(),
            },
        );
    }
}

/// The request a `start`'s `payload.data` holds: a JSON string of the query, its variables
/// and its operation's name.
fn request_in(payload: Option<&Value>) -> Result<async_graphql::Request, Refusal> {
    let data = payload
        .and_then(|payload| payload.get("data"))
        .and_then(Value::as_str)
        .and_then(|data| serde_json::from_str::<Value>(data).ok())
        .filter(Value::is_object)
        .ok_or_else(|| {
            Refusal::bad_request(
                "payload.data must be a JSON string holding the query and its variables",
            )
        })?;
    let Some(query) = data.get("query").and_then(Value::as_str) else {
        return Err(Refusal::bad_request("payload.data holds no query"));
    };
    let mut request = async_graphql::Request::new(query);
    if let Some(variables) = data.get("variables").filter(|v| !v.is_null()) {
        request = request.variables(async_graphql::Variables::from_json(variables.clone()));
    }
    if let Some(name) = data.get("operationName").and_then(Value::as_str) {
        request = request.operation_name(name);
    }
    Ok(request)
}

/// How a subscription's forwarding ended.
#[derive(PartialEq, Eq)]
enum Forwarded {
    /// Its events are over.
    Over,
    /// It ended on an error, sent.
    Failed,
    /// The connection is gone.
    Gone,
}

/// Sends a subscription's messages: `start_ack` once it is in place (or with its first
/// answer), then its events; an answer with errors and no data is its `error`, and its end.
/// When the subscription's token `expires`, an `UnauthorizedException` error ends it.
async fn forward(
    id: &str,
    mut events: futures::stream::BoxStream<'static, async_graphql::Response>,
    mut placed: tokio::sync::oneshot::Receiver<()>,
    expires: Option<u64>,
    out: &mpsc::Sender<Message>,
) -> Forwarded {
    let send = |message: Value| out.send(Message::text(message.to_string()));
    let mut acknowledged = false;
    // Whether `placed` may still be told: a oneshot is never polled once it has answered.
    let mut waiting = true;
    let expired = crate::auth::expired(expires);
    tokio::pin!(expired);
    loop {
        let response = tokio::select! {
            biased;
            told = &mut placed, if waiting && !acknowledged => {
                waiting = false;
                if told.is_ok() {
                    acknowledged = true;
                    if send(json!({ "type": "start_ack", "id": id })).await.is_err() {
                        return Forwarded::Gone;
                    }
                }
                continue;
            }
            () = &mut expired => {
                let errors = [Refusal::unauthorized("Token has expired.").error()];
                let error = json!({ "type": "error", "id": id, "payload": { "errors": errors } });
                return match send(error).await {
                    Ok(()) => Forwarded::Failed,
                    Err(_) => Forwarded::Gone,
                };
            }
            response = events.next() => response,
        };
        let Some(response) = response else {
            if !acknowledged
                && send(json!({ "type": "start_ack", "id": id }))
                    .await
                    .is_err()
            {
                return Forwarded::Gone;
            }
            return Forwarded::Over;
        };
        if response.data == async_graphql::Value::Null && !response.errors.is_empty() {
            let errors = appsync::realtime_errors(&response);
            let error = json!({ "type": "error", "id": id, "payload": { "errors": errors } });
            return match send(error).await {
                Ok(()) => Forwarded::Failed,
                Err(_) => Forwarded::Gone,
            };
        }
        if !acknowledged {
            acknowledged = true;
            if send(json!({ "type": "start_ack", "id": id }))
                .await
                .is_err()
            {
                return Forwarded::Gone;
            }
        }
        // Waits while the connection's queue is full; the connection ends it then.
        if send(data_message(id, &response)).await.is_err() {
            return Forwarded::Gone;
        }
    }
}

/// An event as AppSync sends it: `data` with the response's data and errors.
fn data_message(id: &str, response: &async_graphql::Response) -> Value {
    let mut payload = json!({ "data": response.data });
    if !response.errors.is_empty() {
        payload["errors"] = Value::Array(appsync::realtime_errors(response));
    }
    json!({ "type": "data", "id": id, "payload": payload })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_read_in_either_base64_alphabet_and_need_a_host() {
        let header = r#"{"host":"example.com","x-api-key":"da2-abc?>"}"#;
        for encoded in [
            base64::engine::general_purpose::STANDARD.encode(header),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header),
        ] {
            let decoded = decode(&encoded).expect("base64");
            assert_eq!(decoded, header.as_bytes());
        }
        let object = json!({ "Host": "example.com", "X-Api-Key": "k", "n": 1 });
        let credentials = credentials_of(object.as_object().expect("an object")).expect("a host");
        assert_eq!(credentials.get("x-api-key").map(String::as_str), Some("k"));
        assert!(!credentials.contains_key("n"), "only text values");
        let refused = credentials_of(json!({ "x-api-key": "k" }).as_object().expect("an object"));
        assert_eq!(
            refused.expect_err("no host").error_type,
            "BadRequestException"
        );
        assert!(decode("not base64!").is_none());
    }
}
