//! Bounds that keep a small request from making a large answer.
//!
//! async-graphql's validation reports every fault it finds, each with a message that names what
//! it found. A 920 KB document that repeats one argument 230,000 times made 459,999 errors, a
//! 48.9 MB answer and 871 MB of memory; unknown arguments, unused variables, repeated directives
//! and one 500 KB name echoed back did the same. So, before validation, a document may hold at
//! most:
//!
//! - [`MAX_ARGUMENTS`] arguments on one field or directive,
//! - [`MAX_DIRECTIVES`] directives in one place,
//! - [`MAX_VARIABLES`] variables in one operation,
//! - [`MAX_DEFINITIONS`] operations and fragments,
//! - names of at most [`MAX_NAME_BYTES`] bytes,
//!
//! or it is refused with one `QueryLimitExceeded` error that echoes nothing. An `Int` given
//! outside signed 32 bits, in an argument, an input field or a variable, is refused as the
//! GraphQL spec requires (async-graphql's `Int` takes any 64-bit number); so is a string
//! literal where the document must write an enum value (`sortDirection: "DESC"`), which
//! async-graphql lets through because it validates literals and variables' JSON values with one
//! function, and JSON has no enums. And whatever still
//! goes wrong, an answer carries at most [`MAX_ERRORS`] errors (then one saying how many were
//! left out), each message cut to [`MAX_MESSAGE_BYTES`].
//!
//! Invariant: walking a document costs time linear in its size, and no recursion deeper than the
//! document's nesting, which the bracket limit bounds before it is parsed.

use async_graphql::parser::types::{
    BaseType, Directive, DocumentOperations, ExecutableDocument, OperationType, Selection,
    SelectionSet, Type,
};
use async_graphql::registry::{MetaField, MetaType, Registry};
use async_graphql::{Pos, Positioned, Response, ServerError, ServerResult, Variables};
use async_graphql_value::{ConstValue, Value};

use crate::graphql::errors::with_type;

pub const MAX_ARGUMENTS: usize = 64;
pub const MAX_DIRECTIVES: usize = 16;
pub const MAX_VARIABLES: usize = 256;
pub const MAX_DEFINITIONS: usize = 1000;
pub const MAX_NAME_BYTES: usize = 256;
pub const MAX_ERRORS: usize = 100;
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// A request error for a document over the limit named `limit`.
pub(in crate::graphql) fn over<T>(limit: &str, message: String) -> ServerResult<T> {
    let mut error = with_type(ServerError::new(message, None), "QueryLimitExceeded");
    if let Some(extensions) = &mut error.extensions {
        extensions.set("limit", limit);
    }
    Err(error)
}

/// Refuses a document over one of the bounds above.
pub(in crate::graphql) fn check(document: &ExecutableDocument) -> ServerResult<()> {
    let definitions = document.operations.iter().count() + document.fragments.len();
    if definitions > MAX_DEFINITIONS {
        return over(
            "definitions",
            format!(
                "the document defines {definitions} operations and fragments; at most \
                 {MAX_DEFINITIONS} are allowed"
            ),
        );
    }
    for (_, operation) in document.operations.iter() {
        let operation = &operation.node;
        let variables = &operation.variable_definitions;
        if variables.len() > MAX_VARIABLES {
            return over(
                "variables",
                format!(
                    "the operation defines {} variables; at most {MAX_VARIABLES} are allowed",
                    variables.len()
                ),
            );
        }
        for variable in variables {
            let variable = &variable.node;
            name(&variable.name.node)?;
            type_names(&variable.var_type.node)?;
            directives(&variable.directives)?;
            if let Some(default) = &variable.default_value {
                value(&default.node.clone().into_value())?;
            }
        }
        directives(&operation.directives)?;
        selection_set(&operation.selection_set.node)?;
    }
    for (fragment_name, fragment) in &document.fragments {
        name(fragment_name)?;
        name(&fragment.node.type_condition.node.on.node)?;
        directives(&fragment.node.directives)?;
        selection_set(&fragment.node.selection_set.node)?;
    }
    Ok(())
}

fn selection_set(selection_set: &SelectionSet) -> ServerResult<()> {
    for selection in &selection_set.items {
        match &selection.node {
            Selection::Field(field) => {
                let field = &field.node;
                name(&field.name.node)?;
                if let Some(alias) = &field.alias {
                    name(&alias.node)?;
                }
                arguments(&field.arguments)?;
                directives(&field.directives)?;
                selection_set_of(&field.selection_set)?;
            }
            Selection::FragmentSpread(spread) => {
                name(&spread.node.fragment_name.node)?;
                directives(&spread.node.directives)?;
            }
            Selection::InlineFragment(fragment) => {
                if let Some(condition) = &fragment.node.type_condition {
                    name(&condition.node.on.node)?;
                }
                directives(&fragment.node.directives)?;
                selection_set_of(&fragment.node.selection_set)?;
            }
        }
    }
    Ok(())
}

fn selection_set_of(positioned: &Positioned<SelectionSet>) -> ServerResult<()> {
    selection_set(&positioned.node)
}

fn directives(directives: &[Positioned<Directive>]) -> ServerResult<()> {
    if directives.len() > MAX_DIRECTIVES {
        return over(
            "directives",
            format!(
                "{} directives in one place; at most {MAX_DIRECTIVES} are allowed",
                directives.len()
            ),
        );
    }
    for directive in directives {
        name(&directive.node.name.node)?;
        arguments(&directive.node.arguments)?;
    }
    Ok(())
}

fn arguments(
    arguments: &[(Positioned<async_graphql::Name>, Positioned<Value>)],
) -> ServerResult<()> {
    if arguments.len() > MAX_ARGUMENTS {
        return over(
            "arguments",
            format!(
                "{} arguments in one place; at most {MAX_ARGUMENTS} are allowed",
                arguments.len()
            ),
        );
    }
    for (argument, argument_value) in arguments {
        name(&argument.node)?;
        value(&argument_value.node)?;
    }
    Ok(())
}

/// The names inside a value: its variables, enum values and object keys.
fn value(value: &Value) -> ServerResult<()> {
    match value {
        Value::Variable(variable) | Value::Enum(variable) => name(variable),
        Value::List(items) => items.iter().try_for_each(self::value),
        Value::Object(fields) => fields.iter().try_for_each(|(key, field)| {
            name(key)?;
            self::value(field)
        }),
        _ => Ok(()),
    }
}

fn type_names(ty: &Type) -> ServerResult<()> {
    match &ty.base {
        BaseType::Named(type_name) => name(type_name),
        BaseType::List(element) => type_names(element),
    }
}

/// Refuses a name too long to echo, without echoing it: the document's names, and the
/// request's `operationName`.
pub(in crate::graphql) fn name(name: &str) -> ServerResult<()> {
    if name.len() > MAX_NAME_BYTES {
        return over(
            "nameLength",
            format!(
                "a name of {} bytes; at most {MAX_NAME_BYTES} are allowed",
                name.len()
            ),
        );
    }
    Ok(())
}

/// Refuses an `Int` outside signed 32 bits wherever the document or its variables give one,
/// and a string literal written in the document where an enum value belongs. A variable's
/// value is JSON, where an enum value can only be a string: it is an enum value there.
pub(in crate::graphql) fn check_values(
    registry: &Registry,
    document: &ExecutableDocument,
    operation_name: Option<&str>,
    variables: &Variables,
) -> ServerResult<()> {
    // Only the operation that runs: another may declare the same variable as a Float.
    let runs = |name: Option<&async_graphql::Name>| match (&document.operations, operation_name) {
        (DocumentOperations::Single(_), _) => true,
        (DocumentOperations::Multiple(_), wanted) => name.map(|n| n.as_str()) == wanted,
    };
    // Its variables, for the positions they are used in (fragments included: they run with
    // the variables of the operation that spreads them).
    let declared = document
        .operations
        .iter()
        .filter(|(name, _)| runs(*name))
        .flat_map(|(_, operation)| &operation.node.variable_definitions)
        .map(|variable| {
            let variable = &variable.node;
            let ty = &variable.var_type.node;
            // A nullable variable with a default is non-null where it is used.
            let ty = if ty.nullable && variable.default_value.is_some() {
                Type {
                    base: ty.base.clone(),
                    nullable: false,
                }
            } else {
                ty.clone()
            };
            (variable.name.node.as_str(), ty)
        })
        .collect();
    let ints = Values { registry, declared };
    for (name, operation) in document.operations.iter() {
        if !runs(name) {
            continue;
        }
        let operation = &operation.node;
        for variable in &operation.variable_definitions {
            let variable = &variable.node;
            let ty = variable.var_type.node.to_string();
            let path = format!("${}", variable.name.node);
            if let Some(default) = &variable.default_value {
                ints.value(&ty, &default.node, &path, Some(default.pos))?;
            }
            if let Some(given) = variables.get(&variable.name.node) {
                ints.value(&ty, given, &path, None)?;
            }
        }
        let root = match operation.ty {
            OperationType::Query => Some(registry.query_type.as_str()),
            OperationType::Mutation => registry.mutation_type.as_deref(),
            OperationType::Subscription => registry.subscription_type.as_deref(),
        };
        ints.selection_set(&operation.selection_set.node, root)?;
    }
    for fragment in document.fragments.values() {
        let on = fragment.node.type_condition.node.on.node.as_str();
        ints.selection_set(&fragment.node.selection_set.node, Some(on))?;
    }
    Ok(())
}

/// Whether a variable of type `variable` may be used where `location` is expected (the
/// spec's AreTypesCompatible).
fn fits(variable: &Type, location: &Type) -> bool {
    if !location.nullable {
        if variable.nullable {
            return false;
        }
        return fits_base(&variable.base, &location.base);
    }
    fits_base(&variable.base, &location.base)
}

fn fits_base(variable: &BaseType, location: &BaseType) -> bool {
    match (variable, location) {
        (BaseType::List(variable), BaseType::List(location)) => fits(variable, location),
        (BaseType::Named(variable), BaseType::Named(location)) => variable == location,
        _ => false,
    }
}

/// The walk of [`check_values`]: each selection once, typed by the schema; fragments where they
/// are defined, not where they are spread.
struct Values<'r> {
    registry: &'r Registry,
    /// The running operation's variables and their types.
    declared: std::collections::HashMap<&'r str, Type>,
}

impl Values<'_> {
    fn selection_set(
        &self,
        selection_set: &SelectionSet,
        parent: Option<&str>,
    ) -> ServerResult<()> {
        for selection in &selection_set.items {
            match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let meta = parent
                        .and_then(|parent| declared_field(self.registry, parent, &field.name.node));
                    if let Some(meta) = meta {
                        for (argument, value) in &field.arguments {
                            if let Some(input) = meta.args.get(argument.node.as_str()) {
                                self.variables_in(&input.ty, &value.node, value.pos)?;
                                let constant = value.node.clone().into_const_with(|_| {
                                    // Variables are checked with their own values.
                                    Ok::<_, ()>(ConstValue::Null)
                                });
                                if let Ok(constant) = constant {
                                    self.value(
                                        &input.ty,
                                        &constant,
                                        argument.node.as_str(),
                                        Some(value.pos),
                                    )?;
                                }
                            }
                        }
                    }
                    let child = meta.map(|meta| named_type(&meta.ty));
                    self.selection_set(&field.selection_set.node, child)?;
                }
                Selection::InlineFragment(fragment) => {
                    let on = fragment
                        .node
                        .type_condition
                        .as_ref()
                        .map(|condition| condition.node.on.node.as_str())
                        .or(parent);
                    self.selection_set(&fragment.node.selection_set.node, on)?;
                }
                Selection::FragmentSpread(_) => {}
            }
        }
        Ok(())
    }

    /// Refuses a variable used where its type does not fit ("All Variable Usages Are
    /// Allowed" of the spec's validation), anywhere inside `value`, given where `ty` is
    /// expected: an `Int` variable in an `ID` position would otherwise reach a resolver.
    fn variables_in(&self, ty: &str, value: &Value, pos: Pos) -> ServerResult<()> {
        match value {
            Value::Variable(name) => {
                let (Some(declared), Some(expected)) =
                    (self.declared.get(name.as_str()), Type::new(ty))
                else {
                    return Ok(());
                };
                if fits(declared, &expected) {
                    return Ok(());
                }
                Err(ServerError::new(
                    format!(
                        "Variable \"${name}\" of type \"{declared}\" used in position expecting type \"{expected}\"."
                    ),
                    Some(pos),
                ))
            }
            Value::List(items) => {
                let element = ty.strip_suffix('!').unwrap_or(ty);
                let element = element
                    .strip_prefix('[')
                    .and_then(|t| t.strip_suffix(']'))
                    .unwrap_or(element);
                items
                    .iter()
                    .try_for_each(|item| self.variables_in(element, item, pos))
            }
            Value::Object(fields) => {
                let named = ty.trim_end_matches('!');
                match self.registry.types.get(named) {
                    Some(MetaType::InputObject { input_fields, .. }) => {
                        fields.iter().try_for_each(|(name, field)| {
                            match input_fields.get(name.as_str()) {
                                Some(input) => self.variables_in(&input.ty, field, pos),
                                None => Ok(()),
                            }
                        })
                    }
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Checks `value`, given where the type `ty` is expected, at `path`: a literal of the
    /// document at `literal`, or a variable's value when that is `None`.
    fn value(
        &self,
        ty: &str,
        value: &ConstValue,
        path: &str,
        literal: Option<Pos>,
    ) -> ServerResult<()> {
        let ty = ty.strip_suffix('!').unwrap_or(ty);
        if let Some(element) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            return match value {
                ConstValue::List(items) => items.iter().enumerate().try_for_each(|(i, item)| {
                    self.value(element, item, &format!("{path}[{i}]"), literal)
                }),
                // A single value where a list is expected is a list of one.
                other => self.value(element, other, path, literal),
            };
        }
        match (ty, value) {
            ("Int", ConstValue::Number(number)) => {
                let fits = number.as_i64().is_some_and(|n| i32::try_from(n).is_ok());
                if fits {
                    Ok(())
                } else {
                    let message = format!(
                        "{path}: Int cannot represent {number}: it takes a signed 32-bit integer"
                    );
                    Err(with_type(
                        ServerError::new(message, literal),
                        "BadUserInput",
                    ))
                }
            }
            (_, ConstValue::String(text)) if literal.is_some() => {
                match self.registry.types.get(ty) {
                    Some(MetaType::Enum { .. }) => {
                        let message = format!(
                            "{path}: an enum value is written without quotes; {:?} is a string",
                            cut(text)
                        );
                        Err(with_type(
                            ServerError::new(message, literal),
                            "BadUserInput",
                        ))
                    }
                    _ => Ok(()),
                }
            }
            (_, ConstValue::Object(fields)) => match self.registry.types.get(ty) {
                Some(MetaType::InputObject { input_fields, .. }) => {
                    fields.iter().try_for_each(|(name, field)| {
                        match input_fields.get(name.as_str()) {
                            Some(input) => {
                                self.value(&input.ty, field, &format!("{path}.{name}"), literal)
                            }
                            None => Ok(()),
                        }
                    })
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// At most the first [`MAX_NAME_BYTES`] bytes of `text`, for echoing it.
fn cut(text: &str) -> &str {
    let mut end = text.len().min(MAX_NAME_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The field `name` of the object or interface type `parent`, as the schema declares it.
pub(in crate::graphql) fn declared_field<'r>(
    registry: &'r Registry,
    parent: &str,
    name: &str,
) -> Option<&'r MetaField> {
    match registry.types.get(parent)? {
        MetaType::Object { fields, .. } | MetaType::Interface { fields, .. } => fields.get(name),
        _ => None,
    }
}

/// `Goal` of `[Goal!]!`.
pub(in crate::graphql) fn named_type(ty: &str) -> &str {
    ty.trim_matches(|c| c == '[' || c == ']' || c == '!')
}

/// The answer with each request error that names something the client did not send (`sent`:
/// the document's names, outside strings and comments; a field, a type, an argument of the
/// schema's) told in general terms instead: in production the schema is not
/// for clients to learn from error messages. Our own errors (those with an `errorType`) name
/// nothing of the schema and stay as they are.
pub(in crate::graphql) fn naming_only_what_was_sent(
    mut response: Response,
    sent: &std::collections::HashSet<&str>,
) -> Response {
    for error in &mut response.errors {
        let ours = error
            .extensions
            .as_ref()
            .is_some_and(|extensions| extensions.get("errorType").is_some());
        if ours || !error.path.is_empty() {
            continue;
        }
        let named: Vec<&str> = error.message.split('"').skip(1).step_by(2).collect();
        let sent = named.iter().all(|name| {
            let name = name.trim_matches(|c: char| matches!(c, '$' | '[' | ']' | '!'));
            !name.is_empty() && sent.contains(name)
        });
        if !sent {
            error.message = "the document does not fit this API; it was refused before it ran \
                             (the locations say where)"
                .to_owned();
        }
    }
    response
}

/// The answer with at most [`MAX_ERRORS`] errors (then one that counts the rest) and each
/// message cut to [`MAX_MESSAGE_BYTES`].
pub(in crate::graphql) fn capped(mut response: Response) -> Response {
    if response.errors.len() > MAX_ERRORS {
        let left_out = response.errors.len() - MAX_ERRORS;
        response.errors.truncate(MAX_ERRORS);
        let message = format!("{left_out} more errors were left out; fix these and send it again");
        let mut error = with_type(ServerError::new(message, None), "TooManyErrors");
        if let Some(extensions) = &mut error.extensions {
            extensions.set("leftOut", left_out as u64);
        }
        // Among field errors it is one too (with a path); among request errors, one of them.
        if let Some(last) = response.errors.last() {
            error.path = last.path.clone();
        }
        response.errors.push(error);
    }
    for error in &mut response.errors {
        if error.message.len() > MAX_MESSAGE_BYTES {
            let mut end = MAX_MESSAGE_BYTES;
            while !error.message.is_char_boundary(end) {
                end -= 1;
            }
            error.message.truncate(end);
            error.message.push('…');
        }
    }
    response
}
