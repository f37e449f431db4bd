//! What the baseline servers share: their command line, and (B1, B2) the GraphQL handler with
//! the tower-http layers tablegraph runs, written as an async-graphql user writes them.

use std::net::SocketAddr;
use std::time::Duration;

use async_graphql::{ObjectType, Schema, SubscriptionType};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate as _, SizeAbove};
use tower_http::cors::CorsLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// A baseline's command line: `[--listen] ADDR` (127.0.0.1:8080 when none is given) and, for
/// B2, `--snapshot FILE` (the SQLite file of a seeded `tablegraph serve --data-dir`).
pub struct Args {
    pub listen: SocketAddr,
    pub snapshot: Option<String>,
}

/// Reads [`Args`], or exits with a usage line.
pub fn args() -> Args {
    let usage = || -> ! {
        eprintln!("usage: {{b0|b1|b2}} [--listen] ADDR [--snapshot FILE]");
        std::process::exit(2);
    };
    let mut args = std::env::args().skip(1);
    let (mut address, mut snapshot) = (None, None);
    while let Some(arg) = args.next() {
        if arg == "--listen" {
            address = Some(args.next().unwrap_or_else(|| usage()));
        } else if let Some(value) = arg.strip_prefix("--listen=") {
            address = Some(value.to_owned());
        } else if arg == "--snapshot" {
            snapshot = Some(args.next().unwrap_or_else(|| usage()));
        } else if !arg.starts_with('-') {
            address = Some(arg);
        } else {
            usage();
        }
    }
    let address = address.unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listen = address.parse().unwrap_or_else(|e| {
        eprintln!("bad address {address:?}: {e}");
        std::process::exit(2);
    });
    Args { listen, snapshot }
}

/// The address from `--listen ADDR`, `--listen=ADDR` or a positional `ADDR`.
pub fn listen_address() -> SocketAddr {
    args().listen
}

/// Serves `schema` at `POST /graphql` on `address` until the process ends. The body is
/// deserialized as an `async_graphql::Request`, given its per-request data by `prepare`,
/// executed, and the `Response` serialized.
///
/// Every request passes the layers tablegraph runs: a request id (UUIDv4) echoed on the answer,
/// a tracing span at `info` that carries it (logging to stderr at `info`, as tablegraph does),
/// CORS open to every origin, gzip from 1 KiB, a 30 s time limit answering 408, panic capture
/// and a 1 MiB body limit. So tablegraph against B1 or B2 compares the GraphQL and storage
/// work, not the middleware.
pub async fn serve_graphql<Q, M, S>(schema: Schema<Q, M, S>, prepare: Prepare, address: SocketAddr)
where
    Q: ObjectType + 'static,
    M: ObjectType + 'static,
    S: SubscriptionType + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let id = request
                    .headers()
                    .get("x-request-id")
                    .and_then(|id| id.to_str().ok())
                    .unwrap_or_default();
                tracing::info_span!(
                    "request",
                    method = %request.method(),
                    uri = %request.uri(),
                    request_id = %id,
                )
            }),
        )
        .layer(CorsLayer::permissive())
        .layer(
            CompressionLayer::new()
                .compress_when(DefaultPredicate::new().and(SizeAbove::new(1024))),
        )
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .layer(CatchPanicLayer::new())
        .layer(RequestBodyLimitLayer::new(1024 * 1024));
    let app = Router::new()
        .route("/graphql", post(graphql::<Q, M, S>))
        .with_state((schema, prepare))
        .layer(layers);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .expect("cannot bind the address");
    axum::serve(listener, app).await.expect("the server runs");
}

/// What a server adds to each request before it runs (B2: the request's own `DataLoader`).
pub type Prepare =
    std::sync::Arc<dyn Fn(async_graphql::Request) -> async_graphql::Request + Send + Sync>;

async fn graphql<Q, M, S>(
    State((schema, prepare)): State<(Schema<Q, M, S>, Prepare)>,
    body: Bytes,
) -> Response
where
    Q: ObjectType + 'static,
    M: ObjectType + 'static,
    S: SubscriptionType + 'static,
{
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let response = schema.execute(prepare(request)).await;
    match serde_json::to_vec(&response) {
        Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
