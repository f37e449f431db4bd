//! Conflict detection, as DataStore syncs through it (`tests/fixtures/amplify-datastore`, whose
//! `transform.conf.json` turns it on): `_version`, `_deleted` and `_lastChangedAt` on every
//! node, stale writes merged (AUTOMERGE) or refused with the stored node (OPTIMISTIC_CONCURRENCY),
//! deletes that leave tombstones, and `sync<Types>` pages with one `startedAt`.

use serde_json::{Value, json};

use tablegraph::check::ViolationKind;
use tablegraph::config::HttpConfig;
use tablegraph::functions::FunctionsConfig;
use tablegraph::model::{ConflictConfig, DialectChoice};

use crate::helpers::{
    TestApp, api_key_and_tokens, spawn_app_as, spawn_app_with_schema, spawn_app_with_schema_and,
    user_token,
};
use crate::subscriptions::Client;

const SCHEMA: &str = "tests/fixtures/amplify-datastore/schema.graphql";
const SYNCED: &str = "_version _deleted _lastChangedAt";

async fn create_note(app: &TestApp, title: &str, tags: &[&str]) -> Value {
    let created = app
        .graphql(
            &format!(
                "mutation($title: String!, $tags: [String]) {{ createNote(input: {{ title: $title, tags: $tags }}) {{ id title tags {SYNCED} }} }}"
            ),
            json!({ "title": title, "tags": tags }),
        )
        .await;
    created["data"]["createNote"].clone()
}

fn id_of(node: &Value) -> String {
    node["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a node: {node}"))
        .to_owned()
}

#[tokio::test]
async fn a_node_carries_its_version_and_when_it_changed_and_a_current_write_bumps_both() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let note = create_note(&app, "Shear", &["spring"]).await;
    assert_eq!(note["_version"], 1, "{note}");
    assert_eq!(note["_deleted"], Value::Null, "{note}");
    let created_at = note["_lastChangedAt"]
        .as_i64()
        .unwrap_or_else(|| panic!("{note}"));
    assert!(created_at > 1_600_000_000_000, "milliseconds: {note}");
    let updated = app
        .graphql(
            &format!("mutation($id: ID!) {{ updateNote(input: {{ id: $id, title: \"Shear early\", _version: 1 }}) {{ title {SYNCED} }} }}"),
            json!({ "id": id_of(&note) }),
        )
        .await;
    let updated = &updated["data"]["updateNote"];
    assert_eq!(updated["title"], "Shear early", "{updated}");
    assert_eq!(updated["_version"], 2, "{updated}");
    assert!(
        updated["_lastChangedAt"].as_i64() >= Some(created_at),
        "{updated}"
    );
    // A model without conflict detection keeps tablegraph's version and none of these fields.
    let log = app
        .graphql(
            "mutation { createLog(input: { line: \"x\" }) { line version } }",
            json!({}),
        )
        .await;
    assert_eq!(log["data"]["createLog"]["version"], 1, "{log}");
    let unknown = app
        .graphql(
            "mutation { createLog(input: { line: \"x\" }) { _version } }",
            json!({}),
        )
        .await;
    assert!(
        unknown["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("_version")),
        "{unknown}"
    );
}

/// AppSync's Automerge: a stale write's scalars give way to the stored ones, its lists are
/// appended, and the merge is written on the stored version, with no error.
#[tokio::test]
async fn a_stale_write_to_an_automerge_model_is_merged_into_the_stored_node() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let note = create_note(&app, "Shear", &["spring"]).await;
    let id = id_of(&note);
    let update = format!(
        "mutation($id: ID!, $title: String, $body: String, $tags: [String], $v: Int) {{
           updateNote(input: {{ id: $id, title: $title, body: $body, tags: $tags, _version: $v }}) {{ title body tags {SYNCED} }}
         }}"
    );
    let first = app
        .graphql(&update, json!({ "id": id, "title": "Shear early", "v": 1 }))
        .await;
    assert_eq!(first["data"]["updateNote"]["_version"], 2, "{first}");
    // Written by a client that read version 1.
    let stale = app
        .graphql(
            &update,
            json!({ "id": id, "title": "Shear late", "body": "bring clippers", "tags": ["wool"], "v": 1 }),
        )
        .await;
    assert_eq!(stale["errors"], Value::Null, "{stale}");
    assert_eq!(
        stale["data"]["updateNote"],
        json!({
            "title": "Shear early",
            "body": "bring clippers",
            "tags": ["spring", "wool"],
            "_version": 3,
            "_deleted": null,
            "_lastChangedAt": stale["data"]["updateNote"]["_lastChangedAt"],
        }),
        "{stale}"
    );
    // No `_version` at all is read as 0, as Amplify's resolvers read it: stale.
    let unversioned = app
        .graphql(&update, json!({ "id": id, "title": "Shear never" }))
        .await;
    assert_eq!(
        unversioned["data"]["updateNote"]["title"], "Shear early",
        "{unversioned}"
    );
    assert_eq!(
        unversioned["data"]["updateNote"]["_version"], 4,
        "{unversioned}"
    );
}

/// OPTIMISTIC_CONCURRENCY: a stale write is refused as AppSync refuses it, with the stored
/// node, as the mutation selects it, in the error's `data`; nothing is written.
#[tokio::test]
async fn a_stale_write_to_an_optimistic_model_is_refused_with_the_stored_node() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let created = app
        .graphql(
            &format!("mutation {{ createOrder(input: {{ total: 10 }}) {{ id total {SYNCED} }} }}"),
            json!({}),
        )
        .await;
    let id = id_of(&created["data"]["createOrder"]);
    let update = format!(
        "mutation($id: ID!, $total: Int, $v: Int) {{ updateOrder(input: {{ id: $id, total: $total, _version: $v }}) {{ id total {SYNCED} }} }}"
    );
    let current = app
        .graphql(&update, json!({ "id": id, "total": 12, "v": 1 }))
        .await;
    assert_eq!(current["data"]["updateOrder"]["_version"], 2, "{current}");
    let stale = app
        .graphql(&update, json!({ "id": id, "total": 99, "v": 1 }))
        .await;
    assert_eq!(stale["data"]["updateOrder"], Value::Null, "{stale}");
    let error = &stale["errors"][0];
    assert_eq!(error["errorType"], "ConflictUnhandled", "{stale}");
    assert_eq!(
        error["message"], "Conflict resolver rejects mutation.",
        "{stale}"
    );
    assert_eq!(error["data"]["id"], id, "{stale}");
    assert_eq!(error["data"]["total"], 12, "{stale}");
    assert_eq!(error["data"]["_version"], 2, "{stale}");
    let read = app
        .graphql(
            "query($id: ID!) { getOrder(id: $id) { total _version } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        read["data"]["getOrder"],
        json!({ "total": 12, "_version": 2 }),
        "{read}"
    );
}

/// A delete leaves a tombstone that gets, lists and syncs answer (`_deleted: true`), that
/// filters can leave out, and that takes no more writes.
#[tokio::test]
async fn a_delete_leaves_a_tombstone_that_reads_answer_and_writes_cannot_change() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let kept = id_of(&create_note(&app, "Keep", &[]).await);
    let gone = id_of(&create_note(&app, "Gone", &[]).await);
    let delete = format!(
        "mutation($id: ID!, $v: Int) {{ deleteNote(input: {{ id: $id, _version: $v }}) {{ id title {SYNCED} }} }}"
    );
    let stale = app.graphql(&delete, json!({ "id": gone, "v": 7 })).await;
    assert_eq!(
        stale["errors"][0]["errorType"], "ConflictUnhandled",
        "{stale}"
    );
    let deleted = app.graphql(&delete, json!({ "id": gone, "v": 1 })).await;
    let tombstone = &deleted["data"]["deleteNote"];
    assert_eq!(tombstone["_deleted"], true, "{deleted}");
    assert_eq!(tombstone["_version"], 2, "{deleted}");
    let read = app
        .graphql(
            &format!("query($id: ID!) {{ getNote(id: $id) {{ title {SYNCED} }} }}"),
            json!({ "id": gone }),
        )
        .await;
    assert_eq!(read["data"]["getNote"]["_deleted"], true, "{read}");
    let listed = app
        .graphql("{ listNotes { items { title _deleted } } }", json!({}))
        .await;
    let mut titles: Vec<Value> = listed["data"]["listNotes"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    titles.sort_by_key(|item| item["title"].to_string());
    assert_eq!(
        titles,
        vec![
            json!({ "title": "Gone", "_deleted": true }),
            json!({ "title": "Keep", "_deleted": null })
        ],
        "{listed}"
    );
    let live = app
        .graphql(
            "{ listNotes(filter: { _deleted: { ne: true } }) { items { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        live["data"]["listNotes"]["items"],
        json!([{ "id": kept }]),
        "{live}"
    );
    let again = app.graphql(&delete, json!({ "id": gone, "v": 2 })).await;
    assert_eq!(
        again["errors"][0]["errorType"], "ConflictUnhandled",
        "{again}"
    );
    assert_eq!(again["errors"][0]["data"]["_deleted"], true, "{again}");
    let revived = app
        .graphql(
            "mutation($id: ID!) { updateNote(input: { id: $id, title: \"Back\", _version: 2 }) { title } }",
            json!({ "id": gone }),
        )
        .await;
    assert_eq!(
        revived["errors"][0]["errorType"], "ConflictUnhandled",
        "{revived}"
    );
}

/// `sync<Types>` pages through every node, tombstones included, and every page of one sync
/// answers the `startedAt` of its first.
#[tokio::test]
async fn a_sync_pages_through_every_node_with_the_first_pages_started_at() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let mut ids = Vec::new();
    for title in ["a", "b", "c", "d", "e"] {
        ids.push(id_of(&create_note(&app, title, &[]).await));
    }
    app.graphql(
        "mutation($id: ID!) { deleteNote(input: { id: $id, _version: 1 }) { id } }",
        json!({ "id": ids[2] }),
    )
    .await;
    let sync = "query($next: String, $last: AWSTimestamp) {
      syncNotes(limit: 2, nextToken: $next, lastSync: $last) { items { id _deleted _version } nextToken startedAt }
    }";
    let mut next = Value::Null;
    let mut seen = Vec::new();
    let mut started = Vec::new();
    loop {
        let page = app.graphql(sync, json!({ "next": next, "last": 0 })).await;
        let page = &page["data"]["syncNotes"];
        assert!(page["items"].is_array(), "{page}");
        seen.extend(page["items"].as_array().cloned().unwrap_or_default());
        started.push(page["startedAt"].clone());
        next = page["nextToken"].clone();
        if next.is_null() {
            break;
        }
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert_eq!(
        seen.iter().filter(|n| n["_deleted"] == true).count(),
        1,
        "{seen:?}"
    );
    assert!(started[0].as_i64().is_some(), "{started:?}");
    assert!(started.iter().all(|s| *s == started[0]), "{started:?}");
    let forged = app
        .graphql(sync, json!({ "next": "yesterday", "last": 0 }))
        .await;
    assert_eq!(forged["errors"][0]["errorType"], "BadUserInput", "{forged}");
}

/// A delete reaches `onDelete…` subscribers as the tombstone it leaves, and an update of the
/// same node reaches `onUpdate…` only as an update, with the sync fields DataStore selects.
#[tokio::test]
async fn subscribers_get_tombstones_from_deletes_and_the_sync_fields_of_every_event() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let mut client = Client::connected(&app, json!({})).await;
    client
        .subscribe(
            "u",
            &format!("subscription {{ onUpdateNote {{ title {SYNCED} }} }}"),
            json!({}),
        )
        .await;
    client
        .subscribe(
            "d",
            &format!("subscription {{ onDeleteNote {{ id {SYNCED} }} }}"),
            json!({}),
        )
        .await;
    app.events.until_subscribers(2).await;
    let id = id_of(&create_note(&app, "Shear", &[]).await);
    app.graphql(
        "mutation($id: ID!) { updateNote(input: { id: $id, title: \"Sheared\", _version: 1 }) { id } }",
        json!({ "id": id }),
    )
    .await;
    let updated = client.next_of("u").await;
    assert_eq!(
        updated["data"]["onUpdateNote"]["title"], "Sheared",
        "{updated}"
    );
    assert_eq!(updated["data"]["onUpdateNote"]["_version"], 2, "{updated}");
    app.graphql(
        "mutation($id: ID!) { deleteNote(input: { id: $id, _version: 2 }) { id } }",
        json!({ "id": id }),
    )
    .await;
    let deleted = client.next_of("d").await;
    assert_eq!(deleted["data"]["onDeleteNote"]["id"], id, "{deleted}");
    assert_eq!(
        deleted["data"]["onDeleteNote"]["_deleted"], true,
        "{deleted}"
    );
    assert_eq!(deleted["data"]["onDeleteNote"]["_version"], 3, "{deleted}");
    assert!(
        deleted["data"]["onDeleteNote"]["_lastChangedAt"]
            .as_i64()
            .is_some(),
        "{deleted}"
    );
}

/// Answers `query` run by the user whose token is `token`.
async fn as_user(app: &TestApp, token: &str, query: &str, variables: Value) -> Value {
    let headers = [("authorization", token)];
    app.graphql_with(&headers, query, variables).await.1
}

/// A server whose delta syncs read from `lastSync` exactly (no margin before it), so that a
/// test can count the writes a delta sync answers.
async fn exact_app(http: HttpConfig) -> TestApp {
    let dialect = DialectChoice {
        conflict: ConflictConfig {
            delta_margin_ms: Some(0),
            ..ConflictConfig::default()
        },
        ..DialectChoice::default()
    };
    spawn_app_as(SCHEMA, http, dialect, FunctionsConfig::default()).await
}

/// A delta sync reads again the writes stamped a moment before its `lastSync` (a second), so
/// that a write planned before a sync began and committed after it is not lost between syncs.
#[tokio::test]
async fn a_delta_sync_reads_again_the_writes_of_the_moment_before_last_sync() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let note = create_note(&app, "edge", &[]).await;
    let stamped = note["_lastChangedAt"].as_i64().unwrap_or_default();
    let delta = app
        .graphql(SYNC_NOTES, json!({ "last": stamped + 500 }))
        .await;
    assert_eq!(
        delta["data"]["syncNotes"]["items"][0]["id"], note["id"],
        "{delta}"
    );
    let exact = exact_app(HttpConfig::default()).await;
    let note = create_note(&exact, "edge", &[]).await;
    let stamped = note["_lastChangedAt"].as_i64().unwrap_or_default();
    let delta = exact
        .graphql(SYNC_NOTES, json!({ "last": stamped + 500 }))
        .await;
    assert_eq!(delta["data"]["syncNotes"]["items"], json!([]), "{delta}");
}

const SYNC_NOTES: &str = "query($next: String, $last: AWSTimestamp, $limit: Int) {
  syncNotes(limit: $limit, nextToken: $next, lastSync: $last) { items { id title _deleted _version } nextToken startedAt }
}";

/// A sync since a `lastSync` within the delta window reads the writes since from the type's
/// delta record: exactly the nodes written (a tombstone too), each once, as they are now; one
/// Query of the record and one batch of the nodes, however many nodes the type holds.
#[tokio::test]
async fn a_delta_sync_reads_only_the_writes_since_last_sync() {
    let app = exact_app(HttpConfig::default()).await;
    let mut ids = Vec::new();
    for n in 0..30 {
        ids.push(id_of(&create_note(&app, &format!("note {n}"), &[]).await));
    }
    let base = app
        .graphql(SYNC_NOTES, json!({ "last": 0, "limit": 1000 }))
        .await;
    assert_eq!(
        base["data"]["syncNotes"]["items"].as_array().map(Vec::len),
        Some(30),
        "{base}"
    );
    let last_sync = base["data"]["syncNotes"]["startedAt"].clone();
    // Written since: two updates (one node twice), a delete and a create.
    let update = "mutation($id: ID!, $t: String!, $v: Int!) { updateNote(input: { id: $id, title: $t, _version: $v }) { id } }";
    app.graphql(update, json!({ "id": ids[3], "t": "three", "v": 1 }))
        .await;
    app.graphql(update, json!({ "id": ids[3], "t": "three again", "v": 2 }))
        .await;
    app.graphql(update, json!({ "id": ids[7], "t": "seven", "v": 1 }))
        .await;
    app.graphql(
        "mutation($id: ID!) { deleteNote(input: { id: $id, _version: 1 }) { id } }",
        json!({ "id": ids[9] }),
    )
    .await;
    let created = id_of(&create_note(&app, "new", &[]).await);
    let (delta, calls) = app
        .graphql_counted(SYNC_NOTES, json!({ "last": last_sync, "limit": 1000 }))
        .await;
    let mut got: Vec<(String, Value, Value)> = delta["data"]["syncNotes"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap_or_default().to_owned(),
                n["title"].clone(),
                n["_deleted"].clone(),
            )
        })
        .collect();
    got.sort_by_key(|(id, _, _)| id.clone());
    let mut want = vec![
        (ids[3].clone(), json!("three again"), Value::Null),
        (ids[7].clone(), json!("seven"), Value::Null),
        (ids[9].clone(), json!("note 9"), json!(true)),
        (created, json!("new"), Value::Null),
    ];
    want.sort_by_key(|(id, _, _)| id.clone());
    assert_eq!(got, want, "{delta}");
    assert_eq!(calls, vec!["Query", "BatchGetItem"], "{delta}");
    let read = &delta["extensions"]["storageCalls"];
    assert_eq!(read[0]["items"], 5, "the five writes' records: {read}");
    assert_eq!(read[1]["keys"], 4, "their four nodes: {read}");
    assert!(
        delta["data"]["syncNotes"]["startedAt"].as_i64() >= last_sync.as_i64(),
        "{delta}"
    );
}

/// A delta sync pages through the writes with `limit`, each page's `nextToken` going on after
/// the last write it read; a token of another sync is refused.
#[tokio::test]
async fn a_delta_sync_pages_by_its_own_next_token() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let base = app.graphql(SYNC_NOTES, json!({ "last": 0 })).await;
    let last_sync = base["data"]["syncNotes"]["startedAt"].clone();
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(id_of(&create_note(&app, &format!("note {n}"), &[]).await));
    }
    let mut next = Value::Null;
    let mut seen = Vec::new();
    let mut started = Vec::new();
    loop {
        let page = app
            .graphql(
                SYNC_NOTES,
                json!({ "last": last_sync, "limit": 2, "next": next }),
            )
            .await;
        let page = &page["data"]["syncNotes"];
        assert!(
            page["items"]
                .as_array()
                .is_some_and(|items| items.len() <= 2),
            "{page}"
        );
        seen.extend(
            page["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|n| n["id"].clone()),
        );
        started.push(page["startedAt"].clone());
        next = page["nextToken"].clone();
        if next.is_null() {
            break;
        }
        assert!(
            next.as_str().is_some_and(|t| t.contains(':')),
            "a delta sync's token: {next}"
        );
    }
    let want: Vec<Value> = ids.iter().map(|id| json!(id)).collect();
    assert_eq!(seen, want, "in the order written");
    assert!(started.iter().all(|s| *s == started[0]), "{started:?}");
    // A base sync's token is not a delta sync's, nor the other way round.
    let base_page = app
        .graphql(SYNC_NOTES, json!({ "last": 0, "limit": 1 }))
        .await;
    let base_token = base_page["data"]["syncNotes"]["nextToken"]
        .as_str()
        .unwrap_or_default()
        .replacen('.', ":", 1);
    let forged = app.graphql(SYNC_NOTES, json!({ "next": base_token })).await;
    assert_eq!(forged["errors"][0]["errorType"], "BadUserInput", "{forged}");
}

/// A `lastSync` older than the delta window is answered with a base sync, as AppSync answers it.
#[tokio::test]
async fn a_last_sync_older_than_the_window_gets_a_base_sync() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let id = id_of(&create_note(&app, "old", &[]).await);
    let now = app.graphql(SYNC_NOTES, json!({ "last": 0 })).await["data"]["syncNotes"]["startedAt"]
        .as_i64()
        .unwrap_or_default();
    let long_ago = now - 31 * 60 * 1000;
    let (page, calls) = app
        .graphql_counted(SYNC_NOTES, json!({ "last": long_ago }))
        .await;
    assert_eq!(page["data"]["syncNotes"]["items"][0]["id"], id, "{page}");
    assert!(
        calls.iter().all(|call| call.starts_with("Query:")),
        "the type index: {calls:?}"
    );
}

/// `check` knows the delta record: the writes within the window are counted, and `--repair`
/// removes those past it.
#[tokio::test]
async fn check_counts_the_delta_record_and_repair_trims_what_is_past_the_window() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let note = create_note(&app, "kept", &[]).await;
    app.graphql(
        "mutation($id: ID!) { updateNote(input: { id: $id, title: \"kept\", _version: 1 }) { id } }",
        json!({ "id": id_of(&note) }),
    )
    .await;
    let report = app.assert_table_consistent().await;
    assert_eq!(report.delta_records, 2, "{report:?}");
    // A record written an hour ago, as a write then would have left it.
    let hour_ago = tablegraph::engine::sync::now_millis() - 3_600_000;
    let stale = tablegraph::store::Item::from_iter([
        (
            "PK".to_owned(),
            tablegraph::store::AttrValue::S("DELTA#Note".into()),
        ),
        (
            "SK".to_owned(),
            tablegraph::store::AttrValue::S(tablegraph::keys::delta_sort_key(hour_ago, "gone", 1)),
        ),
        (
            "id".to_owned(),
            tablegraph::store::AttrValue::S("gone".into()),
        ),
        (
            "_ttl".to_owned(),
            tablegraph::store::AttrValue::N(((hour_ago + 1_800_000) / 1000).to_string()),
        ),
    ]);
    let after = put_and_repair(&app, stale, ViolationKind::ExpiredDeltaRecord).await;
    assert_eq!(after.delta_records, 2);
}

/// Puts `item` in the table as it is, which `check` must report as one violation of `kind`;
/// answers the report after `check --repair`, which must be clean.
async fn put_and_repair(
    app: &TestApp,
    item: tablegraph::store::Item,
    kind: ViolationKind,
) -> tablegraph::check::Report {
    let put = tablegraph::store::Write::Put {
        item,
        condition: Vec::new(),
    };
    app.store.transact_write(vec![put]).await.expect("written");
    let report = tablegraph::check::check(&app.store, &app.model)
        .await
        .expect("checked");
    assert_eq!(report.counts(), vec![(kind, 1)], "{report:?}");
    let repair = tablegraph::check::repair(&app.store, &app.model)
        .await
        .expect("repaired");
    assert!(repair.after.is_clean(), "{:?}", repair.after);
    repair.after
}

/// A tombstone past its `_ttl` (30 days on) is reported by `check`, and `check --repair`
/// removes it as a delete removes a node; one within it is left.
#[tokio::test]
async fn repair_removes_a_tombstone_past_its_ttl() {
    use tablegraph::store::{AttrValue, Key};
    let app = spawn_app_with_schema(SCHEMA).await;
    let due = id_of(&create_note(&app, "due", &[]).await);
    let kept = id_of(&create_note(&app, "kept", &[]).await);
    for id in [&due, &kept] {
        app.graphql(
            "mutation($id: ID!) { deleteNote(input: { id: $id, _version: 1 }) { id } }",
            json!({ "id": id }),
        )
        .await;
    }
    let key = Key::same(tablegraph::keys::node_key(&due));
    let mut tombstone = app
        .store
        .get_item_consistent(&key)
        .await
        .expect("read")
        .expect("the tombstone is there");
    // As it will be once its 30 days are over.
    let past = tablegraph::engine::sync::now_millis() / 1000 - 60;
    tombstone.insert("_ttl".to_owned(), AttrValue::N(past.to_string()));
    put_and_repair(&app, tombstone, ViolationKind::ExpiredTombstone).await;
    let read = app
        .graphql(
            "query($a: ID!, $b: ID!) { a: getNote(id: $a) { id } b: getNote(id: $b) { _deleted } }",
            json!({ "a": due, "b": kept }),
        )
        .await;
    assert_eq!(
        read["data"],
        json!({ "a": null, "b": { "_deleted": true } }),
        "{read}"
    );
}

/// The ids a sync page of `root` answers, sorted.
fn synced_ids(page: &Value, root: &str) -> Vec<String> {
    let items = page["data"][root]["items"].as_array().cloned();
    let mut ids: Vec<String> = items
        .unwrap_or_default()
        .iter()
        .filter_map(|item| item["id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

/// Owner rules hold on sync queries as on lists: a base sync and a delta sync answer each
/// owner only their own diaries, and another owner's writes are not among the changes.
#[tokio::test]
async fn owner_rules_hold_on_base_and_delta_syncs() {
    let app = exact_app(api_key_and_tokens("da2-datastore")).await;
    let (ann, bob) = (user_token("ann", &[]), user_token("bob", &[]));
    let create = "mutation($t: String) { createDiary(input: { text: $t }) { id _version } }";
    let mut anns = Vec::new();
    for text in ["rain", "sun"] {
        let created = as_user(&app, &ann, create, json!({ "t": text })).await;
        anns.push(id_of(&created["data"]["createDiary"]));
    }
    let bobs =
        id_of(&as_user(&app, &bob, create, json!({ "t": "snow" })).await["data"]["createDiary"]);
    let sync =
        "query($last: AWSTimestamp) { syncDiaries(lastSync: $last) { items { id } startedAt } }";
    let ids = |page: &Value| synced_ids(page, "syncDiaries");
    let base = as_user(&app, &ann, sync, json!({ "last": 0 })).await;
    let mut want = anns.clone();
    want.sort();
    assert_eq!(ids(&base), want, "{base}");
    let last = base["data"]["syncDiaries"]["startedAt"].clone();
    let update = "mutation($id: ID!) { updateDiary(input: { id: $id, text: \"later\", _version: 1 }) { id } }";
    as_user(&app, &bob, update, json!({ "id": bobs })).await;
    as_user(&app, &ann, update, json!({ "id": anns[0] })).await;
    let delta = as_user(&app, &ann, sync, json!({ "last": last })).await;
    assert_eq!(ids(&delta), vec![anns[0].clone()], "{delta}");
    let bobs_delta = as_user(&app, &bob, sync, json!({ "last": last })).await;
    assert_eq!(ids(&bobs_delta), vec![bobs.clone()], "{bobs_delta}");
    // Another owner's diary is refused as not theirs, whatever version they name: a conflict
    // would tell them it exists, and its version.
    let delete = "mutation($id: ID!) { deleteDiary(input: { id: $id, _version: 7 }) { id } }";
    let refused = as_user(&app, &bob, delete, json!({ "id": anns[1] })).await;
    assert_eq!(
        refused["errors"][0]["errorType"], "Unauthorized",
        "{refused}"
    );
    assert_eq!(refused["errors"][0]["data"], Value::Null, "{refused}");
}

/// A conflict's stored node, and a delta sync's filter, keep to the field rules: a field the
/// caller may not read is left out of the error's data, and a filter on it is refused.
#[tokio::test]
async fn field_rules_hold_on_conflict_data_and_delta_sync_filters() {
    let app = spawn_app_with_schema_and(SCHEMA, api_key_and_tokens("da2-datastore")).await;
    let (ann, admin) = (user_token("ann", &[]), user_token("root", &["admin"]));
    let created = as_user(
        &app,
        &admin,
        "mutation { createLedger(input: { note: \"hay\", secret: \"42\" }) { id } }",
        json!({}),
    )
    .await;
    let id = id_of(&created["data"]["createLedger"]);
    let last = tablegraph::engine::sync::now_millis();
    let stale = as_user(&app, &ann,
        "mutation($id: ID!) { updateLedger(input: { id: $id, note: \"straw\", _version: 0 }) { id note secret _version } }",
        json!({ "id": id }),
    )
    .await;
    let error = &stale["errors"][0];
    assert_eq!(error["errorType"], "ConflictUnhandled", "{stale}");
    assert_eq!(error["data"]["note"], "hay", "{stale}");
    assert!(error["data"].get("secret").is_none(), "{stale}");
    let probe = as_user(&app, &ann,
        "query($last: AWSTimestamp) { syncLedgers(lastSync: $last, filter: { secret: { eq: \"42\" } }) { items { id } } }",
        json!({ "last": last }),
    )
    .await;
    assert_eq!(probe["errors"][0]["errorType"], "Unauthorized", "{probe}");
}

/// The events a LAMBDA conflict handler was sent.
type Sent = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;

/// A conflict handler as an app writes one: its answer follows the label the stale write
/// brings (`reject`, `remove`, anything else is resolved by counting the vote on the stored
/// node; `garbage` answers an action AppSync does not know).
async fn vote_handler() -> (tablegraph::functions::FunctionsConfig, Sent) {
    let sent: Sent = Sent::default();
    let seen = sent.clone();
    let handler = axum::Router::new().route(
        "/resolveVote",
        axum::routing::post(move |axum::Json(event): axum::Json<Value>| {
            let seen = seen.clone();
            async move {
                seen.lock().expect("the events").push(event.clone());
                let (new, old) = (&event["newItem"], &event["existingItem"]);
                axum::Json(match new["label"].as_str() {
                    Some("reject") => json!({ "action": "REJECT" }),
                    Some("remove") => json!({ "action": "REMOVE" }),
                    Some("garbage") => json!({ "action": "MAYBE" }),
                    _ => json!({ "action": "RESOLVE", "item": {
                        "label": new["label"],
                        "count": old["count"].as_i64().unwrap_or_default() + 1,
                    } }),
                })
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, handler).await });
    let config = tablegraph::functions::FunctionsConfig {
        endpoints: vec![(
            "resolveVote".to_owned(),
            format!("http://{address}/resolveVote"),
        )],
        timeout: std::time::Duration::from_secs(5),
        ..tablegraph::functions::FunctionsConfig::default()
    };
    (config, sent)
}

/// LAMBDA: a stale write goes to the function `transform.conf.json` names, with AppSync's
/// event, and its answer decides: RESOLVE writes its item on the stored version, REJECT and
/// REMOVE do as AppSync does, and any other answer is a `ConflictError` that writes nothing.
#[tokio::test]
async fn a_lambda_conflict_handler_decides_each_stale_write() {
    let (functions, sent) = vote_handler().await;
    let app = crate::helpers::spawn_app_with_functions(
        "tests/fixtures/amplify-datastore-lambda/schema.graphql",
        functions,
    )
    .await;
    let created = app
        .graphql(
            "mutation { createVote(input: { label: \"a\", count: 1 }) { id } }",
            json!({}),
        )
        .await;
    let id = id_of(&created["data"]["createVote"]);
    let update = "mutation($id: ID!, $label: String, $v: Int) {
      updateVote(input: { id: $id, label: $label, count: 0, _version: $v }) { label count _version _deleted }
    }";
    let current = app
        .graphql(update, json!({ "id": id, "label": "b", "v": 1 }))
        .await;
    assert_eq!(current["data"]["updateVote"]["_version"], 2, "{current}");
    assert!(
        sent.lock().expect("events").is_empty(),
        "a current write needs no handler"
    );
    let resolved = app
        .graphql(update, json!({ "id": id, "label": "c", "v": 1 }))
        .await;
    assert_eq!(
        resolved["data"]["updateVote"],
        json!({ "label": "c", "count": 1, "_version": 3, "_deleted": null }),
        "{resolved}"
    );
    let event = sent.lock().expect("events")[0].clone();
    assert_eq!(event["resolver"], "updateVote", "{event}");
    assert_eq!(event["existingItem"]["_version"], 2, "{event}");
    assert_eq!(event["existingItem"]["label"], "b", "{event}");
    assert_eq!(event["newItem"]["label"], "c", "{event}");
    assert_eq!(event["arguments"]["input"]["_version"], 1, "{event}");
    let rejected = app
        .graphql(update, json!({ "id": id, "label": "reject", "v": 1 }))
        .await;
    assert_eq!(
        rejected["errors"][0]["errorType"], "ConflictUnhandled",
        "{rejected}"
    );
    assert_eq!(rejected["errors"][0]["data"]["label"], "c", "{rejected}");
    let garbage = app
        .graphql(update, json!({ "id": id, "label": "garbage", "v": 1 }))
        .await;
    assert_eq!(
        garbage["errors"][0]["errorType"], "ConflictError",
        "{garbage}"
    );
    let removed = app
        .graphql(update, json!({ "id": id, "label": "remove", "v": 1 }))
        .await;
    assert_eq!(removed["data"]["updateVote"]["_deleted"], true, "{removed}");
    assert_eq!(
        removed["data"]["updateVote"]["label"], "c",
        "what was stored: {removed}"
    );
    app.assert_table_consistent().await;
}

/// Serves the schema of the fixture `app` with `args`, which must stop start-up; answers what
/// it printed.
async fn refused_start_up(app: &str, args: &[&str]) -> String {
    let schema = crate::helpers::repository_file(&format!("{app}/schema.graphql"));
    let schema = schema.to_string_lossy();
    let mut serve = vec!["serve", "--memory", "--schema", &schema];
    serve.extend(["--listen", "127.0.0.1:0"]);
    serve.extend(args);
    let dir = crate::helpers::scratch("datastore-refused");
    let (ok, _, stderr) = crate::helpers::run_tablegraph(&serve, &dir).await;
    assert!(!ok, "start-up should stop: {stderr}");
    stderr
}

/// A LAMBDA handler that is not among the functions stops start-up, naming the flag.
#[tokio::test]
async fn a_lambda_conflict_handler_that_is_not_configured_stops_start_up() {
    let stderr = refused_start_up("tests/fixtures/amplify-datastore-lambda", &[]).await;
    assert!(
        stderr.contains("Vote's LAMBDA conflict handler calls function resolveVote")
            && stderr.contains("--function resolveVote=URL"),
        "{stderr}"
    );
}

/// Selective sync: a sync's `filter` (DataStore's `syncExpression`) holds on a base sync and
/// on a delta sync alike.
#[tokio::test]
async fn a_sync_filter_selects_on_base_and_delta_syncs() {
    let app = exact_app(HttpConfig::default()).await;
    let sync = "query($last: AWSTimestamp) {
      syncNotes(lastSync: $last, filter: { title: { beginsWith: \"farm\" } }) { items { title } startedAt }
    }";
    for title in ["farm a", "town a"] {
        create_note(&app, title, &[]).await;
    }
    let base = app.graphql(sync, json!({ "last": 0 })).await;
    assert_eq!(
        base["data"]["syncNotes"]["items"],
        json!([{ "title": "farm a" }]),
        "{base}"
    );
    let last = base["data"]["syncNotes"]["startedAt"].clone();
    for title in ["farm b", "town b"] {
        create_note(&app, title, &[]).await;
    }
    let delta = app.graphql(sync, json!({ "last": last })).await;
    assert_eq!(
        delta["data"]["syncNotes"]["items"],
        json!([{ "title": "farm b" }]),
        "{delta}"
    );
}

/// A node that detects conflicts moves under another only by its own update, naming its
/// version: a nested create's `link` (one of tablegraph's additions) that would move one is
/// refused, and writes nothing.
#[tokio::test]
async fn a_link_cannot_move_a_node_that_detects_conflicts() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let book = app
        .graphql(
            "mutation { createBook(input: { title: \"Hay\" }) { id } }",
            json!({}),
        )
        .await;
    let book = id_of(&book["data"]["createBook"]);
    let linked = app
        .graphql(
            "mutation($b: ID!) { createShelf(input: { name: \"top\", books: { link: [$b] } }) { id } }",
            json!({ "b": book }),
        )
        .await;
    assert_eq!(linked["errors"][0]["errorType"], "BadUserInput", "{linked}");
    assert!(
        linked["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("detects conflicts")),
        "{linked}"
    );
    let shelves = app
        .graphql("{ listShelves { items { id } } }", json!({}))
        .await;
    assert_eq!(
        shelves["data"]["listShelves"]["items"],
        json!([]),
        "{shelves}"
    );
}

/// `--conflict-handler LAMBDA` names its function with `--lambda-conflict-handler`, which wins
/// over `transform.conf.json` and must be one of the server's functions; without the name the
/// command line is refused, naming the flag.
#[tokio::test]
async fn the_command_line_chooses_a_lambda_conflict_handler_by_its_function() {
    let mut args = vec![
        "--conflict-detection",
        "VERSION",
        "--conflict-handler",
        "LAMBDA",
    ];
    let stderr = refused_start_up("tests/fixtures/amplify-datastore", &args).await;
    assert!(stderr.contains("--lambda-conflict-handler"), "{stderr}");
    args.extend(["--lambda-conflict-handler", "resolveNote"]);
    let stderr = refused_start_up("tests/fixtures/amplify-datastore", &args).await;
    assert!(
        stderr.contains("Note's LAMBDA conflict handler calls function resolveNote")
            && stderr.contains("--function resolveNote=URL"),
        "{stderr}"
    );
}

/// Owner and group rules hold on syncs and on subscriptions over AppSync's real-time protocol
/// (with the selection DataStore sends) as on lists: a manager syncs and is told of every
/// shift, an owner only of their own, on base and delta syncs alike.
#[tokio::test]
async fn owner_and_group_rules_hold_on_syncs_and_real_time_subscriptions() {
    use crate::realtime::{Client as Realtime, Via};
    let app = exact_app(api_key_and_tokens("da2-datastore")).await;
    let (ann, bob) = (user_token("ann", &[]), user_token("bob", &[]));
    let carl = user_token("carl", &["managers"]);
    let create = "mutation { createShift(input: { hours: 8 }) { id _version } }";
    let anns = id_of(&as_user(&app, &ann, create, json!({})).await["data"]["createShift"]);
    let bobs = id_of(&as_user(&app, &bob, create, json!({})).await["data"]["createShift"]);
    let sync =
        "query($last: AWSTimestamp) { syncShifts(lastSync: $last) { items { id } startedAt } }";
    let ids = |page: &Value| synced_ids(page, "syncShifts");
    let mut both = vec![anns.clone(), bobs.clone()];
    both.sort();
    let base = as_user(&app, &carl, sync, json!({ "last": 0 })).await;
    assert_eq!(ids(&base), both, "{base}");
    let anns_base = as_user(&app, &ann, sync, json!({ "last": 0 })).await;
    assert_eq!(ids(&anns_base), vec![anns.clone()], "{anns_base}");
    let last = base["data"]["syncShifts"]["startedAt"].clone();

    // DataStore's subscription: every field of the model and the sync fields.
    let subscription = format!(
        "subscription OnUpdateShift($filter: ModelSubscriptionShiftFilterInput) {{\n  onUpdateShift(filter: $filter) {{\n    id\n    hours\n    owner\n    createdAt\n    updatedAt\n    {SYNCED}\n    __typename\n  }}\n}}"
    );
    let mut listeners = Vec::new();
    for token in [&ann, &carl] {
        let header = json!({ "host": "127.0.0.1", "Authorization": token });
        let mut client = Realtime::connected(&app, &header, Via::Subprotocol).await;
        client
            .started("shifts", &subscription, json!({}), &header)
            .await;
        listeners.push(client);
    }
    app.events.until_subscribers(2).await;
    let update =
        "mutation($id: ID!) { updateShift(input: { id: $id, hours: 9, _version: 1 }) { id } }";
    for (token, id) in [(&bob, &bobs), (&ann, &anns)] {
        let updated = as_user(&app, token, update, json!({ "id": id })).await;
        assert!(updated.get("errors").is_none(), "{updated}");
    }
    let [anns_client, carls_client] = &mut listeners[..] else {
        panic!("two listeners");
    };
    // Bob's update came first: Ann is told of hers only, Carl of both.
    let event = anns_client.json().await;
    let told = &event["payload"]["data"]["onUpdateShift"];
    assert_eq!(told["id"], anns.as_str(), "{event}");
    assert_eq!(
        (told["_version"].clone(), told["__typename"].clone()),
        (json!(2), json!("Shift")),
        "{event}"
    );
    for id in [&bobs, &anns] {
        let event = carls_client.json().await;
        assert_eq!(
            event["payload"]["data"]["onUpdateShift"]["id"],
            id.as_str(),
            "{event}"
        );
    }
    let delta = as_user(&app, &carl, sync, json!({ "last": last })).await;
    assert_eq!(ids(&delta), both, "{delta}");
    let anns_delta = as_user(&app, &ann, sync, json!({ "last": last })).await;
    assert_eq!(ids(&anns_delta), vec![anns.clone()], "{anns_delta}");
    let bobs_delta = as_user(&app, &bob, sync, json!({ "last": last })).await;
    assert_eq!(ids(&bobs_delta), vec![bobs.clone()], "{bobs_delta}");
}
