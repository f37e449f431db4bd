//! Scalar types of the API: AppSync's `AWSDate`, `AWSDateTime` and `AWSEmail` (registered when
//! the model uses them, checked with the engine's formats) and the names of every scalar.

use async_graphql::Value;
use async_graphql::dynamic::{Scalar, SchemaBuilder, TypeRef};

use crate::engine;
use crate::model::{FieldKind, Model, ScalarType};

/// Registers the AppSync scalars: `AWSDateTime` always (every node has `createdAt`), the others
/// when a field or an argument uses them.
pub(super) fn register(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
    let text =
        |value: &Value, check: fn(&str) -> bool| matches!(value, Value::String(s) if check(s));
    builder = builder.register(
        Scalar::new("AWSDateTime")
            .description("An RFC 3339 timestamp, such as 2024-05-01T12:00:00Z.")
            .validator(move |value| text(value, engine::is_aws_date_time)),
    );
    if uses_scalar(model, &ScalarType::AwsDate) {
        builder = builder.register(
            Scalar::new("AWSDate")
                .description("A calendar date, YYYY-MM-DD.")
                .validator(move |value| text(value, engine::is_aws_date)),
        );
    }
    if uses_scalar(model, &ScalarType::AwsEmail) {
        builder = builder.register(
            Scalar::new("AWSEmail")
                .description("An email address.")
                .validator(move |value| text(value, engine::is_aws_email)),
        );
    }
    builder
}

fn uses_scalar(model: &Model, wanted: &ScalarType) -> bool {
    model
        .types
        .iter()
        .flat_map(|t| &t.fields)
        .chain(model.edges.iter().flat_map(|e| &e.fields))
        .any(|f| {
            f.scalar() == Some(wanted)
                || matches!(&f.kind, FieldKind::Custom(custom)
                    if std::iter::once(&custom.element)
                        .chain(custom.arguments.iter().map(|a| &a.element))
                        .any(|name| scalar_named(name) == Some(wanted)))
        })
}

/// The AppSync scalar a type name names.
fn scalar_named(name: &str) -> Option<&'static ScalarType> {
    match name {
        "AWSDate" => Some(&ScalarType::AwsDate),
        "AWSDateTime" => Some(&ScalarType::AwsDateTime),
        "AWSEmail" => Some(&ScalarType::AwsEmail),
        _ => None,
    }
}

pub(super) fn scalar_type_name(scalar: &ScalarType) -> &str {
    match scalar {
        ScalarType::Id => TypeRef::ID,
        ScalarType::String => TypeRef::STRING,
        ScalarType::Int => TypeRef::INT,
        ScalarType::Float => TypeRef::FLOAT,
        ScalarType::Boolean => TypeRef::BOOLEAN,
        ScalarType::AwsDate => "AWSDate",
        ScalarType::AwsDateTime => "AWSDateTime",
        ScalarType::AwsEmail => "AWSEmail",
        ScalarType::Enum(name) => name,
    }
}

/// The type of a field holding `scalar`, non-null when `required`.
pub(super) fn scalar_type_ref(scalar: &ScalarType, required: bool) -> TypeRef {
    let name = scalar_type_name(scalar);
    if required {
        TypeRef::named_nn(name)
    } else {
        TypeRef::named(name)
    }
}
