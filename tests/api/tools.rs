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
    // Migrated: the table records the migrations tablegraph ships.
    let (ok, _, stderr) = run_tablegraph(&["migrate"], &source).await;
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

    // Those records describe the source table, not the data: left out, and said so.
    let records = exported
        .lines()
        .filter(|l| l.contains(r#""PK":{"S":"MIGRATION#builtin-"#))
        .count();
    assert!(records > 0, "the source recorded its shipped migrations");
    let (ok, stdout, stderr) = run_tablegraph(&["import", output], &target).await;
    assert!(ok, "{stderr}");
    let written = lines - records;
    assert!(
        stdout.contains(&format!("imported {written} items\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "left out {records} records of tablegraph's own format migrations"
        )),
        "{stdout}"
    );
    let (ok, again, _) = run_tablegraph(&["export"], &target).await;
    assert!(ok);
    let data = |export: &str| -> Vec<String> {
        export
            .lines()
            .filter(|l| !l.contains(r#""PK":{"S":"MIGRATION#"#))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        data(&again),
        data(&exported),
        "the imported data exports identically"
    );
    // What `check` counts is what the import said it wrote.
    let (ok, stdout, _) = run_tablegraph(&["check"], &target).await;
    assert!(ok && stdout.contains("no violations"), "{stdout}");
    assert!(
        stdout.contains(&format!("check: {written} items")),
        "{stdout}"
    );
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
    assert!(
        !dir.exists(),
        "nothing was written, not even the data directory"
    );
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
        assert!(
            !dir.exists(),
            "nothing was written, not even the data directory"
        );
        std::fs::remove_file(&file).expect("removable");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_read_a_table_refuse_a_directory_that_holds_no_store_and_create_nothing() {
    let typo = scratch("data-typo");
    for args in [
        &["check"][..],
        &["check", "--repair"],
        &["export"],
        &["migrate", "--dry-run"],
    ] {
        let (ok, stdout, stderr) = run_tablegraph(args, &typo).await;
        assert!(!ok, "{args:?}: {stdout}");
        assert!(
            stderr.contains(&format!(
                "no tablegraph data in {}: give the directory `serve` used",
                typo.display()
            )),
            "{args:?}: {stderr}"
        );
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    // An unreadable import creates nothing either.
    let (ok, _, stderr) = run_tablegraph(&["import", "/no/such/export.jsonl"], &typo).await;
    assert!(
        !ok && stderr.contains("cannot read /no/such/export.jsonl"),
        "{stderr}"
    );
    assert!(!typo.exists());
    // `demo` (like `serve`, `import` and `migrate`) makes the store; then the tools read it.
    let (ok, _, stderr) = run_tablegraph(&["demo"], &typo).await;
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = run_tablegraph(&["check"], &typo).await;
    assert!(ok, "{stderr}");
    assert!(stdout.contains("no violations"), "{stdout}");
    std::fs::remove_dir_all(&typo).expect("removable");
}
