//! Scalar types of the API: AppSync's scalars (`AWSDateTime` always, the others when the model
//! uses them, each checked with the engine's formats) and the names of every scalar.

use async_graphql::Value;
use async_graphql::dynamic::{Scalar, SchemaBuilder, TypeRef};

use crate::engine;
use crate::model::{CustomField, FieldKind, Model, ScalarType};

/// AppSync's scalars: each one's name, type and description.
const AWS_SCALARS: [(&str, ScalarType, &str); 9] = [
    (
        "AWSDate",
        ScalarType::AwsDate,
        "A calendar date, YYYY-MM-DD.",
    ),
    (
        "AWSTime",
        ScalarType::AwsTime,
        "A time of day, hh:mm[:ss[.sss]], with an optional offset (Z, +hh:mm).",
    ),
    (
        "AWSDateTime",
        ScalarType::AwsDateTime,
        "An RFC 3339 timestamp, such as 2024-05-01T12:00:00Z.",
    ),
    (
        "AWSTimestamp",
        ScalarType::AwsTimestamp,
        "Seconds since 1970-01-01T00:00:00Z, as an integer.",
    ),
    ("AWSEmail", ScalarType::AwsEmail, "An email address."),
    (
        "AWSJSON",
        ScalarType::AwsJson,
        "A JSON document, given and answered as a string of JSON.",
    ),
    (
        "AWSURL",
        ScalarType::AwsUrl,
        "An absolute URL with a scheme, such as https://example.com/ or mailto:ann@example.com.",
    ),
    (
        "AWSPhone",
        ScalarType::AwsPhone,
        "A phone number: 7 to 15 digits, an optional leading +, spaces or hyphens between groups.",
    ),
    (
        "AWSIPAddress",
        ScalarType::AwsIpAddress,
        "An IPv4 or IPv6 address, with an optional /prefix length.",
    ),
];

/// Registers the AppSync scalars: `AWSDateTime` always (every node has `createdAt`), the others
/// when a field or an argument uses them (`AWSTimestamp`: conflict detection's fields too).
pub(in crate::graphql) fn register(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
    for (name, scalar, description) in AWS_SCALARS {
        // A type that detects conflicts serves `_lastChangedAt: AWSTimestamp!`.
        let synced =
            scalar == ScalarType::AwsTimestamp && model.types.iter().any(|t| t.conflict.is_some());
        if scalar != ScalarType::AwsDateTime && !synced && !uses_scalar(model, &scalar) {
            continue;
        }
        let check = scalar.clone();
        builder = builder.register(Scalar::new(name).description(description).validator(
            move |value| match (value, &check) {
                (Value::Number(n), ScalarType::AwsTimestamp) => n.is_i64(),
                (Value::String(text), scalar) => engine::formats::valid_text(scalar, text),
                _ => false,
            },
        ));
    }
    builder
}

fn uses_scalar(model: &Model, wanted: &ScalarType) -> bool {
    // A declared type's fields name their types as written: `[AWSDate!]`.
    let declared = model
        .interfaces
        .iter()
        .chain(&model.inputs)
        .flat_map(|d| &d.fields)
        .any(|f| scalar_named(f.ty.trim_matches(['[', ']', '!'])) == Some(wanted));
    let subscribed = model
        .subscriptions
        .iter()
        .flat_map(|s| &s.arguments)
        .any(|(_, scalar)| scalar == wanted);
    declared
        || subscribed
        || model
            .types
            .iter()
            .flat_map(|t| &t.fields)
            .chain(model.edges.iter().flat_map(|e| &e.fields))
            .chain(model.objects.iter().flat_map(|o| &o.fields))
            .any(|f| {
                f.scalar() == Some(wanted)
                    || matches!(&f.kind, FieldKind::ScalarList { scalar, .. } if scalar == wanted)
                    || matches!(&f.kind, FieldKind::Custom(custom) | FieldKind::Function { field: custom, .. }
                    if names(custom, wanted))
            })
        || model.own_fields.iter().any(|own| names(&own.field, wanted))
}

/// Whether a computed field's type or one of its arguments is `wanted`.
fn names(custom: &CustomField, wanted: &ScalarType) -> bool {
    std::iter::once(&custom.element)
        .chain(custom.arguments.iter().map(|a| &a.element))
        .any(|name| scalar_named(name) == Some(wanted))
}

/// The AppSync scalar a type name names.
fn scalar_named(name: &str) -> Option<&'static ScalarType> {
    AWS_SCALARS
        .iter()
        .find(|(aws, _, _)| *aws == name)
        .map(|(_, scalar, _)| scalar)
}

/// The type of a list of `scalar`: `[T]`, `[T!]`, `[T]!` or `[T!]!`.
pub(in crate::graphql) fn list_type_ref(
    scalar: &ScalarType,
    required: bool,
    elements_required: bool,
) -> TypeRef {
    let name = scalar.name();
    match (required, elements_required) {
        (false, false) => TypeRef::named_list(name),
        (false, true) => TypeRef::named_nn_list(name),
        (true, false) => TypeRef::named_list_nn(name),
        (true, true) => TypeRef::named_nn_list_nn(name),
    }
}

/// The type of a field holding `scalar`, non-null when `required`.
pub(in crate::graphql) fn scalar_type_ref(scalar: &ScalarType, required: bool) -> TypeRef {
    let name = scalar.name();
    if required {
        TypeRef::named_nn(name)
    } else {
        TypeRef::named(name)
    }
}
