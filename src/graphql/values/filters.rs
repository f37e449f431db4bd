//! Filter and condition inputs with AppSync's and Amplify's operators, and the engine's
//! [`Filter`] they make: `ModelSubscription<Type>FilterInput` for subscriptions and
//! `Model<Type>ConditionInput` for the conditions of updates and deletes, over per-field inputs
//! named as Amplify names them (`ModelSubscriptionStringInput`, `ModelStringInput`, …).

use async_graphql::Value;
use async_graphql::dynamic::{Enum, EnumItem, InputObject, InputValue, SchemaBuilder, TypeRef};

use super::from_input;
use crate::engine::EngineError;
use crate::engine::read::{Filter, Test};
use crate::engine::{AttrValue, DELETED};
use crate::model::{Dialect, EdgeTypeDef, FieldDef, FieldKind, Model, ScalarType, TypeDef};

/// How the API names and shapes its per-field inputs: Amplify's (`amplify`) gives an enum
/// field `Model<Enum>Input` (so a filter takes the enum's literals), declares every scalar's
/// input whether a field uses it or not, and types owner fields `ModelStringInput` in
/// subscription filters, as its transformer does; without tablegraph's additions (`sets`),
/// `in`/`notIn` are left to subscriptions, as AppSync does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::graphql) struct Style {
    amplify: bool,
    sets: bool,
}

impl Style {
    pub(in crate::graphql) fn of(dialect: &Dialect) -> Style {
        Style {
            amplify: dialect.amplify_shape(),
            sets: dialect.additions(),
        }
    }
}

/// Which family of inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::graphql) enum FilterKind {
    /// AppSync's enhanced subscription filters: `and`/`or`, no `attributeExists`.
    Subscription,
    /// Amplify's conditions: `and`/`or`/`not` and `attributeExists` too.
    Condition,
}

impl FilterKind {
    fn prefix(self) -> &'static str {
        match self {
            FilterKind::Subscription => "ModelSubscription",
            FilterKind::Condition => "Model",
        }
    }
}

/// The kinds of filtered field: the input's name after the prefix, its element type, and
/// whether its values order and contain like strings or only like numbers or booleans.
const FIELD_INPUTS: [(&str, &str, Operators); 5] = [
    ("StringInput", TypeRef::STRING, Operators::All),
    ("IDInput", TypeRef::ID, Operators::All),
    ("IntInput", TypeRef::INT, Operators::Numbers),
    ("FloatInput", TypeRef::FLOAT, Operators::Numbers),
    ("BooleanInput", TypeRef::BOOLEAN, Operators::Equality),
];

#[derive(Debug, Clone, Copy)]
enum Operators {
    All,
    Numbers,
    Equality,
}

impl Operators {
    fn names(self) -> &'static [&'static str] {
        match self {
            Operators::All => &[
                "eq",
                "ne",
                "lt",
                "le",
                "gt",
                "ge",
                "contains",
                "notContains",
                "beginsWith",
                "in",
                "notIn",
                "between",
            ],
            Operators::Numbers => &["eq", "ne", "lt", "le", "gt", "ge", "in", "notIn", "between"],
            Operators::Equality => &["eq", "ne"],
        }
    }
}

/// The fields `type_def`'s owner rules name.
pub(in crate::graphql) fn owner_fields(type_def: &TypeDef) -> Vec<String> {
    let mut owners: Vec<String> = Vec::new();
    for rule in &type_def.auth {
        if let crate::model::Allow::Owner { field, .. } = &rule.allow
            && !owners.contains(field)
        {
            owners.push(field.clone());
        }
    }
    owners
}

/// The fields a condition on `type_def` tests: its scalar fields, its lists of scalars (by
/// their elements: `contains` tests membership) and the times; and `id` when an owner rule
/// names it (Amplify's `ownerField: "id"`), as Amplify's transformer adds it.
pub(in crate::graphql) fn condition_fields(type_def: &TypeDef) -> Vec<(String, ScalarType)> {
    let mut fields = Vec::new();
    if owner_fields(type_def).iter().any(|field| field == "id") {
        fields.push(("id".to_owned(), ScalarType::String));
    }
    for field in &type_def.fields {
        match &field.kind {
            FieldKind::Scalar { scalar, .. } => fields.push((field.name.clone(), scalar.clone())),
            FieldKind::ScalarList { scalar, .. } if !matches!(scalar, ScalarType::Enum(_)) => {
                fields.push((field.name.clone(), scalar.clone()));
            }
            _ => {}
        }
    }
    let times = &type_def.timestamps;
    for name in [&times.created, &times.updated].into_iter().flatten() {
        fields.push((name.clone(), ScalarType::AwsDateTime));
    }
    // A type that detects conflicts is filtered on its tombstones too.
    if type_def.conflict.is_some() {
        fields.push((DELETED.to_owned(), ScalarType::Boolean));
    }
    fields
}

/// The fields a page's filter on nodes of `type_def` tests: its id, its scalar fields and the
/// times.
pub(in crate::graphql) fn node_filter_fields(type_def: &TypeDef) -> Vec<(String, ScalarType)> {
    let mut fields = vec![("id".to_owned(), ScalarType::Id)];
    fields.extend(
        condition_fields(type_def)
            .into_iter()
            .filter(|(name, _)| name != "id"),
    );
    fields
}

/// Of `fields` (those of [`condition_fields`] or [`node_filter_fields`]), the ones the API's
/// input for `type_def` declares. In Amplify's API conditions (`condition`) leave out the
/// primary key's fields; transformer v1's filters test what the schema declares (not the times,
/// owner fields or relation keys it adds), and its conditions leave out the fields rules name,
/// owners and groups, too; nor does either test conflict detection's `_deleted`.
pub(in crate::graphql) fn declared_fields(
    mut fields: Vec<(String, ScalarType)>,
    type_def: &TypeDef,
    dialect: &Dialect,
    condition: bool,
) -> Vec<(String, ScalarType)> {
    // Amplify's conditions leave out the primary key's fields: they name the node.
    if condition && dialect.amplify_shape() {
        let key: Vec<&String> = type_def
            .primary_key
            .iter()
            .chain(&type_def.primary_sort)
            .map(|(name, _)| name)
            .collect();
        fields.retain(|(name, _)| !key.contains(&name));
    }
    if !dialect.v1_api() {
        return fields;
    }
    let times = &type_def.timestamps;
    let undeclared_time = |name: &str| {
        [&times.created, &times.updated]
            .into_iter()
            .flatten()
            .any(|time| time == name && times.declared(name).is_none())
    };
    let ruled = ruled_fields(type_def);
    fields.retain(|(name, _)| {
        !(undeclared_time(name)
            || name == DELETED
            || type_def.implied.contains(name)
            || type_def.added.contains(name)
            || (condition && ruled.contains(name)))
    });
    fields
}

/// The fields `type_def`'s owner and group rules name.
fn ruled_fields(type_def: &TypeDef) -> Vec<String> {
    let mut ruled = owner_fields(type_def);
    for rule in &type_def.auth {
        if let crate::model::Allow::GroupsField { field, .. } = &rule.allow {
            ruled.push(field.clone());
        }
    }
    ruled
}

/// The fields a page's filter on edges of `edge_def` tests: its own fields and `createdAt`.
pub(in crate::graphql) fn edge_filter_fields(edge_def: &EdgeTypeDef) -> Vec<(String, ScalarType)> {
    let mut fields = Vec::new();
    for field in &edge_def.fields {
        if let FieldKind::Scalar { scalar, .. } = &field.kind {
            fields.push((field.name.clone(), scalar.clone()));
        }
    }
    fields.push(("createdAt".to_owned(), ScalarType::AwsDateTime));
    fields
}

/// The name of the filter input of pages of `name`'s nodes or edges (`ModelFarmFilterInput`).
pub(in crate::graphql) fn page_filter_name(name: &str) -> String {
    format!("Model{name}FilterInput")
}

/// The filter a page of `field` (a connection of `model`) takes: its input's name and the
/// fields it tests. A `@hasMany` of a union takes none.
pub(in crate::graphql) fn connection_filter(
    field: &FieldDef,
    model: &Model,
) -> Option<(String, Vec<(String, ScalarType)>)> {
    match &field.kind {
        FieldKind::HasMany(has_many) => {
            let element = model.type_def(&has_many.element)?;
            Some((page_filter_name(&element.name), node_filter_fields(element)))
        }
        FieldKind::Outgoing { edge, .. } | FieldKind::Incoming { edge, .. } => {
            let edge_def = model.edge_def(edge)?;
            Some((
                page_filter_name(&edge_def.name),
                edge_filter_fields(edge_def),
            ))
        }
        _ => None,
    }
}

/// The name of the input that filters a field holding `scalar`.
pub(in crate::graphql) fn field_input(
    kind: FilterKind,
    scalar: &ScalarType,
    style: Style,
) -> String {
    let name = match scalar {
        ScalarType::Enum(name) if style.amplify && kind == FilterKind::Condition => {
            return format!("Model{name}Input");
        }
        ScalarType::Id => "IDInput",
        ScalarType::Int | ScalarType::AwsTimestamp => "IntInput",
        ScalarType::Float => "FloatInput",
        ScalarType::Boolean => "BooleanInput",
        _ => "StringInput",
    };
    format!("{}{name}", kind.prefix())
}

/// Registers the per-field inputs of `kind` that a field of `filtered` needs (only those, so
/// that the schema holds no type nothing uses, and `tablegraph schema` prints what
/// introspection shows).
pub(in crate::graphql) fn register_field_inputs<'a>(
    mut builder: SchemaBuilder,
    kind: FilterKind,
    filtered: impl IntoIterator<Item = &'a ScalarType>,
    style: Style,
) -> SchemaBuilder {
    let filtered: Vec<&ScalarType> = filtered.into_iter().collect();
    let used: Vec<String> = filtered
        .iter()
        .map(|scalar| field_input(kind, scalar, style))
        .collect();
    builder = register_enum_inputs(builder, &filtered, &used);
    for (name, element, operators) in FIELD_INPUTS {
        let name = format!("{}{name}", kind.prefix());
        if !used.contains(&name) && !style.amplify {
            continue;
        }
        let mut input = InputObject::new(name);
        let sets = style.sets || kind == FilterKind::Subscription;
        for operator in operators
            .names()
            .iter()
            .filter(|operator| sets || !matches!(**operator, "in" | "notIn"))
        {
            let ty = match *operator {
                "in" | "notIn" | "between" => TypeRef::named_list(element),
                _ => TypeRef::named(element),
            };
            input = input.field(InputValue::new(*operator, ty));
        }
        if kind == FilterKind::Condition {
            input = input
                .field(
                    InputValue::new("attributeExists", TypeRef::named(TypeRef::BOOLEAN))
                        .description("Whether the stored node has the field (true) or lacks it."),
                )
                .field(
                    InputValue::new("attributeType", TypeRef::named(ATTRIBUTE_TYPES))
                        .description("The stored value's DynamoDB type."),
                );
            if matches!(operators, Operators::All) {
                input = input.field(
                    InputValue::new("size", TypeRef::named(SIZE_INPUT)).description(
                        "A condition on the value's length (in UTF-16 code units, as DynamoDB \
                         counts it).",
                    ),
                );
            }
        }
        builder = builder.register(input);
    }
    if kind == FilterKind::Condition && (!used.is_empty() || style.amplify) {
        let mut size = InputObject::new(SIZE_INPUT);
        for operator in SIZE_OPERATORS {
            let ty = match operator {
                "between" => TypeRef::named_list(TypeRef::INT),
                _ => TypeRef::named(TypeRef::INT),
            };
            size = size.field(InputValue::new(operator, ty));
        }
        let mut types = Enum::new(ATTRIBUTE_TYPES)
            .description("DynamoDB's types of a stored value, as Amplify names them.");
        for (name, _) in TYPE_CODES {
            types = types.item(EnumItem::new(name));
        }
        builder = builder.register(size).register(types);
    }
    builder
}

/// Amplify's `Model<Enum>Input { eq ne }` of each enum in `used`.
fn register_enum_inputs(
    mut builder: SchemaBuilder,
    filtered: &[&ScalarType],
    used: &[String],
) -> SchemaBuilder {
    let mut registered: Vec<&str> = Vec::new();
    for scalar in filtered {
        let ScalarType::Enum(name) = scalar else {
            continue;
        };
        let input = format!("Model{name}Input");
        if registered.contains(&name.as_str()) || !used.contains(&input) {
            continue;
        }
        registered.push(name);
        builder = builder.register(
            InputObject::new(input)
                .field(InputValue::new("eq", TypeRef::named(name)))
                .field(InputValue::new("ne", TypeRef::named(name))),
        );
    }
    builder
}

/// Amplify's input of `size`, and its operators.
const SIZE_INPUT: &str = "ModelSizeInput";
const SIZE_OPERATORS: [&str; 7] = ["ne", "eq", "le", "lt", "ge", "gt", "between"];

/// Amplify's enum of `attributeType`, and DynamoDB's name of each of its values.
const ATTRIBUTE_TYPES: &str = "ModelAttributeTypes";
const TYPE_CODES: [(&str, &str); 10] = [
    ("binary", "B"),
    ("binarySet", "BS"),
    ("bool", "BOOL"),
    ("list", "L"),
    ("map", "M"),
    ("number", "N"),
    ("numberSet", "NS"),
    ("string", "S"),
    ("stringSet", "SS"),
    ("_null", "NULL"),
];

/// The input `name` over `fields`, with `and`/`or` (and `not` for conditions). In Amplify's
/// API, the `owners` fields (those owner rules name) take `ModelStringInput` in a
/// subscription's filter too, as Amplify's transformer declares them.
pub(in crate::graphql) fn filter_input(
    name: &str,
    fields: &[(String, ScalarType)],
    kind: FilterKind,
    style: Style,
    owners: &[String],
) -> InputObject {
    let mut input = InputObject::new(name)
        .field(InputValue::new("and", TypeRef::named_list(name)))
        .field(InputValue::new("or", TypeRef::named_list(name)));
    if kind == FilterKind::Condition {
        input = input.field(InputValue::new("not", TypeRef::named(name)));
    }
    for (field, scalar) in fields {
        input = input.field(InputValue::new(
            field,
            TypeRef::named(match style.amplify && owners.contains(field) {
                true => field_input(FilterKind::Condition, &ScalarType::String, style),
                // Amplify's subscription filters test `_deleted` as its filters do.
                false if field == DELETED => field_input(FilterKind::Condition, scalar, style),
                false => field_input(kind, scalar, style),
            }),
        ));
    }
    input
}

/// The engine's filter of a filter or condition value over `fields`; `argument` names it in
/// errors.
pub(in crate::graphql) fn filter_of(
    value: &Value,
    fields: &[(String, ScalarType)],
    argument: &str,
) -> Result<Filter, EngineError> {
    let Value::Object(members) = value else {
        return Ok(Filter::All(Vec::new()));
    };
    let mut all = Vec::new();
    for (name, value) in members {
        match (name.as_str(), value) {
            (_, Value::Null) => {}
            ("and" | "or", Value::List(filters)) => {
                let filters = filters
                    .iter()
                    .map(|filter| filter_of(filter, fields, argument))
                    .collect::<Result<Vec<_>, _>>()?;
                all.push(if name.as_str() == "and" {
                    Filter::All(filters)
                } else {
                    Filter::Any(filters)
                });
            }
            ("not", value @ Value::Object(_)) => {
                all.push(Filter::Not(Box::new(filter_of(value, fields, argument)?)));
            }
            (field, Value::Object(operators)) => {
                let Some((_, scalar)) = fields.iter().find(|(name, _)| name == field) else {
                    return Err(EngineError::bad_input(format!(
                        "{argument}: no field {field}"
                    )));
                };
                for (operator, operand) in operators {
                    let at = format!("{argument}.{field}.{operator}");
                    for test in tests_of(&at, operator.as_str(), operand, scalar)? {
                        all.push(Filter::Field {
                            field: field.to_owned(),
                            test,
                        });
                    }
                }
            }
            (field, _) => {
                return Err(EngineError::bad_input(format!(
                    "{argument}.{field}: expected an object of operators"
                )));
            }
        }
    }
    Ok(Filter::All(all))
}

/// The tests of one operator: `size`'s each of its own.
fn tests_of(
    at: &str,
    operator: &str,
    operand: &Value,
    scalar: &ScalarType,
) -> Result<Vec<Test>, EngineError> {
    if operator != "size" {
        return Ok(test_of(at, operator, operand, scalar)?
            .into_iter()
            .collect());
    }
    let operators = match operand {
        Value::Null => return Ok(Vec::new()),
        Value::Object(operators) => operators,
        _ => {
            return Err(EngineError::bad_input(format!(
                "{at}: expected an object of operators"
            )));
        }
    };
    let mut tests = Vec::new();
    for (operator, operand) in operators {
        let at = format!("{at}.{operator}");
        if !SIZE_OPERATORS.contains(&operator.as_str()) {
            return Err(EngineError::bad_input(format!("{at}: unknown operator")));
        }
        if let Some(test) = test_of(&at, operator.as_str(), operand, &ScalarType::Int)? {
            tests.push(Test::Size(Box::new(test)));
        }
    }
    Ok(tests)
}

fn test_of(
    at: &str,
    operator: &str,
    operand: &Value,
    scalar: &ScalarType,
) -> Result<Option<Test>, EngineError> {
    let one = |value: &Value| -> Result<AttrValue, EngineError> {
        // An id operand is compared, not stored: `beginsWith`/`contains` take parts of ids,
        // which need not be valid ids themselves.
        let scalar = match scalar {
            ScalarType::Id => &ScalarType::String,
            other => other,
        };
        from_input(value, scalar, at)?
            .ok_or_else(|| EngineError::bad_input(format!("{at}: null is no value to compare")))
    };
    let many = |value: &Value| -> Result<Vec<AttrValue>, EngineError> {
        match value {
            Value::List(values) => values.iter().map(one).collect(),
            _ => Err(EngineError::bad_input(format!("{at}: expected a list"))),
        }
    };
    if operand == &Value::Null {
        return Ok(None);
    }
    Ok(Some(match operator {
        "eq" => Test::Eq(one(operand)?),
        "ne" => Test::Ne(one(operand)?),
        "lt" => Test::Lt(one(operand)?),
        "le" => Test::Le(one(operand)?),
        "gt" => Test::Gt(one(operand)?),
        "ge" => Test::Ge(one(operand)?),
        "contains" => Test::Contains(one(operand)?),
        "notContains" => Test::NotContains(one(operand)?),
        "beginsWith" => match operand {
            Value::String(prefix) => Test::BeginsWith(prefix.clone()),
            _ => return Err(EngineError::bad_input(format!("{at}: expected a string"))),
        },
        "in" => Test::In(many(operand)?),
        "notIn" => Test::NotIn(many(operand)?),
        "between" => match many(operand)?.as_slice() {
            [low, high] => Test::Between(low.clone(), high.clone()),
            _ => {
                return Err(EngineError::bad_input(format!(
                    "{at}: expected two values, the lower and the upper bound"
                )));
            }
        },
        "attributeExists" => match operand {
            Value::Boolean(exists) => Test::Exists(*exists),
            _ => return Err(EngineError::bad_input(format!("{at}: expected a boolean"))),
        },
        "attributeType" => {
            let name = match operand {
                Value::Enum(name) => name.as_str(),
                Value::String(name) => name.as_str(),
                _ => "",
            };
            let (_, code) = TYPE_CODES
                .iter()
                .find(|(known, _)| *known == name)
                .ok_or_else(|| {
                    EngineError::bad_input(format!("{at}: {name:?} is no {ATTRIBUTE_TYPES}"))
                })?;
            Test::Type((*code).to_owned())
        }
        _ => return Err(EngineError::bad_input(format!("{at}: unknown operator"))),
    }))
}
