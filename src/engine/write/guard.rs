//! What an update or a delete expects of the node it changes: the client's expected version
//! and condition, and what the caller's `@auth` rules need the node to hold. A write checks its
//! guard on the node as read, and carries it as the condition of its transaction.

use super::plan::check_version;
use crate::engine::error::EngineError;
use crate::engine::rules::{check_filter_fields, delete_condition, unauthorized, update_condition};
use crate::engine::scope::RequestScope;
use crate::model::{Operation, TypeDef};
use crate::store::{AttrValue, Clause, Filter, Item};

/// What an update or a delete expects of the node it changes: its version (`expectedVersion`)
/// and a condition on its stored fields (`condition`). Both are checked on the node as read,
/// and the write is conditioned on that very version, so no other write slips between.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    pub expected: Option<i64>,
    pub condition: Option<Filter>,
    /// What the caller's `@auth` rules need the node to hold, and the error when it does not;
    /// checked and written like `condition`.
    pub(super) rule: Option<(Filter, EngineError)>,
}

impl Guard {
    /// A guard of the version only.
    pub fn version(expected: Option<i64>) -> Guard {
        Guard {
            expected,
            condition: None,
            rule: None,
        }
    }

    /// The same, with a condition on the node's stored fields.
    pub fn with_condition(mut self, condition: Option<Filter>) -> Guard {
        self.condition = condition;
        self
    }

    /// The same, expecting `version` (what conflict detection settled on).
    pub(super) fn expecting(&self, version: i64) -> Guard {
        Guard {
            expected: Some(version),
            ..self.clone()
        }
    }

    /// Refuses a condition DynamoDB would not take, before anything is read.
    pub(super) fn validate(&self) -> Result<(), EngineError> {
        self.validate_beside(0)
    }

    /// The same, for a write that adds `clauses` clauses of its own to the condition.
    pub(super) fn validate_beside(&self, clauses: usize) -> Result<(), EngineError> {
        let beyond = |filter: &Filter| filter.beyond_limits_beside(clauses);
        match self.condition.as_ref().and_then(beyond) {
            Some(why) => Err(EngineError::bad_input(format!("condition: {why}"))),
            None => Ok(()),
        }
    }

    /// The same, with the caller's rules for `operation`: an error when they allow it on no
    /// node, else what they need the node to hold.
    pub(super) fn ruled(
        &self,
        scope: &RequestScope,
        type_def: &TypeDef,
        operation: Operation,
        fields: &[(String, Option<AttrValue>)],
    ) -> Result<Guard, EngineError> {
        if let Some(condition) = &self.condition {
            check_filter_fields(
                &scope.rules,
                &scope.identity,
                &[type_def.name.as_str()],
                condition,
            )?;
        }
        let condition = match operation {
            Operation::Delete => delete_condition(&scope.rules, &scope.identity, type_def)?,
            _ => {
                let given: Vec<String> = fields.iter().map(|(name, _)| name.clone()).collect();
                update_condition(&scope.rules, &scope.identity, type_def, &given)?
            }
        };
        Ok(Guard {
            rule: condition.map(|filter| (filter, unauthorized(operation, &type_def.name))),
            ..self.clone()
        })
    }

    /// The error for a node that is not there: under a rule, the rule's own, so that a
    /// caller cannot tell a node they may not change from none.
    pub(super) fn missing(&self, type_def: &TypeDef, id: &str) -> EngineError {
        match &self.rule {
            Some((_, refused)) => refused.clone(),
            None => EngineError::bad_input(format!("there is no {} with id {id}", type_def.name)),
        }
    }

    /// The clauses the write of the node carries beside its version.
    pub(super) fn clauses(&self) -> impl Iterator<Item = Clause> + '_ {
        self.condition
            .iter()
            .chain(self.rule.iter().map(|(filter, _)| filter))
            .map(|filter| Clause::Holds(filter.clone()))
    }

    /// Refuses a node the caller's rules do not let them change, with the rules' error: checked
    /// before anything else is told of the node (its version, whether it is deleted).
    pub(super) fn check_rule(&self, current: &Item) -> Result<(), EngineError> {
        match &self.rule {
            Some((rule, refused)) if !rule.matches(current) => Err(refused.clone()),
            _ => Ok(()),
        }
    }

    /// The node's version, once the node is as expected.
    pub(super) fn check(&self, current: &Item) -> Result<i64, EngineError> {
        self.check_rule(current)?;
        let version = check_version(current, self.expected)?;
        match &self.condition {
            Some(condition) if !condition.matches(current) => {
                Err(EngineError::ConditionalCheckFailed)
            }
            _ => Ok(version),
        }
    }
}
