//! The demo data set: farms, goals, users and teams, written through the engine's own writes so
//! that every invariant (unique names, edge sets, slots) holds as for any client's writes.
//!
//! Invariant: loading twice changes nothing. The last write of the set (Dora managing the
//! Growth team) marks it loaded; a set that stopped midway is refused, not doubled.

use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::read::{Connection, PageArguments, PageRequest};
use crate::engine::write::FieldValues;
use crate::engine::{self, EngineError, RequestScope};
use crate::model::Model;
use crate::store::{AttrValue, Item, Store};

/// Storage calls one demo write may make, as for one client request.
const MAX_STORAGE_CALLS: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("the demo data set needs the default schema's {0}")]
    WrongSchema(String),
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
    model: Arc<Model>,
    store: Store,
    writes: usize,
}

impl Loader {
    /// A scope for one write, as a request would have.
    fn scope(&self) -> RequestScope {
        RequestScope::new(&self.store, MAX_STORAGE_CALLS)
    }

    fn failed(operation: String) -> impl FnOnce(EngineError) -> DemoError {
        move |error| DemoError::Operation {
            operation,
            message: error.message(),
        }
    }

    async fn create(&mut self, kind: &str, fields: &[(&str, &str)]) -> Result<String, DemoError> {
        let type_def = self
            .model
            .type_def(kind)
            .ok_or_else(|| DemoError::WrongSchema(format!("{kind} type")))?;
        let values: FieldValues = fields
            .iter()
            .map(|(name, value)| ((*name).to_owned(), Some(AttrValue::S((*value).to_owned()))))
            .collect();
        let node = engine::write::create_node(&self.scope(), &self.model, type_def, &values)
            .await
            .map_err(Loader::failed(format!("create{kind}")))?;
        self.writes += 1;
        Ok(node.id().to_owned())
    }

    async fn add_edge(
        &mut self,
        edge: &str,
        from: &str,
        to: &str,
        metadata: &[(&str, &str)],
    ) -> Result<(), DemoError> {
        let edge_def = self
            .model
            .edge_def(edge)
            .ok_or_else(|| DemoError::WrongSchema(format!("{edge} edge type")))?;
        let metadata: Item = metadata
            .iter()
            .map(|(name, value)| ((*name).to_owned(), AttrValue::S((*value).to_owned())))
            .collect();
        engine::write::add_edge(&self.scope(), &self.model, edge_def, from, to, &metadata)
            .await
            .map_err(Loader::failed(format!("add{edge}")))?;
        self.writes += 1;
        Ok(())
    }

    async fn member(&mut self, goal: &str, member: &str, role: &str) -> Result<(), DemoError> {
        self.add_edge(
            "GoalMembership",
            goal,
            member,
            &[("role", role), ("since", "2024-01-15")],
        )
        .await
    }

    /// Whether the Growth team has a manager: the set's last write.
    async fn is_loaded(&self) -> Result<bool, DemoError> {
        let failed = || Loader::failed("reading the Growth team's managers".to_owned());
        let team = self
            .model
            .type_def("Team")
            .ok_or_else(|| DemoError::WrongSchema("Team type".to_owned()))?;
        let members = team
            .field("members")
            .and_then(|field| Connection::of(team, field, &self.model))
            .ok_or_else(|| DemoError::WrongSchema("Team.members connection".to_owned()))?;
        let scope = self.scope();
        let Some(growth) = engine::read::load_node_by_unique(&scope, "Team", "name", "Growth")
            .await
            .map_err(failed())?
        else {
            return Ok(false);
        };
        let managers = PageRequest::new(PageArguments {
            first: Some(1),
            role: Some("MANAGER".to_owned()),
            ..PageArguments::default()
        })
        .map_err(failed())?;
        let page =
            engine::read::read_page(&scope, &self.model, &members, growth.id(), &managers, false)
                .await
                .map_err(failed())?;
        Ok(!page.edges.is_empty())
    }
}

/// Loads the demo data set into the default schema's table, unless it is already there.
pub async fn load(store: &Store, model: Arc<Model>) -> Result<DemoOutcome, DemoError> {
    for needed in ["Farm", "Cow", "Chicken", "Image", "Goal", "User", "Team"] {
        if model.type_def(needed).is_none() {
            return Err(DemoError::WrongSchema(format!("{needed} type")));
        }
    }
    let mut loader = Loader {
        model,
        store: store.clone(),
        writes: 0,
    };
    if loader.is_loaded().await? {
        return Ok(DemoOutcome::AlreadyLoaded);
    }

    let logo = loader
        .create("Image", &[("url", "https://example.com/old-macdonald.png")])
        .await?;
    let farm = loader
        .create("Farm", &[("name", "Old MacDonald's"), ("logoId", &logo)])
        .await?;
    let acres = loader.create("Farm", &[("name", "Green Acres")]).await?;
    for (kind, name, farm_id, breed) in [
        ("Cow", "Bessie", &farm, Some("Jersey")),
        ("Cow", "daisy", &farm, Some("Holstein")),
        ("Cow", "Clara", &farm, Some("Jersey")),
        ("Chicken", "Chuck", &farm, None),
        ("Chicken", "Henrietta", &farm, None),
        ("Cow", "Ermintrude", &acres, Some("Highland")),
    ] {
        let mut fields = vec![("name", name), ("farmId", farm_id.as_str())];
        fields.extend(breed.map(|breed| ("breed", breed)));
        loader.create(kind, &fields).await?;
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
                .create("User", &[("name", name), ("email", email)])
                .await?,
        );
    }
    let growth = loader.create("Team", &[("name", "Growth")]).await?;
    let platform = loader.create("Team", &[("name", "Platform")]).await?;
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
        let mut fields = vec![("title", title), ("kind", kind)];
        if let Some(parent) = parent {
            fields.push(("parentId", &ids[parent]));
        }
        let goal = loader.create("Goal", &fields).await?;
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
        .add_edge(
            "TeamMembership",
            &people["Dora Campos"],
            &growth,
            &[("role", "MANAGER")],
        )
        .await?;
    Ok(DemoOutcome::Loaded {
        writes: loader.writes,
    })
}
