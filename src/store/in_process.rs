//! The SDK's HTTP client for the embedded store of this process: each request the SDK builds
//! (signed, serialized as DynamoDB's JSON) is handed to dynoxide's operations directly, and
//! the answer comes back as the HTTP response DynamoDB would send, for the SDK to parse. So
//! the SDK's whole path (serialization, error parsing, the store's retries) runs unchanged,
//! without a socket, an HTTP server or a second HTTP parse in between.
//!
//! # Why not dynoxide's HTTP server on loopback
//!
//! It was the path until measured: a profile of the Koan page (W2, 1 connection, `perf record`
//! on `serve --memory`) spent ≈ 7 % of the process's CPU in the kernel (loopback TCP, the
//! wake-ups of two runtimes) and ≈ 4 % in hyper on both sides, and dynoxide's server parses
//! every body twice (once to a `serde_json::Value` to check it is JSON, once into the
//! request), makes two UUIDs and a CRC32 per answer and copies the answer's body. Here a call
//! is one parse of the request and one serialization of the answer (`bench/PROFILE.md`).
//! dynoxide's router is private; its operations, request and answer types and error bodies
//! are its public Rust API, which is what this calls. Its HTTP server still serves
//! `tablegraph store`, and the tests of `--dynamodb-endpoint` go through it.
//!
//! The operations run on the embedded store's own runtime (threads named `embedded-store`):
//! they are synchronous SQLite work and must not block the server's request workers.

use std::sync::{Arc, PoisonError, RwLock};

use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpClient, SharedHttpConnector, http_client_fn,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use dynoxide::{Database, DynoxideError};

/// The database the client hands its requests to; `None` once the embedded store stopped.
pub(super) type Shared = Arc<RwLock<Option<Database>>>;

/// An SDK HTTP client whose requests run on `runtime` against `database`.
pub(super) fn client(database: Shared, runtime: tokio::runtime::Handle) -> SharedHttpClient {
    let connector = SharedHttpConnector::new(InProcess { database, runtime });
    http_client_fn(move |_settings, _components| connector.clone())
}

struct InProcess {
    database: Shared,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InProcess")
    }
}

impl HttpConnector for InProcess {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        // `DynamoDB_20120810.Query`, `DynamoDBStreams_20120810.GetRecords`: the operation.
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|target| target.rsplit_once('.'))
            .map(|(_, operation)| operation.to_owned())
            .unwrap_or_default();
        let body = request.body().bytes().map(<[u8]>::to_vec);
        let database = self
            .database
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let runtime = self.runtime.clone();
        HttpConnectorFuture::new(async move {
            let Some(database) = database else {
                return Err(ConnectorError::io("the embedded store has stopped".into()));
            };
            // The SDK's DynamoDB requests are bodies in memory, never streams.
            let Some(body) = body else {
                return Err(ConnectorError::user("a streamed request body".into()));
            };
            let (status, json) = runtime
                .spawn(async move { answer(&database, &operation, &body) })
                .await
                .map_err(|e| ConnectorError::io(e.into()))?;
            let status =
                StatusCode::try_from(status).map_err(|e| ConnectorError::other(e.into(), None))?;
            let mut response = HttpResponse::new(status, SdkBody::from(json));
            response
                .headers_mut()
                .insert("content-type", "application/x-amz-json-1.0");
            Ok(response)
        })
    }
}

/// The HTTP status and JSON body DynamoDB answers `operation` with.
fn answer(database: &Database, operation: &str, body: &[u8]) -> (u16, String) {
    match run(database, operation, body) {
        Ok(json) => (200, json),
        Err(error) => (error.status_code(), error.to_json()),
    }
}

fn run(db: &Database, operation: &str, body: &[u8]) -> Result<String, DynoxideError> {
    // Each arm: the request read from its JSON, the operation, the answer written as JSON.
    macro_rules! operations {
        ($($name:literal => $method:ident,)*) => {
            match operation {
                $($name => to_json(&db.$method(from_json(body)?)?),)*
                _ => Err(DynoxideError::SerializationException(format!(
                    "UnknownOperationException: {operation}"
                ))),
            }
        };
    }
    operations! {
        "GetItem" => get_item,
        "BatchGetItem" => batch_get_item,
        "Query" => query,
        "Scan" => scan,
        "PutItem" => put_item,
        "UpdateItem" => update_item,
        "DeleteItem" => delete_item,
        "BatchWriteItem" => batch_write_item,
        "TransactWriteItems" => transact_write_items,
        "TransactGetItems" => transact_get_items,
        "CreateTable" => create_table,
        "DescribeTable" => describe_table,
        "UpdateTable" => update_table,
        "DeleteTable" => delete_table,
        "ListTables" => list_tables,
        "UpdateTimeToLive" => update_time_to_live,
        "DescribeTimeToLive" => describe_time_to_live,
        "ListStreams" => list_streams,
        "DescribeStream" => describe_stream,
        "GetShardIterator" => get_shard_iterator,
        "GetRecords" => get_records,
    }
}

fn from_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, DynoxideError> {
    serde_json::from_slice(body).map_err(|e| DynoxideError::SerializationException(e.to_string()))
}

fn to_json<T: serde::Serialize>(answer: &T) -> Result<String, DynoxideError> {
    serde_json::to_string(answer).map_err(|e| DynoxideError::InternalServerError(e.to_string()))
}
