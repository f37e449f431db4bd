//! The [`Store`] handle: one shared SDK client, the table's reads named by what they cost, and
//! transactions, each retried in one place (see the module doc of `store`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnConsumedCapacity};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use tracing::Instrument as _;

use super::calls::{
    CallAnswer, CallLog, CallRecord, call_span, capacity, close_call_span, total_capacity,
};
use super::embedded::EmbeddedStore;
use super::error::{self, StoreError};
use super::filter::Filter;
use super::in_process;
use super::item::{self, AttrValue, Item, Map};
use super::key::{Bound, Key, MAX_BATCH_GET_KEYS, MAX_TRANSACTION_ITEMS, RangeQuery, key_map};
use super::metrics::StoreMetrics;
use super::retry;
use super::simulate::{self, StoreTuning};
use super::write::{self, Write};
use crate::keys;

/// Items a filtered Query evaluates per call: DynamoDB applies the filter after its Limit, so
/// a small Limit would cost a call per few non-matching items.
const FILTERED_QUERY_LIMIT: usize = 1000;

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
        let loopback = url::Url::parse(endpoint).is_ok_and(|url| match url.host() {
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        });
        let named = [
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        ]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
        if loopback && !named {
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
    in_process: bool,
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
    fn begin_call(&self) -> Result<(), StoreError> {
        match &self.calls {
            Some(calls) => calls.begin(),
            None => Ok(()),
        }
    }

    /// Reads items whose `PK` and `SK` both equal each key (nodes, unique values), in chunks of
    /// at most 100 keys per BatchGetItem, run concurrently. Missing keys are absent from the
    /// answer.
    pub async fn batch_get_items(&self, keys: &[String]) -> Result<Map<Item>, StoreError> {
        let chunks = keys
            .chunks(MAX_BATCH_GET_KEYS)
            .map(|chunk| self.batch_get_chunk(chunk));
        let mut found = Map::with_capacity_and_hasher(keys.len(), Default::default());
        for chunk in futures::future::try_join_all(chunks).await? {
            found.extend(chunk);
        }
        Ok(found)
    }

    async fn batch_get_chunk(&self, keys: &[String]) -> Result<Map<Item>, StoreError> {
        let request = keys_and_attributes(keys)?;
        let found = Map::with_capacity_and_hasher(keys.len(), Default::default());
        // Each attempt asks for what the last one did not read: the keys DynamoDB left
        // unprocessed are a transient failure of the attempt, with what it read kept.
        let attempt = |(request, mut found): (KeysAndAttributes, Map<Item>)| async move {
            match self.batch_get_once(&request).await {
                Err(e) => ((request, found), Err(e)),
                Ok((items, None)) => {
                    found.extend(items);
                    ((request, found), Ok(()))
                }
                Ok((items, Some(rest))) => {
                    found.extend(items);
                    let unprocessed =
                        StoreError::Throttled("BatchGetItem left keys unprocessed".into());
                    ((rest, found), Err(unprocessed))
                }
            }
        };
        let ((_, found), answer) = retry::with_context((request, found), attempt).await;
        answer.map(|()| found)
    }

    /// One BatchGetItem: the items read, by key, and the keys left unprocessed, if any.
    async fn batch_get_once(
        &self,
        request: &KeysAndAttributes,
    ) -> Result<(Map<Item>, Option<KeysAndAttributes>), StoreError> {
        self.begin_call()?;
        let asked = request.keys().len();
        let output = self
            .observed("BatchGetItem", None, Some(asked), || async {
                self.client
                    .batch_get_item()
                    .request_items(self.table.to_string(), request.clone())
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(error::classify)
            })
            .await?;
        let items: Vec<Item> = output
            .responses
            .unwrap_or_default()
            .remove(self.table.as_ref())
            .unwrap_or_default()
            .into_iter()
            .map(item::item_from_sdk)
            .collect();
        self.record(CallRecord {
            operation: "BatchGetItem",
            index: None,
            keys: Some(asked),
            items: Some(items.len()),
            consumed_capacity: total_capacity(output.consumed_capacity.as_deref()),
        });
        let found = items
            .into_iter()
            .filter_map(|item| match item.get("PK") {
                Some(AttrValue::S(pk)) => Some((pk.clone(), item)),
                _ => None,
            })
            .collect();
        let unprocessed = output
            .unprocessed_keys
            .and_then(|mut unprocessed| unprocessed.remove(self.table.as_ref()))
            .filter(|rest| !rest.keys().is_empty());
        Ok((found, unprocessed))
    }

    /// Reads one item by key with a strongly consistent GetItem: for the read of a
    /// read-modify-write, which must see the latest version.
    pub async fn get_item_consistent(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let output = retry::call(|| async {
            self.begin_call()?;
            self.observed("GetItem", None, Some(1), || async {
                self.client
                    .get_item()
                    .table_name(self.table.as_ref())
                    .set_key(Some(key_map(key)))
                    .consistent_read(true)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(error::classify)
            })
            .await
        })
        .await?;
        let consumed_capacity = capacity(output.consumed_capacity.as_ref());
        let item = output.item.map(item::item_from_sdk);
        self.record(CallRecord {
            operation: "GetItem",
            index: None,
            keys: Some(1),
            items: Some(usize::from(item.is_some())),
            consumed_capacity,
        });
        Ok(item)
    }

    /// Queries one partition between the query's bounds. Follows DynamoDB's pages until
    /// `limit` items are read or the range ends; each page is one recorded Query call.
    pub async fn query_range(&self, query: &RangeQuery<'_>) -> Result<Vec<Item>, StoreError> {
        let (pk, sk) = match query.index {
            Some(slot) => (
                keys::slot_partition_attribute(slot),
                keys::slot_sort_attribute(slot),
            ),
            None => ("PK".to_owned(), "SK".to_owned()),
        };
        let mut expression = Expression::default();
        let pk_name = expression.name(&pk);
        let pk_value = expression.value(query.partition);
        let mut condition = format!("{pk_name} = {pk_value}");
        let Some(range) = range_condition(&mut expression, &sk, &query.lower, &query.upper) else {
            return Ok(Vec::new());
        };
        if !range.is_empty() {
            condition = format!("{condition} AND {range}");
        }
        let filter = match &query.filter {
            Some((attribute, lower, upper)) => {
                match range_condition(&mut expression, attribute, lower, upper) {
                    Some(filter) if !filter.is_empty() => Some(filter),
                    Some(_) => None,
                    None => return Ok(Vec::new()),
                }
            }
            None => None,
        };
        let index = query.index.map(keys::gsi_name);
        let mut items = Vec::new();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            // BETWEEN includes its bounds; ask for enough to drop exclusive ones afterwards. A
            // filter applies after DynamoDB's Limit, so then read generously per call.
            let want = if filter.is_some() {
                FILTERED_QUERY_LIMIT
            } else {
                query.limit + 2 - items.len().min(query.limit)
            };
            let page_start = start.take();
            let output = retry::call(|| async {
                self.begin_call()?;
                self.observed("Query", index.as_deref(), None, || async {
                    self.client
                        .query()
                        .table_name(self.table.as_ref())
                        .set_index_name(index.clone())
                        .key_condition_expression(&condition)
                        .set_filter_expression(filter.clone())
                        .set_expression_attribute_names(Some(expression.names.clone()))
                        .set_expression_attribute_values(Some(expression.values.clone()))
                        .scan_index_forward(query.forward)
                        .set_consistent_read(query.consistent.then_some(true))
                        .limit(i32::try_from(want).unwrap_or(i32::MAX))
                        .set_exclusive_start_key(page_start.clone())
                        .return_consumed_capacity(ReturnConsumedCapacity::Total)
                        .send()
                        .await
                        .map_err(error::classify)
                })
                .await
            })
            .await?;
            let page = output.items.unwrap_or_default();
            self.record(CallRecord {
                operation: "Query",
                index: index.clone(),
                keys: None,
                items: Some(page.len()),
                consumed_capacity: capacity(output.consumed_capacity.as_ref()),
            });
            items.extend(
                page.into_iter()
                    .map(item::item_from_sdk)
                    .filter(|item| within(item.get(&sk), &query.lower, &query.upper)),
            );
            match output.last_evaluated_key {
                Some(key) if items.len() < query.limit => start = Some(key),
                _ => break,
            }
        }
        items.truncate(query.limit);
        Ok(items)
    }

    /// One Query call of one partition between the query's bounds, evaluating at most
    /// `query.limit` items and keeping those that meet `matching` too (a FilterExpression, which
    /// DynamoDB applies after its Limit). Answers what it kept, how many items it evaluated,
    /// and the sort key it stopped at when the range may go on (DynamoDB's
    /// `LastEvaluatedKey`): a caller reads on with a bound past it.
    pub async fn query_page(
        &self,
        query: &RangeQuery<'_>,
        matching: Option<&Filter>,
    ) -> Result<RangePage, StoreError> {
        let (pk, sk) = match query.index {
            Some(slot) => (
                keys::slot_partition_attribute(slot),
                keys::slot_sort_attribute(slot),
            ),
            None => ("PK".to_owned(), "SK".to_owned()),
        };
        let mut expression = Expression::default();
        let pk_name = expression.name(&pk);
        let pk_value = expression.value(query.partition);
        let mut condition = format!("{pk_name} = {pk_value}");
        let Some(range) = range_condition(&mut expression, &sk, &query.lower, &query.upper) else {
            return Ok(RangePage::default());
        };
        if !range.is_empty() {
            condition = format!("{condition} AND {range}");
        }
        let mut filters = Vec::new();
        if let Some((attribute, lower, upper)) = &query.filter {
            match range_condition(&mut expression, attribute, lower, upper) {
                Some(filter) if !filter.is_empty() => filters.push(filter),
                Some(_) => {}
                None => return Ok(RangePage::default()),
            }
        }
        if let Some(matching) = matching {
            filters.push(matching.expression("f", &mut expression.names, &mut expression.values));
        }
        let filter = (!filters.is_empty()).then(|| filters.join(" AND "));
        let index = query.index.map(keys::gsi_name);
        let output = retry::call(|| async {
            self.begin_call()?;
            self.observed("Query", index.as_deref(), None, || async {
                self.client
                    .query()
                    .table_name(self.table.as_ref())
                    .set_index_name(index.clone())
                    .key_condition_expression(&condition)
                    .set_filter_expression(filter.clone())
                    .set_expression_attribute_names(Some(expression.names.clone()))
                    .set_expression_attribute_values(Some(expression.values.clone()))
                    .scan_index_forward(query.forward)
                    .set_consistent_read(query.consistent.then_some(true))
                    .limit(i32::try_from(query.limit.max(1)).unwrap_or(i32::MAX))
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(error::classify)
            })
            .await
        })
        .await?;
        let page = output.items.unwrap_or_default();
        self.record(CallRecord {
            operation: "Query",
            index: index.clone(),
            keys: None,
            items: Some(page.len()),
            consumed_capacity: capacity(output.consumed_capacity.as_ref()),
        });
        let stopped_at = output
            .last_evaluated_key
            .as_ref()
            .and_then(|key| key.get(&sk))
            .and_then(|value| value.as_s().ok())
            .cloned();
        Ok(RangePage {
            items: page
                .into_iter()
                .map(item::item_from_sdk)
                .filter(|item| within(item.get(&sk), &query.lower, &query.upper))
                .collect(),
            evaluated: usize::try_from(output.scanned_count).unwrap_or(0),
            stopped_at,
        })
    }

    /// Reads every item of the table in four parallel Scan segments, each followed page by
    /// page (of DynamoDB's 1 MB: few, so on the embedded store too the segments' side by side
    /// reads win over their pages' waste). For tools that walk the whole table (`check`), never
    /// for requests.
    pub async fn scan_all(&self) -> Result<Vec<Item>, StoreError> {
        let segments = 4;
        let scans = (0..segments).map(|segment| self.scan_segment(segment, segments));
        let mut items = Vec::new();
        for part in futures::future::try_join_all(scans).await? {
            items.extend(part);
        }
        Ok(items)
    }

    async fn scan_segment(&self, segment: u16, segments: u16) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .scan_page_of(segment, segments, start.as_ref(), None, None)
                .await?;
            items.extend(page.items);
            match page.next {
                Some(key) => start = Some(key),
                None => return Ok(items),
            }
        }
    }

    /// One page of one Scan segment: at most `limit` items evaluated from after `start`, keeping
    /// those whose `__typename` is `typename` (all, without one). Answers the items, where the next page starts
    /// (`None` when the segment is done) and how many items it evaluated. For resumable table
    /// walks (`migrate`).
    pub async fn scan_page(
        &self,
        segment: u16,
        segments: u16,
        start: Option<&Key>,
        typename: Option<&str>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        self.scan_page_of(segment, segments, start, typename, Some(limit))
            .await
    }

    /// The segments a resumable walk of the whole table is best split into: one on the
    /// embedded store of this process, whose segments are ranges of one hash order that each
    /// page reads past the end of (`bench/migrate.py`: four segments made a scan several times
    /// slower); four elsewhere, where DynamoDB reads them side by side.
    pub fn scan_segments(&self) -> u16 {
        if self.in_process { 1 } else { 4 }
    }

    async fn scan_page_of(
        &self,
        segment: u16,
        segments: u16,
        start: Option<&Key>,
        typename: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ScanPage, StoreError> {
        let start = start.map(key_map);
        let output = retry::call(|| async {
            self.begin_call()?;
            let mut scan = self
                .client
                .scan()
                .table_name(self.table.as_ref())
                .segment(i32::from(segment))
                .total_segments(i32::from(segments))
                .consistent_read(true)
                .set_limit(limit.map(|n| i32::try_from(n).unwrap_or(i32::MAX)))
                .set_exclusive_start_key(start.clone())
                .return_consumed_capacity(ReturnConsumedCapacity::Total);
            if let Some(typename) = typename {
                scan = scan
                    .filter_expression("#t = :t")
                    .expression_attribute_names("#t", "__typename")
                    .expression_attribute_values(":t", AttributeValue::S(typename.to_owned()));
            }
            self.observed("Scan", None, None, || async {
                scan.send().await.map_err(error::classify)
            })
            .await
        })
        .await?;
        let items: Vec<Item> = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(item::item_from_sdk)
            .collect();
        self.record(CallRecord {
            operation: "Scan",
            index: None,
            keys: None,
            items: Some(items.len()),
            consumed_capacity: capacity(output.consumed_capacity.as_ref()),
        });
        let next = output.last_evaluated_key.and_then(|key| {
            let text = |name: &str| match key.get(name) {
                Some(AttributeValue::S(s)) => Some(s.clone()),
                _ => None,
            };
            Some(Key {
                pk: text("PK")?,
                sk: text("SK")?,
            })
        });
        let evaluated = usize::try_from(output.scanned_count).unwrap_or(items.len());
        Ok(ScanPage {
            items,
            next,
            evaluated,
        })
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
        retry::with_context((keys::new_id(), false), attempt)
            .await
            .1
    }
}

/// What one call of [`Store::scan_page`] read.
#[derive(Debug, Default)]
pub struct ScanPage {
    /// The items of the type asked for.
    pub items: Vec<Item>,
    /// Where the segment's next page starts; `None` when it is done.
    pub next: Option<Key>,
    /// Items the store evaluated (`ScannedCount`), those of other types included.
    pub evaluated: usize,
}

/// What one Query call of [`Store::query_page`] read.
#[derive(Debug, Default)]
pub struct RangePage {
    /// The items within the bounds that met the filter, in the order read.
    pub items: Vec<Item>,
    /// Items DynamoDB evaluated (`ScannedCount`), the filter's rejects included.
    pub evaluated: usize,
    /// The sort key of the last item evaluated, when the range may hold more past it.
    pub stopped_at: Option<String>,
}

/// Placeholders of one expression.
#[derive(Default)]
struct Expression {
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl Expression {
    fn name(&mut self, attribute: &str) -> String {
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), attribute.to_owned());
        placeholder
    }

    fn value(&mut self, value: &str) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values
            .insert(placeholder.clone(), AttributeValue::S(value.to_owned()));
        placeholder
    }
}

/// The condition that keeps `attribute` between the bounds; empty without bounds, `None` when
/// no value can lie between them. Both bounds become an (inclusive) BETWEEN; exclusive ends are
/// dropped by [`within`] after the read.
fn range_condition(
    expression: &mut Expression,
    attribute: &str,
    lower: &Option<Bound>,
    upper: &Option<Bound>,
) -> Option<String> {
    let op = |bound: &Bound, inclusive: &'static str, exclusive: &'static str| {
        if bound.inclusive {
            inclusive
        } else {
            exclusive
        }
    };
    Some(match (lower, upper) {
        (Some(lower), Some(upper)) => {
            let empty = lower.value > upper.value
                || (lower.value == upper.value && !(lower.inclusive && upper.inclusive));
            if empty {
                return None;
            }
            let name = expression.name(attribute);
            let (low, high) = (
                expression.value(&lower.value),
                expression.value(&upper.value),
            );
            format!("{name} BETWEEN {low} AND {high}")
        }
        (Some(lower), None) => {
            let name = expression.name(attribute);
            format!(
                "{name} {} {}",
                op(lower, ">=", ">"),
                expression.value(&lower.value)
            )
        }
        (None, Some(upper)) => {
            let name = expression.name(attribute);
            format!(
                "{name} {} {}",
                op(upper, "<=", "<"),
                expression.value(&upper.value)
            )
        }
        (None, None) => String::new(),
    })
}

/// Whether a sort key read back lies within the bounds, exclusive ends included.
fn within(value: Option<&AttrValue>, lower: &Option<Bound>, upper: &Option<Bound>) -> bool {
    let Some(value) = value.and_then(AttrValue::as_str) else {
        return false;
    };
    let above = lower
        .as_ref()
        .is_none_or(|b| value > b.value.as_str() || (b.inclusive && value == b.value));
    let below = upper
        .as_ref()
        .is_none_or(|b| value < b.value.as_str() || (b.inclusive && value == b.value));
    above && below
}

fn keys_and_attributes(keys: &[String]) -> Result<KeysAndAttributes, StoreError> {
    let mut request = KeysAndAttributes::builder();
    for key in keys {
        request = request.keys(key_map(&Key::same(key.clone())));
    }
    request
        .build()
        .map_err(|e| StoreError::Other(e.to_string()))
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
