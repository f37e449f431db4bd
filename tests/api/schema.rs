//! The schema file: the printed SDL is kept as a golden file, and mistakes stop start-up with
//! their position.

use std::process::Command;

use crate::helpers::repository_file;

const GOLDEN: &str = "tests/golden/schema.graphql";

/// `tablegraph schema` prints exactly the checked-in SDL. Set `UPDATE_GOLDEN=1` to rewrite it
/// after an intended change, then review the diff.
#[test]
fn printed_sdl_matches_the_golden_file() {
    let output = Command::new(env!("CARGO_BIN_EXE_tablegraph"))
        .args(["schema", "--schema", "schema.graphql"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("TABLEGRAPH_SCHEMA")
        .output()
        .expect("the binary runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).expect("the SDL is UTF-8");
    let golden = repository_file(GOLDEN);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &printed).expect("the golden file is writable");
    }
    let expected = std::fs::read_to_string(&golden).expect("the golden file exists");
    assert!(
        printed == expected,
        "`tablegraph schema` differs from {GOLDEN}; run UPDATE_GOLDEN=1 cargo test and review the diff"
    );
    for operation in [
        "farm(id: ID!): Farm",
        "farmByName(name: String!): Farm",
        "node(id: ID!): Node",
        "nodes(ids: [ID!]!): [Node]!",
        "createFarm(input: CreateFarmInput!): Farm!",
        "updateFarm(input: UpdateFarmInput!, condition: ModelFarmConditionInput): Farm!",
        "deleteFarm(id: ID!, expectedVersion: Int, condition: ModelFarmConditionInput): Farm",
        "createFarms(input: [CreateFarmInput!]!): [Farm!]!",
        "updateFarms(input: [UpdateFarmInput!]!): [Farm!]!",
        "deleteFarms(ids: [ID!]!): [Farm!]!",
        "createCow(input: CreateCowInput!): Cow!",
        "createImage(input: CreateImageInput!): Image!",
    ] {
        assert!(expected.contains(operation), "the API has {operation}");
    }
}

#[test]
fn schema_mistakes_stop_start_up_with_their_position() {
    let dir = std::env::temp_dir().join(format!("tablegraph-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let cases = [
        (
            "type Farm @model {\n  name: String @cached\n}\n",
            "bad.graphql:2:16: unknown directive @cached",
        ),
        (
            "type Farm @model { name: String }\ntype Cow @model {\n  farm: Farm @belongsTo(field: \"farmId\")\n}\n",
            "bad.graphql:3:14: Cow.farm: @belongsTo(field: \"farmId\") needs a field `farmId: ID` on Cow",
        ),
        (
            "type Farm @model {\n  size: Int @default(value: \"big\")\n}\n",
            "bad.graphql:2:13: Farm.size: @default(value: \"big\") is no Int value",
        ),
        (
            "type Farm @model {\n  founded: AWSDate @default(value: \"soon\")\n}\n",
            "Farm.founded: @default(value: \"soon\") is no AWSDate value",
        ),
    ];
    for (source, message) in cases {
        std::fs::write(dir.join("bad.graphql"), source).expect("the schema file is writable");
        let output = Command::new(env!("CARGO_BIN_EXE_tablegraph"))
            .args([
                "serve",
                "--memory",
                "--listen",
                "127.0.0.1:0",
                "--schema",
                "bad.graphql",
            ])
            .current_dir(&dir)
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "start-up stops");
        assert!(stderr.contains(message), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).expect("the temporary directory is removable");
}

/// `tablegraph plan` prints every field's storage access; the resolver's plan is the three
/// calls its test counts, and nothing plans a Scan.
#[test]
fn the_plan_names_every_fields_storage_access() {
    for schema in [
        "schema.graphql",
        "examples/access/schema.graphql",
        "examples/notes/schema.graphql",
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_tablegraph"))
            .args(["plan", "--schema", schema])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("TABLEGRAPH_SCHEMA")
            .env_remove("TABLEGRAPH_RESOLVERS")
            .output()
            .expect("the binary runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let plan = String::from_utf8(output.stdout).expect("UTF-8");
        assert!(!plan.contains("Scan"), "{plan}");
        if schema == "schema.graphql" {
            let goal_leads: Vec<&str> = plan
                .split("\nTeam.goalLeads\n")
                .nth(1)
                .expect("Team.goalLeads is planned")
                .lines()
                .take_while(|line| line.starts_with("  "))
                .map(|line| line.split_whitespace().next().unwrap_or_default())
                .collect();
            assert_eq!(
                goal_leads,
                ["Query", "BatchGetItem", "none", "BatchGetItem"]
            );
            assert!(plan.contains("Farm.cows\n  Query               GSI01                    PK01 = Cow#<parent.id>, SK01 by name"), "{plan}");
            assert!(plan.contains("Query.listCows\n  Query               GSI03                    PK03 = Cow#LIST#00 … Cow#LIST#03, SK03 by id  [one per shard per page, sent together; with filter: a FilterExpression, read on until full or budget]"), "{plan}");
        } else if schema.contains("notes") {
            // Where each rule is enforced: a condition, a filter, a check.
            assert!(plan.contains("Note @auth\n  @auth               create                   owner = <caller> OR <caller> in Admin  [checked on the new node before its transaction]"), "{plan}");
            assert!(plan.contains("  @auth               update                   owner = <caller> OR editors contains <caller> OR <caller> in Admin  [in the transaction's condition]"), "{plan}");
            assert!(plan.contains("  @auth               read                     owner = <caller> OR editors contains <caller> OR team in <caller's groups> OR <caller> in Admin  [checked on each node read by id; in each page's FilterExpression; on each event]"), "{plan}");
            assert!(plan.contains("Note.budget @auth\n"), "{plan}");
        } else {
            assert!(plan.contains("User.canAccess\n"), "{plan}");
        }
    }
}
