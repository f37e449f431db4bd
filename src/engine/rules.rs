//! Authorization rules (`@auth`) applied to every node the engine hands out or writes: who the
//! caller is ([`Identity`]), and what the rules let them do to a type's nodes ([`Access`]).
//!
//! A rule either decides from the caller alone (`public`, `private`, `groups: [...]`), or from
//! the node too (`owner`, `groupsField`). The second kind becomes a [`Filter`] on the stored
//! node, and the engine applies it where DynamoDB sees the node as stored: as a condition of the
//! write's transaction (so a change of owner that commits first makes the write fail), and as
//! part of a page's filter expression (so a page leaves out what the caller may not read and
//! still fills up, within the read budget). A node read by id is checked against the same
//! filter before it is handed out.
//!
//! Invariant: a scope that serves a client carries that client's identity; only the offline
//! tools (`check`, `migrate`, `demo`) act as [`Identity::Tool`], which rules do not bind.

use std::collections::HashMap;
use std::sync::Arc;

use super::error::EngineError;
use crate::auth::Caller;
use crate::keys::TYPENAME;
use crate::model::{Allow, AuthRule, Model, Operation, Provider, TypeDef};
use crate::store::{AttrValue, Filter, Item, Test};

/// Who a scope acts for.
#[derive(Debug, Clone, PartialEq)]
pub enum Identity {
    /// An offline tool of the operator: no rule applies.
    Tool,
    /// A caller of an open API: no credential was needed.
    Anonymous,
    /// A caller with a valid API key.
    ApiKey,
    /// A caller with a verified token, and its claims.
    Token(Arc<serde_json::Map<String, serde_json::Value>>),
    /// A caller the Lambda authorizer admitted, and the `resolverContext` it answered.
    Lambda(Arc<serde_json::Map<String, serde_json::Value>>),
    /// A caller who signed with an access key of `--iam-credentials`, by its user's ARN.
    Iam(Arc<str>),
}

impl Identity {
    /// The identity of an authenticated caller.
    pub fn of(caller: &Caller) -> Identity {
        match caller {
            Caller::Anonymous => Identity::Anonymous,
            Caller::ApiKey => Identity::ApiKey,
            Caller::Token(claims) => Identity::Token(Arc::new(claims.clone())),
            Caller::Lambda(admitted) => {
                Identity::Lambda(Arc::new(admitted.resolver_context.clone()))
            }
            Caller::Iam(signer) => Identity::Iam(Arc::from(signer.user_arn.as_str())),
        }
    }
}

/// Which claims of a token name its owner and its groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimNames {
    /// `--owner-claim`; without it, `sub`, or the user name of a Cognito token.
    pub owner: Option<String>,
    /// `--groups-claim`.
    pub groups: String,
}

/// Cognito's claim of a token's groups, the default.
pub const DEFAULT_GROUPS_CLAIM: &str = "cognito:groups";

impl Default for ClaimNames {
    fn default() -> ClaimNames {
        ClaimNames {
            owner: None,
            groups: DEFAULT_GROUPS_CLAIM.to_owned(),
        }
    }
}

/// The rules of a model, by type and by field, with the claims they read.
#[derive(Debug, Default)]
pub struct Rules {
    types: HashMap<String, Vec<AuthRule>>,
    fields: HashMap<(String, String), Vec<AuthRule>>,
    claims: ClaimNames,
    /// Whether a user pool's owner is stored as Amplify stores it, `<sub>::<username>`: a
    /// schema in Amplify's language with its flag `useSubUsernameForDefaultIdentityClaim`.
    sub_username: bool,
}

/// What the rules let a caller do to a type's nodes.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Every node.
    All,
    /// The nodes that satisfy the filter.
    Where(Filter),
    /// None.
    Denied,
}

impl Rules {
    pub fn of(model: &Model, claims: ClaimNames) -> Rules {
        let dialect = &model.dialect;
        let mut rules = Rules {
            claims,
            sub_username: dialect.language == crate::model::SchemaLanguage::Amplify
                && dialect.flags.use_sub_username_for_default_identity_claim,
            ..Rules::default()
        };
        for type_def in &model.types {
            if !type_def.auth.is_empty() {
                rules
                    .types
                    .insert(type_def.name.clone(), type_def.auth.clone());
            }
            for field in &type_def.fields {
                if !field.auth.is_empty() {
                    rules.fields.insert(
                        (type_def.name.clone(), field.name.clone()),
                        field.auth.clone(),
                    );
                }
            }
        }
        rules
    }

    /// Whether any rule is declared at all.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty() && self.fields.is_empty()
    }

    /// What `identity` may do to nodes of `type_name` by `operation`.
    pub fn access(&self, identity: &Identity, type_name: &str, operation: Operation) -> Access {
        match self.types.get(type_name) {
            None => Access::All,
            Some(rules) => self.decide(identity, rules, operation, false),
        }
    }

    /// What `identity` may do to `field` of nodes of `type_name` by `operation`: the field's
    /// own rules when it has some, the type's otherwise.
    pub fn field_access(
        &self,
        identity: &Identity,
        type_name: &str,
        field: &str,
        operation: Operation,
    ) -> Access {
        match self.fields.get(&(type_name.to_owned(), field.to_owned())) {
            None => self.access(identity, type_name, operation),
            Some(rules) => self.decide(identity, rules, operation, false),
        }
    }

    /// Whether `field` of `type_name` has rules of its own.
    /// Whether `rules` that name callers, not nodes (AppSync's directives on a field a
    /// function answers), admit `identity`; no rules admit every caller.
    pub fn admit_caller(&self, identity: &Identity, rules: &[AuthRule]) -> bool {
        rules.is_empty()
            || matches!(
                self.decide(identity, rules, Operation::Read, false),
                Access::All
            )
    }

    pub fn field_has_rules(&self, type_name: &str, field: &str) -> bool {
        self.fields
            .contains_key(&(type_name.to_owned(), field.to_owned()))
    }

    /// What `rules` let `identity` do by `operation`; with `managing`, only through the rules
    /// that may change who reaches the node ([`AuthRule::manages_owners`]).
    fn decide(
        &self,
        identity: &Identity,
        rules: &[AuthRule],
        operation: Operation,
        managing: bool,
    ) -> Access {
        if *identity == Identity::Tool {
            return Access::All;
        }
        let mut filters = Vec::new();
        let counted =
            |rule: &&AuthRule| rule.covers(operation) && (!managing || rule.manages_owners());
        for rule in rules.iter().filter(counted) {
            let claims = match (identity, rule.provider) {
                (Identity::Token(claims), Provider::Token) => claims,
                (Identity::ApiKey | Identity::Anonymous, Provider::ApiKey) => {
                    if rule.allow == Allow::Public {
                        return Access::All;
                    }
                    continue;
                }
                (Identity::Lambda(_), Provider::Function) => {
                    if rule.allow == Allow::Custom {
                        return Access::All;
                    }
                    continue;
                }
                // Long-term keys are an IAM user's, signed in: `private` and `public` IAM
                // rules both admit them (AppSync's authenticated and unauthenticated roles).
                (Identity::Iam(_), Provider::Iam) => {
                    if matches!(rule.allow, Allow::Private | Allow::Public) {
                        return Access::All;
                    }
                    continue;
                }
                _ => continue,
            };
            match &rule.allow {
                Allow::Public | Allow::Custom => {}
                Allow::Private => return Access::All,
                Allow::Groups {
                    groups,
                    group_claim,
                } => {
                    let mine = self.groups_of(claims, group_claim.as_deref());
                    if groups.iter().any(|group| mine.contains(group)) {
                        return Access::All;
                    }
                }
                Allow::Owner {
                    field,
                    many,
                    identity_claim,
                } => {
                    if let Some(owner) = self.owner_of(claims, identity_claim.as_deref()) {
                        filters.push(holds(field, *many, owner));
                    }
                    // Amplify's other form of a user pool's owner, `<sub>::<username>` (what
                    // its resolvers store by default): nodes Amplify wrote stay their owners'.
                    if identity_claim.is_none()
                        && self.claims.owner.is_none()
                        && let Some(owner) = amplify_owner(claims)
                    {
                        filters.push(holds(field, *many, owner));
                    }
                }
                Allow::GroupsField {
                    field,
                    many,
                    group_claim,
                } => {
                    let mine = self.groups_of(claims, group_claim.as_deref());
                    if *many {
                        for group in mine {
                            filters.push(holds(field, true, group));
                        }
                    } else {
                        // One `IN` per hundred groups (DynamoDB's most), not an `OR` per group:
                        // a caller in many groups stays within the expression's limits.
                        for chunk in mine.chunks(MAX_IN_VALUES) {
                            filters.push(Filter::Field {
                                field: field.clone(),
                                test: Test::In(chunk.iter().cloned().map(AttrValue::S).collect()),
                            });
                        }
                    }
                }
            }
        }
        if filters.is_empty() {
            Access::Denied
        } else {
            Access::Where(Filter::Any(filters))
        }
    }

    /// The caller's name as the node's owner field holds it.
    pub fn owner_of(
        &self,
        claims: &serde_json::Map<String, serde_json::Value>,
        rule_claim: Option<&str>,
    ) -> Option<String> {
        let text = |name: &str| {
            claims
                .get(name)
                .and_then(serde_json::Value::as_str)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        if let Some(name) = rule_claim.or(self.claims.owner.as_deref()) {
            return text(name);
        }
        // A Cognito user pool's tokens name the user in `cognito:username` (ID tokens) or
        // `username` (access tokens), as AppSync's owner rules read them.
        let cognito = claims
            .get("iss")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|iss| iss.contains("cognito-idp."));
        if cognito {
            return text("cognito:username").or_else(|| text("username"));
        }
        text("sub")
    }

    /// The owner a new node stores for the caller: [`Rules::owner_of`], or for a user pool's
    /// user where the schema is Amplify's (with its flag on) and no claim is named, Amplify's
    /// `<sub>::<username>`. Either form matches the user when it reads.
    fn owner_to_store(
        &self,
        claims: &serde_json::Map<String, serde_json::Value>,
        rule_claim: Option<&str>,
    ) -> Option<String> {
        let named = rule_claim.is_some() || self.claims.owner.is_some();
        match self.sub_username && !named {
            true => amplify_owner(claims).or_else(|| self.owner_of(claims, rule_claim)),
            false => self.owner_of(claims, rule_claim),
        }
    }

    /// The caller's groups: a list of strings, or one string, in the groups claim.
    pub fn groups_of(
        &self,
        claims: &serde_json::Map<String, serde_json::Value>,
        rule_claim: Option<&str>,
    ) -> Vec<String> {
        match claims.get(rule_claim.unwrap_or(&self.claims.groups)) {
            Some(serde_json::Value::String(group)) if !group.is_empty() => vec![group.clone()],
            Some(serde_json::Value::Array(groups)) => groups
                .iter()
                .filter_map(serde_json::Value::as_str)
                .filter(|group| !group.is_empty())
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The owners an owner rule of `type_def` gives a new node of `identity` when the input
    /// names none: each single owner field set to the caller, each list of owners to a list of
    /// the caller (Amplify sets `owner` likewise).
    fn owners_of_new(&self, identity: &Identity, type_def: &TypeDef) -> Vec<(String, AttrValue)> {
        let Identity::Token(claims) = identity else {
            return Vec::new();
        };
        let Some(rules) = self.types.get(&type_def.name) else {
            return Vec::new();
        };
        let mut owners = Vec::new();
        for rule in rules {
            if let Allow::Owner {
                field,
                many,
                identity_claim,
            } = &rule.allow
                && rule.provider == Provider::Token
                && rule.covers(Operation::Create)
                && let Some(owner) = self.owner_to_store(claims, identity_claim.as_deref())
            {
                let value = if *many {
                    AttrValue::L(vec![AttrValue::S(owner)])
                } else {
                    AttrValue::S(owner)
                };
                owners.push((field.clone(), value));
            }
        }
        owners
    }

    /// The fields that say who may reach a `type_name` node: its rules' owner fields and
    /// `groupsField`s.
    fn access_fields(&self, type_name: &str) -> Vec<&str> {
        self.types
            .get(type_name)
            .into_iter()
            .flatten()
            .filter_map(|rule| match &rule.allow {
                Allow::Owner { field, .. } | Allow::GroupsField { field, .. } => {
                    Some(field.as_str())
                }
                _ => None,
            })
            .collect()
    }
}

/// A Cognito user pool token's owner as Amplify stores it by default: `<sub>::<username>`.
fn amplify_owner(claims: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(serde_json::Value::as_str)
            .filter(|value| !value.is_empty())
    };
    let cognito = text("iss").is_some_and(|iss| iss.contains("cognito-idp."));
    let username = text("cognito:username").or_else(|| text("username"))?;
    cognito
        .then(|| format!("{}::{username}", text("sub").unwrap_or_default()))
        .filter(|owner| !owner.starts_with("::"))
}

/// `field` names `value`: equals it, or holds it among its values.
fn holds(field: &str, many: bool, value: String) -> Filter {
    Filter::Field {
        field: field.to_owned(),
        test: if many {
            Test::Contains(AttrValue::S(value))
        } else {
            Test::Eq(AttrValue::S(value))
        },
    }
}

/// The values DynamoDB takes in one `IN`.
const MAX_IN_VALUES: usize = 100;

/// `access`, unless what it needs of a node is more than DynamoDB takes in one expression (a
/// caller in hundreds of groups, against a `groupsField`): then a refusal that says so, rather
/// than a request DynamoDB would refuse.
pub fn within_limits(
    access: Access,
    operation: Operation,
    type_name: &str,
) -> Result<Access, EngineError> {
    if let Access::Where(filter) = &access
        && let Some(why) = filter.beyond_limits()
    {
        return Err(EngineError::Unauthorized(format!(
            "Not Authorized to {} {type_name}: what the rules need of it for this caller is \
             {why} (a caller in very many groups, against a groupsField rule)",
            operation.name()
        )));
    }
    Ok(access)
}

/// The error of an operation the rules do not allow. It names the operation and the type,
/// never a node or what it holds: the same whether the node exists or not.
pub fn unauthorized(operation: Operation, type_name: &str) -> EngineError {
    EngineError::Unauthorized(format!(
        "Not Authorized to {} {type_name}",
        operation.name()
    ))
}

/// Refuses a client's filter or condition on nodes of `types` that tests a field with rules
/// of its own the caller may not read everywhere: what it matches would tell the field's value.
pub fn check_filter_fields(
    rules: &Rules,
    identity: &Identity,
    types: &[&str],
    filter: &Filter,
) -> Result<(), EngineError> {
    if rules.fields.is_empty() {
        return Ok(());
    }
    for field in filter.fields() {
        for type_name in types {
            if rules.field_has_rules(type_name, field)
                && rules.field_access(identity, type_name, field, Operation::Read) != Access::All
            {
                return Err(EngineError::Unauthorized(format!(
                    "Not Authorized to filter on {field} of {type_name}"
                )));
            }
        }
    }
    Ok(())
}

/// Whether `access` lets the item through.
pub fn admits(access: &Access, item: &Item) -> bool {
    match access {
        Access::All => true,
        Access::Where(filter) => filter.matches(item),
        Access::Denied => false,
    }
}

/// The read access to nodes that may be of any of `types`: each type's own, told apart by
/// `__typename` when they differ.
pub fn read_access(rules: &Rules, identity: &Identity, types: &[&str]) -> Access {
    let each: Vec<(&str, Access)> = types
        .iter()
        .map(|name| (*name, rules.access(identity, name, Operation::Read)))
        .collect();
    if each.iter().all(|(_, access)| *access == Access::All) {
        return Access::All;
    }
    if each.iter().all(|(_, access)| *access == Access::Denied) {
        return Access::Denied;
    }
    let typed = |name: &str| Filter::Field {
        field: TYPENAME.to_owned(),
        test: Test::Eq(AttrValue::S(name.to_owned())),
    };
    Access::Where(Filter::Any(
        each.into_iter()
            .filter_map(|(name, access)| match access {
                Access::All => Some(typed(name)),
                Access::Where(filter) => Some(Filter::All(vec![typed(name), filter])),
                Access::Denied => None,
            })
            .collect(),
    ))
}

/// Gives the fields of a new `type_def` node the caller as owner, in each owner field the
/// client left out (or set to null).
pub fn fill_owners(
    rules: &Rules,
    identity: &Identity,
    type_def: &TypeDef,
    fields: &mut Vec<(String, Option<AttrValue>)>,
) {
    for (field, owner) in rules.owners_of_new(identity, type_def) {
        match fields.iter_mut().find(|(name, _)| *name == field) {
            Some((_, value @ None)) => *value = Some(owner),
            Some(_) => {}
            None => fields.push((field, Some(owner))),
        }
    }
}

/// Checks `item`, a new node of `type_def` with its owners filled in, against the rules: a
/// caller who may create only as an owner must be one of its owners (or in one of its
/// groups), and a field with rules of its own may be set only by a caller they allow.
pub fn authorize_create(
    rules: &Rules,
    identity: &Identity,
    type_def: &TypeDef,
    given: &[String],
    item: &Item,
) -> Result<(), EngineError> {
    if rules.is_empty() || *identity == Identity::Tool {
        return Ok(());
    }
    let refused = || unauthorized(Operation::Create, &type_def.name);
    if !admits(
        &rules.access(identity, &type_def.name, Operation::Create),
        item,
    ) {
        return Err(refused());
    }
    for field in given {
        if rules.field_has_rules(&type_def.name, field)
            && !admits(
                &rules.field_access(identity, &type_def.name, field, Operation::Create),
                item,
            )
        {
            return Err(refused());
        }
    }
    Ok(())
}

/// The condition an update of `given` fields of a `type_def` node must hold on the stored
/// node; `None` when the rules allow it whatever the node holds. Changing who reaches the node
/// (an owner field or a `groupsField`: granting or revoking) takes a caller allowed outright,
/// or an owner through a rule that may manage owners ([`AuthRule::manages_owners`]): not a
/// co-owner whose rule is limited to some operations, nor a member through `groupsField`.
pub fn update_condition(
    rules: &Rules,
    identity: &Identity,
    type_def: &TypeDef,
    given: &[String],
) -> Result<Option<Filter>, EngineError> {
    if rules.is_empty() {
        return Ok(None);
    }
    let name = &type_def.name;
    let mut conditions = Vec::new();
    let mut access = vec![rules.access(identity, name, Operation::Update)];
    if access[0] != Access::All
        && let Some(type_rules) = rules.types.get(name)
    {
        // Who reaches a node is changed by those who manage it, not by whoever else may
        // update it.
        let access_fields = rules.access_fields(name);
        if given
            .iter()
            .any(|field| access_fields.contains(&field.as_str()))
        {
            access.push(rules.decide(identity, type_rules, Operation::Update, true));
        }
    }
    for field in given {
        if rules.field_has_rules(name, field) {
            access.push(rules.field_access(identity, name, field, Operation::Update));
        }
    }
    for access in access {
        match access {
            Access::All => {}
            Access::Where(filter) => conditions.push(filter),
            Access::Denied => return Err(unauthorized(Operation::Update, name)),
        }
    }
    let condition = match conditions.len() {
        0 => return Ok(None),
        1 => conditions.pop(),
        _ => Some(Filter::All(conditions)),
    };
    match within_limits(
        condition.map_or(Access::All, Access::Where),
        Operation::Update,
        name,
    )? {
        Access::Where(filter) => Ok(Some(filter)),
        _ => Ok(None),
    }
}

/// The condition a delete of a `type_def` node must hold on the stored node.
pub fn delete_condition(
    rules: &Rules,
    identity: &Identity,
    type_def: &TypeDef,
) -> Result<Option<Filter>, EngineError> {
    let access = rules.access(identity, &type_def.name, Operation::Delete);
    match within_limits(access, Operation::Delete, &type_def.name)? {
        Access::All => Ok(None),
        Access::Where(filter) => Ok(Some(filter)),
        Access::Denied => Err(unauthorized(Operation::Delete, &type_def.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model::parse(
            "schema.graphql",
            r#"
            type Note @model @auth(rules: [
                { allow: owner },
                { allow: owner, ownerField: "editors", operations: [read, update] },
                { allow: groups, groups: ["Admin"] },
                { allow: groups, groupsField: "team", operations: [read] },
                { allow: public, operations: [read] }
            ]) {
                title: String
                editors: [String]
                team: String
            }
            "#,
        )
        .expect("valid")
    }

    fn token(sub: &str, groups: &[&str]) -> Identity {
        let mut claims = serde_json::Map::new();
        claims.insert("sub".into(), sub.into());
        claims.insert(
            DEFAULT_GROUPS_CLAIM.into(),
            serde_json::Value::from(groups.to_vec()),
        );
        Identity::Token(Arc::new(claims))
    }

    fn note(owner: &str, editors: &[&str], team: &str) -> Item {
        Item::from_iter([
            ("owner".to_owned(), AttrValue::S(owner.into())),
            (
                "editors".to_owned(),
                AttrValue::L(editors.iter().map(|e| AttrValue::S((*e).into())).collect()),
            ),
            ("team".to_owned(), AttrValue::S(team.into())),
        ])
    }

    #[test]
    fn each_rule_decides_as_amplify_says() {
        let model = model();
        let rules = Rules::of(&model, ClaimNames::default());
        let shared = note("ann", &["bob"], "blue");
        let reads = |identity: &Identity| rules.access(identity, "Note", Operation::Read);
        let deletes = |identity: &Identity| rules.access(identity, "Note", Operation::Delete);
        // The API key reads everything, and deletes nothing.
        assert_eq!(reads(&Identity::ApiKey), Access::All);
        assert_eq!(deletes(&Identity::ApiKey), Access::Denied);
        // Admins do everything.
        assert_eq!(deletes(&token("zed", &["Admin"])), Access::All);
        // Owners, editors and the team read it; only the owner deletes it.
        for (who, reads_it, deletes_it) in [
            (token("ann", &[]), true, true),
            (token("bob", &[]), true, false),
            (token("cat", &["blue"]), true, false),
            (token("dan", &["red"]), false, false),
        ] {
            assert_eq!(admits(&reads(&who), &shared), reads_it, "{who:?} reads");
            assert_eq!(
                admits(&deletes(&who), &shared),
                deletes_it,
                "{who:?} deletes"
            );
        }
        // An editor may update, but not change who owns it.
        let type_def = model.type_def("Note").expect("declared");
        let bob = token("bob", &[]);
        let title = update_condition(&rules, &bob, type_def, &["title".into()])
            .expect("allowed on condition")
            .expect("a condition");
        assert!(title.matches(&shared));
        let owner = update_condition(&rules, &bob, type_def, &["owner".into()])
            .expect("allowed on condition")
            .expect("a condition");
        assert!(!owner.matches(&shared));
    }

    #[test]
    fn a_new_node_gets_its_creator_as_owner_and_no_one_else() {
        let model = model();
        let rules = Rules::of(&model, ClaimNames::default());
        let type_def = model.type_def("Note").expect("declared");
        let ann = token("ann", &[]);
        let mut fields = Vec::new();
        fill_owners(&rules, &ann, type_def, &mut fields);
        assert_eq!(
            fields,
            [("owner".to_owned(), Some(AttrValue::S("ann".into())))]
        );
        let item: Item = fields
            .into_iter()
            .map(|(k, v)| (k, v.expect("set")))
            .collect();
        authorize_create(&rules, &ann, type_def, &[], &item).expect("allowed");
        let forged = Item::from_iter([("owner".to_owned(), AttrValue::S("bob".into()))]);
        let error = authorize_create(&rules, &ann, type_def, &["owner".into()], &forged)
            .expect_err("refused");
        assert_eq!(error.error_type(), "Unauthorized");
        assert!(
            authorize_create(&rules, &Identity::ApiKey, type_def, &[], &Item::default()).is_err()
        );
    }

    #[test]
    fn cognito_tokens_name_their_owner_by_user_name() {
        let rules = Rules::default();
        let claims: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            r#"{"iss":"https://cognito-idp.eu-west-1.amazonaws.com/pool","sub":"u-1","cognito:username":"ann"}"#,
        )
        .expect("json");
        assert_eq!(rules.owner_of(&claims, None).as_deref(), Some("ann"));
        let other = ClaimNames {
            owner: Some("email".into()),
            ..ClaimNames::default()
        };
        let rules = Rules {
            claims: other,
            ..Rules::default()
        };
        assert_eq!(rules.owner_of(&claims, None), None);
        assert_eq!(rules.owner_of(&claims, Some("sub")).as_deref(), Some("u-1"));
    }

    #[test]
    fn an_amplify_schema_stores_a_user_pools_owner_as_amplify_does() {
        let schema = "type Note @model @auth(rules: [{ allow: owner }]) { text: String }";
        let mut claims = serde_json::Map::new();
        claims.insert(
            "iss".into(),
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Pool".into(),
        );
        claims.insert("sub".into(), "4f1c-sub".into());
        claims.insert("cognito:username".into(), "ann".into());
        let ann = Identity::Token(Arc::new(claims));
        let stored = |choice: &crate::model::DialectChoice| {
            let model = Model::parse_as("schema.graphql", schema, choice).expect("it loads");
            let rules = Rules::of(&model, ClaimNames::default());
            rules.owners_of_new(&ann, &model.types[0])
        };
        let amplify = crate::model::DialectChoice::default();
        assert_eq!(
            stored(&amplify),
            [("owner".to_owned(), AttrValue::S("4f1c-sub::ann".into()))]
        );
        // Without the flag, or in tablegraph's language, the user name.
        let mut without = amplify.clone();
        without
            .flags
            .set("useSubUsernameForDefaultIdentityClaim", false, "test");
        let tablegraph = crate::model::DialectChoice {
            language: Some(crate::model::SchemaLanguage::Tablegraph),
            ..amplify
        };
        for choice in [without, tablegraph] {
            assert_eq!(
                stored(&choice),
                [("owner".to_owned(), AttrValue::S("ann".into()))]
            );
        }
    }

    #[test]
    fn a_user_pools_owner_matches_in_both_of_amplifys_forms() {
        let model = model();
        let rules = Rules::of(&model, ClaimNames::default());
        let mut claims = serde_json::Map::new();
        claims.insert(
            "iss".into(),
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Pool".into(),
        );
        claims.insert("sub".into(), "4f1c-sub".into());
        claims.insert("cognito:username".into(), "ann".into());
        let ann = Identity::Token(Arc::new(claims));
        let reads = rules.access(&ann, "Note", Operation::Read);
        // As tablegraph stores an owner (the user name), and as Amplify does (sub::username).
        for owner in ["ann", "4f1c-sub::ann"] {
            assert!(admits(&reads, &note(owner, &[], "none")), "{owner}");
        }
        assert!(!admits(&reads, &note("bob", &[], "none")));
        assert!(!admits(&reads, &note("4f1c-sub::bob", &[], "none")));
    }
}
