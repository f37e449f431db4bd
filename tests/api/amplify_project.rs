//! `--amplify-project DIR`: an Amplify Gen 1 project served from its files
//! (`tests/fixtures/amplify-project/`): the API's `schema/` folder, `amplify/cli.json`, and the
//! deployed API the project keeps settling a flag its older `cli.json` does not name.

use serde_json::Value;

use crate::amplify_golden::{differences, from_introspection, from_sdl};
use crate::helpers::scratch;
use crate::network::run;

const PROJECT: &str = "tests/fixtures/amplify-project/mood-board";

#[tokio::test]
async fn a_project_is_served_the_api_it_deployed_with_the_flags_its_cli_json_lacks_settled() {
    let (ok, sdl, stderr) =
        run(&["schema", "--amplify-project", PROJECT, "--amplify-strict"]).await;
    assert!(ok, "{stderr}");
    // `enableAutoIndexQueryNames`, which the cli.json lacks, settled by the deployed API.
    assert!(sdl.contains("moodItemsByBoardID("), "{sdl}");
    let text = std::fs::read_to_string(format!("{PROJECT}/src/graphql/schema.json"))
        .expect("the project keeps its deployed API");
    let deployed: Value = serde_json::from_str(&text).expect("JSON");
    let diff = differences(&from_introspection(&deployed), &from_sdl(&sdl));
    assert!(diff.is_empty(), "served otherwise than deployed:\n{diff}");
    // `plan` says where each flag came from.
    let (ok, plan, stderr) = run(&["plan", "--amplify-project", PROJECT]).await;
    assert!(ok, "{stderr}");
    assert!(
        plan.contains("enableAutoIndexQueryNames=true (the deployed API the project keeps"),
        "{plan}"
    );
    // The same schema folder without the project: the flag is what Amplify's CLI gives an
    // existing project whose cli.json lacks it, and the index has no query.
    let folder = format!("{PROJECT}/amplify/backend/api/moodboard/schema");
    let (ok, sdl, stderr) = run(&["schema", "--schema", &folder, "--amplify-strict"]).await;
    assert!(ok, "{stderr}");
    assert!(!sdl.contains("moodItemsByBoardID"), "{sdl}");
    assert!(
        sdl.contains("getRandomEmoji"),
        "both files of the folder are read: {sdl}"
    );
}

#[tokio::test]
async fn a_mistake_in_a_schema_folder_names_its_file_and_line_and_a_root_without_an_api_is_refused()
{
    let root = scratch("amplify-project");
    let folder = root.join("amplify/backend/api/app/schema");
    std::fs::create_dir_all(&folder).expect("a scratch folder");
    std::fs::write(
        folder.join("a.graphql"),
        "type Note @model {\n  text: String\n}\n",
    )
    .expect("written");
    std::fs::write(
        folder.join("b.graphql"),
        "type Tag @model {\n  label: String\n  note: Nope @belongsTo\n}\n",
    )
    .expect("written");
    let root_text = root.display().to_string();
    let (ok, _, stderr) = run(&["schema", "--amplify-project", &root_text]).await;
    assert!(!ok);
    assert!(stderr.contains("b.graphql:3:"), "{stderr}");
    let empty = scratch("amplify-empty");
    std::fs::create_dir_all(&empty).expect("a scratch folder");
    let (ok, _, stderr) = run(&["schema", "--amplify-project", &empty.display().to_string()]).await;
    assert!(!ok);
    assert!(stderr.contains("no Amplify API here"), "{stderr}");
    let _ = std::fs::remove_dir_all(root);
    let _ = std::fs::remove_dir_all(empty);
}
