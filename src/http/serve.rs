//! The accept loop: every TCP connection the server takes, served by hyper through
//! hyper-util's connection builder, with the bounds a public server needs.
//!
//! `axum::serve` gives hyper no timer, so hyper's header read timeout never fires, and it caps
//! nothing: silent connections, or headers sent a byte at a time, stayed open until the
//! process ran out of descriptors. This loop is `axum::serve`'s own shape (hyper-util's
//! `auto::Builder`, `serve_connection_with_upgrades`, graceful shutdown) with these bounds:
//!
//! - **Header read timeout** (`--header-read-timeout-secs`, 10 s): a connection that sends no
//!   byte within it is closed before hyper sees it (hyper-util's version sniffing waits for
//!   bytes with no timer of its own; the wait is a `peek` for a byte, since tokio reports an
//!   accepted socket readable at once); then each request's head must come whole within it
//!   of its first byte, on the first request and on every later one of a kept-alive
//!   connection. This loop keeps that timer itself: hyper's `header_read_timeout` starts as
//!   soon as an answer is done, so it closed kept-alive connections after the header timeout
//!   instead of the idle one.
//! - **Idle timeout** (`--idle-timeout-secs`, 60 s): a kept-alive connection with no request
//!   running, and no byte of a next one, for that long is closed.
//! - Each close by a timer is counted on `/metrics`, by cause
//!   (`tablegraph_connections_closed_total{cause="header_timeout"|"idle_timeout"}`).
//! - **A cap on open connections** (`--max-connections`; by default three quarters of the
//!   process's descriptor limit): a connection accepted at the cap makes the oldest idle
//!   connection close (one with no request running, never an upgraded WebSocket); when none is
//!   idle, or an eighth of the cap is still closing, the new connection is closed at once.
//!   Either is counted on `/metrics`.
//! - **Accept errors** back off (from 10 ms, doubling, to 1 s) instead of spinning; running out
//!   of descriptors also sheds the oldest idle connection, and is logged once until an accept
//!   succeeds again.
//!
//! Invariant: a connection is counted open from accept until its socket is dropped (after an
//! upgrade, when the WebSocket ends); a request is running from its head until its answer's
//! body is dropped, so a streaming answer (SSE) is never idle.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

use super::metrics::{Closed, HttpMetrics, Shed};
use super::tls::Tls;
use crate::config::ConnectionLimits;

/// The cap in force: `--max-connections`, or three quarters of the process's soft limit on
/// open descriptors (the rest is for the store's files, logs, outgoing connections).
pub fn connection_cap(limits: &ConnectionLimits) -> usize {
    limits
        .max_connections
        .unwrap_or_else(|| descriptor_limit().map_or(10_000, |limit| limit / 4 * 3))
        .max(1)
}

/// The process's soft limit on open descriptors, where the platform tells it.
fn descriptor_limit() -> Option<usize> {
    #[cfg(unix)]
    {
        let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).ok()?;
        (soft != rlimit::INFINITY).then(|| usize::try_from(soft).ok())?
    }
    #[cfg(not(unix))]
    None
}

/// Serves `router` on every connection `listener` accepts until `shutdown` resolves, then
/// lets the requests running finish (graceful shutdown) and returns.
pub async fn serve(
    listener: Arc<TcpListener>,
    router: Router,
    limits: ConnectionLimits,
    metrics: Option<HttpMetrics>,
    tls: Option<Tls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let connections = Connections::new(connection_cap(&limits), metrics);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // Kept here instead (see the module doc): `None`, since a timer alone turns hyper's on.
        .header_read_timeout(None);
    // No extended CONNECT (RFC 8441): the WebSocket routes take HTTP/1.1's upgrade, so a
    // browser that sees no SETTINGS_ENABLE_CONNECT_PROTOCOL opens its `wss://` over HTTP/1.1
    // instead of sending a CONNECT the routes would refuse.
    let builder = Arc::new(builder);
    let (stop, stopping) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let mut backoff = Backoff::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        while tasks.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff.succeeded();
                stream
            }
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                if is_out_of_descriptors(&error) {
                    connections.shed_oldest_idle();
                }
                backoff.failed(&error).await;
                continue;
            }
        };
        let Some(registration) = connections.admit() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        tasks.spawn(connection(
            stream,
            registration,
            Arc::clone(&builder),
            router.clone(),
            limits,
            tls.clone(),
            stopping.clone(),
        ));
    }
    drop(listener);
    let _ = stop.send(true);
    while tasks.join_next().await.is_some() {}
}

/// Serves one connection until it ends, is shed, or the server stops; with `tls`, once its
/// handshake is done within the header read timeout.
#[allow(clippy::too_many_arguments)]
async fn connection(
    stream: TcpStream,
    registration: Registration,
    builder: Arc<auto::Builder<TokioExecutor>>,
    router: Router,
    limits: ConnectionLimits,
    tls: Option<Tls>,
    mut stopping: watch::Receiver<bool>,
) {
    let entry = Arc::clone(&registration.entry);
    // hyper-util reads the first bytes to tell HTTP/1 from HTTP/2 with no timer: a connection
    // that never sends one is closed here.
    let mut first = [0_u8; 1];
    let spoke = tokio::select! {
        waited = tokio::time::timeout(limits.header_read_timeout, stream.peek(&mut first)) => {
            match waited {
                Ok(Ok(read)) => read > 0,
                Ok(Err(_)) => false,
                Err(_) => {
                    registration.closed_by(Closed::HeaderTimeout);
                    false
                }
            }
        }
        () = entry.shed.notified() => false,
        _ = stopping.wait_for(|stop| *stop) => false,
    };
    if !spoke {
        // No longer counted once the peer can see it closed.
        drop(registration);
        drop(stream);
        return;
    }
    let Some(tls) = tls else {
        return served(stream, registration, builder, router, limits, stopping).await;
    };
    // A handshake is bounded as a request's head is: a peer that stalls in it is closed.
    let shaken = tokio::select! {
        shaken = tokio::time::timeout(limits.header_read_timeout, tls.acceptor().accept(stream)) => {
            shaken
        }
        () = entry.shed.notified() => return,
        _ = stopping.wait_for(|stop| *stop) => return,
    };
    match shaken {
        Ok(Ok(stream)) => served(stream, registration, builder, router, limits, stopping).await,
        Ok(Err(error)) => tracing::debug!(%error, "a TLS handshake failed"),
        Err(_) => {
            tracing::debug!("a TLS handshake timed out");
            registration.closed_by(Closed::HeaderTimeout);
        }
    }
}

/// Serves one connection's requests over `stream` until it ends, is shed, or the server
/// stops.
async fn served<S>(
    stream: S,
    registration: Registration,
    builder: Arc<auto::Builder<TokioExecutor>>,
    router: Router,
    limits: ConnectionLimits,
    mut stopping: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let entry = Arc::clone(&registration.entry);
    let metrics = registration.metrics.clone();
    let service = TowerToHyperService::new(Tracking {
        inner: router,
        entry: Arc::clone(&entry),
    });
    let io = TokioIo::new(Counted {
        registration,
        stream,
    });
    let mut conn = std::pin::pin!(builder.serve_connection_with_upgrades(io, service));
    let cause = loop {
        // While a request runs (a stream may run for hours) the connection is looked at again
        // a whole idle timeout from now, not at once, over and over.
        let (due, _) = entry.due(&limits);
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%error, "connection ended");
                }
                return;
            }
            () = entry.shed.notified() => break None,
            _ = stopping.wait_for(|stop| *stop) => break None,
            // A head began: its deadline is sooner than the idle one slept for.
            () = entry.head_began.notified() => {}
            () = tokio::time::sleep_until(due) => {
                let (due, cause) = entry.due(&limits);
                if due <= tokio::time::Instant::now() && entry.is_idle() {
                    break Some(cause);
                }
            }
        }
    };
    if let Some(cause) = cause {
        tracing::debug!(?cause, "a connection's timer closed it");
        if let Some(metrics) = &metrics {
            metrics.connection_closed(cause);
        }
        if matches!(cause, Closed::HeaderTimeout) {
            // No request runs, and the head in progress is never answered: closed at once.
            return;
        }
    }
    conn.as_mut().graceful_shutdown();
    if let Err(error) = conn.await {
        tracing::debug!(%error, "connection ended");
    }
}

/// The connections open now, oldest first.
struct Connections {
    cap: usize,
    metrics: Option<HttpMetrics>,
    registry: Arc<Registry>,
}

/// Shared by the accept loop and each connection's [`Registration`].
#[derive(Default)]
struct Registry {
    open: Mutex<Open>,
    next: AtomicU64,
}

/// The open connections, oldest first, and how many of them were asked to close: counted as
/// they are asked and as they go, so that an accept costs no walk over every connection.
#[derive(Default)]
struct Open {
    entries: BTreeMap<u64, Arc<Entry>>,
    shedding: usize,
}

impl Registry {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What the accept loop knows of one open connection.
struct Entry {
    /// Requests whose answer is not yet done.
    running: AtomicUsize,
    /// When a request last started or ended.
    active: Mutex<tokio::time::Instant>,
    /// When the first byte of a request's head came, while no request ran: the head must be
    /// whole within the header read timeout of it. Cleared as the request starts.
    head_since: Mutex<Option<tokio::time::Instant>>,
    /// Whether any byte was read yet, and whether the first ones were HTTP/2's preface: an
    /// HTTP/2 connection's frames between requests (pings, settings) start no head.
    read_any: AtomicBool,
    http2: AtomicBool,
    /// Told when a head begins, so that the connection's loop looks at its deadline again.
    head_began: Notify,
    /// Upgraded to a WebSocket: never idle.
    upgraded: AtomicBool,
    /// Asked to close (shed): it is going.
    shedding: AtomicBool,
    shed: Notify,
}

impl Entry {
    fn new() -> Entry {
        Entry {
            running: AtomicUsize::new(0),
            active: Mutex::new(tokio::time::Instant::now()),
            head_since: Mutex::new(None),
            read_any: AtomicBool::new(false),
            http2: AtomicBool::new(false),
            head_began: Notify::new(),
            upgraded: AtomicBool::new(false),
            shedding: AtomicBool::new(false),
            shed: Notify::new(),
        }
    }

    fn touch(&self) {
        *self
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tokio::time::Instant::now();
    }

    /// When the connection is due to close if nothing changes, and which timer closes it then:
    /// the header read timeout after the first byte of a head that is not yet whole, or the
    /// idle timeout after the last request started or ended. While a request runs, or once
    /// upgraded, this is only when to look again.
    fn due(&self, limits: &ConnectionLimits) -> (tokio::time::Instant, Closed) {
        let now = tokio::time::Instant::now();
        if !self.is_idle() {
            return (now + limits.idle_timeout, Closed::IdleTimeout);
        }
        let head = *self
            .head_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(since) = head {
            return (since + limits.header_read_timeout, Closed::HeaderTimeout);
        }
        let active = *self
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (active + limits.idle_timeout, Closed::IdleTimeout)
    }

    /// `bytes` were read from the peer: with no request running, they begin a head.
    fn read(&self, bytes: &[u8]) {
        // "PRI" begins HTTP/2's preface and no HTTP/1 method; a first read shorter than that
        // is taken for HTTP/1, whose head timer is the one that must not be missed.
        const PREFACE: &[u8] = b"PRI";
        if !self.read_any.swap(true, Ordering::AcqRel) {
            self.http2
                .store(bytes.starts_with(PREFACE), Ordering::Release);
        }
        if self.http2.load(Ordering::Acquire) || !self.is_idle() {
            return;
        }
        let mut head = self
            .head_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if head.is_none() {
            *head = Some(tokio::time::Instant::now());
            self.head_began.notify_one();
        }
    }

    /// A request's head came whole: its timer stops.
    fn head_read(&self) {
        *self
            .head_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    fn is_idle(&self) -> bool {
        self.running.load(Ordering::Acquire) == 0
            && !self.upgraded.load(Ordering::Acquire)
            && !self.shedding.load(Ordering::Acquire)
    }
}

/// A connection's place among the open ones, given up when dropped (with its socket).
struct Registration {
    id: u64,
    entry: Arc<Entry>,
    registry: Arc<Registry>,
    metrics: Option<HttpMetrics>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut open = self.registry.open();
        if open.entries.remove(&self.id).is_some() && self.entry.shedding.load(Ordering::Acquire) {
            open.shedding -= 1;
        }
        // Under the lock, so that the gauge's last value is the last count.
        if let Some(metrics) = &self.metrics {
            metrics.tcp_connections(open.entries.len());
        }
    }
}

impl Registration {
    /// Counts the connection as closed by `timer`.
    fn closed_by(&self, timer: Closed) {
        tracing::debug!(cause = ?timer, "a connection's timer closed it");
        if let Some(metrics) = &self.metrics {
            metrics.connection_closed(timer);
        }
    }
}

impl Connections {
    fn new(cap: usize, metrics: Option<HttpMetrics>) -> Connections {
        Connections {
            cap,
            metrics,
            registry: Arc::new(Registry::default()),
        }
    }

    /// Registers a connection just accepted; `None` when it must close at once (the cap is
    /// reached and no connection is idle).
    fn admit(&self) -> Option<Registration> {
        let id = self.registry.next.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry::new());
        {
            let mut open = self.registry.open();
            // Those already asked to close do not count against the cap: they are going.
            let staying = open.entries.len() - open.shedding;
            // Those asked to close still hold their sockets until their tasks close them: at
            // most an eighth of the cap more is let in meanwhile.
            let closing_room = open.entries.len() < self.cap + (self.cap / 8).max(1);
            if staying >= self.cap && !(closing_room && self.shed_in(&mut open)) {
                drop(open);
                self.count_shed(Shed::New);
                return None;
            }
            open.entries.insert(id, Arc::clone(&entry));
            if let Some(metrics) = &self.metrics {
                metrics.tcp_connections(open.entries.len());
            }
        }
        Some(Registration {
            id,
            entry,
            registry: Arc::clone(&self.registry),
            metrics: self.metrics.clone(),
        })
    }

    /// Asks the oldest idle connection to close; whether there was one.
    fn shed_oldest_idle(&self) -> bool {
        let mut open = self.registry.open();
        self.shed_in(&mut open)
    }

    /// The walk runs only at the cap, and stops at the first idle connection.
    fn shed_in(&self, open: &mut Open) -> bool {
        let Some(oldest) = open.entries.values().find(|entry| entry.is_idle()) else {
            return false;
        };
        oldest.shedding.store(true, Ordering::Release);
        oldest.shed.notify_one();
        open.shedding += 1;
        self.count_shed(Shed::Idle);
        true
    }

    fn count_shed(&self, which: Shed) {
        if let Some(metrics) = &self.metrics {
            metrics.connection_shed(which);
        }
    }
}

fn is_connection_error(error: &io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

fn is_out_of_descriptors(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// How long the accept loop waits after an error it cannot blame on one connection.
#[derive(Default)]
struct Backoff {
    next: Option<Duration>,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MOST: Duration = Duration::from_secs(1);

    async fn failed(&mut self, error: &io::Error) {
        let wait = match self.next {
            None => {
                tracing::error!(%error, "accept error; waiting before the next accept");
                Self::FIRST
            }
            Some(wait) => wait,
        };
        self.next = Some((wait * 2).min(Self::MOST));
        tokio::time::sleep(wait).await;
    }

    fn succeeded(&mut self) {
        if self.next.take().is_some() {
            tracing::info!("accepting connections again");
        }
    }
}

/// The connection's socket, holding its place among the open connections until dropped.
struct Counted<S> {
    /// Dropped first (fields drop in order): no longer counted once the peer sees the close.
    registration: Registration,
    stream: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.registration.entry.read(&buf.filled()[before..]);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The router, counting the requests of one connection while they run.
#[derive(Clone)]
struct Tracking {
    inner: Router,
    entry: Arc<Entry>,
}

impl tower::Service<Request<Incoming>> for Tracking {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let running = Running::start(&self.entry);
        // A WebSocket over HTTP/2 is an extended CONNECT answered 200, not a 101.
        let connect = request.method() == axum::http::Method::CONNECT;
        let answer = tower::Service::call(&mut self.inner, request.map(Body::new));
        Box::pin(async move {
            let response = answer.await?;
            let upgraded = response.status() == StatusCode::SWITCHING_PROTOCOLS
                || (connect && response.status().is_success());
            if upgraded {
                running.entry.upgraded.store(true, Ordering::Release);
                return Ok(response);
            }
            // Running until the body is done: a stream (SSE) keeps its connection busy.
            Ok(response.map(|body| {
                Body::new(WithGuard {
                    body,
                    _running: running,
                })
            }))
        })
    }
}

/// A request of a connection running; dropped when its answer is done.
struct Running {
    entry: Arc<Entry>,
}

impl Running {
    fn start(entry: &Arc<Entry>) -> Running {
        entry.running.fetch_add(1, Ordering::AcqRel);
        entry.head_read();
        entry.touch();
        Running {
            entry: Arc::clone(entry),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.entry.touch();
        self.entry.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body, holding its request's [`Running`] until dropped.
struct WithGuard {
    body: Body,
    _running: Running,
}

impl http_body::Body for WithGuard {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_idle_connection_goes_and_a_busy_one_stays() {
        let connections = Connections::new(2, None);
        let first = connections.admit().expect("room");
        let second = connections.admit().expect("room");
        let _busy = Running::start(&first.entry);
        let third = connections.admit().expect("the idle one makes room");
        assert!(!first.entry.shedding.load(Ordering::Acquire), "busy: kept");
        assert!(second.entry.shedding.load(Ordering::Acquire), "idle: shed");
        third.entry.upgraded.store(true, Ordering::Release);
        assert!(
            connections.admit().is_none(),
            "a busy and an upgraded connection: the new one closes"
        );
        drop(second);
        assert_eq!(
            connections.registry.open().entries.len(),
            2,
            "a connection dropped is no longer open"
        );
        assert_eq!(
            connections.registry.open().shedding,
            0,
            "the connection asked to close is gone, and no longer counted as closing"
        );
    }

    #[test]
    fn the_default_cap_leaves_a_quarter_of_the_descriptors() {
        let limits = ConnectionLimits {
            max_connections: Some(7),
            ..ConnectionLimits::default()
        };
        assert_eq!(connection_cap(&limits), 7);
        if let Some(limit) = descriptor_limit() {
            assert_eq!(
                connection_cap(&ConnectionLimits::default()),
                (limit / 4 * 3).max(1)
            );
        }
    }
}
