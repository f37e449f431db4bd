//! The [`Store`] handle: one shared SDK client, how each call is counted, traced and budgeted,
//! and transactions, each retried in one place (see the module doc of `store`). Its reads are in
//! `reads`.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use tracing::Instrument as _;

use super::cache::{CacheSettings, ReadCache};
use super::calls::{CallAnswer, CallLog, CallRecord, call_span, close_call_span};
use super::embedded::EmbeddedStore;
use super::error::StoreError;
use super::in_process;
use super::key::MAX_TRANSACTION_ITEMS;
use super::metrics::StoreMetrics;
use super::retry;
use super::simulate::{self, StoreTuning};
use super::write::{self, Write};
use crate::keys;

/// How the client signs its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// The usual AWS chain: environment, profile, container or instance role.
    Environment,
    /// Fixed local credentials, for a store on this machine that verifies none (dynoxide's HTTP
    /// server). The embedded store of this process is not signed at all
    /// ([`Store::connect_in_process`]).
    Local,
}

impl Credentials {
    /// The credentials for `endpoint`: fixed local ones for a store on this machine (a
    /// `tablegraph store`, dynoxide, DynamoDB Local: an address on the loopback interface)
    /// unless the environment names some, so that no provider chain looks for a role that is
    /// not there; the usual chain otherwise.
    pub fn for_endpoint(endpoint: &str) -> Credentials {
        if crate::local_aws::takes_local_credentials(endpoint) {
            Credentials::Local
        } else {
            Credentials::Environment
        }
    }
}

/// A handle on the table. Cheap to clone; clones share the SDK client and its connection pool.
#[derive(Clone)]
pub struct Store {
    pub(super) client: Client,
    /// The table's change stream, on the same endpoint and credentials (see `stream`).
    pub(super) streams: aws_sdk_dynamodbstreams::Client,
    pub(super) table: Arc<str>,
    /// The calls of the request this handle serves, if it serves one.
    calls: Option<Arc<CallLog>>,
    /// Totals and latencies of every call, shared by all handles.
    metrics: Arc<StoreMetrics>,
    /// Whether an answer can be lost on the way back (see [`Store::connect_in_process`]):
    /// transactions then carry a client request token.
    lossy: bool,
    /// Whether it is the embedded store of this process.
    pub(super) in_process: bool,
    /// The read cache of this process, if on (`cache.rs`).
    pub(super) cache: Option<Arc<ReadCache>>,
}

impl Store {
    /// Connects to the table `table` at `endpoint` (DynamoDB's regional endpoint when `None`).
    /// Region and credentials come from the AWS environment; a missing region means us-east-1.
    pub async fn connect(
        endpoint: Option<&str>,
        credentials: Credentials,
        table: &str,
        tuning: &StoreTuning,
    ) -> Store {
        Store::connect_with(endpoint, credentials, None, table, tuning, true)
            .await
            .0
    }

    /// [`Store::connect`], refused in one line naming what to set when the AWS environment
    /// gives no credentials (rather than with the provider chain's failures on the first call).
    pub async fn connect_with_credentials(
        endpoint: &str,
        credentials: Credentials,
        table: &str,
        tuning: &StoreTuning,
    ) -> Result<Store, StoreError> {
        use aws_sdk_dynamodb::config::ProvideCredentials as _;
        let (store, provider) =
            Store::connect_with(Some(endpoint), credentials, None, table, tuning, true).await;
        let missing = || StoreError::NoCredentials(endpoint.to_owned());
        let provider = provider.ok_or_else(missing)?;
        match provider.provide_credentials().await {
            Ok(_) => Ok(store),
            Err(error) => {
                tracing::debug!(
                    error = %aws_sdk_dynamodb::error::DisplayErrorContext(&error),
                    "no credentials"
                );
                Err(missing())
            }
        }
    }

    /// Connects to the embedded store of this process, whose requests never leave it
    /// (`in_process.rs`).
    ///
    /// No answer is lost between the two: there is no attempt timeout (the request's own
    /// timeout bounds a call) and the request never leaves the process. So transactions
    /// carry no client request token, which the store would otherwise keep for ten minutes and
    /// walk on every transaction (W6 in `bench/soak.py`: with tokens, throughput fell from 427 to
    /// 176 writes per second within two minutes, about 60 % of the CPU in that walk; without,
    /// it held 962–1,221 for ten minutes). Should an answer still be
    /// missing, the transaction is not sent again: it may have been applied. Simulated faults
    /// (`tuning`) model the network between this process and DynamoDB, so with them the store
    /// is treated as remote.
    pub async fn connect_in_process(
        embedded: &EmbeddedStore,
        table: &str,
        tuning: &StoreTuning,
    ) -> Store {
        let lossy = tuning.faults.is_some();
        // The SDK still resolves an endpoint, which the in-process client ignores; it does not
        // sign (`connect_with`).
        let endpoint = Some("http://embedded-store.invalid");
        let http = Some(embedded.http_client());
        Store::connect_with(endpoint, Credentials::Local, http, table, tuning, lossy)
            .await
            .0
    }

    /// `http`: the SDK's HTTP client, when not the one it builds by default: the in-process
    /// client, whose requests are not signed ([`in_process::UNSIGNED`]). Also answers where
    /// the SDK finds its credentials.
    async fn connect_with(
        endpoint: Option<&str>,
        credentials: Credentials,
        http: Option<SharedHttpClient>,
        table: &str,
        tuning: &StoreTuning,
        lossy: bool,
    ) -> (
        Store,
        Option<aws_sdk_dynamodb::config::SharedCredentialsProvider>,
    ) {
        let mut timeouts =
            aws_config::timeout::TimeoutConfig::builder().connect_timeout(Duration::from_secs(3));
        if lossy {
            timeouts = timeouts.operation_attempt_timeout(Duration::from_secs(10));
        }
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .timeout_config(timeouts.build());
        if let Some(url) = endpoint {
            loader = loader.endpoint_url(url);
        }
        if credentials == Credentials::Local {
            // Nothing to look up: no credential provider chain (and no instance metadata
            // calls) for a store on this machine. The region is the environment's when it
            // names one (DynamoDB Local keeps a database per region), else us-east-1.
            let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
                .iter()
                .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
                .unwrap_or_else(|| "us-east-1".to_owned());
            loader = loader
                .region(aws_config::Region::new(region))
                .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                    "tablegraph",
                    "local",
                    None,
                    None,
                    "tablegraph-local",
                ));
        }
        let shared = loader.load().await;
        let in_process = http.is_some();
        let mut config = aws_sdk_dynamodb::config::Builder::from(&shared);
        // Simulated latency and faults (`tuning`) apply to the table's calls, which requests
        // make and wait for; the change stream is read on its own, untouched by them.
        let mut streams = aws_sdk_dynamodbstreams::config::Builder::from(&shared);
        if shared.region().is_none() {
            config = config.region(aws_sdk_dynamodb::config::Region::new("us-east-1"));
            streams = streams.region(aws_sdk_dynamodbstreams::config::Region::new("us-east-1"));
        }
        if let Some(http) = &http {
            streams = streams.http_client(http.clone());
            config = config
                .allow_no_auth()
                .auth_scheme_preference([in_process::UNSIGNED]);
            streams = streams
                .allow_no_auth()
                .auth_scheme_preference([in_process::UNSIGNED]);
        }
        if tuning.is_default() {
            if let Some(http) = http {
                config = config.http_client(http);
            }
        } else {
            // The client given, or the one the SDK would build by default, wrapped.
            let base = http.or_else(|| shared.http_client()).unwrap_or_else(|| {
                use aws_smithy_http_client::tls;
                aws_smithy_http_client::Builder::new()
                    .tls_provider(tls::Provider::Rustls(
                        tls::rustls_provider::CryptoMode::AwsLc,
                    ))
                    .build_https()
            });
            config = config.http_client(simulate::wrap(base, tuning.clone()));
        }
        let store = Store {
            client: Client::from_conf(config.build()),
            streams: aws_sdk_dynamodbstreams::Client::from_conf(streams.build()),
            table: Arc::from(table),
            calls: None,
            metrics: Arc::default(),
            lossy,
            in_process,
            cache: None,
        };
        (store, shared.credentials_provider())
    }

    /// A handle that records its calls in `calls`.
    pub fn recording(&self, calls: Arc<CallLog>) -> Store {
        Store {
            calls: Some(calls),
            ..self.clone()
        }
    }

    /// This handle with a read cache by `settings` (none when they turn it off), shared by its
    /// clones from then on. Its entries are only as fresh as what feeds it: the reader of the
    /// table's stream ([`ReadCache::apply`]) must run beside it, or reads bypass it.
    pub fn with_cache(self, settings: &CacheSettings) -> Store {
        let cache = ReadCache::new(settings, !self.in_process);
        Store { cache, ..self }
    }

    /// The read cache, if on.
    pub fn cache(&self) -> Option<&Arc<ReadCache>> {
        self.cache.as_ref()
    }

    pub(super) fn record_hit(&self, hit: CallRecord) {
        if let Some(calls) = &self.calls {
            calls.record_hit(hit);
        }
    }

    pub fn table_name(&self) -> &str {
        &self.table
    }

    pub fn metrics(&self) -> &StoreMetrics {
        &self.metrics
    }

    /// Sends one storage call (`send` makes it; the future is made here, so it is held once): counts it in the metrics and gives it a span when
    /// traces are exported (see `calls::call_span`). `index` and `keys` are what it asks for.
    pub(super) async fn observed<T: CallAnswer, F>(
        &self,
        operation: &'static str,
        index: Option<&str>,
        keys: Option<usize>,
        send: impl FnOnce() -> F,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>>,
    {
        let span = call_span(operation, &self.table, index, keys);
        let started = std::time::Instant::now();
        let result = send().instrument(span.clone()).await;
        self.metrics
            .observe(operation, started.elapsed(), result.is_ok());
        close_call_span(&span, &result);
        result
    }

    pub(super) fn record(&self, call: CallRecord) {
        if let Some(calls) = &self.calls {
            calls.record(call);
        }
    }

    /// Refuses a call once the request has spent its budget of storage calls.
    pub(super) fn begin_call(&self) -> Result<(), StoreError> {
        match &self.calls {
            Some(calls) => calls.begin(),
            None => Ok(()),
        }
    }

    /// Writes all of `writes` or none, as one TransactWriteItems. Transaction conflicts are
    /// retried; a failed condition answers which write failed.
    pub async fn transact_write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        if writes.len() > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::Validation(format!(
                "{} writes exceed the transaction limit of {MAX_TRANSACTION_ITEMS}",
                writes.len()
            )));
        }
        // Once an attempt's answer was lost, that transaction may have been applied: every later
        // attempt keeps its token (pinned), so DynamoDB answers it instead of applying it again.
        // Before that, a definite refusal (conflict, throttling) gives the next attempt a new
        // token: it is a new transaction. A store in this process gets no token, and a lost
        // answer there is final.
        let writes = &writes;
        let attempt = |(mut token, mut pinned): (String, bool)| async move {
            if let Err(e) = self.begin_call() {
                return ((token, pinned), Err(e));
            }
            let sent = self.lossy.then_some(token.as_str());
            let mut result = self
                .observed("TransactWriteItems", None, Some(writes.len()), || {
                    write::execute(&self.client, &self.table, writes, sent)
                })
                .await;
            self.record(CallRecord {
                operation: "TransactWriteItems",
                index: None,
                keys: Some(writes.len()),
                items: None,
                consumed_capacity: result.as_ref().ok().copied().flatten(),
            });
            match &result {
                Err(StoreError::NoAnswer(detail)) if !self.lossy => {
                    result = Err(StoreError::Other(format!(
                        "no answer from the embedded store; the transaction may have been \
                         applied: {detail}"
                    )));
                }
                Err(StoreError::Unavailable(_) | StoreError::NoAnswer(_)) => pinned = true,
                Err(e) if e.is_transient() && !pinned => token = keys::new_id(),
                _ => {}
            }
            ((token, pinned), result.map(drop))
        };
        let result = retry::with_context((keys::new_id(), false), attempt)
            .await
            .1;
        // Whatever the answer: a transaction whose answer was lost may have been applied, and
        // evicting what was not changed costs only a read.
        if let Some(cache) = &self.cache {
            cache.committed(writes);
        }
        result
    }
}

/// A store on dynoxide's HTTP server in this process, with an empty table: for unit tests.
#[cfg(test)]
pub(crate) async fn loopback_store(table: &str) -> Store {
    loopback_store_indexed(table, &[]).await
}

/// The same, with the generic indexes of `slots`.
#[cfg(test)]
pub(crate) async fn loopback_store_indexed(table: &str, slots: &[u8]) -> Store {
    let endpoint = loopback_endpoint().await;
    let store = Store::connect(
        Some(&endpoint),
        Credentials::Local,
        table,
        &StoreTuning::default(),
    )
    .await;
    store.create_table(slots).await.expect("a table");
    store
}

/// The address of a fresh dynoxide HTTP server in this process.
#[cfg(test)]
async fn loopback_endpoint() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let endpoint = format!("http://{}", listener.local_addr().expect("an address"));
    let database = dynoxide::Database::memory().expect("a database");
    tokio::spawn(dynoxide::server::serve_on(listener, database));
    endpoint
}

#[cfg(test)]
mod tests {
    use super::super::item::{AttrValue, Item};
    use std::sync::Mutex;

    use aws_smithy_runtime_api::box_error::BoxError;
    use aws_smithy_runtime_api::client::interceptors::Intercept;
    use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
    use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
    use aws_smithy_types::config_bag::ConfigBag;

    use super::*;

    /// A request as the SDK transmits it: its body and its `Authorization` header.
    #[derive(Debug, Clone)]
    struct Sent {
        body: String,
        authorization: Option<String>,
    }

    /// Keeps every request the SDK transmits.
    #[derive(Debug, Default, Clone)]
    struct Requests(Arc<Mutex<Vec<Sent>>>);

    impl Requests {
        fn last(&self) -> Sent {
            let sent = self.0.lock().expect("not poisoned");
            sent.last().cloned().expect("a request was sent")
        }
    }

    impl Intercept for Requests {
        fn name(&self) -> &'static str {
            "Requests"
        }

        fn read_before_transmit(
            &self,
            context: &BeforeTransmitInterceptorContextRef<'_>,
            _: &RuntimeComponents,
            _: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            let request = context.request();
            let body = request.body().bytes().unwrap_or_default();
            let sent = Sent {
                body: String::from_utf8_lossy(body).into_owned(),
                authorization: request.headers().get("authorization").map(str::to_owned),
            };
            self.0.lock().map_err(|_| "poisoned")?.push(sent);
            Ok(())
        }
    }

    /// The TransactWriteItems that `store` sends for one put.
    async fn transaction_sent(store: Store) -> Sent {
        let requests = Requests::default();
        let config = store
            .client
            .config()
            .to_builder()
            .interceptor(requests.clone());
        let store = Store {
            client: Client::from_conf(config.build()),
            ..store
        };
        let item = Item::from_iter([
            ("PK".to_owned(), AttrValue::S("NODE#1".to_owned())),
            ("SK".to_owned(), AttrValue::S("NODE#1".to_owned())),
        ]);
        store
            .transact_write(vec![Write::Put {
                item,
                condition: Vec::new(),
            }])
            .await
            .expect("the put commits");
        requests.last()
    }

    /// The ListStreams that `store`'s change-stream client sends.
    async fn list_streams_sent(store: &Store) -> Sent {
        let requests = Requests::default();
        let config = store
            .streams
            .config()
            .to_builder()
            .interceptor(requests.clone());
        aws_sdk_dynamodbstreams::Client::from_conf(config.build())
            .list_streams()
            .send()
            .await
            .expect("the streams are listed");
        requests.last()
    }

    #[tokio::test]
    async fn only_a_store_that_can_lose_answers_gets_client_tokens() {
        let endpoint = loopback_endpoint().await;
        let tuning = StoreTuning::default();
        let remote = Store::connect(Some(&endpoint), Credentials::Local, "tokens", &tuning).await;
        remote.create_table(&[]).await.expect("a table");
        assert!(
            transaction_sent(remote)
                .await
                .body
                .contains("\"ClientRequestToken\""),
            "a store across a network keeps a token to answer a retry"
        );
        let embedded = EmbeddedStore::start(&super::super::embedded::EmbeddedLocation::Memory)
            .expect("an embedded store");
        let in_process = Store::connect_in_process(&embedded, "tokens", &tuning).await;
        in_process.create_table(&[]).await.expect("a table");
        let body = transaction_sent(in_process).await.body;
        assert!(body.contains("\"TransactItems\""), "{body}");
        assert!(!body.contains("ClientRequestToken"), "{body}");
    }

    #[tokio::test]
    async fn only_a_store_across_a_network_signs_its_requests() {
        let signed = |sent: &Sent| {
            sent.authorization
                .as_deref()
                .is_some_and(|value| value.starts_with("AWS4-HMAC-SHA256 Credential=tablegraph/"))
        };
        let endpoint = loopback_endpoint().await;
        let tuning = StoreTuning::default();
        let remote = Store::connect(Some(&endpoint), Credentials::Local, "signed", &tuning).await;
        remote.create_table(&[]).await.expect("a table");
        let sent = list_streams_sent(&remote).await;
        assert!(signed(&sent), "{sent:?}");
        let sent = transaction_sent(remote).await;
        assert!(signed(&sent), "{sent:?}");

        let embedded = EmbeddedStore::start(&super::super::embedded::EmbeddedLocation::Memory)
            .expect("an embedded store");
        let in_process = Store::connect_in_process(&embedded, "unsigned", &tuning).await;
        in_process.create_table(&[]).await.expect("a table");
        let sent = list_streams_sent(&in_process).await;
        assert_eq!(sent.authorization, None, "{sent:?}");
        let sent = transaction_sent(in_process).await;
        assert_eq!(sent.authorization, None, "{sent:?}");
        assert!(sent.body.contains("\"TransactItems\""), "{sent:?}");

        // With the simulated round trip, the client is wrapped but still in this process.
        let slow = StoreTuning {
            latency: Some(Duration::from_millis(1)),
            faults: None,
        };
        let in_process = Store::connect_in_process(&embedded, "unsigned", &slow).await;
        let sent = transaction_sent(in_process).await;
        assert_eq!(sent.authorization, None, "{sent:?}");
    }
}
