//! AppSync's Lambda authorizer (`AWS_LAMBDA` mode): a function, at an HTTP endpoint or in AWS
//! Lambda (`--lambda-authorizer`), decides on a request's `Authorization` value. It is sent
//! `{ authorizationToken, requestContext: { apiId, accountId, requestId, queryString,
//! operationName, variables }, requestHeaders }` and answers `{ isAuthorized, resolverContext,
//! deniedFields, ttlOverride }`.
//!
//! - A decision, either way, is kept for the token for `ttlOverride` seconds (an hour at most,
//!   as AppSync), or `--lambda-authorizer-ttl` (300) when the answer names none; `ttlOverride:
//!   0` keeps none, for
//!   an authorizer that decides on the query. Tokens are kept as their SHA-256, never as given.
//! - An authorizer that cannot be reached, times out, fails or answers something else than a
//!   decision refuses the request (it never admits one), counts in
//!   `tablegraph_lambda_authorizer_failures_total`, and logs at most one line a minute. Such a
//!   failure is not kept: the next request asks again.
//!
//! # Why `lru`
//!
//! The decisions are a bounded map with an expiry each; `lru` (already in the tree for the
//! server's other bounded maps) holds them, each entry carrying its own deadline, checked when
//! it is read.

use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sha2::Digest as _;

use super::request::RequestContext;
use crate::functions::{InvokeConfig, Invoker, Target};
use crate::telemetry::Metrics;

/// Where the authorizer runs and how long its decisions are kept.
#[derive(Debug, Clone)]
pub struct LambdaAuthorizerConfig {
    /// An `http(s)://` URL or `lambda:FUNCTION`.
    pub address: String,
    /// How long a decision is kept when the answer gives no `ttlOverride`.
    pub ttl: Duration,
    /// How long a call may take.
    pub timeout: Duration,
    /// The Lambda API's address, for a `lambda:` authorizer (`--lambda-endpoint`).
    pub lambda_endpoint: Option<String>,
}

/// AppSync's default time a decision is kept.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// AppSync's longest time a decision is kept (`ttlOverride` is capped at it).
const MAX_TTL: Duration = Duration::from_secs(3600);

/// The most decisions kept; the least recently used goes first.
const KEPT: usize = 10_000;

/// A minute: how often at most a failing authorizer is logged.
const LOG_EVERY: Duration = Duration::from_secs(60);

const FAILURES: &str = "tablegraph_lambda_authorizer_failures_total";

/// A caller the authorizer admitted.
#[derive(Debug, Clone, PartialEq)]
pub struct LambdaIdentity {
    /// What the authorizer answered as `resolverContext`: the event's `identity.resolverContext`.
    pub resolver_context: Map<String, Value>,
    /// `(type, field)` pairs the caller may not read (`deniedFields`).
    pub denied_fields: Arc<HashSet<(String, String)>>,
    /// The token's SHA-256 in hex: who the caller is, without the token.
    pub token_id: String,
}

impl LambdaIdentity {
    /// Whether the authorizer denied the caller `field` of `type_name`.
    pub fn denies(&self, type_name: &str, field: &str) -> bool {
        !self.denied_fields.is_empty()
            && self
                .denied_fields
                .contains(&(type_name.to_owned(), field.to_owned()))
    }
}

/// Why the authorizer did not admit a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// It answered `isAuthorized: false`.
    Denied,
    /// It could not be asked, or answered no decision.
    Unavailable,
}

/// A decision, as kept.
#[derive(Debug, Clone)]
enum Decision {
    Admitted(LambdaIdentity),
    Refused,
}

pub(super) struct LambdaAuthorizer {
    invoker: Invoker,
    target: Target,
    ttl: Duration,
    kept: Mutex<lru::LruCache<[u8; 32], (Instant, Decision)>>,
    metrics: Metrics,
    failures: metrics::Counter,
    /// When a failure was last logged.
    logged: Mutex<Option<Instant>>,
}

impl LambdaAuthorizer {
    pub(super) async fn new(config: &LambdaAuthorizerConfig) -> Result<LambdaAuthorizer, String> {
        let target = Target::parse(&config.address).ok_or_else(|| {
            "--lambda-authorizer: give an http:// or https:// URL, or lambda:FUNCTION".to_owned()
        })?;
        let invoker = Invoker::new(
            &InvokeConfig {
                timeout: config.timeout,
                lambda_endpoint: config.lambda_endpoint.clone(),
            },
            matches!(target, Target::Lambda(_)),
        )
        .await?;
        let metrics = Metrics::new(&[1.0]);
        metrics.describe_counter(
            FAILURES,
            "Requests refused because the Lambda authorizer could not decide (unreachable, \
             timed out, failed, or answered no decision).",
        );
        Ok(LambdaAuthorizer {
            invoker,
            target,
            ttl: config.ttl,
            kept: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(KEPT).expect("a positive constant"),
            )),
            failures: metrics.counter(FAILURES, &[]),
            metrics,
            logged: Mutex::new(None),
        })
    }

    pub(super) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The authorizer's decision on `token` (the `Authorization` value as given).
    pub(super) async fn authorize(
        &self,
        token: &str,
        context: &RequestContext,
    ) -> Result<LambdaIdentity, Refusal> {
        let key: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let kept = {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            match kept.get(&key) {
                Some((until, decision)) if *until > Instant::now() => Some(decision.clone()),
                Some(_) => {
                    kept.pop(&key);
                    None
                }
                None => None,
            }
        };
        let decision = match kept {
            Some(decision) => decision,
            None => {
                let (decision, ttl) = self.ask(token, &key, context).await?;
                if !ttl.is_zero() {
                    self.kept
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .put(key, (Instant::now() + ttl, decision.clone()));
                }
                decision
            }
        };
        match decision {
            Decision::Admitted(identity) => Ok(identity),
            Decision::Refused => Err(Refusal::Denied),
        }
    }

    /// Calls the authorizer: its decision and how long to keep it.
    async fn ask(
        &self,
        token: &str,
        key: &[u8; 32],
        context: &RequestContext,
    ) -> Result<(Decision, Duration), Refusal> {
        let event = serde_json::json!({
            "authorizationToken": token,
            "requestContext": {
                "apiId": "tablegraph",
                "accountId": "",
                "requestId": context.request_id,
                "queryString": context.query,
                "operationName": context.operation_name,
                "variables": if context.variables.is_null() {
                    Value::Object(Map::new())
                } else {
                    context.variables.clone()
                },
            },
            "requestHeaders": context.headers,
        });
        let name = "the Lambda authorizer";
        let answer = match tokio::time::timeout(
            self.invoker.timeout(),
            self.invoker.invoke(name, &self.target, &event),
        )
        .await
        {
            Ok(Ok(answer)) => answer,
            // The invoker's own reasons name the authorizer; an error the authorizer answered
            // is its own text, which is not logged.
            Ok(Err(error)) if error.message.contains(name) => {
                return Err(self.failed(&error.message));
            }
            Ok(Err(error)) => {
                return Err(
                    self.failed(&format!("{name} answered an error ({})", error.error_type))
                );
            }
            Err(_) => return Err(self.failed(&self.invoker.timed_out(name).message)),
        };
        let decided = read_decision(&answer, hex(key))
            .map_err(|reason| self.failed(&format!("the Lambda authorizer {reason}")))?;
        // At most AppSync's longest, an hour: an answer cannot keep a decision for ever.
        let ttl = decided.1.unwrap_or(self.ttl).min(MAX_TTL);
        Ok((decided.0, ttl))
    }

    /// Counts a failure, logs it at most once a minute, and refuses the request.
    fn failed(&self, reason: &str) -> Refusal {
        self.failures.increment(1);
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        if logged.is_none_or(|at| at.elapsed() >= LOG_EVERY) {
            *logged = Some(Instant::now());
            tracing::warn!(
                reason,
                "the Lambda authorizer could not decide; requests it should decide are refused \
                 (counted in {FAILURES}, logged at most once a minute)"
            );
        }
        Refusal::Unavailable
    }
}

/// The decision an answer holds, with its `ttlOverride`; why it holds none.
fn read_decision(
    answer: &Value,
    token_id: String,
) -> Result<(Decision, Option<Duration>), &'static str> {
    let object = answer
        .as_object()
        .ok_or("answered something other than an object")?;
    let ttl = match object.get("ttlOverride") {
        None | Some(Value::Null) => None,
        Some(seconds) => {
            Some(Duration::from_secs(seconds.as_u64().ok_or(
                "answered a ttlOverride that is not a number of seconds",
            )?))
        }
    };
    match object.get("isAuthorized") {
        Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => return Ok((Decision::Refused, ttl)),
        _ => return Err("answered no isAuthorized: true or false"),
    }
    let resolver_context = match object.get("resolverContext") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(context)) => context.clone(),
        Some(_) => return Err("answered a resolverContext that is not an object"),
    };
    let denied_fields = match object.get("deniedFields") {
        None | Some(Value::Null) => HashSet::new(),
        Some(Value::Array(fields)) => fields
            .iter()
            .map(|field| field.as_str().and_then(denied_field))
            .collect::<Option<HashSet<_>>>()
            .ok_or("answered a deniedFields entry that is neither Type.field nor a field's ARN")?,
        Some(_) => return Err("answered a deniedFields that is not a list"),
    };
    Ok((
        Decision::Admitted(LambdaIdentity {
            resolver_context,
            denied_fields: Arc::new(denied_fields),
            token_id,
        }),
        ttl,
    ))
}

/// A `deniedFields` entry: `Type.field`, or a field's ARN
/// (`arn:aws:appsync:REGION:ACCOUNT:apis/API/types/Type/fields/field`).
fn denied_field(entry: &str) -> Option<(String, String)> {
    let (type_name, field) = match entry.strip_prefix("arn:") {
        Some(_) => {
            let (_, path) = entry.split_once("/types/")?;
            path.split_once("/fields/")?
        }
        None => entry.split_once('.')?,
    };
    let name = |text: &str| {
        !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    (name(type_name) && name(field)).then(|| (type_name.to_owned(), field.to_owned()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denied_fields_are_type_dot_field_or_a_fields_arn() {
        assert_eq!(
            denied_field("Query.secretFarms"),
            Some(("Query".to_owned(), "secretFarms".to_owned()))
        );
        assert_eq!(
            denied_field("arn:aws:appsync:us-east-1:111122223333:apis/abc/types/Farm/fields/name"),
            Some(("Farm".to_owned(), "name".to_owned()))
        );
        assert_eq!(denied_field("Farm"), None);
        assert_eq!(denied_field("arn:aws:appsync:x:apis/abc"), None);
        assert_eq!(denied_field("Farm.na me"), None);
    }

    #[test]
    fn an_answer_is_a_decision_or_why_it_is_none() {
        let decided = |answer: Value| read_decision(&answer, "t".to_owned());
        let Ok((Decision::Admitted(identity), ttl)) = decided(serde_json::json!({
            "isAuthorized": true,
            "resolverContext": { "tenant": "north" },
            "deniedFields": ["Farm.name"],
            "ttlOverride": 10,
        })) else {
            panic!("admitted");
        };
        assert_eq!(identity.resolver_context["tenant"], "north");
        assert!(identity.denies("Farm", "name"));
        assert!(!identity.denies("Farm", "id"));
        assert_eq!(ttl, Some(Duration::from_secs(10)));
        assert!(matches!(
            decided(serde_json::json!({ "isAuthorized": false })),
            Ok((Decision::Refused, None))
        ));
        assert!(decided(serde_json::json!({ "isAuthorized": "yes" })).is_err());
        assert!(decided(serde_json::json!([true])).is_err());
        assert!(decided(serde_json::json!({ "isAuthorized": true, "ttlOverride": -1 })).is_err());
        assert!(
            decided(serde_json::json!({ "isAuthorized": true, "deniedFields": ["nope"] })).is_err()
        );
    }
}
