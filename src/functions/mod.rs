//! The functions that resolve the schema's own fields (Amplify's `@function(name:)`): each
//! name is an HTTP endpoint (`--function NAME=URL`) that receives the field's event as a JSON
//! POST and answers the field's value as JSON, as a Lambda function answers AppSync, or an AWS
//! Lambda function itself (`--function NAME=lambda:FUNCTION`, invoked through the SDK; `invoke`
//! makes both kinds of call).
//!
//! - An answer `{ "errorMessage": …, "errorType": … }` is the field's error with that
//!   `errorType` (`Lambda:Unhandled` when it names none), as AppSync reports a function's
//!   error. So is an answer that is not JSON, an HTTP status other than 2xx, a function that
//!   cannot be reached, and one that does not answer within `--function-timeout-secs`: each
//!   `Lambda:Unhandled`, with a message that names the function and says which.
//! - At most `--function-concurrency` calls of one function run at once; others wait their
//!   turn. Nothing is retried: a mutation's function may have acted before it failed.
//! - Functions may also be listed in `functions.toml` beside the schema (a table per function:
//!   `url`, and `max_batch_size` for BatchInvoke), as [`FunctionsConfig::with_file`] reads it.
//! - `${env}` in a function's name is the `--env` given, as Amplify names a function per
//!   environment (`getSensorData-${env}`).
//! - A function given `--function-batch NAME=MAX` gets AppSync's BatchInvoke: the calls of one
//!   level of a request (a field of each of 50 posts) are one POST of the list of events (at
//!   most MAX a call), answered by the list of values in the same order, where an element
//!   `{ "errorMessage", "errorType" }` is that one field's error. Other functions get one event
//!   a call. A request's calls are gathered by [`Calls`], which closes a batch as the request's
//!   loader does (`loaders`' module doc says why by yielding, not by a timer).
//!
//! Invariant: what a function answers never reaches a log, and a function's address never
//! reaches a client: an error names the function, not where it runs.
//!
//! # Why reqwest
//!
//! The server already builds reqwest (its JWKS fetches and trace exports use it): one HTTP
//! client, with its connection pool and timeouts, for every call out.

mod invoke;

use invoke::error_of;
pub use invoke::{FunctionError, HttpRequest, InvokeConfig, Invoker, Target, UNHANDLED};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

/// How functions are reached: each name's endpoint, the environment `${env}` stands for,
/// and the limits of a call.
#[derive(Debug, Clone)]
pub struct FunctionsConfig {
    /// `NAME=URL` pairs (`--function`), names as the schema writes them after `${env}`.
    pub endpoints: Vec<(String, String)>,
    /// What `${env}` in a function's name stands for (`--env`).
    pub env: Option<String>,
    /// How long a call may take (`--function-timeout-secs`).
    pub timeout: Duration,
    /// Calls of one function that may run at once (`--function-concurrency`).
    pub concurrency: usize,
    /// The functions that take a list of events, each with the most events a call
    /// (`--function-batch NAME=MAX`).
    pub batch: Vec<(String, usize)>,
    /// The Lambda API's address (`--lambda-endpoint`), instead of the region's.
    pub lambda_endpoint: Option<String>,
}

impl Default for FunctionsConfig {
    fn default() -> Self {
        FunctionsConfig {
            endpoints: Vec::new(),
            env: None,
            timeout: invoke::DEFAULT_TIMEOUT,
            concurrency: 64,
            batch: Vec::new(),
            lambda_endpoint: None,
        }
    }
}

/// One function of `functions.toml`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    url: String,
    /// BatchInvoke: the most events a call carries (AppSync's `maxBatchSize`).
    max_batch_size: Option<usize>,
}

impl FunctionsConfig {
    /// The same, with the functions `text` (a `functions.toml` read from `file`) lists; where
    /// a flag (`--function`) gives a function's address too, the flag's address is kept (the
    /// file's `max_batch_size` still applies), so that a file can be served on another port.
    pub fn with_file(mut self, file: &str, text: &str) -> Result<FunctionsConfig, FunctionsError> {
        let entries: std::collections::BTreeMap<String, FileEntry> =
            toml::from_str(text).map_err(|e| FunctionsError(format!("{file}: {}", e.message())))?;
        for (name, entry) in entries {
            let given = self.endpoints.iter().any(|(given, _)| *given == name);
            if let Some(max) = entry.max_batch_size {
                if max == 0 {
                    return Err(FunctionsError(format!(
                        "{file}: {name}.max_batch_size must be above 0"
                    )));
                }
                self.batch.push((name.clone(), max));
            }
            if !given {
                self.endpoints.push((name, entry.url));
            }
        }
        Ok(self)
    }
}

/// A configuration that cannot serve the schema: a function it names is not configured, or
/// an address is not a URL.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FunctionsError(pub String);

/// The configured functions, ready to call.
#[derive(Debug)]
pub struct Functions {
    endpoints: HashMap<String, Endpoint>,
    env: Option<String>,
    /// What `${aws_region}` in an `@http` URL stands for: the environment's `AWS_REGION`.
    region: Option<String>,
    invoker: Invoker,
    /// `@http` calls that may still start now.
    http_turns: Arc<Semaphore>,
}

impl Default for Functions {
    /// No function at all: what a server without `--function` calls.
    fn default() -> Self {
        Functions {
            endpoints: HashMap::new(),
            env: None,
            region: None,
            invoker: Invoker::default(),
            http_turns: Arc::new(Semaphore::new(FunctionsConfig::default().concurrency)),
        }
    }
}

#[derive(Debug)]
struct Endpoint {
    target: Target,
    /// Calls that may still start now.
    turns: Arc<Semaphore>,
    /// BatchInvoke: the most events one call carries.
    batch: Option<usize>,
}

impl Functions {
    pub async fn new(config: &FunctionsConfig) -> Result<Functions, FunctionsError> {
        let mut endpoints = HashMap::new();
        for (name, url) in &config.endpoints {
            let parsed = Target::parse(url).ok_or_else(|| {
                FunctionsError(format!(
                    "--function {name}=…: the address must be an http:// or https:// URL, or \
                     lambda:FUNCTION (a Lambda function's name or ARN)"
                ))
            })?;
            let batch = config
                .batch
                .iter()
                .find(|(batched, _)| batched == name)
                .map(|(_, max)| (*max).max(1));
            let endpoint = Endpoint {
                target: parsed,
                turns: Arc::new(Semaphore::new(config.concurrency.max(1))),
                batch,
            };
            if endpoints.insert(name.clone(), endpoint).is_some() {
                return Err(FunctionsError(format!(
                    "--function {name} is given twice; give each function once"
                )));
            }
        }
        if let Some((name, _)) = config
            .batch
            .iter()
            .find(|(name, _)| !endpoints.contains_key(name))
        {
            return Err(FunctionsError(format!(
                "--function-batch {name}: no --function {name}=URL says where it runs"
            )));
        }
        let with_lambda = endpoints
            .values()
            .any(|endpoint| matches!(endpoint.target, Target::Lambda(_)));
        let invoker = Invoker::new(
            &InvokeConfig {
                timeout: config.timeout,
                lambda_endpoint: config.lambda_endpoint.clone(),
            },
            with_lambda,
        )
        .await
        .map_err(FunctionsError)?;
        let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()));
        Ok(Functions {
            endpoints,
            env: config.env.clone(),
            region,
            invoker,
            http_turns: Arc::new(Semaphore::new(config.concurrency.max(1))),
        })
    }

    /// The name a schema's `@function(name:)` stands for: `${env}` replaced by `--env`.
    pub fn name_of(&self, written: &str) -> Result<String, FunctionsError> {
        if !written.contains("${env}") {
            return Ok(written.to_owned());
        }
        match &self.env {
            Some(env) => Ok(written.replace("${env}", env)),
            None => Err(FunctionsError(format!(
                "function {written} names ${{env}}: give --env (the environment's name)"
            ))),
        }
    }

    /// How long a call, or a field's whole pipeline of calls, may take.
    pub fn timeout(&self) -> Duration {
        self.invoker.timeout()
    }

    /// An `@http` URL as written with `${env}` and `${aws_region}` replaced.
    pub fn url_of(&self, written: &str) -> Result<String, FunctionsError> {
        let mut url = written.to_owned();
        for (name, value, flag) in [
            ("${env}", &self.env, "give --env (the environment's name)"),
            ("${aws_region}", &self.region, "set AWS_REGION"),
        ] {
            if url.contains(name) {
                let value = value.as_ref().ok_or_else(|| {
                    FunctionsError(format!("@http(url: \"{written}\") names {name}: {flag}"))
                })?;
                url = url.replace(name, value);
            }
        }
        Ok(url)
    }

    /// Makes the `@http` call of the field `field`, waiting for its turn included, within the
    /// timeout.
    pub async fn http(&self, field: &str, request: HttpRequest) -> Result<Value, FunctionError> {
        let call = async {
            let _turn = self
                .http_turns
                .acquire()
                .await
                .map_err(|_| FunctionError::unhandled(format!("{field} is closed")))?;
            self.invoker.http(field, request).await
        };
        match tokio::time::timeout(self.invoker.timeout(), call).await {
            Ok(answer) => answer,
            Err(_) => Err(self
                .invoker
                .timed_out(&format!("the @http endpoint of {field}"))),
        }
    }

    /// Refuses a schema naming a function that is not configured.
    pub fn check_named(
        &self,
        named: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), FunctionsError> {
        for (field, written) in named {
            let name = self.name_of(&written)?;
            if !self.endpoints.contains_key(&name) {
                return Err(FunctionsError(format!(
                    "{field} calls function {name}, which is not configured: give \
                     --function {name}=URL"
                )));
            }
        }
        Ok(())
    }

    /// Calls the function the schema names `written` with `event`; its JSON answer. A batched
    /// function's call joins the request's open batch of it (`calls`), when there is one.
    pub async fn call(
        &self,
        calls: Option<&Calls>,
        written: &str,
        event: Value,
    ) -> Result<Value, FunctionError> {
        let name = self
            .name_of(written)
            .map_err(|e| FunctionError::unhandled(e.0))?;
        let endpoint = self.endpoint(&name)?;
        match (calls, endpoint.batch) {
            (Some(calls), Some(max)) => calls.join(self, &name, event, max).await,
            _ => self.post(&name, endpoint, &event).await,
        }
    }

    fn endpoint(&self, name: &str) -> Result<&Endpoint, FunctionError> {
        self.endpoints
            .get(name)
            .ok_or_else(|| FunctionError::unhandled(format!("function {name} is not configured")))
    }

    /// One call of `name` with `body`, waiting for its turn included, within the timeout;
    /// its JSON answer.
    async fn post(
        &self,
        name: &str,
        endpoint: &Endpoint,
        body: &Value,
    ) -> Result<Value, FunctionError> {
        let call = async {
            let _turn = endpoint
                .turns
                .acquire()
                .await
                .map_err(|_| FunctionError::unhandled(format!("function {name} is closed")))?;
            self.invoker
                .invoke(&format!("function {name}"), &endpoint.target, body)
                .await
        };
        match tokio::time::timeout(self.invoker.timeout(), call).await {
            Ok(answer) => answer,
            Err(_) => Err(self.invoker.timed_out(&format!("function {name}"))),
        }
    }

    /// BatchInvoke: one POST of `events` to `name`, answered by a list of as many values.
    async fn post_batch(&self, name: &str, events: Vec<Value>) -> Batched {
        let endpoint = self.endpoint(name)?;
        let count = events.len();
        match self.post(name, endpoint, &Value::Array(events)).await? {
            Value::Array(answers) if answers.len() == count => Ok(answers
                .into_iter()
                .map(|answer| match error_of(&answer) {
                    Some(error) => Err(error),
                    None => Ok(answer),
                })
                .collect()),
            _ => Err(FunctionError::unhandled(format!(
                "function {name} answered a batch of {count} events with something other than \
                 a list of {count} values"
            ))),
        }
    }
}

/// What one BatchInvoke call answered: a value or an error for each event, in order; or the
/// call's own failure, which is every event's.
type Batched = Result<Vec<Result<Value, FunctionError>>, FunctionError>;

/// Yields before a batch is sent, as the request's loader yields before it reads: each yield
/// lets every ready resolver of the request run up to its own call.
const YIELDS_BEFORE_CALL: usize = 6;

/// One request's calls of batched functions: the open batch of each function, which the calls
/// of one level join.
#[derive(Debug, Default)]
pub struct Calls {
    open: std::sync::Mutex<HashMap<String, Arc<Batch>>>,
}

#[derive(Debug, Default)]
struct Batch {
    /// The events of the batch, in the order their calls joined it.
    events: std::sync::Mutex<Vec<Value>>,
    answers: tokio::sync::OnceCell<Batched>,
}

impl Calls {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Batch>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `event` to the open batch of `name` (a full batch is closed, and the next call
    /// opens another), then waits for the batch's answer to it.
    async fn join(
        &self,
        functions: &Functions,
        name: &str,
        event: Value,
        max: usize,
    ) -> Result<Value, FunctionError> {
        let (batch, at) = {
            let mut open = self.open();
            let batch = open.entry(name.to_owned()).or_default().clone();
            let mut events = batch.events.lock().unwrap_or_else(|e| e.into_inner());
            events.push(event);
            if events.len() >= max {
                open.remove(name);
            }
            (batch.clone(), events.len() - 1)
        };
        for _ in 0..YIELDS_BEFORE_CALL {
            tokio::task::yield_now().await;
        }
        let answers = batch
            .answers
            .get_or_init(|| async {
                // Close the batch: later calls open another.
                let events = {
                    let mut open = self.open();
                    if open.get(name).is_some_and(|o| Arc::ptr_eq(o, &batch)) {
                        open.remove(name);
                    }
                    std::mem::take(&mut *batch.events.lock().unwrap_or_else(|e| e.into_inner()))
                };
                functions.post_batch(name, events).await
            })
            .await;
        match answers {
            Ok(answers) => answers.get(at).cloned().unwrap_or_else(|| {
                Err(FunctionError::unhandled(format!(
                    "function {name} answered no value for an event"
                )))
            }),
            Err(error) => Err(error.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_toml_lists_functions_beside_the_flags() {
        let config = FunctionsConfig {
            endpoints: vec![("flag".to_owned(), "http://127.0.0.1:1/a".to_owned())],
            ..FunctionsConfig::default()
        }
        .with_file(
            "functions.toml",
            "[sensor-dev]\nurl = \"http://127.0.0.1:1/b\"\nmax_batch_size = 25\n\n[plain]\nurl = \"http://127.0.0.1:1/c\"\n",
        )
        .expect("a file");
        let names: Vec<&str> = config.endpoints.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["flag", "plain", "sensor-dev"]);
        assert_eq!(config.batch, [("sensor-dev".to_owned(), 25)]);
        // A flag's address wins over the file's; the file's batch size still holds.
        let twice = FunctionsConfig {
            endpoints: vec![("plain".to_owned(), "http://127.0.0.1:1/a".to_owned())],
            ..FunctionsConfig::default()
        }
        .with_file(
            "functions.toml",
            "[plain]\nurl = \"http://x/\"\nmax_batch_size = 5\n",
        )
        .expect("a file");
        assert_eq!(
            twice.endpoints,
            [("plain".to_owned(), "http://127.0.0.1:1/a".to_owned())]
        );
        assert_eq!(twice.batch, [("plain".to_owned(), 5)]);
        let unknown = FunctionsConfig::default()
            .with_file("functions.toml", "[f]\nurl = \"http://x/\"\ntimeout = 3\n")
            .expect_err("an unknown key");
        assert!(
            unknown
                .0
                .starts_with("functions.toml: unknown field `timeout`"),
            "{unknown}"
        );
    }

    #[tokio::test]
    async fn env_in_a_name_is_the_environment_given() {
        let config = FunctionsConfig {
            endpoints: vec![("fn-dev".to_owned(), "http://127.0.0.1:1/".to_owned())],
            env: Some("dev".to_owned()),
            ..FunctionsConfig::default()
        };
        let functions = Functions::new(&config).await.expect("functions");
        assert_eq!(functions.name_of("fn-${env}").expect("a name"), "fn-dev");
        assert!(
            functions
                .check_named([("Query.a".to_owned(), "fn-${env}".to_owned())])
                .is_ok()
        );
        let error = functions
            .check_named([("Query.b".to_owned(), "other".to_owned())])
            .expect_err("not configured");
        assert!(error.0.contains("--function other=URL"), "{error}");
        let without_env = Functions::new(&FunctionsConfig::default())
            .await
            .expect("functions");
        assert!(without_env.name_of("fn-${env}").is_err());
        let bad = FunctionsConfig {
            endpoints: vec![("f".to_owned(), "ftp://x".to_owned())],
            ..FunctionsConfig::default()
        };
        assert!(Functions::new(&bad).await.is_err());
    }
}
