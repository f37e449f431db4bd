//! Conflict detection (AppSync's `SyncConfig`, which DataStore needs): which models keep
//! Amplify's `_version`, `_deleted` and `_lastChangedAt`, and how a write with a stale
//! `_version` is resolved. Chosen for the whole API (`--conflict-detection VERSION`,
//! `--conflict-handler`) or per model, as `transform.conf.json`'s `ResolverConfig` says.

use std::collections::BTreeMap;

use serde_json::Value;

/// How a write that names a stale `_version` is resolved (AppSync's `conflictHandler`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictHandler {
    /// The write's fields are merged into the stored node by AppSync's Automerge rules, and
    /// written on the stored version (the default).
    Automerge,
    /// The write is refused (`ConflictUnhandled`), with the stored node in the error's data.
    OptimisticConcurrency,
    /// The named function decides (`LambdaConflictHandler`).
    Lambda(String),
}

impl ConflictHandler {
    /// The handler AppSync's name (`AUTOMERGE`, `OPTIMISTIC_CONCURRENCY`, `LAMBDA`) names; a
    /// Lambda handler takes its function's name.
    pub fn named(name: &str, function: Option<&str>) -> Result<ConflictHandler, String> {
        match (name, function) {
            ("AUTOMERGE", _) => Ok(ConflictHandler::Automerge),
            ("OPTIMISTIC_CONCURRENCY", _) => Ok(ConflictHandler::OptimisticConcurrency),
            ("LAMBDA", Some(function)) => Ok(ConflictHandler::Lambda(function.to_owned())),
            ("LAMBDA", None) => {
                Err("the LAMBDA conflict handler needs its function's name".to_owned())
            }
            _ => Err(format!(
                "unknown conflict handler {name}: AUTOMERGE, OPTIMISTIC_CONCURRENCY or LAMBDA"
            )),
        }
    }

    /// AppSync's name of the handler.
    pub fn name(&self) -> &'static str {
        match self {
            ConflictHandler::Automerge => "AUTOMERGE",
            ConflictHandler::OptimisticConcurrency => "OPTIMISTIC_CONCURRENCY",
            ConflictHandler::Lambda(_) => "LAMBDA",
        }
    }
}

/// Which models detect conflicts, and with which handler.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConflictConfig {
    /// Every model's (`ResolverConfig.project`, or the command line's); `None`: none.
    pub project: Option<ConflictHandler>,
    /// A model's own choice (`ResolverConfig.models.<Type>`), over the project's; `None`
    /// turns detection off for it.
    pub models: BTreeMap<String, Option<ConflictHandler>>,
    /// Set by the command line, which then wins over `transform.conf.json`.
    pub chosen: bool,
    /// How long a write stays in its type's delta record, in minutes (AppSync's
    /// `DeltaSyncTableTTL`, `--delta-sync-table-ttl`); [`DELTA_SYNC_MINUTES`] when not given.
    pub delta_sync_minutes: Option<u32>,
    /// How far before `lastSync` a delta sync reads, in milliseconds ([`DELTA_MARGIN_MS`]
    /// when not given; tests that count a delta's writes exactly give 0).
    pub delta_margin_ms: Option<i64>,
}

/// A write is stamped when it is planned and commits a moment after, and a base sync's type
/// index may lag its table by as much: a delta sync reads the writes stamped this long before
/// its `lastSync` again, so that none falls between two syncs. DataStore keeps what it already
/// has by `_version`, so a write read twice changes nothing.
pub const DELTA_MARGIN_MS: i64 = 1_000;

/// Amplify's `DeltaSyncTableTTL`: a sync whose `lastSync` is more recent than this reads the
/// changes since, an older one the whole type.
pub const DELTA_SYNC_MINUTES: u32 = 30;

impl ConflictConfig {
    /// The choice of `--conflict-detection` (`VERSION` or `NONE`), `--conflict-handler` and
    /// `--lambda-conflict-handler`.
    pub fn from_arguments(
        detection: &str,
        handler: Option<&str>,
        lambda: Option<&str>,
    ) -> Result<ConflictConfig, String> {
        let project = match detection {
            "VERSION" => Some(ConflictHandler::named(
                handler.unwrap_or("AUTOMERGE"),
                lambda,
            )?),
            "NONE" => None,
            other => {
                return Err(format!(
                    "unknown conflict detection {other}: VERSION or NONE"
                ));
            }
        };
        Ok(ConflictConfig {
            project,
            models: BTreeMap::new(),
            chosen: true,
            delta_sync_minutes: None,
            delta_margin_ms: None,
        })
    }

    /// Reads `transform.conf.json`'s `ResolverConfig`, unless the command line chose.
    pub fn read_transform_conf(&mut self, text: &str) -> Result<(), String> {
        if self.chosen {
            return Ok(());
        }
        let conf: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let Some(resolvers) = conf.get("ResolverConfig") else {
            return Ok(());
        };
        if let Some(project) = resolvers.get("project") {
            self.project =
                sync_config(project).map_err(|e| format!("ResolverConfig.project: {e}"))?;
        }
        let models = resolvers.get("models").and_then(Value::as_object);
        for (name, config) in models.into_iter().flatten() {
            let handler =
                sync_config(config).map_err(|e| format!("ResolverConfig.models.{name}: {e}"))?;
            self.models.insert(name.clone(), handler);
        }
        Ok(())
    }

    /// The handler of the model `name`, if it detects conflicts.
    pub fn for_model(&self, name: &str) -> Option<ConflictHandler> {
        match self.models.get(name) {
            Some(own) => own.clone(),
            None => self.project.clone(),
        }
    }

    /// The delta window, in milliseconds.
    pub fn delta_window_millis(&self) -> i64 {
        i64::from(self.delta_sync_minutes.unwrap_or(DELTA_SYNC_MINUTES)) * 60_000
    }

    /// How far before `lastSync` a delta sync reads, in milliseconds.
    pub fn delta_margin_millis(&self) -> i64 {
        self.delta_margin_ms.unwrap_or(DELTA_MARGIN_MS)
    }

    /// Whether any model may detect conflicts.
    pub fn any(&self) -> bool {
        self.project.is_some() || self.models.values().any(Option::is_some)
    }
}

/// One `SyncConfig` of `transform.conf.json`: `ConflictDetection`, `ConflictHandler` and
/// `LambdaConflictHandler.name`.
fn sync_config(config: &Value) -> Result<Option<ConflictHandler>, String> {
    let text = |name: &str| config.get(name).and_then(Value::as_str);
    match text("ConflictDetection") {
        Some("VERSION") => {}
        None | Some("NONE") => return Ok(None),
        Some(other) => return Err(format!("unknown ConflictDetection {other}")),
    }
    let function = config
        .get("LambdaConflictHandler")
        .and_then(|lambda| lambda.get("name"))
        .and_then(Value::as_str);
    ConflictHandler::named(text("ConflictHandler").unwrap_or("AUTOMERGE"), function).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_own_config_wins_over_the_projects_and_the_command_line_over_both() {
        let conf = r#"{ "ResolverConfig": {
            "project": { "ConflictHandler": "AUTOMERGE", "ConflictDetection": "VERSION" },
            "models": {
                "Order": { "ConflictHandler": "OPTIMISTIC_CONCURRENCY", "ConflictDetection": "VERSION" },
                "Log": { "ConflictDetection": "NONE" },
                "Vote": { "ConflictHandler": "LAMBDA", "ConflictDetection": "VERSION",
                          "LambdaConflictHandler": { "name": "resolveVote", "lambdaArn": "arn" } }
            } } }"#;
        let mut config = ConflictConfig::default();
        config.read_transform_conf(conf).expect("reads");
        assert_eq!(config.for_model("Post"), Some(ConflictHandler::Automerge));
        assert_eq!(
            config.for_model("Order"),
            Some(ConflictHandler::OptimisticConcurrency)
        );
        assert_eq!(config.for_model("Log"), None);
        assert_eq!(
            config.for_model("Vote"),
            Some(ConflictHandler::Lambda("resolveVote".to_owned()))
        );
        let mut chosen = ConflictConfig::from_arguments("NONE", None, None).expect("reads");
        chosen.read_transform_conf(conf).expect("reads");
        assert_eq!(chosen.for_model("Post"), None);
        let mut lambda = ConflictConfig::from_arguments("VERSION", Some("LAMBDA"), Some("resolve"))
            .expect("reads");
        lambda.read_transform_conf(conf).expect("reads");
        assert_eq!(
            lambda.for_model("Order"),
            Some(ConflictHandler::Lambda("resolve".to_owned()))
        );
    }

    #[test]
    fn unknown_names_are_refused_with_appsyncs_names() {
        let refused = ConflictConfig::from_arguments("VERSION", Some("LAST_WRITER"), None);
        assert!(refused.is_err_and(|e| e.contains("OPTIMISTIC_CONCURRENCY")));
        let mut config = ConflictConfig::default();
        let lambda = r#"{ "ResolverConfig": { "project": { "ConflictHandler": "LAMBDA", "ConflictDetection": "VERSION" } } }"#;
        assert!(
            config
                .read_transform_conf(lambda)
                .is_err_and(|e| e.contains("function"))
        );
    }
}
