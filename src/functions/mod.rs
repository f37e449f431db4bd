//! The functions that resolve the schema's own fields (Amplify's `@function(name:)`): each
//! name is an HTTP endpoint (`--function NAME=URL`) that receives the field's event as a JSON
//! POST and answers the field's value as JSON, as a Lambda function answers AppSync.
//!
//! - An answer `{ "errorMessage": …, "errorType": … }` is the field's error with that
//!   `errorType` (`Lambda:Unhandled` when it names none), as AppSync reports a function's
//!   error. So is an answer that is not JSON, an HTTP status other than 2xx, a function that
//!   cannot be reached, and one that does not answer within `--function-timeout-secs`: each
//!   `Lambda:Unhandled`, with a message that names the function and says which.
//! - At most `--function-concurrency` calls of one function run at once; others wait their
//!   turn. Nothing is retried: a mutation's function may have acted before it failed.
//! - `${env}` in a function's name is the `--env` given, as Amplify names a function per
//!   environment (`getSensorData-${env}`).
//!
//! Invariant: what a function answers never reaches a log, and a function's address never
//! reaches a client: an error names the function, not where it runs.
//!
//! # Why reqwest
//!
//! The server already builds reqwest (its JWKS fetches and trace exports use it): one HTTP
//! client, with its connection pool and timeouts, for every call out.

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
}

impl Default for FunctionsConfig {
    fn default() -> Self {
        FunctionsConfig {
            endpoints: Vec::new(),
            env: None,
            // AppSync's own limit on a resolver's data source call.
            timeout: Duration::from_secs(30),
            concurrency: 64,
        }
    }
}

/// A configuration that cannot serve the schema: a function it names is not configured, or
/// an address is not a URL.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FunctionsError(pub String);

/// A call that did not give the field a value: AppSync's `errorType` and a message for the
/// client.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionError {
    pub error_type: String,
    pub message: String,
}

impl FunctionError {
    fn unhandled(message: String) -> FunctionError {
        FunctionError {
            error_type: UNHANDLED.to_owned(),
            message,
        }
    }
}

/// AppSync's `errorType` of a function that failed without naming one.
pub const UNHANDLED: &str = "Lambda:Unhandled";

/// The configured functions, ready to call.
#[derive(Debug, Default)]
pub struct Functions {
    endpoints: HashMap<String, Endpoint>,
    env: Option<String>,
    timeout: Duration,
    client: reqwest::Client,
}

#[derive(Debug)]
struct Endpoint {
    url: reqwest::Url,
    /// Calls that may still start now.
    turns: Arc<Semaphore>,
}

impl Functions {
    pub fn new(config: &FunctionsConfig) -> Result<Functions, FunctionsError> {
        let mut endpoints = HashMap::new();
        for (name, url) in &config.endpoints {
            let parsed = reqwest::Url::parse(url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| {
                    FunctionsError(format!(
                        "--function {name}=…: the address must be an http:// or https:// URL"
                    ))
                })?;
            let endpoint = Endpoint {
                url: parsed,
                turns: Arc::new(Semaphore::new(config.concurrency.max(1))),
            };
            if endpoints.insert(name.clone(), endpoint).is_some() {
                return Err(FunctionsError(format!(
                    "--function {name} is given twice; give each function once"
                )));
            }
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| FunctionsError(format!("cannot make the functions' HTTP client: {e}")))?;
        Ok(Functions {
            endpoints,
            env: config.env.clone(),
            timeout: config.timeout,
            client,
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

    /// Calls the function the schema names `written` with `event`; its JSON answer.
    pub async fn invoke(&self, written: &str, event: &Value) -> Result<Value, FunctionError> {
        let name = self
            .name_of(written)
            .map_err(|e| FunctionError::unhandled(e.0))?;
        let Some(endpoint) = self.endpoints.get(&name) else {
            return Err(FunctionError::unhandled(format!(
                "function {name} is not configured"
            )));
        };
        let _turn = endpoint
            .turns
            .acquire()
            .await
            .map_err(|_| FunctionError::unhandled(format!("function {name} is closed")))?;
        let answer = self
            .client
            .post(endpoint.url.clone())
            .json(event)
            .send()
            .await
            .map_err(|e| self.failed(&name, &e))?;
        let status = answer.status();
        let body = answer.bytes().await.map_err(|e| self.failed(&name, &e))?;
        let value: Option<Value> = serde_json::from_slice(&body).ok();
        if let Some(error) = value.as_ref().and_then(error_of) {
            return Err(error);
        }
        if !status.is_success() {
            return Err(FunctionError::unhandled(format!(
                "function {name} answered HTTP {}",
                status.as_u16()
            )));
        }
        value.ok_or_else(|| {
            FunctionError::unhandled(format!(
                "function {name} answered something other than JSON"
            ))
        })
    }

    fn failed(&self, name: &str, error: &reqwest::Error) -> FunctionError {
        let message = if error.is_timeout() {
            format!(
                "function {name} did not answer within {} s",
                self.timeout.as_secs_f64()
            )
        } else {
            format!("function {name} could not be reached")
        };
        tracing::warn!(function = name, "{message}");
        FunctionError::unhandled(message)
    }
}

/// The error a function answered: an object with a string `errorMessage`, and its
/// `errorType` if it gives one.
fn error_of(answer: &Value) -> Option<FunctionError> {
    let object = answer.as_object()?;
    let message = object.get("errorMessage")?.as_str()?;
    let error_type = object
        .get("errorType")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .unwrap_or(UNHANDLED);
    Some(FunctionError {
        error_type: error_type.to_owned(),
        message: message.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_with_an_error_message_is_the_fields_error() {
        let answer =
            serde_json::json!({ "errorMessage": "no such sensor", "errorType": "NotFound" });
        assert_eq!(
            error_of(&answer),
            Some(FunctionError {
                error_type: "NotFound".to_owned(),
                message: "no such sensor".to_owned()
            })
        );
        let untyped = serde_json::json!({ "errorMessage": "boom" });
        assert_eq!(
            error_of(&untyped).map(|e| e.error_type),
            Some(UNHANDLED.to_owned())
        );
        assert_eq!(error_of(&serde_json::json!({ "id": "1" })), None);
        assert_eq!(error_of(&serde_json::json!([1, 2])), None);
    }

    #[test]
    fn env_in_a_name_is_the_environment_given() {
        let config = FunctionsConfig {
            endpoints: vec![("fn-dev".to_owned(), "http://127.0.0.1:1/".to_owned())],
            env: Some("dev".to_owned()),
            ..FunctionsConfig::default()
        };
        let functions = Functions::new(&config).expect("functions");
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
        let without_env = Functions::new(&FunctionsConfig::default()).expect("functions");
        assert!(without_env.name_of("fn-${env}").is_err());
        let bad = FunctionsConfig {
            endpoints: vec![("f".to_owned(), "ftp://x".to_owned())],
            ..FunctionsConfig::default()
        };
        assert!(Functions::new(&bad).is_err());
    }
}
