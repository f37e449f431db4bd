//! The sorting arguments of connection fields, as Amplify names them: `sortDirection:
//! ModelSortDirection` on every connection, and on a connection sorted by a field, a key
//! condition named after that field (`name: ModelStringKeyConditionInput`) with Amplify's
//! operators; on a composite sort key, one named after its fields run together
//! (`statusCreatedAt: ModelPostByStatusCompositeKeyConditionInput`) whose operands give the
//! key's first fields. Read here into the engine's [`KeyCondition`].

use async_graphql::Value;
use async_graphql::dynamic::{Enum, EnumItem, InputObject, InputValue, TypeRef};

use crate::engine::EngineError;
use crate::engine::read::{KeyCondition, KeyField, KeyKind, KeyPart, SortOperand};
use crate::model::ScalarType;

/// The enum of `sortDirection`.
pub(in crate::graphql) const SORT_DIRECTION: &str = "ModelSortDirection";

pub(in crate::graphql) fn sort_direction() -> Enum {
    Enum::new(SORT_DIRECTION)
        .description("The order of a connection: up its sort field (ASC, the default) or down.")
        .item(EnumItem::new("ASC"))
        .item(EnumItem::new("DESC"))
}

/// Every kind of key condition, for registering their inputs.
pub(in crate::graphql) const KINDS: [KeyKind; 4] =
    [KeyKind::Text, KeyKind::Id, KeyKind::Int, KeyKind::Float];

/// The input type of a key condition on a field of `kind`.
pub(in crate::graphql) fn input_name(kind: KeyKind) -> &'static str {
    match kind {
        KeyKind::Text => "ModelStringKeyConditionInput",
        KeyKind::Id => "ModelIDKeyConditionInput",
        KeyKind::Int => "ModelIntKeyConditionInput",
        KeyKind::Float => "ModelFloatKeyConditionInput",
    }
}

/// The input of a key condition on a field of `kind`: one operator. `between`'s elements are
/// nullable in Amplify's API (`amplify`), as its transformer declares them.
pub(in crate::graphql) fn input(kind: KeyKind, amplify: bool) -> InputObject {
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
            InputValue::new(
                "between",
                match amplify {
                    true => TypeRef::named_list(element),
                    false => TypeRef::named_nn_list(element),
                },
            )
            .description("The lowest and the highest value, both included."),
        );
    if matches!(kind, KeyKind::Text | KeyKind::Id) {
        input = input.field(InputValue::new("beginsWith", TypeRef::named(element)));
    }
    input
}

/// Amplify's name of the condition on the composite sort key `key` of `type_name` (an index's
/// name, or `Primary` for the primary key's sort key fields), and of the input of its operands:
/// `Model<Type><Key>CompositeKeyConditionInput`, `Model<Type><Key>CompositeKeyInput`.
pub(in crate::graphql) fn composite_input_names(type_name: &str, key: &str) -> (String, String) {
    let stem = format!(
        "Model{type_name}{}CompositeKey",
        crate::model::upper_first(key)
    );
    (format!("{stem}ConditionInput"), format!("{stem}Input"))
}

/// The inputs of a condition on the composite sort key `key_field` of `type_name`, named by
/// [`composite_input_names`]: the condition's operators, and the key's fields (give the first
/// ones, in order).
pub(in crate::graphql) fn composite_inputs(
    type_name: &str,
    key: &str,
    key_field: &KeyField,
) -> [InputObject; 2] {
    let (condition, operand) = composite_input_names(type_name, key);
    let fields = key_field
        .parts
        .iter()
        .map(|part| part.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut key_input = InputObject::new(&operand).description(format!(
        "Values of the first fields of the sort key ({fields}), in order: a field given needs \
         every field before it."
    ));
    // As Amplify types them, by how they are stored: text (dates, enums and ids too, so that
    // `beginsWith: { placedAt: "2026-03" }` is a valid prefix) or a number.
    for part in &key_field.parts {
        let stored = match part.kind {
            KeyKind::Text | KeyKind::Id => TypeRef::STRING,
            KeyKind::Int => TypeRef::INT,
            KeyKind::Float => TypeRef::FLOAT,
        };
        key_input = key_input.field(InputValue::new(&part.name, TypeRef::named(stored)));
    }
    let condition_input = InputObject::new(&condition)
        .description(format!(
            "A condition on the sort key ({fields}), which bounds the Query that reads it: give \
             one operator. Given fewer fields than the key has, it compares the keys' first \
             fields (eq: every key that starts with them)."
        ))
        .field(InputValue::new("eq", TypeRef::named(&operand)))
        .field(InputValue::new("le", TypeRef::named(&operand)))
        .field(InputValue::new("lt", TypeRef::named(&operand)))
        .field(InputValue::new("ge", TypeRef::named(&operand)))
        .field(InputValue::new("gt", TypeRef::named(&operand)))
        .field(
            InputValue::new("between", TypeRef::named_list(&operand))
                .description("The lowest and the highest key, both included."),
        )
        .field(
            InputValue::new("beginsWith", TypeRef::named(&operand))
                .description("The first fields equal, the last one given starting with its text."),
        );
    [condition_input, key_input]
}

/// The arguments a connection's field takes besides paging and roles: the key condition when
/// `key_field` gives one (of the input `composite` names, for a composite sort key), then
/// `sortDirection`, as Amplify's transformer declares them for a relation or an index query. A
/// sort field named like another argument takes no key condition.
pub(in crate::graphql) fn arguments(
    key_field: Option<&KeyField>,
    composite: Option<&str>,
) -> Vec<InputValue> {
    let mut arguments = condition_arguments(key_field, composite);
    arguments.push(sort_direction_argument());
    arguments
}

/// `sortDirection`.
pub(in crate::graphql) fn sort_direction_argument() -> InputValue {
    InputValue::new("sortDirection", TypeRef::named(SORT_DIRECTION))
        .description("ASC (the default) or DESC.")
}

/// The key condition of [`arguments`], without `sortDirection`.
pub(in crate::graphql) fn condition_arguments(
    key_field: Option<&KeyField>,
    composite: Option<&str>,
) -> Vec<InputValue> {
    let Some(field) = key_field.filter(|f| takes_key_condition(f)) else {
        return Vec::new();
    };
    if !field.parts.is_empty() {
        let Some(input) = composite else {
            return Vec::new();
        };
        let parts: Vec<&str> = field.parts.iter().map(|p| p.name.as_str()).collect();
        return vec![
            InputValue::new(&field.name, TypeRef::named(input)).description(format!(
                "Only the items whose sort key ({}) meets this; the connection is sorted by it.",
                parts.join(", ")
            )),
        ];
    }
    vec![
        InputValue::new(&field.name, TypeRef::named(input_name(field.kind))).description(format!(
            "Only the items whose {} meets this; the connection is sorted by it.",
            field.name
        )),
    ]
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
pub(in crate::graphql) fn descending(value: Option<Value>) -> Result<bool, EngineError> {
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
pub(in crate::graphql) fn key_condition(
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
    let operand = |value: &Value| match field.parts.as_slice() {
        [] => operand(field, value),
        parts => composite_operand(field, parts, value),
    };
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
        "beginsWith" if !field.parts.is_empty() => KeyCondition::BeginsWith(operand(value)?),
        "beginsWith" => match value {
            Value::String(prefix) => KeyCondition::BeginsWith(SortOperand::Text(prefix.clone())),
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
    part_operand(
        &KeyPart {
            name: field.name.clone(),
            kind: field.kind,
            scalar: field.scalar.clone(),
        },
        value,
    )
}

/// The operand of a condition on a composite sort key: the values of its first fields, given
/// without a gap.
fn composite_operand(
    field: &KeyField,
    parts: &[KeyPart],
    value: &Value,
) -> Result<SortOperand, EngineError> {
    let Value::Object(given) = value else {
        return Err(EngineError::bad_input(format!(
            "{}: a key condition's value gives the key's fields ({})",
            field.name,
            names(parts)
        )));
    };
    let mut values = Vec::new();
    for part in parts {
        match given.get(part.name.as_str()) {
            None | Some(Value::Null) => break,
            Some(value) => values.push(part_operand(part, value)?),
        }
    }
    let past = given
        .iter()
        .filter(|(_, value)| **value != Value::Null)
        .any(|(name, _)| {
            !parts[..values.len()]
                .iter()
                .any(|p| p.name == name.as_str())
        });
    if values.is_empty() || past {
        return Err(EngineError::bad_input(format!(
            "{}: give the key's first fields, in order ({}), with no gap",
            field.name,
            names(parts)
        )));
    }
    Ok(SortOperand::Composite(values))
}

fn names(parts: &[KeyPart]) -> String {
    parts
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn part_operand(field: &KeyPart, value: &Value) -> Result<SortOperand, EngineError> {
    let wrong = || {
        EngineError::bad_input(format!(
            "{}: a key condition's value must be of the field's type",
            field.name
        ))
    };
    match (field.kind, value) {
        // An enum's value, as a literal or a variable's text.
        (KeyKind::Text, Value::Enum(name)) if matches!(field.scalar, ScalarType::Enum(_)) => {
            Ok(SortOperand::Text(name.to_string()))
        }
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
