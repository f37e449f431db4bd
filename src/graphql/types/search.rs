//! Amplify's `@searchable` API, as its transformer declares it: `search<Types>(filter, sort,
//! limit, nextToken, from, aggregates): Searchable<Type>Connection` with `items`, `nextToken`,
//! `total` and `aggregateItems`, and their inputs (`Searchable<Scalar>FilterInput`,
//! `Searchable<Type>FilterInput`, sort and aggregation inputs). Transformer v1's takes one `sort`
//! and no aggregates. The engine answers it from the type's nodes (`engine::read::search`).

use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{
    Enum, EnumItem, Field, FieldFuture, FieldValue, InputObject, InputValue, Object,
    ResolverContext, SchemaBuilder, TypeRef, Union, ValueAccessor,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::engine::read::MAX_LIMIT;
use crate::engine::read::Node;
use crate::engine::read::search::{
    Aggregate, AggregateKind, AggregateValue, SearchAnswer, SearchFilter, SearchRequest,
    SearchTest, search,
};
use crate::engine::{AttrValue, EngineError};
use crate::graphql::context::{node_field_value, scope};
use crate::graphql::errors::graphql_error;
use crate::graphql::values::filters;
use crate::graphql::values::from_input;
use crate::model::{Model, ScalarType, TypeDef};

/// A search's page when none is asked for, as Amplify's resolver defaults it.
const DEFAULT_LIMIT: usize = 100;

/// The scalars the transformer declares a `Searchable<Scalar>FilterInput` for, with its
/// operators.
const SCALAR_INPUTS: [(&str, &[&str]); 5] = [
    ("String", &TEXT_OPERATORS),
    ("Int", &NUMBER_OPERATORS),
    ("Float", &NUMBER_OPERATORS),
    ("Boolean", &["eq", "ne"]),
    ("ID", &TEXT_OPERATORS),
];
const TEXT_OPERATORS: [&str; 14] = [
    "ne",
    "gt",
    "lt",
    "gte",
    "lte",
    "eq",
    "match",
    "matchPhrase",
    "matchPhrasePrefix",
    "multiMatch",
    "exists",
    "wildcard",
    "regexp",
    "range",
];
const NUMBER_OPERATORS: [&str; 7] = ["ne", "gt", "lt", "gte", "lte", "eq", "range"];
const AGGREGATE_KINDS: [(&str, AggregateKind); 6] = [
    ("terms", AggregateKind::Terms),
    ("avg", AggregateKind::Avg),
    ("min", AggregateKind::Min),
    ("max", AggregateKind::Max),
    ("sum", AggregateKind::Sum),
    ("cardinality", AggregateKind::Cardinality),
];

/// The `Searchable<Scalar>FilterInput` a field of `scalar` is filtered by (an AppSync scalar by
/// the one it is sent as; an enum by `String`'s).
fn searchable_scalar(scalar: &ScalarType) -> &'static str {
    match scalar {
        ScalarType::Id => "ID",
        ScalarType::Int | ScalarType::AwsTimestamp => "Int",
        ScalarType::Float => "Float",
        ScalarType::Boolean => "Boolean",
        _ => "String",
    }
}

/// The fields a search of `type_def` filters, sorts and aggregates on, as the transformer
/// lists them: those of the type's filter, enums after the others.
fn searched_fields(type_def: &TypeDef, model: &Model) -> Vec<(String, ScalarType)> {
    let fields = filters::declared_fields(
        filters::node_filter_fields(type_def),
        type_def,
        &model.dialect,
        false,
    );
    let (enums, scalars): (Vec<_>, Vec<_>) = fields
        .into_iter()
        .filter(|(name, _)| name != crate::engine::DELETED)
        .partition(|(_, scalar)| matches!(scalar, ScalarType::Enum(_)));
    scalars.into_iter().chain(enums).collect()
}

/// Registers the search API's types, for the types with `@searchable`.
pub(in crate::graphql) fn register(mut builder: SchemaBuilder, model: &Model) -> SchemaBuilder {
    let searched: Vec<&TypeDef> = model.types.iter().filter(|t| t.search.is_some()).collect();
    if searched.is_empty() {
        return builder;
    }
    let v1 = model.dialect.v1_api();
    for (scalar, operators) in SCALAR_INPUTS {
        let mut input = InputObject::new(format!("Searchable{scalar}FilterInput"));
        for operator in operators {
            let ty = match *operator {
                "range" => TypeRef::named_list(scalar),
                "exists" => TypeRef::named(TypeRef::BOOLEAN),
                _ => TypeRef::named(scalar),
            };
            input = input.field(InputValue::new(*operator, ty));
        }
        builder = builder.register(input);
    }
    builder = builder.register(
        Enum::new("SearchableSortDirection")
            .item(EnumItem::new("asc"))
            .item(EnumItem::new("desc")),
    );
    if !v1 {
        builder = register_aggregate_types(builder);
    }
    for type_def in searched {
        builder = register_type(builder, type_def, model, v1);
    }
    builder
}

fn register_aggregate_types(builder: SchemaBuilder) -> SchemaBuilder {
    let mut kinds = Enum::new("SearchableAggregateType");
    for (name, _) in AGGREGATE_KINDS {
        kinds = kinds.item(EnumItem::new(name));
    }
    builder
        .register(kinds)
        .register(
            Object::new("SearchableAggregateResult")
                .field(value_field("name", TypeRef::named_nn(TypeRef::STRING)))
                .field(Field::new(
                    "result",
                    TypeRef::named("SearchableAggregateGenericResult"),
                    |ctx| {
                        FieldFuture::new(async move {
                            let result = ctx.parent_value.try_downcast_ref::<AggregateItem>()?;
                            Ok(Some(match &result.1 {
                                AggregateValue::Scalar(value) => FieldValue::owned_any(*value)
                                    .with_type("SearchableAggregateScalarResult"),
                                AggregateValue::Buckets(buckets) => {
                                    FieldValue::owned_any(buckets.clone())
                                        .with_type("SearchableAggregateBucketResult")
                                }
                            }))
                        })
                    },
                )),
        )
        .register(
            Object::new("SearchableAggregateScalarResult").field(Field::new(
                "value",
                TypeRef::named_nn(TypeRef::FLOAT),
                |ctx| {
                    FieldFuture::new(async move {
                        let value = ctx.parent_value.try_downcast_ref::<f64>()?;
                        Ok(Some(Value::from(*value)))
                    })
                },
            )),
        )
        .register(
            Object::new("SearchableAggregateBucketResult").field(Field::new(
                "buckets",
                TypeRef::named_list("SearchableAggregateBucketResultItem"),
                |ctx| {
                    FieldFuture::new(async move {
                        let buckets = ctx.parent_value.try_downcast_ref::<Buckets>()?;
                        Ok(Some(FieldValue::list(
                            buckets.iter().cloned().map(FieldValue::owned_any),
                        )))
                    })
                },
            )),
        )
        .register(
            Object::new("SearchableAggregateBucketResultItem")
                .field(Field::new(
                    "key",
                    TypeRef::named_nn(TypeRef::STRING),
                    |ctx| {
                        FieldFuture::new(async move {
                            let bucket = ctx.parent_value.try_downcast_ref::<(String, usize)>()?;
                            Ok(Some(Value::from(bucket.0.clone())))
                        })
                    },
                ))
                .field(Field::new(
                    "doc_count",
                    TypeRef::named_nn(TypeRef::INT),
                    |ctx| {
                        FieldFuture::new(async move {
                            let bucket = ctx.parent_value.try_downcast_ref::<(String, usize)>()?;
                            Ok(Some(Value::from(bucket.1)))
                        })
                    },
                )),
        )
        .register(
            Union::new("SearchableAggregateGenericResult")
                .possible_type("SearchableAggregateScalarResult")
                .possible_type("SearchableAggregateBucketResult"),
        )
}

type Buckets = Vec<(String, usize)>;

/// One aggregate's answer, by its name.
struct AggregateItem(String, AggregateValue);

fn value_field(name: &'static str, ty: TypeRef) -> Field {
    Field::new(name, ty, move |ctx| {
        FieldFuture::new(async move {
            let item = ctx.parent_value.try_downcast_ref::<AggregateItem>()?;
            Ok(Some(Value::from(item.0.clone())))
        })
    })
}

/// The filter, sort, aggregation inputs and connection of one searchable type.
fn register_type(
    mut builder: SchemaBuilder,
    type_def: &TypeDef,
    model: &Model,
    v1: bool,
) -> SchemaBuilder {
    let name = &type_def.name;
    let fields = searched_fields(type_def, model);
    let filter_name = format!("Searchable{name}FilterInput");
    let mut filter = InputObject::new(&filter_name);
    for (field, scalar) in &fields {
        let input = format!("Searchable{}FilterInput", searchable_scalar(scalar));
        filter = filter.field(InputValue::new(field, TypeRef::named(input)));
    }
    filter = filter
        .field(InputValue::new("and", TypeRef::named_list(&filter_name)))
        .field(InputValue::new("or", TypeRef::named_list(&filter_name)))
        .field(InputValue::new("not", TypeRef::named(&filter_name)));
    let mut sortable = Enum::new(format!("Searchable{name}SortableFields"));
    for (field, _) in fields
        .iter()
        .filter(|(_, s)| !matches!(s, ScalarType::Enum(_)))
    {
        sortable = sortable.item(EnumItem::new(field));
    }
    builder = builder.register(filter).register(sortable).register(
        InputObject::new(format!("Searchable{name}SortInput"))
            .field(InputValue::new(
                "field",
                TypeRef::named(format!("Searchable{name}SortableFields")),
            ))
            .field(InputValue::new(
                "direction",
                TypeRef::named("SearchableSortDirection"),
            )),
    );
    if !v1 {
        let mut aggregated = Enum::new(format!("Searchable{name}AggregateField"));
        for (field, _) in &fields {
            aggregated = aggregated.item(EnumItem::new(field));
        }
        builder = builder.register(aggregated).register(
            InputObject::new(format!("Searchable{name}AggregationInput"))
                .field(InputValue::new("name", TypeRef::named_nn(TypeRef::STRING)))
                .field(InputValue::new(
                    "type",
                    TypeRef::named_nn("SearchableAggregateType"),
                ))
                .field(InputValue::new(
                    "field",
                    TypeRef::named_nn(format!("Searchable{name}AggregateField")),
                )),
        );
    }
    builder.register(connection_object(name, v1))
}

fn connection_object(name: &str, v1: bool) -> Object {
    let mut object = Object::new(format!("Searchable{name}Connection"))
        .field(Field::new("items", TypeRef::named_list_nn(name), |ctx| {
            FieldFuture::new(async move {
                let page = ctx.parent_value.try_downcast_ref::<SearchPage>()?;
                Ok(Some(FieldValue::list(page.answer.items.iter().map(
                    |item| node_field_value(Node::new(page.typename.clone(), item.clone()), false),
                ))))
            })
        }))
        .field(Field::new(
            "nextToken",
            TypeRef::named(TypeRef::STRING),
            |ctx| {
                FieldFuture::new(async move {
                    let page = ctx.parent_value.try_downcast_ref::<SearchPage>()?;
                    Ok(page
                        .answer
                        .next_from
                        .map(|from| Value::from(next_token(from))))
                })
            },
        ))
        .field(Field::new("total", TypeRef::named(TypeRef::INT), |ctx| {
            FieldFuture::new(async move {
                let page = ctx.parent_value.try_downcast_ref::<SearchPage>()?;
                Ok(Some(Value::from(page.answer.total)))
            })
        }));
    if !v1 {
        object = object.field(Field::new(
            "aggregateItems",
            TypeRef::named_list_nn("SearchableAggregateResult"),
            |ctx| {
                FieldFuture::new(async move {
                    let page = ctx.parent_value.try_downcast_ref::<SearchPage>()?;
                    Ok(Some(FieldValue::list(page.answer.aggregates.iter().map(
                        |(name, value)| {
                            FieldValue::owned_any(AggregateItem(name.clone(), value.clone()))
                        },
                    ))))
                })
            },
        ));
    }
    object
}

/// A search's answer, with the type its items are nodes of.
struct SearchPage {
    typename: String,
    answer: SearchAnswer,
}

/// A page's `nextToken`: where the next page starts, opaque to clients.
fn next_token(from: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("search:{from}"))
}

fn from_of_token(token: &str) -> Result<usize, EngineError> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix("search:")?.parse().ok())
        .ok_or_else(|| {
            EngineError::BadUserInput("nextToken is not one a search answered".to_owned())
        })
}

/// The search query of `type_def`, named `query`.
pub(in crate::graphql) fn search_field(type_def: &TypeDef, query: &str, model: &Model) -> Field {
    let name = &type_def.name;
    let v1 = model.dialect.v1_api();
    let type_def = Arc::new(type_def.clone());
    let fields = Arc::new(searched_fields(&type_def, model));
    let mut field = Field::new(
        query,
        TypeRef::named(format!("Searchable{name}Connection")),
        move |ctx| {
            let type_def = type_def.clone();
            let fields = fields.clone();
            FieldFuture::new(async move {
                let request = request_of(&ctx, &fields).map_err(graphql_error)?;
                let scope = scope(&ctx).map_err(graphql_error)?;
                let answer = search(scope, &type_def, &request)
                    .await
                    .map_err(graphql_error)?;
                Ok(Some(FieldValue::owned_any(SearchPage {
                    typename: type_def.name.clone(),
                    answer,
                })))
            })
        },
    )
    .description(
        "Amplify's search: the nodes of the type that meet the filter, sorted and paged, with \
         how many met it and aggregates over them; read from the table when asked.",
    )
    .argument(InputValue::new(
        "filter",
        TypeRef::named(format!("Searchable{name}FilterInput")),
    ));
    let sort = format!("Searchable{name}SortInput");
    field = field.argument(InputValue::new(
        "sort",
        if v1 {
            TypeRef::named(sort)
        } else {
            TypeRef::named_list(sort)
        },
    ));
    field = field
        .argument(InputValue::new("limit", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new(
            "nextToken",
            TypeRef::named(TypeRef::STRING),
        ))
        .argument(InputValue::new("from", TypeRef::named(TypeRef::INT)));
    if !v1 {
        field = field.argument(InputValue::new(
            "aggregates",
            TypeRef::named_list(format!("Searchable{name}AggregationInput")),
        ));
    }
    field
}

/// The argument `name` unless it is absent or null.
fn argument<'a>(ctx: &'a ResolverContext<'a>, name: &str) -> Option<ValueAccessor<'a>> {
    ctx.args.get(name).filter(|value| !value.is_null())
}

/// The search the arguments ask for.
fn request_of(
    ctx: &ResolverContext<'_>,
    fields: &[(String, ScalarType)],
) -> Result<SearchRequest, EngineError> {
    let limit = match argument(ctx, "limit").map(|v| v.i64()) {
        None => DEFAULT_LIMIT,
        Some(Ok(limit)) if (0..=MAX_LIMIT as i64).contains(&limit) => limit as usize,
        Some(_) => {
            return Err(EngineError::BadUserInput(format!(
                "limit is from 0 to {MAX_LIMIT}"
            )));
        }
    };
    let from = match (argument(ctx, "from"), argument(ctx, "nextToken")) {
        (Some(from), _) => usize::try_from(from.i64().unwrap_or(-1)).map_err(|_| {
            EngineError::BadUserInput("from is a number of nodes, 0 or more".to_owned())
        })?,
        (None, Some(token)) => from_of_token(token.string().unwrap_or_default())?,
        (None, None) => 0,
    };
    let filter = match argument(ctx, "filter") {
        Some(filter) => Some(filter_of(&filter, fields)?),
        None => None,
    };
    Ok(SearchRequest {
        filter,
        sort: sort_of(argument(ctx, "sort"))?,
        limit,
        from,
        aggregates: aggregates_of(argument(ctx, "aggregates"))?,
    })
}

fn filter_of(
    filter: &ValueAccessor<'_>,
    fields: &[(String, ScalarType)],
) -> Result<SearchFilter, EngineError> {
    let object = filter.object().map_err(|_| bad("filter is an object"))?;
    let mut all = Vec::new();
    for (name, value) in object.iter() {
        match name.as_str() {
            "and" | "or" => {
                let parts = value
                    .list()
                    .map_err(|_| bad("and and or take a list of filters"))?
                    .iter()
                    .map(|part| filter_of(&part, fields))
                    .collect::<Result<Vec<_>, _>>()?;
                all.push(if name.as_str() == "and" {
                    SearchFilter::All(parts)
                } else {
                    SearchFilter::Any(parts)
                });
            }
            "not" => all.push(SearchFilter::Not(Box::new(filter_of(&value, fields)?))),
            field => {
                let scalar = fields
                    .iter()
                    .find(|(name, _)| name == field)
                    .map(|(_, scalar)| scalar)
                    .ok_or_else(|| bad(&format!("{field} is not searched")))?;
                all.extend(field_tests(field, scalar, &value)?);
            }
        }
    }
    Ok(SearchFilter::All(all))
}

/// The tests of one field's operators.
fn field_tests(
    field: &str,
    scalar: &ScalarType,
    operators: &ValueAccessor<'_>,
) -> Result<Vec<SearchFilter>, EngineError> {
    let sent_as = match searchable_scalar(scalar) {
        "ID" => ScalarType::Id,
        "Int" => ScalarType::Int,
        "Float" => ScalarType::Float,
        "Boolean" => ScalarType::Boolean,
        _ => ScalarType::String,
    };
    let value = |operand: &ValueAccessor<'_>| -> Result<AttrValue, EngineError> {
        from_input(operand.as_value(), &sent_as, field)?
            .ok_or_else(|| bad(&format!("{field}: an operator takes a value, not null")))
    };
    let text = |operand: &ValueAccessor<'_>| -> Result<String, EngineError> {
        operand
            .string()
            .map(str::to_owned)
            .map_err(|_| bad(&format!("{field}: a text operator takes text")))
    };
    let mut tests = Vec::new();
    for (operator, operand) in operators
        .object()
        .map_err(|_| bad(&format!("{field} takes an object of operators")))?
        .iter()
    {
        if operand.is_null() {
            continue;
        }
        let test = match operator.as_str() {
            "eq" => SearchTest::Eq(value(&operand)?),
            "ne" => SearchTest::Ne(value(&operand)?),
            "gt" => SearchTest::Gt(value(&operand)?),
            "gte" => SearchTest::Ge(value(&operand)?),
            "lt" => SearchTest::Lt(value(&operand)?),
            "lte" => SearchTest::Le(value(&operand)?),
            "exists" => SearchTest::Exists(operand.boolean().unwrap_or(true)),
            "match" | "multiMatch" => SearchTest::Match(text(&operand)?),
            "matchPhrase" => SearchTest::MatchPhrase(text(&operand)?),
            "matchPhrasePrefix" => SearchTest::MatchPhrasePrefix(text(&operand)?),
            "wildcard" => SearchTest::Wildcard(text(&operand)?),
            "regexp" => SearchTest::Regexp(Arc::new(regexp(field, &text(&operand)?)?)),
            "range" => {
                let bounds = operand
                    .list()
                    .map_err(|_| bad(&format!("{field}: range takes [low, high]")))?;
                let (Some(low), Some(high), 2) = (bounds.get(0), bounds.get(1), bounds.len())
                else {
                    return Err(bad(&format!("{field}: range takes [low, high]")));
                };
                SearchTest::Range(value(&low)?, value(&high)?)
            }
            other => return Err(bad(&format!("{field}: unknown operator {other}"))),
        };
        tests.push(SearchFilter::Field {
            field: field.to_owned(),
            test,
        });
    }
    Ok(tests)
}

/// A `regexp` operand as a whole-value match, bounded in size as OpenSearch bounds its own.
fn regexp(field: &str, expression: &str) -> Result<regex_lite::Regex, EngineError> {
    regex_lite::RegexBuilder::new(&format!("^(?:{expression})$"))
        .size_limit(1 << 20)
        .build()
        .map_err(|error| {
            bad(&format!(
                "{field}: regexp is not a valid expression: {error}"
            ))
        })
}

/// The name an enum value (or a string, from variables) holds.
fn name_in(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Enum(name) => Some(name.to_string()),
        Value::String(text) => Some(text.clone()),
        _ => None,
    }
}

/// The objects a list argument holds, or the one object given for it.
fn objects_in(
    value: &Value,
) -> Vec<&async_graphql::indexmap::IndexMap<async_graphql::Name, Value>> {
    match value {
        Value::List(values) => values
            .iter()
            .filter_map(|value| match value {
                Value::Object(object) => Some(object),
                _ => None,
            })
            .collect(),
        Value::Object(object) => vec![object],
        _ => Vec::new(),
    }
}

fn sort_of(sort: Option<ValueAccessor<'_>>) -> Result<Vec<(String, bool)>, EngineError> {
    let Some(sort) = sort else {
        return Ok(Vec::new());
    };
    Ok(objects_in(sort.as_value())
        .into_iter()
        .filter_map(|object| {
            let field = name_in(object.get("field"))?;
            let descending = name_in(object.get("direction")).is_some_and(|d| d == "desc");
            Some((field, descending))
        })
        .collect())
}

fn aggregates_of(aggregates: Option<ValueAccessor<'_>>) -> Result<Vec<Aggregate>, EngineError> {
    let Some(aggregates) = aggregates else {
        return Ok(Vec::new());
    };
    objects_in(aggregates.as_value())
        .into_iter()
        .map(|object| {
            let text = |name: &str| {
                name_in(object.get(name)).ok_or_else(|| bad(&format!("an aggregate takes {name}")))
            };
            let kind_name = text("type")?;
            let kind = AGGREGATE_KINDS
                .iter()
                .find(|(name, _)| *name == kind_name)
                .map(|(_, kind)| *kind)
                .ok_or_else(|| bad(&format!("unknown aggregate type {kind_name}")))?;
            Ok(Aggregate {
                name: text("name")?,
                kind,
                field: text("field")?,
            })
        })
        .collect()
}

fn bad(message: &str) -> EngineError {
    EngineError::BadUserInput(message.to_owned())
}
