//! Field values between GraphQL and stored items: reading attributes as GraphQL values, checking
//! input values against the limits of keys and items, and computing relation slot attributes.

use async_graphql::{Name, Value};

use super::ApiError;
use crate::keys::{self, SortInput};
use crate::model::{Model, ScalarType, TypeDef};
use crate::store::{AttrValue, Item, MAX_ITEM_BYTES, item_size};

use crate::keys::MAX_SORT_KEY_BYTES;
/// The longest sort value that still leaves room for `#<id>` in a slot sort key.
pub const MAX_SORT_VALUE_BYTES: usize = MAX_SORT_KEY_BYTES - 1 - keys::MAX_ID_LEN;

/// A stored attribute as the GraphQL value of a field of type `scalar`.
pub fn to_graphql(value: Option<&AttrValue>, scalar: &ScalarType) -> Option<Value> {
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
pub fn from_input(
    value: &Value,
    scalar: &ScalarType,
    field: &str,
) -> Result<Option<AttrValue>, ApiError> {
    let attribute = match (value, scalar) {
        (Value::Null, _) => return Ok(None),
        (Value::String(id), ScalarType::Id) => {
            keys::validate_id(id).map_err(|e| ApiError::bad_input(format!("{field}: {e}")))?;
            AttrValue::S(id.clone())
        }
        (Value::String(s), _) => AttrValue::S(s.clone()),
        (Value::Enum(name), _) => AttrValue::S(name.to_string()),
        (Value::Number(n), _) => AttrValue::N(n.to_string()),
        (Value::Boolean(b), _) => AttrValue::Bool(*b),
        _ => return Err(ApiError::bad_input(format!("{field}: unexpected value"))),
    };
    Ok(Some(attribute))
}

/// The text a unique field's value is reserved by (before normalization).
pub fn unique_text(value: &AttrValue) -> String {
    match value {
        AttrValue::S(s) | AttrValue::N(s) => s.clone(),
        _ => String::new(),
    }
}

/// The sort value of `item` by `field` (of type `scalar`); a missing value sorts last, and a
/// value of a ranked enum sorts by its rank.
pub fn sort_value(model: &Model, item: &Item, field: &str, scalar: &ScalarType) -> String {
    let input = match (item.get(field), scalar) {
        (None | Some(AttrValue::Null), _) => SortInput::Null,
        (Some(AttrValue::S(name)), ScalarType::Enum(enum_name)) => {
            return enum_sort_value(model, enum_name, name);
        }
        (Some(AttrValue::N(n)), ScalarType::Float) => {
            n.parse().map_or(SortInput::Null, SortInput::Float)
        }
        (Some(AttrValue::N(n)), _) => n.parse().map_or(SortInput::Null, SortInput::Int),
        (Some(AttrValue::Bool(b)), _) => SortInput::Bool(*b),
        (Some(AttrValue::S(s)), _) => SortInput::Text(s),
        (Some(_), _) => SortInput::Null,
    };
    keys::encode_sort_value(input)
}

/// The sort value of one value of an enum: `500-LEAD` when the enum is ranked, else its name,
/// compared case-insensitively like any text.
pub fn enum_sort_value(model: &Model, enum_name: &str, value: &str) -> String {
    let input = match model.rank_of(enum_name, value) {
        Some(rank) => SortInput::Ranked { rank, name: value },
        None => SortInput::Text(value),
    };
    keys::encode_sort_value(input)
}

/// Sets the relation slot attributes `PKnn`/`SKnn` of a node item from its fields, removing
/// those of slots whose foreign key is now null (the indexes are sparse).
pub fn set_slot_attributes(model: &Model, type_def: &TypeDef, item: &mut Item) {
    let id = item
        .get("id")
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
        .to_owned();
    for slot in &type_def.slots {
        let pk = keys::slot_partition_attribute(slot.slot);
        let sk = keys::slot_sort_attribute(slot.slot);
        let parent = item
            .get(&slot.foreign_key)
            .and_then(AttrValue::as_str)
            .map(str::to_owned);
        match parent {
            Some(parent) => {
                let sort = slot.sort_by.as_ref().map(|field| {
                    let scalar = type_def
                        .field(field)
                        .and_then(|f| f.scalar())
                        .expect("the model checked that sortBy names a scalar field");
                    sort_value(model, item, field, scalar)
                });
                item.insert(
                    pk,
                    AttrValue::S(keys::slot_partition(&slot.element, &parent)),
                );
                item.insert(sk, AttrValue::S(keys::slot_sort_key(sort.as_deref(), &id)));
            }
            None => {
                item.remove(&pk);
                item.remove(&sk);
            }
        }
    }
}

/// Checks what DynamoDB would refuse, before anything is written: unique values that are empty
/// or too long for a key, sort values too long for a sort key, and items over 400 KB.
pub fn check_limits(type_def: &TypeDef, item: &Item) -> Result<(), ApiError> {
    for field in type_def.unique_fields() {
        if let Some(AttrValue::S(value)) = item.get(&field.name) {
            if keys::normalize_unique(value).is_empty() {
                return Err(ApiError::bad_input(format!(
                    "{}.{} must not be empty",
                    type_def.name, field.name
                )));
            }
            if keys::unique_key(&type_def.name, &field.name, value).len() > MAX_SORT_KEY_BYTES {
                return Err(ApiError::bad_input(format!(
                    "{}.{} is too long: a unique value may have at most {} bytes",
                    type_def.name,
                    field.name,
                    MAX_SORT_KEY_BYTES - type_def.name.len() - field.name.len() - 2
                )));
            }
        }
    }
    for slot in &type_def.slots {
        let Some(sort_by) = &slot.sort_by else {
            continue;
        };
        let Some(AttrValue::S(sk)) = item.get(&keys::slot_sort_attribute(slot.slot)) else {
            continue;
        };
        if sk.len() > MAX_SORT_KEY_BYTES {
            return Err(ApiError::bad_input(format!(
                "{}.{sort_by} is too long to sort by: at most {MAX_SORT_VALUE_BYTES} bytes",
                type_def.name
            )));
        }
    }
    let size = item_size(item);
    if size > MAX_ITEM_BYTES {
        return Err(ApiError::bad_input(format!(
            "the {} would take {size} bytes; DynamoDB limits an item to {MAX_ITEM_BYTES} bytes",
            type_def.name
        )));
    }
    Ok(())
}

/// Validates an `AWSDate` literal: `YYYY-MM-DD`.
pub fn is_aws_date(value: &Value) -> bool {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    matches!(value, Value::String(s) if time::Date::parse(s, &format).is_ok())
}

/// Validates an `AWSDateTime` literal: RFC 3339.
pub fn is_aws_date_time(value: &Value) -> bool {
    matches!(value, Value::String(s)
        if time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok())
}

/// Validates an `AWSEmail` literal: one `@` with text on both sides and no spaces.
pub fn is_aws_email(value: &Value) -> bool {
    matches!(value, Value::String(s) if s.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && domain.contains('.') && !s.contains(char::is_whitespace) && !domain.contains('@')
    }))
}

/// The current time as an `AWSDateTime`.
pub fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .expect("formatting the current UTC time as RFC 3339 cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_scalars_are_checked() {
        let s = |v: &str| Value::String(v.to_owned());
        assert!(is_aws_date(&s("2024-02-29")));
        assert!(!is_aws_date(&s("2023-02-29")));
        assert!(!is_aws_date(&s("yesterday")));
        assert!(is_aws_date_time(&s("2024-02-29T10:00:00Z")));
        assert!(!is_aws_date_time(&s("2024-02-29")));
        assert!(is_aws_email(&s("ann@example.com")));
        assert!(!is_aws_email(&s("ann at example.com")));
        assert!(!is_aws_email(&s("@example.com")));
    }

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
}
