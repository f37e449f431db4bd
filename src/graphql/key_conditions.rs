//! The sorting arguments of connection fields, as Amplify names them: `sortDirection:
//! ModelSortDirection` on every connection, and on a connection sorted by a field, a key
//! condition named after that field (`name: ModelStringKeyConditionInput`) with Amplify's
//! operators. Read here into the engine's [`KeyCondition`].

use async_graphql::Value;
use async_graphql::dynamic::{Enum, EnumItem, InputObject, InputValue, TypeRef};

use crate::engine::EngineError;
use crate::engine::read::{KeyCondition, KeyField, KeyKind, SortOperand};

/// The enum of `sortDirection`.
pub(super) const SORT_DIRECTION: &str = "ModelSortDirection";

pub(super) fn sort_direction() -> Enum {
    Enum::new(SORT_DIRECTION)
        .description("The order of a connection: up its sort field (ASC, the default) or down.")
        .item(EnumItem::new("ASC"))
        .item(EnumItem::new("DESC"))
}

/// Every kind of key condition, for registering their inputs.
pub(super) const KINDS: [KeyKind; 4] = [KeyKind::Text, KeyKind::Id, KeyKind::Int, KeyKind::Float];

/// The input type of a key condition on a field of `kind`.
pub(super) fn input_name(kind: KeyKind) -> &'static str {
    match kind {
        KeyKind::Text => "ModelStringKeyConditionInput",
        KeyKind::Id => "ModelIDKeyConditionInput",
        KeyKind::Int => "ModelIntKeyConditionInput",
        KeyKind::Float => "ModelFloatKeyConditionInput",
    }
}

/// The input of a key condition on a field of `kind`: one operator.
pub(super) fn input(kind: KeyKind) -> InputObject {
    let element = match kind {
        KeyKind::Text => TypeRef::STRING,
        KeyKind::Id => TypeRef::ID,
        KeyKind::Int => TypeRef::INT,
        KeyKind::Float => TypeRef::FLOAT,
    };
    let mut input = InputObject::new(input_name(kind))
        .description(
            "A condition on the sort field of a connection, which bounds the Query that reads \
             it: give one operator. Text compares as the connection sorts, ignoring case.",
        )
        .field(InputValue::new("eq", TypeRef::named(element)))
        .field(InputValue::new("lt", TypeRef::named(element)))
        .field(InputValue::new("le", TypeRef::named(element)))
        .field(InputValue::new("gt", TypeRef::named(element)))
        .field(InputValue::new("ge", TypeRef::named(element)))
        .field(
            InputValue::new("between", TypeRef::named_nn_list(element))
                .description("The lowest and the highest value, both included."),
        );
    if matches!(kind, KeyKind::Text | KeyKind::Id) {
        input = input.field(InputValue::new("beginsWith", TypeRef::named(element)));
    }
    input
}

/// The arguments a connection's field takes besides paging and roles: `sortDirection`, and the
/// key condition when `key_field` gives one. A sort field named like another argument takes no
/// key condition.
pub(super) fn arguments(key_field: Option<&KeyField>) -> Vec<InputValue> {
    let mut arguments = vec![
        InputValue::new("sortDirection", TypeRef::named(SORT_DIRECTION))
            .description("ASC (the default) or DESC."),
    ];
    if let Some(field) = key_field.filter(|f| takes_key_condition(f)) {
        arguments.push(
            InputValue::new(&field.name, TypeRef::named(input_name(field.kind))).description(
                format!(
                    "Only the items whose {} meets this; the connection is sorted by it.",
                    field.name
                ),
            ),
        );
    }
    arguments
}

fn takes_key_condition(field: &KeyField) -> bool {
    !matches!(
        field.name.as_str(),
        "first"
            | "last"
            | "after"
            | "before"
            | "limit"
            | "nextToken"
            | "filter"
            | "role"
            | "minRole"
            | "sortDirection"
    )
}

/// Whether `sortDirection` asks for descending order. A literal arrives as an enum value, a
/// variable's value as the JSON string it was sent as (validation has already checked it is
/// one of the two; a string literal is refused there, see `shape::check_literals`).
pub(super) fn descending(value: Option<Value>) -> Result<bool, EngineError> {
    let name = match &value {
        None | Some(Value::Null) => return Ok(false),
        Some(Value::Enum(name)) => name.as_str(),
        Some(Value::String(name)) => name.as_str(),
        Some(other) => {
            return Err(EngineError::bad_input(format!(
                "sortDirection must be ASC or DESC, not {other}"
            )));
        }
    };
    match name {
        "ASC" => Ok(false),
        "DESC" => Ok(true),
        other => Err(EngineError::bad_input(format!(
            "sortDirection must be ASC or DESC, not {other}"
        ))),
    }
}

/// The key condition the argument named after `key_field` holds, if the client gave one.
pub(super) fn key_condition(
    key_field: Option<&KeyField>,
    get: impl Fn(&str) -> Option<Value>,
) -> Result<Option<KeyCondition>, EngineError> {
    let Some(field) = key_field.filter(|f| takes_key_condition(f)) else {
        return Ok(None);
    };
    let operators = match get(&field.name) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(operators)) => operators,
        Some(_) => {
            return Err(EngineError::bad_input(format!(
                "{} must be a key condition",
                field.name
            )));
        }
    };
    let given: Vec<_> = operators
        .iter()
        .filter(|(_, value)| **value != Value::Null)
        .collect();
    let [(operator, value)] = given.as_slice() else {
        return Err(EngineError::bad_input(format!(
            "{}: give one key-condition operator, not {}",
            field.name,
            given.len()
        )));
    };
    let operand = |value: &Value| operand(field, value);
    Ok(Some(match operator.as_str() {
        "eq" => KeyCondition::Eq(operand(value)?),
        "lt" => KeyCondition::Lt(operand(value)?),
        "le" => KeyCondition::Le(operand(value)?),
        "gt" => KeyCondition::Gt(operand(value)?),
        "ge" => KeyCondition::Ge(operand(value)?),
        "between" => match value {
            Value::List(ends) if ends.len() == 2 => {
                KeyCondition::Between(operand(&ends[0])?, operand(&ends[1])?)
            }
            _ => {
                return Err(EngineError::bad_input(format!(
                    "{}: between takes two values, the lowest and the highest",
                    field.name
                )));
            }
        },
        "beginsWith" => match value {
            Value::String(prefix) => KeyCondition::BeginsWith(prefix.clone()),
            _ => {
                return Err(EngineError::bad_input(format!(
                    "{}: beginsWith takes text",
                    field.name
                )));
            }
        },
        other => {
            return Err(EngineError::bad_input(format!(
                "{}: unknown key-condition operator {other}",
                field.name
            )));
        }
    }))
}

fn operand(field: &KeyField, value: &Value) -> Result<SortOperand, EngineError> {
    let wrong = || {
        EngineError::bad_input(format!(
            "{}: a key condition's value must be of the field's type",
            field.name
        ))
    };
    match (field.kind, value) {
        (KeyKind::Text | KeyKind::Id, Value::String(text)) => {
            // Compared with stored values, so written as they are stored.
            let text = crate::engine::formats::stored_text(&field.scalar, text)
                .map_err(|e| EngineError::bad_input(format!("{}: {e}", field.name)))?;
            Ok(SortOperand::Text(text.into_owned()))
        }
        (KeyKind::Int, Value::Number(n)) => n.as_i64().map(SortOperand::Int).ok_or_else(wrong),
        (KeyKind::Float, Value::Number(n)) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .map(|x| SortOperand::Float(x.to_bits()))
            .ok_or_else(wrong),
        _ => Err(wrong()),
    }
}
