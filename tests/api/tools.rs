//! The table tools as a user runs them: `tablegraph check [--repair]`, `export` and `import`,
//! as processes on embedded stores on disk.

use std::path::Path;

use crate::helpers::{run_tablegraph, scratch};
use tablegraph::app;
use tablegraph::config::{StoreConfig, StoreTarget};
use tablegraph::store::{EmbeddedLocation, Key, StoreTuning, Write};

/// Deletes one item of the store in `dir` directly, as a crash between two writes would leave
/// it missing.
async fn delete_item(dir: &Path, key: &str) {
    let open = app::open_store(&StoreConfig {
        target: StoreTarget::Embedded(EmbeddedLocation::Directory(dir.to_owned())),
        table: "tablegraph".to_owned(),
        tuning: StoreTuning::default(),
    })
    .await
    .expect("the store opens");
    open.store
        .transact_write(vec![Write::Delete {
            key: Key::same(key.to_owned()),
            condition: Vec::new(),
        }])
        .await
        .expect("a raw delete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_finds_damage_and_repair_fixes_it() {
    let dir = scratch("check");
    let (ok, _, stderr) = run_tablegraph(&["demo"], &dir).await;
    assert!(ok, "{stderr}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok, "{stdout}");
    assert!(stdout.contains("no violations"), "{stdout}");

    // The Growth team's unique name item is lost.
    delete_item(&dir, "Team#name#growth").await;
    let (ok, stdout, stderr) = run_tablegraph(&["check"], &dir).await;
    assert!(!ok, "a broken table fails the check");
    assert!(
        stdout.contains("1 unique field values without their item"),
        "{stdout}"
    );
    assert!(stderr.contains("run tablegraph check --repair"), "{stderr}");

    let (ok, stdout, stderr) = run_tablegraph(&["check", "--repair"], &dir).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("wrote 1 fixes"), "{stdout}");
    let (ok, stdout, _) = run_tablegraph(&["check"], &dir).await;
    assert!(ok && stdout.contains("no violations"), "{stdout}");
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_imports_into_an_empty_store_as_the_same_table() {
    let (source, target) = (scratch("export"), scratch("import"));
    let file = scratch("export-file").with_extension("jsonl");
    let (ok, _, stderr) = run_tablegraph(&["demo"], &source).await;
    assert!(ok, "{stderr}");
    let output = file.to_str().expect("a UTF-8 path");
    let (ok, _, stderr) = run_tablegraph(&["export", "--output", output], &source).await;
    assert!(ok, "{stderr}");
    let exported = std::fs::read_to_string(&file).expect("the export");
    let lines = exported.lines().count();
    assert!(
        lines > 30,
        "the demo data set has more than 30 items: {lines}"
    );
    assert!(
        stderr.contains(&format!("exported {lines} items")),
        "{stderr}"
    );
    assert!(
        exported.lines().all(|l| l.starts_with(r#"{"Item":{"#)),
        "DynamoDB JSON lines"
    );

    let (ok, stdout, stderr) = run_tablegraph(&["import", output], &target).await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!("imported {lines} items")),
        "{stdout}"
    );
    let (ok, again, _) = run_tablegraph(&["export"], &target).await;
    assert!(ok);
    assert_eq!(again, exported, "the imported table exports identically");
    let (ok, stdout, _) = run_tablegraph(&["check"], &target).await;
    assert!(ok && stdout.contains("no violations"), "{stdout}");
    for dir in [&source, &target] {
        std::fs::remove_dir_all(dir).expect("removable");
    }
    std::fs::remove_file(&file).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_import_names_its_line_and_writes_nothing() {
    let dir = scratch("bad-import");
    let file = scratch("bad-import-file").with_extension("jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"Item":{"PK":{"S":"NODE#a"},"SK":{"S":"NODE#a"},"__typename":{"S":"Farm"}}}"#,
            "\n\n",
            r#"{"Item":{"PK":{"S":"NODE#b"},"SK":{"S":"NODE#b"},"version":{"N":"many"}}}"#,
            "\n",
        ),
    )
    .expect("a file");
    let (ok, _, stderr) = run_tablegraph(&["import", file.to_str().expect("UTF-8")], &dir).await;
    assert!(!ok);
    assert!(
        stderr.contains(r#"line 3: version: "many" is not a number"#),
        "{stderr}"
    );
    let (ok, exported, _) = run_tablegraph(&["export"], &dir).await;
    assert!(ok);
    assert_eq!(exported, "", "nothing was written");
    std::fs::remove_dir_all(&dir).expect("removable");
    std::fs::remove_file(&file).expect("removable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_refuses_what_dynamodb_would_refuse_before_writing_anything() {
    let cases = [
        (
            r#"{"Item":{"PK":{"S":"NODE#b"},"SK":{"S":"NODE#b"},"n":{"N":"1e400"}}}"#,
            "line 2: n: \"1e400\" is not a number",
        ),
        (
            r#"{"Item":{"PK":{"S":"NODE#b"},"SK":{"S":"NODE#b"},"n":{"N":"NaN"}}}"#,
            "line 2: n: \"NaN\" is not a number",
        ),
        (
            r#"{"Item":{"PK":{"S":"NODE#b"},"SK":{"S":"NODE#b"},"edges":{"SS":[]}}}"#,
            "line 2: edges: SS must not be empty",
        ),
        (
            r#"{"Item":{"PK":{"S":"NODE#b"},"SK":{"S":"NODE#b"},"PK01":{"N":"1"}}}"#,
            "line 2: PK01 is an index key and must be a string",
        ),
    ];
    for (bad, expected) in cases {
        let dir = scratch("refused-import");
        let file = scratch("refused-import-file").with_extension("jsonl");
        let good =
            r#"{"Item":{"PK":{"S":"NODE#a"},"SK":{"S":"NODE#a"},"__typename":{"S":"Farm"}}}"#;
        std::fs::write(&file, format!("{good}\n{bad}\n")).expect("a file");
        let (ok, _, stderr) =
            run_tablegraph(&["import", file.to_str().expect("UTF-8")], &dir).await;
        assert!(!ok && stderr.contains(expected), "{stderr}");
        let (_, exported, _) = run_tablegraph(&["export"], &dir).await;
        assert_eq!(exported, "", "nothing was written");
        std::fs::remove_dir_all(&dir).expect("removable");
        std::fs::remove_file(&file).expect("removable");
    }
}
