//! The farm walkthrough: the generated operations of the default schema.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_type, id_at, spawn_app};

const FARM_BY_NAME: &str = "query($name: String!) { farmByName(name: $name) { id name } }";

async fn farm_id_by_name(app: &TestApp, name: &str) -> Option<String> {
    let body = app.graphql(FARM_BY_NAME, json!({ "name": name })).await;
    body["data"]["farmByName"]["id"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn a_created_farm_is_found_by_id_and_by_name_in_any_case() {
    let app = spawn_app().await;
    let id = app.create_farm("Old MacDonald's").await;

    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { id name version createdAt updatedAt } }",
            json!({ "id": id }),
        )
        .await;
    let farm = &body["data"]["farm"];
    assert_eq!(farm["name"], "Old MacDonald's");
    assert_eq!(farm["version"], 1);
    assert_eq!(farm["createdAt"], farm["updatedAt"]);

    assert_eq!(
        farm_id_by_name(&app, "old macdonald's").await,
        Some(id.clone())
    );
    assert_eq!(farm_id_by_name(&app, "  OLD MACDONALD'S ").await, Some(id));
    assert_eq!(farm_id_by_name(&app, "New MacDonald's").await, None);
}

#[tokio::test]
async fn a_name_differing_only_in_case_is_refused_and_nothing_is_written() {
    let app = spawn_app().await;
    let first = app.create_farm("Old MacDonald's").await;
    let (body, calls) = app
        .graphql_counted(
            "mutation { createFarm(input: { name: \"OLD macdonald's\" }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(error_type(&body), "UniqueConstraintViolation", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["field"], "name");
    assert_eq!(body["data"]["createFarm"], Value::Null);
    // The node and its unique item were one transaction: it failed as a whole.
    assert_eq!(calls, vec!["TransactWriteItems"]);
    assert_eq!(
        farm_id_by_name(&app, "OLD macdonald's").await,
        Some(first.clone())
    );
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { name } }",
            json!({ "id": first }),
        )
        .await;
    assert_eq!(body["data"]["farm"]["name"], "Old MacDonald's");
}

#[tokio::test]
async fn renaming_a_farm_frees_the_old_name_and_takes_the_new_one() {
    let app = spawn_app().await;
    let id = app.create_farm("Green Acres").await;
    let body = app
        .graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"Blue Acres\" }) { name version } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        body["data"]["updateFarm"],
        json!({ "name": "Blue Acres", "version": 2 })
    );
    assert_eq!(farm_id_by_name(&app, "green acres").await, None);
    assert_eq!(farm_id_by_name(&app, "blue acres").await, Some(id));
    // The old name is free for another farm; the new one is taken.
    app.create_farm("Green Acres").await;
    let body = app
        .graphql(
            "mutation { createFarm(input: { name: \"BLUE ACRES\" }) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(error_type(&body), "UniqueConstraintViolation");
}

#[tokio::test]
async fn renaming_onto_a_taken_name_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    let id = app.create_farm("Sunny").await;
    app.create_farm("Rainy").await;
    let body = app
        .graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"rainy\" }) { name } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(error_type(&body), "UniqueConstraintViolation", "{body}");
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { name version } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        body["data"]["farm"],
        json!({ "name": "Sunny", "version": 1 })
    );
    assert_eq!(farm_id_by_name(&app, "sunny").await, Some(id));
}

#[tokio::test]
async fn changing_only_the_case_of_a_name_keeps_it() {
    let app = spawn_app().await;
    let id = app.create_farm("sunny").await;
    let body = app
        .graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"Sunny\" }) { name } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(body["data"]["updateFarm"]["name"], "Sunny", "{body}");
    assert_eq!(farm_id_by_name(&app, "SUNNY").await, Some(id));
}

#[tokio::test]
async fn deleting_a_farm_frees_its_name() {
    let app = spawn_app().await;
    let id = app.create_farm("Windy").await;
    let body = app
        .graphql(
            "mutation($id: ID!) { deleteFarm(id: $id) { id name } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(body["data"]["deleteFarm"]["name"], "Windy");
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { id } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(body["data"]["farm"], Value::Null);
    assert_eq!(farm_id_by_name(&app, "windy").await, None);
    let again = app.create_farm("WINDY").await;
    assert_ne!(again, id);
    // Deleting what is gone answers null.
    let body = app
        .graphql(
            "mutation($id: ID!) { deleteFarm(id: $id) { id } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(body["data"]["deleteFarm"], Value::Null, "{body}");
}

#[tokio::test]
async fn a_wrong_expected_version_fails_and_changes_nothing() {
    let app = spawn_app().await;
    let id = app.create_farm("Stony").await;
    let update = "mutation($id: ID!, $v: Int) { updateFarm(input: { id: $id, name: \"Muddy\", expectedVersion: $v }) { name version } }";
    let body = app.graphql(update, json!({ "id": id, "v": 7 })).await;
    assert_eq!(error_type(&body), "VersionMismatch", "{body}");
    assert_eq!(body["errors"][0]["extensions"]["currentVersion"], 1);
    let body = app
        .graphql(
            "mutation($id: ID!) { deleteFarm(id: $id, expectedVersion: 3) { id } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(error_type(&body), "VersionMismatch", "{body}");
    assert_eq!(farm_id_by_name(&app, "stony").await, Some(id.clone()));
    assert_eq!(farm_id_by_name(&app, "muddy").await, None);

    let body = app.graphql(update, json!({ "id": id, "v": 1 })).await;
    assert_eq!(
        body["data"]["updateFarm"],
        json!({ "name": "Muddy", "version": 2 })
    );
}

#[tokio::test]
async fn a_cow_id_is_never_answered_as_a_farm() {
    let app = spawn_app().await;
    let farm = app.create_farm("Dairy").await;
    let cow = app.create_animal("Cow", "Bessie", &farm).await;
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { id name } }",
            json!({ "id": cow }),
        )
        .await;
    assert_eq!(body["data"]["farm"], Value::Null, "{body}");
    assert!(body["errors"].is_null(), "{body}");
    // Nor updated or deleted as one.
    let body = app
        .graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"x\" }) { id } }",
            json!({ "id": cow }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    let body = app
        .graphql(
            "mutation($id: ID!) { deleteFarm(id: $id) { id } }",
            json!({ "id": cow }),
        )
        .await;
    assert_eq!(body["data"]["deleteFarm"], Value::Null, "{body}");
    let body = app
        .graphql(
            "query($id: ID!) { cow(id: $id) { name } }",
            json!({ "id": cow }),
        )
        .await;
    assert_eq!(body["data"]["cow"]["name"], "Bessie");
}

#[tokio::test]
async fn node_and_nodes_answer_any_type_with_its_typename() {
    let app = spawn_app().await;
    let farm = app.create_farm("Mixed").await;
    let cow = app.create_animal("Cow", "Bessie", &farm).await;
    let chicken = app.create_animal("Chicken", "Chuck", &farm).await;
    let body = app
        .graphql(
            "query($ids: [ID!]!, $cow: ID!) {
                node(id: $cow) { __typename id }
                nodes(ids: $ids) { __typename id ... on Farm { name } ... on Chicken { name } }
            }",
            json!({ "cow": cow, "ids": [chicken, "01000000-0000-7000-8000-000000000000", farm] }),
        )
        .await;
    assert_eq!(
        body["data"]["node"],
        json!({ "__typename": "Cow", "id": cow })
    );
    assert_eq!(
        body["data"]["nodes"],
        json!([
            { "__typename": "Chicken", "id": chicken, "name": "Chuck" },
            null,
            { "__typename": "Farm", "id": farm, "name": "Mixed" },
        ])
    );
}

#[tokio::test]
async fn nodes_reached_through_fragments_keep_their_null_items() {
    let app = spawn_app().await;
    let farm = app.create_farm("Spread").await;
    let missing = "01000000-0000-7000-8000-000000000000";
    let body = app
        .graphql(
            "query($ids: [ID!]!) { ...Lookup }
             fragment Lookup on Query { ... on Query { found: nodes(ids: $ids) { id } } }",
            json!({ "ids": [missing, farm] }),
        )
        .await;
    assert!(body.get("errors").is_none(), "{body}");
    assert_eq!(body["data"]["found"], json!([null, { "id": farm }]));
}

#[tokio::test]
async fn a_farm_has_its_logo_and_a_cow_its_farm() {
    let app = spawn_app().await;
    let body = app
        .graphql(
            "mutation { createImage(input: { url: \"logo.gif\" }) { id } }",
            json!({}),
        )
        .await;
    let logo = id_at(&body, "/data/createImage/id");
    let body = app
        .graphql(
            "mutation($logo: ID!) { createFarm(input: { name: \"Logo Farm\", logoId: $logo }) { id logo { url } } }",
            json!({ "logo": logo }),
        )
        .await;
    assert_eq!(
        body["data"]["createFarm"]["logo"]["url"], "logo.gif",
        "{body}"
    );
    let farm = id_at(&body, "/data/createFarm/id");
    let cow = app.create_animal("Cow", "Bessie", &farm).await;
    let body = app
        .graphql(
            "query($id: ID!) { cow(id: $id) { farm { name logo { url } } } }",
            json!({ "id": cow }),
        )
        .await;
    assert_eq!(
        body["data"]["cow"]["farm"],
        json!({ "name": "Logo Farm", "logo": { "url": "logo.gif" } })
    );
    // Removing the logo is an explicit null.
    let body = app
        .graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, logoId: null }) { logoId logo { url } } }",
            json!({ "id": farm }),
        )
        .await;
    assert_eq!(
        body["data"]["updateFarm"],
        json!({ "logoId": null, "logo": null })
    );
}

const COW_PAGE: &str =
    "query($farm: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    farm(id: $farm) {
        cows(first: $first, after: $after, last: $last, before: $before) {
            edges { cursor node { name } }
            pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        }
    }
}";

fn names(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("a connection with edges: {connection}"))
        .iter()
        .map(|edge| edge["node"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn cows_page_forward_and_backward_sorted_case_insensitively() {
    let app = spawn_app().await;
    let farm = app.create_farm("Herd").await;
    for name in ["daisy", "Bessie", "ermintrude", "Clara", "alma"] {
        app.create_animal("Cow", name, &farm).await;
    }
    let page = |vars: Value| async {
        let body = app.graphql(COW_PAGE, vars).await;
        body["data"]["farm"]["cows"].clone()
    };

    let first = page(json!({ "farm": farm, "first": 2 })).await;
    assert_eq!(names(&first), ["alma", "Bessie"]);
    assert_eq!(first["pageInfo"]["hasNextPage"], true);
    assert_eq!(first["pageInfo"]["hasPreviousPage"], false);
    let second =
        page(json!({ "farm": farm, "first": 2, "after": first["pageInfo"]["endCursor"] })).await;
    assert_eq!(names(&second), ["Clara", "daisy"]);
    assert_eq!(second["pageInfo"]["hasPreviousPage"], true);
    let third =
        page(json!({ "farm": farm, "first": 2, "after": second["pageInfo"]["endCursor"] })).await;
    assert_eq!(names(&third), ["ermintrude"]);
    assert_eq!(third["pageInfo"]["hasNextPage"], false);

    let last = page(json!({ "farm": farm, "last": 2 })).await;
    assert_eq!(names(&last), ["daisy", "ermintrude"]);
    assert_eq!(last["pageInfo"]["hasPreviousPage"], true);
    assert_eq!(last["pageInfo"]["hasNextPage"], false);
    let before =
        page(json!({ "farm": farm, "last": 2, "before": last["pageInfo"]["startCursor"] })).await;
    assert_eq!(names(&before), ["Bessie", "Clara"]);
    assert_eq!(before["pageInfo"]["hasNextPage"], true);

    let between = page(json!({
        "farm": farm,
        "after": first["edges"][0]["cursor"],
        "before": last["edges"][1]["cursor"],
    }))
    .await;
    assert_eq!(names(&between), ["Bessie", "Clara", "daisy"]);

    let everything = page(json!({ "farm": farm })).await;
    assert_eq!(
        names(&everything),
        ["alma", "Bessie", "Clara", "daisy", "ermintrude"]
    );
    let none = page(json!({ "farm": farm, "first": 0 })).await;
    assert_eq!(names(&none), Vec::<String>::new());
    assert_eq!(none["pageInfo"]["hasNextPage"], true);
}

#[tokio::test]
async fn renaming_a_cow_moves_it_in_the_sorted_connection() {
    let app = spawn_app().await;
    let farm = app.create_farm("Resort").await;
    let alma = app.create_animal("Cow", "alma", &farm).await;
    app.create_animal("Cow", "Bessie", &farm).await;
    app.graphql(
        "mutation($id: ID!) { updateCow(input: { id: $id, name: \"Zelda\" }) { name } }",
        json!({ "id": alma }),
    )
    .await;
    let body = app.graphql(COW_PAGE, json!({ "farm": farm })).await;
    assert_eq!(names(&body["data"]["farm"]["cows"]), ["Bessie", "Zelda"]);
}

#[tokio::test]
async fn animals_mix_cows_and_chickens_with_their_typenames() {
    let app = spawn_app().await;
    let farm = app.create_farm("Barnyard").await;
    let other = app.create_farm("Elsewhere").await;
    app.create_animal("Cow", "Daisy", &farm).await;
    app.create_animal("Chicken", "chuck", &farm).await;
    app.create_animal("Cow", "Bessie", &farm).await;
    app.create_animal("Cow", "Stranger", &other).await;
    let body = app
        .graphql(
            "query($farm: ID!) { farm(id: $farm) {
                animals { edges { node { __typename ... on Cow { name } ... on Chicken { name } } } }
                chickens { edges { node { name } } }
            } }",
            json!({ "farm": farm }),
        )
        .await;
    let animals: Vec<(String, String)> = body["data"]["farm"]["animals"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("animals in {body}"))
        .iter()
        .map(|e| {
            (
                e["node"]["__typename"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["node"]["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        animals,
        [
            ("Cow".to_owned(), "Bessie".to_owned()),
            ("Chicken".to_owned(), "chuck".to_owned()),
            ("Cow".to_owned(), "Daisy".to_owned()),
        ]
    );
    assert_eq!(names(&body["data"]["farm"]["chickens"]), ["chuck"]);
}

#[tokio::test]
async fn moving_a_cow_to_another_farm_moves_it_between_connections() {
    let app = spawn_app().await;
    let from = app.create_farm("From").await;
    let to = app.create_farm("To").await;
    let cow = app.create_animal("Cow", "Wanderer", &from).await;
    let body = app
        .graphql(
            "mutation($id: ID!, $to: ID!) { updateCow(input: { id: $id, farmId: $to }) { farm { name } } }",
            json!({ "id": cow, "to": to }),
        )
        .await;
    assert_eq!(body["data"]["updateCow"]["farm"]["name"], "To", "{body}");
    let from_cows = app.graphql(COW_PAGE, json!({ "farm": from })).await;
    let to_cows = app.graphql(COW_PAGE, json!({ "farm": to })).await;
    assert_eq!(
        names(&from_cows["data"]["farm"]["cows"]),
        Vec::<String>::new()
    );
    assert_eq!(names(&to_cows["data"]["farm"]["cows"]), ["Wanderer"]);
}

#[tokio::test]
async fn an_update_leaves_fields_bound_to_unsent_variables_alone() {
    let app = spawn_app().await;
    let body = app
        .graphql(
            "mutation { createImage(input: { url: \"kept.png\" }) { id } }",
            json!({}),
        )
        .await;
    let logo = id_at(&body, "/data/createImage/id");
    let body = app
        .graphql(
            "mutation($l: ID!) { createFarm(input: { name: \"Partial\", logoId: $l }) { id } }",
            json!({ "l": logo }),
        )
        .await;
    let farm = id_at(&body, "/data/createFarm/id");
    let body = app
        .graphql(
            "mutation($id: ID!, $n: String, $l: ID) { updateFarm(input: { id: $id, name: $n, logoId: $l }) { name logoId } }",
            json!({ "id": farm, "n": "Renamed" }),
        )
        .await;
    assert_eq!(
        body["data"]["updateFarm"],
        json!({ "name": "Renamed", "logoId": logo }),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_creates_with_one_name_exactly_one_succeeds() {
    let app = spawn_app().await;
    let names = [
        "Contested",
        "CONTESTED",
        "contested",
        " Contested ",
        "cOnTeStEd",
    ];
    let attempts = (0..50).map(|n| {
        app.graphql(
            "mutation($n: String!) { createFarm(input: { name: $n }) { id } }",
            json!({ "n": names[n % names.len()] }),
        )
    });
    let bodies = futures::future::join_all(attempts).await;
    let created = bodies
        .iter()
        .filter(|b| b["data"]["createFarm"]["id"].is_string())
        .count();
    assert_eq!(created, 1, "{bodies:?}");
    for body in bodies
        .iter()
        .filter(|b| !b["data"]["createFarm"]["id"].is_string())
    {
        assert_eq!(error_type(body), "UniqueConstraintViolation", "{body}");
    }
    let report = app.assert_table_consistent().await;
    assert_eq!((report.nodes, report.unique_values), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_renames_onto_one_name_exactly_one_succeeds() {
    let app = spawn_app().await;
    let mut farms = Vec::new();
    for n in 0..8 {
        farms.push(app.create_farm(&format!("Before {n}")).await);
    }
    let renames = farms.iter().map(|id| {
        app.graphql(
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"After\" }) { id } }",
            json!({ "id": id }),
        )
    });
    let bodies = futures::future::join_all(renames).await;
    let renamed: Vec<&str> = bodies
        .iter()
        .filter_map(|b| b["data"]["updateFarm"]["id"].as_str())
        .collect();
    assert_eq!(renamed.len(), 1, "{bodies:?}");
    assert_eq!(
        farm_id_by_name(&app, "after").await.as_deref(),
        Some(renamed[0])
    );
    // The losers kept their names.
    let mut kept = 0;
    for n in 0..8 {
        kept += usize::from(
            farm_id_by_name(&app, &format!("before {n}"))
                .await
                .is_some(),
        );
    }
    assert_eq!(kept, 7);
}

#[tokio::test]
async fn names_people_read_as_one_are_one_name() {
    let app = spawn_app().await;
    let pairs = [
        ("Straße", "STRASSE"),
        ("İstanbul", "istanbul"),
        ("ＯＬＤ", "old"),
        ("ﬁsh", "FISH"),
        ("Café", "Cafe\u{301}"),
        ("Zero\u{200B}Width", "zerowidth"),
    ];
    for (first, second) in pairs {
        let id = app.create_farm(first).await;
        let body = app
            .graphql(
                "mutation($name: String!) { createFarm(input: { name: $name }) { id } }",
                json!({ "name": second }),
            )
            .await;
        assert_eq!(
            error_type(&body),
            "UniqueConstraintViolation",
            "{first:?} then {second:?}: {body}"
        );
        assert_eq!(farm_id_by_name(&app, second).await, Some(id), "{second:?}");
    }
    // Still different: an accent, and a dotless i.
    app.create_farm("Cafe").await;
    app.create_farm("ıstanbul").await;
}

#[tokio::test]
async fn invisible_names_and_bidirectional_controls_are_refused_and_nothing_is_written() {
    let app = spawn_app().await;
    let id = app.create_farm("Visible").await;
    let cases = [
        ("\u{200B}\u{200B}", "must have a visible character"),
        (" \u{FEFF}\u{2060} ", "must have a visible character"),
        ("", "must have a visible character"),
        ("\u{0}\u{0}", "must have a visible character"),
        ("\u{2800}", "must have a visible character"),
        // Format characters (Unicode category Cf) alone.
        ("\u{FFF9}", "must have a visible character"),
        ("\u{13430}\u{13431}", "must have a visible character"),
        (
            "Farm\u{202E}mraF",
            "must not contain bidirectional control characters",
        ),
        (
            "\u{2067}Farm\u{2069}",
            "must not contain bidirectional control characters",
        ),
    ];
    for (name, message) in cases {
        let (body, calls) = app
            .graphql_counted(
                "mutation($name: String!) { createFarm(input: { name: $name }) { id } }",
                json!({ "name": name }),
            )
            .await;
        assert_eq!(error_type(&body), "BadUserInput", "{name:?}: {body}");
        let text = body["errors"][0]["message"].as_str().unwrap_or_default();
        assert_eq!(text, format!("Farm.name {message}"), "{name:?}");
        assert!(
            calls.is_empty(),
            "{name:?}: nothing is read or written: {calls:?}"
        );
        let body = app
            .graphql(
                "mutation($id: ID!, $name: String!) { updateFarm(input: { id: $id, name: $name }) { id } }",
                json!({ "id": id, "name": name }),
            )
            .await;
        assert_eq!(error_type(&body), "BadUserInput", "{name:?}: {body}");
    }
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) { name version } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        body["data"]["farm"],
        json!({ "name": "Visible", "version": 1 })
    );
}
