//! Declarative resolvers from `resolvers/`: they batch like generated fields, read arguments and
//! verified claims, and a mistake in a file stops start-up naming the file and line.

use serde_json::{Value, json};
use tablegraph::auth::{AuthConfig, JwtConfig, JwtKeys};
use tablegraph::config::HttpConfig;

use crate::helpers::{TestApp, id_at, spawn_app, spawn_app_with_schema, spawn_app_with_schema_and};

async fn connect(app: &TestApp, edge: &str, from: &str, to: &str, extra: &str) {
    let query = format!(
        "mutation($f: ID!, $t: ID!) {{ add{edge}(input: {{ from: $f, to: $t{extra} }}) {{ createdAt }} }}"
    );
    let body = app.graphql(&query, json!({ "f": from, "t": to })).await;
    assert!(body["errors"].is_null(), "{body}");
}

#[tokio::test]
async fn a_teams_goal_leads_cost_three_storage_calls_however_many_goals() {
    let app = spawn_app().await;
    let team = app.create("Team", json!({ "name": "Growth" })).await;
    let other = app.create("Team", json!({ "name": "Other" })).await;
    let mut users = Vec::new();
    for name in ["Ann", "Bo", "Cy", "Dee"] {
        let email = format!("{}@example.com", name.to_lowercase());
        users.push(
            app.create("User", json!({ "name": name, "email": email }))
                .await,
        );
    }
    // 30 goals of the team, led in turn by Ann, Bo and Cy; Dee leads a goal of another team.
    for n in 0..30 {
        let goal = app
            .create(
                "Goal",
                json!({ "title": format!("G{n}"), "kind": "OBJECTIVE" }),
            )
            .await;
        connect(&app, "GoalMembership", &goal, &team, ", role: TEAM").await;
        connect(&app, "GoalMembership", &goal, &users[n % 3], ", role: LEAD").await;
        connect(
            &app,
            "GoalMembership",
            &goal,
            &users[3],
            ", role: CONTRIBUTOR",
        )
        .await;
    }
    let elsewhere = app
        .create("Goal", json!({ "title": "Else", "kind": "OBJECTIVE" }))
        .await;
    connect(&app, "GoalMembership", &elsewhere, &other, ", role: TEAM").await;
    connect(
        &app,
        "GoalMembership",
        &elsewhere,
        &users[3],
        ", role: LEAD",
    )
    .await;

    let (body, calls) = app
        .graphql_counted(
            "query($t: ID!) { team(id: $t) { name goalLeads { name } } }",
            json!({ "t": team }),
        )
        .await;
    let mut leads: Vec<&str> = body["data"]["team"]["goalLeads"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(|u| u["name"].as_str())
        .collect();
    leads.sort_unstable();
    assert_eq!(leads, ["Ann", "Bo", "Cy"]);
    // The team, then: the inverse slot, the goals, the leads.
    assert_eq!(
        calls,
        [
            "BatchGetItem",
            "Query:GSI01",
            "BatchGetItem",
            "BatchGetItem"
        ],
        "{body}"
    );
}

#[tokio::test]
async fn transitive_access_is_one_batched_read_past_the_user() {
    let app = spawn_app_with_schema("examples/access/schema.graphql").await;
    let alice = app.create("User", json!({ "name": "alice" })).await;
    let bob = app.create("User", json!({ "name": "bob" })).await;
    let g1 = app.create("Group", json!({ "name": "g1" })).await;
    let g2 = app.create("Group", json!({ "name": "g2" })).await;
    let p1 = app.create("Product", json!({ "name": "p1" })).await;
    let p2 = app.create("Product", json!({ "name": "p2" })).await;
    connect(&app, "MemberOf", &alice, &g1, "").await;
    connect(&app, "MemberOf", &alice, &g2, "").await;
    connect(&app, "MemberOf", &bob, &g1, "").await;
    connect(&app, "Subscribes", &g1, &p1, "").await;
    connect(&app, "Subscribes", &g2, &p1, "").await;
    connect(&app, "Subscribes", &g2, &p2, "").await;

    let query =
        "query($u: ID!, $p: ID!) { user(id: $u) { canAccess(product: $p) products { name } } }";
    for (user, product, expected) in [(&alice, &p2, true), (&bob, &p2, false), (&bob, &p1, true)] {
        let (body, calls) = app
            .graphql_counted(query, json!({ "u": user, "p": product }))
            .await;
        assert_eq!(body["data"]["user"]["canAccess"], expected, "{body}");
        // The user, then the user's groups, shared by both fields.
        assert_eq!(
            calls,
            ["BatchGetItem", "BatchGetItem", "BatchGetItem"],
            "{body}"
        );
    }
    let (body, _) = app
        .graphql_counted(query, json!({ "u": alice, "p": p1 }))
        .await;
    let mut products: Vec<&str> = body["data"]["user"]["products"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    products.sort_unstable();
    assert_eq!(products, ["p1", "p2"], "each product once");
}

#[tokio::test]
async fn a_resolver_reads_the_callers_verified_claims() {
    const SECRET: &str = "a-test-secret-that-is-long-enough-for-hs256";
    let http = HttpConfig {
        auth: AuthConfig {
            api_keys: vec!["key".to_owned()],
            jwt: vec![JwtConfig {
                keys: JwtKeys::Hs256Secret(SECRET.to_owned()),
                issuer: "https://issuer.example".to_owned(),
                audience: None,
                refetch_interval: tablegraph::auth::DEFAULT_REFETCH_INTERVAL,
            }],
            ..AuthConfig::default()
        },
        ..HttpConfig::default()
    };
    let app = spawn_app_with_schema_and("examples/access/schema.graphql", http).await;
    let post = |headers: Vec<(&'static str, String)>, query: &'static str, variables: Value| {
        let mut request = app
            .client
            .post(app.url("/graphql"))
            .json(&json!({ "query": query, "variables": variables }));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        async move {
            request
                .send()
                .await
                .expect("answers")
                .json::<Value>()
                .await
                .expect("JSON")
        }
    };
    let key = || vec![("x-api-key", "key".to_owned())];
    let body = post(
        key(),
        "mutation { createUser(input: { name: \"alice\" }) { id } }",
        json!({}),
    )
    .await;
    let alice = id_at(&body, "/data/createUser/id");
    let body = post(
        key(),
        "mutation { createUser(input: { name: \"bob\" }) { id } }",
        json!({}),
    )
    .await;
    let bob = id_at(&body, "/data/createUser/id");

    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 300;
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({ "sub": alice, "iss": "https://issuer.example", "exp": exp }),
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .expect("a token");
    let query =
        "query($a: ID!, $b: ID!) { a: user(id: $a) { isCaller } b: user(id: $b) { isCaller } }";
    let vars = json!({ "a": alice, "b": bob });
    let body = post(
        vec![("authorization", format!("Bearer {token}"))],
        query,
        vars.clone(),
    )
    .await;
    assert_eq!(body["data"]["a"]["isCaller"], true, "{body}");
    assert_eq!(body["data"]["b"]["isCaller"], false, "{body}");
    // With an API key there are no claims: nobody is the caller.
    let body = post(key(), query, vars).await;
    assert_eq!(body["data"]["a"]["isCaller"], false, "{body}");
}

#[tokio::test]
async fn the_executed_plan_reports_consumed_capacity_per_call() {
    let app = spawn_app().await;
    let team = app.create("Team", json!({ "name": "Growth" })).await;
    let (body, _) = app
        .graphql_counted(
            "query($t: ID!) { team(id: $t) { goalLeads { name } } }",
            json!({ "t": team }),
        )
        .await;
    let calls = body["extensions"]["storageCalls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(calls.len(), 2, "the team, then the inverse slot: {body}");
    for call in &calls {
        let units = call["consumedCapacity"]
            .as_f64()
            .unwrap_or_else(|| panic!("{call}"));
        assert!(units > 0.0, "{call}");
    }
    assert_eq!(calls[1]["operation"], "Query");
    assert_eq!(calls[1]["index"], "GSI01");
}
