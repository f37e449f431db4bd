//! The reservations of graphql-sse's single connection mode (see `sse`), in this process: for
//! each token, who made it, the channel its operations send their events to, the receiving end
//! until its one stream takes it, and the operations running on it.
//!
//! Invariant: a token is known to one stream at most; a reservation whose stream has not opened
//! within its time to live is found by nobody; an ended reservation's operations are stopped.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

use crate::auth::Caller;

/// Events an operation may have sent ahead of the stream: a stream that reads nothing (or is
/// not open yet) holds its operations back here, and a subscription further behind misses
/// events as it would over a WebSocket (`EventsMissed`).
const STREAM_BUFFER: usize = 256;

pub(super) struct Reservations {
    held: Mutex<HashMap<String, Reservation>>,
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

    /// Stops every operation running on it: it is forgotten.
    fn stop_all(self) {
        for handle in self.operations.into_values().flatten() {
            handle.abort();
        }
    }
}

/// What a reservation answers to: the caller's kind and, for a token, its issuer and subject.
fn owner_of(caller: &Caller) -> String {
    match caller {
        Caller::Anonymous => "anonymous".to_owned(),
        Caller::ApiKey => "api-key".to_owned(),
        Caller::Lambda(admitted) => format!("lambda {}", admitted.token_id),
        Caller::Iam(signer) => format!("iam {}", signer.access_key_id),
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

/// `{"errors": [{"message": …}]}` with `status`: graphql-sse's own refusals.
pub(super) fn refusal(status: StatusCode, message: &str) -> Response {
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

/// Why a request found no use of a reservation, in graphql-sse's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// No reservation of that token for this caller (or it expired): `404`.
    NotFound,
    /// Its stream is open already: `409`.
    AlreadyOpen,
    /// An operation of that id runs on it: `409`.
    IdInUse,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::NotFound => refusal(StatusCode::NOT_FOUND, "Stream not found"),
            Refused::AlreadyOpen => refusal(StatusCode::CONFLICT, "Stream already open"),
            Refused::IdInUse => refusal(StatusCode::CONFLICT, "Operation with ID already exists"),
        }
    }
}

impl Reservations {
    pub(super) fn new(ttl: Duration, limit: usize) -> Reservations {
        Reservations {
            held: Mutex::default(),
            ttl,
            limit,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Reservation>> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `PUT`: a new reservation for `caller`; `201` with its token.
    pub(super) fn reserve(&self, caller: &Caller) -> Response {
        let mut held = self.lock();
        let ttl = self.ttl;
        for (_, expired) in held.extract_if(|_, reservation| reservation.expired(ttl)) {
            expired.stop_all();
        }
        if held.len() >= self.limit {
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
        held.insert(
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

    /// The stream's end of `token`'s reservation: `404` when there is none (or it expired),
    /// `409` when its stream is open already.
    pub(super) fn open(&self, token: &str) -> Result<mpsc::Receiver<Event>, Refused> {
        let mut held = self.lock();
        match held.get_mut(token) {
            Some(reservation) if reservation.expired(self.ttl) => {
                if let Some(expired) = held.remove(token) {
                    expired.stop_all();
                }
                Err(Refused::NotFound)
            }
            None => Err(Refused::NotFound),
            Some(reservation) => reservation.receiver.take().ok_or(Refused::AlreadyOpen),
        }
    }

    /// Registers operation `id` of `caller` on `token`'s reservation; answers where its events
    /// go. `404` when the reservation is not theirs (or gone), `409` when the id is in use.
    pub(super) fn start(
        &self,
        token: &str,
        caller: &Caller,
        id: &str,
    ) -> Result<mpsc::Sender<Event>, Refused> {
        let mut held = self.lock();
        let reservation = held
            .get_mut(token)
            .filter(|r| r.owner == owner_of(caller) && !r.expired(self.ttl))
            .ok_or(Refused::NotFound)?;
        if reservation.operations.contains_key(id) {
            return Err(Refused::IdInUse);
        }
        reservation.operations.insert(id.to_owned(), None);
        Ok(reservation.sender.clone())
    }

    /// How operation `id` of `token` is stopped, once it runs (unless it ended meanwhile).
    pub(super) fn running(&self, token: &str, id: &str, handle: tokio::task::AbortHandle) {
        if let Some(slot) = self
            .lock()
            .get_mut(token)
            .and_then(|r| r.operations.get_mut(id))
        {
            *slot = Some(handle);
        }
    }

    /// Operation `id` of `token` ended by itself.
    pub(super) fn ended(&self, token: &str, id: &str) {
        if let Some(reservation) = self.lock().get_mut(token) {
            reservation.operations.remove(id);
        }
    }

    /// `DELETE`: stops operation `id` of `caller`'s reservation `token`, and tells its stream.
    pub(super) fn stop(&self, token: &str, caller: &Caller, id: &str) -> Response {
        let (stopped, sender) = {
            let mut held = self.lock();
            let Some(reservation) = held.get_mut(token).filter(|r| r.owner == owner_of(caller))
            else {
                return Refused::NotFound.into_response();
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

    /// Ends `token`'s reservation: its stream closed. Its operations stop.
    pub(super) fn end(&self, token: &str) {
        let ended = self.lock().remove(token);
        if let Some(ended) = ended {
            ended.stop_all();
        }
    }
}
