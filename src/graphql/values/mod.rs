//! Field values between GraphQL and stored items: a stored attribute as the GraphQL value of a
//! field, and a client's value as a stored attribute.

pub(in crate::graphql) mod filters;
pub(in crate::graphql) mod key_conditions;
pub(in crate::graphql) mod scalars;

use async_graphql::{Name, Value};

use crate::engine::AttrValue;
use crate::engine::EngineError;
use crate::model::ScalarType;

/// A stored attribute as the GraphQL value of a field of type `scalar`.
pub(in crate::graphql) fn to_graphql(
    value: Option<&AttrValue>,
    scalar: &ScalarType,
) -> Option<Value> {
    match (value?, scalar) {
        (AttrValue::S(s), ScalarType::Enum(_)) => Some(Value::Enum(Name::new(s))),
        (AttrValue::S(s), _) => Some(Value::String(s.clone())),
        (AttrValue::N(n), ScalarType::Float) => n
            .parse::<f64>()
            .ok()
            .and_then(async_graphql::Number::from_f64)
            .map(Value::Number),
        (AttrValue::N(n), _) => n.parse::<i64>().ok().map(|n| Value::Number(n.into())),
        (AttrValue::Bool(b), _) => Some(Value::Boolean(*b)),
        _ => None,
    }
}

/// A client's value for `Type.field` as a stored attribute; `None` for null.
pub(in crate::graphql) fn from_input(
    value: &Value,
    scalar: &ScalarType,
    field: &str,
) -> Result<Option<AttrValue>, EngineError> {
    let attribute = match (value, scalar) {
        (Value::Null, _) => return Ok(None),
        (Value::String(id), ScalarType::Id) => {
            crate::engine::ids::check_id(field, id)?;
            AttrValue::S(id.clone())
        }
        (Value::String(s), _) => AttrValue::S(
            crate::engine::formats::stored_text(scalar, s)
                .map_err(|e| EngineError::bad_input(format!("{field}: {e}")))?
                .into_owned(),
        ),
        (Value::Enum(name), _) => AttrValue::S(name.to_string()),
        (Value::Number(n), _) => {
            // DynamoDB's range: magnitudes from 1e-130 to below 1e126, or zero.
            let value = n.as_f64().unwrap_or_default();
            if value != 0.0 && !(1e-130..1e126).contains(&value.abs()) {
                return Err(EngineError::bad_input(format!(
                    "{field}: {n} is outside the numbers DynamoDB stores (magnitudes from \
                     1e-130 to below 1e126)"
                )));
            }
            AttrValue::N(n.to_string())
        }
        (Value::Boolean(b), _) => AttrValue::Bool(*b),
        _ => return Err(EngineError::bad_input(format!("{field}: unexpected value"))),
    };
    Ok(Some(attribute))
}

/// A stored list as the GraphQL value of a field holding a list of `scalar`.
pub(in crate::graphql) fn list_to_graphql(
    value: Option<&AttrValue>,
    scalar: &ScalarType,
) -> Option<Value> {
    match value? {
        AttrValue::L(values) => Some(Value::List(
            values
                .iter()
                .map(|value| to_graphql(Some(value), scalar).unwrap_or(Value::Null))
                .collect(),
        )),
        _ => None,
    }
}

/// A client's list for a field holding a list of `scalar`, as a stored list; `None` for null.
pub(in crate::graphql) fn list_from_input(
    value: &Value,
    scalar: &ScalarType,
    field: &str,
) -> Result<Option<AttrValue>, EngineError> {
    let values = match value {
        Value::Null => return Ok(None),
        Value::List(values) => values.as_slice(),
        // GraphQL's input coercion: one value where a list is expected is a list of one.
        other => std::slice::from_ref(other),
    };
    let mut list = Vec::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        let item = from_input(value, scalar, &format!("{field}[{index}]"))?;
        // The library answers an enum's null only as a whole field, never as an item of a
        // list: a list of enum values holds values only.
        if item.is_none() && matches!(scalar, ScalarType::Enum(_)) {
            return Err(EngineError::bad_input(format!(
                "{field}[{index}]: a list of enum values holds no null"
            )));
        }
        list.push(item.unwrap_or(AttrValue::Null));
    }
    Ok(Some(AttrValue::L(list)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_as_their_graphql_type() {
        assert_eq!(
            to_graphql(Some(&AttrValue::N("3".into())), &ScalarType::Int),
            Some(Value::Number(3.into()))
        );
        assert_eq!(
            to_graphql(
                Some(&AttrValue::S("LEAD".into())),
                &ScalarType::Enum("Role".into())
            ),
            Some(Value::Enum(Name::new("LEAD")))
        );
        assert_eq!(to_graphql(None, &ScalarType::String), None);
    }

    #[test]
    fn a_number_dynamodb_cannot_store_is_bad_input() {
        let number = |n: f64| Value::Number(async_graphql::Number::from_f64(n).expect("finite"));
        for n in [1e300, -1e126, 1e-200] {
            let error = from_input(&number(n), &ScalarType::Float, "rating").expect_err("refused");
            assert_eq!(error.error_type(), "BadUserInput");
        }
        for n in [0.0, 2.5, -1e125, 1e-129] {
            assert!(
                from_input(&number(n), &ScalarType::Float, "rating").is_ok(),
                "{n}"
            );
        }
    }
}
