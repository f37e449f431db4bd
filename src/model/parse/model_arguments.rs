//! `@model`'s arguments as Amplify reads them: the root fields `queries:`, `mutations:` and
//! `subscriptions:` keep or rename, and the times `timestamps:` keeps or renames (with the
//! declared fields that are those times).

use super::Reader;
use crate::model::{ModelError, RootNames};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::ConstDirective;
use async_graphql_value::indexmap::IndexMap;
use async_graphql_value::{ConstValue, Name};

impl Reader<'_> {
    /// The root fields `@model(queries:, mutations:, subscriptions:)` asks for `type_name`, as
    /// Amplify reads them: an argument left out keeps every field of its kind; `null` leaves
    /// them all out; an object names those it keeps (`queries: { get: "getPost" }` keeps the
    /// get query, named `getPost`, and leaves out the list). `subscriptions: { level: off }`
    /// leaves them out too.
    pub(super) fn root_names(
        &self,
        type_name: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<RootNames, ModelError> {
        let mut roots = RootNames::in_dialect(type_name, &self.dialect);
        // Each argument with the names it may give and where each goes.
        type Names<'r> = [(&'static str, &'r mut Option<String>); 3];
        let groups: [(&str, Names<'_>); 2] = [
            (
                "queries",
                [
                    ("get", &mut roots.get),
                    ("list", &mut roots.list),
                    // Amplify's `sync` (DataStore) has nothing to name here.
                    ("sync", &mut None),
                ],
            ),
            (
                "mutations",
                [
                    ("create", &mut roots.create),
                    ("update", &mut roots.update),
                    ("delete", &mut roots.delete),
                ],
            ),
        ];
        for (argument, names) in groups {
            let Some(value) = directive.node.get_argument(argument) else {
                continue;
            };
            let fail = |message: String| self.error(value.pos, message);
            let given =
                root_argument_is_null_or_object(type_name, argument, value).map_err(fail)?;
            let known: Vec<&str> = names.iter().map(|(name, _)| *name).collect();
            root_names_are_known(type_name, argument, given, &known).map_err(fail)?;
            for (name, slot) in names {
                *slot =
                    root_name_is_a_field_name(type_name, argument, given, name).map_err(fail)?;
            }
        }
        if let Some(value) = directive.node.get_argument("subscriptions") {
            self.subscription_names(type_name, value, &mut roots)?;
        }
        Ok(roots)
    }

    /// The subscriptions `@model(subscriptions:)` keeps for `type_name`: `null` or
    /// `level: off`, none; an object names one of each it keeps, or (with `level` alone) keeps
    /// every one.
    fn subscription_names(
        &self,
        type_name: &str,
        value: &Positioned<ConstValue>,
        roots: &mut RootNames,
    ) -> Result<(), ModelError> {
        let fail = |message: String| self.error(value.pos, message);
        let given = subscriptions_argument_is_null_or_object(type_name, value).map_err(fail)?;
        let off = given.is_none_or(|given| {
            matches!(given.get("level"), Some(ConstValue::Enum(level)) if level.as_str() == "off")
        });
        let names = [
            ("onCreate", &mut roots.on_create),
            ("onUpdate", &mut roots.on_update),
            ("onDelete", &mut roots.on_delete),
        ];
        for (name, slot) in names {
            let chosen = given.filter(|_| !off).and_then(|given| given.get(name));
            *slot = subscription_name_is_one(type_name, name, chosen).map_err(fail)?;
        }
        // A `level` of `public` or `on` keeps the names given (or, given none, every one).
        if !off && given.is_some_and(|g| g.keys().all(|k| k.as_str() == "level")) {
            let all = RootNames::in_dialect(type_name, &self.dialect);
            (roots.on_create, roots.on_update, roots.on_delete) =
                (all.on_create, all.on_update, all.on_delete);
        }
        Ok(())
    }

    /// The times `@model(timestamps:)` keeps for `type_name`, as Amplify reads it: left out,
    /// `createdAt` and `updatedAt`; `null`, neither; an object renames each it names
    /// (`{ createdAt: "createdOn", updatedAt: null }`: the creation time as `createdOn`, no
    /// update time), a name it leaves out keeping its default.
    pub(super) fn timestamps(
        &self,
        type_name: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<crate::model::Timestamps, ModelError> {
        let mut timestamps = crate::model::Timestamps::default();
        let Some(argument) = directive.node.get_argument("timestamps") else {
            return Ok(timestamps);
        };
        let here = format!("{type_name}: @model(timestamps:)");
        let names = match &argument.node {
            ConstValue::Null => {
                return Ok(crate::model::Timestamps {
                    created: None,
                    updated: None,
                    declared: Vec::new(),
                });
            }
            ConstValue::Object(names) => names,
            _ => {
                return Err(self.error(
                    argument.pos,
                    format!(
                        "{here} takes null or {{ createdAt: \"<name>\", updatedAt: \"<name>\" }}"
                    ),
                ));
            }
        };
        for (key, value) in names {
            let name = match value {
                ConstValue::Null => None,
                ConstValue::String(name) if is_graphql_name(name) => Some(name.clone()),
                _ => {
                    return Err(self.error(
                        argument.pos,
                        format!("{here}: {key} takes a field name or null, not {value}"),
                    ));
                }
            };
            match key.as_str() {
                "createdAt" => timestamps.created = name,
                "updatedAt" => timestamps.updated = name,
                other => {
                    return Err(self.error(
                        argument.pos,
                        format!("{here} names createdAt and updatedAt, not {other}"),
                    ));
                }
            }
        }
        let clash = match (&timestamps.created, &timestamps.updated) {
            (Some(created), Some(updated)) if created == updated => Some(created.as_str()),
            _ => [&timestamps.created, &timestamps.updated]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .find(|name| {
                    matches!(*name, "id" | "version" | "__typename")
                        || super::is_reserved_attribute(name)
                }),
        };
        if let Some(clash) = clash {
            return Err(self.error(
                argument.pos,
                format!("{here}: {clash} cannot be a time's name (it names another field)"),
            ));
        }
        Ok(timestamps)
    }

    /// Whether `field`, a field `owner` declares, is one of its times as `timestamps` names
    /// them (declared as Amplify lets a schema declare them: `AWSDateTime` or `String`, with no
    /// directive), and so served as the time. A `createdAt` or `updatedAt` that the times leave
    /// out or rename is refused.
    pub(super) fn declared_timestamp(
        &self,
        owner: &str,
        timestamps: &crate::model::Timestamps,
        field: &Positioned<async_graphql_parser::types::FieldDefinition>,
    ) -> Result<bool, ModelError> {
        let name = field.node.name.node.as_str();
        let default = matches!(name, "createdAt" | "updatedAt");
        match (timestamps.is(name), default) {
            // The default names: as without `timestamps:`.
            (true, true) | (false, false) => Ok(false),
            (true, false) => {
                let ty = field.node.ty.node.to_string();
                let typed = matches!(
                    ty.as_str(),
                    "AWSDateTime" | "AWSDateTime!" | "String" | "String!"
                );
                match typed && field.node.directives.is_empty() {
                    true => Ok(true),
                    false => Err(self.error(
                        field.pos,
                        format!(
                            "{owner}.{name} is a time kept by @model(timestamps:) as \
                             `{name}: AWSDateTime!`; declare it so or remove it"
                        ),
                    )),
                }
            }
            (false, true) => Err(self.error(
                field.pos,
                format!(
                    "{owner}.{name}: @model(timestamps:) leaves {name} out or renames it; a \
                     field {name} is not served besides"
                ),
            )),
        }
    }
}

/// The names `@model(queries:)` or `@model(mutations:)` gives, as written.
type GivenNames<'v> = Option<&'v IndexMap<Name, ConstValue>>;

/// `@model(queries:)` or `@model(mutations:)` is `null` (none of its fields) or an object
/// naming those kept: anything else is refused, as Amplify would not know what it keeps.
fn root_argument_is_null_or_object<'v>(
    type_name: &str,
    argument: &str,
    value: &'v Positioned<ConstValue>,
) -> Result<GivenNames<'v>, String> {
    match &value.node {
        ConstValue::Null => Ok(None),
        ConstValue::Object(given) => Ok(Some(given)),
        _ => Err(format!(
            "{type_name}: @model({argument}:) takes null or an object of names"
        )),
    }
}

/// Each key of `@model(queries:)` or `@model(mutations:)` is one of the fields it may name
/// (`known`): a misspelt key would otherwise silently leave its field out.
fn root_names_are_known(
    type_name: &str,
    argument: &str,
    given: GivenNames<'_>,
    known: &[&str],
) -> Result<(), String> {
    match given.and_then(|given| given.keys().find(|key| !known.contains(&key.as_str()))) {
        Some(unknown) => Err(format!("{type_name}: @model({argument}:) has no {unknown}")),
        None => Ok(()),
    }
}

/// The name `@model(queries:)` or `@model(mutations:)` gives its field `name` is a GraphQL
/// name, or `null` (left out): it becomes a root field's name.
fn root_name_is_a_field_name(
    type_name: &str,
    argument: &str,
    given: GivenNames<'_>,
    name: &str,
) -> Result<Option<String>, String> {
    match given.and_then(|given| given.get(name)) {
        Some(ConstValue::String(chosen)) if is_graphql_name(chosen) => Ok(Some(chosen.clone())),
        None | Some(ConstValue::Null) => Ok(None),
        Some(_) => Err(format!(
            "{type_name}: @model({argument}: {{ {name} }}) takes a field name"
        )),
    }
}

/// `@model(subscriptions:)` is `null` (none) or an object: anything else is refused, as
/// Amplify would not know which it keeps.
fn subscriptions_argument_is_null_or_object<'v>(
    type_name: &str,
    value: &'v Positioned<ConstValue>,
) -> Result<GivenNames<'v>, String> {
    match &value.node {
        ConstValue::Null => Ok(None),
        ConstValue::Object(given) => Ok(Some(given)),
        _ => Err(format!(
            "{type_name}: @model(subscriptions:) takes null or an object"
        )),
    }
}

/// What `@model(subscriptions:)` gives its subscription `name` (`chosen`) is a list of at
/// most one GraphQL name, or `null`: Amplify takes a list, but one subscription of each kind
/// is all that is served.
fn subscription_name_is_one(
    type_name: &str,
    name: &str,
    chosen: Option<&ConstValue>,
) -> Result<Option<String>, String> {
    match chosen {
        None | Some(ConstValue::Null) => Ok(None),
        Some(ConstValue::List(chosen)) => match &chosen[..] {
            [] => Ok(None),
            [ConstValue::String(one)] if is_graphql_name(one) => Ok(Some(one.clone())),
            _ => Err(format!(
                "{type_name}: @model(subscriptions: {{ {name} }}) names one \
                 subscription here"
            )),
        },
        Some(_) => Err(format!(
            "{type_name}: @model(subscriptions: {{ {name} }}) takes a list of names"
        )),
    }
}

fn is_graphql_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    //! `@model`'s arguments, read and refused as Amplify reads them.

    use super::super::{assert_all_refused as refused, assert_refused};
    use crate::model::*;

    #[test]
    fn model_arguments_are_read_as_amplify_reads_them() {
        let model = Model::parse(
            "schema.graphql",
            "type A @model(queries: null, mutations: { create: \"addA\" }, subscriptions: { onCreate: [\"onAddA\"] }) { n: Int }\n\
             type B @model(subscriptions: { level: off }) { n: Int }\n\
             type C @model(subscriptions: { level: public }) { n: Int }",
        )
        .expect("the schema loads");
        let roots = |name: &str| model.type_def(name).expect("declared").roots.clone();
        let a = roots("A");
        assert_eq!((a.get, a.list), (None, None));
        assert_eq!(a.create.as_deref(), Some("addA"));
        assert_eq!((a.update, a.delete), (None, None));
        assert_eq!(a.on_create.as_deref(), Some("onAddA"));
        assert_eq!(a.on_update, None);
        assert_eq!(roots("B").on_create, None);
        assert_eq!(
            roots("C"),
            RootNames::in_dialect(
                "C",
                &Dialect {
                    shape: ApiShape::Amplify,
                    ..Dialect::default()
                }
            )
        );
        refused(&[
            (
                "type A @model(timestamps: { createdAt: \"on\", at: null }) { n: Int }",
                "A: @model(timestamps:) names createdAt and updatedAt, not at",
            ),
            (
                "type A @model(queries: { fetch: \"x\" }) { n: Int }",
                "@model(queries:) has no fetch",
            ),
            (
                "type A @model(queries: { get: \"not a name\" }) { n: Int }",
                "takes a field name",
            ),
            (
                "type A @model(queries: { get: \"getB\" }) { n: Int }\ntype B @model(queries: { get: \"getB\" }) { n: Int }",
                "type B: getB is already a field of Query",
            ),
            (
                "type A @model(mutations: { create: \"createAs\" }) { n: Int }",
                "type A: createAs is already a field of Mutation",
            ),
        ]);
    }

    #[test]
    fn root_arguments_that_are_not_null_or_an_object_are_refused() {
        assert_refused(
            "type A @model(queries: \"getA\") { n: Int }",
            "A: @model(queries:) takes null or an object of names",
        );
        assert_refused(
            "type A @model(mutations: [\"createA\"]) { n: Int }",
            "A: @model(mutations:) takes null or an object of names",
        );
    }

    #[test]
    fn root_names_that_are_not_known_are_refused() {
        assert_refused(
            "type A @model(mutations: { upsert: \"x\" }) { n: Int }",
            "A: @model(mutations:) has no upsert",
        );
    }

    #[test]
    fn root_names_that_are_not_field_names_are_refused() {
        assert_refused(
            "type A @model(mutations: { delete: 1 }) { n: Int }",
            "A: @model(mutations: { delete }) takes a field name",
        );
    }

    #[test]
    fn a_subscriptions_argument_that_is_not_null_or_an_object_is_refused() {
        assert_refused(
            "type A @model(subscriptions: off) { n: Int }",
            "A: @model(subscriptions:) takes null or an object",
        );
    }

    #[test]
    fn more_than_one_subscription_name_is_refused() {
        assert_refused(
            "type A @model(subscriptions: { onCreate: [\"x\", \"y\"] }) { n: Int }",
            "A: @model(subscriptions: { onCreate }) names one subscription here",
        );
        assert_refused(
            "type A @model(subscriptions: { onUpdate: [\"not a name\"] }) { n: Int }",
            "A: @model(subscriptions: { onUpdate }) names one subscription here",
        );
    }

    #[test]
    fn subscription_names_that_are_not_a_list_are_refused() {
        assert_refused(
            "type A @model(subscriptions: { onDelete: \"x\" }) { n: Int }",
            "A: @model(subscriptions: { onDelete }) takes a list of names",
        );
    }
}
