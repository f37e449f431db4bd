//! The demo data set: farms, goals, users and teams, written through the GraphQL API itself so
//! that every invariant (unique names, edge sets, slots) holds as for any client's writes.
//!
//! Invariant: loading twice changes nothing. The last write of the set (Dora managing the
//! Growth team) marks it loaded; a set that stopped midway is refused, not doubled.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::graphql::{self, RequestScope, SchemaOptions};
use crate::model::Model;
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("the demo data set needs the default schema's {0} type")]
    WrongSchema(String),
    #[error("cannot build the GraphQL schema: {0}")]
    Schema(String),
    #[error("{operation} failed: {message}")]
    Operation { operation: String, message: String },
}

/// What loading did.
#[derive(Debug, PartialEq, Eq)]
pub enum DemoOutcome {
    Loaded { writes: usize },
    AlreadyLoaded,
}

struct Loader {
    api: graphql::Api,
    store: Store,
    writes: usize,
}

impl Loader {
    async fn run(&mut self, operation: &str, variables: Value) -> Result<Value, DemoError> {
        let scope = Arc::new(RequestScope::new(
            &self.store,
            SchemaOptions::default().max_storage_calls,
        ));
        let request = async_graphql::Request::new(operation)
            .variables(async_graphql::Variables::from_json(variables))
            .data(scope);
        let response = self.api.execute(request).await;
        if let Some(error) = response.errors.first() {
            return Err(DemoError::Operation {
                operation: operation
                    .split_whitespace()
                    .take(4)
                    .collect::<Vec<_>>()
                    .join(" "),
                message: error.message.clone(),
            });
        }
        self.writes += 1;
        Ok(response.data.into_json().unwrap_or_default())
    }

    async fn create(&mut self, kind: &str, input: Value) -> Result<String, DemoError> {
        let operation = format!(
            "mutation($input: Create{kind}Input!) {{ create{kind}(input: $input) {{ id }} }}"
        );
        let data = self.run(&operation, json!({ "input": input })).await?;
        Ok(data[format!("create{kind}")]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    async fn member(&mut self, goal: &str, member: &str, role: &str) -> Result<(), DemoError> {
        self.run(
            "mutation($g: ID!, $m: ID!, $r: GoalRole!) { addGoalMembership(input: { from: $g, to: $m, role: $r, since: \"2024-01-15\" }) { role } }",
            json!({ "g": goal, "m": member, "r": role }),
        )
        .await
        .map(drop)
    }
}

/// Loads the demo data set into the default schema's table, unless it is already there.
pub async fn load(store: &Store, model: Arc<Model>) -> Result<DemoOutcome, DemoError> {
    for needed in ["Farm", "Cow", "Chicken", "Image", "Goal", "User", "Team"] {
        if model.type_def(needed).is_none() {
            return Err(DemoError::WrongSchema(needed.to_owned()));
        }
    }
    let api = graphql::Api::build(model, &SchemaOptions::default())
        .map_err(|e| DemoError::Schema(e.to_string()))?;
    let mut loader = Loader {
        api,
        store: store.clone(),
        writes: 0,
    };
    let existing = loader
        .run(
            "{ teamByName(name: \"Growth\") { members(role: MANAGER) { edges { cursor } } } }",
            json!({}),
        )
        .await?;
    let managers = &existing["teamByName"]["members"]["edges"];
    if managers.as_array().is_some_and(|m| !m.is_empty()) {
        return Ok(DemoOutcome::AlreadyLoaded);
    }
    loader.writes = 0;

    let logo = loader
        .create(
            "Image",
            json!({ "url": "https://example.com/old-macdonald.png" }),
        )
        .await?;
    let farm = loader
        .create("Farm", json!({ "name": "Old MacDonald's", "logoId": logo }))
        .await?;
    let acres = loader
        .create("Farm", json!({ "name": "Green Acres" }))
        .await?;
    for (kind, name, farm_id) in [
        ("Cow", "Bessie", &farm),
        ("Cow", "daisy", &farm),
        ("Cow", "Clara", &farm),
        ("Chicken", "Chuck", &farm),
        ("Chicken", "Henrietta", &farm),
        ("Cow", "Ermintrude", &acres),
    ] {
        loader
            .create(kind, json!({ "name": name, "farmId": farm_id }))
            .await?;
    }

    let mut people = HashMap::new();
    for (name, email) in [
        ("Dora Campos", "dora@example.com"),
        ("Ann Lee", "ann@example.com"),
        ("Bo Chen", "bo@example.com"),
    ] {
        people.insert(
            name,
            loader
                .create("User", json!({ "name": name, "email": email }))
                .await?,
        );
    }
    let growth = loader.create("Team", json!({ "name": "Growth" })).await?;
    let platform = loader.create("Team", json!({ "name": "Platform" })).await?;
    let goals = [
        (
            "Double monthly active users",
            "OBJECTIVE",
            None,
            "Dora Campos",
            &growth,
        ),
        (
            "10 nationwide press events",
            "KEY_RESULT",
            Some(0),
            "Dora Campos",
            &growth,
        ),
        (
            "Launch the referral program",
            "KEY_RESULT",
            Some(0),
            "Ann Lee",
            &growth,
        ),
        (
            "Release the next-generation platform",
            "OBJECTIVE",
            None,
            "Bo Chen",
            &platform,
        ),
        (
            "Cut p99 latency in half",
            "KEY_RESULT",
            Some(3),
            "Bo Chen",
            &platform,
        ),
    ];
    let mut ids: Vec<String> = Vec::new();
    for (title, kind, parent, lead, team) in goals {
        let mut input = json!({ "title": title, "kind": kind });
        if let Some(parent) = parent {
            input["parentId"] = json!(ids[parent]);
        }
        let goal = loader.create("Goal", input).await?;
        loader.member(&goal, &people[lead], "LEAD").await?;
        loader.member(&goal, team, "TEAM").await?;
        ids.push(goal);
    }
    // Cross-team work: the platform team supports the growth objective, Ann contributes.
    loader.member(&ids[0], &platform, "TEAM").await?;
    loader
        .member(&ids[3], &people["Ann Lee"], "CONTRIBUTOR")
        .await?;
    loader
        .run(
            "mutation($u: ID!, $t: ID!) { addTeamMembership(input: { from: $u, to: $t, role: MANAGER }) { role } }",
            json!({ "u": people["Dora Campos"], "t": growth }),
        )
        .await?;
    Ok(DemoOutcome::Loaded {
        writes: loader.writes,
    })
}
