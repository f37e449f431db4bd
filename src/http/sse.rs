//! GraphQL over Server-Sent Events, in graphql-sse's "distinct connections" mode: a `POST
//! /graphql` that accepts `text/event-stream` answers a stream of `next` events, each one
//! GraphQL response, and a `complete` event when the operation ends. A subscription's stream
//! lasts until the client goes away; a query or a mutation answers one `next`.
//!
//! The operation runs exactly as over the WebSocket transports (`graphql::Transport`): the same
//! limits, each event with a request scope of its own. The request's credentials are the
//! HTTP ones, checked by the guard before anything runs.

use std::sync::Arc;

use async_graphql::{Data, Executor as _};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::state::AppState;
use crate::auth::Caller;

/// The answer to `request` as an event stream.
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
