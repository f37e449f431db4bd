//! GraphQL over Server-Sent Events, both modes of graphql-sse's protocol (its PROTOCOL.md).
//!
//! **Distinct connections**: a `POST /graphql` that accepts `text/event-stream` answers a stream
//! of `next` events, each one GraphQL response, and a `complete` event when the operation ends.
//! A subscription's stream lasts until the client goes away; a query or a mutation answers one
//! `next`.
//!
//! **Single connection** ([`Streams`]): a `PUT /graphql` reserves a stream and answers `201`
//! with its token; a `GET` (or a `POST`) that accepts `text/event-stream` and carries the token
//! (in `x-graphql-event-stream-token`, or the `token` query parameter, for `EventSource`) opens
//! the one stream of that reservation. Operations are then `POST`ed with the token and
//! `extensions.operationId`, answered `202`, and their results arrive on the stream as `next`
//! and `complete` events whose data carries the operation's `id` (`{ id, payload }`);
//! `DELETE /graphql?operationId=` stops one. A request error (the document does not parse,
//! validate or pass the limits) is the operation's one `next`, as in the other mode: the
//! graphql-sse client reads anything but `202` as a network failure and retries it. A
//! reservation whose stream has not opened within its time to live is forgotten; a stream that
//! closes stops its operations and ends its reservation. A reservation lives in this process
//! only: behind a load balancer, one client's requests must reach one replica.
//!
//! Operations run exactly as over the WebSocket transports (`graphql::Transport`): the same
//! limits, each event with a request scope of its own, with the credentials of the request that
//! sent them, checked by the guard before anything runs. A reservation belongs to the caller
//! who made it: another caller's requests with its token find no stream.
//!
//! # Why not a crate
//!
//! async-graphql-axum serves GraphQL over WebSocket only, and no Rust crate speaks graphql-sse's
//! protocol; axum's `Sse` writes the events.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_graphql::{Data, Executor as _};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio::sync::mpsc;

use super::state::AppState;
use crate::auth::Caller;

/// The header that carries a reservation's token.
pub const SSE_TOKEN_HEADER: &str = "x-graphql-event-stream-token";

/// Events an operation may have sent ahead of the stream: a stream that reads nothing (or is
/// not open yet) holds its operations back here, and a subscription further behind misses
/// events as it would over a WebSocket (`EventsMissed`).
const STREAM_BUFFER: usize = 256;

/// The answer to `request` as an event stream (distinct connections mode).
pub(super) fn answer(
    state: &AppState,
    caller: Caller,
    request: async_graphql::Request,
) -> Response {
    let mut data = Data::default();
    data.insert(caller);
    let responses = state
        .transport()
        .execute_stream(request, Some(Arc::new(data)));
    let events = responses
        .map(|response| Event::default().event("next").json_data(&response))
        .chain(futures::stream::once(async {
            Ok(Event::default().event("complete").data(""))
        }));
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The reservations of single connection mode, in this process.
pub(super) struct Streams {
    reservations: Mutex<HashMap<String, Reservation>>,
    /// How long a reservation waits for its stream to open.
    ttl: Duration,
    /// Reservations held at most; past it, a `PUT` answers 429.
    limit: usize,
}

struct Reservation {
    /// Who made it (see [`owner_of`]); only their requests find it.
    owner: String,
    reserved_at: Instant,
    /// Where operations send their events; the stream reads them.
    sender: mpsc::Sender<Event>,
    /// Taken by the one stream that fulfils the reservation; `None` once it is open.
    receiver: Option<mpsc::Receiver<Event>>,
    /// The operations running on it, by id; `None` while one is being started.
    operations: HashMap<String, Option<tokio::task::AbortHandle>>,
}

impl Reservation {
    fn expired(&self, ttl: Duration) -> bool {
        self.receiver.is_some() && self.reserved_at.elapsed() >= ttl
    }
}

/// What a reservation answers to: the caller's kind and, for a token, its issuer and subject.
fn owner_of(caller: &Caller) -> String {
    match caller {
        Caller::Anonymous => "anonymous".to_owned(),
        Caller::ApiKey => "api-key".to_owned(),
        Caller::Token(_) => {
            let claim = |name| {
                caller
                    .claim(name)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
            };
            format!("token {} {}", claim("iss"), claim("sub"))
        }
    }
}

/// The token a request carries: its header, or the `token` query parameter.
pub(super) fn token_of(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(token) = headers.get(SSE_TOKEN_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(token.to_owned());
    }
    query_parameter(query, "token")
}

/// The query parameter `name` of a request's query string, decoded.
pub(super) fn query_parameter(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// `{"errors": [{"message": …}]}` with `status`.
fn refusal(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "errors": [{ "message": message }] });
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

impl Streams {
    pub(super) fn new(ttl: Duration, limit: usize) -> Streams {
        Streams {
            reservations: Mutex::default(),
            ttl,
            limit,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Reservation>> {
        self.reservations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `PUT`: a new reservation for `caller`; `201` with its token.
    pub(super) fn reserve(&self, caller: &Caller) -> Response {
        let mut reservations = self.lock();
        let ttl = self.ttl;
        reservations.retain(|_, reservation| !reservation.expired(ttl));
        if reservations.len() >= self.limit {
            return refusal(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "this server holds {} event stream reservations, its most; try again later",
                    self.limit
                ),
            );
        }
        // From the operating system's CSPRNG: whoever holds the token reads the stream.
        let token = uuid::Uuid::new_v4().simple().to_string();
        let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
        reservations.insert(
            token.clone(),
            Reservation {
                owner: owner_of(caller),
                reserved_at: Instant::now(),
                sender,
                receiver: Some(receiver),
                operations: HashMap::new(),
            },
        );
        (
            StatusCode::CREATED,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            )],
            token,
        )
            .into_response()
    }

    /// Ends a reservation: its stream closed. Its operations stop.
    fn end(&self, token: &str) {
        let ended = self.lock().remove(token);
        for handle in ended
            .into_iter()
            .flat_map(|r| r.operations.into_values())
            .flatten()
        {
            handle.abort();
        }
    }
}

/// `GET` or `POST` accepting `text/event-stream` with a token: opens the reservation's stream.
/// The stream itself needs no credentials (a browser's `EventSource` cannot send them): its
/// token is its ticket.
pub(super) fn open(state: &AppState, token: &str) -> Response {
    let streams = &state.inner.sse;
    let receiver = {
        let mut reservations = streams.lock();
        let ttl = streams.ttl;
        match reservations.get_mut(token) {
            Some(reservation) if reservation.expired(ttl) => {
                reservations.remove(token);
                return refusal(StatusCode::NOT_FOUND, "Stream not found");
            }
            None => return refusal(StatusCode::NOT_FOUND, "Stream not found"),
            Some(reservation) => match reservation.receiver.take() {
                Some(receiver) => receiver,
                None => return refusal(StatusCode::CONFLICT, "Stream already open"),
            },
        }
    };
    // Dropped with the response's body: when the client goes away, the reservation ends.
    let ending = Ending {
        state: state.clone(),
        token: token.to_owned(),
    };
    let events = futures::stream::unfold((receiver, ending), |(mut receiver, ending)| async {
        let event = receiver.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(event), (receiver, ending)))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Ends a reservation when the stream that fulfilled it is dropped.
struct Ending {
    state: AppState,
    token: String,
}

impl Drop for Ending {
    fn drop(&mut self) {
        self.state.inner.sse.end(&self.token);
    }
}

/// `POST` with a token: runs `request` on the reservation's stream; `202`.
pub(super) fn run(
    state: &AppState,
    caller: Caller,
    token: &str,
    request: async_graphql::Request,
) -> Response {
    let id = match request.extensions.get("operationId") {
        Some(async_graphql::Value::String(id)) if !id.is_empty() => id.clone(),
        Some(async_graphql::Value::Number(id)) => id.to_string(),
        _ => return refusal(StatusCode::BAD_REQUEST, "Operation ID is missing"),
    };
    let streams = &state.inner.sse;
    let sender = {
        let mut reservations = streams.lock();
        let ttl = streams.ttl;
        let Some(reservation) = reservations
            .get_mut(token)
            .filter(|r| r.owner == owner_of(&caller) && !r.expired(ttl))
        else {
            return refusal(StatusCode::NOT_FOUND, "Stream not found");
        };
        if reservation.operations.contains_key(&id) {
            return refusal(StatusCode::CONFLICT, "Operation with ID already exists");
        }
        reservation.operations.insert(id.clone(), None);
        reservation.sender.clone()
    };
    let mut data = Data::default();
    data.insert(caller);
    let responses = state
        .transport()
        .execute_stream(request, Some(Arc::new(data)));
    let task = {
        let (state, token, id) = (state.clone(), token.to_owned(), id.clone());
        tokio::spawn(async move {
            let mut responses = responses;
            while let Some(response) = responses.next().await {
                // Serialized as it is: through a `serde_json::Value` its fields would be
                // sorted, not in the order the query selected them.
                let event = Event::default().event("next").json_data(OperationResult {
                    id: &id,
                    payload: &response,
                });
                let Ok(event) = event else { continue };
                if sender.send(event).await.is_err() {
                    // The stream is gone, and with it the reservation.
                    return;
                }
            }
            let complete = Event::default()
                .event("complete")
                .json_data(serde_json::json!({ "id": id }));
            if let Ok(complete) = complete {
                let _ = sender.send(complete).await;
            }
            if let Some(reservation) = state.inner.sse.lock().get_mut(&token) {
                reservation.operations.remove(&id);
            }
        })
    };
    if let Some(slot) = streams
        .lock()
        .get_mut(token)
        .and_then(|r| r.operations.get_mut(&id))
    {
        *slot = Some(task.abort_handle());
    }
    StatusCode::ACCEPTED.into_response()
}

/// The data of a `next` event in single connection mode.
#[derive(serde::Serialize)]
struct OperationResult<'a> {
    id: &'a str,
    payload: &'a async_graphql::Response,
}

/// `DELETE ?operationId=` with a token: stops that operation; `200`.
pub(super) fn stop(state: &AppState, caller: &Caller, token: &str, id: Option<&str>) -> Response {
    let Some(id) = id.filter(|id| !id.is_empty()) else {
        return refusal(StatusCode::BAD_REQUEST, "Operation ID is missing");
    };
    let streams = &state.inner.sse;
    let (stopped, sender) = {
        let mut reservations = streams.lock();
        let Some(reservation) = reservations
            .get_mut(token)
            .filter(|r| r.owner == owner_of(caller))
        else {
            return refusal(StatusCode::NOT_FOUND, "Stream not found");
        };
        (
            reservation.operations.remove(id),
            reservation.sender.clone(),
        )
    };
    if let Some(handle) = stopped.flatten() {
        handle.abort();
        // Told, as an operation that ends by itself is; a stream with no room left misses it.
        if let Ok(complete) = Event::default()
            .event("complete")
            .json_data(serde_json::json!({ "id": id }))
        {
            let _ = sender.try_send(complete);
        }
    }
    StatusCode::OK.into_response()
}
