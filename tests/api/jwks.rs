//! Identity providers as they are deployed: keys at a JWKS URL or found by OIDC discovery,
//! several issuers at once, keys rotated at the issuer, all against an issuer served on
//! loopback by the test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tablegraph::auth::{AuthConfig, DEFAULT_REFETCH_INTERVAL, JwtConfig, JwtKeys};
use tablegraph::config::{HttpConfig, ServeConfig, StoreConfig, StoreTarget};
use tablegraph::store::{EmbeddedLocation, StoreTuning};

use crate::helpers::{TestApp, repository_file, spawn_app_with};

/// An identity provider on loopback: its OIDC configuration and its JWKS, which the test may
/// change, and how often the JWKS was fetched.
struct Issuer {
    url: String,
    jwks: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct Served {
    url: String,
    jwks: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

async fn configuration(State(served): State<Served>) -> impl IntoResponse {
    axum::Json(json!({ "issuer": served.url, "jwks_uri": format!("{}/keys", served.url) }))
}

async fn keys(State(served): State<Served>) -> impl IntoResponse {
    served.fetches.fetch_add(1, Ordering::SeqCst);
    let body = served.jwks.lock().expect("the lock").clone();
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(repository_file(&format!("tests/fixtures/jwt/{name}")))
        .expect("a fixture")
}

/// The JWKS of `fixture` without the key `kid`.
fn without(fixture_name: &str, kid: &str) -> String {
    let mut set: Value = serde_json::from_str(&fixture(fixture_name)).expect("JSON");
    set["keys"]
        .as_array_mut()
        .expect("keys")
        .retain(|key| key["kid"] != kid);
    set.to_string()
}

async fn issuer(jwks: String) -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    let served = Served {
        url: url.clone(),
        jwks: Arc::new(Mutex::new(jwks)),
        fetches: Arc::new(AtomicUsize::new(0)),
    };
    let router = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            axum::routing::get(configuration),
        )
        .route("/keys", axum::routing::get(keys))
        .with_state(served.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    Issuer {
        url,
        jwks: served.jwks,
        fetches: served.fetches,
    }
}

fn config(issuer: &str, keys: JwtKeys, refetch_interval: Duration) -> JwtConfig {
    JwtConfig {
        keys,
        issuer: issuer.to_owned(),
        audience: None,
        refetch_interval,
    }
}

async fn app_trusting(jwt: Vec<JwtConfig>) -> TestApp {
    spawn_app_with(HttpConfig {
        auth: AuthConfig {
            jwt,
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    })
    .await
}

/// A token of `issuer`, signed with the test key under `kid`.
fn token(issuer: &str, kid: &str) -> String {
    let der =
        std::fs::read(repository_file("tests/fixtures/jwt/private-key.der")).expect("the test key");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(
        &header,
        &json!({ "sub": "ann", "iss": issuer, "exp": now + 300 }),
        &EncodingKey::from_rsa_der(&der),
    )
    .expect("a token")
}

/// The status of `{ __typename }` with `token`.
async fn status_with(app: &TestApp, token: &str) -> u16 {
    app.client
        .post(format!("http://{}/graphql", app.address))
        .header("authorization", format!("Bearer {token}"))
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("the server answers")
        .status()
        .as_u16()
}

#[tokio::test]
async fn keys_found_by_oidc_discovery_verify_tokens_of_each_of_several_issuers() {
    let one = issuer(fixture("jwks.json")).await;
    let two = issuer(fixture("jwks-two-keys.json")).await;
    let app = app_trusting(vec![
        config(&one.url, JwtKeys::Discovered, DEFAULT_REFETCH_INTERVAL),
        config(
            &two.url,
            JwtKeys::JwksUrl(format!("{}/keys", two.url)),
            DEFAULT_REFETCH_INTERVAL,
        ),
    ])
    .await;
    assert_eq!(status_with(&app, &token(&one.url, "test-key-1")).await, 200);
    assert_eq!(status_with(&app, &token(&two.url, "test-key-1")).await, 200);
    // An issuer nobody configured is refused, though its token is signed by a known key.
    assert_eq!(
        status_with(&app, &token("http://127.0.0.1:9", "test-key-1")).await,
        401
    );
    // Each set was fetched once, at start-up, and is kept (max-age=3600) for every request.
    for _ in 0..5 {
        assert_eq!(status_with(&app, &token(&one.url, "test-key-1")).await, 200);
    }
    assert_eq!(one.fetches.load(Ordering::SeqCst), 1);
    assert_eq!(two.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn encryption_keys_and_keys_of_other_algorithms_are_skipped_not_fatal() {
    let mut set: Value = serde_json::from_str(&fixture("jwks.json")).expect("JSON");
    let signing = set["keys"][0].clone();
    let keys = set["keys"].as_array_mut().expect("keys");
    // The same public key, published for encryption: it must not verify a signature.
    let mut encryption = signing.clone();
    encryption["kid"] = json!("enc-1");
    encryption["use"] = json!("enc");
    keys.push(encryption);
    // A key management algorithm, and a curve jsonwebtoken does not verify with.
    let mut oaep = signing.clone();
    oaep["kid"] = json!("oaep-1");
    oaep["alg"] = json!("RSA-OAEP-256");
    keys.push(oaep);
    keys.push(json!({ "kty": "OKP", "crv": "X448", "kid": "x448-1", "x": "AAAA" }));
    let issuer = issuer(set.to_string()).await;
    let app = app_trusting(vec![config(
        &issuer.url,
        JwtKeys::Discovered,
        DEFAULT_REFETCH_INTERVAL,
    )])
    .await;
    let kid = signing["kid"].as_str().expect("a kid");
    assert_eq!(status_with(&app, &token(&issuer.url, kid)).await, 200);
    assert_eq!(status_with(&app, &token(&issuer.url, "enc-1")).await, 401);
    assert_eq!(status_with(&app, &token(&issuer.url, "oaep-1")).await, 401);
}

#[tokio::test]
async fn a_symmetric_key_in_a_jwks_verifies_nothing() {
    use base64::Engine as _;
    let mut set: Value = serde_json::from_str(&fixture("jwks.json")).expect("JSON");
    let signing = set["keys"][0].clone();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("secret");
    let keys = set["keys"].as_array_mut().expect("keys");
    // A JWKS is public: whoever reads this one could sign with its key.
    keys.push(json!({ "kty": "oct", "kid": "hs-1", "alg": "HS256", "k": secret }));
    keys.push(json!({ "kty": "oct", "kid": "hs-2", "k": secret }));
    let issuer = issuer(set.to_string()).await;
    let app = app_trusting(vec![config(
        &issuer.url,
        JwtKeys::Discovered,
        DEFAULT_REFETCH_INTERVAL,
    )])
    .await;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    for kid in ["hs-1", "hs-2"] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(kid.to_owned());
        let forged = jsonwebtoken::encode(
            &header,
            &json!({ "sub": "mallory", "iss": issuer.url, "exp": now + 300 }),
            &EncodingKey::from_secret(b"secret"),
        )
        .expect("a token");
        assert_eq!(status_with(&app, &forged).await, 401, "{kid}");
    }
    let kid = signing["kid"].as_str().expect("a kid");
    assert_eq!(status_with(&app, &token(&issuer.url, kid)).await, 200);
}

#[tokio::test]
async fn a_key_rotated_in_at_the_issuer_is_fetched_when_a_token_names_it() {
    // The issuer serves only another key at first.
    let issuer = issuer(without("jwks-two-keys.json", "test-key-1")).await;
    let app = app_trusting(vec![config(
        &issuer.url,
        JwtKeys::Discovered,
        Duration::ZERO,
    )])
    .await;
    assert_eq!(
        status_with(&app, &token(&issuer.url, "test-key-1")).await,
        401
    );
    // The issuer rotates the key in: the next token naming it makes the server fetch again.
    *issuer.jwks.lock().expect("the lock") = fixture("jwks-two-keys.json");
    let before = issuer.fetches.load(Ordering::SeqCst);
    assert_eq!(
        status_with(&app, &token(&issuer.url, "test-key-1")).await,
        200
    );
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), before + 1);
    // A known key makes no fetch.
    assert_eq!(
        status_with(&app, &token(&issuer.url, "test-key-1")).await,
        200
    );
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), before + 1);
}

#[tokio::test]
async fn a_flood_of_unknown_keys_fetches_at_most_once_a_minute() {
    let issuer = issuer(fixture("jwks.json")).await;
    let app = app_trusting(vec![config(
        &issuer.url,
        JwtKeys::Discovered,
        DEFAULT_REFETCH_INTERVAL,
    )])
    .await;
    let forged: Vec<_> = (0..20)
        .map(|n| token(&issuer.url, &format!("forged-{n}")))
        .collect();
    for token in &forged {
        assert_eq!(status_with(&app, token).await, 401);
    }
    // Fetched at start-up, less than a minute ago: no forged kid fetched again.
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_issuer_that_cannot_be_reached_stops_start_up_with_why() {
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}", closed.local_addr().expect("an address"));
    drop(closed);
    let config = ServeConfig {
        dialect: Default::default(),
        progress_every: tablegraph::progress::PACE,
        listen: "127.0.0.1:0".parse().expect("an address"),
        schema_path: repository_file("schema.graphql"),
        resolvers_dir: None,
        cache: tablegraph::store::CacheSettings::off(),
        stream_lease: tablegraph::changes::LEASE_DURATION,
        store: StoreConfig {
            target: StoreTarget::Embedded(EmbeddedLocation::Memory),
            table: "tablegraph".to_owned(),
            tuning: StoreTuning::default(),
        },
        scopes: Default::default(),
        functions: Default::default(),
        http: HttpConfig {
            auth: AuthConfig {
                jwt: vec![config(&url, JwtKeys::Discovered, DEFAULT_REFETCH_INTERVAL)],
                ..AuthConfig::default()
            },
            ..HttpConfig::default()
        },
    };
    let error = match tablegraph::app::Application::build(&config).await {
        Ok(_) => panic!("start-up should fail"),
        Err(error) => error.to_string(),
    };
    assert!(
        error.contains(&format!("{url}/.well-known/openid-configuration")),
        "{error}"
    );
}
