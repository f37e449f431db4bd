//! The reader of `schema.graphql` as a whole: the default schema's layout (type indexes,
//! slots, ranks), AppSync's shapes and directives, and mistakes named with their line and column.

use super::*;

const FARMS: &str = include_str!("../../schema.graphql");

/// The default schema, with its one resolver file.
fn farms() -> Model {
    let resolved = ["Team.goalLeads".to_owned()].into();
    Model::parse_with_resolvers("schema.graphql", FARMS, &resolved)
        .expect("the default schema is valid")
}

fn error_of(source: &str) -> String {
    Model::parse("schema.graphql", source)
        .expect_err("the schema should be refused")
        .to_string()
}

#[test]
fn a_type_index_can_be_sharded_or_left_out() {
    let model = Model::parse(
        "schema.graphql",
        "type A @model(listShards: 8) { name: String }
         type B @model(list: false) { name: String }
         type C @model { name: String }",
    )
    .expect("the schema loads");
    let list = |name: &str| model.type_def(name).and_then(|t| t.list);
    assert_eq!(list("A"), Some(ListDef { slot: 1, shards: 8 }));
    assert_eq!(list("B"), None);
    assert_eq!(
        list("C"),
        Some(ListDef {
            slot: 1,
            shards: DEFAULT_LIST_SHARDS
        })
    );
    assert_eq!(model.indexes, vec![1]);
    for (directive, said) in [
        ("@model(listShards: 0)", "takes 1 to 32, not 0"),
        ("@model(listShards: 33)", "takes 1 to 32, not 33"),
        ("@model(list: false, listShards: 2)", "needs a list"),
        ("@model(list: 1)", "takes true or false"),
        (
            "@model(list: false, listSortBy: \"name\")",
            "listSortBy:) needs a list",
        ),
        (
            "@model(listSortBy: \"colour\")",
            "names no scalar field of A",
        ),
    ] {
        let error = error_of(&format!("type A {directive} {{ name: String }}"));
        assert!(error.contains(said), "{directive}: {error}");
    }
}

#[test]
fn an_index_takes_the_lowest_slot_its_type_leaves_free() {
    let model = Model::parse(
        "schema.graphql",
        "type A @model {
           color: String @index(name: \"byColor\", sortKeyFields: [\"name\"], queryField: \"asByColor\")
           name: String
           size: Int @index
           day: AWSDate @index(sortKeyFields: [\"createdAt\"])
         }",
    )
    .expect("the schema loads");
    let a = model.type_def("A").expect("a model");
    let indexes: Vec<(&str, &str, u8, Option<&str>, &str)> = a
        .indexes
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.field.as_str(),
                i.slot,
                i.sort_field.as_ref().map(|(f, _)| f.as_str()),
                i.query_field.as_str(),
            )
        })
        .collect();
    assert_eq!(
        indexes,
        [
            ("byColor", "color", 2, Some("name"), "asByColor"),
            ("bySize", "size", 3, None, "listABySize"),
            (
                "byDayAndCreatedAt",
                "day",
                4,
                Some("createdAt"),
                "listAByDayAndCreatedAt"
            ),
        ]
    );
    assert_eq!(model.indexes, vec![1, 2, 3, 4]);
    for (fields, said) in [
        (
            "a: String @index(sortKeyFields: [\"b\", \"c\"]) b: String c: String",
            "takes one sort key field, not 2",
        ),
        (
            "a: String @index(sortKeyFields: [\"zz\"])",
            "no other scalar field",
        ),
        (
            "a: String @index(sortKeyFields: [\"a\"])",
            "no other scalar field",
        ),
        (
            "a: String @index(queryField: \"listAs\")",
            "already a field of Query",
        ),
        (
            "a: String @index(name: \"x\") b: String @index(name: \"x\")",
            "two indexes are named x",
        ),
        (
            "a: String @index(queryField: \"not a name\")",
            "is not a GraphQL name",
        ),
        ("a: String @index(unknown: 1)", "unknown"),
    ] {
        let error = error_of(&format!("type A @model {{ {fields} }}"));
        assert!(error.contains(said), "{fields}: {error}");
    }
}

#[test]
fn default_schema_derives_the_seed_layout() {
    let model = farms();
    // Slots 1 and 2 for relations; a cow uses both, so its type index takes slot 3, and
    // its index of breeds slot 4.
    assert_eq!(model.indexes, vec![1, 2, 3, 4]);
    let list_slot = |name: &str| model.type_def(name).and_then(|t| t.list).map(|l| l.slot);
    assert_eq!(list_slot("Farm"), Some(1));
    assert_eq!(list_slot("Cow"), Some(3));
    assert_eq!(list_slot("Goal"), Some(2));
    assert_eq!(
        model
            .type_def("Farm")
            .and_then(|t| t.list)
            .map(|l| l.shards),
        Some(DEFAULT_LIST_SHARDS)
    );
    let cow = model.type_def("Cow").expect("Cow is a model");
    let slots: Vec<(u8, &str)> = cow
        .slots
        .iter()
        .map(|s| (s.slot, s.element.as_str()))
        .collect();
    assert_eq!(slots, vec![(1, "Cow"), (2, "Animal")]);
    let farm = model.type_def("Farm").expect("Farm is a model");
    assert!(farm.slots.is_empty());
    assert_eq!(
        farm.unique_fields()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>(),
        vec!["name"]
    );
    assert_eq!(model.possible_types("Animal"), vec!["Chicken", "Cow"]);
}

#[test]
fn names_that_belong_to_graphql_or_to_generated_types_are_refused() {
    let table = [
        (
            "type Farm @model { name: String }\ntype String @model { x: Int }",
            "schema.graphql:2:1: type String: the name belongs to GraphQL",
        ),
        (
            "type Farm @model { name: String }\nenum __Schema { A }",
            "schema.graphql:2:1: type __Schema: the name belongs to GraphQL",
        ),
        (
            "type Farm @model { name: String }\nenum AWSDateTime { A }",
            "schema.graphql:2:1: type AWSDateTime: the name belongs to the AppSync scalar AWSDateTime",
        ),
        (
            "type Goal @model { title: String }\ntype User @model {\n  fans: [Goal] @incoming(edge: \"Likes\")\n  likers: [LikesInverse] @hasMany(index: \"GSI02\", field: \"userId\")\n}\ntype LikesInverse @model { userId: ID }\ntype Likes @edge(from: \"Goal\", to: \"User\") { at: String }",
            "type LikesInverseConnection would be generated for both",
        ),
    ];
    for (source, expected) in table {
        let error = error_of(source);
        assert!(error.contains(expected), "{error} for {source}");
    }
}

#[test]
fn appsync_schema_shapes_are_read() {
    let model = Model::parse(
        "schema.graphql",
        r#"
        schema { query: Query mutation: Mutation subscription: Subscription }
        "Something with a name."
        interface Named { name: String! }
        input PostInput { title: String! tags: [String!] }
        type Post implements Named @model { name: String! }
        extend type Post @aws_api_key { body: String }
        type Subscription {
            "Posts as they are written."
            onPostWritten(name: String): Post
                @aws_subscribe(mutations: ["createPost", "updatePost"])
        }
        "#,
    )
    .expect("valid");
    let post = model.type_def("Post").expect("declared");
    assert_eq!(post.implements, ["Named"]);
    assert!(
        post.field("body").is_some(),
        "the extension's field is added"
    );
    assert_eq!(post.auth.len(), 1, "the extension's directive is added");
    assert_eq!(model.interfaces[0].name, "Named");
    assert_eq!(
        model.interfaces[0].description.as_deref(),
        Some("Something with a name.")
    );
    let tags = &model.inputs[0].fields[1];
    assert_eq!(
        (tags.name.as_str(), tags.ty.as_str()),
        ("tags", "[String!]")
    );
    assert_eq!(
        model.subscriptions,
        [SubscriptionDef {
            name: "onPostWritten".into(),
            description: Some("Posts as they are written.".into()),
            type_name: "Post".into(),
            operations: vec![Operation::Create, Operation::Update],
            arguments: vec![("name".into(), ScalarType::String)],
        }]
    );
}

#[test]
fn appsync_schema_mistakes_name_their_line_and_column() {
    let table = [
        (
            "schema { query: Root }\ntype A @model { x: Int }",
            "schema.graphql:1:17: schema { query: Root }: the generated API's query type is Query; name it Query",
        ),
        (
            "type A implements Named @model { x: Int }",
            "schema.graphql:1:19: type A implements Named, which is not a declared interface",
        ),
        (
            "interface Named { name: String! }\ntype A implements Named @model { name: String }",
            "schema.graphql:2:19: type A implements Named, so it needs the field `name: String!`, not `name: String`",
        ),
        (
            "interface Stamped { createdAt: AWSDateTime! }\ntype A implements Stamped @model { x: Int }",
            "",
        ),
        (
            "input I { x: Unknown }\ntype A @model { x: Int }",
            "schema.graphql:1:14: I.x: unknown type Unknown",
        ),
        (
            "type A @model { x: Int }\nextend enum A { B }",
            "schema.graphql:2:1: extend A: A is declared as another kind of type",
        ),
        (
            "type A @model { x: Int }\ntype Subscription { onA: A }",
            "schema.graphql:2:21: Subscription.onA: a declared subscription needs @aws_subscribe(mutations: [...])",
        ),
        (
            "type A @model { x: Int }\ntype Subscription { onA: A @aws_subscribe(mutations: [\"createB\"]) }",
            "schema.graphql:2:28: Subscription.onA: @aws_subscribe names createB, which is not a mutation returning A",
        ),
        (
            "type A @model { x: Int }\ntype Subscription { onA(y: Int): A @aws_subscribe(mutations: [\"createA\"]) }",
            "schema.graphql:2:25: Subscription.onA: argument y must be named after a scalar field of A",
        ),
        (
            "type A @model { x: Int }\ntype Subscription { onA(x: String): A @aws_subscribe(mutations: [\"createA\"]) }",
            "schema.graphql:2:28: Subscription.onA: argument x has the type of A.x, Int, not String",
        ),
        (
            "type A @model { x: Int }\ntype Subscription { onCreateA: A @aws_subscribe(mutations: [\"createA\"]) }",
            "schema.graphql:2:21: Subscription.onCreateA is generated; choose another name",
        ),
        (
            "type A @model { x: Int }\ntype Query { a: A }",
            "schema.graphql:2:1: type Query: its fields are generated from the @model types",
        ),
        (
            "type A @model @auth(rules: [{ allow: private }]) { secret: String @auth(rules: [{ allow: owner }]) }",
            "schema.graphql:1:67: A.secret: @auth on a field may name the owner or groups field \"owner\" only when the rules of A name it too",
        ),
        (
            "type A @model { code: String @unique @aws_api_key }",
            "schema.graphql:1:38: A.code: @auth on a field cannot protect a key",
        ),
        (
            "type A @model { farmId: ID @aws_api_key farm: F @belongsTo(field: \"farmId\") }\ntype F @model { x: Int }",
            "schema.graphql:1:1: A.farmId: @auth on a field cannot protect a relation's key",
        ),
        (
            "type Post @model { title: String }\ntype Backstage { notes: String }\ntype E @model { backstage: Backstage @aws_api_key }",
            "",
        ),
    ];
    for (source, expected) in table {
        match Model::parse("schema.graphql", source) {
            Ok(_) if expected.is_empty() => {}
            Ok(_) => panic!("{source}\nwas accepted; want: {expected}"),
            Err(error) => {
                let message = error.to_string();
                assert!(
                    !expected.is_empty() && message.starts_with(expected),
                    "{source}\n got: {message}\nwant: {expected}"
                );
            }
        }
    }
}

#[test]
fn appsync_directives_are_rules_of_the_callers_they_name() {
    let model = Model::parse(
        "schema.graphql",
        r#"
        type Post @model @aws_api_key @aws_cognito_user_pools(cognito_groups: ["Editors"]) {
            title: String
            secret: String @aws_oidc
            notes: String @aws_auth
        }
        "#,
    )
    .expect("valid");
    let post = model.type_def("Post").expect("declared");
    let allows: Vec<&Allow> = post.auth.iter().map(|rule| &rule.allow).collect();
    assert_eq!(
        allows,
        [
            &Allow::Public,
            &Allow::Groups {
                groups: vec!["Editors".into()],
                group_claim: None
            }
        ]
    );
    assert_eq!(post.auth[0].provider, Provider::ApiKey);
    for field in ["secret", "notes"] {
        let rules = &post.field(field).expect("declared").auth;
        assert_eq!(rules.len(), 1, "{field}");
        assert_eq!(rules[0].allow, Allow::Private, "{field}");
    }
}

#[test]
fn schema_mistakes_name_their_line_and_column() {
    let table = [
        (
            "type Farm @model @cached { name: String }",
            "schema.graphql:1:18: unknown directive @cached",
        ),
        (
            "type Farm @model {\n  name: String\n  cows: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\")\n}\ntype Cow @model { name: String }",
            "schema.graphql:3:15: Farm.cows: @hasMany(field: \"farmId\") needs a field `farmId: ID` on Cow",
        ),
        (
            "type Farm @model {\n  logo: Image @belongsTo(field: \"logoId\")\n}\ntype Image @model { url: String }",
            "schema.graphql:2:15: Farm.logo: @belongsTo(field: \"logoId\") needs a field `logoId: ID` on Farm",
        ),
        (
            "type Farm @model {\n  a: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\")\n  b: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\")\n}\ntype Cow @model { farmId: ID }",
            "schema.graphql:3:12: Farm.b: Cow already writes slot GSI01 for Farm.a; choose another index",
        ),
        (
            "type Farm @model { cows: [Cow] @hasMany(index: \"GSI21\", field: \"farmId\") }\ntype Cow @model { farmId: ID }",
            "schema.graphql:1:32: Farm.cows: index must be one of \"GSI01\" to \"GSI20\", not \"GSI21\"",
        ),
        (
            "type Farm @model { cow: Cow }\ntype Cow { farm: Farm }",
            "schema.graphql:2:18: Cow.farm: a type without @model holds values, not nodes",
        ),
        (
            "type Farm @model { cow: Cow @belongsTo(field: \"cowId\") cowId: ID }\ntype Cow { name: String }",
            "schema.graphql:1:29: Farm.cow: @belongsTo needs a field of a @model type; Cow has no @model",
        ),
        (
            "type Farm @model { cows: [Cow] @unique }\ntype Cow { name: String @unique }",
            "schema.graphql:2:25: Cow.name: @unique works on @model types; Cow has no @model",
        ),
        (
            "type Farm @model { owner: Person }",
            "schema.graphql:1:27: Farm.owner: unknown type Person",
        ),
        (
            "type Farm @model { logo: Image }\ntype Image @model { url: String }",
            "schema.graphql:1:20: Farm.logo: a field of type Image needs @belongsTo(field: \"logoId\")",
        ),
        (
            "type Farm @model { PK01: String }",
            "schema.graphql:1:20: Farm.PK01: the name PK01 is reserved for the table's keys",
        ),
        (
            "type Farm @model { version: String }",
            "schema.graphql:1:20: Farm.version is managed by @model as `version: Int!`; remove it",
        ),
        (
            "type Farm @model { tags: [[String]] }",
            "schema.graphql:1:26: Farm.tags: lists of lists are not supported",
        ),
        (
            "type Farm @model { tags: [String] @unique }",
            "schema.graphql:1:35: Farm.tags: @unique works on single values, not lists",
        ),
        (
            "type Farm @model { farmId: ID cows: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\") @auth(rules: [{ allow: owner }]) }\ntype Cow @model { farmId: ID }",
            "schema.graphql:1:85: Farm.cows: @auth on a field works on stored fields",
        ),
        (
            "type Farm @model @auth(rules: [{ allow: owner, ownerField: \"size\" }]) { size: Int }",
            "schema.graphql:1:18: Farm.size: @auth reads it as an owner or a group, so it must be String or [String]",
        ),
        (
            "type Farm @model @aws_iam { a: Int }",
            "schema.graphql:1:18: @aws_iam needs an IAM verifier, and this server has none",
        ),
        (
            "type Farm @model { a: Int @aws_lambda }",
            "schema.graphql:1:27: @aws_lambda needs a Lambda authorizer",
        ),
        (
            "type Farm @model @aws_api_key(cognito_groups: [\"A\"]) { a: Int }",
            "schema.graphql:1:31: @aws_api_key has no argument cognito_groups",
        ),
        (
            "type Farm @model @auth(rules: [{ allow: private, provider: iam }]) { a: Int }",
            "schema.graphql:1:31: provider: iam needs an IAM verifier",
        ),
        (
            "type Farm @model { open: Boolean @unique }",
            "schema.graphql:1:34: Farm.open: @unique works on String, ID, Int and AWSEmail fields",
        ),
        (
            "type Farm @model { name: String }\ntype FarmConnection @model { x: Int }",
            "schema.graphql:2:1: type FarmConnection is generated for Farm; choose another name",
        ),
        ("type Farm @model { name: String", "schema.graphql:1:32: "),
        (
            "enum Kind { A }",
            "schema.graphql:1:1: the schema declares no @model type",
        ),
    ];
    for (source, expected) in table {
        let message = error_of(source);
        assert!(
            message.starts_with(expected),
            "{source}\n got: {message}\nwant: {expected}"
        );
    }
}

#[test]
fn edge_mistakes_name_their_line_and_column() {
    let base = "type Goal @model { title: String }\ntype User @model { name: String }\nunion Member = User\n";
    let table = [
        (
            "type M @edge(from: \"Nobody\", to: \"User\") { x: Int }",
            "schema.graphql:4:8: @edge(from: \"Nobody\"): Nobody is not a @model type",
        ),
        (
            "type M @edge(from: \"Goal\", to: \"User\", sortBy: \"rank\") { x: Int }",
            "schema.graphql:4:8: @edge(sortBy: \"rank\") needs a metadata field rank on M",
        ),
        (
            "type M @edge(from: \"Goal\", to: \"User\") { from: ID }",
            "schema.graphql:4:42: M.from: the name from is managed by @edge",
        ),
        (
            "type M @edge(from: \"Goal\", to: \"User\", edgeSet: false) { x: Int }\nextend type Nobody { y: Int }",
            "schema.graphql:5:1: extend Nobody: no type Nobody is declared to extend",
        ),
        (
            "enum Role { A @rank(value: 5) B }",
            "schema.graphql:4:31: B needs @rank: rank every value of an enum or none",
        ),
        (
            "enum Role { A @rank(value: 1000) }",
            "schema.graphql:4:15: @rank(value:) takes a whole number from 0 to 999",
        ),
    ];
    for (addition, expected) in table {
        let message = error_of(&format!("{base}{addition}"));
        assert!(
            message.starts_with(expected),
            "{addition}\n got: {message}\nwant: {expected}"
        );
    }
}

#[test]
fn edge_fields_must_match_their_edge() {
    let schema = |field: &str| {
        format!(
            "type Goal @model {{ title: String\n  {field}\n}}\ntype User @model {{ name: String }}\ntype Tag @model {{ x: Int }}\ntype Sub @edge(from: \"Goal\", to: \"User\", edgeSet: false) {{ x: Int }}\ntype Lead @edge(from: \"Goal\", to: \"User\") {{ x: Int }}"
        )
    };
    let table = [
        (
            "tags: [Tag] @outgoing(edge: \"Lead\")",
            "Goal.tags: Lead goes from Goal to User, so @outgoing",
        ),
        (
            "owners: [User] @incoming(edge: \"Lead\")",
            "Goal.owners: Lead goes from Goal to User, so @incoming",
        ),
        (
            "subs: [User] @targets(edge: \"Sub\")",
            "Goal.subs: Sub is kept out of the edge set",
        ),
        (
            "leads: [User] @targets(edge: \"Lead\", role: LEAD)",
            "Goal.leads: role: needs Lead to sort by an enum field",
        ),
        (
            "x: [User] @outgoing(edge: \"Nope\")",
            "Goal.x: there is no @edge type Nope",
        ),
        (
            "y: User @targets(edge: \"Lead\")",
            "Goal.y: @targets needs a list type, like [User]",
        ),
    ];
    for (field, expected) in table {
        let message = error_of(&schema(field));
        assert!(
            message.contains(expected),
            "{field}\n got: {message}\nwant: {expected}"
        );
    }
    let valid = schema("leads: [User] @targets(edge: \"Lead\")");
    let model = Model::parse("schema.graphql", &valid).expect("a valid edge schema");
    assert_eq!(model.edges.len(), 2);
    assert_eq!(
        model.indexes,
        vec![1],
        "edges use GSI01 for their inverse lookups"
    );
}

#[test]
fn the_default_schema_ranks_goal_roles() {
    let model = farms();
    assert_eq!(model.rank_of("GoalRole", "LEAD"), Some(500));
    assert_eq!(model.rank_of("TeamRole", "MANAGER"), None);
    let membership = model.edge_def("GoalMembership").expect("an edge type");
    assert!(membership.edge_set);
    assert!(
        !model
            .edge_def("GoalSubscription")
            .expect("an edge type")
            .edge_set
    );
}

#[test]
fn redundant_managed_fields_are_accepted() {
    let model = Model::parse(
        "schema.graphql",
        "type Farm @model { id: ID! name: String }",
    )
    .expect("declaring id: ID! is allowed");
    let names: Vec<&str> = model.types[0]
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, vec!["name"]);
}
