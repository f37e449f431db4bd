//! Errors raised while a request runs: 200 with `data`, the failed field `null` (or its nearest
//! nullable ancestor), each error with its `path`, in both media types. Only requests that did
//! not parse or validate answer 400 (to clients that accept it) without `data`.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};

const MEDIA_TYPES: [&str; 2] = ["application/json", "application/graphql-response+json"];

/// POSTs `query` accepting `media`; answers the status and the body, after checking that the
/// answer is in that media type.
async fn post(app: &TestApp, media: &str, query: &str) -> (u16, Value) {
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("accept", media)
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.headers()["content-type"], media);
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

async fn farm_exists(app: &TestApp, name: &str) -> bool {
    let body = app
        .graphql(
            "query($name: String!) { farmByName(name: $name) { id } }",
            json!({ "name": name }),
        )
        .await;
    body["data"]["farmByName"]["id"].is_string()
}

#[tokio::test]
async fn a_mutation_field_that_fails_is_null_and_the_one_before_it_stays() {
    let app = spawn_app().await;
    for media in MEDIA_TYPES {
        let name = format!("Kept {media}");
        let query = format!(
            "mutation {{ a: createFarm(input: {{ name: \"{name}\" }}) {{ name }} b: deleteFarm(id: \"no#such\") {{ id }} }}"
        );
        let (status, body) = post(&app, media, &query).await;
        assert_eq!(status, 200, "{media}: {body}");
        assert_eq!(
            body["data"],
            json!({ "a": { "name": name }, "b": null }),
            "{body}"
        );
        assert_eq!(body["errors"][0]["path"], json!(["b"]), "{body}");
        assert_eq!(body["errors"][0]["extensions"]["errorType"], "BadUserInput");
        assert!(
            farm_exists(&app, &name).await,
            "{media}: the farm was created"
        );
    }
}

#[tokio::test]
async fn in_a_document_of_several_mutations_each_committed_result_is_in_data_beside_the_errors() {
    let app = spawn_app().await;
    for media in MEDIA_TYPES {
        let (x, y) = (format!("X {media}"), format!("Y {media}"));
        // `b` takes `a`'s name in another case (UniqueConstraintViolation), `d` removes an edge
        // that is not there, `e` a batch member's farm of `c`'s name: every generated root
        // field is nullable, so each failure is a null of its own and `a` and `c`, which
        // committed, are answered with their ids.
        let query = format!(
            "mutation {{ a: createFarm(input: {{ name: \"{x}\" }}) {{ id name }}
               b: createFarm(input: {{ name: \"{lower}\" }}) {{ id }}
               c: createFarm(input: {{ name: \"{y}\" }}) {{ id name }}
               d: removeGoalMembership(from: \"a\", to: \"b\")
               e: createFarms(input: [{{ name: \"{y}\" }}]) {{ id }} }}",
            lower = x.to_lowercase()
        );
        let (status, body) = post(&app, media, &query).await;
        assert_eq!(status, 200, "{media}: {body}");
        let data = &body["data"];
        assert!(data["a"]["id"].is_string(), "{body}");
        assert_eq!(data["a"]["name"], x.as_str());
        assert!(data["c"]["id"].is_string(), "{body}");
        assert_eq!(data["c"]["name"], y.as_str());
        for failed in ["b", "d", "e"] {
            assert_eq!(data[failed], Value::Null, "{failed}: {body}");
        }
        let paths: Vec<&Value> = body["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .map(|e| &e["path"][0])
            .collect();
        assert_eq!(paths, [&json!("b"), &json!("d"), &json!("e")], "{body}");
        // What `data` says is what the table holds.
        for (key, name) in [("a", &x), ("c", &y)] {
            let read = app
                .graphql(
                    "query($id: ID!) { farm(id: $id) { name } }",
                    json!({ "id": data[key]["id"] }),
                )
                .await;
            assert_eq!(read["data"]["farm"]["name"], name.as_str(), "{read}");
        }
    }
    app.assert_table_consistent().await;
}

#[tokio::test]
async fn a_failed_root_list_is_null_beside_the_fields_that_answered() {
    let app = spawn_app().await;
    let id = app.create_farm("Listed").await;
    for media in MEDIA_TYPES {
        let query = format!(
            "{{ listFarms(after: \"forged\") {{ edges {{ cursor }} }} farm(id: \"{id}\") {{ name }} }}"
        );
        let (status, body) = post(&app, media, &query).await;
        assert_eq!(status, 200, "{media}: {body}");
        assert_eq!(
            body["data"],
            json!({ "listFarms": null, "farm": { "name": "Listed" } }),
            "{body}"
        );
        assert_eq!(body["errors"][0]["path"], json!(["listFarms"]), "{body}");
    }
}

#[tokio::test]
async fn a_failed_query_field_is_null_next_to_the_fields_that_answered() {
    let app = spawn_app().await;
    let id = app.create_farm("Answering").await;
    for media in MEDIA_TYPES {
        let query = format!(
            "{{ good: farm(id: \"{id}\") {{ name }} bad: farm(id: \"no#such\") {{ name }} }}"
        );
        let (status, body) = post(&app, media, &query).await;
        assert_eq!(status, 200, "{media}: {body}");
        assert_eq!(
            body["data"],
            json!({ "good": { "name": "Answering" }, "bad": null }),
            "{body}"
        );
        assert_eq!(body["errors"][0]["path"], json!(["bad"]), "{body}");
    }
}

#[tokio::test]
async fn a_failed_non_null_field_makes_its_nearest_nullable_parent_null() {
    let app = spawn_app().await;
    let id = app.create_farm("Forged").await;
    for media in MEDIA_TYPES {
        // `cows` is a non-null connection; its forged cursor fails it, so `farm` is null.
        let query = format!(
            "{{ farm(id: \"{id}\") {{ name cows(after: \"forged\") {{ edges {{ cursor }} }} }} other: farm(id: \"{id}\") {{ name }} }}"
        );
        let (status, body) = post(&app, media, &query).await;
        assert_eq!(status, 200, "{media}: {body}");
        assert_eq!(
            body["data"],
            json!({ "farm": null, "other": { "name": "Forged" } }),
            "{body}"
        );
        assert_eq!(body["errors"][0]["path"], json!(["farm", "cows"]), "{body}");
        assert_eq!(body["errors"].as_array().map(Vec::len), Some(1), "{body}");
    }
}

#[tokio::test]
async fn a_request_that_does_not_validate_still_runs_nothing() {
    let app = spawn_app().await;
    let query = "mutation { createFarm(input: { name: \"Never\" }) { id } farmm }";
    let (status, body) = post(&app, "application/graphql-response+json", query).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.get("data").is_none(), "{body}");
    let (status, body) = post(&app, "application/json", query).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("data").is_none(), "{body}");
    assert!(body["errors"][0].get("path").is_none(), "{body}");
    assert!(!farm_exists(&app, "Never").await);
}
