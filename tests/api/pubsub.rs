//! AppSync's pub/sub through local resolvers, as the geotrack app (a plain AppSync schema, as
//! committed upstream) uses it: devices publish their positions with a mutation signed with IAM
//! keys, and people's apps subscribe with user-pool tokens to a subscription returning a type
//! without `@model`, filtered by its arguments. A real HTTP server in this test binary plays
//! the function the mutation is bound to in `resolvers/`.

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};
use tablegraph::auth::AuthConfig;
use tablegraph::config::HttpConfig;
use tablegraph::functions::FunctionsConfig;

use crate::helpers::{
    RULES_ISSUER, RULES_SECRET, TestApp, repository_file, scratch, spawn_app_with_functions_and,
    spawn_replica_with, user_token,
};
use crate::iam::{REGION, Signing, post_signed};
use crate::subscriptions::Client;

const API_KEY: &str = "da2-pubsub-test";

/// A device's position as the function answers it: the arguments, with a trip id past an
/// event's limit (240 KB) for the device `huge`, and past a published answer's (300 KB) for
/// `huger`.
async fn position(Json(event): Json<Value>) -> Json<Value> {
    let mut position = event["arguments"].clone();
    let kilobytes = match position["deviceId"].as_str() {
        Some("huge") => 250,
        Some("huger") => 320,
        _ => 0,
    };
    if kilobytes > 0 {
        position["tripId"] = json!("x".repeat(kilobytes * 1024));
    }
    Json(position)
}

/// How the geotrack API is served: its schema in a scratch directory with
/// `publishDevicePosition` bound in `resolvers/` to the `position` function (served here), and
/// IAM keys, user-pool tokens and an API key let in.
struct Geotrack {
    schema: String,
    http: HttpConfig,
    functions: FunctionsConfig,
}

/// The geotrack API on the embedded store.
async fn geotrack() -> TestApp {
    let Geotrack {
        schema,
        http,
        functions,
    } = geotrack_settings().await;
    spawn_app_with_functions_and(&schema, http, functions).await
}

async fn geotrack_settings() -> Geotrack {
    let dir = scratch("pubsub");
    std::fs::create_dir_all(dir.join("resolvers")).expect("a directory");
    let schema = dir.join("schema.graphql");
    std::fs::copy(
        repository_file("tests/fixtures/amplify/geotrack-plain-appsync/schema.graphql"),
        &schema,
    )
    .expect("the geotrack schema");
    std::fs::write(
        dir.join("resolvers/Mutation.publishDevicePosition.toml"),
        "function = \"position\"\n",
    )
    .expect("a resolver");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    let router = axum::Router::new().route("/position", post(position));
    tokio::spawn(async move { axum::serve(listener, router).await });
    let http = HttpConfig {
        auth: AuthConfig {
            api_keys: vec![API_KEY.to_owned()],
            iam_credentials: Some(repository_file("tests/fixtures/iam/credentials.toml")),
            iam_region: Some(REGION.to_owned()),
            jwt: vec![tablegraph::auth::JwtConfig {
                keys: tablegraph::auth::JwtKeys::Hs256Secret(RULES_SECRET.to_owned()),
                issuer: RULES_ISSUER.to_owned(),
                audience: None,
                refetch_interval: tablegraph::auth::DEFAULT_REFETCH_INTERVAL,
            }],
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    };
    let functions = FunctionsConfig {
        endpoints: vec![("position".to_owned(), format!("http://{address}/position"))],
        ..FunctionsConfig::default()
    };
    Geotrack {
        schema: schema.to_string_lossy().into_owned(),
        http,
        functions,
    }
}

/// A device publishing its position, signed with IAM keys as the geotrack devices sign.
async fn publish(app: &TestApp, device: &str) -> Value {
    let body = json!({
        "query": "mutation ($d: ID!) { publishDevicePosition(deviceId: $d,
            position: { lat: 52.5, lng: 13.4 }, timestamp: \"2026-11-30T10:00:00.000Z\",
            tripId: \"trip-1\") { deviceId } }",
        "variables": { "d": device },
    })
    .to_string();
    post_signed(app, Signing::default(), &body, &body).await.1
}

const POSITIONS: &str = "subscription ($d: ID) { onDevicePositionUpdate(deviceId: $d) {
    deviceId position { lat lng } timestamp tripId } }";

fn position_of(device: &str) -> Value {
    json!({ "onDevicePositionUpdate": {
        "deviceId": device,
        "position": { "lat": 52.5, "lng": 13.4 },
        "timestamp": "2026-11-30T10:00:00.000Z",
        "tripId": "trip-1",
    } })
}

async fn subscribed(app: &TestApp, device: Option<&str>) -> Client {
    let token = format!("Bearer {}", user_token("dispatcher", &[]));
    let mut client = Client::connected(app, json!({ "authorization": token })).await;
    client
        .subscribe("1", POSITIONS, json!({ "d": device }))
        .await;
    client
}

/// Each answer of the mutation reaches the subscriptions whose arguments it equals. An answer
/// past an event's limit reaches its subscribers as `EventTooLarge`, as every event does; one
/// past a published answer's limit is the mutation's error and reaches nobody.
#[tokio::test]
async fn a_declared_subscription_follows_the_answers_of_the_schemas_own_mutation() {
    let app = geotrack().await;
    let mut van = subscribed(&app, Some("van-1")).await;
    let mut every = subscribed(&app, None).await;
    app.events.until_subscribers(2).await;
    let huger = publish(&app, "huger").await;
    assert_eq!(
        huger["errors"][0]["extensions"]["errorType"], "LimitExceeded",
        "{huger}"
    );
    assert!(
        huger["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("300 KB")),
        "{huger}"
    );
    for device in ["huge", "van-2", "van-1"] {
        let published = publish(&app, device).await;
        assert_eq!(
            published["data"]["publishDevicePosition"]["deviceId"], device,
            "{published}"
        );
    }
    assert_eq!(
        van.next_of("1").await["data"],
        position_of("van-1"),
        "the other devices' positions are not delivered to van-1's subscription"
    );
    let huge = every.next_of("1").await;
    assert_eq!(
        huge["errors"][0]["extensions"]["errorType"], "EventTooLarge",
        "{huge}"
    );
    assert_eq!(every.next_of("1").await["data"], position_of("van-2"));
    assert_eq!(every.next_of("1").await["data"], position_of("van-1"));
}

/// The subscription's `@aws_iam @aws_cognito_user_pools` name who may subscribe: an API key
/// caller is refused as AppSync refuses one, and the mutation's `@aws_iam` refuses a token.
#[tokio::test]
async fn the_subscriptions_and_the_mutations_own_directives_name_who_may_use_them() {
    let app = geotrack().await;
    let mut by_key = Client::connected(&app, json!({ "x-api-key": API_KEY })).await;
    by_key.subscribe("1", POSITIONS, json!({})).await;
    let refused = by_key.next_of("1").await;
    assert_eq!(
        refused["errors"][0]["message"],
        "Not Authorized to access onDevicePositionUpdate on type Subscription",
        "{refused}"
    );
    let token = format!("Bearer {}", user_token("dispatcher", &[]));
    let (_, by_token) = app
        .graphql_with(
            &[("authorization", token.as_str())],
            "mutation { publishDevicePosition(deviceId: \"van-1\",
                position: { lat: 1, lng: 2 }, timestamp: \"2026-11-30T10:00:00.000Z\") { deviceId } }",
            json!({}),
        )
        .await;
    assert_eq!(
        by_token["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{by_token}"
    );
}

/// On replicas of one table, an answer published through one replica reaches the subscribers
/// of the others: it travels through the table's change stream, as every node's write does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_published_through_one_replica_reaches_the_subscribers_of_another() {
    let endpoint = crate::network::start_dynoxide().await;
    let settings = geotrack_settings().await;
    let no_migrations = scratch("pubsub-migrations");
    let (ok, _, stderr) = crate::network::run(&[
        "migrate",
        "--dynamodb-endpoint",
        &endpoint,
        "--schema",
        &settings.schema,
        "--migrations",
        &no_migrations.to_string_lossy(),
    ])
    .await;
    assert!(ok, "migrate succeeds: {stderr}");
    let mut replicas = Vec::new();
    for _ in 0..2 {
        replicas.push(
            spawn_replica_with(
                &endpoint,
                &settings.schema,
                settings.http.clone(),
                settings.functions.clone(),
            )
            .await,
        );
    }
    let (one, two) = (&replicas[0], &replicas[1]);
    let mut listening = subscribed(two, Some("van-1")).await;
    two.events.until_subscribers(1).await;
    for device in ["van-2", "van-1"] {
        let published = publish(one, device).await;
        assert!(published["errors"].is_null(), "{published}");
    }
    assert_eq!(listening.next_of("1").await["data"], position_of("van-1"));
    // The published item is the stream's own, no inconsistency to `check`.
    let (_, report, _) = crate::network::run(&[
        "check",
        "--dynamodb-endpoint",
        &endpoint,
        "--schema",
        &settings.schema,
    ])
    .await;
    assert!(report.contains("stream leases and relay items"), "{report}");
    assert!(!report.contains("UnknownItem"), "{report}");
}

/// `plan` shows the write that carries each answer to the subscribers.
#[tokio::test]
async fn plan_shows_the_write_each_published_answer_makes() {
    let settings = geotrack_settings().await;
    let (ok, stdout, stderr) = crate::network::run(&["plan", "--schema", &settings.schema]).await;
    assert!(ok, "{stderr}");
    let publish = stdout
        .split("Mutation.publishDevicePosition(deviceId, position, timestamp, tripId)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    let calls: Vec<&str> = publish
        .lines()
        .take_while(|line| line.starts_with("  "))
        .collect();
    assert_eq!(calls.len(), 2, "{stdout}");
    assert!(calls[0].contains("position"), "{stdout}");
    assert!(
        calls[1].contains("TransactWriteItems")
            && calls[1].contains("STREAM#PUBLISH#publishDevicePosition"),
        "{stdout}"
    );
}
