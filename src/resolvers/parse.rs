//! Reading one pipeline file (`resolvers/<Type>.<field>.toml`) into a [`Pipeline`]: the file
//! names a field of a `@model` type, its steps are read in order, each checked against what
//! the steps before it give, and the last step's result against the field's declared type.
//!
//! Every refusal is a small check of its own that says what is wrong and how to mend it; the
//! file and line are added by [`parse`], which only strings the checks together.

use serde::Deserialize;
use toml::Spanned;

use super::pipeline::{Output, Pipeline, ResolverError, Step, ValueRef};
use crate::model::{
    CustomField, EdgeTypeDef, FieldDef, FieldKind, HasMany, Model, ScalarType, TypeDef,
};

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

/// What every step of one file is checked against: the model, the type whose field the file
/// resolves (for `$parent.`) and the field's arguments (for `$args.`).
struct Context<'a> {
    model: &'a Model,
    type_def: &'a TypeDef,
    arguments: &'a [&'a str],
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

pub(super) fn parse(
    file: &str,
    stem: &str,
    text: &str,
    model: &Model,
) -> Result<Pipeline, ResolverError> {
    let error = |line: usize, message: String| ResolverError {
        file: file.to_owned(),
        line,
        message,
    };
    let (type_name, field_name) = split_stem(stem).map_err(|message| error(1, message))?;
    let type_def = known_type(model, type_name).map_err(|message| error(1, message))?;
    let field =
        known_field(type_def, type_name, field_name).map_err(|message| error(1, message))?;
    let spec = read_spec(text).map_err(|(line, message)| error(line, message))?;
    let arguments = arguments_of(&field.kind);
    let output =
        output_of(model, type_def, field_name, &field.kind).map_err(|message| error(1, message))?;

    let cx = Context {
        model,
        type_def,
        arguments: &arguments,
    };
    let mut shape = Shape {
        nodes: true,
        types: vec![type_def.name.clone()],
        single: true,
    };
    let mut steps = Vec::new();
    for spanned in &spec.step {
        // The line of the step's `[[step]]` header.
        let line = line_of(text, spanned.span().start);
        let (step, next) =
            read_step(&cx, &shape, spanned.get_ref()).map_err(|message| error(line, message))?;
        steps.push(step);
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

/// The file's name says which field it resolves: `Type.field`.
fn split_stem(stem: &str) -> Result<(&str, &str), String> {
    stem.split_once('.')
        .ok_or_else(|| "name the file <Type>.<field>.toml".to_owned())
}

fn known_type<'a>(model: &'a Model, type_name: &str) -> Result<&'a TypeDef, String> {
    model.type_def(type_name).ok_or_else(|| {
        format!("unknown type {type_name}: the file names a @model type of the schema")
    })
}

fn known_field<'a>(
    type_def: &'a TypeDef,
    type_name: &str,
    field_name: &str,
) -> Result<&'a FieldDef, String> {
    type_def.field(field_name).ok_or_else(|| {
        format!("{type_name} has no field {field_name}: declare it in the schema first")
    })
}

/// The file's TOML, or the line of its first mistake and TOML's own words for it.
fn read_spec(text: &str) -> Result<FileSpec, (usize, String)> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        (line, e.message().to_owned())
    })
}

/// The names `$args.` may refer to: a custom field's arguments, none for any other field.
fn arguments_of(kind: &FieldKind) -> Vec<&str> {
    match kind {
        FieldKind::Custom(custom) => custom.arguments.iter().map(|a| a.name.as_str()).collect(),
        _ => Vec::new(),
    }
}

/// One step: its keys checked, then the op's own checks; the step and what it gives.
fn read_step(cx: &Context, shape: &Shape, step: &StepSpec) -> Result<(Step, Shape), String> {
    check_keys(step)?;
    match step.op.as_str() {
        "incoming" => incoming(cx, shape, step),
        "query" => query(cx, shape, step),
        "targets" => targets(cx, shape, step),
        "load" => load(shape),
        "filter" => filter(cx, shape, step),
        "distinct" => Ok((Step::Distinct, shape.clone())),
        other => Err(format!(
            "unknown op {other:?}: use incoming, query, targets, load, filter or distinct"
        )),
    }
}

/// A key the op does not read is refused rather than ignored: it is a mistake the author
/// would otherwise not see.
fn check_keys(step: &StepSpec) -> Result<(), String> {
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
    match given
        .iter()
        .find(|(key, present)| *present && !allowed.contains(key))
    {
        Some((key, _)) => Err(format!("{}: `{key}` does not apply to this op", step.op)),
        None => Ok(()),
    }
}

fn needs(step: &StepSpec, key: &str, value: &Option<String>) -> Result<String, String> {
    value
        .clone()
        .ok_or_else(|| format!("{}: needs `{key}`", step.op))
}

/// `incoming` and `query` make one Query of the parent's partition; from many nodes they
/// would make one per node, which the invariant forbids.
fn from_parent(op: &str, shape: &Shape) -> Result<(), String> {
    if shape.single {
        Ok(())
    } else {
        Err(format!(
            "{op}: only from the parent; after a step that gives many nodes it would make one Query per node"
        ))
    }
}

fn known_edge<'a>(model: &'a Model, op: &str, edge_name: &str) -> Result<&'a EdgeTypeDef, String> {
    model
        .edge_def(edge_name)
        .ok_or_else(|| format!("{op}: unknown edge type {edge_name}"))
}

/// `incoming`: the ids of the edges' sources, read from the parent's inverse slot.
fn incoming(cx: &Context, shape: &Shape, step: &StepSpec) -> Result<(Step, Shape), String> {
    from_parent("incoming", shape)?;
    let edge_name = needs(step, "edge", &step.edge)?;
    let edge = known_edge(cx.model, "incoming", &edge_name)?;
    points_to_shape(cx.model, &edge_name, edge, shape)?;
    let role_sort = role_sort(cx.model, &edge_name, step.role.as_deref())?;
    let next = Shape {
        nodes: false,
        types: vec![edge.from.clone()],
        single: false,
    };
    let step = Step::Incoming {
        edge: edge_name,
        slot: edge.slot,
        role_sort,
    };
    Ok((step, next))
}

/// Edges pointing elsewhere would never be found in the parent's inverse slot.
fn points_to_shape(
    model: &Model,
    edge_name: &str,
    edge: &EdgeTypeDef,
    shape: &Shape,
) -> Result<(), String> {
    let targets = model.possible_types(&edge.to);
    if shape.types.iter().any(|t| targets.contains(&t.as_str())) {
        Ok(())
    } else {
        Err(format!(
            "incoming: {edge_name} edges point to {}, not to {}",
            edge.to,
            shape.types.join(" | ")
        ))
    }
}

/// `query`: the nodes of one of the parent's `@hasMany` relations.
fn query(cx: &Context, shape: &Shape, step: &StepSpec) -> Result<(Step, Shape), String> {
    from_parent("query", shape)?;
    let relation = needs(step, "relation", &step.relation)?;
    let has_many = has_many_of(cx.model, shape, &relation)?;
    let next = Shape {
        nodes: true,
        types: cx
            .model
            .possible_types(&has_many.element)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        single: false,
    };
    let step = Step::Query {
        relation,
        slot: has_many.slot,
        element: has_many.element.clone(),
    };
    Ok((step, next))
}

/// `relation = "Type.field"` names a `@hasMany` field of the parent's type.
fn has_many_of(model: &Model, shape: &Shape, relation: &str) -> Result<HasMany, String> {
    let (owner, name) = relation.split_once('.').unwrap_or(("", ""));
    model
        .type_def(owner)
        .filter(|_| shape.types.iter().any(|t| t == owner))
        .and_then(|t| t.field(name))
        .and_then(|f| match &f.kind {
            FieldKind::HasMany(has_many) => Some(has_many.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            format!(
                "query: {relation} is not a @hasMany relation of {}",
                shape.types.join(" | ")
            )
        })
}

/// `targets`: the ids in the nodes' edge sets, read with the nodes themselves.
fn targets(cx: &Context, shape: &Shape, step: &StepSpec) -> Result<(Step, Shape), String> {
    if !shape.nodes {
        return Err("targets: reads nodes' edge sets; add a `load` step before it".to_owned());
    }
    let edge_name = needs(step, "edge", &step.edge)?;
    let edge = known_edge(cx.model, "targets", &edge_name)?;
    keeps_edge_set(&edge_name, edge)?;
    starts_at_shape(&edge_name, edge, shape)?;
    let role_sort = role_sort(cx.model, &edge_name, step.role.as_deref())?;
    let next = Shape {
        nodes: false,
        types: cx
            .model
            .possible_types(&edge.to)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        single: false,
    };
    Ok((
        Step::Targets {
            edge: edge_name,
            role_sort,
        },
        next,
    ))
}

fn keeps_edge_set(edge_name: &str, edge: &EdgeTypeDef) -> Result<(), String> {
    if edge.edge_set {
        Ok(())
    } else {
        Err(format!(
            "targets: {edge_name} keeps no edge set (edgeSet: false)"
        ))
    }
}

/// Only nodes of the edge's `from` type keep its edges in their edge set.
fn starts_at_shape(edge_name: &str, edge: &EdgeTypeDef, shape: &Shape) -> Result<(), String> {
    if shape.types.iter().all(|t| *t == edge.from) {
        Ok(())
    } else {
        Err(format!(
            "targets: {edge_name} edges start at {}, not at {}",
            edge.from,
            shape.types.join(" | ")
        ))
    }
}

/// `load`: the nodes of the ids so far, in one batched read per level.
fn load(shape: &Shape) -> Result<(Step, Shape), String> {
    if shape.nodes {
        return Err("load: the nodes are already loaded".to_owned());
    }
    let step = Step::Load {
        allowed: shape.types.clone(),
    };
    Ok((
        step,
        Shape {
            nodes: true,
            ..shape.clone()
        },
    ))
}

/// `filter`: by id (`id = …`), or by a stored field of loaded nodes (`field`, `equals`).
fn filter(cx: &Context, shape: &Shape, step: &StepSpec) -> Result<(Step, Shape), String> {
    let value = |raw: &str| value_ref(raw, cx.type_def, cx.arguments);
    let filtered = match (&step.id, &step.field, &step.equals) {
        (Some(id), None, None) => Step::FilterId(value(id)?),
        (None, Some(field), Some(equals)) => {
            if !shape.nodes {
                return Err(
                    "filter: a field filter needs nodes; add a `load` step before it".to_owned(),
                );
            }
            stored_field(cx.model, shape, field)?;
            Step::FilterField(field.clone(), value(equals)?)
        }
        _ => {
            return Err("filter: give `id = …`, or `field = …` with `equals = …`".to_owned());
        }
    };
    Ok((filtered, shape.clone()))
}

/// A field filter compares a stored scalar, which every type the steps may hold must have.
fn stored_field(model: &Model, shape: &Shape, field: &str) -> Result<(), String> {
    let known = shape.types.iter().all(|t| {
        field == "id"
            || model
                .type_def(t)
                .and_then(|t| t.field(field))
                .is_some_and(|f| f.scalar().is_some())
    });
    if known {
        Ok(())
    } else {
        Err(format!(
            "filter: {field} is not a stored field of {}",
            shape.types.join(" | ")
        ))
    }
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
pub(super) mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const SCHEMA: &str = include_str!("../../schema.graphql");

    /// The shipped `Team.goalLeads` resolver.
    pub(in crate::resolvers) const LEADS: &str = "description = \"d\"\n[[step]]\nop = \"incoming\"\nedge = \"GoalMembership\"\n[[step]]\nop = \"load\"\n[[step]]\nop = \"targets\"\nedge = \"GoalMembership\"\nrole = \"LEAD\"\n";

    /// The model of `schema` with `Team.goalLeads` resolved by a file.
    fn model_of(schema: &str) -> Model {
        let resolved = BTreeSet::from(["Team.goalLeads".to_owned()]);
        Model::parse_with_resolvers("schema.graphql", schema, &resolved).expect("schema")
    }

    /// Why `text` is refused as the resolver of `stem` in `schema`: `line: message`.
    fn refusal_in(schema: &str, stem: &str, text: &str) -> String {
        let error = parse("f.toml", stem, text, &model_of(schema)).expect_err(stem);
        format!("{}: {}", error.line, error.message)
    }

    /// Why `steps` are refused as the resolver of `Team.goalLeads` in the default schema.
    fn refusal(steps: &str) -> String {
        refusal_in(
            SCHEMA,
            "Team.goalLeads",
            &format!("description = \"d\"\n{steps}"),
        )
    }

    const INCOMING: &str = "[[step]]\nop = \"incoming\"\nedge = \"GoalMembership\"\n";
    const LOAD: &str = "[[step]]\nop = \"load\"\n";

    #[test]
    fn a_file_not_named_type_dot_field_is_refused() {
        assert_eq!(
            refusal_in(SCHEMA, "goalLeads", "description = \"d\"\n"),
            "1: name the file <Type>.<field>.toml"
        );
    }

    #[test]
    fn a_field_answering_what_no_resolver_gives_is_refused() {
        let schema = SCHEMA.replace("goalLeads: [User!]!", "goalLeads: [String]");
        assert_eq!(
            refusal_in(&schema, "Team.goalLeads", LEADS),
            "1: Team.goalLeads: a resolver answers nodes, ids, Boolean (whether anything is \
             found) or Int (how many), not String"
        );
    }

    #[test]
    fn a_key_the_op_does_not_read_is_refused() {
        assert_eq!(
            refusal("[[step]]\nop = \"load\"\nedge = \"GoalMembership\"\n"),
            "2: load: `edge` does not apply to this op"
        );
    }

    #[test]
    fn a_missing_key_is_named() {
        assert_eq!(
            refusal("[[step]]\nop = \"incoming\"\n"),
            "2: incoming: needs `edge`"
        );
    }

    #[test]
    fn incoming_edges_must_point_to_the_parent() {
        assert_eq!(
            refusal("[[step]]\nop = \"incoming\"\nedge = \"GoalSubscription\"\n"),
            "2: incoming: GoalSubscription edges point to User, not to Team"
        );
    }

    #[test]
    fn query_reads_a_has_many_relation_of_the_parent() {
        assert_eq!(
            refusal("[[step]]\nop = \"query\"\nrelation = \"Farm.cows\"\n"),
            "2: query: Farm.cows is not a @hasMany relation of Team"
        );
    }

    #[test]
    fn targets_needs_loaded_nodes() {
        assert_eq!(
            refusal(&format!(
                "{INCOMING}[[step]]\nop = \"targets\"\nedge = \"GoalMembership\"\n"
            )),
            "5: targets: reads nodes' edge sets; add a `load` step before it"
        );
    }

    #[test]
    fn targets_needs_an_edge_set() {
        assert_eq!(
            refusal(&format!(
                "{INCOMING}{LOAD}[[step]]\nop = \"targets\"\nedge = \"GoalSubscription\"\n"
            )),
            "7: targets: GoalSubscription keeps no edge set (edgeSet: false)"
        );
    }

    #[test]
    fn targets_edges_must_start_at_the_nodes() {
        assert_eq!(
            refusal("[[step]]\nop = \"targets\"\nedge = \"GoalMembership\"\n"),
            "2: targets: GoalMembership edges start at Goal, not at Team"
        );
    }

    #[test]
    fn a_role_needs_an_edge_sorted_by_an_enum() {
        let model = model_of(SCHEMA);
        assert_eq!(
            role_sort(&model, "GoalSubscription", Some("LEAD")),
            Err("role: GoalSubscription does not sort by an enum".to_owned())
        );
    }

    #[test]
    fn loading_loaded_nodes_is_refused() {
        assert_eq!(refusal(LOAD), "2: load: the nodes are already loaded");
    }

    #[test]
    fn a_field_filter_needs_loaded_nodes() {
        assert_eq!(
            refusal(&format!(
                "{INCOMING}[[step]]\nop = \"filter\"\nfield = \"name\"\nequals = \"x\"\n"
            )),
            "5: filter: a field filter needs nodes; add a `load` step before it"
        );
    }

    #[test]
    fn a_field_filter_compares_a_stored_field() {
        assert_eq!(
            refusal("[[step]]\nop = \"filter\"\nfield = \"goals\"\nequals = \"x\"\n"),
            "2: filter: goals is not a stored field of Team"
        );
    }

    #[test]
    fn a_filter_gives_an_id_or_a_field_and_its_value() {
        assert_eq!(
            refusal("[[step]]\nop = \"filter\"\nfield = \"name\"\n"),
            "2: filter: give `id = …`, or `field = …` with `equals = …`"
        );
    }

    #[test]
    fn a_parent_value_is_a_stored_field() {
        assert_eq!(
            refusal("[[step]]\nop = \"filter\"\nid = \"$parent.goals\"\n"),
            "2: $parent.goals: Team has no stored field goals"
        );
    }

    #[test]
    fn a_value_starting_with_a_dollar_names_its_source() {
        assert_eq!(
            refusal("[[step]]\nop = \"filter\"\nid = \"$me\"\n"),
            "2: $me: values start with $args., $parent. or $claims."
        );
    }

    #[test]
    fn the_steps_must_reach_a_type_the_field_returns() {
        assert_eq!(
            refusal(&format!("{INCOMING}{LOAD}")),
            "7: the steps give Goal, but the field returns User"
        );
    }
}
