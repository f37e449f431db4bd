//! Authorization rules, in Amplify's vocabulary: `@auth(rules: [...])` on a `@model` type or
//! on one of its fields, each rule saying who (`allow`) may do what (`operations`) through which
//! kind of credential (`provider`).
//!
//! Invariant: a rule that exists can be enforced here, and every field a rule names is a stored
//! `String`, `ID`, `[String]` or `[ID]` field of its type. `custom` rules (`provider: function`, and
//! `@aws_lambda`) admit the callers a Lambda authorizer admits, and `iam` rules (`provider:
//! iam`, and `@aws_iam`) the requests signed by a key of `--iam-credentials`; without either
//! configured such rules admit nobody, and the server says so once at start-up.

use async_graphql_parser::Pos;
use async_graphql_value::indexmap::IndexMap;
use async_graphql_value::{ConstValue, Name};

/// One rule of `@auth(rules: [...])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRule {
    pub allow: Allow,
    /// What the rule allows; all four when the rule does not say.
    pub operations: Vec<Operation>,
    pub provider: Provider,
    /// `manageOwners: true` (owner rules): its owners may change the node's owner and group
    /// fields even when the rule does not grant every operation, as any owner may in Amplify.
    pub manage_owners: bool,
}

/// Whom a rule allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// `{ allow: owner }`: callers whose identity claim is the node's `field` (a `String`), or
    /// one of its values (a `[String]`, `many`).
    Owner {
        field: String,
        many: bool,
        /// `identityClaim:`: the claim naming the caller; the server's `--owner-claim` without.
        identity_claim: Option<String>,
    },
    /// `{ allow: groups, groups: [...] }`: callers in one of these groups.
    Groups {
        groups: Vec<String>,
        /// `groupClaim:`: the claim listing the caller's groups; the server's `--groups-claim`
        /// without.
        group_claim: Option<String>,
    },
    /// `{ allow: groups, groupsField: "..." }`: callers in a group the node's `field` names.
    GroupsField {
        field: String,
        many: bool,
        group_claim: Option<String>,
    },
    /// `{ allow: private }`: any caller with a verified token.
    Private,
    /// `{ allow: public }`: any caller with an API key, or any caller when the API is open.
    Public,
    /// `{ allow: custom }` (and `@aws_lambda`): any caller the Lambda authorizer admits.
    Custom,
}

/// What a rule may allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Create,
    Read,
    Update,
    Delete,
}

impl Operation {
    pub const ALL: [Operation; 4] = [
        Operation::Create,
        Operation::Read,
        Operation::Update,
        Operation::Delete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Read => "read",
            Operation::Update => "update",
            Operation::Delete => "delete",
        }
    }
}

/// The kind of credential a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// An `x-api-key` (or no credential at all, on an open API).
    ApiKey,
    /// A verified bearer token. `userPools` and `oidc` are both tokens this server verifies
    /// against its configured issuers.
    Token,
    /// The Lambda authorizer's decision (`provider: function`).
    Function,
    /// A SigV4 signature of an IAM user's access key (`provider: iam`, and `@aws_iam`).
    Iam,
}

impl AuthRule {
    /// Whether the rule allows `operation` at all.
    pub fn covers(&self, operation: Operation) -> bool {
        self.operations.contains(&operation)
    }

    /// Whether the callers it allows may change who owns the node and which group it is
    /// shared with (its owner and group fields): an owner rule that grants every operation,
    /// or one that says `manageOwners: true`; never a `groupsField` rule. (Rules that allow
    /// callers whatever the node holds, as groups and private rules do, allow any update.)
    pub fn manages_owners(&self) -> bool {
        match self.allow {
            Allow::Owner { .. } => {
                self.manage_owners || Operation::ALL.iter().all(|op| self.covers(*op))
            }
            Allow::GroupsField { .. } => false,
            _ => true,
        }
    }

    /// The node field the rule reads to decide, with whether it holds a list.
    pub fn field(&self) -> Option<(&str, bool)> {
        match &self.allow {
            Allow::Owner { field, many, .. } | Allow::GroupsField { field, many, .. } => {
                Some((field.as_str(), *many))
            }
            _ => None,
        }
    }
}

/// A rule as written, before its fields are checked against its type: the rule, and for a
/// rule naming a field, where it was written.
pub(super) struct WrittenRule {
    pub rule: AuthRule,
    pub pos: Pos,
}

/// Reads the `rules:` argument of `@auth`. `many` of each named field is decided later, from
/// the field's declared type.
pub(super) fn read_rules(value: &ConstValue, pos: Pos) -> Result<Vec<WrittenRule>, String> {
    let ConstValue::List(rules) = value else {
        return Err("@auth(rules:) takes a list of rules, like [{ allow: owner }]".to_owned());
    };
    if rules.is_empty() {
        return Err("@auth(rules:) lists no rule; leave out @auth for no rules".to_owned());
    }
    rules
        .iter()
        .map(|rule| read_rule(rule).map(|rule| WrittenRule { rule, pos }))
        .collect()
}

/// The AppSync directives that say which kind of caller reaches a type or a field.
pub(super) const APPSYNC_DIRECTIVES: [&str; 6] = [
    "aws_api_key",
    "aws_oidc",
    "aws_cognito_user_pools",
    "aws_auth",
    "aws_iam",
    "aws_lambda",
];

/// The rule an AppSync directive (`@aws_api_key`, `@aws_oidc`, `@aws_cognito_user_pools`,
/// `@aws_auth`, `@aws_lambda`, `@aws_iam`) makes: a type or field with any of them is reached
/// only by the callers they name, as in AppSync.
pub(super) fn appsync_rule(name: &str, groups: Option<&ConstValue>) -> Result<AuthRule, String> {
    let rule = |allow| AuthRule {
        allow,
        operations: Operation::ALL.to_vec(),
        provider: Provider::Token,
        manage_owners: false,
    };
    let groups = match groups {
        None => None,
        Some(ConstValue::List(groups)) => Some(
            groups
                .iter()
                .map(|group| match group {
                    ConstValue::String(group) if !group.is_empty() => Ok(group.clone()),
                    _ => Err(format!(
                        "@{name}(cognito_groups:) lists group names, as strings"
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => {
            return Err(format!(
                "@{name}(cognito_groups:) takes a list of group names"
            ));
        }
    };
    match (name, groups) {
        ("aws_api_key", _) => Ok(AuthRule {
            provider: Provider::ApiKey,
            ..rule(Allow::Public)
        }),
        ("aws_oidc", _) => Ok(rule(Allow::Private)),
        ("aws_cognito_user_pools" | "aws_auth", Some(groups)) if !groups.is_empty() => {
            Ok(rule(Allow::Groups {
                groups,
                group_claim: None,
            }))
        }
        ("aws_cognito_user_pools" | "aws_auth", _) => Ok(rule(Allow::Private)),
        ("aws_lambda", _) => Ok(AuthRule {
            provider: Provider::Function,
            ..rule(Allow::Custom)
        }),
        _ => Ok(AuthRule {
            provider: Provider::Iam,
            ..rule(Allow::Private)
        }),
    }
}

/// The arguments an `@auth` rule is written with; the names `read_rule` knows.
const KNOWN: [&str; 9] = [
    "allow",
    "ownerField",
    "identityClaim",
    "groups",
    "groupsField",
    "groupClaim",
    "operations",
    "provider",
    "manageOwners",
];

/// One rule's arguments, as written, and the `allow:` they were written with.
struct Written<'v> {
    arguments: &'v IndexMap<Name, ConstValue>,
    allow: String,
}

impl Written<'_> {
    fn get(&self, name: &str) -> Option<&ConstValue> {
        self.arguments.get(&Name::new(name))
    }

    /// `name:` as a non-empty string, when it is written.
    fn text(&self, name: &str) -> Result<Option<String>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(ConstValue::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(format!("an @auth rule's {name}: takes a non-empty string")),
        }
    }

    /// Refuses `name:` on a rule of another kind than `kind`.
    fn only_for(&self, name: &str, kind: &str) -> Result<(), String> {
        match self.get(name) {
            Some(_) => Err(format!(
                "{name}: belongs to {kind} rules, not allow: {}",
                self.allow
            )),
            None => Ok(()),
        }
    }
}

/// One rule of `@auth(rules: [...])`. The checks run in the order written here, which decides
/// the first mistake a rule is refused with.
fn read_rule(value: &ConstValue) -> Result<AuthRule, String> {
    let arguments = rule_is_an_object(value)?;
    arguments_are_known(arguments)?;
    let allow = allow_is_written(arguments)?;
    let written = Written { arguments, allow };
    let group_claim = written.text("groupClaim")?;
    let manage_owners = manage_owners_is_for_owner_rules(&written)?;
    let allow = match written.allow.as_str() {
        "owner" => read_owner_rule(&written)?,
        "groups" => read_groups_rule(&written, group_claim)?,
        "private" | "public" | "custom" => read_caller_rule(&written)?,
        other => return Err(allow_is_unknown(other)),
    };
    let provider = read_provider(&allow, written.get("provider"))?;
    let operations = read_operations(written.get("operations"))?;
    Ok(AuthRule {
        allow,
        operations,
        provider,
        manage_owners,
    })
}

fn rule_is_an_object(value: &ConstValue) -> Result<&IndexMap<Name, ConstValue>, String> {
    match value {
        ConstValue::Object(arguments) => Ok(arguments),
        _ => Err("each @auth rule is an object, like { allow: owner }".to_owned()),
    }
}

fn arguments_are_known(arguments: &IndexMap<Name, ConstValue>) -> Result<(), String> {
    match arguments.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        Some(unknown) => Err(format!(
            "an @auth rule has no argument {unknown}; known: {}",
            KNOWN.join(", ")
        )),
        None => Ok(()),
    }
}

fn allow_is_written(arguments: &IndexMap<Name, ConstValue>) -> Result<String, String> {
    match arguments.get(&Name::new("allow")) {
        Some(ConstValue::Enum(name)) => Ok(name.to_string()),
        Some(ConstValue::String(name)) => Ok(name.clone()),
        _ => {
            Err("each @auth rule needs allow: owner, groups, private, public or custom".to_owned())
        }
    }
}

fn manage_owners_is_for_owner_rules(written: &Written<'_>) -> Result<bool, String> {
    match written.get("manageOwners") {
        None => Ok(false),
        Some(ConstValue::Boolean(manage)) if written.allow == "owner" => Ok(*manage),
        Some(ConstValue::Boolean(_)) => Err(format!(
            "manageOwners: belongs to allow: owner rules, not allow: {}",
            written.allow
        )),
        Some(_) => Err("manageOwners: takes true or false".to_owned()),
    }
}

fn allow_is_unknown(allow: &str) -> String {
    format!("allow: {allow} is not known here; write owner, groups, private, public or custom")
}

/// `{ allow: owner }`: whose field names the node's owners, and which claim names the caller.
fn read_owner_rule(written: &Written<'_>) -> Result<Allow, String> {
    written.only_for("groups", "allow: groups")?;
    written.only_for("groupsField", "allow: groups")?;
    written.only_for("groupClaim", "allow: groups")?;
    Ok(Allow::Owner {
        field: written
            .text("ownerField")?
            .unwrap_or_else(|| "owner".to_owned()),
        many: false,
        identity_claim: written.text("identityClaim")?,
    })
}

/// `{ allow: groups }`: the groups it names, or the node's field that names them.
fn read_groups_rule(written: &Written<'_>, group_claim: Option<String>) -> Result<Allow, String> {
    written.only_for("ownerField", "allow: owner")?;
    written.only_for("identityClaim", "allow: owner")?;
    match (written.get("groups"), written.text("groupsField")?) {
        (Some(_), Some(_)) => {
            Err("an @auth groups rule takes groups: or groupsField:, not both".to_owned())
        }
        (None, Some(field)) => Ok(Allow::GroupsField {
            field,
            many: false,
            group_claim,
        }),
        (Some(ConstValue::List(groups)), None) if !groups.is_empty() => Ok(Allow::Groups {
            groups: groups_are_named(groups)?,
            group_claim,
        }),
        _ => Err(
            "an @auth groups rule needs groups: [\"Admin\"] or groupsField: \"field\"".to_owned(),
        ),
    }
}

fn groups_are_named(groups: &[ConstValue]) -> Result<Vec<String>, String> {
    groups
        .iter()
        .map(|group| match group {
            ConstValue::String(group) if !group.is_empty() => Ok(group.clone()),
            _ => Err("groups: lists group names, as strings".to_owned()),
        })
        .collect()
}

/// `{ allow: private }`, `public` or `custom`: any caller of a kind, so nothing names owners or
/// groups.
fn read_caller_rule(written: &Written<'_>) -> Result<Allow, String> {
    for name in [
        "ownerField",
        "identityClaim",
        "groups",
        "groupsField",
        "groupClaim",
    ] {
        written.only_for(name, "owner or groups")?;
    }
    Ok(match written.allow.as_str() {
        "private" => Allow::Private,
        "public" => Allow::Public,
        _ => Allow::Custom,
    })
}

/// `operations:`, each once in the order written; all four when the rule does not say.
fn read_operations(value: Option<&ConstValue>) -> Result<Vec<Operation>, String> {
    let operations = match value {
        None => return Ok(Operation::ALL.to_vec()),
        Some(ConstValue::List(operations)) if !operations.is_empty() => operations,
        Some(_) => return Err(operations_are_a_list()),
    };
    let mut read = Vec::new();
    for operation in operations {
        let operation = operation_is_known(operation)?;
        if !read.contains(&operation) {
            read.push(operation);
        }
    }
    Ok(read)
}

fn operations_are_a_list() -> String {
    "operations: lists create, read, update and delete".to_owned()
}

fn operation_is_known(operation: &ConstValue) -> Result<Operation, String> {
    let name = match operation {
        ConstValue::Enum(name) => name.to_string(),
        ConstValue::String(name) => name.clone(),
        _ => return Err(operations_are_a_list()),
    };
    match name.as_str() {
        "create" => Ok(Operation::Create),
        "read" => Ok(Operation::Read),
        "update" => Ok(Operation::Update),
        "delete" => Ok(Operation::Delete),
        other => Err(format!(
            "operations: {other} is not known here; write create, read, update and delete"
        )),
    }
}

fn read_provider(allow: &Allow, value: Option<&ConstValue>) -> Result<Provider, String> {
    let name = match value {
        None => {
            return Ok(match allow {
                Allow::Public => Provider::ApiKey,
                Allow::Custom => Provider::Function,
                _ => Provider::Token,
            });
        }
        Some(ConstValue::Enum(name)) => name.to_string(),
        Some(ConstValue::String(name)) => name.clone(),
        Some(_) => {
            return Err("provider: takes apiKey, userPools, oidc, iam or function".to_owned());
        }
    };
    match (name.as_str(), allow) {
        ("function", Allow::Custom) => Ok(Provider::Function),
        ("function", _) => Err("provider: function goes with allow: custom only".to_owned()),
        (_, Allow::Custom) => Err(format!(
            "allow: custom is the Lambda authorizer's decision: its provider is function, not \
             {name}"
        )),
        ("apiKey", Allow::Public) => Ok(Provider::ApiKey),
        ("apiKey", _) => Err("provider: apiKey goes with allow: public only".to_owned()),
        ("userPools" | "oidc", Allow::Public) => Err(format!(
            "provider: {name} needs a token, and allow: public is for callers without one; \
             write allow: private"
        )),
        ("userPools" | "oidc", _) => Ok(Provider::Token),
        ("iam" | "identityPool", Allow::Private | Allow::Public) => Ok(Provider::Iam),
        ("iam" | "identityPool", _) => Err(format!(
            "provider: {name} goes with allow: private or public (an IAM caller has no owner \
             or groups)"
        )),
        (other, _) => Err(format!(
            "provider: {other} is not known here; choose apiKey, userPools, oidc, iam or function"
        )),
    }
}

/// The owner fields transformer v1 made the arguments of a type's subscriptions, from the rules
/// that grant reads, and whether they are required: none when signed-in users may read
/// (`private`); optional beside `public` or static group rules, or with several owner rules;
/// else required.
pub fn v1_subscription_owners(rules: &[AuthRule]) -> (Vec<String>, bool) {
    let mut owners: Vec<String> = Vec::new();
    let mut open = false;
    for rule in rules
        .iter()
        .filter(|r| r.operations.contains(&Operation::Read))
    {
        match &rule.allow {
            Allow::Private => return (Vec::new(), false),
            Allow::Owner { field, .. } if !owners.contains(field) => owners.push(field.clone()),
            Allow::Public | Allow::Groups { .. } => open = true,
            _ => {}
        }
    }
    let required = !open && owners.len() == 1;
    (owners, required)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Result<AuthRule, String> {
        let schema = format!("type T @auth(rules: [{text}]) {{ a: String }}");
        let document = async_graphql_parser::parse_schema(&schema).expect("parses");
        let async_graphql_parser::types::TypeSystemDefinition::Type(definition) =
            &document.definitions[0]
        else {
            panic!("a type");
        };
        let directive = &definition.node.directives[0];
        let value = &directive.node.get_argument("rules").expect("rules").node;
        read_rules(value, directive.pos).map(|mut rules| rules.remove(0).rule)
    }

    #[test]
    fn v1_subscription_owners_follow_the_rules_that_grant_reads() {
        let rules = |texts: &[&str]| -> Vec<AuthRule> {
            texts.iter().map(|t| rule(t).expect("reads")).collect()
        };
        let owner = "{ allow: owner }";
        let owners = |found: (Vec<String>, bool)| (found.0.join(","), found.1);
        for (texts, expected) in [
            (vec![owner], ("owner", true)),
            (vec![owner, "{ allow: private }"], ("", false)),
            (vec![owner, "{ allow: public }"], ("owner", false)),
            (
                vec![owner, "{ allow: groups, groups: [\"Admin\"] }"],
                ("owner", false),
            ),
            (
                vec![owner, "{ allow: groups, groupsField: \"gs\" }"],
                ("owner", true),
            ),
            (
                vec![
                    "{ allow: owner, operations: [create, update] }",
                    "{ allow: private, operations: [read] }",
                ],
                ("", false),
            ),
            (
                vec![
                    "{ allow: owner, ownerField: \"author\" }",
                    "{ allow: owner, ownerField: \"editors\" }",
                ],
                ("author,editors", false),
            ),
        ] {
            let got = owners(v1_subscription_owners(&rules(&texts)));
            assert_eq!((got.0.as_str(), got.1), expected, "{texts:?}");
        }
    }

    #[test]
    fn rules_read_as_amplify_writes_them() {
        assert_eq!(
            rule("{ allow: owner }"),
            Ok(AuthRule {
                allow: Allow::Owner {
                    field: "owner".into(),
                    many: false,
                    identity_claim: None
                },
                operations: Operation::ALL.to_vec(),
                provider: Provider::Token,
                manage_owners: false,
            })
        );
        assert_eq!(
            rule("{ allow: groups, groups: [\"Admin\"], operations: [read, update] }"),
            Ok(AuthRule {
                allow: Allow::Groups {
                    groups: vec!["Admin".into()],
                    group_claim: None
                },
                operations: vec![Operation::Read, Operation::Update],
                provider: Provider::Token,
                manage_owners: false,
            })
        );
        assert_eq!(
            rule("{ allow: public }").map(|r| r.provider),
            Ok(Provider::ApiKey)
        );
        assert_eq!(
            rule("{ allow: private, provider: oidc }").map(|r| r.provider),
            Ok(Provider::Token)
        );
        // Who may change a node's owner and group fields.
        let manages = |text: &str| rule(text).map(|r| r.manages_owners());
        assert_eq!(manages("{ allow: owner }"), Ok(true));
        assert_eq!(
            manages("{ allow: owner, ownerField: \"editors\", operations: [read, update] }"),
            Ok(false)
        );
        assert_eq!(
            manages(
                "{ allow: owner, ownerField: \"editors\", operations: [update], manageOwners: true }"
            ),
            Ok(true)
        );
        assert_eq!(
            manages("{ allow: groups, groupsField: \"team\" }"),
            Ok(false)
        );
        assert!(
            rule("{ allow: groups, groups: [\"A\"], manageOwners: true }")
                .is_err_and(|e| e.contains("belongs to allow: owner"))
        );
    }

    #[test]
    fn rules_this_server_cannot_enforce_are_refused() {
        for (text, says) in [
            ("{ allow: owner, provider: iam }", "no owner or groups"),
            (
                "{ allow: public, provider: function }",
                "allow: custom only",
            ),
            ("{ allow: public, provider: oidc }", "write allow: private"),
            ("{ allow: owner, provider: apiKey }", "allow: public only"),
            ("{ allow: groups }", "groups:"),
            (
                "{ allow: groups, groups: [\"A\"], groupsField: \"g\" }",
                "not both",
            ),
            ("{ allow: owner, groups: [\"A\"] }", "allow: groups"),
            ("{ allow: everyone }", "not known"),
            ("{ allow: owner, operations: [list] }", "list is not known"),
            ("{ allow: owner, when: 1 }", "no argument when"),
        ] {
            let error = rule(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    /// Asserts that the rule `text` is refused with a message that holds `message`.
    fn assert_rule_refused(text: &str, message: &str) {
        let error = rule(text).expect_err(text);
        assert!(error.contains(message), "got: {error}\nwant: {message}");
    }

    #[test]
    fn a_rule_that_is_no_object_is_refused() {
        assert_rule_refused(
            "\"owner\"",
            "each @auth rule is an object, like { allow: owner }",
        );
    }

    #[test]
    fn an_argument_no_rule_takes_is_refused() {
        assert_rule_refused(
            "{ allow: owner, when: 1 }",
            "an @auth rule has no argument when; known: allow, ownerField, identityClaim",
        );
    }

    #[test]
    fn a_rule_without_allow_is_refused() {
        assert_rule_refused(
            "{ operations: [read] }",
            "each @auth rule needs allow: owner, groups, private, public or custom",
        );
    }

    #[test]
    fn an_empty_text_argument_is_refused() {
        assert_rule_refused(
            "{ allow: owner, ownerField: \"\" }",
            "an @auth rule's ownerField: takes a non-empty string",
        );
    }

    #[test]
    fn manage_owners_on_a_rule_other_than_owner_is_refused() {
        assert_rule_refused(
            "{ allow: private, manageOwners: true }",
            "manageOwners: belongs to allow: owner rules, not allow: private",
        );
    }

    #[test]
    fn manage_owners_that_is_no_boolean_is_refused() {
        assert_rule_refused(
            "{ allow: owner, manageOwners: 1 }",
            "manageOwners: takes true or false",
        );
    }

    #[test]
    fn an_argument_of_another_kind_of_rule_is_refused() {
        assert_rule_refused(
            "{ allow: owner, groupClaim: \"g\" }",
            "groupClaim: belongs to allow: groups rules, not allow: owner",
        );
        assert_rule_refused(
            "{ allow: groups, groups: [\"A\"], identityClaim: \"sub\" }",
            "identityClaim: belongs to allow: owner rules, not allow: groups",
        );
        assert_rule_refused(
            "{ allow: public, groupsField: \"g\" }",
            "groupsField: belongs to owner or groups rules, not allow: public",
        );
    }

    #[test]
    fn groups_and_groups_field_together_are_refused() {
        assert_rule_refused(
            "{ allow: groups, groups: [\"A\"], groupsField: \"g\" }",
            "an @auth groups rule takes groups: or groupsField:, not both",
        );
    }

    #[test]
    fn a_groups_rule_naming_no_groups_is_refused() {
        assert_rule_refused(
            "{ allow: groups, groups: [] }",
            "an @auth groups rule needs groups: [\"Admin\"] or groupsField: \"field\"",
        );
    }

    #[test]
    fn groups_that_are_not_names_are_refused() {
        assert_rule_refused(
            "{ allow: groups, groups: [1] }",
            "groups: lists group names, as strings",
        );
    }

    #[test]
    fn an_allow_this_server_does_not_know_is_refused() {
        assert_rule_refused(
            "{ allow: everyone }",
            "allow: everyone is not known here; write owner, groups, private, public or custom",
        );
    }

    #[test]
    fn operations_that_are_no_list_of_names_are_refused() {
        let message = "operations: lists create, read, update and delete";
        assert_rule_refused("{ allow: owner, operations: read }", message);
        assert_rule_refused("{ allow: owner, operations: [1] }", message);
    }

    #[test]
    fn an_operation_this_server_does_not_know_is_refused() {
        assert_rule_refused(
            "{ allow: owner, operations: [list] }",
            "operations: list is not known here; write create, read, update and delete",
        );
    }
}
