//! The API tablegraph serves for public Amplify apps equals what AppSync serves for them
//! (`tests/fixtures/amplify-golden/`, with sources and licences in its SOURCES.md): each app's
//! schema, loaded with its `amplify/cli.json` flags and `--amplify-strict`, prints an API whose
//! types, fields, arguments, input fields and enum values — names, types and nullability — are
//! those of the deployed API's introspection (`schema.json`) and of the transformer's output
//! (`build-schema.graphql`) the app commits.
//!
//! Both sides are normalised before they are compared: members in name order, descriptions
//! and directive declarations left out (AppSync declares its own `@aws_*` directives), and
//! scalar types left out as types (a field's type still names its scalar).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use async_graphql_parser::types::{
    BaseType, ServiceDocument, Type, TypeKind, TypeSystemDefinition,
};
use serde_json::Value;
use tablegraph::model::{AmplifyFlags, DialectChoice};

use crate::helpers::repository_file;

/// The folders of apps: the corpus of codegen operations, and apps that commit their deployed
/// API.
const DIRS: [&str; 2] = ["tests/fixtures/amplify", "tests/fixtures/amplify-golden"];

/// An API in a form two printings of it can be compared in: each type's name and its lines.
pub(crate) type Canonical = BTreeMap<String, Vec<String>>;

/// The apps, as `<dir>/<name>`.
fn apps() -> Vec<String> {
    let mut apps: Vec<String> = DIRS
        .iter()
        .filter_map(|dir| Some((dir, std::fs::read_dir(repository_file(dir)).ok()?)))
        .flat_map(|(dir, entries)| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.path().join("schema.graphql").is_file())
                .map(move |entry| format!("{dir}/{}", entry.file_name().to_string_lossy()))
        })
        .collect();
    apps.sort();
    apps
}

/// The dialect an app is served with: its `amplify/cli.json` flags and those its
/// `transform.args` gives the transformer (`--v1`: a transformer v1 project that commits no
/// cli.json, whose flags are an existing project's; `--flag name=value`), Amplify's API, strict.
fn dialect(app: &str) -> DialectChoice {
    let mut flags = AmplifyFlags::default();
    let cli_json = repository_file(&format!("{app}/amplify-cli.json"));
    let args = std::fs::read_to_string(repository_file(&format!("{app}/transform.args")))
        .unwrap_or_default();
    let args: Vec<&str> = args.split_whitespace().collect();
    if let Ok(text) = std::fs::read_to_string(&cli_json) {
        flags.read_cli_json(&text).expect("its cli.json reads");
    } else if args.contains(&"--v1") {
        let existing = r#"{ "features": { "graphqltransformer": {} } }"#;
        flags
            .read_cli_json(existing)
            .expect("an empty cli.json reads");
    }
    for pair in args.windows(2).filter(|pair| pair[0] == "--flag") {
        let (flag, value) = pair[1].split_once('=').expect("--flag name=value");
        flags
            .set_text(flag, value, "transform.args")
            .expect("a flag tablegraph reads");
    }
    DialectChoice {
        flags,
        strict: true,
        ..DialectChoice::default()
    }
}

/// The SDL tablegraph prints for `app`.
fn served(app: &str) -> Result<String, String> {
    let schema = repository_file(&format!("{app}/schema.graphql"));
    let (model, resolvers) = tablegraph::app::load_schema(&schema, None, &dialect(app))
        .map_err(|e| format!("refused: {e}"))?;
    tablegraph::graphql::print_sdl(Arc::new(model), Arc::new(resolvers))
        .map_err(|e| format!("refused: {e}"))
}

/// A type reference as GraphQL writes it (`[Post]!`), from introspection's `ofType` chain.
fn introspected_type(ty: &Value) -> String {
    let of = || introspected_type(&ty["ofType"]);
    match ty["kind"].as_str() {
        Some("NON_NULL") => format!("{}!", of()),
        Some("LIST") => format!("[{}]", of()),
        _ => ty["name"].as_str().unwrap_or_default().to_owned(),
    }
}

fn introspected_default(value: &Value) -> String {
    match value.as_str() {
        Some(text) => format!(" = {text}"),
        None => String::new(),
    }
}

fn introspected_argument(arg: &Value) -> String {
    format!(
        "{}: {}{}",
        arg["name"].as_str().unwrap_or_default(),
        introspected_type(&arg["type"]),
        introspected_default(&arg["defaultValue"])
    )
}

fn sorted_names(values: &Value, line: impl Fn(&Value) -> String) -> Vec<String> {
    let mut lines: Vec<String> = values.as_array().into_iter().flatten().map(line).collect();
    lines.sort();
    lines
}

/// An introspection result (`{"data":{"__schema":…}}` or `{"__schema":…}`), normalised.
pub(crate) fn from_introspection(json: &Value) -> Canonical {
    let schema = json
        .get("data")
        .unwrap_or(json)
        .get("__schema")
        .expect("an introspection result");
    let mut api = Canonical::new();
    for ty in schema["types"].as_array().expect("types") {
        let name = ty["name"].as_str().expect("a type's name");
        let kind = ty["kind"].as_str().expect("a type's kind");
        if name.starts_with("__") || kind == "SCALAR" {
            continue;
        }
        let mut lines = vec![kind.to_owned()];
        lines.extend(sorted_names(&ty["interfaces"], |i| {
            format!("implements {}", i["name"].as_str().unwrap_or_default())
        }));
        lines.extend(sorted_names(&ty["possibleTypes"], |t| {
            format!("| {}", t["name"].as_str().unwrap_or_default())
        }));
        lines.extend(sorted_names(&ty["enumValues"], |v| {
            v["name"].as_str().unwrap_or_default().to_owned()
        }));
        lines.extend(sorted_names(&ty["inputFields"], introspected_argument));
        lines.extend(sorted_names(&ty["fields"], |field| {
            let mut args = sorted_names(&field["args"], introspected_argument);
            args.sort();
            let args = if args.is_empty() {
                String::new()
            } else {
                format!("({})", args.join(", "))
            };
            format!(
                "{}{args}: {}",
                field["name"].as_str().unwrap_or_default(),
                introspected_type(&field["type"])
            )
        }));
        api.insert(name.to_owned(), lines);
    }
    api
}

fn printed_type(ty: &Type) -> String {
    let base = match &ty.base {
        BaseType::Named(name) => name.to_string(),
        BaseType::List(element) => format!("[{}]", printed_type(element)),
    };
    if ty.nullable {
        base
    } else {
        format!("{base}!")
    }
}

fn printed_input(value: &async_graphql_parser::types::InputValueDefinition) -> String {
    let default = value
        .default_value
        .as_ref()
        .map(|v| format!(" = {}", v.node))
        .unwrap_or_default();
    format!(
        "{}: {}{default}",
        value.name.node,
        printed_type(&value.ty.node)
    )
}

/// The lines of one type of an SDL document, as [`from_introspection`] writes them.
fn sdl_type_lines(kind: &TypeKind, implements: &[String]) -> Vec<String> {
    let (name, mut lines) = match kind {
        TypeKind::Scalar => ("SCALAR", Vec::new()),
        TypeKind::Object(object) => ("OBJECT", field_lines(&object.fields)),
        TypeKind::Interface(interface) => ("INTERFACE", field_lines(&interface.fields)),
        TypeKind::Union(union) => (
            "UNION",
            union
                .members
                .iter()
                .map(|m| format!("| {}", m.node))
                .collect(),
        ),
        TypeKind::Enum(enumeration) => (
            "ENUM",
            enumeration
                .values
                .iter()
                .map(|v| v.node.value.node.to_string())
                .collect(),
        ),
        TypeKind::InputObject(input) => (
            "INPUT_OBJECT",
            input
                .fields
                .iter()
                .map(|f| printed_input(&f.node))
                .collect(),
        ),
    };
    lines.extend(implements.iter().map(|i| format!("implements {i}")));
    lines.sort();
    lines.insert(0, name.to_owned());
    lines
}

fn field_lines(
    fields: &[async_graphql_parser::Positioned<async_graphql_parser::types::FieldDefinition>],
) -> Vec<String> {
    fields
        .iter()
        .map(|field| {
            let mut args: Vec<String> = field
                .node
                .arguments
                .iter()
                .map(|a| printed_input(&a.node))
                .collect();
            args.sort();
            let args = if args.is_empty() {
                String::new()
            } else {
                format!("({})", args.join(", "))
            };
            format!(
                "{}{args}: {}",
                field.node.name.node,
                printed_type(&field.node.ty.node)
            )
        })
        .collect()
}

/// An SDL document (AppSync's own directives and scalars need not be declared), normalised.
/// `extend type` definitions are merged into their types, as AppSync merges them.
pub(crate) fn from_sdl(text: &str) -> Canonical {
    let document: ServiceDocument =
        async_graphql_parser::parse_schema(text).expect("the SDL parses");
    let mut api = Canonical::new();
    for definition in &document.definitions {
        let TypeSystemDefinition::Type(ty) = definition else {
            continue;
        };
        let ty = &ty.node;
        if matches!(ty.kind, TypeKind::Scalar) {
            continue;
        }
        let implements: Vec<String> = match &ty.kind {
            TypeKind::Object(object) => object
                .implements
                .iter()
                .map(|i| i.node.to_string())
                .collect(),
            TypeKind::Interface(interface) => interface
                .implements
                .iter()
                .map(|i| i.node.to_string())
                .collect(),
            _ => Vec::new(),
        };
        let lines = sdl_type_lines(&ty.kind, &implements);
        let entry = api.entry(ty.name.node.to_string()).or_default();
        if entry.is_empty() {
            *entry = lines;
        } else {
            entry.extend(lines.into_iter().skip(1));
            let kind = entry.remove(0);
            entry.sort();
            entry.dedup();
            entry.insert(0, kind);
        }
    }
    api
}

/// What differs between `golden` and `served`: `-` lines only AppSync has, `+` lines only
/// tablegraph has, by type.
pub(crate) fn differences(golden: &Canonical, served: &Canonical) -> String {
    let mut out = String::new();
    let names: std::collections::BTreeSet<&String> = golden.keys().chain(served.keys()).collect();
    for name in names {
        let (a, b) = (golden.get(name), served.get(name));
        if a == b {
            continue;
        }
        let empty = Vec::new();
        let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
        let _ = writeln!(out, "{name}:");
        for line in a.iter().filter(|line| !b.contains(line)) {
            let _ = writeln!(out, "  - {line}");
        }
        for line in b.iter().filter(|line| !a.contains(line)) {
            let _ = writeln!(out, "  + {line}");
        }
    }
    out
}

/// What Amplify's transformer prints for an app (`transformed.graphql`, written by
/// `codegen/transform-fixtures.sh`, which CI runs with `--check`).
fn transformed(app: &str) -> Canonical {
    let path = repository_file(&format!("{app}/transformed.graphql"));
    let text = std::fs::read_to_string(&path).expect("each app has its transformed.graphql");
    from_sdl(&text)
}

/// The APIs an app commits as deployed: its introspection and its build's schema.
fn deployed(app: &str) -> Vec<(&'static str, Canonical)> {
    let mut goldens = Vec::new();
    let dir = repository_file(app);
    if let Ok(text) = std::fs::read_to_string(dir.join("schema.json")) {
        let json: Value = serde_json::from_str(&text).expect("schema.json reads");
        goldens.push(("schema.json", from_introspection(&json)));
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("build-schema.graphql")) {
        goldens.push(("build-schema.graphql", from_sdl(&text)));
    }
    goldens
}

/// The apps tablegraph does not yet serve as Amplify's transformer makes them, and why
/// (`AMPLIFY_GOLDEN_REPORT=FILE` writes what differs).
const UNMATCHED: [(&str, &str); 3] = [
    (
        "tests/fixtures/amplify-golden/righton-networking",
        "`id: ID! @primaryKey(sortKeyFields:)` is refused",
    ),
    (
        "tests/fixtures/amplify-golden/tapgives",
        "`id: ID! @primaryKey(sortKeyFields:)` with an @index on id is refused",
    ),
    (
        "tests/fixtures/amplify-golden/uwcssa",
        "Like's ten @key indexes on itemID and ten relations over them need more than the 20 index slots",
    ),
];

/// The committed APIs a transformer release older than the one `codegen/` runs made: they
/// differ from what it prints for the same schema and flags (filters without the times or the
/// owner field, no `ModelSubscription…` filters), so tablegraph, which serves what the current
/// transformer makes, differs from them too.
const OLDER_TRANSFORMER: [&str; 24] = [
    "tests/fixtures/amplify-golden/aws-eduverse/schema.json",
    "tests/fixtures/amplify-golden/bhpm-auction/schema.json",
    "tests/fixtures/amplify-golden/bookmark-tags/schema.json",
    "tests/fixtures/amplify-golden/carecrew/schema.json",
    "tests/fixtures/amplify-golden/cleta-link/schema.json",
    "tests/fixtures/amplify-golden/cloud-assistant/schema.json",
    "tests/fixtures/amplify-golden/eventhub-chat/schema.json",
    "tests/fixtures/amplify-golden/eventhub-chat/build-schema.graphql",
    "tests/fixtures/amplify-golden/obol-demo/schema.json",
    "tests/fixtures/amplify-golden/peerpal/schema.json",
    "tests/fixtures/amplify-golden/refarch-offline-pos/schema.json",
    "tests/fixtures/amplify-golden/righton-microcoach/schema.json",
    "tests/fixtures/amplify-golden/righton-networking/schema.json",
    "tests/fixtures/amplify-golden/scan-and-sew/schema.json",
    "tests/fixtures/amplify-golden/stargazers/schema.json",
    "tests/fixtures/amplify-golden/tapgives/schema.json",
    "tests/fixtures/amplify-golden/team-task-tracking/schema.json",
    "tests/fixtures/amplify-golden/uwcssa/schema.json",
    "tests/fixtures/amplify-golden/vaccine-distribution/schema.json",
    "tests/fixtures/amplify-golden/veterans-health/schema.json",
    "tests/fixtures/amplify-golden/veterans-health/build-schema.graphql",
    "tests/fixtures/amplify-golden/video-community/schema.json",
    "tests/fixtures/amplify-golden/vue-book-search/schema.json",
    "tests/fixtures/amplify-golden/wearable-health-monitoring/schema.json",
];

fn report(title: &str, lines: &BTreeMap<String, String>) -> String {
    let mut report = String::new();
    for (app, diff) in lines {
        let _ = writeln!(report, "== {app}: {title}\n{diff}");
    }
    report
}

#[test]
fn every_app_is_served_the_api_amplifys_transformer_makes_for_it() {
    let mut differing = BTreeMap::new();
    for app in apps() {
        let diff = match served(&app) {
            Ok(sdl) => differences(&transformed(&app), &from_sdl(&sdl)),
            Err(refusal) => refusal,
        };
        if !diff.is_empty() {
            differing.insert(app, diff);
        }
    }
    let text = report("tablegraph's API against transformed.graphql", &differing);
    if let Some(path) = std::env::var_os("AMPLIFY_GOLDEN_REPORT") {
        std::fs::write(path, &text).expect("the report is writable");
    }
    let listed: Vec<String> = UNMATCHED.iter().map(|(app, _)| (*app).to_owned()).collect();
    let differing: Vec<String> = differing.into_keys().collect();
    assert_eq!(
        differing, listed,
        "the apps that differ are not those listed as unmatched:\n{text}"
    );
}

#[test]
fn a_deployed_api_is_what_the_transformer_prints_or_an_older_release_made() {
    let mut older = Vec::new();
    let mut text = String::new();
    for app in apps() {
        let transformed = transformed(&app);
        let served = served(&app).map(|sdl| from_sdl(&sdl));
        for (file, golden) in deployed(&app) {
            let diff = differences(&golden, &transformed);
            if diff.is_empty() {
                // Then tablegraph's API is the deployed one, unless it is listed as unmatched.
                if let Ok(served) = &served
                    && !UNMATCHED.iter().any(|(name, _)| *name == app)
                {
                    assert_eq!(differences(&golden, served), "", "{app}/{file}");
                }
                continue;
            }
            older.push(format!("{app}/{file}"));
            let _ = writeln!(text, "== {app}/{file} against transformed.graphql\n{diff}");
        }
    }
    assert_eq!(older, OLDER_TRANSFORMER, "{text}");
}

#[test]
fn the_normal_forms_of_one_api_printed_and_introspected_agree() {
    let sdl = "type Query { getPost(id: ID!): Post listPosts(limit: Int, filter: F): [Post]! }\n\
               type Post { id: ID! tags: [String!] }\n\
               input F { and: [F] id: ID = \"x\" }\n\
               enum Direction { DESC ASC }\nscalar AWSDateTime";
    let introspection = serde_json::json!({ "data": { "__schema": { "types": [
        { "kind": "OBJECT", "name": "Post", "fields": [
            { "name": "tags", "args": [], "type": { "kind": "LIST", "ofType":
                { "kind": "NON_NULL", "ofType": { "kind": "SCALAR", "name": "String" } } } },
            { "name": "id", "args": [], "type": { "kind": "NON_NULL", "ofType":
                { "kind": "SCALAR", "name": "ID" } } }
        ], "interfaces": [] },
        { "kind": "OBJECT", "name": "Query", "interfaces": [], "fields": [
            { "name": "listPosts", "type": { "kind": "NON_NULL", "ofType": { "kind": "LIST",
                "ofType": { "kind": "OBJECT", "name": "Post" } } }, "args": [
                { "name": "filter", "type": { "kind": "INPUT_OBJECT", "name": "F" } },
                { "name": "limit", "type": { "kind": "SCALAR", "name": "Int" } } ] },
            { "name": "getPost", "type": { "kind": "OBJECT", "name": "Post" }, "args": [
                { "name": "id", "type": { "kind": "NON_NULL", "ofType":
                    { "kind": "SCALAR", "name": "ID" } } } ] }
        ] },
        { "kind": "INPUT_OBJECT", "name": "F", "inputFields": [
            { "name": "id", "type": { "kind": "SCALAR", "name": "ID" }, "defaultValue": "\"x\"" },
            { "name": "and", "type": { "kind": "LIST", "ofType":
                { "kind": "INPUT_OBJECT", "name": "F" } } }
        ] },
        { "kind": "ENUM", "name": "Direction", "enumValues": [{ "name": "ASC" }, { "name": "DESC" }] },
        { "kind": "SCALAR", "name": "AWSDateTime" },
        { "kind": "OBJECT", "name": "__Type", "fields": [] }
    ] } } });
    let (printed, introspected) = (from_sdl(sdl), from_introspection(&introspection));
    assert_eq!(differences(&introspected, &printed), "");
    let mut changed = printed.clone();
    changed.get_mut("Post").expect("Post")[1] = "id: ID".to_owned();
    assert_eq!(
        differences(&introspected, &changed),
        "Post:\n  - id: ID!\n  + id: ID\n"
    );
}
