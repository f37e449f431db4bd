//! `resolvers/<Type>.<field>.toml`: declarative resolvers for the access patterns the
//! directives do not cover, validated against the model at start-up; or, in a file that says
//! `function = "NAME"` (or `functions = [...]`), the field's binding to functions, as AppSync's
//! resolver map binds fields outside the schema (the model reads those bindings,
//! [`Resolvers::functions_in`]).
//!
//! A resolver is a short pipeline of the primitives the generated resolvers use. It starts from
//! the parent node and each step turns the current nodes or ids into the next:
//!
//! | step | needs | gives | storage |
//! |---|---|---|---|
//! | `incoming` (`edge`, `role`) | the parent | ids of the edges' sources | one Query of the edge's inverse slot |
//! | `query` (`relation = "Type.field"`) | the parent | the relation's nodes | one Query of the relation's slot |
//! | `targets` (`edge`, `role`) | nodes | ids of their edge-set targets | none |
//! | `load` | ids | nodes | one batched read per level, shared with every other resolver |
//! | `filter` (`id` or `field` + `equals`) | ids or nodes | those that match | none |
//! | `distinct` | ids or nodes | each once, first seen first | none |
//!
//! Values (`to`, `equals`, `id`) are literals or `$args.<name>`, `$parent.<field>`,
//! `$claims.<name>` (a verified token's claim). The field's declared type shapes the answer:
//! nodes (loaded when the pipeline ends with ids, and checked against the declared type), ids,
//! `Boolean` (whether anything is left) or `Int` (how many).
//!
//! Invariant: a loaded resolver is consistent with the model, and makes no Scan and no
//! unbatched per-item call: `incoming` and `query` may only start from the parent.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::model::{FieldKind, Model};

mod parse;
mod pipeline;

use parse::parse;
pub use pipeline::{MAX_INCOMING, Output, Pipeline, ResolverError, Step, ValueRef};

/// Every resolver of a schema, by type and field.
#[derive(Debug, Clone, Default)]
pub struct Resolvers {
    by_field: HashMap<(String, String), Arc<Pipeline>>,
}

impl Resolvers {
    pub fn get(&self, type_name: &str, field: &str) -> Option<&Arc<Pipeline>> {
        self.by_field.get(&(type_name.to_owned(), field.to_owned()))
    }

    /// Every resolver, sorted by type and field.
    pub fn all(&self) -> Vec<&Arc<Pipeline>> {
        let mut all: Vec<&Arc<Pipeline>> = self.by_field.values().collect();
        all.sort_by(|a, b| (&a.type_name, &a.field).cmp(&(&b.type_name, &b.field)));
        all
    }

    /// The `Type.field` names of the pipeline files in `dir`, for the model to know which
    /// fields are computed.
    pub fn fields_in(dir: &Path) -> std::collections::BTreeSet<String> {
        files(dir)
            .into_iter()
            .filter(|file| binding(&file.text).is_none())
            .map(|file| file.stem)
            .collect()
    }

    /// The fields the files of `dir` bind to functions (`function = "NAME"`, or `functions =
    /// [...]` run in order), as AppSync binds a field to a Lambda data source outside the
    /// schema: `Type.field` → the functions.
    pub fn functions_in(
        dir: &Path,
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>, ResolverError> {
        let mut bound = std::collections::BTreeMap::new();
        for file in files(dir) {
            if let Some(spec) = binding(&file.text) {
                let functions = spec.map_err(|(line, message)| ResolverError {
                    file: file.shown.clone(),
                    line,
                    message,
                })?;
                bound.insert(file.stem, functions);
            }
        }
        Ok(bound)
    }

    /// Reads every `*.toml` of `dir` (none when it does not exist) and checks it against the
    /// model, which was read knowing these files (see [`Resolvers::fields_in`] and
    /// [`Resolvers::functions_in`]).
    pub fn load(dir: &Path, model: &Model) -> Result<Resolvers, ResolverError> {
        let mut by_field = HashMap::new();
        for file in files(dir) {
            if let Some(reason) = &file.read_error {
                return Err(ResolverError {
                    file: file.shown.clone(),
                    line: 1,
                    message: format!("cannot read it: {reason}"),
                });
            }
            if binding(&file.text).is_some() {
                check_binding(&file.shown, &file.stem, model)?;
                continue;
            }
            let pipeline = parse(&file.shown, &file.stem, &file.text, model)?;
            by_field.insert(
                (pipeline.type_name.clone(), pipeline.field.clone()),
                Arc::new(pipeline),
            );
        }
        Ok(Resolvers { by_field })
    }
}

/// A resolver file as read.
struct File {
    /// Its path, for errors.
    shown: String,
    /// `Type.field`.
    stem: String,
    /// Empty when it could not be read: [`File::read_error`] says why.
    text: String,
    read_error: Option<String>,
}

/// The `*.toml` files of `dir`, by name.
fn files(dir: &Path) -> Vec<File> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let read = std::fs::read_to_string(&path);
            File {
                shown: path.display().to_string(),
                stem: path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                read_error: read.as_ref().err().map(ToString::to_string),
                text: read.unwrap_or_default(),
            }
        })
        .collect()
}

/// A file binding its field to functions: `function = "NAME"` or `functions = ["A", "B"]`,
/// and optionally a `description`. `None` for a pipeline file; the functions, or (line, why
/// not) for a binding that is wrong.
fn binding(text: &str) -> Option<Result<Vec<String>, (usize, String)>> {
    let table: toml::Table = toml::from_str(text).ok()?;
    if !table.contains_key("function") && !table.contains_key("functions") {
        return None;
    }
    const KEYS: [&str; 3] = ["description", "function", "functions"];
    if let Some(unknown) = table.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Some(Err((
            1,
            format!(
                "a file binding functions has no key {unknown}; known: {}",
                KEYS.join(", ")
            ),
        )));
    }
    let name = |value: &toml::Value| value.as_str().filter(|n| !n.is_empty()).map(str::to_owned);
    Some(
        match (table.get("function"), table.get("functions")) {
            (Some(function), None) => name(function).map(|f| vec![f]),
            (None, Some(toml::Value::Array(functions))) if !functions.is_empty() => {
                functions.iter().map(name).collect()
            }
            _ => None,
        }
        .ok_or_else(|| {
            (
                1,
                "give function = \"NAME\" or functions = [\"A\", \"B\"], not both, no name empty"
                    .to_owned(),
            )
        }),
    )
}

/// Refuses a binding file that names no field the model bound: one the schema does not
/// declare on `Query`, `Mutation` or an object type.
fn check_binding(file: &str, stem: &str, model: &Model) -> Result<(), ResolverError> {
    let bound = stem.split_once('.').is_some_and(|(type_name, field)| {
        model
            .own_fields
            .iter()
            .any(|own| own.root.name() == type_name && own.name == field && own.direct)
            || model
                .type_def(type_name)
                .map(|t| &t.fields)
                .or_else(|| {
                    model
                        .objects
                        .iter()
                        .find(|o| o.name == type_name)
                        .map(|o| &o.fields)
                })
                .and_then(|fields| fields.iter().find(|f| f.name == field))
                .is_some_and(|f| matches!(f.kind, FieldKind::Function { direct: true, .. }))
    });
    if bound {
        Ok(())
    } else {
        Err(ResolverError {
            file: file.to_owned(),
            line: 1,
            message: format!(
                "{stem} is not a field of type Query, type Mutation or an object type of the \
                 schema; name the file <Type>.<field>.toml after the field it binds"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::parse::tests::LEADS;
    use super::*;

    const SCHEMA: &str = include_str!("../../schema.graphql");

    #[test]
    fn mistakes_name_the_file_and_line() {
        let cases = [
            (
                "Horse.name.toml",
                "description = \"d\"\n",
                "Horse.name.toml:1: unknown type Horse",
            ),
            (
                "Team.rating.toml",
                "description = \"d\"\n",
                "Team.rating.toml:1: Team has no field rating",
            ),
            (
                "Team.goalLeads.toml",
                "description = \"d\"\n[[step]]\nop = \"incoming\"\nedge = \"Likes\"\n",
                "Team.goalLeads.toml:2: incoming: unknown edge type Likes",
            ),
            (
                "Team.goalLeads.toml",
                "description = \"d\"\n[[step]]\nop = \"oops\"\n",
                "Team.goalLeads.toml:2: unknown op \"oops\"",
            ),
            (
                "Team.goalLeads.toml",
                "description = \"d\"\n[[step]]\nop = \"filter\"\nid = \"$args.who\"\n",
                "Team.goalLeads.toml:2: $args.who: the field has no argument who",
            ),
            (
                "Team.goalLeads.toml",
                "description = \"d\"\n[[step]]\nop = \"incoming\"\nedge = \"GoalMembership\"\nrole = \"BOSS\"\n",
                "Team.goalLeads.toml:2: role: BOSS is not a value of GoalRole",
            ),
            (
                "Team.goalLeads.toml",
                "description = \"d\"\n[[step]]\nop = \"incoming\"\nedge = \"GoalMembership\"\n[[step]]\nop = \"load\"\n[[step]]\nop = \"incoming\"\nedge = \"GoalMembership\"\n",
                "Team.goalLeads.toml:7: incoming: only from the parent",
            ),
            (
                "Team.goalLeads.toml",
                "description = \"d\"\nstep = 3\n",
                "Team.goalLeads.toml:2: invalid type",
            ),
            (
                "Team.name.toml",
                LEADS,
                "Team.name.toml:1: Team.name is a stored field",
            ),
        ];
        for (file, text, expected) in cases {
            let mut files = vec![(file, text)];
            if file != "Team.goalLeads.toml" {
                files.push(("Team.goalLeads.toml", LEADS));
            }
            let error = load(&files).expect_err(file);
            assert!(
                error.starts_with(expected),
                "{error:?}, expected {expected:?}"
            );
        }
    }

    /// Loads `files` (name, text) as a resolvers directory of the default schema.
    fn load(files: &[(&str, &str)]) -> Result<Resolvers, String> {
        let dir =
            std::env::temp_dir().join(format!("tablegraph-resolvers-{}", crate::keys::new_id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        for (name, text) in files {
            std::fs::write(dir.join(name), text).expect("a file");
        }
        let resolved: BTreeSet<String> = Resolvers::fields_in(&dir);
        let model =
            Model::parse_with_resolvers("schema.graphql", SCHEMA, &resolved).expect("schema");
        let result = Resolvers::load(&dir, &model).map_err(|e| {
            let text = e.to_string();
            text.rsplit_once('/')
                .map(|(_, tail)| tail.to_owned())
                .unwrap_or(text)
        });
        std::fs::remove_dir_all(&dir).expect("removable");
        result
    }

    #[test]
    fn the_shipped_resolver_loads() {
        let resolvers = load(&[("Team.goalLeads.toml", LEADS)]).expect("valid");
        let pipeline = resolvers.get("Team", "goalLeads").expect("loaded");
        assert_eq!(pipeline.steps.len(), 3);
        assert!(matches!(pipeline.output, Output::Nodes { list: true, .. }));
    }

    #[test]
    fn a_field_no_directive_covers_needs_its_resolver_file() {
        let error = Model::parse("schema.graphql", SCHEMA)
            .expect_err("Team.goalLeads has no resolver")
            .to_string();
        assert!(
            error.starts_with("schema.graphql:91:3: Team.goalLeads: a list of User needs @hasMany")
                && error.ends_with("or a resolver file resolvers/Team.goalLeads.toml"),
            "{error}"
        );
    }
}
