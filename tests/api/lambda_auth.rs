//! AppSync's Lambda authorizer: a real HTTP server in this test binary plays the authorizer
//! (and a function that reads its `resolverContext`), records each event it is sent, and
//! answers by the token it is given.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::routing::post;
use serde_json::{Value, json};
use tablegraph::auth::{AuthConfig, LambdaAuthorizerConfig};
use tablegraph::config::HttpConfig;
use tablegraph::functions::FunctionsConfig;

use crate::helpers::{TestApp, spawn_app_with_functions_and, user_token};
use crate::subscriptions::{Client, Received};

const SCHEMA: &str = "tests/fixtures/lambda-auth/schema.graphql";
const API_KEY: &str = "da2-farmhands";

/// The events the authorizer was sent, in order.
type Asked = Arc<Mutex<Vec<Value>>>;

/// The authorizer's answer to `token`.
fn decision(token: &str) -> Option<Value> {
    Some(match token {
        "north" => json!({
            "isAuthorized": true,
            "resolverContext": { "tenant": "north" },
            "ttlOverride": 60,
        }),
        "south-once" => json!({
            "isAuthorized": true,
            "resolverContext": { "tenant": "south" },
            "ttlOverride": 0,
        }),
        "no-notes" => json!({
            "isAuthorized": true,
            "resolverContext": { "tenant": "west" },
            "deniedFields": [
                "Farm.notes",
                "arn:aws:appsync:us-east-1:111122223333:apis/tg/types/Query/fields/tenant",
            ],
        }),
        "denied" => json!({ "isAuthorized": false }),
        // Not a decision: the request is refused, never admitted.
        "garbled" => json!({ "authorized": "yes" }),
        _ => return None,
    })
}

/// Starts the authorizer at `/authorize` (HTTP), at `/2015-03-31/functions/auth/invocations`
/// (Lambda's Invoke API), and the `tenant` function at `/tenant`.
async fn authorizer() -> (String, Asked) {
    async fn authorize(
        State(asked): State<Asked>,
        body: axum::body::Bytes,
    ) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        let event: Value = serde_json::from_slice(&body).unwrap_or_default();
        asked.lock().expect("the events").push(event.clone());
        let token = event["authorizationToken"].as_str().unwrap_or_default();
        match decision(token) {
            Some(answer) => Json(answer).into_response(),
            None => axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }
    async fn tenant(Json(event): Json<Value>) -> Json<Value> {
        Json(event["identity"]["resolverContext"]["tenant"].clone())
    }
    async fn protocol(Json(event): Json<Value>) -> Json<Value> {
        Json(event["request"]["headers"]["sec-websocket-protocol"].clone())
    }
    let asked: Asked = Arc::default();
    let app = axum::Router::new()
        .route("/authorize", post(authorize))
        .route(
            "/2015-03-31/functions/{name}/invocations",
            post(
                |state: State<Asked>, Path(_name): Path<String>, body: axum::body::Bytes| {
                    authorize(state, body)
                },
            ),
        )
        .route("/tenant", post(tenant))
        .route("/protocol", post(protocol))
        .with_state(asked.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), asked)
}

/// A server whose callers pass an API key, a token of the test issuer, or the authorizer at
/// `address` (an `http://` URL or `lambda:…`).
async fn app_with_authorizer(base: &str, address: String) -> TestApp {
    let mut http = crate::helpers::api_key_and_tokens(API_KEY);
    http.auth.lambda_authorizer = Some(LambdaAuthorizerConfig {
        address,
        ttl: tablegraph::auth::DEFAULT_TTL,
        timeout: Duration::from_secs(2),
        lambda_endpoint: Some(base.to_owned()),
    });
    let functions = FunctionsConfig {
        endpoints: vec![
            ("tenant".to_owned(), format!("{base}/tenant")),
            ("protocol".to_owned(), format!("{base}/protocol")),
        ],
        ..FunctionsConfig::default()
    };
    spawn_app_with_functions_and(SCHEMA, http, functions).await
}

/// POSTs `query` with `variables` and `Authorization: authorization`; the status and body.
async fn call(app: &TestApp, authorization: &str, query: &str, variables: Value) -> (u16, Value) {
    app.graphql_with(&[("authorization", authorization)], query, variables)
        .await
}

fn tokens_asked(asked: &Asked) -> Vec<String> {
    asked
        .lock()
        .expect("the events")
        .iter()
        .map(|event| {
            event["authorizationToken"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_authorizer_decides_on_a_token_with_appsyncs_event_and_its_decision_is_kept() {
    let (base, asked) = authorizer().await;
    let app = app_with_authorizer(&base, format!("{base}/authorize")).await;
    let query = "query Tenant($id: ID!) { getFarm(id: $id) { name } tenant }";
    let body: Value = app
        .client
        .post(app.url("/graphql"))
        .header("authorization", "north")
        .json(&json!({ "query": query, "variables": { "id": "f-1" }, "operationName": "Tenant" }))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("JSON");
    // The function is given the authorizer's resolverContext as identity.resolverContext.
    assert_eq!(body["data"]["tenant"], "north", "{body}");
    let event = asked.lock().expect("the events")[0].clone();
    assert_eq!(event["authorizationToken"], "north");
    let context = &event["requestContext"];
    assert_eq!(context["queryString"], query, "{event}");
    assert_eq!(context["variables"], json!({ "id": "f-1" }));
    assert_eq!(context["operationName"], "Tenant", "{event}");
    assert!(
        context["requestId"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{event}"
    );
    assert!(
        context["apiId"].is_string() && context["accountId"].is_string(),
        "{event}"
    );
    assert_eq!(event["requestHeaders"]["authorization"], "north");
    assert_eq!(event["requestHeaders"]["content-type"], "application/json");

    // Kept for its ttlOverride: asked once for both requests.
    let (status, body) = call(&app, "north", "{ tenant }", json!({})).await;
    assert_eq!(
        (status, &body["data"]["tenant"]),
        (200, &json!("north")),
        "{body}"
    );
    assert_eq!(tokens_asked(&asked), ["north"]);
    // ttlOverride 0: asked every time.
    for _ in 0..2 {
        let (_, body) = call(&app, "south-once", "{ tenant }", json!({})).await;
        assert_eq!(body["data"]["tenant"], "south", "{body}");
    }
    assert_eq!(tokens_asked(&asked), ["north", "south-once", "south-once"]);
}

#[tokio::test]
async fn a_refusal_or_an_authorizer_that_cannot_decide_is_a_401_and_never_admits() {
    let (base, asked) = authorizer().await;
    let app = app_with_authorizer(&base, format!("{base}/authorize")).await;
    let (status, body) = call(&app, "denied", "{ tenant }", json!({})).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"],
        "UnauthorizedException"
    );
    assert_eq!(
        body["errors"][0]["message"],
        "the Lambda authorizer did not authorize this request"
    );
    // An authorizer that fails (500) or answers no decision refuses; such failures are not
    // kept, so each request asks again, and each counts.
    for token in ["unknown", "unknown", "garbled"] {
        let (status, body) = call(&app, token, "{ tenant }", json!({})).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(
            body["errors"][0]["message"],
            "the Lambda authorizer could not decide on this request; try again later"
        );
        assert!(!body.to_string().contains("127.0.0.1"), "{body}");
    }
    assert_eq!(
        tokens_asked(&asked),
        ["denied", "unknown", "unknown", "garbled"]
    );
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains("tablegraph_lambda_authorizer_failures_total 3"),
        "{metrics}"
    );
    // Nothing was written or run for any of them.
    let (_, body) = call(&app, "north", "{ listFarms { items { id } } }", json!({})).await;
    assert_eq!(body["data"]["listFarms"]["items"], json!([]), "{body}");
}

#[tokio::test]
async fn denied_fields_are_null_with_unauthorized_and_the_rest_of_the_answer_stands() {
    let (base, _asked) = authorizer().await;
    let app = app_with_authorizer(&base, format!("{base}/authorize")).await;
    let (_, created) = call(
        &app,
        "no-notes",
        "mutation { createFarm(input: { name: \"Ridge\", notes: \"gate code 1234\" }) { id name } }",
        json!({}),
    )
    .await;
    let id = created["data"]["createFarm"]["id"]
        .as_str()
        .expect("created")
        .to_owned();
    let (status, body) = call(
        &app,
        "no-notes",
        "query($id: ID!) { getFarm(id: $id) { name notes } tenant }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["getFarm"],
        json!({ "name": "Ridge", "notes": null }),
        "{body}"
    );
    assert_eq!(body["data"]["tenant"], Value::Null, "{body}");
    let mut denied: HashMap<String, String> = HashMap::new();
    for error in body["errors"].as_array().cloned().unwrap_or_default() {
        assert_eq!(error["extensions"]["errorType"], "Unauthorized", "{error}");
        denied.insert(
            error["path"].to_string(),
            error["message"].as_str().unwrap_or_default().to_owned(),
        );
    }
    assert_eq!(denied.len(), 2, "{body}");
    assert_eq!(
        denied[r#"["getFarm","notes"]"#],
        "Not Authorized to access notes on type Farm"
    );
    assert_eq!(
        denied[r#"["tenant"]"#],
        "Not Authorized to access tenant on type Query"
    );
    // Another caller of the same authorizer reads the field.
    let (_, body) = call(
        &app,
        "north",
        "query($id: ID!) { getFarm(id: $id) { notes } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(body["data"]["getFarm"]["notes"], "gate code 1234", "{body}");
}

#[tokio::test]
async fn custom_rules_admit_the_authorizers_callers_and_other_rules_do_not() {
    let (base, asked) = authorizer().await;
    let app = app_with_authorizer(&base, format!("{base}/authorize")).await;
    // Memo is @aws_api_key: the authorizer's caller is refused it, an API key is not.
    let create_memo = "mutation { createMemo(input: { text: \"hay\" }) { id } }";
    let (_, body) = call(&app, "north", create_memo, json!({})).await;
    assert!(body["data"]["createMemo"].is_null(), "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{body}"
    );
    let by_key = app
        .graphql_with(&[("x-api-key", API_KEY)], create_memo, json!({}))
        .await
        .1;
    assert!(by_key["data"]["createMemo"]["id"].is_string(), "{by_key}");
    // `tenant` is @aws_lambda: an API key is refused it, and no function is called.
    let by_key = app
        .graphql_with(&[("x-api-key", API_KEY)], "{ tenant }", json!({}))
        .await
        .1;
    assert_eq!(
        by_key["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{by_key}"
    );

    // A JWT of the configured issuer is verified, with `Bearer ` or without (as aws-amplify
    // sends it), and never reaches the authorizer.
    let token = user_token("ann", &[]);
    for authorization in [format!("Bearer {token}"), token.clone()] {
        let (status, body) = call(
            &app,
            &authorization,
            "{ listFarms { items { id } } }",
            json!({}),
        )
        .await;
        // Authenticated as the token's user (no 401), whom Farm's rules do not name.
        assert_eq!(status, 200, "{body}");
    }
    // Asked only for the first request's token.
    assert_eq!(tokens_asked(&asked), ["north"]);
}

#[tokio::test]
async fn a_lambda_authorizer_is_invoked_through_the_sdk_too() {
    let (base, asked) = authorizer().await;
    let app = app_with_authorizer(&base, "lambda:auth".to_owned()).await;
    let (status, body) = call(&app, "north", "{ tenant }", json!({})).await;
    assert_eq!(
        (status, &body["data"]["tenant"]),
        (200, &json!("north")),
        "{body}"
    );
    let (status, _) = call(&app, "denied", "{ tenant }", json!({})).await;
    assert_eq!(status, 401);
    assert_eq!(tokens_asked(&asked), ["north", "denied"]);
}

#[tokio::test]
async fn websocket_and_sse_callers_pass_the_same_authorizer() {
    let (base, asked) = authorizer().await;
    let app = app_with_authorizer(&base, format!("{base}/authorize")).await;
    let mut client = Client::connected(&app, json!({ "Authorization": "north" })).await;
    client
        .subscribe("1", "{ tenant protocol }", json!({}))
        .await;
    let answer = client.next_of("1").await;
    assert_eq!(answer["data"]["tenant"], "north", "{answer}");
    // Functions and the authorizer see the upgrade's headers.
    assert_eq!(
        answer["data"]["protocol"], "graphql-transport-ws",
        "{answer}"
    );
    let asked = asked.lock().expect("the events").clone();
    assert_eq!(
        asked[0]["requestHeaders"]["sec-websocket-protocol"], "graphql-transport-ws",
        "{asked:?}"
    );

    let mut refused = Client::open(app.address, "graphql-transport-ws").await;
    refused
        .send(json!({ "type": "connection_init", "payload": { "Authorization": "denied" } }))
        .await;
    match refused.receive().await {
        Received::Closed(code, reason) => {
            assert_eq!(code, 4403, "{reason}");
        }
        other => panic!("expected 4403, got {other:?}"),
    }

    let mut response = app
        .client
        .post(app.url("/graphql"))
        .header("authorization", "north")
        .header("accept", "text/event-stream")
        .json(&json!({ "query": "{ tenant }" }))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), 200);
    let events = crate::helpers::sse_events(&mut response, 1).await;
    assert!(events[0].1.contains("\"north\""), "{events:?}");
}

#[tokio::test]
async fn without_an_authorizer_custom_rules_load_and_admit_nobody() {
    let http = HttpConfig {
        auth: AuthConfig {
            api_keys: vec![API_KEY.to_owned()],
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    };
    let (base, _asked) = authorizer().await;
    let functions = FunctionsConfig {
        endpoints: vec![
            ("tenant".to_owned(), format!("{base}/tenant")),
            ("protocol".to_owned(), format!("{base}/protocol")),
        ],
        ..FunctionsConfig::default()
    };
    let app = spawn_app_with_functions_and(SCHEMA, http, functions).await;
    let body = app
        .graphql_with(&[("x-api-key", API_KEY)], "{ tenant }", json!({}))
        .await
        .1;
    assert_eq!(
        body["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{body}"
    );
    // Without an authorizer, an Authorization value that is no JWT is no credential.
    let (status, _) = call(&app, "north", "{ tenant }", json!({})).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn a_jwt_of_another_issuer_is_the_authorizers_to_judge() {
    let (base, asked) = authorizer().await;
    let app = app_with_authorizer(&base, format!("{base}/authorize")).await;
    let foreign = tablegraph::auth::hs256_token(
        "a-secret-of-another-issuer-32-bytes-long",
        &tablegraph::auth::TokenClaims {
            issuer: "https://auth.example/".to_owned(),
            audience: None,
            subject: "zed".to_owned(),
            groups: Vec::new(),
            expires_in: Duration::from_secs(60),
        },
    )
    .expect("a token");
    let (status, _) = call(&app, &foreign, "{ tenant }", json!({})).await;
    // The authorizer does not know it (it answers 500): refused, after it was asked.
    assert_eq!(status, 401);
    assert_eq!(tokens_asked(&asked), [foreign]);
}
