//! GraphQL over Server-Sent Events, both modes of graphql-sse's protocol (its PROTOCOL.md).
//!
//! **Distinct connections**: a `POST /graphql` that accepts `text/event-stream` answers a stream
//! of `next` events, each one GraphQL response, and a `complete` event when the operation ends.
//! A subscription's stream lasts until the client goes away; a query or a mutation answers one
//! `next`.
//!
//! **Single connection** (`sse_reservations`): a `PUT /graphql` reserves a stream and answers `201`
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

use std::sync::Arc;

use async_graphql::{Data, Executor as _};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::sse_reservations::refusal;
use super::state::AppState;
use crate::auth::Caller;

/// The header that carries a reservation's token.
pub const SSE_TOKEN_HEADER: &str = "x-graphql-event-stream-token";

/// The answer to `request` as an event stream (distinct connections mode). When the caller's
/// token expires, the stream's last `next` says so, and it completes.
pub(super) fn answer(
    state: &AppState,
    caller: Caller,
    request: async_graphql::Request,
) -> Response {
    let expires = caller.expires_at();
    let mut data = Data::default();
    data.insert(caller);
    let responses = state
        .transport()
        .execute_stream(request, Some(Arc::new(data)));
    let events = until_expired(responses, expires)
        .take_until(shutting_down(state))
        .map(|response| Event::default().event("next").json_data(&response))
        .chain(futures::stream::once(async {
            Ok(Event::default().event("complete").data(""))
        }));
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `responses` until the token that expires at `expires` has: then one response that says so.
fn until_expired(
    responses: impl futures::Stream<Item = async_graphql::Response> + Send + 'static,
    expires: Option<u64>,
) -> futures::stream::BoxStream<'static, async_graphql::Response> {
    let expired = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let marked = Arc::clone(&expired);
    responses
        .take_until(async move {
            crate::auth::expired(expires).await;
            marked.store(true, std::sync::atomic::Ordering::Release);
        })
        .chain(
            futures::stream::once(async move {
                expired
                    .load(std::sync::atomic::Ordering::Acquire)
                    .then(token_expired)
            })
            .filter_map(std::future::ready),
        )
        .boxed()
}

/// The last response of an operation whose caller's token expired.
fn token_expired() -> async_graphql::Response {
    let error = crate::graphql::appsync::server_error("the token expired", "UnauthorizedException");
    async_graphql::Response::from_errors(vec![error])
}

/// Resolves when the server begins to shut down: an event stream then ends (its client
/// reconnects, to another replica or to this one restarted), so that shutdown does not wait
/// for streams that would never end by themselves.
fn shutting_down(state: &AppState) -> impl std::future::Future<Output = ()> + Send + 'static {
    let mut closing = state.inner.closing.subscribe();
    async move {
        let _ = closing.wait_for(|closing| *closing).await;
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

/// `GET` or `POST` accepting `text/event-stream` with a token: opens the reservation's stream.
/// The stream itself needs no credentials (a browser's `EventSource` cannot send them): its
/// token is its ticket.
pub(super) fn open(state: &AppState, token: &str) -> Response {
    let receiver = match state.inner.sse.open(token) {
        Ok(receiver) => receiver,
        Err(refused) => return refused.into_response(),
    };
    // Dropped with the response's body: when the client goes away, the reservation ends.
    let ending = Ending {
        state: state.clone(),
        token: token.to_owned(),
    };
    let events = futures::stream::unfold((receiver, ending), |(mut receiver, ending)| async {
        let event = receiver.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(event), (receiver, ending)))
    })
    .take_until(shutting_down(state));
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
    let sender = match state.inner.sse.start(token, &caller, &id) {
        Ok(sender) => sender,
        Err(refused) => return refused.into_response(),
    };
    let expires = caller.expires_at();
    let mut data = Data::default();
    data.insert(caller);
    let responses = until_expired(
        state
            .transport()
            .execute_stream(request, Some(Arc::new(data))),
        expires,
    );
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
            state.inner.sse.ended(&token, &id);
        })
    };
    state.inner.sse.running(token, &id, task.abort_handle());
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
    match id.filter(|id| !id.is_empty()) {
        Some(id) => state.inner.sse.stop(token, caller, id),
        None => refusal(StatusCode::BAD_REQUEST, "Operation ID is missing"),
    }
}
