//! `filter:` on lists and connections, evaluated by the store as a FilterExpression: pages stay
//! full until the range ends or the read budget is spent, `pageInfo` never promises a page that
//! does not exist unless the budget stopped the page (which `extensions.filters` says), and
//! every match is read exactly once by a client following the cursors.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_type, spawn_app, spawn_app_scoped};

/// Farms whose names say which filters they meet: every 100th is `Rare` (1 %), the others
/// alternate `Even`/`Odd` (about half each). Answers every id with its name.
async fn named_farms(app: &TestApp, count: usize) -> Vec<(String, String)> {
    let mut farms = Vec::new();
    let numbers: Vec<usize> = (0..count).collect();
    for batch in numbers.chunks(40) {
        let input: Vec<Value> = batch
            .iter()
            .map(|n| {
                let kind = match n {
                    n if n % 100 == 0 => "Rare",
                    n if n % 2 == 0 => "Even",
                    _ => "Odd",
                };
                json!({ "name": format!("{kind} {n:05}") })
            })
            .collect();
        let body = app
            .graphql(
                "mutation($input: [CreateFarmInput!]!) { createFarms(input: $input) { id name } }",
                json!({ "input": input }),
            )
            .await;
        for farm in body["data"]["createFarms"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
        {
            farms.push((
                farm["id"].as_str().expect("an id").to_owned(),
                farm["name"].as_str().expect("a name").to_owned(),
            ));
        }
    }
    farms
}

/// One page read with a filter.
#[derive(Debug)]
struct FilteredPage {
    ids: Vec<String>,
    more: bool,
    calls: usize,
    read: u64,
    matched: u64,
    budget_stop: bool,
}

/// Every farm meeting `filter`, read through `listFarms` in pages of `size` forward
/// (`first`/`after`) or backward (`last`/`before`), with `direction` (`ASC`/`DESC`); with each
/// page as read. Checks on each page what holds of every filtered page: it is full, or the
/// last, or stopped by the budget; and its extension names the field.
async fn read_filtered(
    app: &TestApp,
    filter: &Value,
    size: usize,
    forward: bool,
    direction: &str,
) -> (Vec<String>, Vec<FilteredPage>) {
    let (count, position) = if forward {
        ("first", "after")
    } else {
        ("last", "before")
    };
    let query = format!(
        "query($filter: ModelFarmFilterInput, $cursor: String) {{
            listFarms({count}: {size}, {position}: $cursor, sortDirection: {direction}, filter: $filter) {{
                edges {{ node {{ id name }} }}
                pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
            }}
        }}"
    );
    let mut ids: Vec<String> = Vec::new();
    let mut pages = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let (body, calls) = app
            .graphql_counted(&query, json!({ "filter": filter, "cursor": cursor }))
            .await;
        let list = &body["data"]["listFarms"];
        let mut page_ids: Vec<String> = list["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|e| e["node"]["id"].as_str().expect("an id").to_owned())
            .collect();
        let info = &list["pageInfo"];
        let more = if forward {
            info["hasNextPage"] == true
        } else {
            info["hasPreviousPage"] == true
        };
        let stats = &body["extensions"]["filters"][0];
        assert_eq!(stats["path"], "listFarms", "{body}");
        let page = FilteredPage {
            more,
            calls: calls.len(),
            read: stats["itemsRead"].as_u64().expect("items read"),
            matched: stats["itemsMatched"].as_u64().expect("items matched"),
            budget_stop: stats["budgetExhausted"] == true,
            ids: page_ids.clone(),
        };
        assert!(page.ids.len() <= size);
        if more && !page.budget_stop {
            assert_eq!(
                page.ids.len(),
                size,
                "a page that says more follows is full"
            );
        }
        assert!(page.matched >= page.ids.len() as u64, "{body}");
        let next = if forward {
            info["endCursor"].clone()
        } else {
            info["startCursor"].clone()
        };
        pages.push(page);
        if forward {
            ids.append(&mut page_ids);
        } else {
            page_ids.append(&mut ids);
            ids = page_ids;
        }
        if !more {
            return (ids, pages);
        }
        assert!(
            next.is_string(),
            "a page with more has a cursor to go on from: {body}"
        );
        cursor = next;
    }
}

/// The ids of `farms` whose name starts with one of `kinds`, in id order.
fn ids_of(farms: &[(String, String)], kinds: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = farms
        .iter()
        .filter(|(_, name)| kinds.iter().any(|kind| name.starts_with(kind)))
        .map(|(id, _)| id.clone())
        .collect();
    ids.sort();
    ids
}

fn reversed(ids: &[String]) -> Vec<String> {
    ids.iter().rev().cloned().collect()
}

#[tokio::test]
async fn filters_on_lists_keep_pages_full_at_0_1_50_and_100_percent() {
    let app = spawn_app().await;
    let farms = named_farms(&app, 300).await;
    let rare = ids_of(&farms, &["Rare"]);
    let odd = ids_of(&farms, &["Odd"]);
    let all = ids_of(&farms, &["Rare", "Even", "Odd"]);
    assert_eq!((rare.len(), odd.len(), all.len()), (3, 150, 300));

    // 100 %: every page is settled by its first round, one Query per shard.
    let every = json!({ "or": [
        { "name": { "beginsWith": "Rare" } },
        { "name": { "beginsWith": "Even" } },
        { "name": { "beginsWith": "Odd" } },
    ] });
    let (ids, pages) = read_filtered(&app, &every, 50, true, "ASC").await;
    assert_eq!(ids, all);
    assert_eq!(pages.len(), 6, "{pages:?}");
    for page in &pages {
        assert_eq!(page.calls, 4, "one Query per shard: {page:?}");
        assert!(!page.budget_stop);
    }

    // 1 %: one page holds the three, read through every shard within the budget.
    let (ids, pages) = read_filtered(
        &app,
        &json!({ "name": { "beginsWith": "Rare" } }),
        50,
        true,
        "ASC",
    )
    .await;
    assert_eq!(ids, rare);
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0].matched, 3);
    assert!(pages[0].read >= 300 && pages[0].read <= 1000, "{pages:?}");

    // 0 %: an empty page that promises nothing.
    let (ids, pages) = read_filtered(
        &app,
        &json!({ "name": { "eq": "No such farm" } }),
        50,
        true,
        "ASC",
    )
    .await;
    assert!(ids.is_empty());
    assert_eq!((pages.len(), pages[0].matched), (1, 0));

    // About half, in both directions and both orders, and through `not`.
    let half = json!({ "name": { "beginsWith": "Odd" } });
    assert_eq!(read_filtered(&app, &half, 50, true, "ASC").await.0, odd);
    assert_eq!(read_filtered(&app, &half, 50, false, "ASC").await.0, odd);
    assert_eq!(
        read_filtered(&app, &half, 50, true, "DESC").await.0,
        reversed(&odd)
    );
    assert_eq!(
        read_filtered(&app, &half, 7, false, "DESC").await.0,
        reversed(&odd)
    );
    let not_odd = json!({ "not": { "name": { "beginsWith": "Odd" } } });
    let even_or_rare = ids_of(&farms, &["Rare", "Even"]);
    assert_eq!(
        read_filtered(&app, &not_odd, 100, true, "ASC").await.0,
        even_or_rare
    );

    // Operators on the id and the times, evaluated by the store.
    let first_id = all[0].clone();
    let (ids, _) = read_filtered(&app, &json!({ "id": { "eq": first_id } }), 10, true, "ASC").await;
    assert_eq!(ids, vec![all[0].clone()]);
    let (ids, _) = read_filtered(
        &app,
        &json!({ "id": { "in": [all[5], all[7], "no-such-id"] } }),
        10,
        true,
        "ASC",
    )
    .await;
    assert_eq!(ids, vec![all[5].clone(), all[7].clone()]);
    let (ids, _) = read_filtered(
        &app,
        &json!({ "and": [{ "createdAt": { "attributeExists": true } }, { "name": { "contains": "00100" } }] }),
        10,
        true,
        "ASC",
    )
    .await;
    assert_eq!(ids.len(), 1);
}

#[tokio::test]
async fn a_page_the_budget_stops_says_so_and_the_next_goes_on_from_there() {
    let app = spawn_app_scoped(tablegraph::engine::ScopeSettings {
        filter_budget: 40,
        ..Default::default()
    })
    .await;
    let farms = named_farms(&app, 300).await;
    let rare = ids_of(&farms, &["Rare"]);
    let filter = json!({ "name": { "beginsWith": "Rare" } });
    for (forward, direction, expected) in [
        (true, "ASC", rare.clone()),
        (false, "ASC", rare.clone()),
        (true, "DESC", reversed(&rare)),
    ] {
        let (ids, pages) = read_filtered(&app, &filter, 20, forward, direction).await;
        assert_eq!(
            ids, expected,
            "every match once, in order ({direction}, {forward})"
        );
        // 300 farms at 40 items a page: at least 8 pages, each within the budget; every page
        // but the last stopped on the budget.
        assert!(pages.len() >= 8, "{pages:?}");
        let (last, stopped) = pages.split_last().expect("a page");
        assert!(!last.budget_stop && !last.more);
        for page in stopped {
            assert!(page.budget_stop && page.more, "{page:?}");
            assert!(page.read <= 40, "{page:?}");
        }
    }
}

#[tokio::test]
async fn connections_take_filters_on_their_nodes_or_their_edges() {
    let app = spawn_app().await;
    let farm = app.create_farm("Filtered Acres").await;
    for name in ["Alma", "Bella", "Bess", "Clover", "Daisy"] {
        app.create_animal("Cow", name, &farm).await;
    }
    // A filter and a key condition together: names from B, then not containing "ss".
    let body = app
        .graphql(
            "query($id: ID!) { farm(id: $id) {
                cows(name: { ge: \"b\" }, filter: { name: { notContains: \"ss\" } }, first: 2) {
                    edges { node { name } }
                    pageInfo { hasNextPage }
                }
            } }",
            json!({ "id": farm }),
        )
        .await;
    let cows = &body["data"]["farm"]["cows"];
    let names: Vec<&str> = cows["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|e| e["node"]["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["Bella", "Clover"]);
    assert_eq!(cows["pageInfo"]["hasNextPage"], true);
    assert_eq!(
        body["extensions"]["filters"][0]["path"], "farm.cows",
        "{body}"
    );

    // On an edge connection the filter tests the edges' own fields.
    let goal = app
        .create("Goal", json!({ "title": "Harvest", "kind": "OBJECTIVE" }))
        .await;
    for (name, since) in [
        ("Ann", "2023-03-01"),
        ("Bo", "2024-06-01"),
        ("Cy", "2025-01-15"),
    ] {
        let user = app
            .create(
                "User",
                json!({ "name": name, "email": format!("{name}@example.com") }),
            )
            .await;
        let body = app
            .graphql(
                "mutation($g: ID!, $u: ID!, $s: AWSDate) {
                    addGoalMembership(input: { from: $g, to: $u, role: CONTRIBUTOR, since: $s }) { role }
                }",
                json!({ "g": goal, "u": user, "s": since }),
            )
            .await;
        assert!(body["errors"].is_null(), "{body}");
    }
    let body = app
        .graphql(
            "query($id: ID!) { goal(id: $id) {
                members(filter: { since: { ge: \"2024-01-01\" } }) {
                    edges { since node { ... on User { name } } }
                }
            } }",
            json!({ "id": goal }),
        )
        .await;
    let mut names: Vec<&str> = body["data"]["goal"]["members"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|e| e["node"]["name"].as_str().expect("a name"))
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["Bo", "Cy"]);

    // Filters that always or never hold, on a Query of the goal's own partition (whose key
    // a filter may not name).
    for (filter, count) in [
        (json!({ "and": [] }), 3),
        (json!({ "since": { "in": [] } }), 0),
        (json!({ "since": { "notIn": [] } }), 3),
        (json!({ "or": [] }), 0),
    ] {
        let body = app
            .graphql(
                "query($id: ID!, $filter: ModelGoalMembershipFilterInput) { goal(id: $id) {
                    members(filter: $filter) { edges { since } }
                } }",
                json!({ "id": goal, "filter": filter }),
            )
            .await;
        let edges = body["data"]["goal"]["members"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{filter}: {body}"));
        assert_eq!(edges.len(), count, "{filter}: {body}");
    }
}

#[tokio::test]
async fn a_bad_filter_is_refused_and_reads_nothing() {
    let app = spawn_app().await;
    app.create_farm("Only Farm").await;
    let (body, calls) = app
        .graphql_counted(
            "{ listFarms(filter: { name: { between: [\"a\"] } }) { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("filter.name.between")),
        "{body}"
    );
    assert!(calls.is_empty(), "{calls:?}");
    // More than DynamoDB takes in one expression.
    let many: Vec<String> = (0..101).map(|n| format!("id-{n}")).collect();
    let (body, calls) = app
        .graphql_counted(
            "query($ids: [ID]) { listFarms(filter: { id: { in: $ids } }) { edges { node { id } } } }",
            json!({ "ids": many }),
        )
        .await;
    assert_eq!(error_type(&body), "BadUserInput", "{body}");
    assert!(calls.is_empty(), "{calls:?}");
    // A field the type lacks, or a value of the wrong type, fails validation.
    for query in [
        "{ listFarms(filter: { colour: { eq: \"red\" } }) { edges { node { id } } } }",
        "{ listFarms(filter: { name: { eq: 5 } }) { edges { node { id } } } }",
    ] {
        let body = app.graphql(query, json!({})).await;
        assert!(body["data"].is_null(), "{body}");
        assert!(body["errors"][0]["message"].is_string(), "{body}");
    }
}
