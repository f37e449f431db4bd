//! Enum values as clients send them: written in the document (`sortDirection: DESC`), given in
//! a variable (`{"d": "DESC"}`, which is how Apollo, urql and GraphiQL's Variables pane send
//! them), and as a variable's default. A string literal where an enum belongs
//! (`sortDirection: "DESC"`) is refused when the document is validated, as graphql-js does.
//!
//! The enum-typed arguments and input fields are read from the live schema, so one added later
//! is tested too (or the test names it as uncovered).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_message, spawn_app, sse_events};

/// `(parent type, field, argument, enum)` for every argument of an enum type, and `(input type,
/// field, enum)` for every input field of one, as introspection tells them.
async fn enum_positions(app: &TestApp) -> (Vec<[String; 4]>, Vec<[String; 3]>) {
    let body = app
        .graphql(
            "{ __schema { types { name kind
                 fields { name args { name type { ...T } } }
                 inputFields { name type { ...T } } } } }
             fragment T on __Type { kind name ofType { kind name ofType { kind name
               ofType { kind name } } } }",
            json!({}),
        )
        .await;
    let types = body["data"]["__schema"]["types"]
        .as_array()
        .expect("introspection lists the types");
    // The enum at the bottom of a type reference, if it is one.
    fn enum_of(ty: &Value) -> Option<String> {
        let mut ty = ty;
        while ty["ofType"].is_object() {
            ty = &ty["ofType"];
        }
        (ty["kind"] == "ENUM").then(|| ty["name"].as_str().unwrap_or_default().to_owned())
    }
    let mut arguments = Vec::new();
    let mut input_fields = Vec::new();
    for ty in types {
        let name = ty["name"].as_str().unwrap_or_default();
        if name.starts_with("__") {
            continue;
        }
        for field in ty["fields"].as_array().into_iter().flatten() {
            for argument in field["args"].as_array().into_iter().flatten() {
                if let Some(enum_name) = enum_of(&argument["type"]) {
                    arguments.push([
                        name.to_owned(),
                        field["name"].as_str().unwrap_or_default().to_owned(),
                        argument["name"].as_str().unwrap_or_default().to_owned(),
                        enum_name,
                    ]);
                }
            }
        }
        for field in ty["inputFields"].as_array().into_iter().flatten() {
            if let Some(enum_name) = enum_of(&field["type"]) {
                input_fields.push([
                    name.to_owned(),
                    field["name"].as_str().unwrap_or_default().to_owned(),
                    enum_name,
                ]);
            }
        }
    }
    (arguments, input_fields)
}

/// The value to try for `enum_name`: its last value (`DESC`, `TEAM`, `KEY_RESULT`), not the
/// default a missing value would give.
fn value_of(model: &tablegraph::model::Model, enum_name: &str) -> String {
    match enum_name {
        "ModelSortDirection" => "DESC".to_owned(),
        _ => model
            .enum_def(enum_name)
            .and_then(|e| e.values.last())
            .map(|v| v.name.clone())
            .expect("every enum of the schema has values"),
    }
}

/// Where one enum value goes in a document: `{value}` in `template` is the value, `{decl}` the
/// operation's variable declarations (with `$id: ID!` when `id` is given), and `{n}` a number
/// of its own for each document (for unique values).
#[derive(Clone)]
struct Place<'a> {
    app: &'a TestApp,
    template: String,
    enum_name: String,
    value: String,
    id: Option<String>,
    what: String,
}

static DOCUMENTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Place<'_> {
    fn document(&self, value: &str, declaration: &str) -> String {
        let declarations: Vec<&str> = self
            .id
            .as_ref()
            .map(|_| "$id: ID!")
            .into_iter()
            .chain((!declaration.is_empty()).then_some(declaration))
            .collect();
        let decl = if declarations.is_empty() {
            String::new()
        } else {
            format!("({})", declarations.join(", "))
        };
        let n = DOCUMENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.template
            .replace("{decl}", &decl)
            .replace("{value}", value)
            .replace("{n}", &n.to_string())
    }

    fn variables(&self, extra: Option<(&str, &str)>) -> Value {
        let mut variables = serde_json::Map::new();
        if let Some(id) = &self.id {
            variables.insert("id".to_owned(), json!(id));
        }
        if let Some((name, value)) = extra {
            variables.insert(name.to_owned(), json!(value));
        }
        Value::Object(variables)
    }

    /// Runs the value as a literal, as a variable and as a variable's default; answers the
    /// three bodies, each checked to have run without an error.
    async fn accepted(&self) -> Vec<Value> {
        let (enum_name, value) = (&self.enum_name, &self.value);
        let runs = [
            ("literal", self.document(value, ""), self.variables(None)),
            (
                "variable",
                // Non-null: it fits a nullable position and a non-null one alike.
                self.document("$v", &format!("$v: {enum_name}!")),
                self.variables(Some(("v", value))),
            ),
            (
                "variable's default",
                self.document("$v", &format!("$v: {enum_name} = {value}")),
                self.variables(None),
            ),
        ];
        let mut bodies = Vec::new();
        for (form, document, variables) in runs {
            let body = self.app.graphql(&document, variables).await;
            assert!(
                body["errors"].is_null() && !body["data"].is_null(),
                "{} as a {form} must work: {document}\n{body:#}",
                self.what
            );
            bodies.push(body);
        }
        bodies
    }

    /// A string literal in the document, and as a variable's default, fail validation: 400
    /// without `data` to a client that accepts `application/graphql-response+json`.
    async fn string_literal_refused(&self) {
        let (enum_name, value) = (&self.enum_name, &self.value);
        for document in [
            self.document(&format!("{value:?}"), ""),
            self.document("$v", &format!("$v: {enum_name} = {value:?}")),
        ] {
            let response = self
                .app
                .client
                .post(self.app.url("/graphql"))
                .header("accept", "application/graphql-response+json")
                .json(&json!({ "query": document, "variables": self.variables(None) }))
                .send()
                .await
                .expect("the server answers");
            assert_eq!(response.status(), 400, "{}: {document}", self.what);
            let body: Value = response.json().await.expect("JSON");
            assert!(body.get("data").is_none(), "{body}");
            assert!(
                error_message(&body).contains("an enum value is written without quotes"),
                "{}: {body}",
                self.what
            );
        }
    }
}

#[tokio::test]
async fn every_enum_argument_takes_a_literal_a_variable_and_a_default_but_no_string() {
    let app = spawn_app().await;
    let farm = app.create_farm("Enum Acres").await;
    let goal = app
        .create("Goal", json!({ "title": "Ship", "kind": "OBJECTIVE" }))
        .await;
    let user = app
        .create("User", json!({ "name": "Ann", "email": "ann@example.com" }))
        .await;
    let team = app.create("Team", json!({ "name": "Core" })).await;
    let ids = [
        ("Farm", farm),
        ("Goal", goal),
        ("User", user),
        ("Team", team),
    ];
    let (arguments, _) = enum_positions(&app).await;
    let mut covered = BTreeSet::new();
    for [parent, field, argument, enum_name] in &arguments {
        // Subscriptions are tested below, over a stream.
        if parent == "Subscription" {
            continue;
        }
        let required = required_arguments(&app, parent, field).await;
        let selection = format!("{field}({argument}: {{value}}{required}) {{ __typename }}");
        let (template, id) = if parent == "Query" {
            (format!("query{{decl}} {{ {selection} }}"), None)
        } else {
            let id = ids
                .iter()
                .find(|(name, _)| name == parent)
                .map(|(_, id)| id.clone())
                .unwrap_or_else(|| panic!("no node of {parent} to read {field} on"));
            (
                format!(
                    "query{{decl}} {{ node(id: $id) {{ ... on {parent} {{ {selection} }} }} }}"
                ),
                Some(id),
            )
        };
        let place = Place {
            app: &app,
            template,
            enum_name: enum_name.clone(),
            value: value_of(&app.model, enum_name),
            id,
            what: format!("{parent}.{field}({argument}:)"),
        };
        place.accepted().await;
        place.string_literal_refused().await;
        covered.insert(format!("{parent}.{field}"));
    }
    // The default schema's enum arguments, so that a schema change that drops them is seen.
    for expected in [
        "Query.listFarms",
        "Query.cowsByBreed",
        "Farm.cows",
        "Goal.members",
        "Team.goals",
        "User.goals",
    ] {
        assert!(
            covered.contains(expected),
            "{expected} not among {covered:?}"
        );
    }
}

/// The other required arguments of `parent.field`, filled in (`, breed: "x"`).
async fn required_arguments(app: &TestApp, parent: &str, field: &str) -> String {
    let body = app
        .graphql(
            "query($t: String!) { __type(name: $t) { fields { name
               args { name type { kind ofType { name } } } } } }",
            json!({ "t": parent }),
        )
        .await;
    let fields = body["data"]["__type"]["fields"].as_array().expect("fields");
    let field = fields
        .iter()
        .find(|f| f["name"] == field)
        .expect("the field");
    let mut filled = String::new();
    for argument in field["args"].as_array().into_iter().flatten() {
        if argument["type"]["kind"] != "NON_NULL" {
            continue;
        }
        let name = argument["name"].as_str().unwrap_or_default();
        match argument["type"]["ofType"]["name"].as_str() {
            Some("String") => filled.push_str(&format!(", {name}: \"x\"")),
            other => panic!("{field}: cannot fill the required argument {name}: {other:?}"),
        }
    }
    filled
}

#[tokio::test]
async fn sort_direction_and_roles_given_as_variables_order_and_filter() {
    let app = spawn_app().await;
    for name in ["Alpha", "Bravo", "Charlie"] {
        app.create_farm(name).await;
    }
    let names = |body: &Value| -> Vec<String> {
        body["data"]["listFarms"]["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .map(|e| e["node"]["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let query = "query($d: ModelSortDirection) {
        listFarms(first: 2, sortDirection: $d) { edges { node { name } } } }";
    let up = app.graphql(query, json!({ "d": "ASC" })).await;
    assert_eq!(names(&up), ["Alpha", "Bravo"], "{up}");
    let down = app.graphql(query, json!({ "d": "DESC" })).await;
    assert_eq!(names(&down), ["Charlie", "Bravo"], "{down}");
    let unset = app.graphql(query, json!({})).await;
    assert_eq!(names(&unset), ["Alpha", "Bravo"], "{unset}");
    // A value of no enum is refused as a variable's value, before anything runs.
    let sideways = app.graphql(query, json!({ "d": "SIDEWAYS" })).await;
    assert!(sideways.get("data").is_none(), "{sideways}");

    // minRole as a variable: one lead, one contributor; leads and up are the lead.
    let goal = app
        .create("Goal", json!({ "title": "Ship", "kind": "OBJECTIVE" }))
        .await;
    for (name, role) in [("Lee", "LEAD"), ("Cory", "CONTRIBUTOR")] {
        let user = app
            .create(
                "User",
                json!({ "name": name, "email": format!("{name}@example.com") }),
            )
            .await;
        let body = app
            .graphql(
                "mutation($g: ID!, $u: ID!, $r: GoalRole!) {
                   addGoalMembership(input: { from: $g, to: $u, role: $r }) { role } }",
                json!({ "g": goal, "u": user, "r": role }),
            )
            .await;
        assert_eq!(body["data"]["addGoalMembership"]["role"], role, "{body}");
    }
    let body = app
        .graphql(
            "query($g: ID!, $r: GoalRole) { goal(id: $g) {
               members(minRole: $r) { edges { role node { ... on User { name } } } } } }",
            json!({ "g": goal, "r": "LEAD" }),
        )
        .await;
    assert_eq!(
        body["data"]["goal"]["members"]["edges"],
        json!([{ "role": "LEAD", "node": { "name": "Lee" } }]),
        "{body}"
    );
}

#[tokio::test]
async fn every_enum_input_field_takes_a_literal_a_variable_and_a_default_but_no_string() {
    let app = spawn_app().await;
    let goal = app
        .create("Goal", json!({ "title": "Parent", "kind": "OBJECTIVE" }))
        .await;
    let user = app
        .create("User", json!({ "name": "Ann", "email": "ann@example.com" }))
        .await;
    let team = app.create("Team", json!({ "name": "Core" })).await;
    // Each enum-typed input field of the default schema, in a mutation that uses it and
    // selects the value back (at this pointer).
    let templates: [(&str, String, &str); 7] = [
        (
            "CreateGoalInput.kind",
            "mutation{decl} { r: createGoal(input: { title: \"G\", kind: {value} }) { kind } }"
                .to_owned(),
            "/data/r/kind",
        ),
        (
            "UpdateGoalInput.kind",
            "mutation{decl} { r: updateGoal(input: { id: $id, kind: {value} }) { kind } }"
                .to_owned(),
            "/data/r/kind",
        ),
        (
            "CreateGoalWithoutParentIdInput.kind",
            "mutation{decl} { r: createGoal(input: { title: \"P\", kind: OBJECTIVE,
               children: { create: [{ title: \"C\", kind: {value} }] } }) {
               children { edges { node { kind } } } } }"
                .to_owned(),
            "/data/r/children/edges/0/node/kind",
        ),
        (
            "AddGoalMembershipInput.role",
            format!(
                "mutation{{decl}} {{ r: addGoalMembership(input: {{ from: $id, to: \"{user}\",
                   role: {{value}} }}) {{ role }} }}"
            ),
            "/data/r/role",
        ),
        (
            "AddTeamMembershipInput.role",
            format!(
                "mutation{{decl}} {{ r: addTeamMembership(input: {{ from: \"{user}\",
                   to: \"{team}\", role: {{value}} }}) {{ role }} }}"
            ),
            "/data/r/role",
        ),
        (
            "GoalMembershipEdgeInput.role",
            format!(
                "mutation{{decl}} {{ r: createGoal(input: {{ title: \"E\", kind: OBJECTIVE,
                   members: {{ add: [{{ to: \"{team}\", role: {{value}} }}] }} }}) {{
                   members {{ edges {{ role }} }} }} }}"
            ),
            "/data/r/members/edges/0/role",
        ),
        (
            "TeamMembershipEdgeInput.role",
            format!(
                "mutation{{decl}} {{ r: createUser(input: {{ name: \"U\",
                   email: \"u{{n}}@example.com\",
                   teams: {{ add: [{{ to: \"{team}\", role: {{value}} }}] }} }}) {{
                   teams {{ edges {{ role }} }} }} }}"
            ),
            "/data/r/teams/edges/0/role",
        ),
    ];
    let (_, input_fields) = enum_positions(&app).await;
    let introspected: BTreeSet<String> = input_fields
        .iter()
        .map(|[input, field, _]| format!("{input}.{field}"))
        .collect();
    let tested: BTreeSet<String> = templates.iter().map(|(n, _, _)| (*n).to_owned()).collect();
    // Filters' `attributeType` (one enum, read by one path) is tested in
    // `an_attribute_type_takes_a_literal_a_variable_and_a_default_but_no_string`.
    let written: BTreeSet<String> = introspected
        .into_iter()
        .filter(|name| !name.ends_with(".attributeType"))
        .collect();
    assert_eq!(written, tested, "every enum-typed input field is tested");
    for (name, template, pointer) in templates {
        let enum_name = &input_fields
            .iter()
            .find(|[i, f, _]| format!("{i}.{f}") == name)
            .expect("introspected")[2];
        let value = value_of(&app.model, enum_name);
        let place = Place {
            app: &app,
            id: template.contains("$id").then(|| goal.clone()),
            template,
            enum_name: enum_name.clone(),
            value: value.clone(),
            what: name.to_owned(),
        };
        for body in place.accepted().await {
            assert_eq!(body.pointer(pointer), Some(&json!(value)), "{name}: {body}");
        }
        place.string_literal_refused().await;
    }
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_subscription_argument_takes_an_enum_variable_and_refuses_a_string() {
    let app = spawn_app().await;
    let subscribe = |query: &str, variables: Value| {
        app.client
            .post(app.url("/graphql"))
            .header("accept", "text/event-stream")
            .json(&json!({ "query": query, "variables": variables }))
            .send()
    };
    let mut by_variable = subscribe(
        "subscription($k: GoalKind) { onCreateGoal(kind: $k) { title kind } }",
        json!({ "k": "KEY_RESULT" }),
    )
    .await
    .expect("the server answers");
    let mut by_default = subscribe(
        "subscription($k: GoalKind = KEY_RESULT) { onCreateGoal(kind: $k) { title } }",
        json!({}),
    )
    .await
    .expect("the server answers");
    app.events.until_subscribers(2).await;
    app.create("Goal", json!({ "title": "Objective", "kind": "OBJECTIVE" }))
        .await;
    app.create("Goal", json!({ "title": "Result", "kind": "KEY_RESULT" }))
        .await;
    for response in [&mut by_variable, &mut by_default] {
        let events = sse_events(response, 1).await;
        let (_, data) = events
            .iter()
            .find(|(name, _)| name == "next")
            .expect("a next event");
        let data: Value = serde_json::from_str(data).expect("JSON");
        assert_eq!(data["data"]["onCreateGoal"]["title"], "Result", "{data}");
    }
    // A string literal is a validation error: 400 before anything runs.
    let refused = app
        .client
        .post(app.url("/graphql"))
        .header("accept", "application/graphql-response+json")
        .json(&json!({ "query": "subscription { onCreateGoal(kind: \"KEY_RESULT\") { title } }" }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.expect("JSON");
    assert!(
        error_message(&body).contains("an enum value is written without quotes"),
        "{body}"
    );
}

#[tokio::test]
async fn an_attribute_type_takes_a_literal_a_variable_and_a_default_but_no_string() {
    let app = spawn_app().await;
    app.create_farm("Hillside").await;
    // Every `attributeType` of the filter inputs is Amplify's one enum.
    let (_, input_fields) = enum_positions(&app).await;
    let types: BTreeSet<&str> = input_fields
        .iter()
        .filter(|[_, field, _]| field == "attributeType")
        .map(|[_, _, enum_name]| enum_name.as_str())
        .collect();
    assert_eq!(types, BTreeSet::from(["ModelAttributeTypes"]));
    let names = |body: &Value| {
        body["data"]["listFarms"]["edges"]
            .as_array()
            .map(|edges| edges.len())
            .unwrap_or(usize::MAX)
    };
    for (query, variables, found) in [
        (
            "{ listFarms(filter: { name: { attributeType: string } }) { edges { node { id } } } }",
            json!({}),
            1,
        ),
        (
            "{ listFarms(filter: { name: { attributeType: number } }) { edges { node { id } } } }",
            json!({}),
            0,
        ),
        (
            "query($t: ModelAttributeTypes) { listFarms(filter: { name: { attributeType: $t } }) { edges { node { id } } } }",
            json!({ "t": "string" }),
            1,
        ),
        (
            "query($t: ModelAttributeTypes = number) { listFarms(filter: { name: { attributeType: $t } }) { edges { node { id } } } }",
            json!({}),
            0,
        ),
    ] {
        let body = app.graphql(query, variables).await;
        assert_eq!(names(&body), found, "{query}: {body}");
    }
    let refused = app
        .graphql(
            "{ listFarms(filter: { name: { attributeType: \"string\" } }) { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert!(
        error_message(&refused).contains("an enum value is written without quotes"),
        "{refused}"
    );
}
