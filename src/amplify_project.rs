//! `--amplify-project DIR`: an Amplify Gen 1 project served from its own files. The schema is
//! the project's one API's (`amplify/backend/api/<name>/schema.graphql`, or its `schema/`
//! folder); Amplify's feature flags come from `amplify/cli.json` as for any schema; a flag the
//! file does not name (an older project's `cli.json`) is settled by the API the project keeps
//! as deployed (`src/graphql/schema.json`, the introspection `amplify codegen` downloads, or
//! `amplify/backend/api/<name>/build/schema.graphql`): of the values the flags may take, those
//! whose API is nearest to it. `transform.conf.json`'s conflict detection is read as beside any
//! schema (`app::with_cli_json`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_graphql_parser::Positioned;
use async_graphql_parser::types::{
    EnumValueDefinition, InputValueDefinition, TypeKind, TypeSystemDefinition,
};

use crate::app::{self, StartupError};
use crate::model::{DEPLOYED_API, DialectChoice};

/// The flags whose values change the API Amplify generates, so that a deployed API tells them.
const VISIBLE_FLAGS: [&str; 4] = [
    "transformerVersion",
    "improvePluralization",
    "enableAutoIndexQueryNames",
    "respectPrimaryKeyAttributesOnConnectionField",
];

/// An Amplify project's API, as its files hold it.
#[derive(Debug)]
pub struct AmplifyProject {
    /// `amplify/backend/api/<name>/`.
    pub api_dir: PathBuf,
    /// Its `schema.graphql`, or its `schema/` folder.
    pub schema: PathBuf,
    /// The deployed API the project keeps, if any.
    pub deployed: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error(
        "{0}: no Amplify API here: an Amplify project keeps its API in \
         amplify/backend/api/<name>/ with a schema.graphql or a schema/ folder"
    )]
    NoApi(String),
    #[error("{dir}: the project has {} APIs ({}); serve one with --schema", names.len(), names.join(", "))]
    SeveralApis { dir: String, names: Vec<String> },
    #[error("{path}: the deployed API does not read: {message}")]
    Deployed { path: String, message: String },
    #[error(transparent)]
    Startup(#[from] StartupError),
}

impl AmplifyProject {
    /// The project at `root`: its one API.
    pub fn open(root: &Path) -> Result<AmplifyProject, ProjectError> {
        let apis = root.join("amplify").join("backend").join("api");
        let mut found: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(&apis)
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok().map(|e| e.path()))
                    .filter_map(|dir| {
                        let file = dir.join("schema.graphql");
                        let folder = dir.join("schema");
                        let schema = [file, folder].into_iter().find(|p| p.exists())?;
                        Some((dir, schema))
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        let (api_dir, schema) = match found.len() {
            0 => return Err(ProjectError::NoApi(root.display().to_string())),
            1 => found.remove(0),
            _ => {
                return Err(ProjectError::SeveralApis {
                    dir: apis.display().to_string(),
                    names: found
                        .iter()
                        .filter_map(|(dir, _)| dir.file_name())
                        .map(|name| name.to_string_lossy().into_owned())
                        .collect(),
                });
            }
        };
        let deployed = [
            root.join("src").join("graphql").join("schema.json"),
            api_dir.join("build").join("schema.graphql"),
        ]
        .into_iter()
        .find(|path| path.is_file());
        Ok(AmplifyProject {
            api_dir,
            schema,
            deployed,
        })
    }

    /// `choice` with `cli.json`'s flags, and the visible flags neither it nor the command line
    /// names settled by the deployed API (none without one).
    pub fn settle(&self, choice: &DialectChoice) -> Result<DialectChoice, ProjectError> {
        let choice = app::with_cli_json(&self.schema, choice)?;
        let Some(deployed) = &self.deployed else {
            return Ok(choice);
        };
        let wanted = deployed_api(deployed)?;
        let open: Vec<&str> = VISIBLE_FLAGS
            .iter()
            .copied()
            .filter(|flag| !choice.flags.chose(flag))
            .collect();
        let mut best: Option<(usize, DialectChoice)> = None;
        for values in 0..(1u32 << open.len()) {
            let mut candidate = choice.clone();
            for (bit, flag) in open.iter().enumerate() {
                let text = match *flag {
                    "transformerVersion" if values & (1 << bit) != 0 => "1",
                    "transformerVersion" => "2",
                    _ => ["false", "true"][usize::from(values & (1 << bit) != 0)],
                };
                candidate
                    .flags
                    .set_text(flag, text, DEPLOYED_API)
                    .map_err(|message| ProjectError::Deployed {
                        path: deployed.display().to_string(),
                        message,
                    })?;
            }
            let Some(served) = self.served_api(&candidate) else {
                continue;
            };
            let distance = served.symmetric_difference(&wanted).count();
            if best.as_ref().is_none_or(|(least, _)| distance < *least) {
                best = Some((distance, candidate));
            }
        }
        let Some((distance, settled)) = best else {
            tracing::warn!(
                deployed = %deployed.display(),
                "no value of the flags lets the schema load: none is settled"
            );
            return Ok(choice);
        };
        tracing::info!(
            deployed = %deployed.display(),
            lines_apart = distance,
            flags = ?settled.flags.describe(),
            "settled Amplify's feature flags by the deployed API"
        );
        Ok(settled)
    }

    /// The lines of Amplify's API (without tablegraph's additions) the schema gets with
    /// `choice`, if it loads.
    fn served_api(&self, choice: &DialectChoice) -> Option<BTreeSet<String>> {
        let strict = DialectChoice {
            strict: true,
            ..choice.clone()
        };
        // As it is served: with its resolver files and slot pins.
        let (model, resolvers) = app::load_schema(&self.schema, None, &strict).ok()?;
        let sdl = crate::graphql::print_sdl(Arc::new(model), Arc::new(resolvers)).ok()?;
        Some(sdl_lines(&sdl))
    }
}

/// The deployed API at `path` (introspection JSON or SDL) as lines `Type.field: Type`.
fn deployed_api(path: &Path) -> Result<BTreeSet<String>, ProjectError> {
    let error = |message: String| ProjectError::Deployed {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    if path.extension().is_some_and(|e| e == "json") {
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| error(e.to_string()))?;
        let schema = json
            .get("data")
            .unwrap_or(&json)
            .get("__schema")
            .ok_or_else(|| error("no __schema: not an introspection".to_owned()))?;
        return Ok(introspection_lines(schema));
    }
    let lines = sdl_lines(&text);
    if lines.is_empty() {
        return Err(error("no types: not a GraphQL schema".to_owned()));
    }
    Ok(lines)
}

/// The fields of an SDL's object, interface and input types, as `Type.field: Type`, and its
/// enums' values.
fn sdl_lines(sdl: &str) -> BTreeSet<String> {
    let Ok(document) = async_graphql_parser::parse_schema(sdl) else {
        return BTreeSet::new();
    };
    let mut lines = BTreeSet::new();
    for definition in &document.definitions {
        let TypeSystemDefinition::Type(definition) = definition else {
            continue;
        };
        let name = definition.node.name.node.as_str();
        let fields = match &definition.node.kind {
            TypeKind::Object(object) => &object.fields,
            TypeKind::Interface(interface) => &interface.fields,
            TypeKind::InputObject(input) => {
                let typed = |f: &Positioned<InputValueDefinition>| {
                    format!("{name}.{}: {}", f.node.name.node, f.node.ty.node)
                };
                lines.extend(input.fields.iter().map(typed));
                continue;
            }
            TypeKind::Enum(values) => {
                let value =
                    |v: &Positioned<EnumValueDefinition>| format!("{name}.{}", v.node.value.node);
                lines.extend(values.values.iter().map(value));
                continue;
            }
            _ => continue,
        };
        lines.extend(
            fields
                .iter()
                .map(|f| format!("{name}.{}: {}", f.node.name.node, f.node.ty.node)),
        );
    }
    lines
}

/// [`sdl_lines`] of an introspection's `__schema`, leaving out GraphQL's own types.
fn introspection_lines(schema: &serde_json::Value) -> BTreeSet<String> {
    fn type_of(ty: &serde_json::Value) -> String {
        match ty["kind"].as_str() {
            Some("NON_NULL") => format!("{}!", type_of(&ty["ofType"])),
            Some("LIST") => format!("[{}]", type_of(&ty["ofType"])),
            _ => ty["name"].as_str().unwrap_or_default().to_owned(),
        }
    }
    let mut lines = BTreeSet::new();
    let types = schema["types"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for ty in types {
        let name = ty["name"].as_str().unwrap_or_default();
        if name.starts_with("__") {
            continue;
        }
        for key in ["fields", "inputFields"] {
            for field in ty[key].as_array().map(Vec::as_slice).unwrap_or_default() {
                let field_name = field["name"].as_str().unwrap_or_default();
                lines.insert(format!("{name}.{field_name}: {}", type_of(&field["type"])));
            }
        }
        for value in ty["enumValues"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            lines.insert(format!(
                "{name}.{}",
                value["name"].as_str().unwrap_or_default()
            ));
        }
    }
    lines
}
