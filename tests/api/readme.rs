//! The README's walkthrough, run as it is written: every ```graphql block of `README.md`, in
//! order, against one fresh server holding the demo data (the README's first step), so the
//! README cannot drift from the API; and the same for each `examples/*/README.md`, against a
//! server for that example's schema with an empty store.
//!
//! - A query, mutation or subscription must answer without errors, and a query must show
//!   something: no list in its answer is empty, no root field null. A variable `$<type>Id` takes
//!   the id of the last `create<Type>` answered before it (what a reader pastes into GraphiQL's
//!   Variables pane).
//! - A subscription stays open while the next block runs, and must deliver that block's
//!   event (one carrying a value of its answer).
//! - A block of type definitions shows part of `schema.graphql`: each of its lines is a line of
//!   that file.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql_parser::types::{DocumentOperations, OperationType};
use serde_json::{Map, Value, json};

use crate::helpers::{TestApp, api_key_and_tokens, repository_file, spawn_app, user_token};

/// One ```graphql block: the line it starts on and its text, unindented.
struct Block {
    line: usize,
    text: String,
}

fn graphql_blocks(readme: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, usize, Vec<&str>)> = None;
    for (number, line) in readme.lines().enumerate() {
        match &mut open {
            None if line.trim_start() == "```graphql" => {
                let indent = line.len() - line.trim_start().len();
                open = Some((number + 1, indent, Vec::new()));
            }
            None => {}
            Some((start, _, lines)) if line.trim() == "```" => {
                blocks.push(Block {
                    line: *start,
                    text: lines.join("\n"),
                });
                open = None;
            }
            Some((_, indent, lines)) => lines.push(line.get(*indent..).unwrap_or("")),
        }
    }
    assert!(open.is_none(), "a ```graphql block is not closed");
    blocks
}

/// The operation of an executable block, and the names of its variables.
fn operation(block: &Block) -> Option<(OperationType, Vec<String>)> {
    let document = async_graphql_parser::parse_query(&block.text).ok()?;
    let operation = match &document.operations {
        DocumentOperations::Single(operation) => operation.node.clone(),
        DocumentOperations::Multiple(operations) => {
            assert_eq!(operations.len(), 1, "line {}: one operation", block.line);
            operations.values().next()?.node.clone()
        }
    };
    let variables = operation
        .variable_definitions
        .iter()
        .map(|definition| definition.node.name.node.to_string())
        .collect();
    Some((operation.ty, variables))
}

/// The strings in `value`, at any depth.
fn texts(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => vec![text.clone()],
        Value::Array(values) => values.iter().flat_map(texts).collect(),
        Value::Object(fields) => fields.values().flat_map(texts).collect(),
        _ => Vec::new(),
    }
}

/// `ids` gains the id of each `create<Type>` root field `data` answers, by lower-case type.
fn remember_ids(data: &Value, ids: &mut HashMap<String, String>) {
    for (field, value) in data.as_object().into_iter().flatten() {
        if let (Some(kind), Some(id)) = (field.strip_prefix("create"), value["id"].as_str()) {
            ids.insert(kind.to_lowercase(), id.to_owned());
        }
    }
}

/// Whether a query's `data` shows something: no root field null, no list empty anywhere.
fn shows_something(data: &Value) -> bool {
    fn no_empty_list(value: &Value) -> bool {
        match value {
            Value::Array(items) => !items.is_empty() && items.iter().all(no_empty_list),
            Value::Object(fields) => fields.values().all(no_empty_list),
            _ => true,
        }
    }
    data.as_object()
        .is_some_and(|roots| roots.values().all(|root| !root.is_null()))
        && no_empty_list(data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_graphql_block_of_the_readme_runs_in_order() {
    let app = spawn_app().await;
    tablegraph::demo::load(&app.store, Arc::new(app.model.clone()))
        .await
        .expect("the demo data loads");
    let ran = walk(&app, "README.md", "schema.graphql", &[]).await;
    assert!(ran >= 9, "{ran} blocks ran");
}

/// Each folder of `examples/` has a README whose blocks run in order against a fresh server
/// for its schema, started as the README says, with an empty store: its first blocks write
/// the data the later ones read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_s_readme_runs_in_order() {
    let folders: Vec<String> = std::fs::read_dir(repository_file("examples"))
        .expect("the examples")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(folders.len() >= 6, "{folders:?}");
    let python = crate::examples::FunctionsServer::start().await;
    for folder in folders {
        let readme = format!("examples/{folder}/README.md");
        let schema = format!("examples/{folder}/schema.graphql");
        let token;
        let (http, headers): (_, Vec<(&str, &str)>) = match folder.as_str() {
            "blog" => {
                token = format!("Bearer {}", user_token("ann", &[]));
                (
                    api_key_and_tokens("blog-key"),
                    vec![("authorization", &*token)],
                )
            }
            "events" => (
                api_key_and_tokens("events-key"),
                vec![("x-api-key", "events-key")],
            ),
            "notes" => {
                token = format!("Bearer {}", user_token("alice", &[]));
                (
                    api_key_and_tokens("notes-key"),
                    vec![("authorization", &*token)],
                )
            }
            _ => (tablegraph::config::HttpConfig::default(), Vec::new()),
        };
        let functions = match folder.as_str() {
            "functions" => python.config(),
            _ => tablegraph::functions::FunctionsConfig::default(),
        };
        let app = crate::helpers::spawn_app_with_functions_and(&schema, http, functions).await;
        let ran = walk(&app, &readme, &schema, &headers).await;
        assert!(ran >= 3, "{readme}: {ran} blocks ran");
    }
}

/// Runs the blocks of `readme` in order on `app` with `headers` (see the module's doc);
/// answers how many operations ran.
async fn walk(app: &TestApp, readme: &str, schema: &str, headers: &[(&str, &str)]) -> usize {
    let readme_text = std::fs::read_to_string(repository_file(readme)).expect("the README");
    let schema = std::fs::read_to_string(repository_file(schema)).expect("the schema");
    let schema_lines: Vec<&str> = schema.lines().map(str::trim).collect();
    let blocks = graphql_blocks(&readme_text);
    assert!(blocks.len() >= 3, "{readme}: {} blocks", blocks.len());
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut subscription: Option<(usize, reqwest::Response)> = None;
    let mut ran = 0;
    for block in &blocks {
        let Some((kind, variable_names)) = operation(block) else {
            for line in block.text.lines().map(str::trim) {
                assert!(
                    schema_lines.contains(&line),
                    "{readme} line {}: {line:?} is not a line of its schema",
                    block.line
                );
            }
            continue;
        };
        let mut variables = Map::new();
        for name in variable_names {
            let kind = name.strip_suffix("Id").unwrap_or(&name).to_lowercase();
            let id = ids.get(&kind).unwrap_or_else(|| {
                panic!(
                    "{readme} line {}: ${name} needs a create{} before it",
                    block.line, kind
                )
            });
            variables.insert(name, json!(id));
        }
        ran += 1;
        if kind == OperationType::Subscription {
            let mut request = app
                .client
                .post(app.url("/graphql"))
                .header("accept", "text/event-stream");
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            let response = request
                .json(&json!({ "query": block.text, "variables": variables }))
                .send()
                .await
                .expect("the server answers");
            assert_eq!(response.status(), 200, "{readme} line {}", block.line);
            app.events.until_subscribers(1).await;
            subscription = Some((block.line, response));
            continue;
        }
        let (_, body) = app
            .graphql_with(headers, &block.text, Value::Object(variables))
            .await;
        assert!(
            body["errors"].is_null() && body["data"].is_object(),
            "{readme} line {}: {body}",
            block.line
        );
        if kind == OperationType::Query {
            assert!(
                shows_something(&body["data"]),
                "{readme} line {}: the query shows nothing at this point of the walkthrough: \
                 {body}",
                block.line
            );
        }
        remember_ids(&body["data"], &mut ids);
        if let Some((line, mut response)) = subscription.take() {
            // Events of earlier writes may still arrive first: the one this block caused
            // carries a value its answer carries.
            let caused = texts(&body["data"]);
            let mut stream = String::new();
            // Keep-alive comments arrive meanwhile: the wait has one deadline, not one per chunk.
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
            loop {
                let chunk = tokio::time::timeout_at(deadline, response.chunk())
                    .await
                    .unwrap_or_else(|_| {
                        panic!("{readme} line {line}: no event of line {}", block.line)
                    })
                    .expect("the stream is readable")
                    .expect("the stream is still open");
                stream.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
                let found = stream
                    .split("\n\n")
                    .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data:")))
                    .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                    .inspect(|data| {
                        assert!(data["errors"].is_null(), "{readme} line {line}: {data}");
                    })
                    .any(|data| {
                        texts(&data["data"])
                            .iter()
                            .any(|text| caused.contains(text))
                    });
                if found {
                    break;
                }
            }
        }
    }
    assert!(
        subscription.is_none(),
        "{readme}'s last subscription has no block after it to trigger its event"
    );
    ran
}

/// Where the text between `<!-- begin NAME … -->` and `<!-- end NAME -->` lies in `text`.
fn generated(text: &str, name: &str) -> std::ops::Range<usize> {
    let begin = format!("<!-- begin {name} ");
    let start = text
        .find(&begin)
        .and_then(|at| text[at..].find("-->\n").map(|end| at + end + 4))
        .unwrap_or_else(|| panic!("README.md has no {begin}…-->"));
    let end = text[start..]
        .find(&format!("<!-- end {name} -->"))
        .unwrap_or_else(|| panic!("README.md does not end {name}"));
    start..start + end
}

/// README.md's usage block of `serve` and its list of environment variables are what clap
/// defines: no flag is left out. `TABLEGRAPH_UPDATE_README=1` writes them in.
#[test]
fn the_readme_lists_every_flag_and_variable_clap_defines() {
    let path = repository_file("README.md");
    let mut readme = std::fs::read_to_string(&path).expect("the README");
    let usage = format!("```\n{}\n```\n", tablegraph::cli::usage::serve_usage());
    let variables = format!("{}\n", tablegraph::cli::usage::environment_list());
    let update = std::env::var_os("TABLEGRAPH_UPDATE_README").is_some();
    for (name, expected) in [("serve-usage", usage), ("environment", variables)] {
        let range = generated(&readme, name);
        let found = readme[range.clone()].to_owned();
        if update {
            readme.replace_range(range, &expected);
        } else {
            assert_eq!(
                found, expected,
                "README.md's {name} is not clap's (TABLEGRAPH_UPDATE_README=1 cargo test --test api \
                 the_readme_lists writes it)"
            );
        }
    }
    if update {
        std::fs::write(&path, readme).expect("the README is written");
    }
}
