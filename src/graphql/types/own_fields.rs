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

use async_graphql::dynamic::{Field, FieldFuture, FieldValue, InputValue, ResolverContext};
use async_graphql::{Name, SelectionField, Value};
use serde_json::{Map, Value as Json};

use super::custom::type_ref;
use super::embedded::Embedded;
use crate::auth::Caller;
use crate::engine::TYPENAME;
use crate::engine::read::Node;
use crate::engine::write::publish;
use crate::engine::{AttrValue, Item, value_from_plain_json, value_to_plain_json};
use crate::engine::{EngineError, RequestScope, admits};
use crate::functions::{Calls, FunctionError, Functions, HttpRequest};
use crate::graphql::context::{node_field_value, scope};
use crate::graphql::errors::{graphql_error, typed_error};
use crate::model::{
    AuthRule, CustomField, FieldDef, FieldKind, HttpCall, HttpMethod, Model, ObjectDef, OwnField,
    Root, TypeDef,
};

/// The request's HTTP headers, as a function's event passes them on (`request.headers`).
#[derive(Debug, Clone, Default)]
pub struct RequestHeaders(pub Map<String, Json>);

/// The operation's variables, as AppSync's direct event passes them on (`info.variables`).
#[derive(Debug, Clone, Default)]
pub(in crate::graphql) struct RequestVariables(pub Json);

/// A field its functions answer: a field of the schema's own `Query` or `Mutation`, or a
/// `@function` field of a type (whose node is the event's `source`).
struct Computed {
    type_name: String,
    name: String,
    field: CustomField,
    functions: Vec<String>,
    /// The `@http` call that answers it instead of functions.
    http: Option<HttpCall>,
    /// Bound in `resolvers/`: its functions get AppSync's direct Lambda resolver event.
    direct: bool,
    /// Who may ask for a root field (a type's field is held to its rules with its node).
    auth: Vec<AuthRule>,
    /// A mutation a declared subscription follows: each answer is published to it.
    published: bool,
}

/// The field `own` declares, resolved by its functions.
pub(in crate::graphql) fn field(own: &OwnField, model: &Arc<Model>) -> Field {
    let computed = Computed {
        type_name: own.root.name().to_owned(),
        name: own.name.clone(),
        field: own.field.clone(),
        functions: own.functions.clone(),
        http: own.http.clone(),
        direct: own.direct,
        auth: own.auth.clone(),
        published: own.root == Root::Mutation && model.publishes(&own.name),
    };
    make(computed, own.description.as_deref(), model)
}

/// The `@function` (or `@http`) field `field` of `type_def`: its functions are given the node.
pub(in crate::graphql) fn type_field(
    type_def: &TypeDef,
    field: &FieldDef,
    model: &Arc<Model>,
) -> Field {
    // A type's field is held to its rules with its node.
    computed_field(&type_def.name, field, Vec::new(), model)
}

/// The field `field` of the non-model type `object_def` that functions (or an `@http` call)
/// answer: the value it is a field of is the event's `source`.
pub(in crate::graphql) fn object_field(
    object_def: &ObjectDef,
    field: &FieldDef,
    model: &Arc<Model>,
) -> Field {
    computed_field(&object_def.name, field, field.auth.clone(), model)
}

/// `owner`'s field `field` that functions answer, callers held to `auth`.
fn computed_field(owner: &str, field: &FieldDef, auth: Vec<AuthRule>, model: &Arc<Model>) -> Field {
    let FieldKind::Function {
        field: custom,
        functions,
        http,
        direct,
    } = &field.kind
    else {
        unreachable!("only fields functions answer are computed")
    };
    let computed = Computed {
        type_name: owner.to_owned(),
        name: field.name.clone(),
        field: custom.clone(),
        functions: functions.clone(),
        http: http.clone(),
        direct: *direct,
        auth,
        published: false,
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
                // A value of a non-model type, read under the rules of whatever holds it.
                None => match ctx.parent_value.downcast_ref::<Embedded>() {
                    Some(value) => Json::Object(
                        value
                            .0
                            .iter()
                            .map(|(name, value)| (name.clone(), value_to_plain_json(value)))
                            .collect(),
                    ),
                    None => Json::Null,
                },
            };
            let answer = resolve(&ctx, &computed, source)
                .await
                .map_err(field_error)?;
            let published = match (&answer, computed.published) {
                (Json::Object(object), true) => Some(item_of(object.clone())),
                _ => None,
            };
            let value = value_of(&model, scope, &computed.field, answer).map_err(graphql_error)?;
            if let Some(answer) = published {
                publish(scope, &computed.name, answer)
                    .await
                    .map_err(graphql_error)?;
            }
            Ok(value)
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
    let functions = ctx.data::<Arc<Functions>>().map_err(|_| FunctionError {
        error_type: crate::functions::UNHANDLED.to_owned(),
        message: format!("{field}: no functions are configured"),
    })?;
    if let Some(call) = &computed.http {
        let request = http_request(ctx, computed, call, functions)?;
        return functions.http(&field, request).await;
    }
    if computed.functions.is_empty() {
        return Err(FunctionError {
            error_type: "MissingResolver".to_owned(),
            message: format!(
                "{field} has no resolver: give it @function(name:) and --function NAME=URL"
            ),
        });
    }
    let calls = ctx.data_opt::<Arc<Calls>>().map(Arc::as_ref);
    let mut event = event(ctx, computed, source);
    // One deadline for the field, its whole pipeline included, so that a pipeline of slow
    // functions is still its field's error rather than the request's timeout.
    let pipeline = async {
        let mut answer = Json::Null;
        for (at, function) in computed.functions.iter().enumerate() {
            if at > 0 {
                event["prev"] = serde_json::json!({ "result": answer });
            }
            answer = functions.call(calls, function, event.clone()).await?;
        }
        Ok(answer)
    };
    let deadline = functions.timeout();
    tokio::time::timeout(deadline, pipeline)
        .await
        .unwrap_or_else(|_| {
            Err(FunctionError {
                error_type: crate::functions::UNHANDLED.to_owned(),
                message: format!(
                    "{field}'s functions did not answer within {} s",
                    deadline.as_secs_f64()
                ),
            })
        })
}

/// The request Amplify's `@http` resolver makes: `params` filled into the URL's path,
/// `query` as query parameters (not for DELETE), `body` as JSON (for POST, PUT and PATCH), the
/// request's headers passed on as AppSync's `copyHeaders` does, then the directive's.
fn http_request(
    ctx: &ResolverContext<'_>,
    computed: &Computed,
    call: &HttpCall,
    functions: &Functions,
) -> Result<HttpRequest, FunctionError> {
    let field = format!("{}.{}", computed.type_name, computed.name);
    let unhandled = |message: String| FunctionError {
        error_type: crate::functions::UNHANDLED.to_owned(),
        message,
    };
    let arguments = arguments_of(ctx);
    let object = |name: &str| match arguments.get(name) {
        Some(Json::Object(object)) => object.clone(),
        _ => Map::new(),
    };
    let (params, query, body) = (object("params"), object("query"), object("body"));
    // A path parameter is one segment: never one that walks the path (`..`) or none at all.
    if let Some(name) = call.params.iter().find(|name| {
        let value = params.get(name.as_str()).map(text_of).unwrap_or_default();
        matches!(value.as_str(), "" | "." | "..")
    }) {
        return Err(FunctionError {
            error_type: "BadRequestException".to_owned(),
            message: format!("params.{name} must be a path segment, not empty, . or .."),
        });
    }
    let written = functions.url_of(&call.url).map_err(|e| unhandled(e.0))?;
    let url = fill_path(&written, &params)
        .parse::<reqwest::Url>()
        .map_err(|_| {
            unhandled(format!(
                "{field}: its @http URL is not a URL once filled in"
            ))
        })?;
    if call.method.has_body() {
        let missing = call.query.iter().find(|(name, required)| {
            *required
                && query.get(name).is_none_or(Json::is_null)
                && body.get(name).is_none_or(Json::is_null)
        });
        if missing.is_some() {
            return Err(FunctionError {
                error_type: "BadRequestException".to_owned(),
                message: "An argument you marked as Non-Null is not present in the query nor \
                          the body of your request."
                    .to_owned(),
            });
        }
    }
    let query_pairs = if call.method == HttpMethod::Delete {
        Vec::new()
    } else {
        query
            .iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(name, value)| (name.clone(), text_of(value)))
            .collect()
    };
    let mut headers: Vec<(String, String)> = ctx
        .data_opt::<RequestHeaders>()
        .map(|headers| {
            headers
                .0
                .iter()
                .filter(|(name, _)| !NOT_PASSED_ON.contains(&name.as_str()))
                .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    headers.push(("accept".to_owned(), "application/json".to_owned()));
    for (name, value) in &call.headers {
        headers.retain(|(given, _)| !given.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    let method = match call.method {
        HttpMethod::Get => reqwest::Method::GET,
        HttpMethod::Post => reqwest::Method::POST,
        HttpMethod::Put => reqwest::Method::PUT,
        HttpMethod::Delete => reqwest::Method::DELETE,
        HttpMethod::Patch => reqwest::Method::PATCH,
    };
    Ok(HttpRequest {
        method,
        url,
        headers,
        query: query_pairs,
        body: call.method.has_body().then_some(Json::Object(body)),
        text: !computed.field.list && matches!(computed.field.element.as_str(), "String" | "ID"),
    })
}

/// Request headers an `@http` call does not pass on: those of the connection and of the
/// request's own body, which the call makes anew.
const NOT_PASSED_ON: [&str; 13] = [
    "host",
    "proxy-authorization",
    "content-length",
    "content-type",
    "accept",
    "accept-encoding",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "expect",
];

/// `url` with each `:name` of its path replaced by `params[name]`, encoded as a path segment.
fn fill_path(url: &str, params: &Map<String, Json>) -> String {
    let Some(origin_end) = url
        .find("://")
        .and_then(|at| url[at + 3..].find('/').map(|path| at + 3 + path))
    else {
        return url.to_owned();
    };
    let (origin, path) = url.split_at(origin_end);
    let mut filled = String::from(origin);
    let mut rest = path;
    while let Some(at) = rest.find(':') {
        filled.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let length = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..length];
        match params.get(name) {
            Some(value) if !name.is_empty() => filled.extend(
                percent_encoding::utf8_percent_encode(&text_of(value), PATH_SEGMENT),
            ),
            _ => {
                filled.push(':');
                filled.push_str(name);
            }
        }
        rest = &after[length..];
    }
    filled.push_str(rest);
    filled
}

/// What a path segment may not hold as it is.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A value as a query parameter or path segment: a string as it is, anything else as JSON.
fn text_of(value: &Json) -> String {
    match value {
        Json::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The field's arguments as JSON.
pub(in crate::graphql) fn arguments_of(ctx: &ResolverContext<'_>) -> Map<String, Json> {
    ctx.args
        .iter()
        .map(|(name, value)| {
            let value = value.as_value().clone().into_json().unwrap_or(Json::Null);
            (name.to_string(), value)
        })
        .collect()
}

/// The event a function is given: Amplify's `@function` event (`typeName`, `fieldName`,
/// `arguments`, `identity`, `source`, `request`, `prev`), or, for a field bound in
/// `resolvers/`, AppSync's direct Lambda resolver event (`arguments`, `identity`, `source`,
/// `request`, `prev`, `info`, `stash`).
fn event(ctx: &ResolverContext<'_>, computed: &Computed, source: Json) -> Json {
    let arguments = arguments_of(ctx);
    let headers = ctx
        .data_opt::<RequestHeaders>()
        .map(|headers| Json::Object(headers.0.clone()))
        .unwrap_or_else(|| Json::Object(Map::new()));
    let identity = identity(ctx.data_opt::<Caller>());
    if !computed.direct {
        return serde_json::json!({
            "typeName": computed.type_name,
            "fieldName": computed.name,
            "arguments": arguments,
            "identity": identity,
            "source": source,
            "request": { "headers": headers },
            "prev": Json::Null,
        });
    }
    let field = ctx.ctx.field();
    let mut list = Vec::new();
    selection_list(field, "", &mut list);
    let variables = ctx
        .data_opt::<RequestVariables>()
        .map(|variables| variables.0.clone())
        .unwrap_or_else(|| Json::Object(Map::new()));
    serde_json::json!({
        "arguments": arguments,
        "identity": identity,
        "source": source,
        "request": { "headers": headers, "domainName": Json::Null },
        "prev": Json::Null,
        "info": {
            "fieldName": computed.name,
            "parentTypeName": computed.type_name,
            "variables": variables,
            "selectionSetList": list,
            "selectionSetGraphQL": selection_graphql(field, 0),
        },
        "stash": {},
    })
}

/// AppSync's `selectionSetList`: every field selected below `field`, by name (not alias), a
/// nested one as `parent/child`, fragments spread, each once.
fn selection_list(field: SelectionField<'_>, prefix: &str, list: &mut Vec<String>) {
    for child in field.selection_set() {
        if child.name().starts_with("__") {
            continue;
        }
        let path = format!("{prefix}{}", child.name());
        if !list.contains(&path) {
            list.push(path.clone());
        }
        selection_list(child, &format!("{path}/"), list);
    }
}

/// AppSync's `selectionSetGraphQL`: the field's selection set as GraphQL, fragments spread.
fn selection_graphql(field: SelectionField<'_>, depth: usize) -> String {
    let children: Vec<SelectionField<'_>> = field.selection_set().collect();
    if children.is_empty() {
        return String::new();
    }
    let indent = "  ".repeat(depth + 1);
    let mut text = String::from("{\n");
    for child in children {
        text.push_str(&indent);
        if let Some(alias) = child.alias() {
            text.push_str(alias);
            text.push_str(": ");
        }
        text.push_str(child.name());
        let arguments = child.arguments().unwrap_or_default();
        if !arguments.is_empty() {
            let written: Vec<String> = arguments
                .iter()
                .map(|(name, value)| format!("{name}: {value}"))
                .collect();
            text.push_str(&format!("({})", written.join(", ")));
        }
        let nested = selection_graphql(child, depth + 1);
        if !nested.is_empty() {
            text.push(' ');
            text.push_str(&nested);
        }
        text.push('\n');
    }
    text.push_str(&"  ".repeat(depth));
    text.push('}');
    text
}

/// A node as a function's `source`: its fields as JSON, those the caller may not read left
/// out, and nothing of the table's keys, slots, counts or edge set.
fn source_of(scope: &RequestScope, node: &Node) -> Json {
    let fields: Map<String, Json> = crate::engine::ids::own_fields(&node.item)
        .filter(|(name, _)| scope.may_read_field(&node.typename, name, &node.item))
        .map(|(name, value)| (name.clone(), value_to_plain_json(value)))
        .collect();
    Json::Object(fields)
}

/// AppSync's `identity` of the caller: a verified token's `sub`, `issuer`, `username`,
/// `claims` and `groups`; the Lambda authorizer's `resolverContext`; an IAM signer's
/// `accountId`, `userArn` and `username`; `null` for an API key or an open API.
pub(in crate::graphql) fn identity(caller: Option<&Caller>) -> Json {
    let claims = match caller {
        Some(Caller::Token(claims)) => claims,
        Some(Caller::Lambda(admitted)) => {
            return serde_json::json!({ "resolverContext": admitted.resolver_context });
        }
        Some(Caller::Iam(signer)) => {
            return serde_json::json!({
                "accountId": signer.account_id,
                "cognitoIdentityPoolId": Json::Null,
                "cognitoIdentityId": Json::Null,
                "sourceIp": [],
                "username": signer.username,
                "userArn": signer.user_arn,
                "cognitoIdentityAuthType": Json::Null,
                "cognitoIdentityAuthProvider": Json::Null,
            });
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
            item.insert(TYPENAME.to_owned(), AttrValue::S(element.to_owned()));
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
    typed_error(message, &error_type)
}
