//! What Amplify's transformer makes of shapes a plain reading would serve otherwise
//! (`tests/fixtures/amplify-transformer/`): an enum filtered by its literals, written inline;
//! `[String]` fields in filters; a declared time served as declared and kept when a create
//! gives it; and `--amplify-strict`, which serves Amplify's API without tablegraph's additions.

use serde_json::json;

use crate::helpers::{
    api_key_and_tokens, spawn_app_with_schema, spawn_app_with_schema_and, user_token,
};
use crate::network::run;

const SCHEMA: &str = "tests/fixtures/amplify-transformer/schema.graphql";

/// An SDL without its descriptions, each definition's arguments on one line.
fn flat(sdl: &str) -> String {
    let text: Vec<&str> = sdl
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('"'))
        .collect();
    text.join(" ").replace("( ", "(").replace(" )", ")")
}

fn titles(body: &serde_json::Value, list: &str) -> Vec<String> {
    let mut titles: Vec<String> = body["data"][list]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|item| item["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    titles.sort();
    titles
}

#[tokio::test]
async fn an_enum_literal_filters_inline_and_a_list_of_strings_filters_by_membership() {
    let app = spawn_app_with_schema(SCHEMA).await;
    for (title, status, tags) in [
        ("Lambing", "ACTIVE", json!(["farm", "spring"])),
        ("Shearing", "DONE", json!(["farm"])),
        ("Taxes", "ACTIVE", json!(["office"])),
    ] {
        let created = app
            .graphql(
                "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }",
                json!({ "input": { "title": title, "status": status, "tags": tags } }),
            )
            .await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    // The enum's literal, written in the document as Amplify's apps write it.
    let active = app
        .graphql(
            "{ listTasks(filter: { status: { eq: ACTIVE } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert_eq!(titles(&active, "listTasks"), ["Lambing", "Taxes"]);
    let not_done = app
        .graphql(
            "{ listTasks(filter: { status: { ne: DONE } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert_eq!(titles(&not_done, "listTasks"), ["Lambing", "Taxes"]);
    // A string is no literal of the enum: refused as AppSync refuses it, naming the type.
    let refused = app
        .graphql(
            "{ listTasks(filter: { status: { eq: \"ACTIVE\" } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert!(refused["data"].is_null(), "{refused}");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("an enum value is written without quotes")),
        "{refused}"
    );
    let farm = app
        .graphql(
            "{ listTasks(filter: { tags: { contains: \"farm\" } }) { items { title } } }",
            json!({}),
        )
        .await;
    assert_eq!(titles(&farm, "listTasks"), ["Lambing", "Shearing"]);
}

#[tokio::test]
async fn a_declared_time_is_served_as_declared_and_kept_when_a_create_gives_it() {
    let app = spawn_app_with_schema(SCHEMA).await;
    let given = "2021-03-04T05:06:07.000Z";
    let created = app
        .graphql(
            "mutation($input: CreateTaskInput!) { createTask(input: $input) { id createdAt } }",
            json!({ "input": { "title": "Old", "createdAt": given } }),
        )
        .await;
    assert_eq!(
        created["data"]["createTask"]["createdAt"], given,
        "{created}"
    );
    let fresh = app
        .graphql(
            "mutation { createTask(input: { title: \"New\" }) { id createdAt updatedAt } }",
            json!({}),
        )
        .await;
    let task = &fresh["data"]["createTask"];
    assert_eq!(task["createdAt"], task["updatedAt"], "{fresh}");
    assert_ne!(task["createdAt"], given, "{fresh}");
    // An update may set it too, as Amplify's resolvers let it.
    let id = task["id"].as_str().expect("an id");
    let updated = app
        .graphql(
            "mutation($input: UpdateTaskInput!) { updateTask(input: $input) { createdAt } }",
            json!({ "input": { "id": id, "createdAt": given } }),
        )
        .await;
    assert_eq!(
        updated["data"]["updateTask"]["createdAt"], given,
        "{updated}"
    );
}

#[tokio::test]
async fn amplify_strict_serves_amplifys_api_without_tablegraphs_additions() {
    let (ok, loose, _) = run(&["schema", "--schema", SCHEMA]).await;
    assert!(ok, "{loose}");
    let (ok, strict, _) = run(&["schema", "--schema", SCHEMA, "--amplify-strict"]).await;
    assert!(ok, "{strict}");
    let (loose, strict) = (flat(&loose), flat(&strict));
    // What Amplify's transformer declares, in both.
    for api in [&loose, &strict] {
        assert!(api.contains("createdAt: String!"), "{api}");
        assert!(api.contains("input ModelStatusInput {"), "{api}");
        assert!(api.contains("tags: ModelStringInput"), "{api}");
        assert!(api.contains("input ModelFloatInput {"), "{api}");
        assert!(!api.contains("input TaskInput"), "{api}");
    }
    // The owner field the rule adds is the server's to set, and its subscriptions take it.
    for api in [&loose, &strict] {
        let create = api
            .split("input CreateNoteInput {")
            .nth(1)
            .and_then(|rest| rest.split('}').next())
            .expect("CreateNoteInput");
        assert!(!create.contains("owner"), "{create}");
        assert!(
            api.contains("onCreateNote(filter: ModelSubscriptionNoteFilterInput, owner: String)"),
            "{api}"
        );
    }
    // tablegraph's additions, and --amplify-strict without them.
    for addition in [
        "nodes(ids: [ID!]!): [Node]",
        "interface Node",
        "createTasks(",
        "version: Int!",
        "expectedVersion: Int",
        "listTasks(sortDirection: ModelSortDirection",
    ] {
        assert!(loose.contains(addition), "{addition} in {loose}");
        assert!(!strict.contains(addition), "{addition} in {strict}");
    }
    assert!(strict.contains("listTasks(filter: ModelTaskFilterInput, limit: Int, nextToken: String): ModelTaskConnection"), "{strict}");
}

#[tokio::test]
async fn a_required_relation_is_served_required_and_the_key_hasone_adds_is_required() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-required/schema.graphql").await;
    let types = app
        .graphql(
            "{ lot: __type(name: \"Lot\") { fields { name type { kind } } }
               input: __type(name: \"CreateLotInput\") { inputFields { name type { kind } } } }",
            json!({}),
        )
        .await;
    let kind = |list: &serde_json::Value, name: &str| {
        list.as_array()
            .and_then(|fields| fields.iter().find(|f| f["name"] == name))
            .map(|f| f["type"]["kind"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_else(|| panic!("{name} in {types}"))
    };
    let lot = &types["data"]["lot"]["fields"];
    let input = &types["data"]["input"]["inputFields"];
    assert_eq!(kind(lot, "auction"), "NON_NULL");
    assert_eq!(kind(lot, "item"), "NON_NULL");
    // Beside tablegraph's nested creates (`item: { create }` gives it too) the key is optional
    // in the input; in Amplify's API exactly, required.
    assert_eq!(kind(input, "lotItemId"), "SCALAR");
    let (ok, strict, stderr) = run(&[
        "schema",
        "--schema",
        "tests/fixtures/amplify-required/schema.graphql",
        "--amplify-strict",
    ])
    .await;
    assert!(ok, "{stderr}");
    let strict = flat(&strict);
    assert!(strict.contains("lotItemId: ID!"), "{strict}");
    assert!(strict.contains("auctionLotsId: ID "), "{strict}");
    assert!(strict.contains("auction: Auction! "), "{strict}");
    let create = |query: &'static str, variables: serde_json::Value| app.graphql(query, variables);
    let auction = create(
        "mutation { createAuction(input: { name: \"Spring\" }) { id } }",
        json!({}),
    )
    .await;
    let auction = auction["data"]["createAuction"]["id"].clone();
    let item = create(
        "mutation { createItem(input: { title: \"Ewe\" }) { id } }",
        json!({}),
    )
    .await;
    let item = item["data"]["createItem"]["id"].clone();
    // Without the key @hasOne requires, refused before anything is written.
    let refused = create(
        "mutation($a: ID) { createLot(input: { order: 1, auctionLotsId: $a }) { id } }",
        json!({ "a": auction }),
    )
    .await;
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("lotItemId")),
        "{refused}"
    );
    let made = create(
        "mutation($a: ID, $i: ID!) { createLot(input: { order: 1, auctionLotsId: $a, lotItemId: $i }) {
            auction { name } item { title } } }",
        json!({ "a": auction, "i": item }),
    )
    .await;
    assert_eq!(
        made["data"]["createLot"],
        json!({ "auction": { "name": "Spring" }, "item": { "title": "Ewe" } }),
        "{made}"
    );
    // Without its optional key, the required relation answers AppSync's error.
    let orphan = create(
        "mutation($i: ID!) { createLot(input: { order: 2, lotItemId: $i }) { order auction { name } } }",
        json!({ "i": item }),
    )
    .await;
    assert_eq!(
        orphan["errors"][0]["message"],
        "Cannot return null for non-nullable type: 'Auction' within parent 'Lot' (/createLot/auction)",
        "{orphan}"
    );
}

/// A model field named `version` is the schema's own: stored and served as declared, filtered
/// and conditioned on, while the node's version moves in `_version` and `expectedVersion` still
/// holds a write to what was read.
#[tokio::test]
async fn a_field_named_version_is_the_schemas_own_and_the_nodes_version_moves_aside() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-own-version/schema.graphql").await;
    let created = app
        .graphql(
            "mutation { createApp(input: { name: \"Herd\", version: \"1.2.0\" }) { id name version } }",
            json!({}),
        )
        .await;
    let id = created["data"]["createApp"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    assert_eq!(
        created["data"]["createApp"]["version"], "1.2.0",
        "{created}"
    );
    let release = app
        .graphql(
            "mutation($app: ID!) { createRelease(input: { version: 7, appReleasesId: $app }) { version app { version } } }",
            json!({ "app": id }),
        )
        .await;
    assert_eq!(release["data"]["createRelease"]["version"], 7, "{release}");
    assert_eq!(
        release["data"]["createRelease"]["app"]["version"], "1.2.0",
        "{release}"
    );
    // Updated with the node's version as read (1), then refused at that version, now 2.
    let update = "mutation($id: ID!, $v: String!, $expected: Int) {
      updateApp(input: { id: $id, version: $v, expectedVersion: $expected }) { version }
    }";
    let updated = app
        .graphql(update, json!({ "id": id, "v": "1.3.0", "expected": 1 }))
        .await;
    assert_eq!(
        updated["data"]["updateApp"]["version"], "1.3.0",
        "{updated}"
    );
    let stale = app
        .graphql(update, json!({ "id": id, "v": "9.9.9", "expected": 1 }))
        .await;
    assert_eq!(
        stale["errors"][0]["extensions"]["errorType"], "VersionMismatch",
        "{stale}"
    );
    // Filters and conditions test the schema's field.
    let found = app
        .graphql(
            "{ listApps(filter: { version: { beginsWith: \"1.3\" } }) { items { name version } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        found["data"]["listApps"]["items"],
        json!([{ "name": "Herd", "version": "1.3.0" }]),
        "{found}"
    );
    let refused = app
        .graphql(
            "mutation($id: ID!) { updateApp(input: { id: $id, name: \"Flock\" }, condition: { version: { eq: \"1.2.0\" } }) { name } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["errorType"], "DynamoDB:ConditionalCheckFailedException",
        "{refused}"
    );
    // The item keeps both: the schema's field in `version`, the node's version in `_version`.
    let key = tablegraph::store::Key::same(tablegraph::keys::node_key(&id));
    let item = app
        .store
        .get_item_consistent(&key)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(
        item.get("version"),
        Some(&tablegraph::store::AttrValue::S("1.3.0".to_owned()))
    );
    assert_eq!(
        item.get("_version"),
        Some(&tablegraph::store::AttrValue::N("2".to_owned()))
    );
    app.assert_table_consistent().await;
}

/// A `@hasMany` over a sorted `@index` reads that index under each parent: in the index's
/// order (not the order of creation), with its sort key condition, `sortDirection` and
/// `nextToken` pages, for a whole level of parents at once.
#[tokio::test]
async fn a_has_many_over_a_sorted_index_reads_in_its_order_with_its_key_condition() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-sorted-relation/schema.graphql").await;
    let mut conversations = Vec::new();
    for title in ["Morning", "Evening"] {
        let made = app
            .graphql(
                "mutation($t: String!) { createConversation(input: { title: $t }) { id } }",
                json!({ "t": title }),
            )
            .await;
        conversations.push(crate::helpers::id_at(&made, "/data/createConversation/id"));
    }
    // Created out of the order they were spoken in.
    for (conversation, at, text) in [
        (0, "2026-03-01T09:30:00Z", "third"),
        (0, "2026-03-01T09:00:00Z", "first"),
        (1, "2026-03-01T20:00:00Z", "evening"),
        (0, "2026-03-01T09:45:00Z", "fourth"),
        (0, "2026-03-01T09:15:00Z", "second"),
    ] {
        let made = app
            .graphql(
                "mutation($c: ID!, $at: AWSDateTime!, $text: String!) {
                  createUtterance(input: { conversationId: $c, spokenAt: $at, text: $text }) { id }
                }",
                json!({ "c": conversations[conversation], "at": at, "text": text }),
            )
            .await;
        assert!(made.get("errors").is_none(), "{made}");
    }
    let texts = |body: &serde_json::Value, pointer: &str| -> Vec<String> {
        body.pointer(pointer)
            .and_then(serde_json::Value::as_array)
            .unwrap_or_else(|| panic!("{pointer}: {body}"))
            .iter()
            .map(|u| u["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    // Both conversations' utterances in one level, each in the order they were spoken.
    let both = app
        .graphql(
            "{ listConversations { items { title utterances { items { text } } } } }",
            json!({}),
        )
        .await;
    let mut read: Vec<(String, Vec<String>)> = (0..2)
        .map(|i| {
            (
                both["data"]["listConversations"]["items"][i]["title"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                texts(
                    &both,
                    &format!("/data/listConversations/items/{i}/utterances/items"),
                ),
            )
        })
        .collect();
    read.sort();
    assert_eq!(
        read,
        [
            ("Evening".to_owned(), vec!["evening".to_owned()]),
            (
                "Morning".to_owned(),
                ["first", "second", "third", "fourth"]
                    .map(str::to_owned)
                    .to_vec()
            ),
        ],
        "{both}"
    );
    let query = "query($id: ID!, $at: ModelStringKeyConditionInput, $next: String, $dir: ModelSortDirection) {
      getConversation(id: $id) {
        utterances(spokenAt: $at, sortDirection: $dir, limit: 2, nextToken: $next) { items { text } nextToken }
      }
    }";
    let morning = &conversations[0];
    let window = json!({ "between": ["2026-03-01T09:10:00Z", "2026-03-01T09:40:00Z"] });
    let page = app
        .graphql(query, json!({ "id": morning, "at": window, "dir": "DESC" }))
        .await;
    assert_eq!(
        texts(&page, "/data/getConversation/utterances/items"),
        ["third", "second"],
        "{page}"
    );
    let page = app
        .graphql(
            query,
            json!({ "id": morning, "at": { "ge": "2026-03-01T09:15:00Z" } }),
        )
        .await;
    assert_eq!(
        texts(&page, "/data/getConversation/utterances/items"),
        ["second", "third"],
        "{page}"
    );
    let next = page["data"]["getConversation"]["utterances"]["nextToken"].clone();
    let rest = app
        .graphql(
            query,
            json!({ "id": morning, "at": { "ge": "2026-03-01T09:15:00Z" }, "next": next }),
        )
        .await;
    assert_eq!(
        texts(&rest, "/data/getConversation/utterances/items"),
        ["fourth"],
        "{rest}"
    );
}

/// `id: ID! @primaryKey` is the key Amplify's list takes: `listBuckles(id:, filter, limit,
/// nextToken, sortDirection)`, `id` answering that node alone.
#[tokio::test]
async fn a_list_of_a_type_keyed_by_id_takes_the_id_as_amplifys_does() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-id-key/schema.graphql").await;
    for (id, name) in [("b-1", "Brass"), ("b-2", "Steel"), ("b-3", "Bronze")] {
        let made = app
            .graphql(
                "mutation($id: ID!, $n: String!) { createBuckle(input: { id: $id, name: $n }) { id } }",
                json!({ "id": id, "n": name }),
            )
            .await;
        assert!(made.get("errors").is_none(), "{made}");
    }
    let arguments = app
        .graphql(
            "{ __type(name: \"Query\") { fields { name args { name } } } }",
            json!({}),
        )
        .await;
    let list = arguments["data"]["__type"]["fields"]
        .as_array()
        .and_then(|fields| fields.iter().find(|f| f["name"] == "listBuckles"))
        .unwrap_or_else(|| panic!("{arguments}"));
    let names: Vec<&str> = list["args"]
        .as_array()
        .map(|args| args.iter().filter_map(|a| a["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        ["id", "filter", "limit", "nextToken", "sortDirection"],
        "{list}"
    );
    let one = app
        .graphql(
            "{ listBuckles(id: \"b-2\") { items { id name } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        one["data"]["listBuckles"]["items"],
        json!([{ "id": "b-2", "name": "Steel" }]),
        "{one}"
    );
    let none = app
        .graphql(
            "{ listBuckles(id: \"b-2\", filter: { name: { eq: \"Brass\" } }) { items { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(none["data"]["listBuckles"]["items"], json!([]), "{none}");
    let newest_first = app
        .graphql(
            "{ listBuckles(sortDirection: DESC) { items { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        newest_first["data"]["listBuckles"]["items"],
        json!([{ "id": "b-3" }, { "id": "b-2" }, { "id": "b-1" }]),
        "{newest_first}"
    );
}

/// An `@index` sorted by an enum takes a key condition on it, as Amplify's does: the values
/// given as text, compared as the index sorts them.
#[tokio::test]
async fn an_index_sorted_by_an_enum_takes_its_key_condition() {
    let app = spawn_app_with_schema("tests/fixtures/amplify-enum-key/schema.graphql").await;
    for (from, status, note) in [
        ("p1", "REJECTED", "r"),
        ("p1", "ACCEPTED", "a"),
        ("p1", "PENDING", "p"),
        ("p2", "ACCEPTED", "other"),
    ] {
        let made = app
            .graphql(
                "mutation($f: ID!, $s: MatchStatus!, $n: String) { createMatch(input: { fromId: $f, status: $s, note: $n }) { id } }",
                json!({ "f": from, "s": status, "n": note }),
            )
            .await;
        assert!(made.get("errors").is_none(), "{made}");
    }
    let query = "query($c: ModelStringKeyConditionInput, $d: ModelSortDirection) {
      matchesByFromPeer(fromId: \"p1\", status: $c, sortDirection: $d) { items { note } }
    }";
    for (condition, direction, expected) in [
        (json!(null), "ASC", json!(["a", "p", "r"])),
        (json!({ "eq": "ACCEPTED" }), "ASC", json!(["a"])),
        (json!({ "beginsWith": "RE" }), "ASC", json!(["r"])),
        (
            json!({ "between": ["ACCEPTED", "PENDING"] }),
            "DESC",
            json!(["p", "a"]),
        ),
        (json!({ "gt": "ACCEPTED" }), "ASC", json!(["p", "r"])),
    ] {
        let body = app
            .graphql(query, json!({ "c": condition, "d": direction }))
            .await;
        let notes: Vec<serde_json::Value> = body["data"]["matchesByFromPeer"]["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{condition}: {body}"))
            .iter()
            .map(|item| item["note"].clone())
            .collect();
        assert_eq!(json!(notes), expected, "{condition}: {body}");
    }
}

/// `id: ID`, declared optional, loads: Amplify's API (`--amplify-strict`) serves it as
/// declared, tablegraph's serves `ID!` (its `Node` interface needs one), and a create gives
/// every node an id either way.
#[tokio::test]
async fn an_id_declared_optional_is_served_as_declared() {
    let schema = "tests/fixtures/amplify-id-key/schema.graphql";
    let (ok, strict, _) = run(&["schema", "--schema", schema, "--amplify-strict"]).await;
    assert!(ok, "{strict}");
    let strict = flat(&strict);
    assert!(
        strict.contains("type Tag { id: ID label: String"),
        "{strict}"
    );
    let (ok, loose, _) = run(&["schema", "--schema", schema]).await;
    assert!(ok, "{loose}");
    assert!(
        flat(&loose).contains("type Tag implements Node { id: ID! label: String"),
        "{loose}"
    );
    let app = spawn_app_with_schema(schema).await;
    let made = app
        .graphql(
            "mutation { createTag(input: { label: \"hay\" }) { id label } }",
            json!({}),
        )
        .await;
    assert!(made["data"]["createTag"]["id"].is_string(), "{made}");
}

/// A field of a `@model` type, or a list of one, that no directive relates is served as
/// Amplify's transformer serves it: in the type as declared, with no resolver, so it answers
/// null; no create input, filter or condition takes it.
#[tokio::test]
async fn a_model_typed_field_no_directive_relates_is_served_unresolved() {
    let (ok, sdl, _) = run(&["schema", "--schema", SCHEMA, "--amplify-strict"]).await;
    assert!(ok, "{sdl}");
    let sdl = flat(&sdl);
    assert!(
        sdl.contains("type Board { id: ID! name: String tasks: [Task] lead: Task createdAt"),
        "{sdl}"
    );
    for input in [
        "input CreateBoardInput {",
        "input ModelBoardFilterInput {",
        "input ModelBoardConditionInput {",
    ] {
        let declared = sdl
            .split(input)
            .nth(1)
            .unwrap_or_else(|| panic!("{input}: {sdl}"));
        let declared = declared.split('}').next().unwrap_or_default();
        assert!(
            !declared.contains("tasks") && !declared.contains("lead"),
            "{input} {declared}"
        );
    }
    let app = spawn_app_with_schema(SCHEMA).await;
    let made = app
        .graphql(
            "mutation { createBoard(input: { name: \"chores\" }) { id tasks { id } lead { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        made["data"]["createBoard"]["tasks"],
        serde_json::Value::Null,
        "{made}"
    );
    let id = made["data"]["createBoard"]["id"].clone();
    let got = app
        .graphql(
            "query($id: ID!) { getBoard(id: $id) { name tasks { id } lead { id } } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        got,
        json!({ "data": { "getBoard": { "name": "chores", "tasks": null, "lead": null } } })
    );
}

/// Rules on a relation field (`pets: [Pet] @hasMany @auth(rules: [{ allow: owner }])`) decide
/// who may follow the relation from a node, as Amplify's do: a caller they leave out gets
/// AppSync's `Unauthorized` for that field, null beside the fields they may read.
#[tokio::test]
async fn rules_on_a_relation_field_decide_who_follows_it() {
    let key = "da2-transformer";
    let app = spawn_app_with_schema_and(SCHEMA, api_key_and_tokens(key)).await;
    let ann = user_token("ann", &[]);
    let as_ann = [("authorization", ann.as_str())];
    let (_, shelter) = app
        .graphql_with(
            &as_ann,
            "mutation { createShelter(input: { name: \"Hillside\" }) { id } }",
            json!({}),
        )
        .await;
    let shelter = shelter["data"]["createShelter"]["id"].clone();
    let (_, pet) = app
        .graphql_with(
            &as_ann,
            "mutation($s: ID) { createPet(input: { name: \"Rex\", shelterPetsId: $s }) { id } }",
            json!({ "s": shelter }),
        )
        .await;
    let pet = pet["data"]["createPet"]["id"].clone();
    assert!(pet.is_string(), "{pet}");
    let read = "query($s: ID!, $p: ID!) {
      getShelter(id: $s) { name pets { items { name } } }
      getPet(id: $p) { name shelter { name } }
    }";
    let variables = json!({ "s": shelter, "p": pet });
    let (_, owner) = app.graphql_with(&as_ann, read, variables.clone()).await;
    assert_eq!(
        owner,
        json!({ "data": {
            "getShelter": { "name": "Hillside", "pets": { "items": [{ "name": "Rex" }] } },
            "getPet": { "name": "Rex", "shelter": { "name": "Hillside" } },
        } })
    );
    let (_, public) = app
        .graphql_with(&[("x-api-key", key)], read, variables)
        .await;
    assert_eq!(
        public["data"],
        json!({
            "getShelter": { "name": "Hillside", "pets": null },
            "getPet": { "name": "Rex", "shelter": null },
        }),
        "{public}"
    );
    let errors = public["errors"].as_array().cloned().unwrap_or_default();
    let mut refused: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| {
            (
                e["errorType"].as_str().unwrap_or_default(),
                e["message"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    refused.sort();
    assert_eq!(
        refused,
        [
            (
                "Unauthorized",
                "Not Authorized to access pets on type Shelter"
            ),
            (
                "Unauthorized",
                "Not Authorized to access shelter on type Pet"
            ),
        ],
        "{public}"
    );
}

/// A schema's own `Create<Type>Input` and `Update<Type>Input` are the ones served, as Amplify's
/// transformer keeps them: the mutations take what they declare, and nothing else.
#[tokio::test]
async fn a_models_own_create_and_update_inputs_are_the_ones_served() {
    let (ok, sdl, _) = run(&["schema", "--schema", SCHEMA, "--amplify-strict"]).await;
    assert!(ok, "{sdl}");
    let sdl = flat(&sdl);
    for declared in [
        "input CreateRideInput { driver: String! seats: Int! }",
        "input UpdateRideInput { id: ID! seats: Int }",
    ] {
        assert!(sdl.contains(declared), "{declared}: {sdl}");
    }
    let app = spawn_app_with_schema(SCHEMA).await;
    let made = app
        .graphql(
            "mutation { createRide(input: { driver: \"Ann\", seats: 3 }) { id driver seats status } }",
            json!({}),
        )
        .await;
    let id = made["data"]["createRide"]["id"].clone();
    assert!(id.is_string(), "{made}");
    assert_eq!(
        made["data"]["createRide"]["status"],
        serde_json::Value::Null
    );
    let updated = app
        .graphql(
            "mutation($id: ID!) { updateRide(input: { id: $id, seats: 2 }) { driver seats } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        updated["data"]["updateRide"],
        json!({ "driver": "Ann", "seats": 2 }),
        "{updated}"
    );
    // A field the declared input leaves out is not taken, as AppSync's validation refuses it.
    let refused = app
        .graphql(
            "mutation($id: ID!) { updateRide(input: { id: $id, status: \"full\" }) { status } }",
            json!({ "id": id }),
        )
        .await;
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("status")),
        "{refused}"
    );
    let read = app
        .graphql(
            "query($id: ID!) { getRide(id: $id) { seats status } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        read["data"]["getRide"],
        json!({ "seats": 2, "status": null })
    );
}
