//! The goals graph: typed edges with metadata, edge sets, inverse lookups, and the Koan page in
//! three storage calls. These servers run with the read cache off (the test servers' default),
//! so the calls counted are a cold read's; `cache.rs` counts a warm page's (none).

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_message, error_type, spawn_app};

async fn goal(app: &TestApp, title: &str) -> String {
    app.create("Goal", json!({ "title": title, "kind": "OBJECTIVE" }))
        .await
}

async fn user(app: &TestApp, name: &str) -> String {
    let email = format!("{}@example.com", name.to_lowercase().replace(' ', "."));
    app.create("User", json!({ "name": name, "email": email }))
        .await
}

async fn team(app: &TestApp, name: &str) -> String {
    app.create("Team", json!({ "name": name })).await
}

async fn member(app: &TestApp, goal: &str, member: &str, role: &str) -> Value {
    app.graphql(
        "mutation($g: ID!, $m: ID!, $r: GoalRole!) {
            addGoalMembership(input: { from: $g, to: $m, role: $r, since: \"2024-05-01\" }) {
                role since from { title } to { __typename ... on User { name } ... on Team { name } }
            }
        }",
        json!({ "g": goal, "m": member, "r": role }),
    )
    .await
}

pub(crate) const KOAN_PAGE: &str = "query($team: ID!, $first: Int) {
    team(id: $team) {
        goals(first: $first) {
            edges { role node { title leads { name } teams { name } } }
        }
    }
}";

/// A team with `count` goals; each goal is led by one of five users and worked on by the team
/// and by a second team.
pub(crate) async fn koan_company(app: &TestApp, count: usize) -> String {
    let growth = team(app, "Growth").await;
    let platform = team(app, "Platform").await;
    let mut leads = Vec::new();
    for name in ["Dora Campos", "Ann Lee", "Bo Chen", "Cy Diaz", "Ed Fox"] {
        leads.push(user(app, name).await);
    }
    for n in 0..count {
        let goal = goal(app, &format!("Goal {n:03}")).await;
        member(app, &goal, &growth, "TEAM").await;
        member(app, &goal, &platform, "TEAM").await;
        member(app, &goal, &leads[n % leads.len()], "LEAD").await;
    }
    growth
}

#[tokio::test]
async fn the_koan_page_costs_three_storage_calls_for_any_page_size() {
    let app = spawn_app().await;
    let growth = koan_company(&app, 100).await;
    for first in [1, 10, 50, 100] {
        let (body, calls) = app
            .graphql_counted(KOAN_PAGE, json!({ "team": growth, "first": first }))
            .await;
        let edges = body["data"]["team"]["goals"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .clone();
        assert_eq!(edges.len(), first);
        let goal = &edges[0];
        assert_eq!(goal["role"], "TEAM");
        assert_eq!(
            goal["node"]["leads"].as_array().map(Vec::len),
            Some(1),
            "{goal}"
        );
        assert_eq!(
            goal["node"]["teams"].as_array().map(Vec::len),
            Some(2),
            "{goal}"
        );
        assert_eq!(
            calls,
            ["Query:GSI01", "BatchGetItem", "BatchGetItem"],
            "first: {first}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_koan_page_costs_three_calls_with_thirty_two_concurrent_clients() {
    let app = spawn_app().await;
    let growth = koan_company(&app, 50).await;
    let pages =
        (0..32).map(|_| app.graphql_counted(KOAN_PAGE, json!({ "team": growth, "first": 50 })));
    for (body, calls) in futures::future::join_all(pages).await {
        assert_eq!(
            body["data"]["team"]["goals"]["edges"]
                .as_array()
                .map(Vec::len),
            Some(50),
            "{body}"
        );
        assert_eq!(calls, ["Query:GSI01", "BatchGetItem", "BatchGetItem"]);
    }
}

/// The page read ahead of a team's first connection goes down with the team to the field it
/// was read for: another alias of the same connection, asking for another page, reads its own.
#[tokio::test]
async fn two_aliases_of_one_connection_each_answer_their_own_page() {
    let app = spawn_app().await;
    let growth = koan_company(&app, 5).await;
    let (body, calls) = app
        .graphql_counted(
            "query($team: ID!) { team(id: $team) {
                a: goals(first: 1) { edges { role } }
                b: goals(first: 3, sortDirection: DESC) { edges { role cursor } }
                goals(first: 2) { edges { role } }
            } }",
            json!({ "team": growth }),
        )
        .await;
    let count = |key: &str| body["data"]["team"][key]["edges"].as_array().map(Vec::len);
    assert_eq!(
        (count("a"), count("b"), count("goals")),
        (Some(1), Some(3), Some(2)),
        "{body}"
    );
    // One Query read ahead (for `a`, proving the team), one for each other page; the team
    // itself is never read.
    assert_eq!(calls, ["Query:GSI01", "Query:GSI01", "Query:GSI01"]);
}

#[tokio::test]
async fn a_team_id_given_for_a_user_still_answers_null() {
    let app = spawn_app().await;
    let ann = user(&app, "Ann").await;
    let goal = goal(&app, "Ship").await;
    member(&app, &goal, &ann, "LEAD").await;
    let body = app
        .graphql(KOAN_PAGE, json!({ "team": ann, "first": 5 }))
        .await;
    assert_eq!(body["data"]["team"], Value::Null, "{body}");
    // A team with no goals is still a team.
    let empty = team(&app, "Empty").await;
    let body = app
        .graphql(KOAN_PAGE, json!({ "team": empty, "first": 5 }))
        .await;
    assert_eq!(body["data"]["team"]["goals"]["edges"], json!([]), "{body}");
}

#[tokio::test]
async fn membership_metadata_sits_on_the_connection_edges() {
    let app = spawn_app().await;
    let goal = goal(&app, "Launch").await;
    let ann = user(&app, "Ann").await;
    let bo = user(&app, "Bo").await;
    let ops = team(&app, "Ops").await;
    let body = member(&app, &goal, &ann, "LEAD").await;
    assert_eq!(
        body["data"]["addGoalMembership"],
        json!({ "role": "LEAD", "since": "2024-05-01", "from": { "title": "Launch" }, "to": { "__typename": "User", "name": "Ann" } })
    );
    member(&app, &goal, &bo, "CONTRIBUTOR").await;
    member(&app, &goal, &ops, "TEAM").await;
    let members = |args: &str| {
        let query = format!(
            "query($g: ID!) {{ goal(id: $g) {{ members{args} {{ edges {{ role since createdAt node {{ __typename ... on User {{ name }} ... on Team {{ name }} }} }} }} }} }}"
        );
        let app = &app;
        let goal = goal.clone();
        async move { app.graphql(&query, json!({ "g": goal })).await }
    };
    let roles = |body: &Value| -> Vec<String> {
        body["data"]["goal"]["members"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|e| {
                format!(
                    "{}:{}",
                    e["role"].as_str().unwrap_or("?"),
                    e["node"]["name"].as_str().unwrap_or("?")
                )
            })
            .collect()
    };
    let all = members("").await;
    assert_eq!(roles(&all).len(), 3, "{all}");
    assert_eq!(
        all["data"]["goal"]["members"]["edges"][0]["since"],
        "2024-05-01"
    );
    assert_eq!(roles(&members("(role: LEAD)").await), ["LEAD:Ann"]);
    let mut leaders = roles(&members("(minRole: CONTRIBUTOR)").await);
    leaders.sort();
    assert_eq!(leaders, ["CONTRIBUTOR:Bo", "LEAD:Ann"]);
    assert_eq!(roles(&members("(role: TEAM)").await), ["TEAM:Ops"]);
    let first = members("(first: 1)").await;
    assert_eq!(roles(&first).len(), 1);
}

#[tokio::test]
async fn goals_i_lead_or_contribute_to_are_one_query() {
    let app = spawn_app().await;
    let ann = user(&app, "Ann").await;
    let mut expected = Vec::new();
    for (title, role) in [
        ("A", "LEAD"),
        ("B", "CONTRIBUTOR"),
        ("C", "TEAM"),
        ("D", "LEAD"),
    ] {
        let goal = goal(&app, title).await;
        let body = member(&app, &goal, &ann, role).await;
        assert!(body["errors"].is_null(), "{body}");
        if role != "TEAM" {
            expected.push(title);
        }
    }
    // A user as TEAM member is unusual but allowed by the schema; it sorts below CONTRIBUTOR.
    let (body, calls) = app
        .graphql_counted(
            "query($u: ID!) { user(id: $u) { goals(minRole: CONTRIBUTOR) { edges { role } } } }",
            json!({ "u": ann }),
        )
        .await;
    let roles: Vec<&str> = body["data"]["user"]["goals"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(|e| e["role"].as_str())
        .collect();
    assert_eq!(roles, ["CONTRIBUTOR", "LEAD", "LEAD"]);
    assert_eq!(calls, ["Query:GSI01"], "one Query with a sort-key range");

    // Paging through them, with the goals themselves.
    let page = |after: Value| {
        let app = &app;
        let ann = ann.clone();
        async move {
            app.graphql(
                "query($u: ID!, $after: String) { user(id: $u) { goals(minRole: CONTRIBUTOR, first: 2, after: $after) {
                    edges { node { title } } pageInfo { hasNextPage endCursor } } } }",
                json!({ "u": ann, "after": after }),
            )
            .await
        }
    };
    let first = page(Value::Null).await;
    let second = page(first["data"]["user"]["goals"]["pageInfo"]["endCursor"].clone()).await;
    let mut titles: Vec<String> = [&first, &second]
        .iter()
        .flat_map(|b| {
            b["data"]["user"]["goals"]["edges"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|e| e["node"]["title"].as_str().map(str::to_owned))
        .collect();
    titles.sort();
    assert_eq!(titles, ["A", "B", "D"]);
    assert_eq!(
        first["data"]["user"]["goals"]["pageInfo"]["hasNextPage"],
        true
    );
    assert_eq!(
        second["data"]["user"]["goals"]["pageInfo"]["hasNextPage"],
        false
    );
}

#[tokio::test]
async fn leads_and_teams_come_from_the_edge_set_without_a_query() {
    let app = spawn_app().await;
    let goal = goal(&app, "Grow").await;
    let ann = user(&app, "Ann").await;
    let ops = team(&app, "Ops").await;
    member(&app, &goal, &ann, "LEAD").await;
    member(&app, &goal, &ops, "TEAM").await;
    let (body, calls) = app
        .graphql_counted(
            "query($g: ID!) { goal(id: $g) { leads { name } teams { name } } }",
            json!({ "g": goal }),
        )
        .await;
    assert_eq!(
        body["data"]["goal"],
        json!({ "leads": [{ "name": "Ann" }], "teams": [{ "name": "Ops" }] })
    );
    assert_eq!(calls, ["BatchGetItem", "BatchGetItem"]);
}

#[tokio::test]
async fn re_adding_with_another_role_moves_the_edge_everywhere_in_one_transaction() {
    let app = spawn_app().await;
    let goal = goal(&app, "Refocus").await;
    let ann = user(&app, "Ann").await;
    member(&app, &goal, &ann, "LEAD").await;
    let (body, calls) = app
        .graphql_counted(
            "mutation($g: ID!, $u: ID!) { addGoalMembership(input: { from: $g, to: $u, role: CONTRIBUTOR }) { role since } }",
            json!({ "g": goal, "u": ann }),
        )
        .await;
    assert_eq!(
        body["data"]["addGoalMembership"],
        json!({ "role": "CONTRIBUTOR", "since": null })
    );
    let writes: Vec<&String> = calls
        .iter()
        .filter(|c| *c == "TransactWriteItems")
        .collect();
    assert_eq!(writes.len(), 1, "{calls:?}");
    let body = app
        .graphql(
            "query($g: ID!, $u: ID!) {
                goal(id: $g) { leads { name } members { edges { role } } }
                user(id: $u) { lead: goals(role: LEAD) { edges { role } } contributor: goals(role: CONTRIBUTOR) { edges { role } } }
            }",
            json!({ "g": goal, "u": ann }),
        )
        .await;
    assert_eq!(body["data"]["goal"]["leads"], json!([]), "{body}");
    assert_eq!(
        body["data"]["goal"]["members"]["edges"],
        json!([{ "role": "CONTRIBUTOR" }])
    );
    assert_eq!(body["data"]["user"]["lead"]["edges"], json!([]));
    assert_eq!(
        body["data"]["user"]["contributor"]["edges"],
        json!([{ "role": "CONTRIBUTOR" }])
    );
}

#[tokio::test]
async fn removing_an_edge_removes_it_everywhere() {
    let app = spawn_app().await;
    let goal = goal(&app, "Trim").await;
    let ann = user(&app, "Ann").await;
    member(&app, &goal, &ann, "LEAD").await;
    let remove = "mutation($g: ID!, $u: ID!) { removeGoalMembership(from: $g, to: $u) }";
    let body = app.graphql(remove, json!({ "g": goal, "u": ann })).await;
    assert_eq!(body["data"]["removeGoalMembership"], true, "{body}");
    let body = app
        .graphql(
            "query($g: ID!, $u: ID!) { goal(id: $g) { leads { name } members { edges { role } } } user(id: $u) { goals { edges { role } } } }",
            json!({ "g": goal, "u": ann }),
        )
        .await;
    assert_eq!(
        body["data"]["goal"],
        json!({ "leads": [], "members": { "edges": [] } })
    );
    assert_eq!(body["data"]["user"]["goals"]["edges"], json!([]));
    // Removing it again is an error: there is nothing to remove.
    let body = app.graphql(remove, json!({ "g": goal, "u": ann })).await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
}

#[tokio::test]
async fn deleting_a_node_removes_its_edges_in_both_directions() {
    let app = spawn_app().await;
    let first = goal(&app, "First").await;
    let second = goal(&app, "Second").await;
    let ann = user(&app, "Ann").await;
    let ops = team(&app, "Ops").await;
    for goal in [&first, &second] {
        member(&app, goal, &ann, "LEAD").await;
        member(&app, goal, &ops, "TEAM").await;
    }
    app.graphql(
        "mutation($u: ID!, $t: ID!) { addTeamMembership(input: { from: $u, to: $t, role: MANAGER }) { role } }",
        json!({ "u": ann, "t": ops }),
    )
    .await;
    // Deleting the user takes it out of both goals' edge sets and out of the team.
    let body = app
        .graphql(
            "mutation($u: ID!) { deleteUser(id: $u) { name } }",
            json!({ "u": ann }),
        )
        .await;
    assert_eq!(body["data"]["deleteUser"]["name"], "Ann", "{body}");
    let body = app
        .graphql(
            "query($a: ID!, $b: ID!, $t: ID!) {
                a: goal(id: $a) { leads { name } members { edges { role } } }
                b: goal(id: $b) { leads { name } }
                team(id: $t) { members { edges { role } } goals { edges { node { title } } } }
            }",
            json!({ "a": first, "b": second, "t": ops }),
        )
        .await;
    assert_eq!(
        body["data"]["a"],
        json!({ "leads": [], "members": { "edges": [{ "role": "TEAM" }] } }),
        "{body}"
    );
    assert_eq!(body["data"]["b"]["leads"], json!([]));
    assert_eq!(body["data"]["team"]["members"]["edges"], json!([]));
    // Deleting a goal takes its memberships out of the team's goals.
    app.graphql(
        "mutation($g: ID!) { deleteGoal(id: $g) { id } }",
        json!({ "g": first }),
    )
    .await;
    let body = app
        .graphql(
            "query($t: ID!) { team(id: $t) { goals { edges { node { title } } } } }",
            json!({ "t": ops }),
        )
        .await;
    assert_eq!(
        body["data"]["team"]["goals"]["edges"],
        json!([{ "node": { "title": "Second" } }])
    );
}

#[tokio::test]
async fn a_node_with_more_edges_than_one_transaction_holds_is_deleted_in_steps() {
    let app = spawn_app().await;
    let goal = goal(&app, "Popular").await;
    let mut followers = Vec::new();
    for n in 0..110 {
        let follower = user(&app, &format!("Follower {n}")).await;
        let body = app
            .graphql(
                "mutation($g: ID!, $u: ID!) { addGoalSubscription(input: { from: $g, to: $u }) { since } }",
                json!({ "g": goal, "u": follower }),
            )
            .await;
        assert!(body["errors"].is_null(), "{body}");
        followers.push(follower);
    }
    let body = app
        .graphql(
            "mutation($g: ID!) { deleteGoal(id: $g) { title } }",
            json!({ "g": goal }),
        )
        .await;
    assert_eq!(body["data"]["deleteGoal"]["title"], "Popular", "{body}");
    let body = app
        .graphql(
            "query($u: ID!) { user(id: $u) { subscriptions { edges { node { title } } } } }",
            json!({ "u": followers[0] }),
        )
        .await;
    assert_eq!(
        body["data"]["user"]["subscriptions"]["edges"],
        json!([]),
        "{body}"
    );
    let body = app
        .graphql(
            "query($g: ID!) { goal(id: $g) { id } }",
            json!({ "g": goal }),
        )
        .await;
    assert_eq!(body["data"]["goal"], Value::Null);
}

#[tokio::test]
async fn an_edge_that_would_overflow_its_node_is_refused_before_anything_is_written() {
    let app = spawn_app().await;
    // A goal just under DynamoDB's 400 KB item limit: 238 bytes of keys (its type index shard
    // among them), names and fixed values, two timestamps of 20 to 30 characters, and this
    // title fit; one more edge-set entry (65 bytes) does not, whatever the timestamps' lengths.
    let title = "t".repeat(409_272);
    let goal = app
        .create("Goal", json!({ "title": title, "kind": "OBJECTIVE" }))
        .await;
    let ann = user(&app, "Ann").await;
    let body = member(&app, &goal, &ann, "LEAD").await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert!(error_message(&body).contains("item limit"), "{body}");
    let body = app
        .graphql(
            "query($u: ID!) { user(id: $u) { goals { edges { role } } } }",
            json!({ "u": ann }),
        )
        .await;
    assert_eq!(body["data"]["user"]["goals"]["edges"], json!([]));
}

#[tokio::test]
async fn bad_edge_input_is_refused_and_writes_nothing() {
    let app = spawn_app().await;
    let goal = goal(&app, "Guarded").await;
    let ann = user(&app, "Ann").await;
    let ops = team(&app, "Ops").await;
    // A missing target, a target of the wrong type, a source of the wrong type.
    let body = member(&app, &goal, &goal, "LEAD").await;
    assert!(error_message(&body).contains("own source"), "{body}");
    for (from, to) in [
        (goal.as_str(), "01000000-0000-7000-8000-000000000000"),
        (ann.as_str(), ops.as_str()),
    ] {
        let body = member(&app, from, to, "LEAD").await;
        assert_eq!(error_type(&body), "BadUserInput", "{from} → {to}: {body}");
    }
    let other = goal_title_goal(&app).await;
    let body = member(&app, &goal, &other, "LEAD").await;
    assert_eq!(
        error_type(&body),
        "BadUserInput",
        "a goal is not a Member: {body}"
    );
    // An unknown role is refused by the schema.
    let body = member(&app, &goal, &ann, "CAPTAIN").await;
    assert!(body["errors"][0]["message"].is_string(), "{body}");
    // minRole exists only where the edge sorts by a ranked enum.
    let body = app
        .graphql(
            "query($u: ID!) { user(id: $u) { teams(minRole: MANAGER) { edges { role } } } }",
            json!({ "u": ann }),
        )
        .await;
    assert!(error_message(&body).contains("minRole"), "{body}");
    let body = app
        .graphql(
            "query($g: ID!) { goal(id: $g) { members { edges { role } } } }",
            json!({ "g": goal }),
        )
        .await;
    assert_eq!(
        body["data"]["goal"]["members"]["edges"],
        json!([]),
        "nothing was written: {body}"
    );
}

async fn goal_title_goal(app: &TestApp) -> String {
    goal(app, "Another").await
}

#[tokio::test]
async fn a_goal_with_more_memberships_than_one_transaction_holds_is_deleted_in_steps() {
    let app = spawn_app().await;
    let goal = goal(&app, "Crowded").await;
    let mut members = Vec::new();
    for n in 0..100 {
        let user = user(&app, &format!("Member {n}")).await;
        let body = member(&app, &goal, &user, "CONTRIBUTOR").await;
        assert!(body["errors"].is_null(), "{body}");
        members.push(user);
    }
    let body = app
        .graphql(
            "query($g: ID!) { goal(id: $g) { version } }",
            json!({ "g": goal }),
        )
        .await;
    let version = body["data"]["goal"]["version"].clone();
    let body = app
        .graphql(
            "mutation($g: ID!, $v: Int) { deleteGoal(id: $g, expectedVersion: $v) { title } }",
            json!({ "g": goal, "v": version }),
        )
        .await;
    assert_eq!(body["data"]["deleteGoal"]["title"], "Crowded", "{body}");
    let body = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { ... on User { goals { edges { cursor } } } } }",
            json!({ "ids": members }),
        )
        .await;
    let left: usize = body["data"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|user| user["goals"]["edges"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(left, 0, "no membership survives its goal");
}

#[tokio::test]
async fn a_user_in_many_goals_is_deleted_in_steps_and_leaves_every_edge_set() {
    let app = spawn_app().await;
    let lead = user(&app, "Prolific").await;
    let mut goals = Vec::new();
    for n in 0..100 {
        let goal = goal(&app, &format!("Led {n}")).await;
        member(&app, &goal, &lead, "LEAD").await;
        goals.push(goal);
    }
    let body = app
        .graphql(
            "mutation($u: ID!) { deleteUser(id: $u) { name } }",
            json!({ "u": lead }),
        )
        .await;
    assert_eq!(body["data"]["deleteUser"]["name"], "Prolific", "{body}");
    let body = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Goal { leads { name } members { edges { cursor } } } } }",
            json!({ "ids": goals }),
        )
        .await;
    for goal in body["data"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
    {
        assert_eq!(goal, &json!({ "leads": [], "members": { "edges": [] } }));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_edge_added_while_its_target_is_deleted_never_outlives_it() {
    let app = spawn_app().await;
    for round in 0..12 {
        let goal = goal(&app, &format!("Race {round}")).await;
        let ann = user(&app, &format!("Racer {round}")).await;
        let add = member(&app, &goal, &ann, "LEAD");
        let delete = app.graphql(
            "mutation($u: ID!) { deleteUser(id: $u) { id } }",
            json!({ "u": ann }),
        );
        let (_, deleted) = futures::future::join(add, delete).await;
        assert!(deleted["errors"].is_null(), "{deleted}");
        let body = app
            .graphql(
                "query($g: ID!, $u: ID!) {
                    goal(id: $g) { leads { id } members { edges { cursor } } }
                    user(id: $u) { goals { edges { cursor } } }
                }",
                json!({ "g": goal, "u": ann }),
            )
            .await;
        assert_eq!(
            body["data"],
            json!({ "goal": { "leads": [], "members": { "edges": [] } }, "user": null }),
            "round {round}"
        );
    }
}
