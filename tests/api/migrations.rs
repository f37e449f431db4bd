//! Data migrations on data written before them: the shipped migrations of `migrations/` give
//! animals written under the schema without `Farm.animals` their new slot; applied migrations
//! are recorded, skipped, and refused when edited; a dry run changes nothing; a run killed
//! midway resumes from its checkpoint.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use tablegraph::app::Application;
use tablegraph::config::{HttpConfig, ServeConfig, StoreConfig, StoreTarget};
use tablegraph::store::{EmbeddedLocation, StoreTuning};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::{id_at, repository_file, run_tablegraph, scratch, tablegraph};

const V1_SCHEMA: &str = "tests/fixtures/migrations/schema-v1.graphql";

/// The embedded store in `dir`, opened directly.
async fn open_store(dir: &Path) -> tablegraph::app::OpenStore {
    tablegraph::app::open_store(&StoreConfig {
        target: StoreTarget::Embedded(EmbeddedLocation::Directory(dir.to_owned())),
        table: "tablegraph".to_owned(),
        tuning: StoreTuning::default(),
    })
    .await
    .expect("the store opens")
}

/// The model of the repository's `schema.graphql`.
fn current_model() -> tablegraph::model::Model {
    tablegraph::app::load_schema(
        &repository_file("schema.graphql"),
        None,
        &Default::default(),
    )
    .expect("the schema")
    .0
}

/// Serves the schema at `schema` on the store in `dir` while `work` runs, then stops and
/// releases the store.
pub(crate) async fn with_server<F, Fut, T>(dir: &Path, schema: &str, work: F) -> T
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = T>,
{
    let config = ServeConfig {
        dialect: Default::default(),
        progress_every: tablegraph::progress::PACE,
        listen: "127.0.0.1:0".parse().expect("an address"),
        schema_path: repository_file(schema),
        resolvers_dir: None,
        cache: tablegraph::store::CacheSettings::off(),
        stream_lease: tablegraph::changes::LEASE_DURATION,
        store: StoreConfig {
            target: StoreTarget::Embedded(EmbeddedLocation::Directory(dir.to_owned())),
            table: "tablegraph".to_owned(),
            tuning: StoreTuning::default(),
        },
        scopes: Default::default(),
        functions: Default::default(),
        http: HttpConfig::default(),
    };
    let application = Application::build(&config)
        .await
        .expect("the server starts");
    let url = format!("http://{}/graphql", application.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(application.run_until_stopped(async {
        let _ = stopped.await;
    }));
    let answer = work(url).await;
    let _ = stop.send(());
    server
        .await
        .expect("the server task ends")
        .expect("the server stops cleanly");
    answer
}

pub(crate) async fn graphql(url: &str, query: &str, variables: Value) -> Value {
    reqwest::Client::new()
        .post(url)
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("JSON")
}

/// Under the old schema: one farm with `cows` cows and two chickens, named so that the
/// animals' order by name interleaves them.
async fn write_v1_data(dir: &Path, cows: usize) -> String {
    with_server(dir, V1_SCHEMA, |url| async move {
        let body = graphql(&url, "mutation { createFarm(input: { name: \"Old Farm\" }) { id } }", json!({})).await;
        let farm = id_at(&body, "/data/createFarm/id");
        for n in 0..cows {
            let body = graphql(
                &url,
                "mutation($f: ID!, $n: String!) { createCow(input: { farmId: $f, name: $n }) { id } }",
                json!({ "f": farm, "n": format!("Cow {n:03}") }),
            )
            .await;
            id_at(&body, "/data/createCow/id");
        }
        for name in ["Chicken A", "Cow 000 chick"] {
            let body = graphql(
                &url,
                "mutation($f: ID!, $n: String!) { createChicken(input: { farmId: $f, name: $n }) { id } }",
                json!({ "f": farm, "n": name }),
            )
            .await;
            id_at(&body, "/data/createChicken/id");
        }
        farm
    })
    .await
}

/// The names `farm.animals` lists, in order, under the current schema.
async fn animal_names(dir: &Path, farm: &str) -> Vec<String> {
    let farm = farm.to_owned();
    with_server(dir, "schema.graphql", |url| async move {
        let body = graphql(
            &url,
            "query($f: ID!) { farm(id: $f) { animals(first: 100) { edges { node { ... on Cow { name } ... on Chicken { name } } } } } }",
            json!({ "f": farm }),
        )
        .await;
        body["data"]["farm"]["animals"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|edge| edge["node"]["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_migrations_list_old_animals_in_farm_animals() {
    let dir = scratch("migrate");
    let farm = write_v1_data(&dir, 3).await;

    // Under the new schema the old animals lack their GSI02 slot.
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok, "{stdout}");
    assert!(
        stdout.contains("5 relation slots that differ from the schema's"),
        "{stdout}"
    );
    assert_eq!(animal_names(&dir, &farm).await, Vec::<String>::new());

    let (ok, stdout, _) = run_tablegraph(&["migrate", "--dry-run"], &dir).await;
    assert!(ok, "{stdout}");
    assert!(stdout.contains("migration 0001_cows_join_farm_animals: Give every cow its slot in Farm.animals (scanned 3 items, would change 3)"), "{stdout}");
    assert!(stdout.contains("would change 2)"), "{stdout}");
    let (ok, _, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok, "a dry run changes nothing");

    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("scanned 3 items, changed 3)"), "{stdout}");
    assert!(stdout.contains("scanned 2 items, changed 2)"), "{stdout}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    // The two files, the unique-value formats of Farm, Team and User, the type index of each
    // of the seven types, Cow's index of breeds, and the counts.
    assert!(stdout.contains("14 migration records"), "{stdout}");
    assert_eq!(
        animal_names(&dir, &farm).await,
        [
            "Chicken A",
            "Cow 000",
            "Cow 000 chick",
            "Cow 001",
            "Cow 002"
        ]
    );

    let (ok, stdout, _) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok);
    assert!(
        stdout.contains("migration 0001_cows_join_farm_animals: already applied"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_migration_that_was_edited_is_refused() {
    let dir = scratch("edited");
    write_v1_data(&dir, 1).await;
    let migrations = scratch("edited-migrations");
    std::fs::create_dir_all(&migrations).expect("a directory");
    let file = migrations.join("0001_cows_join_farm_animals.toml");
    std::fs::copy(
        repository_file("migrations/0001_cows_join_farm_animals.toml"),
        &file,
    )
    .expect("a copy");
    let folder = migrations.to_str().expect("UTF-8");
    let (ok, _, stderr) = run_tablegraph(&["migrate", "--migrations", folder], &dir).await;
    assert!(ok, "{stderr}");

    let edited = std::fs::read_to_string(&file).expect("the file") + "remove = []\n";
    std::fs::write(
        &file,
        edited.replace(
            "recompute_slots = true\nremove = []",
            "remove = []\nrecompute_slots = true",
        ),
    )
    .expect("an edit");
    let (ok, _, stderr) = run_tablegraph(&["migrate", "--migrations", folder], &dir).await;
    assert!(!ok);
    assert!(
        stderr.contains("0001_cows_join_farm_animals.toml was changed after it was applied"),
        "{stderr}"
    );
    for path in [&dir, &migrations] {
        std::fs::remove_dir_all(path).expect("removable");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_killed_midway_resumes_from_its_checkpoint() {
    let dir = scratch("killed");
    // More than one Scan page (of 1,000 items evaluated).
    let cows = 1000;
    let farm = write_v1_data(&dir, cows).await;
    // Slowed down so that it is still running when it reports its first page: the second
    // page (in key order the last few dozen cows, as the items that are not nodes sort first)
    // is still to be written and recorded, two calls of 150 ms; every page reported.
    let mut child = tablegraph(
        &[
            "migrate",
            "--simulated-latency-ms",
            "150",
            "--progress-every-ms",
            "0",
        ],
        &dir,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("migrate starts");
    let mut progress = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut changed_before_kill = 0;
    while let Some(line) = progress.next_line().await.expect("a line") {
        // `0001_…: 1000 of about 1016 items scanned (… items/s), 980 changed, about 1 s left`
        if let Some(count) = line
            .strip_prefix("0001_cows_join_farm_animals: ")
            .and_then(|rest| {
                rest.split(", ")
                    .find_map(|part| part.strip_suffix(" changed"))
            })
            .and_then(|n| n.trim().parse::<usize>().ok())
            && count > 0
        {
            changed_before_kill = count;
            break;
        }
    }
    child.start_kill().expect("SIGKILL");
    child.wait().await.expect("it dies");
    assert!(
        changed_before_kill > 0 && changed_before_kill < cows,
        "killed midway: {changed_before_kill}"
    );

    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("migration 0001_cows_join_farm_animals"))
        .expect("a line for the cows' migration");
    assert!(line.contains("resumed from its checkpoint"), "{line}");
    let scanned: usize = line
        .split("scanned ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(
        scanned < cows,
        "the resumed run skipped the pages done before: {line}"
    );
    // The record adds up both runs' changes as each saved them with its checkpoints (the
    // pages in flight when the first was killed were changed but not counted).
    let changed_now: i64 = line
        .split("changed ")
        .nth(1)
        .and_then(|rest| rest.trim_end_matches(')').parse().ok())
        .expect("a count");
    {
        let open = open_store(&dir).await;
        let record = open
            .store
            .get_item_consistent(&tablegraph::store::Key::same(
                "MIGRATION#0001_cows_join_farm_animals".to_owned(),
            ))
            .await
            .expect("a read")
            .expect("the record");
        let recorded = record
            .get("changed")
            .and_then(tablegraph::store::AttrValue::as_i64)
            .expect("a count");
        assert!(
            recorded >= changed_before_kill as i64 + changed_now && recorded <= cows as i64,
            "{recorded}: {changed_before_kill} before the kill, then {line}"
        );
    }
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    assert_eq!(animal_names(&dir, &farm).await.len(), 100.min(cows + 2));
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renames_defaults_removals_and_edge_sets_are_migrated() {
    use tablegraph::store::{AttrValue, Key, Write};
    let dir = scratch("steps");
    // A goal with a lead, written through the API.
    let (goal, user) = with_server(&dir, "schema.graphql", |url| async move {
        let body = graphql(&url, "mutation { createGoal(input: { title: \"Old\", kind: OBJECTIVE }) { id } }", json!({})).await;
        let goal = id_at(&body, "/data/createGoal/id");
        let body = graphql(&url, "mutation { createUser(input: { name: \"Ann\", email: \"ann@example.com\" }) { id } }", json!({})).await;
        let user = id_at(&body, "/data/createUser/id");
        let body = graphql(
            &url,
            "mutation($g: ID!, $u: ID!) { addGoalMembership(input: { from: $g, to: $u, role: LEAD }) { role } }",
            json!({ "g": goal, "u": user }),
        )
        .await;
        assert_eq!(body["data"]["addGoalMembership"]["role"], "LEAD", "{body}");
        (goal, user)
    })
    .await;
    // As an older version left it: `headline` instead of `title`, no `kind`, a stray attribute
    // and no edge set.
    {
        let open = open_store(&dir).await;
        let key = Key::same(format!("NODE#{goal}"));
        let mut item = open
            .store
            .get_item_consistent(&key)
            .await
            .expect("a read")
            .expect("the goal");
        let title = item.remove("title").expect("a title");
        item.insert("headline".to_owned(), title);
        item.remove("kind");
        item.remove("edges");
        item.insert("legacyScore".to_owned(), AttrValue::N("7".to_owned()));
        open.store
            .transact_write(vec![Write::Put {
                item,
                condition: Vec::new(),
            }])
            .await
            .expect("a raw write");
    }
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok && stdout.contains("edge sets that differ"), "{stdout}");

    let migrations = scratch("steps-migrations");
    std::fs::create_dir_all(&migrations).expect("a directory");
    std::fs::write(
        migrations.join("0001_goal_fields.toml"),
        "description = \"Goals from before titles and kinds\"\ntype = \"Goal\"\nremove = [\"legacyScore\"]\nrecompute_slots = true\nrebuild_edge_sets = true\n\n[rename]\nheadline = \"title\"\n\n[set_default]\nkind = \"KEY_RESULT\"\n",
    )
    .expect("a migration");
    let folder = migrations.to_str().expect("UTF-8");
    let (ok, stdout, stderr) = run_tablegraph(&["migrate", "--migrations", folder], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("scanned 1 items, changed 1)"), "{stdout}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");

    let body = with_server(&dir, "schema.graphql", |url| async move {
        graphql(
            &url,
            "query($g: ID!) { goal(id: $g) { title kind version leads { id } } }",
            json!({ "g": goal }),
        )
        .await
    })
    .await;
    assert_eq!(body["data"]["goal"]["title"], "Old", "{body}");
    assert_eq!(body["data"]["goal"]["kind"], "KEY_RESULT", "{body}");
    assert_eq!(
        body["data"]["goal"]["leads"][0]["id"],
        user.as_str(),
        "{body}"
    );
    for path in [&dir, &migrations] {
        std::fs::remove_dir_all(path).expect("removable");
    }
}

const UNIQUE_V1: &str = "tests/fixtures/migrations/unique-values-v1.jsonl";
const STRASSE_ID: &str = "01a2091a-0000-7000-8000-000000000001";

/// The id of the farm named `name` (as names are compared today), on a server over `dir`.
async fn farm_named(url: &str, name: &str) -> Value {
    let body = graphql(
        url,
        "query($n: String!) { farmByName(name: $n) { id } }",
        json!({ "n": name }),
    )
    .await;
    body["data"]["farmByName"]["id"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_moves_unique_values_of_the_earlier_comparison_and_names_the_collisions() {
    let dir = scratch("migrate-unique");
    let fixture = repository_file(UNIQUE_V1);
    let (ok, stdout, stderr) =
        run_tablegraph(&["import", fixture.to_str().expect("a path")], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");

    // Farms written by the version before: "Straße", "Café" (decomposed), "ＯＬＤ", "Meadow",
    // "STRASSE", and three fullwidth names with their ASCII twins ("Ａｃｍｅ" and "ACME"…). Six
    // unique items sit at keys today's comparison does not compute.
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok, "{stdout}");
    assert!(
        stdout.contains(
            "6 unique values at the key of an earlier version (run `tablegraph migrate`)"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("without"),
        "nothing else is reported: {stdout}"
    );

    let (ok, stdout, _) = run_tablegraph(&["migrate", "--dry-run"], &dir).await;
    assert!(ok, "{stdout}");
    assert!(
        stdout.contains("migration builtin-unique-values-2-Farm: Move Farm's unique values to their key under Unicode normalization (NFKC, case folding) (scanned 11 items, would change 2)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("would stay, now the same value as another: Farm.name \"Straße\" of {STRASSE_ID} and the value of 01a2091a-0000-7000-8000-000000000005 are both \"strasse\"")),
        "{stdout}"
    );

    // "Straße" and "STRASSE" are one name now: migrate moves the others and names the pair.
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(!ok, "{stdout}");
    assert!(
        stderr.contains("4 unique values are now the same value as another node's"),
        "{stderr}"
    );
    assert!(stderr.contains(STRASSE_ID), "{stderr}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok);
    assert!(
        stdout.contains("4 unique values at the key of an earlier version"),
        "{stdout}"
    );

    // The farms that lost their name can still be renamed or deleted: their earlier key is freed.
    with_server(&dir, "schema.graphql", |url| async move {
        assert_eq!(
            farm_named(&url, "CAFÉ").await,
            "01a2091a-0000-7000-8000-000000000002"
        );
        assert_eq!(
            farm_named(&url, "old").await,
            "01a2091a-0000-7000-8000-000000000003"
        );
        assert_eq!(
            farm_named(&url, "strasse").await,
            "01a2091a-0000-7000-8000-000000000005"
        );
        let body = graphql(
            &url,
            "mutation($id: ID!) { updateFarm(input: { id: $id, name: \"Straße Nord\" }) { name } }",
            json!({ "id": STRASSE_ID }),
        )
        .await;
        assert_eq!(body["data"]["updateFarm"]["name"], "Straße Nord", "{body}");
        assert_eq!(farm_named(&url, "STRASSE NORD").await, STRASSE_ID);
        let body = graphql(
            &url,
            "mutation { deleteFarm(id: \"01a2091a-0000-7000-8000-000000000006\") { name } }",
            json!({}),
        )
        .await;
        assert_eq!(body["data"]["deleteFarm"]["name"], "Ａｃｍｅ", "{body}");
        // In batches too.
        let body = graphql(
            &url,
            "mutation { updateFarms(input: [{ id: \"01a2091a-0000-7000-8000-000000000008\", name: \"Beta Two\" }]) { name } }",
            json!({}),
        )
        .await;
        assert_eq!(body["data"]["updateFarms"][0]["name"], "Beta Two", "{body}");
        let body = graphql(
            &url,
            "mutation { deleteFarms(ids: [\"01a2091a-0000-7000-8000-00000000000a\"]) { name } }",
            json!({}),
        )
        .await;
        assert_eq!(body["data"]["deleteFarms"][0]["name"], "Ｇａｍｍａ", "{body}");
        let body = graphql(
            &url,
            "mutation { createFarm(input: { name: \"ｃａｆé\" }) { id } }",
            json!({}),
        )
        .await;
        assert_eq!(
            body["errors"][0]["extensions"]["errorType"], "UniqueConstraintViolation",
            "{body}"
        );
    })
    .await;

    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("(NFKC, case folding) (scanned 9 items, changed 0)"),
        "the rename freed the earlier key, so nothing is left to move: {stdout}"
    );
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_moves_unique_values_of_the_earlier_comparison_on_the_embedded_store() {
    let dir = scratch("serve-unique");
    let fixture = repository_file(UNIQUE_V1);
    let (ok, stdout, stderr) =
        run_tablegraph(&["import", fixture.to_str().expect("a path")], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    // Without `migrate`: the server moves what it can on start, and finds the rest by name.
    with_server(&dir, "schema.graphql", |url| async move {
        assert_eq!(
            farm_named(&url, "CAFÉ").await,
            "01a2091a-0000-7000-8000-000000000002"
        );
        assert_eq!(
            farm_named(&url, "old").await,
            "01a2091a-0000-7000-8000-000000000003"
        );
    })
    .await;
    let (_, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(
        stdout.contains("4 unique values at the key of an earlier version"),
        "only the colliding ones are left: {stdout}"
    );
    std::fs::remove_dir_all(&dir).expect("removable");
}

/// An export file of `count` farms as an earlier version wrote them: each node with its
/// unique value's item, but not in its type index and with no counts.
fn earlier_farms(count: usize) -> String {
    let mut lines = String::new();
    for n in 0..count {
        let id = tablegraph::keys::new_id();
        let name = format!("Earlier Farm {n:05}");
        let node = json!({ "Item": {
            "PK": { "S": format!("NODE#{id}") }, "SK": { "S": format!("NODE#{id}") },
            "__typename": { "S": "Farm" }, "id": { "S": id }, "name": { "S": name },
            "createdAt": { "S": "2025-01-01T00:00:00.000Z" },
            "updatedAt": { "S": "2025-01-01T00:00:00.000Z" },
            "version": { "N": "1" },
        } });
        let unique = format!("Farm#name#{}", name.to_lowercase());
        let value = json!({ "Item": {
            "PK": { "S": unique }, "SK": { "S": unique },
            "__typename": { "S": "Farm#name" }, "id": { "S": id },
        } });
        lines.push_str(&format!("{node}\n{value}\n"));
    }
    lines
}

/// A run of one Scan segment that an earlier version stopped midway recorded a key of the
/// embedded store's hash order, which says nothing of what a Scan in key order has left: the
/// run starts again from the start, and no node is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_in_the_earlier_scan_order_starts_again_from_the_start() {
    use tablegraph::store::{AttrValue, Item, Write};
    let dir = scratch("hash-order");
    let cows = 30;
    let farm = write_v1_data(&dir, cows).await;
    let name = "0001_cows_join_farm_animals";
    {
        let open = open_store(&dir).await;
        let model = current_model();
        let migration =
            tablegraph::migrate::load_migrations(&repository_file("migrations"), &model)
                .expect("the migrations")
                .into_iter()
                .find(|m| m.name == name)
                .expect("the cows' migration");
        // The last node in key order: a Scan in key order that resumed after it would find no
        // cow left to migrate.
        let last = open
            .store
            .scan_all()
            .await
            .expect("a scan")
            .iter()
            .filter_map(|item| {
                item.get("PK")
                    .and_then(AttrValue::as_str)
                    .map(str::to_owned)
            })
            .filter(|pk| pk.starts_with("NODE#"))
            .max()
            .expect("nodes");
        let text = |value: &str| AttrValue::S(value.to_owned());
        let at = Item::from_iter([
            ("PK".to_owned(), text(&last)),
            ("SK".to_owned(), text(&last)),
        ]);
        let record = Item::from_iter([
            ("PK".to_owned(), text(&format!("MIGRATION#{name}"))),
            ("SK".to_owned(), text(&format!("MIGRATION#{name}"))),
            ("__typename".to_owned(), text("Migration")),
            ("checksum".to_owned(), text(&migration.checksum)),
            ("description".to_owned(), text(&migration.description)),
            ("changed".to_owned(), AttrValue::N("0".to_owned())),
            ("status".to_owned(), text("running")),
            ("segments".to_owned(), AttrValue::N("1".to_owned())),
            (
                "checkpoint".to_owned(),
                AttrValue::M(Item::from_iter([("0".to_owned(), AttrValue::M(at))])),
            ),
        ]);
        open.store
            .transact_write(vec![Write::Put {
                item: record,
                condition: Vec::new(),
            }])
            .await
            .expect("the record written");
    }
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("migration {name}")))
        .expect("a line for the cows' migration");
    assert!(
        line.ends_with(&format!("(scanned {cows} items, changed {cows})")),
        "{line}"
    );
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    assert_eq!(animal_names(&dir, &farm).await.len(), cows + 2);
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_nodes_is_migrated_in_one_transaction() {
    let dir = scratch("batched");
    let file = scratch("batched-file").with_extension("jsonl");
    let farms = 600;
    std::fs::write(&file, earlier_farms(farms)).expect("a file");
    let (ok, _, stderr) = run_tablegraph(&["import", file.to_str().expect("UTF-8")], &dir).await;
    assert!(ok, "{stderr}");
    {
        let open = open_store(&dir).await;
        let model = current_model();
        let calls = std::sync::Arc::new(tablegraph::store::CallLog::with_budget(usize::MAX));
        let store = open.store.recording(calls.clone());
        let builtins = tablegraph::migrate::builtin_migrations(&model);
        let runs = tablegraph::migrate::apply_migrations(&store, &model, &builtins, false, &|_| {})
            .await
            .expect("the migrations apply");
        let filled: usize = runs
            .iter()
            .filter(|run| run.name.starts_with("builtin-type-index-Farm"))
            .map(|run| run.changed)
            .sum();
        assert_eq!(filled, farms, "{runs:?}");
        // Every farm was written in a transaction with the others of its Scan page, and the
        // records of every migration in one more after each page: far fewer transactions than
        // farms (a transaction a farm made 600 and more), none over DynamoDB's 100 items.
        let transactions: Vec<usize> = calls
            .calls()
            .iter()
            .filter(|call| call.operation == "TransactWriteItems")
            .filter_map(|call| call.keys)
            .collect();
        assert!(
            transactions.iter().sum::<usize>() >= farms,
            "{transactions:?}"
        );
        assert!(transactions.len() <= farms / 10, "{transactions:?}");
        assert!(
            transactions.iter().all(|&keys| keys <= 100),
            "{transactions:?}"
        );
        // And the table was scanned once for all the shipped migrations of nodes, and once for
        // the counts (a Scan a migration made eleven).
        let scans = calls
            .calls()
            .iter()
            .filter(|call| call.operation == "Scan")
            .count();
        assert!(scans <= 2 * (2 * farms / 100 + 1) + 2, "{scans} Scans");
    }
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok && stdout.contains("no violations"), "{stdout}");
    std::fs::remove_dir_all(&dir).expect("removable");
    std::fs::remove_file(&file).expect("removable");
}

/// The log of `serve` on the store in `dir`, with `env`, from its start until it listens;
/// then it is stopped.
async fn start_up_log(dir: &Path, env: &[(&str, &str)]) -> Vec<String> {
    let mut command = tablegraph(&["serve", "--listen", "127.0.0.1:0"], dir);
    command
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("serve starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut log = Vec::new();
    while let Some(line) = lines.next_line().await.expect("a line") {
        let listening = line.contains("listening on http://");
        log.push(line);
        if listening {
            break;
        }
    }
    child.start_kill().expect("SIGKILL");
    child.wait().await.expect("it stops");
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_tells_each_migration_once_with_its_counts_and_serve_logs_its_phases() {
    let dir = scratch("progress");
    let file = scratch("progress-file").with_extension("jsonl");
    let farms = 300;
    std::fs::write(&file, earlier_farms(farms)).expect("a file");
    let (ok, _, stderr) = run_tablegraph(&["import", file.to_str().expect("UTF-8")], &dir).await;
    assert!(ok, "{stderr}");
    // `serve` on the embedded store upgrades the formats as it starts, and says so.
    let log = start_up_log(&dir, &[]).await.join("\n");
    for phase in [
        "starting: opening the store",
        "starting: upgrading stored formats",
        "starting: building the API",
    ] {
        assert!(log.contains(phase), "{phase} in\n{log}");
    }
    let filled = log
        .lines()
        .find(|l| l.contains("stored formats: builtin-type-index-Farm") && l.contains(": done,"))
        .unwrap_or_else(|| panic!("the type index's line in\n{log}"));
    assert!(
        filled.contains(&format!("{farms} nodes of the type, {farms} changed")),
        "{filled}"
    );

    // `migrate` on another copy: one line for each migration, with its counts; stdout as before.
    let again = scratch("progress-migrate");
    let (ok, _, stderr) = run_tablegraph(&["import", file.to_str().expect("UTF-8")], &again).await;
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = run_tablegraph(&["migrate"], &again).await;
    assert!(ok, "{stderr}");
    let ran = stdout
        .lines()
        .filter(|l| l.starts_with("migration "))
        .count();
    let done = stderr
        .lines()
        .filter(|l| l.contains(": done, ") || l.ends_with(": applied before"))
        .count();
    assert_eq!(done, ran, "{stdout}\n{stderr}");
    // Nothing else but progress lines, each with its rate (and the log's own lines).
    for line in stderr.lines().filter(|l| !l.contains(" INFO ")) {
        assert!(
            line.contains(": done, ")
                || line.ends_with(": applied before")
                || line.contains(" items scanned (") && line.contains(" items/s)"),
            "{line}"
        );
    }
    let filled = stderr
        .lines()
        .find(|l| l.starts_with("builtin-type-index-Farm") && l.contains(": done, "))
        .unwrap_or_else(|| panic!("the type index's line in\n{stderr}"));
    assert!(
        filled.contains(&format!("{farms} nodes of the type, {farms} changed")),
        "{filled}"
    );
    for path in [&dir, &again] {
        std::fs::remove_dir_all(path).expect("removable");
    }
    std::fs::remove_file(&file).expect("removable");
}

/// Over a store slowed so that each of its calls outlasts the pace of progress lines, every
/// page of a long phase is told: `import`'s transactions, the pages `export` and `check` read,
/// and each Scan page of `serve`'s format upgrade (whose `/readyz` status once took every line's turn, so that it logged none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_phases_tell_their_progress_at_their_pace() {
    let dir = scratch("paced");
    let file = scratch("paced-file").with_extension("jsonl");
    let farms = 1200;
    std::fs::write(&file, earlier_farms(farms)).expect("a file");
    let slowed = ["--simulated-latency-ms", "60", "--progress-every-ms", "30"];
    let mut args = vec!["import", file.to_str().expect("UTF-8")];
    args.extend(slowed);
    let (ok, stdout, stderr) = run_tablegraph(&args, &dir).await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!("imported {} items", farms * 2)),
        "{stdout}"
    );
    // Transactions of 100 items, each a line: `1300 of 2400 items written (… items/s), about …`.
    let told: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains(&format!(" of {} items written (", farms * 2)))
        .collect();
    assert!(told.len() >= farms * 2 / 100 - 1, "{stderr}");
    assert!(
        told.last()
            .is_some_and(|line| line.starts_with(&format!("{0} of {0} ", farms * 2))),
        "{stderr}"
    );
    // `export` and `check` read the whole table, a page of 1,000 items at a time: each page
    // is told, `2000 of about 2400 items read (… items/s), …`.
    for command in ["export", "check"] {
        let mut args = vec![command];
        args.extend(slowed);
        let (_, _, stderr) = run_tablegraph(&args, &dir).await;
        let told = stderr
            .lines()
            .filter(|line| line.contains(" items read ("))
            .count();
        assert!(told >= farms * 2 / 1000, "{command}: {stderr}");
    }

    let log = start_up_log(
        &dir,
        &[
            ("TABLEGRAPH_SIMULATED_LATENCY_MS", "60"),
            ("TABLEGRAPH_PROGRESS_EVERY_MS", "30"),
        ],
    )
    .await;
    // The pass of the shipped migrations, and then the counts' own (which scans as `check`
    // does), read every item, a page of 1,000 at a time: each page is told,
    // `… 2000 of about 2400 items scanned (… items/s), 789 changed, …`.
    let scanned = farms * 2;
    for pass in ["shipped migrations together", "builtin-counts"] {
        let told = log
            .iter()
            .filter(|line| line.contains("stored formats: ") && line.contains(pass))
            .filter(|line| line.contains(" items scanned ("))
            .count();
        assert!(
            told >= scanned / 1000,
            "{pass}: {told} lines\n{}",
            log.join("\n")
        );
    }
    std::fs::remove_dir_all(&dir).expect("removable");
    std::fs::remove_file(&file).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_serve_upgrades_formats_it_is_alive_and_not_ready() {
    let dir = scratch("not-ready");
    let file = scratch("not-ready-file").with_extension("jsonl");
    std::fs::write(&file, earlier_farms(20)).expect("a file");
    let (ok, _, stderr) = run_tablegraph(&["import", file.to_str().expect("UTF-8")], &dir).await;
    assert!(ok, "{stderr}");
    // Every storage call takes 2 s, so that the upgrade (a Scan, a transaction, its records)
    // is still running when the checks below ask.
    let mut child = tablegraph(&["serve", "--listen", "127.0.0.1:0"], &dir)
        .env("RUST_LOG", "info")
        .env("TABLEGRAPH_SIMULATED_LATENCY_MS", "2000")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("serve starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut address = None;
    while let Some(line) = lines.next_line().await.expect("a line") {
        if let Some(rest) = line
            .split("answering /healthz and /readyz on http://")
            .nth(1)
        {
            address = Some(rest.trim().to_owned());
        }
        if line.contains("starting: upgrading stored formats") {
            break;
        }
    }
    let address = address.expect("serve said where it answers while it starts");
    let healthcheck = |ready: bool| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tablegraph"));
        command.args(["healthcheck", "--listen", &address]);
        if ready {
            command.arg("--ready");
        }
        command.output()
    };
    let live = healthcheck(false).await.expect("runs");
    assert!(live.status.success(), "{live:?}");
    let ready = healthcheck(true).await.expect("runs");
    assert!(
        !ready.status.success(),
        "not ready while upgrading: {ready:?}"
    );
    assert!(
        String::from_utf8_lossy(&ready.stderr).contains("503"),
        "{ready:?}"
    );
    let said = reqwest::get(format!("http://{address}/readyz"))
        .await
        .expect("an answer");
    assert_eq!(said.status(), 503);
    let said = said.text().await.expect("a body");
    assert!(
        said.starts_with("starting: upgrading stored formats"),
        "{said}"
    );

    // Once the API serves, the same address is ready.
    while let Some(line) = lines.next_line().await.expect("a line") {
        if line.contains("listening on http://") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let ready = healthcheck(true).await.expect("runs");
    assert!(ready.status.success(), "{ready:?}");
    child.start_kill().expect("SIGKILL");
    child.wait().await.expect("it stops");
    std::fs::remove_dir_all(&dir).expect("removable");
    std::fs::remove_file(&file).expect("removable");
}
