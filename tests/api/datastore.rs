//! Conflict detection, as DataStore syncs through it (`tests/fixtures/amplify-datastore`, whose
//! `transform.conf.json` turns it on): `_version`, `_deleted` and `_lastChangedAt` on every
//! node, stale writes merged (AUTOMERGE) or refused with the stored node (OPTIMISTIC_CONCURRENCY),
//! deletes that leave tombstones, and `sync<Types>` pages with one `startedAt`.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with_schema};
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
