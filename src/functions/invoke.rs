//! One call of a function, wherever it runs: an HTTP endpoint given the event as a JSON POST,
//! or an AWS Lambda function (`lambda:NAME`, a name or an ARN) invoked through the SDK's
//! `Invoke`. Both answer JSON; both fail the same ways, as [`FunctionError`]s with AppSync's
//! `errorType`.
//!
//! Invariant: what a function answers never reaches a log, and where it runs (a URL, an SDK
//! message) never reaches a client: an error names the function, not its address.
//!
//! # Why aws-sdk-lambda
//!
//! The AWS SDK already signs every storage call; its Lambda client signs `Invoke` the same way,
//! with the same credential chain (environment, profile, container or instance role), so a
//! deployment gives the server one role for both.

use std::time::Duration;

use serde_json::Value;

/// A call that did not give the field a value: AppSync's `errorType` and a message for the
/// client.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionError {
    pub error_type: String,
    pub message: String,
}

impl FunctionError {
    pub(super) fn unhandled(message: String) -> FunctionError {
        FunctionError {
            error_type: UNHANDLED.to_owned(),
            message,
        }
    }
}

/// AppSync's `errorType` of a function that failed without naming one.
pub const UNHANDLED: &str = "Lambda:Unhandled";

/// The largest answer a function may give: Lambda's own limit on a synchronous answer.
const MAX_ANSWER_BYTES: usize = 6 * 1024 * 1024;

/// The prefix of an address that names an AWS Lambda function.
const LAMBDA_PREFIX: &str = "lambda:";

/// Where a function runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// An HTTP endpoint, given the event as a JSON POST.
    Http(reqwest::Url),
    /// An AWS Lambda function: its name, or its (partial) ARN, a version or alias included.
    Lambda(String),
}

impl Target {
    /// `http://…`, `https://…` or `lambda:NAME`; `None` for anything else.
    pub fn parse(address: &str) -> Option<Target> {
        if let Some(name) = address.strip_prefix(LAMBDA_PREFIX) {
            let name = name.trim();
            return (!name.is_empty()).then(|| Target::Lambda(name.to_owned()));
        }
        reqwest::Url::parse(address)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .map(Target::Http)
    }
}

/// How calls are made: the limits of a call, and where the Lambda API is.
#[derive(Debug, Clone)]
pub struct InvokeConfig {
    /// How long a call may take.
    pub timeout: Duration,
    /// The Lambda API's address (`--lambda-endpoint`), instead of the region's.
    pub lambda_endpoint: Option<String>,
}

/// Makes calls: one HTTP client (with its connection pool) for every endpoint, and one Lambda
/// client when some function is a Lambda function.
#[derive(Debug, Clone)]
pub struct Invoker {
    http: reqwest::Client,
    lambda: Option<aws_sdk_lambda::Client>,
    timeout: Duration,
}

impl Default for Invoker {
    /// HTTP calls only, within the default timeout.
    fn default() -> Self {
        Invoker {
            // It fails only where `reqwest::Client::new` panics: no TLS backend.
            http: http_client(DEFAULT_TIMEOUT).expect("the HTTP client builds"),
            lambda: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The functions' HTTP client. It follows no redirect: a call goes to the origin the schema or
/// the configuration named, and a redirect must not carry the caller's headers (an `@http`
/// field may forward `x-api-key`) to another; a `3xx` answer is the call's answer.
fn http_client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// How long a call may take when nothing says: under a request's own default timeout (30 s),
/// so that a slow call is its field's error and the rest of the answer still reaches the client.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Invoker {
    /// `with_lambda`: whether some target is a Lambda function, so that the SDK's credentials
    /// are looked up once, now, and not for a server that never invokes one.
    pub async fn new(config: &InvokeConfig, with_lambda: bool) -> Result<Invoker, String> {
        let http = http_client(config.timeout)
            .map_err(|e| format!("cannot make the functions' HTTP client: {e}"))?;
        let lambda = if with_lambda {
            Some(lambda_client(config).await)
        } else {
            None
        };
        Ok(Invoker {
            http,
            lambda,
            timeout: config.timeout,
        })
    }

    /// How long a call may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Calls `target` with `body`; its JSON answer. `name` says what is called, for messages
    /// (`function getSensor`, `the Lambda authorizer`).
    /// The caller bounds the call's time (waiting for a turn included).
    pub async fn invoke(
        &self,
        name: &str,
        target: &Target,
        body: &Value,
    ) -> Result<Value, FunctionError> {
        match target {
            Target::Http(url) => self.post(name, url, body).await,
            Target::Lambda(function) => self.invoke_lambda(name, function, body).await,
        }
    }

    async fn post(
        &self,
        name: &str,
        url: &reqwest::Url,
        body: &Value,
    ) -> Result<Value, FunctionError> {
        let answer = self
            .http
            .post(url.clone())
            .json(body)
            .send()
            .await
            .map_err(|e| self.failed(name, &e))?;
        let status = answer.status();
        let body = self.body_of(name, answer).await?;
        let value: Option<Value> = serde_json::from_slice(&body).ok();
        if let Some(error) = value.as_ref().and_then(error_of) {
            return Err(error);
        }
        if !status.is_success() {
            return Err(FunctionError::unhandled(format!(
                "{name} answered HTTP {}",
                status.as_u16()
            )));
        }
        value.ok_or_else(|| not_json(name))
    }

    async fn invoke_lambda(
        &self,
        name: &str,
        function: &str,
        body: &Value,
    ) -> Result<Value, FunctionError> {
        let Some(client) = &self.lambda else {
            return Err(FunctionError::unhandled(format!(
                "{name} runs in Lambda, and no Lambda client was made"
            )));
        };
        let payload = serde_json::to_vec(body).unwrap_or_default();
        let output = client
            .invoke()
            .function_name(function)
            .payload(aws_sdk_lambda::primitives::Blob::new(payload))
            .send()
            .await
            .map_err(|error| {
                use aws_sdk_lambda::operation::invoke::InvokeError;
                let service = error.as_service_error();
                let message = match service {
                    Some(InvokeError::ResourceNotFoundException(_)) => {
                        format!("{name} does not exist in Lambda")
                    }
                    Some(InvokeError::TooManyRequestsException(_)) => {
                        format!("{name} is throttled by Lambda")
                    }
                    Some(_) => format!("{name} could not be invoked"),
                    None if matches!(error, aws_sdk_lambda::error::SdkError::TimeoutError(_)) => {
                        return self.timed_out(name);
                    }
                    None => format!("{name} could not be reached"),
                };
                tracing::warn!(
                    function = name,
                    error = %aws_sdk_lambda::error::DisplayErrorContext(&error),
                    "{message}"
                );
                FunctionError::unhandled(message)
            })?;
        let bytes = output.payload().map(|p| p.as_ref()).unwrap_or_default();
        if bytes.len() > MAX_ANSWER_BYTES {
            return Err(too_large(name));
        }
        let value: Option<Value> = serde_json::from_slice(bytes).ok();
        if output.function_error().is_some() {
            // The payload is the function's error: `{ errorMessage, errorType, … }`.
            return Err(value
                .as_ref()
                .and_then(error_of)
                .unwrap_or_else(|| FunctionError::unhandled(format!("{name} failed"))));
        }
        if let Some(error) = value.as_ref().and_then(error_of) {
            return Err(error);
        }
        value.ok_or_else(|| not_json(name))
    }

    /// An answer's body, at most [`MAX_ANSWER_BYTES`] of it: read a chunk at a time, so that an
    /// answer that declares no length (chunked) is refused as soon as it passes the limit, not
    /// once it has been read whole.
    async fn body_of(
        &self,
        name: &str,
        mut answer: reqwest::Response,
    ) -> Result<Vec<u8>, FunctionError> {
        if answer
            .content_length()
            .is_some_and(|length| length > MAX_ANSWER_BYTES as u64)
        {
            return Err(too_large(name));
        }
        let mut body = Vec::new();
        while let Some(chunk) = answer.chunk().await.map_err(|e| self.failed(name, &e))? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(too_large(name));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn failed(&self, name: &str, error: &reqwest::Error) -> FunctionError {
        if error.is_timeout() {
            return self.timed_out(name);
        }
        let message = if error.is_connect() {
            format!("{name} could not be reached")
        } else {
            format!("{name} failed to answer")
        };
        tracing::warn!("{message}");
        FunctionError::unhandled(message)
    }

    /// The error of a call that took longer than the timeout; `name` says what was called
    /// (`function getSensor`).
    pub fn timed_out(&self, name: &str) -> FunctionError {
        let message = format!(
            "{name} did not answer within {} s",
            self.timeout.as_secs_f64()
        );
        tracing::warn!("{message}");
        FunctionError::unhandled(message)
    }
}

/// An `@http` call, ready to send.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: reqwest::Method,
    pub url: reqwest::Url,
    pub headers: Vec<(String, String)>,
    /// Query parameters, added to the URL's own.
    pub query: Vec<(String, String)>,
    /// A JSON body, for a method that has one.
    pub body: Option<Value>,
    /// Whether an answer that is not JSON is the field's value as text (a `String` field).
    pub text: bool,
}

impl Invoker {
    /// An `@http` call of the field `name`: a 200 (or, with a body, 201) answer is its value;
    /// another status is the field's error with the status as `errorType` and the answer as
    /// its message, as Amplify's `@http` resolvers report it.
    pub async fn http(&self, field: &str, request: HttpRequest) -> Result<Value, FunctionError> {
        let name = &format!("the @http endpoint of {field}");
        let with_body = request.body.is_some();
        let mut call = self
            .http
            .request(request.method, request.url)
            .query(&request.query);
        for (header, value) in &request.headers {
            call = call.header(header, value);
        }
        if let Some(body) = &request.body {
            call = call.json(body);
        }
        let answer = call.send().await.map_err(|e| self.failed(name, &e))?;
        let status = answer.status().as_u16();
        let xml = answer
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("xml"));
        let body = self.body_of(name, answer).await?;
        if !(status == 200 || (with_body && status == 201)) {
            // The endpoint's own answer is the message, as Amplify reports it; a long one is cut.
            let text = String::from_utf8_lossy(&body);
            let message = match text.trim() {
                "" => format!("{name} answered HTTP {status}"),
                text => text.chars().take(MAX_ERROR_CHARS).collect(),
            };
            return Err(FunctionError {
                error_type: status.to_string(),
                message,
            });
        }
        if xml {
            return Err(FunctionError::unhandled(format!(
                "{name} answered XML; tablegraph reads JSON answers only"
            )));
        }
        match serde_json::from_slice(&body) {
            Ok(value) => Ok(value),
            Err(_) if request.text => match String::from_utf8(body) {
                Ok(text) => Ok(Value::String(text)),
                Err(_) => Err(not_json(name)),
            },
            Err(_) => Err(not_json(name)),
        }
    }
}

/// The most of an endpoint's error answer that becomes the field's error message.
const MAX_ERROR_CHARS: usize = 1_000;

fn too_large(name: &str) -> FunctionError {
    let message = format!(
        "{name} answered more than {} MB",
        MAX_ANSWER_BYTES / (1024 * 1024)
    );
    tracing::warn!("{message}");
    FunctionError::unhandled(message)
}

fn not_json(name: &str) -> FunctionError {
    FunctionError::unhandled(format!("{name} answered something other than JSON"))
}

/// The Lambda client: the SDK's usual chain of credentials and region, or, for a Lambda API
/// on this machine (`--lambda-endpoint` on loopback, a local emulator) without credentials in
/// the environment, fixed local ones, so that no chain looks for a role that is not there.
async fn lambda_client(config: &InvokeConfig) -> aws_sdk_lambda::Client {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(aws_config::retry::RetryConfig::disabled());
    if let Some(endpoint) = &config.lambda_endpoint {
        loader = loader.endpoint_url(endpoint);
        if crate::local_aws::takes_local_credentials(endpoint) {
            loader = loader.credentials_provider(aws_sdk_lambda::config::Credentials::new(
                "tablegraph",
                "local",
                None,
                None,
                "tablegraph-local",
            ));
        }
    }
    let shared = loader.load().await;
    let mut lambda = aws_sdk_lambda::config::Builder::from(&shared);
    if shared.region().is_none() {
        lambda = lambda.region(aws_sdk_lambda::config::Region::new("us-east-1"));
    }
    aws_sdk_lambda::Client::from_conf(lambda.build())
}

/// The error a function answered: an object with a string `errorMessage` and nothing but
/// what an error holds (`errorType`, `errorInfo`, `stackTrace`, `data`), as a Lambda
/// function's error reads; an object of the field's type that has an `errorMessage` field
/// among others is a value.
pub(super) fn error_of(answer: &Value) -> Option<FunctionError> {
    const ERROR_KEYS: [&str; 5] = [
        "errorMessage",
        "errorType",
        "errorInfo",
        "stackTrace",
        "data",
    ];
    let object = answer.as_object()?;
    if !object.keys().all(|key| ERROR_KEYS.contains(&key.as_str())) {
        return None;
    }
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
    fn an_address_is_a_url_or_a_lambda_function() {
        assert!(matches!(
            Target::parse("https://fn.example/run"),
            Some(Target::Http(_))
        ));
        assert_eq!(
            Target::parse("lambda:arn:aws:lambda:eu-west-1:123456789012:function:f:live"),
            Some(Target::Lambda(
                "arn:aws:lambda:eu-west-1:123456789012:function:f:live".to_owned()
            ))
        );
        assert_eq!(Target::parse("lambda: "), None);
        assert_eq!(Target::parse("ftp://x"), None);
        assert_eq!(Target::parse("getSensor"), None);
    }
}
