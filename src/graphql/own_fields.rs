//! The fields functions answer: the schema's own fields on `Query` and `Mutation` (AppSync's
//! custom queries and mutations), and `@function` fields of a type, whose node is the event's
//! `source`. Each calls its functions with the event Amplify's `@function` gives a Lambda
//! function (batched per level for a function that takes BatchInvoke), and
//! its value is the last function's JSON answer, resolved further by the schema: a `@model`
//! type's fields (relations included, through the loaders) from the object answered, a type
//! without `@model` from its fields (`source.<field>`), scalars and enums as they are.
//!
//! Invariant: a function's failure is this field's error alone (`null` here, the rest of the
//! answer stands); the address a function runs at never reaches the client; a node a function
//! answers reaches the client only under the caller's read rules, as every node does.

use std::sync::Arc;

use async_graphql::ErrorExtensions as _;
use async_graphql::dynamic::{Field, FieldFuture, FieldValue, InputValue, ResolverContext};
use async_graphql::{Name, Value};
use serde_json::{Map, Value as Json};

use super::context::{node_field_value, scope};
use super::custom::type_ref;
use super::embedded::Embedded;
use super::errors::graphql_error;
use crate::auth::Caller;
use crate::engine::read::Node;
use crate::engine::{EngineError, RequestScope, admits};
use crate::functions::{Calls, FunctionError, Functions};
use crate::keys;
use crate::model::{AuthRule, CustomField, FieldDef, Model, OwnField, TypeDef};
use crate::store::{AttrValue, Item, value_from_plain_json, value_to_plain_json};

/// The request's HTTP headers, as a function's event passes them on (`request.headers`).
#[derive(Debug, Clone, Default)]
pub struct RequestHeaders(pub Map<String, Json>);

/// A field its functions answer: a field of the schema's own `Query` or `Mutation`, or a
/// `@function` field of a type (whose node is the event's `source`).
struct Computed {
    type_name: String,
    name: String,
    field: CustomField,
    functions: Vec<String>,
    /// Who may ask for a root field (a type's field is held to its rules with its node).
    auth: Vec<AuthRule>,
}

/// The field `own` declares, resolved by its functions.
pub(super) fn field(own: &OwnField, model: &Arc<Model>) -> Field {
    let computed = Computed {
        type_name: own.root.name().to_owned(),
        name: own.name.clone(),
        field: own.field.clone(),
        functions: own.functions.clone(),
        auth: own.auth.clone(),
    };
    make(computed, own.description.as_deref(), model)
}

/// The `@function` field `field` of `type_def`: its functions are given the node.
pub(super) fn type_field(
    type_def: &TypeDef,
    field: &FieldDef,
    custom: &CustomField,
    functions: &[String],
    model: &Arc<Model>,
) -> Field {
    let computed = Computed {
        type_name: type_def.name.clone(),
        name: field.name.clone(),
        field: custom.clone(),
        functions: functions.to_vec(),
        auth: Vec::new(),
    };
    make(computed, field.description.as_deref(), model)
}

fn make(computed: Computed, description: Option<&str>, model: &Arc<Model>) -> Field {
    let arguments = computed.field.arguments.clone();
    let ty = type_ref(&computed.field.ty);
    let name = computed.name.clone();
    let computed = Arc::new(computed);
    let model = model.clone();
    let mut field = Field::new(name, ty, move |ctx| {
        let computed = computed.clone();
        let model = model.clone();
        FieldFuture::new(async move {
            let scope = scope(&ctx).map_err(graphql_error)?;
            let source = match ctx.parent_value.downcast_ref::<Node>() {
                Some(node) if scope.may_read_field(&node.typename, &computed.name, &node.item) => {
                    source_of(scope, node)
                }
                Some(_) => return Err(graphql_error(not_authorized(&computed))),
                None if !scope.rules.admit_caller(&scope.identity, &computed.auth) => {
                    return Err(graphql_error(not_authorized(&computed)));
                }
                None => Json::Null,
            };
            let answer = resolve(&ctx, &computed, source)
                .await
                .map_err(field_error)?;
            value_of(&model, scope, &computed.field, answer).map_err(graphql_error)
        })
    });
    if let Some(description) = description {
        field = field.description(description);
    }
    for argument in &arguments {
        field = field.argument(InputValue::new(&argument.name, type_ref(&argument.ty)));
    }
    field
}

/// AppSync's refusal of a field the caller may not ask for; no function is called.
fn not_authorized(computed: &Computed) -> EngineError {
    EngineError::Unauthorized(format!(
        "Not Authorized to access {} on type {}",
        computed.name, computed.type_name
    ))
}

/// Runs the field's functions in order, each given the one before's answer as `prev.result`;
/// the last one's answer.
async fn resolve(
    ctx: &ResolverContext<'_>,
    computed: &Computed,
    source: Json,
) -> Result<Json, FunctionError> {
    let field = format!("{}.{}", computed.type_name, computed.name);
    if computed.functions.is_empty() {
        return Err(FunctionError {
            error_type: "MissingResolver".to_owned(),
            message: format!(
                "{field} has no resolver: give it @function(name:) and --function NAME=URL"
            ),
        });
    }
    let functions = ctx.data::<Arc<Functions>>().map_err(|_| FunctionError {
        error_type: crate::functions::UNHANDLED.to_owned(),
        message: format!("{field}: no functions are configured"),
    })?;
    let calls = ctx.data_opt::<Arc<Calls>>().map(Arc::as_ref);
    let mut event = event(ctx, computed, source);
    let mut answer = Json::Null;
    for (at, function) in computed.functions.iter().enumerate() {
        if at > 0 {
            event["prev"] = serde_json::json!({ "result": answer });
        }
        answer = functions.call(calls, function, event.clone()).await?;
    }
    Ok(answer)
}

/// The event Amplify's `@function` gives a function: `typeName`, `fieldName`, `arguments`,
/// `identity`, `source`, `request` and `prev`.
fn event(ctx: &ResolverContext<'_>, computed: &Computed, source: Json) -> Json {
    let arguments: Map<String, Json> = ctx
        .args
        .iter()
        .map(|(name, value)| {
            let value = value.as_value().clone().into_json().unwrap_or(Json::Null);
            (name.to_string(), value)
        })
        .collect();
    let headers = ctx
        .data_opt::<RequestHeaders>()
        .map(|headers| Json::Object(headers.0.clone()))
        .unwrap_or_else(|| Json::Object(Map::new()));
    serde_json::json!({
        "typeName": computed.type_name,
        "fieldName": computed.name,
        "arguments": arguments,
        "identity": identity(ctx.data_opt::<Caller>()),
        "source": source,
        "request": { "headers": headers },
        "prev": Json::Null,
    })
}

/// A node as a function's `source`: its fields as JSON, those the caller may not read left
/// out, and nothing of the table's keys, slots, counts or edge set.
fn source_of(scope: &RequestScope, node: &Node) -> Json {
    let fields: Map<String, Json> = node
        .item
        .iter()
        .filter(|(name, _)| {
            !matches!(name.as_str(), keys::PK | keys::SK | "edges")
                && !keys::is_slot_attribute(name)
                && !keys::is_count_attribute(name)
                && scope.may_read_field(&node.typename, name, &node.item)
        })
        .map(|(name, value)| (name.clone(), value_to_plain_json(value)))
        .collect();
    Json::Object(fields)
}

/// AppSync's `identity` of the caller: a verified token's `sub`, `issuer`, `username`,
/// `claims` and `groups`; the Lambda authorizer's `resolverContext`; `null` for an API key or
/// an open API.
fn identity(caller: Option<&Caller>) -> Json {
    let claims = match caller {
        Some(Caller::Token(claims)) => claims,
        Some(Caller::Lambda(admitted)) => {
            return serde_json::json!({ "resolverContext": admitted.resolver_context });
        }
        _ => return Json::Null,
    };
    let claim = |name: &str| claims.get(name).cloned().unwrap_or(Json::Null);
    let username = claims
        .get("cognito:username")
        .or_else(|| claims.get("username"))
        .cloned()
        .unwrap_or_else(|| claim("sub"));
    serde_json::json!({
        "sub": claim("sub"),
        "issuer": claim("iss"),
        "username": username,
        "claims": claims,
        "sourceIp": [],
        "defaultAuthStrategy": "ALLOW",
        "groups": claim("cognito:groups"),
    })
}

/// The field's value of a function's answer, by the type the field declares. A node of a
/// `@model` type is held to the caller's read rules, as every node handed out is: a list
/// leaves out those the caller may not read, a single one the caller may not read is the
/// field's `Unauthorized` error.
fn value_of(
    model: &Model,
    scope: &RequestScope,
    field: &CustomField,
    answer: Json,
) -> Result<Option<FieldValue<'static>>, EngineError> {
    match answer {
        Json::Null => Ok(None),
        Json::Array(items) if field.list => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                match element_of(model, scope, &field.element, item) {
                    Ok(value) => values.push(value.unwrap_or(FieldValue::NULL)),
                    Err(EngineError::Unauthorized(_)) => {}
                    Err(error) => return Err(error),
                }
            }
            Ok(Some(FieldValue::list(values)))
        }
        answer => element_of(model, scope, &field.element, answer),
    }
}

/// One value of the named type `element`.
fn element_of(
    model: &Model,
    scope: &RequestScope,
    element: &str,
    answer: Json,
) -> Result<Option<FieldValue<'static>>, EngineError> {
    Ok(match answer {
        Json::Null => None,
        Json::Object(object) if model.type_def(element).is_some() => {
            let mut item = item_of(object);
            item.insert("__typename".to_owned(), AttrValue::S(element.to_owned()));
            if !admits(&scope.read_access(&[element]), &item) {
                return Err(EngineError::Unauthorized(format!(
                    "Not Authorized to read {element}"
                )));
            }
            Some(node_field_value(
                Node::new(element.to_owned(), Arc::new(item)),
                false,
            ))
        }
        Json::Object(object) if model.objects.iter().any(|o| o.name == element) => {
            Some(FieldValue::owned_any(Embedded(item_of(object))))
        }
        Json::String(text) if model.enums.iter().any(|e| e.name == element) => {
            Some(FieldValue::value(Value::Enum(Name::new(text))))
        }
        answer => Value::from_json(answer).ok().map(FieldValue::value),
    })
}

/// A JSON object as an item's attributes, as the table would hold it.
fn item_of(object: Map<String, Json>) -> Item {
    object
        .into_iter()
        .map(|(name, value)| (name, value_from_plain_json(value)))
        .collect()
}

fn field_error(error: FunctionError) -> async_graphql::Error {
    let FunctionError {
        error_type,
        message,
    } = error;
    async_graphql::Error::new(message)
        .extend_with(move |_, extensions| extensions.set("errorType", error_type.as_str()))
}
