//! Key conditions: the sort field of a sorted connection, list or index as a condition names
//! it ([`KeyField`], one field or a composite sort key's several), and the bounds of the slot
//! sort keys a condition admits.

use super::page_request::{KeyCondition, PageRequest, SortOperand};
use crate::engine::error::EngineError;
use crate::keys;
use crate::model::{Model, ScalarType};
use crate::store::Bound;

/// The field a sorted connection orders by, as a key condition names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyField {
    pub name: String,
    pub kind: KeyKind,
    /// The field's type: a condition's value is stored text of it (`engine::stored_text`).
    pub scalar: ScalarType,
    /// The fields of a composite sort key (Amplify's `sortKeyFields` of two or more), in
    /// order: `name` is then their names run together (`statusCreatedAt`), `kind` and `scalar`
    /// the first's, and a condition's operands are [`SortOperand::Composite`]. Empty for one
    /// field.
    pub parts: Vec<KeyPart>,
}

/// One field of a composite sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPart {
    pub name: String,
    pub kind: KeyKind,
    pub scalar: ScalarType,
}

impl KeyField {
    /// The key field of a connection sorted by `fields`: one field that a key condition can
    /// test, or several (a composite sort key) of text, enums or numbers; `None` otherwise.
    pub fn of(fields: &[(String, ScalarType)]) -> Option<KeyField> {
        match fields {
            [] => None,
            [(name, scalar)] => Some(KeyField {
                kind: KeyKind::of(scalar)?,
                name: name.clone(),
                scalar: scalar.clone(),
                parts: Vec::new(),
            }),
            _ => {
                let parts = fields
                    .iter()
                    .map(|(name, scalar)| {
                        let kind = match scalar {
                            ScalarType::Enum(_) => Some(KeyKind::Text),
                            other => KeyKind::of(other),
                        };
                        Some(KeyPart {
                            name: name.clone(),
                            kind: kind?,
                            scalar: scalar.clone(),
                        })
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(KeyField {
                    name: fields
                        .iter()
                        .enumerate()
                        .map(|(i, (name, _))| match i {
                            0 => name.clone(),
                            _ => crate::model::upper_first(name),
                        })
                        .collect(),
                    kind: parts[0].kind,
                    scalar: parts[0].scalar.clone(),
                    parts,
                })
            }
        }
    }

    /// The key field of an `@index` sorted by `fields`: as [`KeyField::of`], and one enum field
    /// too, compared as text (Amplify's `ModelStringKeyConditionInput`; a ranked enum's values
    /// by rank, as they are stored).
    pub fn of_index(fields: &[(String, ScalarType)]) -> Option<KeyField> {
        match fields {
            [(name, scalar @ ScalarType::Enum(_))] => Some(KeyField {
                kind: KeyKind::Text,
                name: name.clone(),
                scalar: scalar.clone(),
                parts: Vec::new(),
            }),
            _ => KeyField::of(fields),
        }
    }
}

/// How a key condition's values compare: like text (with `beginsWith`), or like numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Text,
    Id,
    Int,
    Float,
}

impl KeyKind {
    /// The kind of key condition a sort field of `scalar` takes; none for booleans and enums
    /// (an edge sorted by an enum has `role` and `minRole`).
    pub fn of(scalar: &ScalarType) -> Option<KeyKind> {
        match scalar {
            ScalarType::Id => Some(KeyKind::Id),
            ScalarType::String
            | ScalarType::AwsDate
            | ScalarType::AwsDateTime
            | ScalarType::AwsTime
            | ScalarType::AwsEmail
            | ScalarType::AwsUrl
            | ScalarType::AwsPhone
            | ScalarType::AwsIpAddress => Some(KeyKind::Text),
            ScalarType::Int | ScalarType::AwsTimestamp => Some(KeyKind::Int),
            ScalarType::Float => Some(KeyKind::Float),
            ScalarType::Boolean | ScalarType::Enum(_) | ScalarType::AwsJson => None,
        }
    }
}

/// The bounds of the slot sort keys (`<sort value>#<id>`) that `page`'s key condition admits
/// (lower, upper) on a connection or list named `name`, sorted by `key_field`: a value's keys
/// lie in [`v#`, `v$`), and a null sort value, which sorts last, meets no condition.
pub(super) fn key_condition_bounds(
    name: &str,
    key_field: Option<&KeyField>,
    page: &PageRequest,
    model: Option<&Model>,
) -> Result<(Option<Bound>, Option<Bound>), EngineError> {
    let Some(condition) = &page.key_condition else {
        return Ok((None, None));
    };
    let Some(field) = key_field else {
        return Err(EngineError::bad_input(format!(
            "{name} is not sorted by a field a key condition can test"
        )));
    };
    let sort = Sorted { name, field, model };
    let range = |operand: &SortOperand| -> Result<(String, String), EngineError> {
        Ok(keys::slot_sort_key_range(&sort.encode(operand)?))
    };
    let null = || Some(Bound::exclusive(keys::NULL_SORT_VALUE));
    Ok(match condition {
        KeyCondition::Eq(value) => {
            let (first, past) = range(value)?;
            (Some(Bound::inclusive(first)), Some(Bound::exclusive(past)))
        }
        KeyCondition::Lt(value) => (None, Some(Bound::exclusive(range(value)?.0))),
        KeyCondition::Le(value) => (None, Some(Bound::exclusive(range(value)?.1))),
        KeyCondition::Gt(value) => (Some(Bound::inclusive(range(value)?.1)), null()),
        KeyCondition::Ge(value) => (Some(Bound::inclusive(range(value)?.0)), null()),
        KeyCondition::Between(low, high) => {
            let (first, _) = range(low)?;
            let (_, past) = range(high)?;
            (Some(Bound::inclusive(first)), Some(Bound::exclusive(past)))
        }
        KeyCondition::BeginsWith(SortOperand::Composite(values)) => sort.begins_with(values)?,
        KeyCondition::BeginsWith(prefix) => {
            let SortOperand::Text(prefix) = prefix else {
                return Err(sort.unfit(&field.name));
            };
            if field.kind != KeyKind::Text && field.kind != KeyKind::Id {
                return Err(EngineError::bad_input(format!(
                    "{}: beginsWith tests text, and {} is a number",
                    name, field.name
                )));
            }
            if ranked(&field.scalar, model) {
                return Err(no_prefix_of_ranked(name, &field.name));
            }
            // Every encoded text that starts with the prefix's encoding, up to the null
            // sort value (exclusive), which no text reaches.
            let start = keys::encode_sort_value(keys::SortInput::Text(prefix));
            let past = format!("{start}{}", keys::NULL_SORT_VALUE);
            (Some(Bound::inclusive(start)), Some(Bound::exclusive(past)))
        }
    })
}

/// Whether `scalar` is an enum of `model` that is ranked: its values sort by rank, so no text
/// prefix finds them.
fn ranked(scalar: &ScalarType, model: Option<&Model>) -> bool {
    match (scalar, model) {
        (ScalarType::Enum(name), Some(model)) => {
            model.enum_def(name).is_some_and(|e| e.is_ranked())
        }
        _ => false,
    }
}

/// The refusal of a `beginsWith` on `field`, a ranked enum, of the connection `name`.
fn no_prefix_of_ranked(name: &str, field: &str) -> EngineError {
    EngineError::bad_input(format!(
        "{name}: beginsWith does not test {field}, a ranked enum; give its whole value with eq"
    ))
}

/// The sort field of the connection or list `name` a key condition tests, with the model
/// whose enums' ranks sort their values.
struct Sorted<'a> {
    name: &'a str,
    field: &'a KeyField,
    model: Option<&'a Model>,
}

impl Sorted<'_> {
    fn unfit(&self, part: &str) -> EngineError {
        EngineError::bad_input(format!(
            "{}: the key condition's value does not fit the type of {part}",
            self.name
        ))
    }

    /// The sort value of `operand` given for the key's `part` (of `kind` and `scalar`).
    fn encode_one(
        &self,
        (kind, scalar, part): (KeyKind, &ScalarType, &str),
        operand: &SortOperand,
    ) -> Result<String, EngineError> {
        let input = match (kind, operand) {
            (KeyKind::Text | KeyKind::Id, SortOperand::Text(text)) => {
                // An enum's value sorts by its rank where it has one, as it is stored.
                if let (ScalarType::Enum(enum_name), Some(model)) = (scalar, self.model) {
                    return Ok(keys::enum_sort_value(model, enum_name, text));
                }
                keys::SortInput::Text(text)
            }
            (KeyKind::Int, SortOperand::Int(n)) => keys::SortInput::Int(*n),
            (KeyKind::Float, SortOperand::Float(bits)) => {
                keys::SortInput::Float(f64::from_bits(*bits))
            }
            (KeyKind::Float, SortOperand::Int(n)) => keys::SortInput::Float(*n as f64),
            _ => return Err(self.unfit(part)),
        };
        Ok(keys::encode_sort_value(input))
    }

    /// The sort value of `operand`. A composite operand gives the first fields of the key, in
    /// order: their encodings joined as the key joins them, so that its range holds every key
    /// that starts with them.
    fn encode(&self, operand: &SortOperand) -> Result<String, EngineError> {
        let field = self.field;
        match (operand, field.parts.as_slice()) {
            (SortOperand::Composite(values), parts) if !parts.is_empty() => {
                if values.is_empty() || values.len() > parts.len() {
                    return Err(self.unfit(&field.name));
                }
                let encoded = values
                    .iter()
                    .zip(parts)
                    .map(|(value, part)| {
                        self.encode_one((part.kind, &part.scalar, &part.name), value)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(encoded.join("#"))
            }
            (SortOperand::Composite(_), _) => Err(self.unfit(&field.name)),
            (operand, []) => self.encode_one((field.kind, &field.scalar, &field.name), operand),
            (_, _) => Err(self.unfit(&field.name)),
        }
    }

    /// The bounds of a composite `beginsWith`: the first fields equal, the last given one
    /// starting with its value when it is text (a number is equal, as in `eq`).
    fn begins_with(
        &self,
        values: &[SortOperand],
    ) -> Result<(Option<Bound>, Option<Bound>), EngineError> {
        let Some((last, first)) = values.split_last() else {
            return Err(self.unfit(&self.field.name));
        };
        let part = self
            .field
            .parts
            .get(first.len())
            .ok_or_else(|| self.unfit(&self.field.name))?;
        Ok(match (part.kind, last) {
            (KeyKind::Text | KeyKind::Id, SortOperand::Text(_))
                if ranked(&part.scalar, self.model) =>
            {
                return Err(no_prefix_of_ranked(self.name, &part.name));
            }
            (KeyKind::Text | KeyKind::Id, SortOperand::Text(prefix)) => {
                let head = match first.is_empty() {
                    true => String::new(),
                    false => format!("{}#", self.encode(&SortOperand::Composite(first.to_vec()))?),
                };
                let start = format!(
                    "{head}{}",
                    keys::encode_sort_value(keys::SortInput::Text(prefix))
                );
                let past = format!("{start}{}", keys::NULL_SORT_VALUE);
                (Some(Bound::inclusive(start)), Some(Bound::exclusive(past)))
            }
            _ => {
                let (first, past) = keys::slot_sort_key_range(
                    &self.encode(&SortOperand::Composite(values.to_vec()))?,
                );
                (Some(Bound::inclusive(first)), Some(Bound::exclusive(past)))
            }
        })
    }
}
