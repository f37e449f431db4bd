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
