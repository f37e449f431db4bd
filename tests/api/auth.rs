//! API keys and JWT bearer tokens: 401 without a valid credential, health stays open.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tablegraph::auth::{AuthConfig, JwtConfig, JwtKeys};
use tablegraph::config::HttpConfig;

use crate::helpers::{TestApp, repository_file, spawn_app_with};

const SECRET: &str = "a-test-secret-that-is-long-enough-for-hs256";
const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "tablegraph-tests";

async fn app_with(auth: AuthConfig) -> TestApp {
    spawn_app_with(HttpConfig {
        auth,
        ..HttpConfig::default()
    })
    .await
}

fn api_keys() -> AuthConfig {
    AuthConfig {
        api_keys: vec!["key-one".to_owned(), "key-two".to_owned()],
        ..AuthConfig::default()
    }
}

fn jwt(keys: JwtKeys) -> AuthConfig {
    AuthConfig {
        api_keys: Vec::new(),
        jwt: vec![JwtConfig {
            keys,
            issuer: ISSUER.to_owned(),
            audience: Some(AUDIENCE.to_owned()),
            refetch_interval: tablegraph::auth::DEFAULT_REFETCH_INTERVAL,
        }],
        ..AuthConfig::default()
    }
}

/// POSTs `{ __typename }` with the given headers; answers the status and the body.
async fn call(app: &TestApp, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": "{ __typename }" }));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn assert_unauthorized(answer: &(u16, Value), message: &str) {
    assert_eq!(answer.0, 401, "{}", answer.1);
    assert_eq!(
        answer.1["errors"][0]["extensions"]["errorType"], "UnauthorizedException",
        "{}",
        answer.1
    );
    assert_eq!(answer.1["errors"][0]["message"], message);
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn claims(issuer: &str, audience: &str, expires_in: i64) -> Value {
    json!({
        "sub": "user-42",
        "iss": issuer,
        "aud": audience,
        "exp": now().saturating_add_signed(expires_in),
        "groups": ["farmers"],
    })
}

fn hs256(claims: &Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("a token")
}

#[tokio::test]
async fn an_api_key_is_required_when_keys_are_configured() {
    let app = app_with(api_keys()).await;
    assert_unauthorized(
        &call(&app, &[]).await,
        "this API needs credentials: an x-api-key header or an Authorization: Bearer token",
    );
    assert_unauthorized(
        &call(&app, &[("x-api-key", "key-three")]).await,
        "the API key is not valid",
    );
    for key in ["key-one", "key-two"] {
        let (status, body) = call(&app, &[("x-api-key", key)]).await;
        assert_eq!(status, 200);
        assert_eq!(body["data"]["__typename"], "Query");
    }
    // Queries over GET need the key too, however the parameter's name is encoded.
    for name in ["query", "%71uery", "q%75ery"] {
        let url = format!("{}?{name}=%7B__typename%7D", app.url("/graphql"));
        let response = app.client.get(url).send().await.expect("answers");
        assert_eq!(response.status(), 401, "{name}");
    }
    let response = app
        .client
        .get(app.url("/graphql"))
        .query(&[("query", "{ __typename }")])
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn an_authorization_header_with_nothing_in_it_is_refused_whatever_else_is_sent() {
    let app = app_with(api_keys()).await;
    for empty in ["", "Bearer", "Bearer ", "bearer   ", "Basic"] {
        assert_unauthorized(
            &call(&app, &[("authorization", empty), ("x-api-key", "key-one")]).await,
            "the Authorization header holds no credentials",
        );
    }
    let (status, _) = call(&app, &[("x-api-key", "key-one")]).await;
    assert_eq!(status, 200, "the key alone passes");
}

#[tokio::test]
async fn a_refusal_sent_before_the_body_was_read_closes_the_connection_and_says_so() {
    let app = app_with(api_keys()).await;
    let mut stream = tokio::net::TcpStream::connect(app.address)
        .await
        .expect("connects");
    // A head that announces a body, and only part of it: the server refuses before reading.
    let body = r#"{"query": "{ __typename }"}"#;
    let head = format!(
        "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len() + 1000
    );
    tokio::io::AsyncWriteExt::write_all(&mut stream, format!("{head}{body}").as_bytes())
        .await
        .expect("writes");
    let mut answer = Vec::new();
    let read = tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut answer);
    tokio::time::timeout(std::time::Duration::from_secs(60), read)
        .await
        .expect("the server closes the connection")
        .expect("reads to the close");
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 401"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
}

#[tokio::test]
async fn health_and_the_graphiql_page_stay_open() {
    let app = app_with(api_keys()).await;
    for path in ["/healthz", "/readyz", "/metrics"] {
        let response = app.client.get(app.url(path)).send().await.expect("answers");
        assert_eq!(response.status(), 200, "{path}");
    }
    let page = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("answers");
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap_or_default();
    assert!(
        html.contains(r#"defaultHeaders: '{ "x-api-key": "" }'"#),
        "GraphiQL offers the header to fill in: {html}"
    );
}

#[tokio::test]
async fn a_token_that_expires_further_ahead_than_the_maximum_lifetime_is_refused() {
    let app = app_with(jwt(JwtKeys::Hs256Secret(SECRET.to_owned()))).await;
    let bearer = |expires_in: i64| {
        format!(
            "Bearer {}",
            hs256(&claims(ISSUER, AUDIENCE, expires_in), SECRET)
        )
    };
    let century = 100 * 365 * 24 * 3600;
    assert_unauthorized(
        &call(&app, &[("authorization", &bearer(century))]).await,
        "the bearer token is not valid: it expires later than --jwt-max-lifetime allows",
    );
    assert_unauthorized(
        &call(&app, &[("authorization", &bearer(25 * 3600))]).await,
        "the bearer token is not valid: it expires later than --jwt-max-lifetime allows",
    );
    let (status, body) = call(&app, &[("authorization", &bearer(23 * 3600))]).await;
    assert_eq!(status, 200, "a day is the default: {body}");

    // A deployment whose issuer gives longer tokens says so.
    let longer = app_with(AuthConfig {
        jwt_max_lifetime: Some(std::time::Duration::from_secs(30 * 24 * 3600)),
        ..jwt(JwtKeys::Hs256Secret(SECRET.to_owned()))
    })
    .await;
    let (status, body) = call(&longer, &[("authorization", &bearer(25 * 3600))]).await;
    assert_eq!(status, 200, "{body}");
    assert_unauthorized(
        &call(&longer, &[("authorization", &bearer(century))]).await,
        "the bearer token is not valid: it expires later than --jwt-max-lifetime allows",
    );
}

#[tokio::test]
async fn cognito_id_and_access_tokens_name_the_audience_each_in_its_own_claim() {
    let app = app_with(jwt(JwtKeys::Hs256Secret(SECRET.to_owned()))).await;
    let token = |claims: Value| format!("Bearer {}", hs256(&claims, SECRET));
    let base = |extra: Value| {
        let mut claims = json!({ "sub": "user-42", "iss": ISSUER, "exp": now() + 300 });
        for (name, value) in extra.as_object().expect("an object") {
            claims[name] = value.clone();
        }
        claims
    };
    for accepted in [
        json!({ "token_use": "id", "aud": AUDIENCE }),
        json!({ "token_use": "access", "client_id": AUDIENCE }),
    ] {
        let (status, body) = call(&app, &[("authorization", &token(base(accepted.clone())))]).await;
        assert_eq!(status, 200, "{accepted}: {body}");
    }
    for (refused, message) in [
        (
            json!({ "token_use": "access", "client_id": "another-client" }),
            "it is meant for another audience",
        ),
        (
            // An access token's `aud` is not where its client is named.
            json!({ "token_use": "access", "aud": AUDIENCE, "client_id": "another-client" }),
            "it is meant for another audience",
        ),
        (
            json!({ "token_use": "id", "client_id": AUDIENCE }),
            "it lacks a required claim (exp, iss, aud)",
        ),
        (
            json!({ "token_use": "refresh", "aud": AUDIENCE }),
            "its token_use is neither id nor access",
        ),
    ] {
        assert_unauthorized(
            &call(&app, &[("authorization", &token(base(refused)))]).await,
            &format!("the bearer token is not valid: {message}"),
        );
    }
}

#[tokio::test]
async fn hs256_tokens_are_verified_for_signature_issuer_audience_and_expiry() {
    let app = app_with(jwt(JwtKeys::Hs256Secret(SECRET.to_owned()))).await;
    let bearer = |token: String| format!("Bearer {token}");

    let good = bearer(hs256(&claims(ISSUER, AUDIENCE, 300), SECRET));
    let (status, body) = call(&app, &[("authorization", &good)]).await;
    assert_eq!(status, 200, "{body}");

    let cases = [
        (
            hs256(&claims(ISSUER, AUDIENCE, -300), SECRET),
            "the bearer token is not valid: it has expired",
        ),
        (
            hs256(&claims("https://elsewhere.example", AUDIENCE, 300), SECRET),
            "the bearer token is not valid: it was issued by another issuer",
        ),
        (
            hs256(&claims(ISSUER, "another-api", 300), SECRET),
            "the bearer token is not valid: it is meant for another audience",
        ),
        (
            hs256(
                &claims(ISSUER, AUDIENCE, 300),
                "another-secret-that-is-long-enough-for-hs256",
            ),
            "the bearer token is not valid: its signature does not match",
        ),
        (
            hs256(
                &json!({ "sub": "user-42", "iss": ISSUER, "exp": now() + 300 }),
                SECRET,
            ),
            "the bearer token is not valid: it lacks a required claim (exp, iss, aud)",
        ),
        (
            hs256(
                &json!({ "sub": "user-42", "iss": ISSUER, "aud": AUDIENCE }),
                SECRET,
            ),
            "the bearer token is not valid: it lacks a required claim (exp, iss, aud)",
        ),
        (
            "not.a.token".to_owned(),
            "the bearer token is not valid: it is not a JWT",
        ),
    ];
    for (token, message) in cases {
        let answer = call(&app, &[("authorization", &bearer(token))]).await;
        assert_unauthorized(&answer, message);
    }
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer realm=\"tablegraph\""
    );
}

#[tokio::test]
async fn tokens_signed_by_a_key_of_the_jwks_file_are_accepted() {
    let app = app_with(jwt(JwtKeys::JwksFile(repository_file(
        "tests/fixtures/jwt/jwks.json",
    ))))
    .await;
    let der =
        std::fs::read(repository_file("tests/fixtures/jwt/private-key.der")).expect("the test key");
    let sign = |kid: &str| {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(
            &header,
            &claims(ISSUER, AUDIENCE, 300),
            &EncodingKey::from_rsa_der(&der),
        )
        .expect("a token")
    };
    let (status, body) = call(
        &app,
        &[("authorization", &format!("Bearer {}", sign("test-key-1")))],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_unauthorized(
        &call(
            &app,
            &[("authorization", &format!("Bearer {}", sign("rotated-away")))],
        )
        .await,
        "the bearer token is not valid: it is not signed by a known key",
    );
    // An HS256 token cannot pass as one of the file's RSA keys.
    let forged = hs256(&claims(ISSUER, AUDIENCE, 300), SECRET);
    assert_unauthorized(
        &call(&app, &[("authorization", &format!("Bearer {forged}"))]).await,
        "the bearer token is not valid: it is not signed by a known key",
    );
}

#[tokio::test]
async fn a_token_without_kid_is_tried_against_every_key_of_its_algorithm() {
    // The test key is the second RS256 key of this file.
    let app = app_with(jwt(JwtKeys::JwksFile(repository_file(
        "tests/fixtures/jwt/jwks-two-keys.json",
    ))))
    .await;
    let der =
        std::fs::read(repository_file("tests/fixtures/jwt/private-key.der")).expect("the test key");
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        &claims(ISSUER, AUDIENCE, 300),
        &EncodingKey::from_rsa_der(&der),
    )
    .expect("a token");
    let (status, body) = call(&app, &[("authorization", &format!("Bearer {token}"))]).await;
    assert_eq!(status, 200, "{body}");
    // Signed by none of them: a changed payload matches no key's signature.
    let (head, rest) = token.split_once('.').expect("a JWT");
    let (_, signature) = rest.split_once('.').expect("a JWT");
    let other_claims = serde_json::to_vec(&claims(ISSUER, AUDIENCE, 600)).expect("json");
    let forged = format!(
        "{head}.{}.{signature}",
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            other_claims
        )
    );
    assert_unauthorized(
        &call(&app, &[("authorization", &format!("Bearer {forged}"))]).await,
        "the bearer token is not valid: its signature does not match",
    );
}

#[tokio::test]
async fn a_bad_auth_configuration_stops_start_up() {
    let config = tablegraph::config::ServeConfig {
        dialect: Default::default(),
        progress_every: tablegraph::progress::PACE,
        listen: "127.0.0.1:0".parse().expect("an address"),
        schema_path: repository_file("schema.graphql"),
        resolvers_dir: None,
        cache: tablegraph::store::CacheSettings::off(),
        stream_lease: tablegraph::changes::LEASE_DURATION,
        store: tablegraph::config::StoreConfig {
            target: tablegraph::config::StoreTarget::Embedded(
                tablegraph::store::EmbeddedLocation::Memory,
            ),
            table: "tablegraph".to_owned(),
            tuning: tablegraph::store::StoreTuning::default(),
        },
        scopes: Default::default(),
        functions: Default::default(),
        http: HttpConfig {
            auth: jwt(JwtKeys::JwksFile(repository_file(
                "tests/fixtures/jwt/missing.json",
            ))),
            ..HttpConfig::default()
        },
    };
    let error = tablegraph::app::Application::build(&config)
        .await
        .err()
        .expect("start-up fails");
    assert!(
        error.to_string().starts_with("cannot read the JWKS file"),
        "{error}"
    );
}

#[tokio::test]
async fn a_websocket_is_closed_when_its_token_expires() {
    use crate::subscriptions::{Client, Received};
    let app = app_with(jwt(JwtKeys::Hs256Secret(SECRET.to_owned()))).await;
    let token = hs256(&claims(ISSUER, AUDIENCE, 2), SECRET);
    let mut client =
        Client::connected(&app, json!({ "Authorization": format!("Bearer {token}") })).await;
    // The server's timer, at the token's `exp`, ends it; the client only waits.
    match client.receive().await {
        Received::Closed(code, reason) => {
            assert_eq!(code, 4403, "{reason}");
            assert!(reason.contains("expired"), "{reason}");
        }
        other => panic!("expected 4403, got {other:?}"),
    }
}

#[tokio::test]
async fn an_event_stream_ends_when_its_token_expires() {
    let app = app_with(jwt(JwtKeys::Hs256Secret(SECRET.to_owned()))).await;
    let token = hs256(&claims(ISSUER, AUDIENCE, 2), SECRET);
    let mut response = app
        .client
        .post(app.url("/graphql"))
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "text/event-stream")
        .json(&json!({ "query": "subscription { onCreateFarm { id } }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    // The server's timer, at the token's `exp`, ends it; the client only waits.
    let events = crate::helpers::sse_events(&mut response, 2).await;
    assert_eq!(events[0].0, "next", "{events:?}");
    let said: Value = serde_json::from_str(&events[0].1).expect("JSON");
    assert_eq!(
        said["errors"][0]["extensions"]["errorType"], "UnauthorizedException",
        "{said}"
    );
    assert_eq!(said["errors"][0]["message"], "the token expired");
    assert_eq!(events[1].0, "complete", "{events:?}");
}
