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

fn read_rule(value: &ConstValue) -> Result<AuthRule, String> {
    let ConstValue::Object(arguments) = value else {
        return Err("each @auth rule is an object, like { allow: owner }".to_owned());
    };
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
    if let Some(unknown) = arguments.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!(
            "an @auth rule has no argument {unknown}; known: {}",
            KNOWN.join(", ")
        ));
    }
    let get = |name: &str| arguments.get(&Name::new(name));
    let text = |name: &str| -> Result<Option<String>, String> {
        match get(name) {
            None => Ok(None),
            Some(ConstValue::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(format!("an @auth rule's {name}: takes a non-empty string")),
        }
    };
    let allow = match get("allow") {
        Some(ConstValue::Enum(name)) => name.to_string(),
        Some(ConstValue::String(name)) => name.clone(),
        _ => {
            return Err(
                "each @auth rule needs allow: owner, groups, private, public or custom".to_owned(),
            );
        }
    };
    let only_for = |name: &str, kind: &str| -> Result<(), String> {
        match get(name) {
            Some(_) => Err(format!(
                "{name}: belongs to {kind} rules, not allow: {allow}"
            )),
            None => Ok(()),
        }
    };
    let group_claim = text("groupClaim")?;
    let manage_owners = match get("manageOwners") {
        None => false,
        Some(ConstValue::Boolean(manage)) if allow == "owner" => *manage,
        Some(ConstValue::Boolean(_)) => {
            return Err(format!(
                "manageOwners: belongs to allow: owner rules, not allow: {allow}"
            ));
        }
        Some(_) => return Err("manageOwners: takes true or false".to_owned()),
    };
    let allow = match allow.as_str() {
        "owner" => {
            only_for("groups", "allow: groups")?;
            only_for("groupsField", "allow: groups")?;
            only_for("groupClaim", "allow: groups")?;
            Allow::Owner {
                field: text("ownerField")?.unwrap_or_else(|| "owner".to_owned()),
                many: false,
                identity_claim: text("identityClaim")?,
            }
        }
        "groups" => {
            only_for("ownerField", "allow: owner")?;
            only_for("identityClaim", "allow: owner")?;
            match (get("groups"), text("groupsField")?) {
                (Some(_), Some(_)) => {
                    return Err(
                        "an @auth groups rule takes groups: or groupsField:, not both".to_owned(),
                    );
                }
                (None, Some(field)) => Allow::GroupsField {
                    field,
                    many: false,
                    group_claim,
                },
                (Some(ConstValue::List(groups)), None) if !groups.is_empty() => {
                    let groups = groups
                        .iter()
                        .map(|group| match group {
                            ConstValue::String(group) if !group.is_empty() => Ok(group.clone()),
                            _ => Err("groups: lists group names, as strings".to_owned()),
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    Allow::Groups {
                        groups,
                        group_claim,
                    }
                }
                _ => {
                    return Err(
                        "an @auth groups rule needs groups: [\"Admin\"] or groupsField: \"field\""
                            .to_owned(),
                    );
                }
            }
        }
        "private" | "public" | "custom" => {
            for name in [
                "ownerField",
                "identityClaim",
                "groups",
                "groupsField",
                "groupClaim",
            ] {
                only_for(name, "owner or groups")?;
            }
            match allow.as_str() {
                "private" => Allow::Private,
                "public" => Allow::Public,
                _ => Allow::Custom,
            }
        }
        other => {
            return Err(format!(
                "allow: {other} is not known here; write owner, groups, private, public or custom"
            ));
        }
    };
    let provider = read_provider(&allow, get("provider"))?;
    let operations = match get("operations") {
        None => Operation::ALL.to_vec(),
        Some(ConstValue::List(operations)) if !operations.is_empty() => {
            let mut read = Vec::new();
            for operation in operations {
                let name = match operation {
                    ConstValue::Enum(name) => name.to_string(),
                    ConstValue::String(name) => name.clone(),
                    _ => return Err("operations: lists create, read, update and delete".into()),
                };
                let operation = match name.as_str() {
                    "create" => Operation::Create,
                    "read" => Operation::Read,
                    "update" => Operation::Update,
                    "delete" => Operation::Delete,
                    other => {
                        return Err(format!(
                            "operations: {other} is not known here; write create, read, update \
                             and delete"
                        ));
                    }
                };
                if !read.contains(&operation) {
                    read.push(operation);
                }
            }
            read
        }
        Some(_) => return Err("operations: lists create, read, update and delete".to_owned()),
    };
    Ok(AuthRule {
        allow,
        operations,
        provider,
        manage_owners,
    })
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
}
