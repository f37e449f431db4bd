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
    crate::helpers::assert_golden(GOLDEN, &printed);
    // Every generated root field is nullable, as AppSync's and Amplify's are: a field that
    // fails is a null of its own, beside the fields (and the committed writes) that answered.
    for operation in [
        "farm(id: ID!): Farm",
        "farmByName(name: String!): Farm",
        "node(id: ID!): Node",
        "nodes(ids: [ID!]!): [Node]\n",
        "): FarmConnection\n",
        "): CowConnection\n",
        "createFarm(input: CreateFarmInput!): Farm\n",
        "updateFarm(input: UpdateFarmInput!, condition: ModelFarmConditionInput): Farm\n",
        "deleteFarm(id: ID!, expectedVersion: Int, condition: ModelFarmConditionInput): Farm\n",
        "createFarms(input: [CreateFarmInput!]!): [Farm!]\n",
        "updateFarms(input: [UpdateFarmInput!]!): [Farm!]\n",
        "deleteFarms(ids: [ID!]!): [Farm!]\n",
        "createCow(input: CreateCowInput!): Cow\n",
        "createImage(input: CreateImageInput!): Image\n",
        "addGoalMembership(input: AddGoalMembershipInput!): GoalMembership\n",
        "removeGoalMembership(from: ID!, to: ID!): Boolean\n",
    ] {
        assert!(printed.contains(operation), "the API has {operation}");
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

/// The served API, as introspection tells it, is the golden SDL: the same types, each with the
/// same fields, arguments, input fields, values, members and interfaces, of the same types.
#[tokio::test]
async fn the_served_api_is_the_golden_sdl() {
    use std::collections::BTreeMap;

    use async_graphql_parser::types::{TypeKind, TypeSystemDefinition};

    let app = crate::helpers::spawn_app().await;
    let body = app
        .graphql(
            "{ __schema { types { kind name
                 fields { name type { ...T } args { name type { ...T } defaultValue } }
                 inputFields { name type { ...T } defaultValue }
                 interfaces { name } possibleTypes { name } enumValues { name } } } }
             fragment T on __Type { kind name ofType { kind name ofType { kind name
               ofType { kind name ofType { kind name } } } } }",
            serde_json::json!({}),
        )
        .await;
    fn type_ref(ty: &serde_json::Value) -> String {
        match ty["kind"].as_str() {
            Some("NON_NULL") => format!("{}!", type_ref(&ty["ofType"])),
            Some("LIST") => format!("[{}]", type_ref(&ty["ofType"])),
            _ => ty["name"].as_str().unwrap_or_default().to_owned(),
        }
    }
    let names = |list: &serde_json::Value| -> Vec<String> {
        let mut names: Vec<String> = list
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        names.sort();
        names
    };
    // Each type as lines: `kind`, then `field: type`, `field(arg): type = default`, `= VALUE`,
    // `| Member`, `& Interface`, sorted.
    let mut served: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ty in body["data"]["__schema"]["types"]
        .as_array()
        .expect("introspection lists the types")
    {
        let name = ty["name"].as_str().unwrap_or_default();
        let builtin = ["String", "Int", "Float", "Boolean", "ID"].contains(&name);
        if name.starts_with("__") || builtin {
            continue;
        }
        let mut lines = vec![ty["kind"].as_str().unwrap_or_default().to_owned()];
        for field in ty["fields"].as_array().into_iter().flatten() {
            let field_name = field["name"].as_str().unwrap_or_default();
            lines.push(format!("{field_name}: {}", type_ref(&field["type"])));
            for argument in field["args"].as_array().into_iter().flatten() {
                lines.push(format!(
                    "{field_name}({}): {} = {}",
                    argument["name"].as_str().unwrap_or_default(),
                    type_ref(&argument["type"]),
                    argument["defaultValue"].as_str().unwrap_or("-")
                ));
            }
        }
        for field in ty["inputFields"].as_array().into_iter().flatten() {
            lines.push(format!(
                "{}: {} = {}",
                field["name"].as_str().unwrap_or_default(),
                type_ref(&field["type"]),
                field["defaultValue"].as_str().unwrap_or("-")
            ));
        }
        lines.extend(
            names(&ty["enumValues"])
                .into_iter()
                .map(|v| format!("= {v}")),
        );
        lines.extend(
            names(&ty["possibleTypes"])
                .into_iter()
                .map(|v| format!("| {v}")),
        );
        lines.extend(
            names(&ty["interfaces"])
                .into_iter()
                .map(|v| format!("& {v}")),
        );
        lines[1..].sort();
        served.insert(name.to_owned(), lines);
    }

    let sdl = std::fs::read_to_string(repository_file(GOLDEN)).expect("the golden file exists");
    let document = async_graphql_parser::parse_schema(&sdl).expect("the golden SDL parses");
    let mut golden: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let default = |value: &Option<async_graphql::Positioned<async_graphql_value::ConstValue>>| {
        value
            .as_ref()
            .map_or_else(|| "-".to_owned(), |v| v.node.to_string())
    };
    for definition in &document.definitions {
        let TypeSystemDefinition::Type(ty) = definition else {
            continue;
        };
        let ty = &ty.node;
        let name = ty.name.node.to_string();
        let mut lines = Vec::new();
        match &ty.kind {
            TypeKind::Scalar => lines.push("SCALAR".to_owned()),
            TypeKind::Object(object) => {
                lines.push("OBJECT".to_owned());
                lines.extend(object.implements.iter().map(|i| format!("& {}", i.node)));
                for field in &object.fields {
                    let field = &field.node;
                    lines.push(format!("{}: {}", field.name.node, field.ty.node));
                    for argument in &field.arguments {
                        let argument = &argument.node;
                        lines.push(format!(
                            "{}({}): {} = {}",
                            field.name.node,
                            argument.name.node,
                            argument.ty.node,
                            default(&argument.default_value)
                        ));
                    }
                }
            }
            TypeKind::Interface(interface) => {
                lines.push("INTERFACE".to_owned());
                lines.extend(interface.implements.iter().map(|i| format!("& {}", i.node)));
                for field in &interface.fields {
                    let field = &field.node;
                    lines.push(format!("{}: {}", field.name.node, field.ty.node));
                    for argument in &field.arguments {
                        let argument = &argument.node;
                        lines.push(format!(
                            "{}({}): {} = {}",
                            field.name.node,
                            argument.name.node,
                            argument.ty.node,
                            default(&argument.default_value)
                        ));
                    }
                }
                // Introspection lists an interface's implementations as its possible types.
                for other in &document.definitions {
                    if let TypeSystemDefinition::Type(other) = other
                        && let TypeKind::Object(object) = &other.node.kind
                        && object.implements.iter().any(|i| i.node == ty.name.node)
                    {
                        lines.push(format!("| {}", other.node.name.node));
                    }
                }
            }
            TypeKind::Union(union) => {
                lines.push("UNION".to_owned());
                lines.extend(union.members.iter().map(|m| format!("| {}", m.node)));
            }
            TypeKind::Enum(enumeration) => {
                lines.push("ENUM".to_owned());
                lines.extend(
                    enumeration
                        .values
                        .iter()
                        .map(|v| format!("= {}", v.node.value.node)),
                );
            }
            TypeKind::InputObject(input) => {
                lines.push("INPUT_OBJECT".to_owned());
                for field in &input.fields {
                    let field = &field.node;
                    lines.push(format!(
                        "{}: {} = {}",
                        field.name.node,
                        field.ty.node,
                        default(&field.default_value)
                    ));
                }
            }
        }
        lines[1..].sort();
        golden.insert(name, lines);
    }
    let only_printed: Vec<&String> = golden.keys().filter(|n| !served.contains_key(*n)).collect();
    let only_served: Vec<&String> = served.keys().filter(|n| !golden.contains_key(*n)).collect();
    assert!(
        only_printed.is_empty() && only_served.is_empty(),
        "types printed but not served: {only_printed:?}; served but not printed: {only_served:?}"
    );
    for (name, lines) in &served {
        assert_eq!(lines, &golden[name], "{name} as served and as printed");
    }
}
