//! A property test over generated requests: queries and mutations built from the live schema's
//! introspection, with ids of real nodes, wrong ids, odd strings, out-of-range numbers, unknown
//! enum values and deep selections. Whatever the request, the server answers without a 5xx,
//! shows nothing of its storage, and leaves every table invariant intact (no partial write).
//!
//! Deterministic: the seed is fixed, and printed with the request that broke a property.
//! `TABLEGRAPH_FUZZ_SEED` and `TABLEGRAPH_FUZZ_CASES` change them.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::helpers::{TestApp, spawn_app};
use crate::persisted::persisted;

const DEFAULT_SEED: u64 = 0x7AB1_E6A4;
/// Requests per worker; four workers run at once.
const DEFAULT_CASES: usize = 150;
const WORKERS: u64 = 4;
const MAX_SELECTION_DEPTH: usize = 5;

/// Words for generated strings: none of them can be mistaken for a leaked internal.
const WORDS: &[&str] = &[
    "Old",
    "MacDonald",
    "farm",
    "Éire",
    "ünïcode",
    "🐄",
    "goal",
    "  spaced  ",
    "o'clock",
    "quote\"d",
    "back\\slash",
    "new\nline",
    "tab\there",
    "Growth",
    "LEAD",
    "Żółw",
    "日本",
];

/// `answer` with each cursor replaced by what it says: its base64 (random ids and a random
/// MAC) may spell `PK0` or `SK0` by chance, while what it encodes must leak nothing either.
fn with_cursors_decoded(answer: &Value) -> Value {
    use base64::Engine as _;
    match answer {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, value)| {
                    let value = match (name.as_str(), value) {
                        ("cursor" | "startCursor" | "endCursor", Value::String(cursor)) => {
                            let payload = cursor.split('.').next().unwrap_or_default();
                            let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
                                .decode(payload)
                                .unwrap_or_else(|_| panic!("a cursor in base64: {cursor}"));
                            Value::String(String::from_utf8_lossy(&decoded).into_owned())
                        }
                        _ => with_cursors_decoded(value),
                    };
                    (name.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(with_cursors_decoded).collect()),
        other => other.clone(),
    }
}

/// Text that must never appear in a response: storage names and internals.
const LEAKS: &[&str] = &[
    "GSI0",
    "PK0",
    "SK0",
    "NODE#",
    "Exception",
    "dynamo",
    "Dynamo",
    "panicked",
    "aws-sdk",
    "smithy",
    "sqlite",
    "tablegraph",
    "MIGRATION#",
];

/// AppSync's own error types, which are part of the API, not internals (though they end in
/// "Exception", as DynamoDB's do): left out of the search for [`LEAKS`], as `errorType`s only.
const APPSYNC_ERROR_TYPES: &[&str] = &["BadRequestException", "UnauthorizedException"];

/// The parts of the introspected schema the generator needs.
struct Schema {
    types: HashMap<String, Value>,
}

impl Schema {
    fn of(name: &str) -> &'static str {
        // Only used to name roots.
        match name {
            "query" => "Query",
            _ => "Mutation",
        }
    }

    fn get(&self, name: &str) -> &Value {
        &self.types[name]
    }
}

/// A type reference, unwrapped: (named type, is list, is non-null).
fn named(ty: &Value) -> (&str, bool, bool) {
    let mut ty = ty;
    let mut list = false;
    let non_null = ty["kind"] == "NON_NULL";
    while ty["ofType"].is_object() {
        if ty["kind"] == "LIST" {
            list = true;
        }
        ty = &ty["ofType"];
    }
    (ty["name"].as_str().unwrap_or_default(), list, non_null)
}

struct Generator<'a> {
    rng: fastrand::Rng,
    schema: &'a Schema,
    ids: &'a [String],
}

impl Generator<'_> {
    fn string(&mut self) -> String {
        match self.rng.u8(0..20) {
            0 => String::new(),
            1 => "   ".to_owned(),
            2 => "x".repeat(self.rng.usize(500..3000)),
            _ => {
                let words = self.rng.usize(1..4);
                (0..words)
                    .map(|_| WORDS[self.rng.usize(..WORDS.len())])
                    .collect::<Vec<_>>()
                    .join(" ")
                    + &format!(" {}", self.rng.u32(..1000))
            }
        }
    }

    fn id(&mut self) -> String {
        match self.rng.u8(0..10) {
            0 => "01000000-0000-7000-8000-000000000000".to_owned(),
            1 => ["", "a#b", "not an id", "🐄"][self.rng.usize(..4)].to_owned(),
            _ if self.ids.is_empty() => "01000000-0000-7000-8000-000000000001".to_owned(),
            _ => self.ids[self.rng.usize(..self.ids.len())].clone(),
        }
    }

    /// A GraphQL literal for an input of type `ty`.
    fn value(&mut self, ty: &Value, depth: usize) -> String {
        let (name, list, _) = named(ty);
        if list {
            let n = self.rng.usize(0..4);
            let inner = &ty_of_list(ty);
            let items: Vec<String> = (0..n).map(|_| self.value(inner, depth + 1)).collect();
            return format!("[{}]", items.join(", "));
        }
        // Now and then a value of the wrong kind: the validator's to refuse.
        if self.rng.u8(0..40) == 0 {
            return ["true", "12", "\"text\"", "null", "{}"][self.rng.usize(..5)].to_owned();
        }
        match name {
            "ID" => json!(self.id()).to_string(),
            "String" => json!(self.string()).to_string(),
            "Int" => {
                [0, 1, 2, 5, 20, 50, 100, 101, -1, 2_147_483_647][self.rng.usize(..10)].to_string()
            }
            "Float" => ["0.5", "-3", "1e308", "12.25"][self.rng.usize(..4)].to_owned(),
            "Boolean" => self.rng.bool().to_string(),
            "AWSEmail" => json!(format!("user{}@example.com", self.rng.u16(..50))).to_string(),
            "AWSDate" => {
                json!(["2026-01-31", "2026-02-30", "yesterday"][self.rng.usize(..3)]).to_string()
            }
            "AWSDateTime" => json!(
                ["2026-11-21T10:00:00Z", "2026-11-21T10:00:00+02:00", "soon"][self.rng.usize(..3)]
            )
            .to_string(),
            _ => {
                let ty = self.schema.get(name);
                match ty["kind"].as_str() {
                    Some("ENUM") => {
                        let values = ty["enumValues"].as_array().cloned().unwrap_or_default();
                        if values.is_empty() || self.rng.u8(0..15) == 0 {
                            "NOT_A_VALUE".to_owned()
                        } else {
                            values[self.rng.usize(..values.len())]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned()
                        }
                    }
                    Some("INPUT_OBJECT") if depth < 4 => {
                        let fields = ty["inputFields"].as_array().cloned().unwrap_or_default();
                        let mut parts = Vec::new();
                        for field in &fields {
                            let (_, _, required) = named(&field["type"]);
                            if required || self.rng.bool() {
                                let value = self.value(&field["type"], depth + 1);
                                parts.push(format!(
                                    "{}: {value}",
                                    field["name"].as_str().unwrap_or_default()
                                ));
                            }
                        }
                        format!("{{ {} }}", parts.join(", "))
                    }
                    _ => "null".to_owned(),
                }
            }
        }
    }

    fn arguments(&mut self, args: &[Value]) -> String {
        let mut parts = Vec::new();
        for arg in args {
            let (_, _, required) = named(&arg["type"]);
            if required || self.rng.u8(0..3) == 0 {
                let value = self.value(&arg["type"], 0);
                parts.push(format!(
                    "{}: {value}",
                    arg["name"].as_str().unwrap_or_default()
                ));
            }
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("({})", parts.join(", "))
        }
    }

    /// A selection set on the type `name`, or "" for a leaf.
    fn selection(&mut self, name: &str, depth: usize) -> String {
        let ty = self.schema.get(name);
        match ty["kind"].as_str() {
            Some("OBJECT") => {
                let fields = ty["fields"].as_array().cloned().unwrap_or_default();
                let mut parts = vec!["__typename".to_owned()];
                let picks = self.rng.usize(1..=4.min(fields.len().max(1)));
                for _ in 0..picks {
                    let field = &fields[self.rng.usize(..fields.len())];
                    let (inner, _, _) = named(&field["type"]);
                    let leaf = matches!(
                        self.schema.get(inner)["kind"].as_str(),
                        Some("SCALAR" | "ENUM")
                    );
                    if !leaf && depth >= MAX_SELECTION_DEPTH {
                        continue;
                    }
                    let args = self.arguments(field["args"].as_array().map_or(&[], Vec::as_slice));
                    let sub = if leaf {
                        String::new()
                    } else {
                        self.selection(inner, depth + 1)
                    };
                    parts.push(format!(
                        "{}{args}{sub}",
                        field["name"].as_str().unwrap_or_default()
                    ));
                }
                format!(" {{ {} }}", parts.join(" "))
            }
            Some("UNION" | "INTERFACE") => {
                let possible = ty["possibleTypes"].as_array().cloned().unwrap_or_default();
                let mut parts = vec!["__typename".to_owned()];
                for member in &possible {
                    if self.rng.bool() {
                        let member = member["name"].as_str().unwrap_or_default();
                        parts.push(format!(
                            "... on {member}{}",
                            self.selection(member, depth + 1)
                        ));
                    }
                }
                format!(" {{ {} }}", parts.join(" "))
            }
            _ => String::new(),
        }
    }

    fn request(&mut self) -> String {
        let operation = if self.rng.u8(0..10) < 6 {
            "query"
        } else {
            "mutation"
        };
        let root = self.schema.get(Schema::of(operation));
        let fields = root["fields"].as_array().cloned().unwrap_or_default();
        let mut parts = Vec::new();
        for i in 0..self.rng.usize(1..3) {
            let field = &fields[self.rng.usize(..fields.len())];
            let (inner, _, _) = named(&field["type"]);
            let args = self.arguments(field["args"].as_array().map_or(&[], Vec::as_slice));
            let sub = self.selection(inner, 1);
            parts.push(format!(
                "f{i}: {}{args}{sub}",
                field["name"].as_str().unwrap_or_default()
            ));
        }
        format!("{operation} {{ {} }}", parts.join(" "))
    }
}

/// How a generated request is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A POST of a generated query or mutation.
    Plain,
    /// A generated request registered as an automatic persisted query, then run by its hash.
    Persisted,
    /// Brackets nested hundreds to thousands deep, which the parser must never see.
    Nested,
}

impl Generator<'_> {
    fn shape(&mut self) -> Shape {
        match self.rng.u8(0..20) {
            0 => Shape::Nested,
            1 | 2 => Shape::Persisted,
            _ => Shape::Plain,
        }
    }

    /// A document whose value nests brackets `[`, `{` or `(` deeper than the limit allows.
    fn nested(&mut self) -> String {
        let depth = self.rng.usize(100..3000);
        match self.rng.u8(0..3) {
            0 => format!(
                "{{ farm(id: {}\"x\"{}) {{ id }} }}",
                "[".repeat(depth),
                "]".repeat(depth)
            ),
            1 => format!(
                "mutation {{ createFarm(input: {}{}) {{ id }} }}",
                "{ name: ".repeat(depth),
                "}".repeat(depth)
            ),
            _ => format!(
                "{{ {}__typename{} }}",
                "f(".repeat(depth),
                ")".repeat(depth)
            ),
        }
    }
}

/// Sends `request` and checks its answer: no 5xx, JSON, nothing of the storage shown, no
/// internal error; the body.
async fn answered(request: reqwest::RequestBuilder, context: &str) -> Value {
    let response = request.send().await.expect("the server answers");
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let context = format!("{context}\nanswer {status}: {text}");
    assert!(!status.is_server_error(), "a 5xx\n{context}");
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON\n{context}"));
    let readable = with_cursors_decoded(&body).to_string();
    let searched = APPSYNC_ERROR_TYPES
        .iter()
        .fold(readable.clone(), |text, name| {
            text.replace(&format!("\"errorType\":\"{name}\""), "")
        });
    assert!(
        !LEAKS.iter().any(|leak| searched.contains(leak)),
        "internals leaked\n{context}\nwith cursors decoded: {readable}"
    );
    assert!(
        !text.contains("\"InternalError\""),
        "an internal error\n{context}"
    );
    body
}

fn ty_of_list(ty: &Value) -> Value {
    let mut ty = ty;
    if ty["kind"] == "NON_NULL" {
        ty = &ty["ofType"];
    }
    ty["ofType"].clone()
}

async fn introspect(app: &TestApp) -> Schema {
    let query = include_str!("../fixtures/introspection.graphql");
    let body = app.graphql(query, json!({})).await;
    let types = body["data"]["__schema"]["types"]
        .as_array()
        .expect("introspection answers")
        .iter()
        .map(|ty| {
            (
                ty["name"].as_str().unwrap_or_default().to_owned(),
                ty.clone(),
            )
        })
        .collect();
    Schema { types }
}

#[derive(Default)]
struct Tally {
    requests: usize,
    with_data: usize,
    mutations_applied: usize,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_requests_never_fail_the_server_or_break_the_table() {
    let app = Arc::new(spawn_app().await);
    tablegraph::demo::load(&app.store, Arc::new(app.model.clone()))
        .await
        .expect("the demo data loads");
    let ids: Arc<Vec<String>> = Arc::new(
        app.store
            .scan_all()
            .await
            .expect("a scan")
            .iter()
            .filter_map(|item| {
                let key = item.get("PK")?.as_str()?;
                (item.get("SK")?.as_str()? == key)
                    .then(|| key.strip_prefix("NODE#").map(str::to_owned))
                    .flatten()
            })
            .collect(),
    );
    let schema = Arc::new(introspect(&app).await);
    let seed: u64 = env_or("TABLEGRAPH_FUZZ_SEED", DEFAULT_SEED);
    let cases: usize = env_or("TABLEGRAPH_FUZZ_CASES", DEFAULT_CASES);
    let tally = Arc::new(Mutex::new(Tally::default()));

    let workers = (0..WORKERS).map(|worker| {
        let (app, schema, ids, tally) = (app.clone(), schema.clone(), ids.clone(), tally.clone());
        tokio::spawn(async move {
            let mut generator = Generator {
                rng: fastrand::Rng::with_seed(seed.wrapping_add(worker)),
                schema: &schema,
                ids: &ids,
            };
            for case in 0..cases {
                let shape = generator.shape();
                let query = match shape {
                    Shape::Nested => generator.nested(),
                    Shape::Plain | Shape::Persisted => generator.request(),
                };
                let context = format!(
                    "seed {seed}, worker {worker}, case {case} ({shape:?})\nrequest: {query}"
                );
                if shape == Shape::Persisted {
                    // Registered with its hash, then asked for by the hash alone over POST and
                    // GET, as Apollo's APQ link does.
                    let registered = json!({ "query": query, "extensions": persisted(&query) });
                    answered(
                        app.client.post(app.url("/graphql")).json(&registered),
                        &context,
                    )
                    .await;
                    let by_hash = json!({ "extensions": persisted(&query) });
                    answered(
                        app.client.post(app.url("/graphql")).json(&by_hash),
                        &context,
                    )
                    .await;
                    let get = app
                        .client
                        .get(app.url("/graphql"))
                        .query(&[("extensions", persisted(&query).to_string())]);
                    answered(get, &context).await;
                    tally.lock().await.requests += 1;
                    continue;
                }
                let request = app
                    .client
                    .post(app.url("/graphql"))
                    .json(&json!({ "query": query }));
                let body = answered(request, &context).await;
                let mut tally = tally.lock().await;
                tally.requests += 1;
                if body["data"].is_object() {
                    tally.with_data += 1;
                    if query.starts_with("mutation") && body["errors"].is_null() {
                        tally.mutations_applied += 1;
                    }
                }
            }
        })
    });
    for worker in futures::future::join_all(workers).await {
        if let Err(panic) = worker {
            std::panic::resume_unwind(panic.into_panic());
        }
    }

    let tally = tally.lock().await;
    eprintln!(
        "{} requests, {} answered data, {} mutations applied",
        tally.requests, tally.with_data, tally.mutations_applied
    );
    assert!(tally.requests >= 500, "only {} requests", tally.requests);
    // The generator must reach the resolvers, not only the validator.
    assert!(
        tally.with_data >= 150,
        "only {} answers had data",
        tally.with_data
    );
    assert!(
        tally.mutations_applied >= 20,
        "only {} mutations applied",
        tally.mutations_applied
    );
    let report = app.assert_table_consistent().await;
    assert!(report.nodes > 0 && report.edges > 0, "{report:?}");
}
