//! The plans of `@auth` rules: for each operation, who the rules let do it and where the
//! engine holds the caller to them. They make no storage call of their own.

use crate::model::{Allow, AuthRule, Operation, TypeDef};

use super::access::{Access, FieldPlan, access};

/// The rules of `type_def` itself, when it has any.
pub(super) fn type_auth_plan(type_def: &TypeDef) -> Option<FieldPlan> {
    (!type_def.auth.is_empty()).then(|| FieldPlan {
        field: format!("{} @auth", type_def.name),
        accesses: rule_accesses(&type_def.auth, false),
    })
}

/// The rules of each field of `type_def` that has its own.
pub(super) fn field_auth_plans(type_def: &TypeDef) -> Vec<FieldPlan> {
    type_def
        .fields
        .iter()
        .filter(|f| !f.auth.is_empty())
        .map(|field| FieldPlan {
            field: format!("{}.{} @auth", type_def.name, field.name),
            accesses: rule_accesses(&field.auth, true),
        })
        .collect()
}

/// Who `rules` let do each operation, and where the engine holds them to it: no storage call
/// of their own, a condition or a filter in the calls above.
fn rule_accesses(rules: &[AuthRule], of_field: bool) -> Vec<Access> {
    Operation::ALL
        .iter()
        // A field is not deleted on its own.
        .filter(|operation| !of_field || **operation != Operation::Delete)
        .map(|&operation| {
            let who: Vec<String> = rules
                .iter()
                .filter(|rule| rule.covers(operation))
                .map(|rule| match &rule.allow {
                    _ if rule.provider == crate::model::Provider::Iam => {
                        "any caller signing with an --iam-credentials key".to_owned()
                    }
                    Allow::Owner { field, many, .. } if *many => {
                        format!("{field} contains <caller>")
                    }
                    Allow::Owner { field, .. } => format!("{field} = <caller>"),
                    Allow::Groups { groups, .. } => format!("<caller> in {}", groups.join(" or ")),
                    Allow::GroupsField { field, many, .. } if *many => {
                        format!("{field} contains one of <caller's groups>")
                    }
                    Allow::GroupsField { field, .. } => {
                        format!("{field} in <caller's groups>")
                    }
                    Allow::Private => "any signed-in caller".to_owned(),
                    Allow::Public => "any API-key caller".to_owned(),
                    Allow::Custom => "any caller the Lambda authorizer admits".to_owned(),
                })
                .collect();
            let held = match operation {
                Operation::Create => "checked on the new node before its transaction",
                Operation::Read if of_field => "checked on its node when the field is read",
                Operation::Read => {
                    "checked on each node read by id; in each page's FilterExpression; on each event"
                }
                Operation::Update | Operation::Delete => "in the transaction's condition",
            };
            access(
                "@auth",
                operation.name(),
                if who.is_empty() {
                    "nobody".to_owned()
                } else {
                    who.join(" OR ")
                },
                held,
            )
        })
        .collect()
}
