//! Per-user authorization rules (`@auth`), on `examples/notes/schema.graphql`: every caller ×
//! every operation, each cell allowed or refused as the rules say, and a refused write changes
//! nothing; a race against a change of owner; the error's shape.

use std::time::Duration;

use serde_json::{Value, json};
use tablegraph::config::HttpConfig;
use tablegraph::store::StoreTuning;

use crate::helpers::{
    TestApp, api_key_and_tokens, error_message, error_type, spawn_schema_tuned, user_token,
};
use crate::subscriptions::Client;

const API_KEY: &str = "notes-key";
const SCHEMA: &str = "examples/notes/schema.graphql";

/// Who calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// No credential at all.
    Anonymous,
    ApiKey,
    /// `ann`, who owns the note.
    Owner,
    /// `bob`, one of the note's editors.
    Editor,
    /// `cat`, a member of the note's team `blue`.
    Member,
    /// `dan`, who has nothing to do with the note.
    Other,
    /// `zed`, in the `Admin` group.
    Admin,
}

const EVERYONE: [Who; 7] = [
    Who::Anonymous,
    Who::ApiKey,
    Who::Owner,
    Who::Editor,
    Who::Member,
    Who::Other,
    Who::Admin,
];

impl Who {
    /// The request headers of the caller.
    fn headers(self) -> Vec<(&'static str, String)> {
        let bearer = |sub: &str, groups: &[&str]| {
            vec![(
                "authorization",
                format!("Bearer {}", user_token(sub, groups)),
            )]
        };
        match self {
            Who::Anonymous => Vec::new(),
            Who::ApiKey => vec![("x-api-key", API_KEY.to_owned())],
            Who::Owner => bearer("ann", &[]),
            Who::Editor => bearer("bob", &[]),
            Who::Member => bearer("cat", &["blue"]),
            Who::Other => bearer("dan", &["red"]),
            Who::Admin => bearer("zed", &["Admin"]),
        }
    }

    /// The `connection_init` payload of the caller.
    fn payload(self) -> Value {
        let mut payload = serde_json::Map::new();
        for (name, value) in self.headers() {
            payload.insert(name.to_owned(), Value::from(value));
        }
        Value::Object(payload)
    }
}

async fn notes_app(tuning: StoreTuning) -> TestApp {
    spawn_schema_tuned(notes_app_config(), SCHEMA, tuning).await
}

/// The server's settings: the API key and the token issuer of the tests.
fn notes_app_config() -> HttpConfig {
    api_key_and_tokens(API_KEY)
}

/// Runs `query` as `who`: the HTTP status and the body.
async fn run(app: &TestApp, who: Who, query: &str, variables: Value) -> (u16, Value) {
    let mut request = app
        .client
        .post(format!("http://{}/graphql", app.address))
        .json(&json!({ "query": query, "variables": variables }));
    for (name, value) in who.headers() {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// Runs `query` as `who`, which must be let in: the body.
async fn body(app: &TestApp, who: Who, query: &str, variables: Value) -> Value {
    let (status, body) = run(app, who, query, variables).await;
    assert_eq!(status, 200, "{who:?}: {body}");
    body
}

/// The note as stored, read by an admin.
async fn stored(app: &TestApp, id: &str) -> Value {
    let body = body(
        app,
        Who::Admin,
        "query ($id: ID!) { note(id: $id) { title owner editors team budget version } }",
        json!({ "id": id }),
    )
    .await;
    assert!(body.get("errors").is_none(), "{body}");
    body["data"]["note"].clone()
}

async fn note_count(app: &TestApp) -> i64 {
    let body = body(app, Who::Admin, "{ listNotes { totalCount } }", json!({})).await;
    body["data"]["listNotes"]["totalCount"]
        .as_i64()
        .unwrap_or_else(|| panic!("a count: {body}"))
}

/// A note of ann's, edited by bob, read by team blue.
async fn anns_note(app: &TestApp) -> String {
    let body = body(
        app,
        Who::Owner,
        r#"mutation { createNote(input: { title: "Plan", editors: ["bob"], team: "blue", budget: 7 }) { id owner } }"#,
        json!({}),
    )
    .await;
    assert_eq!(body["data"]["createNote"]["owner"], "ann", "{body}");
    body["data"]["createNote"]["id"]
        .as_str()
        .expect("an id")
        .to_owned()
}

/// Whether an answer was refused as the rules refuse: 401 before GraphQL for a caller without
/// credentials, else an `Unauthorized` error and no value at `field`.
fn refused(status: u16, body: &Value, field: &str) -> bool {
    if status == 401 {
        return true;
    }
    let unauthorized = body["errors"].as_array().is_some_and(|errors| {
        errors
            .iter()
            .any(|e| e["extensions"]["errorType"] == "Unauthorized")
    });
    unauthorized && body["data"][field].is_null()
}

fn assert_cell(who: Who, operation: &str, allowed: bool, status: u16, body: &Value, field: &str) {
    if allowed {
        assert_eq!(status, 200, "{who:?} {operation}: {body}");
        assert!(body.get("errors").is_none(), "{who:?} {operation}: {body}");
        assert!(
            !body["data"][field].is_null(),
            "{who:?} {operation}: {body}"
        );
    } else {
        assert!(
            refused(status, body, field),
            "{who:?} {operation} should be refused: {status} {body}"
        );
    }
}

#[tokio::test]
async fn each_caller_may_do_what_the_rules_say_and_a_refusal_changes_nothing() {
    use Who::*;
    let app = notes_app(StoreTuning::default()).await;
    for who in EVERYONE {
        // create
        let allowed = matches!(who, Owner | Editor | Member | Other | Admin);
        let before = note_count(&app).await;
        let (status, answer) = run(
            &app,
            who,
            r#"mutation { createNote(input: { title: "Mine" }) { id owner } }"#,
            json!({}),
        )
        .await;
        assert_cell(who, "create", allowed, status, &answer, "createNote");
        assert_eq!(
            note_count(&app).await,
            before + i64::from(allowed),
            "{who:?}"
        );

        let id = anns_note(&app).await;
        let vars = json!({ "id": id });
        let as_stored = stored(&app, &id).await;

        // read one, by its own query and through `node`
        let readers = matches!(who, Owner | Editor | Member | Admin);
        let (status, answer) = run(
            &app,
            who,
            "query ($id: ID!) { note(id: $id) { id title } }",
            vars.clone(),
        )
        .await;
        assert_cell(who, "read", readers, status, &answer, "note");
        let (status, answer) = run(
            &app,
            who,
            "query ($id: ID!) { node(id: $id) { id } }",
            vars.clone(),
        )
        .await;
        assert_cell(who, "node", readers, status, &answer, "node");
        let (status, answer) = run(
            &app,
            who,
            "query ($id: ID!) { nodes(ids: [$id]) { id } }",
            vars.clone(),
        )
        .await;
        if status == 200 {
            assert_eq!(
                answer["data"]["nodes"][0].is_null(),
                !readers,
                "{who:?} nodes: {answer}"
            );
            assert_eq!(
                answer.get("errors").is_some(),
                !readers,
                "{who:?} nodes: {answer}"
            );
        }

        // read in a connection: the list leaves out what the caller may not read
        let (status, answer) = run(
            &app,
            who,
            "{ listNotes(first: 100) { edges { node { id } } } }",
            json!({}),
        )
        .await;
        if who == ApiKey {
            assert!(refused(status, &answer, "listNotes"), "{answer}");
        } else if who != Anonymous {
            assert!(answer.get("errors").is_none(), "{who:?}: {answer}");
            let listed = answer["data"]["listNotes"]["edges"]
                .as_array()
                .expect("edges")
                .iter()
                .any(|edge| edge["node"]["id"] == id);
            assert_eq!(listed, readers, "{who:?} lists the note: {answer}");
        } else {
            assert_eq!(status, 401);
        }

        // a field with rules of its own: the owner and admins read it
        if readers {
            let answer = body(
                &app,
                who,
                "query ($id: ID!) { note(id: $id) { title budget } }",
                vars.clone(),
            )
            .await;
            let sees = matches!(who, Owner | Admin);
            assert_eq!(answer["data"]["note"]["title"], "Plan", "{who:?}: {answer}");
            assert_eq!(
                answer["data"]["note"]["budget"].is_null(),
                !sees,
                "{who:?}: {answer}"
            );
            assert_eq!(answer.get("errors").is_some(), !sees, "{who:?}: {answer}");
        }

        // update
        let allowed = matches!(who, Owner | Editor | Admin);
        let (status, answer) = run(
            &app,
            who,
            r#"mutation ($id: ID!) { updateNote(input: { id: $id, title: "Changed" }) { title } }"#,
            vars.clone(),
        )
        .await;
        assert_cell(who, "update", allowed, status, &answer, "updateNote");
        let after = stored(&app, &id).await;
        if allowed {
            assert_eq!(after["title"], "Changed", "{who:?}");
        } else {
            assert_eq!(after, as_stored, "{who:?}'s refused update wrote nothing");
        }
        let as_stored = after;

        // grant (share the note with one more editor, and with another team), then revoke:
        // the owner and admins manage who reaches the note; an editor changes its content only
        let allowed = matches!(who, Owner | Admin);
        for (column, editors, team) in [
            ("grant", json!(["bob", "dan"]), json!("red")),
            ("revoke", json!(["bob"]), json!("blue")),
        ] {
            let (status, answer) = run(
                &app,
                who,
                "mutation ($id: ID!, $editors: [String], $team: String) { updateNote(input: { id: $id, editors: $editors, team: $team }) { editors team } }",
                json!({ "id": id, "editors": editors, "team": team }),
            )
            .await;
            assert_cell(who, column, allowed, status, &answer, "updateNote");
            let after = stored(&app, &id).await;
            if allowed {
                assert_eq!(after["editors"], editors, "{who:?} {column}");
                assert_eq!(after["team"], team, "{who:?} {column}");
            } else {
                assert_eq!(after, as_stored, "{who:?}'s refused {column} wrote nothing");
            }
        }
        let as_stored = stored(&app, &id).await;

        // delete
        let allowed = matches!(who, Owner | Admin);
        let (status, answer) = run(
            &app,
            who,
            "mutation ($id: ID!) { deleteNote(id: $id) { id } }",
            vars.clone(),
        )
        .await;
        assert_cell(who, "delete", allowed, status, &answer, "deleteNote");
        let left = body(
            &app,
            Admin,
            "query ($id: ID!) { note(id: $id) { id } }",
            vars.clone(),
        )
        .await;
        if allowed {
            assert!(left["data"]["note"].is_null(), "{who:?}");
        } else {
            assert_eq!(
                stored(&app, &id).await,
                as_stored,
                "{who:?}'s refused delete wrote nothing"
            );
        }
    }
}

#[tokio::test]
async fn nobody_writes_a_note_for_someone_else_or_takes_one_over() {
    let app = notes_app(StoreTuning::default()).await;
    let before = note_count(&app).await;
    // dan cannot create a note owned by ann, nor one naming nobody but ann as editor.
    let (_, answer) = run(
        &app,
        Who::Other,
        r#"mutation { createNote(input: { title: "Forged", owner: "ann" }) { id } }"#,
        json!({}),
    )
    .await;
    assert!(refused(200, &answer, "createNote"), "{answer}");
    assert_eq!(note_count(&app).await, before);

    // bob, an editor, may change the title but not who owns the note.
    let id = anns_note(&app).await;
    let vars = json!({ "id": id });
    let as_stored = stored(&app, &id).await;
    let (_, answer) = run(
        &app,
        Who::Editor,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, owner: "bob" }) { owner } }"#,
        vars.clone(),
    )
    .await;
    assert!(refused(200, &answer, "updateNote"), "{answer}");
    // nor set the owner-only field.
    let (_, answer) = run(
        &app,
        Who::Editor,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, budget: 1000 }) { title } }"#,
        vars.clone(),
    )
    .await;
    assert!(refused(200, &answer, "updateNote"), "{answer}");
    assert_eq!(stored(&app, &id).await, as_stored);

    // The owner hands the note to eve: from then on ann is a stranger to it. The change is
    // made, and its answer, a note ann may no longer read, is withheld (as AppSync does).
    let answer = body(
        &app,
        Who::Owner,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, owner: "eve" }) { owner } }"#,
        vars.clone(),
    )
    .await;
    assert!(answer["data"]["updateNote"].is_null(), "{answer}");
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{answer}"
    );
    assert_eq!(stored(&app, &id).await["owner"], "eve");
    let (_, answer) = run(
        &app,
        Who::Owner,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, title: "Mine again?" }) { title } }"#,
        vars.clone(),
    )
    .await;
    assert!(refused(200, &answer, "updateNote"), "{answer}");
}

#[tokio::test]
async fn the_error_tells_nothing_of_what_exists() {
    let app = notes_app(StoreTuning::default()).await;
    let id = anns_note(&app).await;
    let missing = "0190b0c4-0000-7000-8000-000000000000";
    let mut answers = Vec::new();
    for target in [id.as_str(), missing] {
        let vars = json!({ "id": target });
        let (_, read) = run(
            &app,
            Who::Other,
            "query ($id: ID!) { note(id: $id) { title } }",
            vars.clone(),
        )
        .await;
        let (_, update) = run(
            &app,
            Who::Other,
            r#"mutation ($id: ID!) { updateNote(input: { id: $id, title: "x" }) { title } }"#,
            vars.clone(),
        )
        .await;
        let (_, delete) = run(
            &app,
            Who::Other,
            "mutation ($id: ID!) { deleteNote(id: $id) { id } }",
            vars,
        )
        .await;
        answers.push([read, update, delete]);
    }
    // An existing note of someone else's and no note at all are refused alike.
    assert_eq!(answers[0], answers[1]);
    let error = &answers[0][0]["errors"][0];
    assert_eq!(error["extensions"]["errorType"], "Unauthorized", "{error}");
    let message = error["message"].as_str().expect("a message");
    assert!(
        !message.contains(&id) && !message.contains("ann"),
        "{message}"
    );
}

#[tokio::test]
async fn public_readers_with_the_api_key_read_notices_and_write_none() {
    let app = notes_app(StoreTuning::default()).await;
    let (_, answer) = run(
        &app,
        Who::ApiKey,
        r#"mutation { createNotice(input: { text: "Hi" }) { id } }"#,
        json!({}),
    )
    .await;
    assert!(refused(200, &answer, "createNotice"), "{answer}");
    let created = body(
        &app,
        Who::Admin,
        r#"mutation { createNotice(input: { text: "Hi" }) { id } }"#,
        json!({}),
    )
    .await;
    let id = created["data"]["createNotice"]["id"].clone();
    for who in [Who::ApiKey, Who::Other] {
        let answer = body(
            &app,
            who,
            "query ($id: ID!) { notice(id: $id) { text } }",
            json!({ "id": id }),
        )
        .await;
        assert_eq!(answer["data"]["notice"]["text"], "Hi", "{who:?}: {answer}");
        // Everyone reads every notice: the count is theirs to see.
        let answer = body(&app, who, "{ listNotices { totalCount } }", json!({})).await;
        assert_eq!(
            answer["data"]["listNotices"]["totalCount"], 1,
            "{who:?}: {answer}"
        );
    }
    // A count of notes would tell dan of notes he may not read.
    let (_, answer) = run(&app, Who::Other, "{ listNotes { totalCount } }", json!({})).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{answer}"
    );
}

#[tokio::test]
async fn a_page_of_notes_stays_full_of_what_the_caller_may_read() {
    let app = notes_app(StoreTuning::default()).await;
    // 30 notes of ann's, 5 of dan's among them.
    for n in 0..30 {
        let who = if n % 6 == 0 { Who::Other } else { Who::Owner };
        body(
            &app,
            who,
            "mutation ($t: String!) { createNote(input: { title: $t }) { id } }",
            json!({ "t": format!("note {n}") }),
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut after = Value::Null;
    loop {
        let answer = body(
            &app,
            Who::Other,
            "query ($after: String) { listNotes(first: 2, after: $after) { edges { node { title owner } } pageInfo { hasNextPage endCursor } } }",
            json!({ "after": after }),
        )
        .await;
        let page = &answer["data"]["listNotes"];
        let edges = page["edges"].as_array().expect("edges");
        for edge in edges {
            assert_eq!(edge["node"]["owner"], "dan", "{answer}");
            seen.push(edge["node"]["title"].as_str().expect("a title").to_owned());
        }
        if page["pageInfo"]["hasNextPage"] != true {
            break;
        }
        // A page before the last is full.
        assert_eq!(edges.len(), 2, "{answer}");
        after = page["pageInfo"]["endCursor"].clone();
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
}

#[tokio::test]
async fn subscribers_receive_only_what_they_may_read() {
    let app = notes_app(StoreTuning::default()).await;
    let id = anns_note(&app).await;
    let query = "subscription { onUpdateNote { id title } }";
    let subscribers = [Who::Owner, Who::Editor, Who::Member, Who::Other, Who::Admin];
    let mut clients = Vec::new();
    for who in subscribers {
        let mut client = Client::connected(&app, who.payload()).await;
        client.subscribe("1", query, json!({})).await;
        clients.push((who, client));
    }
    // An API key reads no note: its subscription is refused.
    let mut by_key = Client::connected(&app, Who::ApiKey.payload()).await;
    by_key.subscribe("1", query, json!({})).await;
    let refusal = by_key.next_of("1").await;
    assert!(refusal["data"].is_null(), "{refusal}");
    assert_eq!(
        refusal["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{refusal}"
    );
    app.events.until_subscribers(subscribers.len()).await;

    // ann's note changes, then a note dan owns: dan's first event is his own note's.
    body(
        &app,
        Who::Owner,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, title: "Secret plan" }) { id } }"#,
        json!({ "id": id }),
    )
    .await;
    let dans = body(
        &app,
        Who::Other,
        r#"mutation { createNote(input: { title: "Dan's" }) { id } }"#,
        json!({}),
    )
    .await;
    let dans = dans["data"]["createNote"]["id"].clone();
    body(
        &app,
        Who::Other,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, title: "Dan's, changed" }) { id } }"#,
        json!({ "id": dans }),
    )
    .await;
    for (who, client) in &mut clients {
        let event = client.next_of("1").await;
        let expected = if *who == Who::Other {
            json!({ "id": dans, "title": "Dan's, changed" })
        } else {
            json!({ "id": id, "title": "Secret plan" })
        };
        assert_eq!(event["data"]["onUpdateNote"], expected, "{who:?}");
    }
}

#[tokio::test]
async fn a_non_owner_racing_a_change_of_owner_never_gets_through() {
    // Every storage call takes a few milliseconds, so each update's read and its write are
    // far apart, and the change of owner lands between them.
    let app = notes_app(StoreTuning {
        latency: Some(Duration::from_millis(3)),
        ..StoreTuning::default()
    })
    .await;
    // The note is dan's at first; an admin hands it to eve while dan writes 20 times.
    let created = body(
        &app,
        Who::Other,
        r#"mutation { createNote(input: { title: "Dan's" }) { id } }"#,
        json!({}),
    )
    .await;
    let id = created["data"]["createNote"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let vars = json!({ "id": id });
    let updates = (0..20).map(|n| {
        let (app, vars) = (&app, vars.clone());
        async move {
            run(
                app,
                Who::Other,
                "mutation ($id: ID!, $t: String!) { updateNote(input: { id: $id, title: $t }) { version } }",
                json!({ "id": vars["id"], "t": format!("dan {n}") }),
            )
            .await
            .1
        }
    });
    // The handover may lose every try against dan's writers; it tries until it commits.
    let handover = async {
        loop {
            let (_, answer) = run(
                &app,
                Who::Admin,
                r#"mutation ($id: ID!) { updateNote(input: { id: $id, owner: "eve" }) { version } }"#,
                vars.clone(),
            )
            .await;
            if answer["errors"][0]["extensions"]["errorType"] != "ConflictUnhandled" {
                return (200, answer);
            }
        }
    };
    let (updates, (_, handover)) = tokio::join!(futures::future::join_all(updates), handover);
    let handed_at = handover["data"]["updateNote"]["version"]
        .as_i64()
        .unwrap_or_else(|| panic!("the handover commits: {handover}"));
    for answer in &updates {
        match answer["data"]["updateNote"]["version"].as_i64() {
            // Written while the note was still dan's.
            Some(version) => assert!(version < handed_at, "{answer}"),
            None => {
                let error = &answer["errors"][0]["extensions"]["errorType"];
                assert!(
                    error == "Unauthorized" || error == "ConflictUnhandled",
                    "{answer}"
                );
            }
        }
    }
    let stored = stored(&app, &id).await;
    assert_eq!(stored["owner"], "eve");
    // Nothing of dan's was written after the handover.
    assert_eq!(stored["version"], handed_at, "{stored}");
    assert!(
        updates.iter().any(|a| a.get("errors").is_some()),
        "the race never happened: every update of dan's landed before the handover"
    );
}

#[tokio::test]
async fn links_follow_the_rules_of_their_source_and_hide_what_the_reader_may_not_read() {
    let app = notes_app(StoreTuning::default()).await;
    let plan = anns_note(&app).await;
    let budget = anns_note(&app).await;
    let dans = body(
        &app,
        Who::Other,
        r#"mutation { createNote(input: { title: "Dan's" }) { id } }"#,
        json!({}),
    )
    .await;
    let dans = dans["data"]["createNote"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let link = "mutation ($from: ID!, $to: ID!) { addRelatedTo(input: { from: $from, to: $to }) { createdAt } }";
    let unlink = "mutation ($from: ID!, $to: ID!) { removeRelatedTo(from: $from, to: $to) }";
    let related = "query ($id: ID!) { note(id: $id) { related { id } } }";

    // bob edits ann's plan, so he links it; dan does not.
    let answer = body(
        &app,
        Who::Editor,
        link,
        json!({ "from": plan, "to": budget }),
    )
    .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let (_, answer) = run(&app, Who::Other, link, json!({ "from": plan, "to": dans })).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{answer}"
    );
    let (_, answer) = run(
        &app,
        Who::Other,
        unlink,
        json!({ "from": plan, "to": budget }),
    )
    .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{answer}"
    );
    let answer = body(&app, Who::Owner, related, json!({ "id": plan })).await;
    assert_eq!(
        answer["data"]["note"]["related"],
        json!([{ "id": budget }]),
        "{answer}"
    );

    // dan may not link his own note to ann's plan, which he may not read, and is answered as
    // for a note that is not there.
    let (_, to_plan) = run(&app, Who::Other, link, json!({ "from": dans, "to": plan })).await;
    let (_, to_nothing) = run(
        &app,
        Who::Other,
        link,
        json!({ "from": dans, "to": "01a20000-0000-7000-8000-000000000000" }),
    )
    .await;
    assert_eq!(
        to_plan["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{to_plan}"
    );
    assert_eq!(
        to_plan["errors"][0]["message"],
        to_nothing["errors"][0]["message"]
    );
    // An admin links them; dan reading it back sees nothing of ann's.
    let answer = body(&app, Who::Admin, link, json!({ "from": dans, "to": plan })).await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let answer = body(&app, Who::Other, related, json!({ "id": dans })).await;
    assert_eq!(answer["data"]["note"]["related"], json!([]), "{answer}");
    let answer = body(&app, Who::Admin, related, json!({ "id": dans })).await;
    assert_eq!(
        answer["data"]["note"]["related"],
        json!([{ "id": plan }]),
        "{answer}"
    );
    // An edge tells of both its ends: subscribing to links takes reading every note.
    let mut client = Client::connected(&app, Who::Other.payload()).await;
    client
        .subscribe(
            "1",
            "subscription { onRelatedToAdded { createdAt } }",
            json!({}),
        )
        .await;
    let refusal = client.next_of("1").await;
    assert_eq!(
        refusal["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{refusal}"
    );
}

#[tokio::test]
async fn a_filter_cannot_read_a_field_its_caller_may_not_read() {
    let app = notes_app(StoreTuning::default()).await;
    let id = anns_note(&app).await;
    let by_budget = "{ listNotes(filter: { budget: { gt: 5 } }) { edges { node { id } } } }";
    // cat reads the note but not its budget: a filter on the budget would tell it.
    let (_, answer) = run(&app, Who::Member, by_budget, json!({})).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{answer}"
    );
    let (_, answer) = run(
        &app,
        Who::Editor,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, title: "x" }, condition: { budget: { eq: 7 } }) { id } }"#,
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{answer}"
    );
    let mut client = Client::connected(&app, Who::Member.payload()).await;
    client
        .subscribe(
            "1",
            "subscription { onUpdateNote(budget: 7) { id } }",
            json!({}),
        )
        .await;
    let refusal = client.next_of("1").await;
    assert_eq!(
        refusal["errors"][0]["extensions"]["errorType"], "Unauthorized",
        "{refusal}"
    );
    // An admin reads every budget, so filters on it.
    let answer = body(&app, Who::Admin, by_budget, json!({})).await;
    assert_eq!(
        answer["data"]["listNotes"]["edges"][0]["node"]["id"], id,
        "{answer}"
    );
}

#[tokio::test]
async fn a_page_of_links_stays_full_past_the_notes_its_reader_may_not_read() {
    let app = notes_app(StoreTuning::default()).await;
    let hub = anns_note(&app).await;
    // Links sort by their target, in creation order: dan's notes come between ann's.
    for (who, title) in [
        (Who::Other, "d1"),
        (Who::Owner, "a1"),
        (Who::Other, "d2"),
        (Who::Other, "d3"),
        (Who::Owner, "a2"),
        (Who::Other, "d4"),
        (Who::Owner, "a3"),
    ] {
        let created = body(
            &app,
            who,
            "mutation ($t: String!) { createNote(input: { title: $t }) { id } }",
            json!({ "t": title }),
        )
        .await;
        let id = created["data"]["createNote"]["id"].clone();
        // Only someone who may read both ends links them: an admin.
        let linked = body(
            &app,
            Who::Admin,
            "mutation ($from: ID!, $to: ID!) { addRelatedTo(input: { from: $from, to: $to }) { createdAt } }",
            json!({ "from": hub, "to": id }),
        )
        .await;
        assert!(linked.get("errors").is_none(), "{linked}");
    }
    let page = |arguments: &str| {
        format!(
            "query ($id: ID!) {{ note(id: $id) {{ links({arguments}) {{
                edges {{ node {{ title }} }}
                pageInfo {{ hasNextPage hasPreviousPage endCursor startCursor }} }} }} }}"
        )
    };
    let titles = |answer: &Value| -> Vec<String> {
        answer["data"]["note"]["links"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("edges in {answer}"))
            .iter()
            .map(|e| e["node"]["title"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let mut request = app
        .client
        .post(format!("http://{}/graphql", app.address))
        .header("x-tablegraph-storage-calls", "1")
        .json(&json!({ "query": page("first: 2"), "variables": { "id": hub } }));
    for (name, value) in Who::Owner.headers() {
        request = request.header(name, value);
    }
    let first: Value = request
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("a JSON body");
    assert!(first.get("errors").is_none(), "{first}");
    assert_eq!(titles(&first), ["a1", "a2"], "{first}");
    // Each read of edges asks for as many as were read before: 2 (d1 a1), 2 (d2 d3), then 4
    // (a2 d4 a3), not one read per note left out.
    let queries = first["extensions"]["storageCalls"]
        .as_array()
        .unwrap_or_else(|| panic!("storage calls in {first}"))
        .iter()
        .filter(|call| call["operation"] == "Query")
        .count();
    assert_eq!(queries, 3, "{first}");
    let info = &first["data"]["note"]["links"]["pageInfo"];
    assert_eq!(info["hasNextPage"], true, "{first}");
    let after = info["endCursor"]
        .as_str()
        .expect("an end cursor")
        .to_owned();
    let rest = body(
        &app,
        Who::Owner,
        &page(&format!("first: 2, after: \"{after}\"")),
        json!({ "id": hub }),
    )
    .await;
    assert_eq!(titles(&rest), ["a3"], "{rest}");
    assert_eq!(
        rest["data"]["note"]["links"]["pageInfo"]["hasNextPage"],
        false
    );
    // Backwards alike.
    let last = body(&app, Who::Owner, &page("last: 2"), json!({ "id": hub })).await;
    assert_eq!(titles(&last), ["a2", "a3"], "{last}");
    assert_eq!(
        last["data"]["note"]["links"]["pageInfo"]["hasPreviousPage"],
        true
    );
    // An admin reads every link.
    let all = body(&app, Who::Admin, &page("first: 10"), json!({ "id": hub })).await;
    assert_eq!(
        titles(&all),
        ["d1", "a1", "d2", "d3", "a2", "d4", "a3"],
        "{all}"
    );
}

#[tokio::test]
async fn a_resolvers_count_covers_only_what_its_reader_may_read() {
    let app = spawn_schema_tuned(
        notes_app_config(),
        "tests/fixtures/ruled-resolvers/schema.graphql",
        StoreTuning::default(),
    )
    .await;
    let create = "mutation ($t: String!) { createNote(input: { title: $t }) { id } }";
    let mut ids = Vec::new();
    for (who, title) in [
        (Who::Owner, "hub"),
        (Who::Owner, "ann's"),
        (Who::Other, "dan's"),
    ] {
        let created = body(&app, who, create, json!({ "t": title })).await;
        ids.push(created["data"]["createNote"]["id"].clone());
    }
    for target in &ids[1..] {
        let linked = body(
            &app,
            Who::Admin,
            "mutation ($from: ID!, $to: ID!) { addLinksTo(input: { from: $from, to: $to }) { createdAt } }",
            json!({ "from": ids[0], "to": target }),
        )
        .await;
        assert!(linked.get("errors").is_none(), "{linked}");
    }
    let count = body(
        &app,
        Who::Owner,
        "query ($id: ID!) { note(id: $id) { linkCount } }",
        json!({ "id": ids[0] }),
    )
    .await;
    assert_eq!(
        count["data"]["note"]["linkCount"], 1,
        "dan's note is not counted: {count}"
    );
}

#[tokio::test]
async fn a_filtered_page_under_the_rules_tells_no_count_of_what_the_caller_may_not_read() {
    let app = notes_app(StoreTuning::default()).await;
    for title in ["ann's one", "ann's two", "ann's three"] {
        let body = body(
            &app,
            Who::Owner,
            "mutation ($t: String!) { createNote(input: { title: $t }) { id } }",
            json!({ "t": title }),
        )
        .await;
        assert!(body.get("errors").is_none(), "{body}");
    }
    let query =
        "{ listNotes(filter: { title: { contains: \"one\" } }) { edges { node { title } } } }";
    // dan reads none of ann's notes: his page is empty, and says nothing of how many it passed.
    let dan = body(&app, Who::Other, query, json!({})).await;
    assert_eq!(dan["data"]["listNotes"]["edges"], json!([]), "{dan}");
    let told = &dan["extensions"]["filters"][0];
    assert_eq!(told["path"], "listNotes", "{dan}");
    assert!(
        told.get("itemsRead").is_none() && told.get("itemsMatched").is_none(),
        "{dan}"
    );
    // An admin, whom no rule filters, is told the counts.
    let admin = body(&app, Who::Admin, query, json!({})).await;
    assert_eq!(admin["extensions"]["filters"][0]["itemsRead"], 3, "{admin}");
    assert_eq!(
        admin["extensions"]["filters"][0]["itemsMatched"], 1,
        "{admin}"
    );
}

#[tokio::test]
async fn an_editor_may_neither_share_a_note_nor_take_it_from_another_editor() {
    let app = notes_app(StoreTuning::default()).await;
    let id = anns_note(&app).await;
    let update = "mutation ($id: ID!, $editors: [String], $team: String) { updateNote(input: { id: $id, editors: $editors, team: $team }) { id } }";
    // bob edits the note, and cannot share it further, take eve's access away, or hand it to
    // a whole group.
    let as_stored = stored(&app, &id).await;
    for (editors, team) in [
        (json!(["bob", "dan"]), json!("blue")),
        (json!([]), json!("blue")),
        (json!(["bob"]), json!("everyone")),
    ] {
        let (status, answer) = run(
            &app,
            Who::Editor,
            update,
            json!({ "id": id, "editors": editors, "team": team }),
        )
        .await;
        assert!(refused(status, &answer, "updateNote"), "{answer}");
        assert_eq!(stored(&app, &id).await, as_stored, "nothing written");
    }
    // Content he may change.
    let answer = body(
        &app,
        Who::Editor,
        r#"mutation ($id: ID!) { updateNote(input: { id: $id, body: "more" }) { id } }"#,
        json!({ "id": id }),
    )
    .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    // ann takes bob's access away, and bob can no longer read the note.
    let answer = body(
        &app,
        Who::Owner,
        update,
        json!({ "id": id, "editors": [], "team": "blue" }),
    )
    .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let (status, answer) = run(
        &app,
        Who::Editor,
        "query ($id: ID!) { note(id: $id) { id } }",
        json!({ "id": id }),
    )
    .await;
    assert!(refused(status, &answer, "note"), "{answer}");
}

#[tokio::test]
async fn a_rule_with_manage_owners_lets_its_co_owners_share_as_amplify_does() {
    let schema = std::fs::read_to_string(crate::helpers::repository_file(SCHEMA))
        .expect("the notes schema")
        .replace(
            r#"{ allow: owner, ownerField: "editors", operations: [read, update] }"#,
            r#"{ allow: owner, ownerField: "editors", operations: [read, update], manageOwners: true }"#,
        );
    assert!(
        schema.contains("manageOwners: true"),
        "the rule is in the schema"
    );
    // A directory of its own: a `resolvers/` beside the schema would be read with it.
    let dir = crate::helpers::scratch("manage-owners");
    std::fs::create_dir_all(&dir).expect("a directory");
    let path = dir.join("schema.graphql");
    std::fs::write(&path, schema).expect("a schema file");
    let app = spawn_schema_tuned(
        notes_app_config(),
        path.to_str().expect("UTF-8"),
        StoreTuning::default(),
    )
    .await;
    let id = anns_note(&app).await;
    let answer = body(
        &app,
        Who::Editor,
        "mutation ($id: ID!) { updateNote(input: { id: $id, editors: [\"bob\", \"dan\"] }) { editors } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        answer["data"]["updateNote"]["editors"],
        json!(["bob", "dan"]),
        "{answer}"
    );
    std::fs::remove_file(&path).expect("removable");
}

#[tokio::test]
async fn a_reference_to_a_node_the_caller_may_not_read_is_answered_as_one_to_no_node() {
    let app = notes_app(StoreTuning::default()).await;
    let id = anns_note(&app).await;
    let before = stored(&app, &id).await;
    let comment =
        "mutation ($note: ID!) { createComment(input: { noteId: $note, text: \"spam\" }) { id } }";
    let comments = || async {
        body(
            &app,
            Who::Admin,
            "{ listComments { totalCount } }",
            json!({}),
        )
        .await["data"]["listComments"]["totalCount"]
            .clone()
    };
    let count = comments().await;
    // dan may not read ann's note: his comment on it is refused as one on a note that is not
    // there, and writes nothing, the note's version included.
    let made_up = "0190d1c2-0000-7000-8000-000000000000";
    let (_, on_anns) = run(&app, Who::Other, comment, json!({ "note": id })).await;
    let (_, on_none) = run(&app, Who::Other, comment, json!({ "note": made_up })).await;
    assert_eq!(
        error_type(&on_anns),
        error_type(&on_none),
        "{on_anns}\n{on_none}"
    );
    assert_eq!(
        error_message(&on_anns).replace(&id, "ID"),
        error_message(&on_none).replace(made_up, "ID"),
    );
    assert_eq!(stored(&app, &id).await, before, "the note is as it was");
    assert_eq!(comments().await, count, "no comment was written");
    // bob, who may read it, comments.
    let (status, answer) = run(&app, Who::Editor, comment, json!({ "note": id })).await;
    assert_eq!(status, 200);
    assert!(answer.get("errors").is_none(), "{answer}");
    // And in a batch of comments, one on ann's note fails the batch as a missing note would.
    let (_, batch) = run(
        &app,
        Who::Other,
        "mutation ($note: ID!) { createComments(input: [{ noteId: $note, text: \"a\" }]) { id } }",
        json!({ "note": id }),
    )
    .await;
    assert!(
        error_message(&batch).contains("there is no Note"),
        "{batch}"
    );
}

#[tokio::test]
async fn a_caller_in_hundreds_of_groups_is_tested_against_a_groups_field_within_dynamodb_s_limits()
{
    let app = notes_app(StoreTuning::default()).await;
    let id = anns_note(&app).await;
    let list = "{ listNotes(first: 100) { edges { node { id } } } }";
    let as_member_of = |count: usize| {
        let mut groups: Vec<String> = (0..count).map(|n| format!("group-{n:04}")).collect();
        groups.push("blue".to_owned());
        let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
        format!("Bearer {}", user_token("cat", &groups))
    };
    let listed = |answer: &Value| {
        answer["data"]["listNotes"]["edges"]
            .as_array()
            .is_some_and(|edges| edges.iter().any(|edge| edge["node"]["id"] == id))
    };
    // 250 groups: one IN a hundred groups, and the note of team blue is listed.
    let answer: Value = app
        .client
        .post(app.url("/graphql"))
        .header("authorization", as_member_of(250))
        .json(&json!({ "query": list }))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert!(answer.get("errors").is_none(), "{answer}");
    assert!(listed(&answer), "{answer}");
    // 2,000 groups are more than one expression holds: refused, and told why.
    let answer: Value = app
        .client
        .post(app.url("/graphql"))
        .header("authorization", as_member_of(2000))
        .json(&json!({ "query": list }))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(error_type(&answer), "Unauthorized", "{answer}");
    assert!(error_message(&answer).contains("groupsField"), "{answer}");
}

#[tokio::test]
async fn linking_a_node_the_caller_may_not_read_is_answered_as_linking_none() {
    let schema = r#"
type Box @model @auth(rules: [{ allow: owner }]) {
  name: String!
  things: [Thing] @hasMany(index: "GSI01", field: "boxId")
}
type Thing @model @auth(rules: [{ allow: owner }]) {
  name: String!
  boxId: ID
  box: Box @belongsTo(field: "boxId")
}
"#;
    // A directory of its own: a `resolvers/` beside the schema would be read with it.
    let dir = crate::helpers::scratch("linking");
    std::fs::create_dir_all(&dir).expect("a directory");
    let path = dir.join("schema.graphql");
    std::fs::write(&path, schema).expect("a schema file");
    let app = spawn_schema_tuned(
        notes_app_config(),
        path.to_str().expect("UTF-8"),
        StoreTuning::default(),
    )
    .await;
    let anns = body(
        &app,
        Who::Owner,
        r#"mutation { createThing(input: { name: "ann's" }) { id } }"#,
        json!({}),
    )
    .await;
    let thing = anns["data"]["createThing"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let link = "mutation ($thing: ID!) { createBox(input: { name: \"dan's\", things: { link: [$thing] } }) { id } }";
    let made_up = "0190d1c2-0000-7000-8000-000000000000";
    let (_, on_anns) = run(&app, Who::Other, link, json!({ "thing": thing })).await;
    let (_, on_none) = run(&app, Who::Other, link, json!({ "thing": made_up })).await;
    assert_eq!(error_type(&on_anns), error_type(&on_none), "{on_anns}");
    assert_eq!(
        error_message(&on_anns).replace(&thing, "ID"),
        error_message(&on_none).replace(made_up, "ID"),
    );
    std::fs::remove_file(&path).expect("removable");
}

#[tokio::test]
async fn a_batch_cannot_move_a_node_under_a_parent_the_caller_may_no_longer_read() {
    let app = notes_app(StoreTuning::default()).await;
    // ann's note, which dan may read while he is its editor; dan comments on it, and keeps a
    // note of his own with a comment.
    let anns = body(
        &app,
        Who::Owner,
        r#"mutation { createNote(input: { title: "Shared", editors: ["dan"] }) { id } }"#,
        json!({}),
    )
    .await["data"]["createNote"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let dans = body(
        &app,
        Who::Other,
        r#"mutation { createNote(input: { title: "Mine" }) { id } }"#,
        json!({}),
    )
    .await["data"]["createNote"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let comment = |note: String| {
        let app = &app;
        async move {
            body(
                app,
                Who::Other,
                "mutation ($note: ID!) { createComment(input: { noteId: $note, text: \"c\" }) { id } }",
                json!({ "note": note }),
            )
            .await["data"]["createComment"]["id"]
                .as_str()
                .expect("an id")
                .to_owned()
        }
    };
    let on_anns = comment(anns.clone()).await;
    let on_dans = comment(dans.clone()).await;
    // ann takes dan's access away.
    let answer = body(
        &app,
        Who::Owner,
        "mutation ($id: ID!) { updateNote(input: { id: $id, editors: [] }) { id } }",
        json!({ "id": anns }),
    )
    .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    // One batch moves his comment out of ann's note and another into it: the two writes of
    // her note fold into one, which must still hold dan to her note's read rules.
    let (_, answer) = run(
        &app,
        Who::Other,
        "mutation ($input: [UpdateCommentInput!]!) { updateComments(input: $input) { id } }",
        json!({ "input": [
            { "id": on_anns, "noteId": dans },
            { "id": on_dans, "noteId": anns },
        ] }),
    )
    .await;
    assert!(answer.get("errors").is_some(), "{answer}");
    let moved = body(
        &app,
        Who::Admin,
        "query ($id: ID!) { comment(id: $id) { noteId } }",
        json!({ "id": on_dans }),
    )
    .await;
    assert_eq!(moved["data"]["comment"]["noteId"], json!(dans), "{moved}");
}
