//! IAM callers: requests signed by the real `aws-sigv4` signer with the keys of
//! `tests/fixtures/iam/credentials.toml`, and forged, expired, wrong-key and temporary ones.

use std::time::{Duration, SystemTime};

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};
use tablegraph::auth::AuthConfig;
use tablegraph::config::HttpConfig;
use tablegraph::functions::FunctionsConfig;

use crate::helpers::{TestApp, repository_file, spawn_app_with_functions_and};
use crate::realtime::{Client, Via};

const SCHEMA: &str = "tests/fixtures/iam/schema.graphql";
const KEY: &str = "AKIATABLEGRAPHTEST1";
const SECRET: &str = "k7MDENG/bPxRfiCYtablegraphTESTKEY1";
const API_KEY: &str = "da2-iam-test";
/// The region the test server's IAM signatures must be scoped to (`--iam-region`).
pub(crate) const REGION: &str = "eu-west-1";

/// A server with the test keys (or without, `iam: false`) and an API key; its `signer`
/// function answers the event's identity.userArn.
async fn app(iam: bool) -> TestApp {
    async fn signer(Json(event): Json<Value>) -> Json<Value> {
        Json(json!(format!(
            "{} {} {}",
            event["identity"]["userArn"].as_str().unwrap_or("?"),
            event["identity"]["accountId"].as_str().unwrap_or("?"),
            event["identity"]["username"].as_str().unwrap_or("?"),
        )))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    let router = axum::Router::new().route("/signer", post(signer));
    tokio::spawn(async move { axum::serve(listener, router).await });
    let http = HttpConfig {
        auth: AuthConfig {
            api_keys: vec![API_KEY.to_owned()],
            iam_credentials: iam.then(|| repository_file("tests/fixtures/iam/credentials.toml")),
            iam_region: Some(REGION.to_owned()),
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    };
    let functions = FunctionsConfig {
        endpoints: vec![("signer".to_owned(), format!("http://{address}/signer"))],
        ..FunctionsConfig::default()
    };
    spawn_app_with_functions_and(SCHEMA, http, functions).await
}

/// How a request is signed.
pub(crate) struct Signing<'a> {
    pub key: &'a str,
    pub secret: &'a str,
    pub session_token: Option<&'a str>,
    pub time: SystemTime,
    /// The credential scope's region and service.
    pub region: &'a str,
    pub service: &'a str,
}

impl Default for Signing<'_> {
    fn default() -> Self {
        Signing {
            key: KEY,
            secret: SECRET,
            session_token: None,
            time: SystemTime::now(),
            region: REGION,
            service: "appsync",
        }
    }
}

impl Signing<'_> {
    /// The headers the signer adds (`authorization`, `x-amz-date`, and
    /// `x-amz-security-token` with a session token) to a POST of `body` to `url` with `headers`.
    fn signed(&self, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<(String, String)> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        let identity = aws_credential_types::Credentials::new(
            self.key,
            self.secret,
            self.session_token.map(str::to_owned),
            None,
            "test",
        )
        .into();
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(self.region)
            .name(self.service)
            .time(self.time)
            .settings(SigningSettings::default())
            .build()
            .expect("signing parameters")
            .into();
        let signable = SignableRequest::new(
            "POST",
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .expect("a signable request");
        let (instructions, _) = sign(signable, &params).expect("signed").into_parts();
        instructions
            .headers()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    }
}

/// POSTs `signed_body` signed as `signing` says, but sends `sent_body` (the same, unless a
/// test forges it); the status and the answer.
pub(crate) async fn post_signed(
    app: &TestApp,
    signing: Signing<'_>,
    signed_body: &str,
    sent_body: &str,
) -> (u16, Value) {
    let url = app.url("/graphql");
    let host = app.address.to_string();
    let headers = [
        ("host", host.as_str()),
        ("content-type", "application/json"),
    ];
    let mut request = app.client.post(&url).body(sent_body.to_owned());
    for (name, value) in headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .chain(signing.signed(&url, &headers, signed_body.as_bytes()))
    {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn body(query: &str) -> String {
    json!({ "query": query }).to_string()
}

#[tokio::test]
async fn a_request_signed_with_a_configured_key_is_an_iam_caller() {
    let app = app(true).await;
    let create = body("mutation { createFarm(input: { name: \"Ridge\" }) { name } }");
    let (status, answer) = post_signed(&app, Signing::default(), &create, &create).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["createFarm"]["name"], "Ridge", "{answer}");
    // A function sees AppSync's IAM identity.
    let who = body("{ signer }");
    let (_, answer) = post_signed(&app, Signing::default(), &who, &who).await;
    assert_eq!(
        answer["data"]["signer"], "arn:aws:iam::123456789012:user/farmhand 123456789012 farmhand",
        "{answer}"
    );
    // Memo is @aws_api_key: the IAM caller may not write it.
    let memo = body("mutation { createMemo(input: { text: \"hay\" }) { id } }");
    let (_, answer) = post_signed(&app, Signing::default(), &memo, &memo).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{answer}"
    );
    // And an API key caller may not ask for `signer` (@aws_iam).
    let by_key = app
        .graphql_with(&[("x-api-key", API_KEY)], "{ signer }", json!({}))
        .await
        .1;
    assert_eq!(
        by_key["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{by_key}"
    );
}

#[tokio::test]
async fn forged_expired_unknown_and_temporary_signatures_are_refused_and_change_nothing() {
    let app = app(true).await;
    let create = body("mutation { createFarm(input: { name: \"Forged\" }) { name } }");
    let signed = body("mutation { createFarm(input: { name: \"Signed\" }) { name } }");
    let long_ago = SystemTime::now() - Duration::from_secs(10 * 60);
    let cases: [(Signing<'_>, &str, &str); 9] = [
        (
            Signing::default(),
            signed.as_str(),
            "its signature does not match",
        ),
        (
            Signing {
                time: long_ago,
                ..Signing::default()
            },
            create.as_str(),
            "more than five minutes from now",
        ),
        (
            Signing {
                key: "AKIAUNKNOWNKEY000000",
                ..Signing::default()
            },
            create.as_str(),
            "unknown access key",
        ),
        (
            Signing {
                secret: "another-secret-of-some-length",
                ..Signing::default()
            },
            create.as_str(),
            "its signature does not match",
        ),
        (
            Signing {
                session_token: Some("FwoGZXIvYXdzEXAMPLE"),
                ..Signing::default()
            },
            create.as_str(),
            "temporary credentials",
        ),
        // Signed with the right key, for another region or another AWS service.
        (
            Signing {
                region: "us-east-1",
                ..Signing::default()
            },
            create.as_str(),
            "another region",
        ),
        (
            Signing {
                service: "dynamodb",
                ..Signing::default()
            },
            create.as_str(),
            "another service",
        ),
        (
            Signing {
                service: "s3",
                ..Signing::default()
            },
            create.as_str(),
            "another service",
        ),
        (
            Signing {
                service: "execute-api",
                ..Signing::default()
            },
            create.as_str(),
            "another service",
        ),
    ];
    for (signing, signed_body, says) in cases {
        let (status, answer) = post_signed(&app, signing, signed_body, &create).await;
        assert_eq!(status, 401, "{says}: {answer}");
        assert_eq!(
            answer["errors"][0]["extensions"]["errorType"],
            "UnauthorizedException"
        );
        let message = answer["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{says}: {message}");
        assert!(!message.contains(SECRET), "{message}");
    }
    let listed = app
        .graphql_with(
            &[("x-api-key", API_KEY)],
            "{ listFarms { items { name } } }",
            json!({}),
        )
        .await
        .1;
    assert_eq!(listed["data"]["listFarms"]["items"], json!([]), "{listed}");
}

#[tokio::test]
async fn without_iam_credentials_signatures_are_refused_and_iam_rules_still_load() {
    let app = app(false).await;
    let who = body("{ signer }");
    let (status, answer) = post_signed(&app, Signing::default(), &who, &who).await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(
        answer["errors"][0]["message"],
        "this API does not accept IAM signatures"
    );
}

#[tokio::test]
async fn iam_credentials_alone_close_the_api_to_unsigned_and_hostless_requests() {
    let http = HttpConfig {
        auth: AuthConfig {
            iam_credentials: Some(repository_file("tests/fixtures/iam/credentials.toml")),
            iam_region: Some(REGION.to_owned()),
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    };
    let app = spawn_app_with_functions_and(
        SCHEMA,
        http,
        FunctionsConfig {
            endpoints: vec![("signer".to_owned(), "http://127.0.0.1:9/signer".to_owned())],
            ..FunctionsConfig::default()
        },
    )
    .await;
    let (status, answer) = app.graphql_with(&[], "{ __typename }", json!({})).await;
    assert_eq!(status, 401, "{answer}");
    // A signature that leaves the host out is refused, whatever else it signs.
    let now = time_now_amz();
    let forged = format!(
        "AWS4-HMAC-SHA256 Credential={KEY}/{}/eu-west-1/appsync/aws4_request, \
         SignedHeaders=x-amz-date, Signature=00",
        &now[..8]
    );
    let (status, answer) = app
        .graphql_with(
            &[("authorization", &forged), ("x-amz-date", &now)],
            "{ __typename }",
            json!({}),
        )
        .await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(
        answer["errors"][0]["message"],
        "the request's IAM signature is not valid: it does not sign its host header"
    );
}

/// The credentials an AppSync client sends on the real-time socket for IAM (aws-amplify's
/// `awsRealTimeIAMHeader`): the headers of a POST of `body` to `path`, signed as `signing` says.
fn realtime_credentials(app: &TestApp, signing: Signing<'_>, path: &str, body: &str) -> Value {
    let host = app.address.to_string();
    let headers = [
        ("accept", "application/json, text/javascript"),
        ("content-encoding", "amz-1.0"),
        ("content-type", "application/json; charset=UTF-8"),
        ("host", host.as_str()),
    ];
    let url = format!("https://{host}{path}");
    let mut credentials: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(name, value)| ((*name).to_owned(), json!(value)))
        .collect();
    for (name, value) in signing.signed(&url, &headers, body.as_bytes()) {
        // Amplify names it `Authorization`: names are read in any case.
        let name = match name.as_str() {
            "authorization" => "Authorization".to_owned(),
            _ => name,
        };
        credentials.insert(name, json!(value));
    }
    Value::Object(credentials)
}

#[tokio::test]
async fn realtime_connections_and_subscriptions_signed_as_aws_clients_sign_them_are_iam_callers() {
    let app = app(true).await;
    let connect = realtime_credentials(&app, Signing::default(), "/graphql/connect", "{}");
    let mut client = Client::connected(&app, &connect, Via::Subprotocol).await;
    let query = "subscription { onCreateFarm { name } }";
    let data = json!({ "query": query, "variables": {} }).to_string();
    let own = realtime_credentials(&app, Signing::default(), "/graphql", &data);
    client.started("1", query, json!({}), &own).await;
    // A start whose credentials sign another request is refused, and the first runs on.
    let other = realtime_credentials(&app, Signing::default(), "/graphql", "{}");
    client.start("2", query, json!({}), &other).await;
    let refused = client.json().await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(
        refused["payload"]["errors"][0]["errorType"], "UnauthorizedException",
        "{refused}"
    );
    let create = body("mutation { createFarm(input: { name: \"Signed\" }) { name } }");
    let (status, answer) = post_signed(&app, Signing::default(), &create, &create).await;
    assert_eq!(status, 200, "{answer}");
    let event = client.json().await;
    assert_eq!(event["id"], "1", "{event}");
    assert_eq!(
        event["payload"]["data"]["onCreateFarm"]["name"], "Signed",
        "{event}"
    );
    // Handshakes signed for another request, or with temporary credentials, are refused.
    let temporary = Signing {
        session_token: Some("FwoGZXIvYXdzEXAMPLE"),
        ..Signing::default()
    };
    for (signing, path, says) in [
        (
            Signing::default(),
            "/graphql",
            "its signature does not match",
        ),
        (temporary, "/graphql/connect", "temporary credentials"),
    ] {
        let header = realtime_credentials(&app, signing, path, "{}").to_string();
        let mut client =
            Client::open(&app, "/graphql/realtime", Some(&header), Via::Subprotocol).await;
        client.send(json!({ "type": "connection_init" })).await;
        let error = client.json().await;
        assert_eq!(error["type"], "connection_error", "{error}");
        let message = error["payload"]["errors"][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.contains(says), "{says}: {error}");
        assert_eq!(client.closed().await, 4401, "{says}");
    }
}

/// Now as `x-amz-date` writes it.
fn time_now_amz() -> String {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::OffsetDateTime::now_utc()
        .format(format)
        .expect("a date")
}
