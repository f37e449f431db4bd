//! The invariant checker: a table the API wrote is clean; each kind of damage done to it
//! directly (as a crash between steps or a manual edit would) is reported as what it is.

use serde_json::json;
use tablegraph::check::ViolationKind;
use tablegraph::store::{AttrValue, Item, Key, Write};

use crate::helpers::{TestApp, id_at, spawn_app};

/// A farm with a cow, and a goal led by a user: nodes, unique values, a slot and an edge.
async fn small_world(app: &TestApp) -> (String, String, String, String) {
    let farm = app.create_farm("Sunny Acres").await;
    let cow = app.create_animal("Cow", "Daisy", &farm).await;
    let body = app
        .graphql(
            "mutation { createGoal(input: { title: \"Ship it\", kind: OBJECTIVE }) { id } }",
            json!({}),
        )
        .await;
    let goal = id_at(&body, "/data/createGoal/id");
    let body = app
        .graphql(
            "mutation { createUser(input: { name: \"Ann\", email: \"ann@example.com\" }) { id } }",
            json!({}),
        )
        .await;
    let user = id_at(&body, "/data/createUser/id");
    let body = app
        .graphql(
            "mutation($g: ID!, $u: ID!) { addGoalMembership(input: { from: $g, to: $u, role: LEAD }) { role } }",
            json!({ "g": goal, "u": user }),
        )
        .await;
    assert_eq!(body["data"]["addGoalMembership"]["role"], "LEAD", "{body}");
    (farm, cow, goal, user)
}

async fn item(app: &TestApp, pk: &str, sk: &str) -> Item {
    app.store
        .get_item_consistent(&Key {
            pk: pk.to_owned(),
            sk: sk.to_owned(),
        })
        .await
        .expect("a read")
        .unwrap_or_else(|| panic!("no item {pk} {sk}"))
}

async fn put(app: &TestApp, item: Item) {
    app.store
        .transact_write(vec![Write::Put {
            item,
            condition: Vec::new(),
        }])
        .await
        .expect("a raw write");
}

async fn delete(app: &TestApp, pk: &str, sk: &str) {
    app.store
        .transact_write(vec![Write::Delete {
            key: Key {
                pk: pk.to_owned(),
                sk: sk.to_owned(),
            },
            condition: Vec::new(),
        }])
        .await
        .expect("a raw delete");
}

/// The kinds of violation the checker reports now.
async fn violations(app: &TestApp) -> Vec<(ViolationKind, String)> {
    let report = tablegraph::check::check(&app.store, &app.model)
        .await
        .expect("a scan");
    report
        .violations
        .into_iter()
        .map(|v| (v.kind, v.pk))
        .collect()
}

#[tokio::test]
async fn a_table_written_through_the_api_is_clean() {
    let app = spawn_app().await;
    small_world(&app).await;
    let report = app.assert_table_consistent().await;
    // Farm, cow, goal, user; the farm's and the user's unique values; one edge.
    assert_eq!(
        (report.nodes, report.unique_values, report.edges),
        (4, 2, 1)
    );
}

#[tokio::test]
async fn each_kind_of_damage_is_reported() {
    let app = spawn_app().await;
    let (farm, cow, goal, user) = small_world(&app).await;
    let farm_key = format!("NODE#{farm}");
    let unique = "Farm#name#sunny acres";

    // The farm's name loses its unique item.
    delete(&app, unique, unique).await;
    assert_eq!(
        violations(&app).await,
        [(ViolationKind::MissingUniqueValue, unique.to_owned())]
    );

    // It comes back, but naming a value nobody holds.
    let mut orphan = Item::default();
    for (name, value) in [
        ("PK", "Farm#name#nobody's"),
        ("SK", "Farm#name#nobody's"),
        ("__typename", "Farm#name"),
        ("id", farm.as_str()),
    ] {
        orphan.insert(name.to_owned(), AttrValue::S(value.to_owned()));
    }
    put(&app, orphan).await;
    let found = violations(&app).await;
    assert!(found.contains(&(
        ViolationKind::OrphanUniqueValue,
        "Farm#name#nobody's".to_owned()
    )));
    delete(&app, "Farm#name#nobody's", "Farm#name#nobody's").await;
    let mut restored = Item::default();
    for (name, value) in [
        ("PK", unique),
        ("SK", unique),
        ("__typename", "Farm#name"),
        ("id", farm.as_str()),
    ] {
        restored.insert(name.to_owned(), AttrValue::S(value.to_owned()));
    }
    put(&app, restored).await;
    assert_eq!(violations(&app).await, []);

    // The cow's relation slot points at another farm.
    let cow_key = format!("NODE#{cow}");
    let mut moved = item(&app, &cow_key, &cow_key).await;
    moved.insert(
        "PK01".to_owned(),
        AttrValue::S("Animal#elsewhere".to_owned()),
    );
    put(&app, moved).await;
    assert_eq!(
        violations(&app).await,
        [(ViolationKind::WrongSlot, cow_key.clone())]
    );

    // The goal's edge set forgets its lead.
    let goal_key = format!("NODE#{goal}");
    let mut forgetful = item(&app, &goal_key, &goal_key).await;
    forgetful.remove("edges");
    put(&app, forgetful).await;
    let found = violations(&app).await;
    assert!(
        found.contains(&(ViolationKind::WrongEdgeSet, goal_key.clone())),
        "{found:?}"
    );

    // The user vanishes without its edges.
    let user_key = format!("NODE#{user}");
    delete(&app, &user_key, &user_key).await;
    let found = violations(&app).await;
    assert!(
        found.contains(&(ViolationKind::DanglingEdge, goal_key.clone())),
        "{found:?}"
    );

    // An item nobody declared.
    let mut stray = Item::default();
    for (name, value) in [
        ("PK", "STRAY#1"),
        ("SK", "STRAY#1"),
        ("__typename", "Mystery"),
    ] {
        stray.insert(name.to_owned(), AttrValue::S(value.to_owned()));
    }
    put(&app, stray).await;
    let found = violations(&app).await;
    assert!(
        found.contains(&(ViolationKind::UnknownItem, "STRAY#1".to_owned())),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|(_, pk)| pk == &farm_key),
        "the farm itself is fine"
    );
}

#[tokio::test]
async fn repair_fixes_every_kind_of_damage_but_unknown_items() {
    let app = spawn_app().await;
    let (farm, cow, goal, user) = small_world(&app).await;
    let unique = "Farm#name#sunny acres";
    delete(&app, unique, unique).await;
    let cow_key = format!("NODE#{cow}");
    let mut moved = item(&app, &cow_key, &cow_key).await;
    moved.insert(
        "PK01".to_owned(),
        AttrValue::S("Animal#elsewhere".to_owned()),
    );
    put(&app, moved).await;
    let goal_key = format!("NODE#{goal}");
    let mut forgetful = item(&app, &goal_key, &goal_key).await;
    forgetful.remove("edges");
    put(&app, forgetful).await;
    let user_key = format!("NODE#{user}");
    delete(&app, &user_key, &user_key).await;
    let mut stray = Item::default();
    for (name, value) in [
        ("PK", "STRAY#1"),
        ("SK", "STRAY#1"),
        ("__typename", "Mystery"),
    ] {
        stray.insert(name.to_owned(), AttrValue::S(value.to_owned()));
    }
    put(&app, stray).await;

    let repair = tablegraph::check::repair(&app.store, &app.model)
        .await
        .expect("a repair");
    assert!(
        repair.before.violations.len() >= 5,
        "{:?}",
        repair.before.violations
    );
    let left: Vec<(ViolationKind, String)> = repair
        .after
        .violations
        .iter()
        .map(|v| (v.kind, v.pk.clone()))
        .collect();
    assert_eq!(left, [(ViolationKind::UnknownItem, "STRAY#1".to_owned())]);
    // The farm's name is taken again, the cow is back in its farm, the goal lost its lead.
    let body = app
        .graphql(
            "mutation { createFarm(input: { name: \"SUNNY ACRES\" }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(
        crate::helpers::error_type(&body),
        "UniqueConstraintViolation"
    );
    let body = app
        .graphql(
            "query($f: ID!, $g: ID!) { farm(id: $f) { cows { edges { node { id } } } } goal(id: $g) { leads { id } } }",
            json!({ "f": farm, "g": goal }),
        )
        .await;
    assert_eq!(
        body["data"]["farm"]["cows"]["edges"][0]["node"]["id"],
        cow.as_str(),
        "{body}"
    );
    assert_eq!(body["data"]["goal"]["leads"], json!([]), "{body}");
}
