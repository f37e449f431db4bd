//! The engine without GraphQL: its writes called directly against the server's store, and what
//! each leaves in the table, read back through the store and the API.

use std::sync::Arc;

use serde_json::json;
use tablegraph::engine::read::{PageArguments, PageRequest};
use tablegraph::engine::write::FieldValues;
use tablegraph::engine::{self, EngineError, RequestScope};
use tablegraph::model::Model;
use tablegraph::store::{AttrValue, Item, Key, Store};

use crate::helpers::{TestApp, spawn_app};

fn scope(store: &Store) -> RequestScope {
    RequestScope::new(store, 500)
}

fn text(value: &str) -> Option<AttrValue> {
    Some(AttrValue::S(value.to_owned()))
}

fn field(item: Option<&std::sync::Arc<Item>>, name: &str) -> Option<String> {
    item?.get(name)?.as_str().map(str::to_owned)
}

async fn create(store: &Store, model: &Model, kind: &str, fields: FieldValues) -> String {
    let type_def = model.type_def(kind).expect("the default schema's type");
    engine::write::create_node(&scope(store), model, type_def, &fields)
        .await
        .expect("the create commits")
        .id()
        .to_owned()
}

/// The node item `id` as the table holds it now.
async fn stored(store: &Store, id: &str) -> Option<Item> {
    store
        .get_item_consistent(&Key::same(tablegraph::keys::node_key(id)))
        .await
        .expect("the table answers")
}

/// The roles of the goal's `members` edges, with their targets' names, as the API answers them.
async fn member_roles(app: &TestApp, goal: &str) -> Vec<(String, String)> {
    let body = app
        .graphql(
            "query($g: ID!) { goal(id: $g) { members { edges { role node { ... on User { name } } } } } }",
            json!({ "g": goal }),
        )
        .await;
    body["data"]["goal"]["members"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|edge| {
            let text = |value: &serde_json::Value| value.as_str().unwrap_or("?").to_owned();
            (text(&edge["role"]), text(&edge["node"]["name"]))
        })
        .collect()
}

#[tokio::test]
async fn node_writes_leave_the_item_before_and_after_in_the_table() {
    let app = spawn_app().await;
    let model = &app.model;
    let farm = model.type_def("Farm").expect("Farm");

    let scope = scope(&app.store);
    let created =
        engine::write::create_node(&scope, model, farm, &vec![("name".into(), text("Ridge"))])
            .await
            .expect("the create commits");
    let item = stored(&app.store, created.id()).await;
    assert_eq!(
        field(item.map(Arc::new).as_ref(), "name").as_deref(),
        Some("Ridge")
    );

    engine::write::update_node(
        &scope,
        model,
        farm,
        created.id(),
        &vec![("name".into(), text("High Ridge"))],
        &engine::write::Guard::version(Some(1)),
    )
    .await
    .expect("the update commits");
    let item = stored(&app.store, created.id()).await;
    assert_eq!(
        field(item.map(Arc::new).as_ref(), "name").as_deref(),
        Some("High Ridge")
    );

    let deleted = engine::write::delete_node(
        &scope,
        model,
        farm,
        created.id(),
        &engine::write::Guard::default(),
    )
    .await
    .expect("the delete commits");
    assert_eq!(
        field(deleted.as_ref().map(|node| &node.item), "name").as_deref(),
        Some("High Ridge"),
        "the delete answers the node as it was"
    );
    assert!(stored(&app.store, created.id()).await.is_none());
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn edge_writes_and_cascades_change_the_edges_in_one_transaction() {
    let app = spawn_app().await;
    let model = &app.model;
    let goal = create(
        &app.store,
        model,
        "Goal",
        vec![
            ("title".into(), text("Grow")),
            ("kind".into(), text("OBJECTIVE")),
        ],
    )
    .await;
    let user = create(
        &app.store,
        model,
        "User",
        vec![
            ("name".into(), text("Ann")),
            ("email".into(), text("ann@example.com")),
        ],
    )
    .await;
    let membership = model.edge_def("GoalMembership").expect("GoalMembership");
    let role = |role: &str| Item::from_iter([("role".to_owned(), AttrValue::S(role.to_owned()))]);

    let scope = scope(&app.store);
    engine::write::add_edge(&scope, model, membership, &goal, &user, &role("LEAD"))
        .await
        .expect("the edge is added");
    assert_eq!(
        member_roles(&app, &goal).await,
        [("LEAD".to_owned(), "Ann".to_owned())]
    );

    engine::write::add_edge(
        &scope,
        model,
        membership,
        &goal,
        &user,
        &role("CONTRIBUTOR"),
    )
    .await
    .expect("the edge's metadata change");
    assert_eq!(
        member_roles(&app, &goal).await,
        [("CONTRIBUTOR".to_owned(), "Ann".to_owned())],
        "the edge is changed, not added twice"
    );

    // Deleting the user removes the edge in the same transaction.
    let user_type = model.type_def("User").expect("User");
    engine::write::delete_node(
        &scope,
        model,
        user_type,
        &user,
        &engine::write::Guard::default(),
    )
    .await
    .expect("the delete commits");
    assert!(stored(&app.store, &user).await.is_none());
    assert!(member_roles(&app, &goal).await.is_empty());
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_refused_write_leaves_the_table_as_it_was() {
    let app = spawn_app().await;
    let model = &app.model;
    let farm = model.type_def("Farm").expect("Farm");
    let ridge = create(
        &app.store,
        model,
        "Farm",
        vec![("name".into(), text("Ridge"))],
    )
    .await;
    let before = stored(&app.store, &ridge).await;

    let scope = scope(&app.store);
    let error =
        engine::write::create_node(&scope, model, farm, &vec![("name".into(), text(" RIDGE "))])
            .await
            .expect_err("the name is taken, in another case");
    assert_eq!(
        error,
        EngineError::UniqueConstraintViolation {
            type_name: "Farm".into(),
            field: "name".into()
        }
    );
    let farms = app.graphql("{ listFarms { totalCount } }", json!({})).await;
    assert_eq!(farms["data"]["listFarms"]["totalCount"], 1, "{farms}");
    assert_eq!(stored(&app.store, &ridge).await, before);

    let error = engine::write::remove_edge(&scope, model, "GoalMembership", "nobody", "nothing")
        .await
        .expect_err("there is no such edge");
    assert_eq!(error.error_type(), "BadUserInput");
    app.assert_table_consistent().await;
}

/// A farm named `name` with a cow of each of `cows`, and its `cows` connection.
async fn farm_with_cows(
    app: &TestApp,
    name: &str,
    cows: &[&str],
) -> (String, engine::read::Connection) {
    let model = &app.model;
    let farm = create(&app.store, model, "Farm", vec![("name".into(), text(name))]).await;
    for cow in cows {
        let fields = vec![("name".into(), text(cow)), ("farmId".into(), text(&farm))];
        create(&app.store, model, "Cow", fields).await;
    }
    let farm_type = model.type_def("Farm").expect("Farm");
    let connection =
        engine::read::Connection::of(farm_type, farm_type.field("cows").expect("cows"), model)
            .expect("a connection field");
    (farm, connection)
}

#[tokio::test]
async fn a_page_is_read_without_graphql_and_its_cursor_moves_within_it() {
    let app = spawn_app().await;
    let model = &app.model;
    let (farm, cows) = farm_with_cows(&app, "Ridge", &["Clara", "bessie", "Daisy"]).await;
    let first_two = PageRequest::new(PageArguments {
        first: Some(2),
        ..PageArguments::default()
    })
    .expect("a valid page");
    let scope = scope(&app.store);
    let page = engine::read::read_page(&scope, model, &cows, &farm, &first_two, false)
        .await
        .expect("the page is read");
    let names: Vec<Option<String>> = page
        .edges
        .iter()
        .map(|edge| field(edge.node.as_ref().map(|node| &node.item), "name"))
        .collect();
    assert_eq!(names, [Some("bessie".into()), Some("Clara".into())]);
    assert!(page.has_next_page);
    assert_eq!(scope.calls.calls().len(), 1, "a page is one Query");

    let rest = PageRequest::new(PageArguments {
        first: Some(2),
        after: Some(page.edges[1].cursor.encode(&scope.cursors)),
        ..PageArguments::default()
    })
    .expect("a valid page");
    let page = engine::read::read_page(&scope, model, &cows, &farm, &rest, false)
        .await
        .expect("the next page is read");
    assert_eq!(page.edges.len(), 1);
    assert!(!page.has_next_page && page.has_previous_page);

    // A cursor of this connection under another farm is refused.
    let forged = engine::read::read_page(&scope, model, &cows, "another-farm", &rest, false)
        .await
        .expect_err("the cursor is bound to its farm");
    assert_eq!(forged.error_type(), "BadUserInput");
}

/// Cursors carry a MAC under the server's key: a forged sort key is refused, replicas with one
/// key read each other's cursors, and a key being rotated out still reads the old ones.
#[tokio::test]
async fn cursors_are_signed_with_the_servers_key_and_survive_its_rotation() {
    use std::sync::Arc;
    use tablegraph::engine::ScopeSource;
    use tablegraph::keys::CursorKeys;

    let app = spawn_app().await;
    let model = &app.model;
    let (farm, cows) = farm_with_cows(&app, "Keys", &["A", "B", "C"]).await;
    let scopes = |current: &str, previous: Option<&str>| {
        ScopeSource::new(app.store.clone(), 500)
            .with_cursor_keys(Arc::new(CursorKeys::from_secrets(current, previous)))
    };
    let page = |after: Option<String>| {
        PageRequest::new(PageArguments {
            first: Some(1),
            after,
            ..PageArguments::default()
        })
        .expect("a valid page")
    };
    let old = scopes("old", None);
    let first = engine::read::read_page(&old.scope(None), model, &cows, &farm, &page(None), false)
        .await
        .expect("a page");
    let cursor = first.edges[0].cursor.encode(&old.scope(None).cursors);
    let after = |cursor: &str| page(Some(cursor.to_owned()));

    // Another replica with the same key, and one rotating it, read the cursor.
    for source in [scopes("old", None), scopes("new", Some("old"))] {
        let next = engine::read::read_page(
            &source.scope(None),
            model,
            &cows,
            &farm,
            &after(&cursor),
            false,
        )
        .await
        .expect("the next page");
        assert_eq!(
            field(next.edges[0].node.as_ref().map(|n| &n.item), "name"),
            Some("B".into())
        );
    }
    // A replica with another key, or one that has retired the old key, refuses it.
    for source in [scopes("other", None), scopes("new", None)] {
        let refused = engine::read::read_page(
            &source.scope(None),
            model,
            &cows,
            &farm,
            &after(&cursor),
            false,
        )
        .await
        .expect_err("refused");
        assert_eq!(refused.error_type(), "BadUserInput");
    }
    // A cursor changed anywhere (its sealed sort key too) is refused, and it shows nothing of
    // the sort key it holds.
    let forged = {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut bytes = engine.decode(&cursor).expect("base64");
        assert!(
            !String::from_utf8_lossy(&bytes).contains("Farm.cows"),
            "sealed: {cursor}"
        );
        let last = bytes.len() - 20;
        bytes[last] ^= 0x20;
        engine.encode(bytes)
    };
    let refused = engine::read::read_page(
        &old.scope(None),
        model,
        &cows,
        &farm,
        &after(&forged),
        false,
    )
    .await
    .expect_err("a forged sort key");
    assert_eq!(refused.error_type(), "BadUserInput");
}
