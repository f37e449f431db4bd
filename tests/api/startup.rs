//! Start-up failures, as the process reports them: once, with the cause once.

use crate::helpers::{run_tablegraph, scratch};

/// How many times `needle` occurs in `text`.
fn occurrences(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[tokio::test]
async fn a_port_in_use_is_reported_once_with_its_cause_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = taken.local_addr().expect("an address").to_string();
    let (ok, _, stderr) = run_tablegraph(
        &["serve", "--memory", "--listen", &address],
        &scratch("port-in-use"),
    )
    .await;
    assert!(!ok, "serve fails on a port in use: {stderr}");
    assert_eq!(
        occurrences(&stderr, &format!("cannot listen on {address}")),
        1,
        "{stderr}"
    );
    assert_eq!(occurrences(&stderr, "os error"), 1, "{stderr}");
    drop(taken);
}

#[tokio::test]
async fn a_missing_schema_file_is_reported_once_with_its_cause_once() {
    let (ok, _, stderr) = run_tablegraph(
        &["serve", "--memory", "--schema", "no-such-schema.graphql"],
        &scratch("missing-schema"),
    )
    .await;
    assert!(!ok, "serve fails without its schema: {stderr}");
    assert_eq!(
        occurrences(&stderr, "cannot read no-such-schema.graphql"),
        1,
        "{stderr}"
    );
    assert_eq!(occurrences(&stderr, "os error"), 1, "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_one_data_directory_is_refused_until_the_first_stops() {
    let dir = scratch("data-dir-in-use");
    let config = tablegraph::config::StoreConfig {
        target: tablegraph::config::StoreTarget::Embedded(
            tablegraph::store::EmbeddedLocation::Directory(dir.clone()),
        ),
        table: "tablegraph".to_owned(),
        tuning: tablegraph::store::StoreTuning::default(),
    };
    let first = tablegraph::app::open_store(&config)
        .await
        .expect("the first store opens");
    let data_dir = dir.to_str().expect("a path");
    let (ok, _, stderr) = run_tablegraph(&["serve", "--listen", "127.0.0.1:0"], &dir).await;
    assert!(!ok, "a second serve on the directory fails: {stderr}");
    let message = format!(
        "the data directory {data_dir} is in use by another tablegraph process; stop it, or give this one another --data-dir"
    );
    assert_eq!(occurrences(&stderr, &message), 1, "{stderr}");

    drop(first);
    let (ok, stdout, stderr) = run_tablegraph(&["check"], &dir).await;
    assert!(
        ok,
        "once the first process let go, the directory opens: {stdout}\n{stderr}"
    );
    std::fs::remove_dir_all(&dir).expect("removable");
}

#[tokio::test]
async fn owner_rules_with_several_token_issuers_are_refused() {
    let schema = crate::helpers::repository_file("examples/notes/schema.graphql");
    let (ok, _, stderr) = run_tablegraph(
        &[
            "serve",
            "--memory",
            "--listen",
            "127.0.0.1:0",
            "--schema",
            schema.to_str().expect("a UTF-8 path"),
            // Never reached: the refusal comes before any issuer is asked for its keys.
            "--jwt-issuer",
            "http://127.0.0.1:9/one",
            "--jwt-issuer",
            "http://127.0.0.1:9/two",
        ],
        &scratch("issuers-share-identities"),
    )
    .await;
    assert!(!ok, "serve refuses: {stderr}");
    assert_eq!(
        occurrences(
            &stderr,
            "Note has owner or group rules, and 2 token issuers are configured"
        ),
        1,
        "{stderr}"
    );
}
