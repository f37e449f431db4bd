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

use serde::Deserialize;
use toml::Spanned;

use crate::model::{CustomField, FieldKind, Model, ScalarType, TypeDef};

/// Most edges an `incoming` step reads.
pub const MAX_INCOMING: usize = 1000;

#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ResolverError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueRef {
    Literal(String),
    Argument(String),
    Parent(String),
    Claim(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Incoming {
        edge: String,
        slot: u8,
        role_sort: Option<String>,
    },
    Query {
        relation: String,
        slot: u8,
        element: String,
    },
    Targets {
        edge: String,
        role_sort: Option<String>,
    },
    Load {
        allowed: Vec<String>,
    },
    FilterId(ValueRef),
    FilterField(String, ValueRef),
    Distinct,
}

/// What the field answers, from its declared type.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Nodes {
        list: bool,
        allowed: Vec<String>,
        is_abstract: bool,
    },
    Ids {
        list: bool,
    },
    Exists,
    Count,
}

/// A validated resolver.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// `resolvers/Team.goalLeads.toml`.
    pub file: String,
    pub type_name: String,
    pub field: String,
    pub description: String,
    pub steps: Vec<Step>,
    pub output: Output,
}

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    description: String,
    #[serde(default)]
    step: Vec<Spanned<StepSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepSpec {
    op: String,
    edge: Option<String>,
    role: Option<String>,
    relation: Option<String>,
    id: Option<String>,
    field: Option<String>,
    equals: Option<String>,
}

/// What the steps hold so far: nodes or ids of these types; `single` while it is the parent.
#[derive(Debug, Clone)]
struct Shape {
    nodes: bool,
    types: Vec<String>,
    single: bool,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn parse(file: &str, stem: &str, text: &str, model: &Model) -> Result<Pipeline, ResolverError> {
    let error = |line: usize, message: String| ResolverError {
        file: file.to_owned(),
        line,
        message,
    };
    let (type_name, field_name) = stem
        .split_once('.')
        .ok_or_else(|| error(1, "name the file <Type>.<field>.toml".to_owned()))?;
    let type_def = model.type_def(type_name).ok_or_else(|| {
        error(
            1,
            format!("unknown type {type_name}: the file names a @model type of the schema"),
        )
    })?;
    let field = type_def.field(field_name).ok_or_else(|| {
        error(
            1,
            format!("{type_name} has no field {field_name}: declare it in the schema first"),
        )
    })?;
    let spec: FileSpec = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        error(line, e.message().to_owned())
    })?;
    let arguments: Vec<&str> = match &field.kind {
        FieldKind::Custom(custom) => custom.arguments.iter().map(|a| a.name.as_str()).collect(),
        _ => Vec::new(),
    };
    let output =
        output_of(model, type_def, field_name, &field.kind).map_err(|message| error(1, message))?;

    let mut shape = Shape {
        nodes: true,
        types: vec![type_def.name.clone()],
        single: true,
    };
    let mut steps = Vec::new();
    for spanned in &spec.step {
        // The line of the step's `[[step]]` header.
        let line = line_of(text, spanned.span().start);
        let step = spanned.get_ref();
        let fail = |message: String| error(line, message);
        let value = |raw: &str| -> Result<ValueRef, ResolverError> {
            value_ref(raw, type_def, &arguments).map_err(fail)
        };
        let needs = |key: &str, value: &Option<String>| -> Result<String, ResolverError> {
            value
                .clone()
                .ok_or_else(|| fail(format!("{}: needs `{key}`", step.op)))
        };
        let allowed: &[&str] = match step.op.as_str() {
            "incoming" | "targets" => &["edge", "role"],
            "query" => &["relation"],
            "filter" => &["id", "field", "equals"],
            _ => &[],
        };
        let given = [
            ("edge", step.edge.is_some()),
            ("role", step.role.is_some()),
            ("relation", step.relation.is_some()),
            ("id", step.id.is_some()),
            ("field", step.field.is_some()),
            ("equals", step.equals.is_some()),
        ];
        if let Some((key, _)) = given
            .iter()
            .find(|(key, present)| *present && !allowed.contains(key))
        {
            return Err(fail(format!(
                "{}: `{key}` does not apply to this op",
                step.op
            )));
        }
        let next = match step.op.as_str() {
            "incoming" => {
                if !shape.single {
                    return Err(fail("incoming: only from the parent; after a step that gives many nodes it would make one Query per node".to_owned()));
                }
                let edge_name = needs("edge", &step.edge)?;
                let edge = model
                    .edge_def(&edge_name)
                    .ok_or_else(|| fail(format!("incoming: unknown edge type {edge_name}")))?;
                let targets = model.possible_types(&edge.to);
                if !shape.types.iter().any(|t| targets.contains(&t.as_str())) {
                    return Err(fail(format!(
                        "incoming: {edge_name} edges point to {}, not to {}",
                        edge.to,
                        shape.types.join(" | ")
                    )));
                }
                steps.push(Step::Incoming {
                    edge: edge_name.clone(),
                    slot: edge.slot,
                    role_sort: role_sort(model, &edge_name, step.role.as_deref()).map_err(fail)?,
                });
                Shape {
                    nodes: false,
                    types: vec![edge.from.clone()],
                    single: false,
                }
            }
            "query" => {
                if !shape.single {
                    return Err(fail("query: only from the parent; after a step that gives many nodes it would make one Query per node".to_owned()));
                }
                let relation = needs("relation", &step.relation)?;
                let (owner, name) = relation.split_once('.').unwrap_or(("", ""));
                let has_many = model
                    .type_def(owner)
                    .filter(|_| shape.types.iter().any(|t| t == owner))
                    .and_then(|t| t.field(name))
                    .and_then(|f| match &f.kind {
                        FieldKind::HasMany(has_many) => Some(has_many.clone()),
                        _ => None,
                    })
                    .ok_or_else(|| {
                        fail(format!(
                            "query: {relation} is not a @hasMany relation of {}",
                            shape.types.join(" | ")
                        ))
                    })?;
                steps.push(Step::Query {
                    relation: relation.clone(),
                    slot: has_many.slot,
                    element: has_many.element.clone(),
                });
                Shape {
                    nodes: true,
                    types: model
                        .possible_types(&has_many.element)
                        .into_iter()
                        .map(str::to_owned)
                        .collect(),
                    single: false,
                }
            }
            "targets" => {
                if !shape.nodes {
                    return Err(fail(
                        "targets: reads nodes' edge sets; add a `load` step before it".to_owned(),
                    ));
                }
                let edge_name = needs("edge", &step.edge)?;
                let edge = model
                    .edge_def(&edge_name)
                    .ok_or_else(|| fail(format!("targets: unknown edge type {edge_name}")))?;
                if !edge.edge_set {
                    return Err(fail(format!(
                        "targets: {edge_name} keeps no edge set (edgeSet: false)"
                    )));
                }
                if !shape.types.iter().all(|t| *t == edge.from) {
                    return Err(fail(format!(
                        "targets: {edge_name} edges start at {}, not at {}",
                        edge.from,
                        shape.types.join(" | ")
                    )));
                }
                steps.push(Step::Targets {
                    edge: edge_name.clone(),
                    role_sort: role_sort(model, &edge_name, step.role.as_deref()).map_err(fail)?,
                });
                Shape {
                    nodes: false,
                    types: model
                        .possible_types(&edge.to)
                        .into_iter()
                        .map(str::to_owned)
                        .collect(),
                    single: false,
                }
            }
            "load" => {
                if shape.nodes {
                    return Err(fail("load: the nodes are already loaded".to_owned()));
                }
                steps.push(Step::Load {
                    allowed: shape.types.clone(),
                });
                Shape {
                    nodes: true,
                    ..shape.clone()
                }
            }
            "filter" => {
                match (&step.id, &step.field, &step.equals) {
                    (Some(id), None, None) => steps.push(Step::FilterId(value(id)?)),
                    (None, Some(field), Some(equals)) => {
                        if !shape.nodes {
                            return Err(fail(
                                "filter: a field filter needs nodes; add a `load` step before it"
                                    .to_owned(),
                            ));
                        }
                        let known = shape.types.iter().all(|t| {
                            field == "id"
                                || model
                                    .type_def(t)
                                    .and_then(|t| t.field(field))
                                    .is_some_and(|f| f.scalar().is_some())
                        });
                        if !known {
                            return Err(fail(format!(
                                "filter: {field} is not a stored field of {}",
                                shape.types.join(" | ")
                            )));
                        }
                        steps.push(Step::FilterField(field.clone(), value(equals)?));
                    }
                    _ => {
                        return Err(fail(
                            "filter: give `id = …`, or `field = …` with `equals = …`".to_owned(),
                        ));
                    }
                }
                shape.clone()
            }
            "distinct" => {
                steps.push(Step::Distinct);
                shape.clone()
            }
            other => {
                return Err(fail(format!(
                    "unknown op {other:?}: use incoming, query, targets, load, filter or distinct"
                )));
            }
        };
        shape = next;
    }
    check_output(&output, &shape).map_err(|message| error(line_of(text, text.len()), message))?;
    Ok(Pipeline {
        file: file.to_owned(),
        type_name: type_def.name.clone(),
        field: field_name.to_owned(),
        description: spec.description,
        steps,
        output,
    })
}

fn value_ref(raw: &str, type_def: &TypeDef, arguments: &[&str]) -> Result<ValueRef, String> {
    if let Some(name) = raw.strip_prefix("$args.") {
        if !arguments.contains(&name) {
            return Err(format!("{raw}: the field has no argument {name}"));
        }
        return Ok(ValueRef::Argument(name.to_owned()));
    }
    if let Some(name) = raw.strip_prefix("$parent.") {
        if name != "id" && type_def.field(name).and_then(|f| f.scalar()).is_none() {
            return Err(format!(
                "{raw}: {} has no stored field {name}",
                type_def.name
            ));
        }
        return Ok(ValueRef::Parent(name.to_owned()));
    }
    if let Some(name) = raw.strip_prefix("$claims.") {
        return Ok(ValueRef::Claim(name.to_owned()));
    }
    if raw.starts_with('$') {
        return Err(format!(
            "{raw}: values start with $args., $parent. or $claims."
        ));
    }
    Ok(ValueRef::Literal(raw.to_owned()))
}

/// The sort value of `role` for an edge type that sorts by a ranked enum.
fn role_sort(model: &Model, edge_name: &str, role: Option<&str>) -> Result<Option<String>, String> {
    let Some(role) = role else {
        return Ok(None);
    };
    let edge = model.edge_def(edge_name).ok_or("unknown edge")?;
    let Some(ScalarType::Enum(enum_name)) = edge.sort_scalar() else {
        return Err(format!("role: {edge_name} does not sort by an enum"));
    };
    let known = model
        .enum_def(enum_name)
        .is_some_and(|e| e.values.iter().any(|v| v.name == role));
    if !known {
        return Err(format!("role: {role} is not a value of {enum_name}"));
    }
    Ok(Some(crate::keys::enum_sort_value(model, enum_name, role)))
}

fn output_of(
    model: &Model,
    type_def: &TypeDef,
    field: &str,
    kind: &FieldKind,
) -> Result<Output, String> {
    let (element, list) = match kind {
        FieldKind::Custom(CustomField { element, list, .. }) => (element.clone(), *list),
        FieldKind::Targets { element, .. } => (element.clone(), true),
        FieldKind::BelongsTo { target, .. } => (target.clone(), false),
        _ => {
            return Err(format!(
                "{}.{field} is a stored field or a connection; a resolver can replace a custom field, a @targets list or a @belongsTo field",
                type_def.name
            ));
        }
    };
    if model.type_def(&element).is_some() || model.union_def(&element).is_some() {
        return Ok(Output::Nodes {
            list,
            allowed: model
                .possible_types(&element)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            is_abstract: model.union_def(&element).is_some(),
        });
    }
    match (element.as_str(), list) {
        ("ID", list) => Ok(Output::Ids { list }),
        ("Boolean", false) => Ok(Output::Exists),
        ("Int", false) => Ok(Output::Count),
        _ => Err(format!(
            "{}.{field}: a resolver answers nodes, ids, Boolean (whether anything is found) or Int (how many), not {element}",
            type_def.name
        )),
    }
}

/// Nodes of types the field does not return are dropped when it answers (a `role` can narrow
/// a union's edges to one member type), so the steps need only reach some of its types.
fn check_output(output: &Output, shape: &Shape) -> Result<(), String> {
    if let Output::Nodes { allowed, .. } = output
        && !shape.types.iter().any(|t| allowed.contains(t))
    {
        return Err(format!(
            "the steps give {}, but the field returns {}",
            shape.types.join(" | "),
            allowed.join(" | ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const SCHEMA: &str = include_str!("../../schema.graphql");

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

    const LEADS: &str = "description = \"d\"\n[[step]]\nop = \"incoming\"\nedge = \"GoalMembership\"\n[[step]]\nop = \"load\"\n[[step]]\nop = \"targets\"\nedge = \"GoalMembership\"\nrole = \"LEAD\"\n";

    #[test]
    fn the_shipped_resolver_loads() {
        let resolvers = load(&[("Team.goalLeads.toml", LEADS)]).expect("valid");
        let pipeline = resolvers.get("Team", "goalLeads").expect("loaded");
        assert_eq!(pipeline.steps.len(), 3);
        assert!(matches!(pipeline.output, Output::Nodes { list: true, .. }));
    }

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
