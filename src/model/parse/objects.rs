//! Object types: `@model` types, the embedded types stored inside a node, their `@index`es and
//! the list arguments they take.

use super::{Names, PendingRelation, Reader, description};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{
    Allow, AuthRule, DEFAULT_LIST_SHARDS, FieldDef, FieldKind, IndexDef, ListDef, MAX_LIST_SHARDS,
    ModelError, ObjectDef, ScalarType, TypeDef,
};
use async_graphql_parser::types::{
    BaseType, ConstDirective, FieldDefinition, TypeDefinition, TypeKind,
};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;
use std::collections::BTreeSet;

impl Reader<'_> {
    /// An object type without `@model`: its fields hold scalars, enum values, lists of them and
    /// other such objects, stored inside the node that holds the value.
    pub(super) fn read_embedded(
        &self,
        definition: &Positioned<TypeDefinition>,
        names: &Names<'_>,
    ) -> Result<ObjectDef, ModelError> {
        let name = definition.node.name.node.to_string();
        let TypeKind::Object(kind) = &definition.node.kind else {
            unreachable!("read_embedded is only called for object types");
        };
        let not_appsync = |d: &&Positioned<ConstDirective>| {
            !APPSYNC_DIRECTIVES.contains(&d.node.name.node.as_str())
        };
        // Checked as everywhere (a wrong argument stops start-up), then left to the holding node.
        let appsync = kind.fields.iter().flat_map(|f| &f.node.directives);
        for directive in definition.node.directives.iter().chain(appsync) {
            if !not_appsync(&directive) {
                self.appsync_rule(directive)?;
            }
        }
        // Amplify's `@auth` on a field of a type without `@model` stands for AppSync's
        // directives there (Amplify writes them from it): read, then left to the holding node.
        let not_rule =
            |d: &&Positioned<ConstDirective>| not_appsync(d) && d.node.name.node != "auth";
        for field in &kind.fields {
            for directive in &field.node.directives {
                if directive.node.name.node == "auth" {
                    self.auth_rules(directive)?;
                    self.warnings.borrow_mut().push(format!(
                        "{name}.{}: @auth on a field of a type without @model is not a rule \
                         of its own here: the value is read with what holds it, under those \
                         rules",
                        field.node.name.node
                    ));
                }
            }
        }
        if let Some(directive) = definition.node.directives.iter().find(not_appsync) {
            return Err(self.error(
                directive.pos,
                format!(
                    "type {name}: @{} works on @model types; add @model to store {name} as nodes",
                    directive.node.name.node
                ),
            ));
        }
        if let Some(interface) = kind.implements.first() {
            return Err(self.error(
                interface.pos,
                format!("type {name}: a type without @model implements no interface"),
            ));
        }
        let mut fields = Vec::new();
        for field in &kind.fields {
            let field_name = field.node.name.node.to_string();
            // A field its functions or its `@http` call answer (bound in `resolvers/` too), given
            // the value it is a field of as the event's `source`: never stored.
            if let Some(computed) = self.computed_field_def(&name, field, names)? {
                fields.push(computed);
                continue;
            }
            // AppSync asks non-model types to repeat the auth modes that reach them; here their
            // values are read with the node that holds them, under that node's rules.
            if let Some(directive) = field.node.directives.iter().find(not_rule) {
                return Err(self.error(
                    directive.pos,
                    format!(
                        "{name}.{field_name}: @{} works on @model types; {name} has no @model, \
                         so its values are stored inside the nodes that hold them",
                        directive.node.name.node
                    ),
                ));
            }
            if !field.node.arguments.is_empty() {
                return Err(self.error(
                    field.pos,
                    format!(
                        "{name}.{field_name}: a field of a type without @model takes no arguments"
                    ),
                ));
            }
            let ty = &field.node.ty.node;
            let (element, list) = match &ty.base {
                BaseType::Named(element) => (element, None),
                BaseType::List(inner) => match &inner.base {
                    BaseType::Named(element) => (element, Some(!inner.nullable)),
                    BaseType::List(_) => {
                        return Err(self.error(
                            field.node.ty.pos,
                            format!("{name}.{field_name}: lists of lists are not supported"),
                        ));
                    }
                },
            };
            let kind = if let Some(scalar) = names.scalar(element) {
                match list {
                    None => FieldKind::Scalar {
                        scalar,
                        required: !ty.nullable,
                        unique: false,
                        default: None,
                    },
                    Some(elements_required) => FieldKind::ScalarList {
                        scalar,
                        required: !ty.nullable,
                        elements_required,
                    },
                }
            } else if names.objects.contains(element.as_str()) {
                FieldKind::Embedded {
                    object: element.to_string(),
                    required: !ty.nullable,
                    list,
                }
            } else if names.is_node_type(element) {
                return Err(self.error(
                    field.node.ty.pos,
                    format!(
                        "{name}.{field_name}: a type without @model holds values, not nodes; \
                         store the id ({field_name}Id: ID) and relate the node from a @model type"
                    ),
                ));
            } else {
                return Err(self.error(
                    field.node.ty.pos,
                    format!("{name}.{field_name}: unknown type {element}"),
                ));
            };
            fields.push(FieldDef {
                name: field_name,
                description: description(field.node.description.as_ref()),
                kind,
                auth: Vec::new(),
            });
        }
        Ok(ObjectDef {
            name,
            description: description(definition.node.description.as_ref()),
            fields,
        })
    }

    pub(super) fn read_object(
        &self,
        definition: &Positioned<TypeDefinition>,
        names: &Names<'_>,
        relations: &mut Vec<PendingRelation>,
    ) -> Result<TypeDef, ModelError> {
        let name = definition.node.name.node.to_string();
        let TypeKind::Object(kind) = &definition.node.kind else {
            unreachable!("read_object is only called for object types");
        };
        let mut is_model = false;
        let mut roots = crate::model::RootNames::in_dialect(&name, &self.dialect);
        let mut timestamps = crate::model::Timestamps::default();
        let mut list = Some(DEFAULT_LIST_SHARDS);
        let mut list_sort_by = None;
        let mut auth = Vec::new();
        for directive in &definition.node.directives {
            match directive.node.name.node.as_str() {
                "auth" => auth.extend(self.auth_rules(directive)?),
                name if APPSYNC_DIRECTIVES.contains(&name) => {
                    auth.push(self.appsync_rule(directive)?);
                }
                "model" => {
                    self.expect_arguments(
                        directive,
                        &[
                            "list",
                            "listShards",
                            "listSortBy",
                            "queries",
                            "mutations",
                            "subscriptions",
                            "timestamps",
                        ],
                    )?;
                    roots = self.root_names(&name, directive)?;
                    timestamps = self.timestamps(&name, directive)?;
                    is_model = true;
                    list = self.list_argument(directive, &name)?;
                    list_sort_by = self
                        .optional_string_argument(directive, "listSortBy")?
                        .map(|field| (directive.pos, field));
                }
                // Amplify's full-text search: the type loads, its search query does not exist.
                "searchable" => self.warnings.borrow_mut().push(format!(
                    "{name}: @searchable's query search{} is left out of the API: tablegraph \
                     has no full-text engine (a function field can serve one)",
                    crate::model::plural(&name)
                )),
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        if !is_model {
            return Err(self.error(
                definition.pos,
                format!("type {name} needs @model: every object type is stored as nodes"),
            ));
        }
        let implements = self.check_implements(&name, kind, names, &timestamps)?;

        let mut fields = Vec::new();
        let mut seen = BTreeSet::new();
        for field in &kind.fields {
            let field_name = field.node.name.node.as_str();
            if !seen.insert(field_name) {
                return Err(self.error(field.pos, format!("{name}.{field_name} is declared twice")));
            }
            if self.declared_timestamp(&name, &timestamps, field)? {
                continue;
            }
            if let Some(field) = self.read_field(&name, field, names, relations)? {
                fields.push(field);
            }
        }
        let (primary_key, primary_sort) = self.read_primary_key(&name, &fields, kind)?;
        let mut indexes: Vec<IndexDef> = Vec::new();
        // A composite key's nodes are listed under the key's first field, sorted by the others.
        if let Some((key, scalar)) = primary_key.clone().filter(|_| !primary_sort.is_empty()) {
            indexes.push(IndexDef {
                name: crate::model::PRIMARY_INDEX.to_owned(),
                field: key,
                scalar,
                sort_fields: primary_sort.clone(),
                query_field: None,
                slot: 0,
            });
        }
        for field in &kind.fields {
            for directive in &field.node.directives {
                if directive.node.name.node == "index" {
                    let index = self.read_index(&name, &fields, &timestamps, field, directive)?;
                    if indexes.iter().any(|i| i.name == index.name) {
                        let taken = match index.name == crate::model::PRIMARY_INDEX {
                            true => " (the name of its composite primary key's index)",
                            false => "",
                        };
                        return Err(self.error(
                            directive.pos,
                            format!("type {name}: two indexes are named {}{taken}", index.name),
                        ));
                    }
                    indexes.push(index);
                }
            }
        }
        let mut field_rules = Vec::new();
        for field in &kind.fields {
            let mut rules = Vec::new();
            for directive in &field.node.directives {
                match directive.node.name.node.as_str() {
                    "auth" => rules.extend(self.auth_rules(directive)?),
                    name if APPSYNC_DIRECTIVES.contains(&name) => {
                        rules.push(self.appsync_rule(directive)?);
                    }
                    _ => {}
                }
            }
            if !rules.is_empty() {
                field_rules.push((field.node.name.node.to_string(), rules));
            }
        }
        let auth = self.resolve_rule_fields(&name, auth, &mut fields)?;
        for (field_name, rules) in field_rules {
            let stored = fields
                .iter()
                .find(|f| f.name == field_name)
                .and_then(FieldDef::stored);
            if let (None, Some(rule)) = (stored, rules.first()) {
                return Err(self.error(
                    rule.pos,
                    format!(
                        "{name}.{field_name}: @auth on a field works on stored fields (scalars, \
                         enums and lists of them); put the rules on the type it relates to"
                    ),
                ));
            }
            let pos = rules.first().map_or(definition.pos, |rule| rule.pos);
            let rules = self.resolve_rule_fields(&name, rules, &mut fields)?;
            // An owner or group field is set on create and guarded on update by the type's
            // rules; a field's rules may only name one the type's rules name too.
            for rule in &rules {
                let Some((named, _)) = rule.field() else {
                    continue;
                };
                let same_kind = |other: &AuthRule| {
                    other.field().is_some_and(|(f, _)| f == named)
                        && matches!(
                            (&other.allow, &rule.allow),
                            (Allow::Owner { .. }, Allow::Owner { .. })
                                | (Allow::GroupsField { .. }, Allow::GroupsField { .. })
                        )
                };
                if !auth.iter().any(same_kind) {
                    return Err(self.error(
                        pos,
                        format!(
                            "{name}.{field_name}: @auth on a field may name the owner or groups field {named:?} only when the rules of {name} name it too (they set it on create and keep others from changing it)"
                        ),
                    ));
                }
            }
            // A key's value shows in lookups, index pages, sort order and cursors: a field
            // read by fewer callers than its node may not be one.
            let unique = fields.iter().any(|f| {
                f.name == field_name && matches!(f.kind, FieldKind::Scalar { unique: true, .. })
            });
            let indexed = indexes.iter().any(|index| {
                index.field == field_name || index.sort_fields.iter().any(|(f, _)| *f == field_name)
            });
            let sorted = list_sort_by.as_ref().is_some_and(|(_, f)| *f == field_name);
            if unique || indexed || sorted {
                return Err(self.error(
                    pos,
                    format!(
                        "{name}.{field_name}: @auth on a field cannot protect a key (@unique, @index, listSortBy): its values show in lookups, pages and cursors; put the rules on the type"
                    ),
                ));
            }
            if let Some(field) = fields.iter_mut().find(|f| f.name == field_name) {
                field.auth = rules;
            }
        }
        let list_sort = match list_sort_by {
            None => None,
            Some((pos, _)) if list.is_none() => {
                return Err(self.error(
                    pos,
                    format!("type {name}: @model(listSortBy:) needs a list"),
                ));
            }
            Some((_, field)) if timestamps.is(&field) => Some((field, ScalarType::AwsDateTime)),
            Some((pos, field)) => match fields
                .iter()
                .find(|f| f.name == field)
                .and_then(|f| f.scalar())
            {
                Some(scalar) => Some((field, scalar.clone())),
                None => {
                    return Err(self.error(
                        pos,
                        format!(
                            "type {name}: @model(listSortBy: {field:?}) names no scalar field of \
                             {name}"
                        ),
                    ));
                }
            },
        };
        Ok(TypeDef {
            name,
            description: description(definition.node.description.as_ref()),
            fields,
            list_sort,
            slots: Vec::new(),
            // The slots are chosen once every relation's slots are known.
            list: list.map(|shards| ListDef { slot: 0, shards }),
            indexes,
            auth,
            implements,
            roots,
            primary_key,
            primary_sort,
            timestamps,
        })
    }

    /// Amplify's `@primaryKey` on a required scalar field of `owner`: the field whose value is
    /// the node's id, and the required scalar fields of `sortKeyFields:` that complete it. On
    /// `id` alone it is the default.
    #[allow(clippy::type_complexity)]
    fn read_primary_key(
        &self,
        owner: &str,
        fields: &[FieldDef],
        kind: &async_graphql_parser::types::ObjectType,
    ) -> Result<(Option<(String, ScalarType)>, Vec<(String, ScalarType)>), ModelError> {
        let mut key = None;
        let mut sort = Vec::new();
        for field in &kind.fields {
            for directive in &field.node.directives {
                if directive.node.name.node != "primaryKey" {
                    continue;
                }
                self.expect_arguments(directive, &["sortKeyFields"])?;
                let field_name = field.node.name.node.as_str();
                let here = format!("{owner}.{field_name}");
                if key.is_some() {
                    return Err(self.error(
                        directive.pos,
                        format!("type {owner}: one field has @primaryKey"),
                    ));
                }
                let sort_names = self.string_list_argument(directive, "sortKeyFields", &here)?;
                // A key's fields are given at create: the times are not.
                let untimed = crate::model::Timestamps {
                    created: None,
                    updated: None,
                };
                sort = self.sort_key_fields(
                    owner,
                    &here,
                    (fields, &untimed),
                    field_name,
                    &sort_names,
                    directive.pos,
                )?;
                for (sort_field, scalar) in &sort {
                    let required = fields.iter().any(|f| {
                        f.name == *sort_field
                            && matches!(f.kind, FieldKind::Scalar { required: true, .. })
                    });
                    if !required || *scalar == ScalarType::Boolean {
                        return Err(self.error(
                            directive.pos,
                            format!(
                                "{here}: sortKeyFields names {sort_field:?}, which is no required \
                                 scalar field of {owner} of text or numbers: each field of a \
                                 primary key is given when a node is created and names it after"
                            ),
                        ));
                    }
                }
                if field_name == "id" {
                    if !sort.is_empty() {
                        return Err(self.error(
                            directive.pos,
                            format!(
                                "{here}: @primaryKey(sortKeyFields:) on id is not served: key \
                                 the type by another field of its own (`slug: String! \
                                 @primaryKey(sortKeyFields: [...])`)"
                            ),
                        ));
                    }
                    continue;
                }
                let declared = fields.iter().find(|f| f.name == field_name);
                match declared.map(|f| &f.kind) {
                    Some(FieldKind::Scalar {
                        scalar,
                        required: true,
                        ..
                    }) if !matches!(scalar, ScalarType::AwsJson | ScalarType::Boolean) => {
                        key = Some((field_name.to_owned(), scalar.clone()));
                    }
                    _ => {
                        return Err(self.error(
                            directive.pos,
                            format!(
                                "{here}: @primaryKey goes on a required scalar field of text or \
                                 numbers (`{field_name}: String!`): its value is the node's id"
                            ),
                        ));
                    }
                }
            }
        }
        Ok((key, sort))
    }

    /// The names a `sortKeyFields:` argument lists (a name alone is a list of one).
    fn string_list_argument(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
        here: &str,
    ) -> Result<Vec<String>, ModelError> {
        match directive.node.get_argument(name) {
            None
            | Some(Positioned {
                node: ConstValue::Null,
                ..
            }) => Ok(Vec::new()),
            Some(Positioned {
                node: ConstValue::List(values),
                pos,
            }) => values
                .iter()
                .map(|value| match value {
                    ConstValue::String(name) => Ok(name.clone()),
                    _ => Err(self.error(*pos, format!("{here}: {name} takes field names"))),
                })
                .collect(),
            Some(Positioned {
                node: ConstValue::String(value),
                ..
            }) => Ok(vec![value.clone()]),
            Some(other) => Err(self.error(
                other.pos,
                format!("{here}: {name} takes a list of field names"),
            )),
        }
    }

    /// Amplify's `@index(name:, sortKeyFields:, queryField:)` on the scalar field `field` of
    /// `owner`, whose fields are `fields`. The name defaults to `by<Field>[And<SortField>]`, the
    /// query field to `list<Type>By<Field>[And<SortField>]`.
    pub(super) fn read_index(
        &self,
        owner: &str,
        fields: &[FieldDef],
        timestamps: &crate::model::Timestamps,
        field: &Positioned<FieldDefinition>,
        directive: &Positioned<ConstDirective>,
    ) -> Result<IndexDef, ModelError> {
        self.expect_arguments(directive, &["name", "sortKeyFields", "queryField"])?;
        let field_name = field.node.name.node.to_string();
        let here = format!("{owner}.{field_name}");
        let Some(scalar) = fields
            .iter()
            .find(|f| f.name == field_name)
            .and_then(|f| f.scalar())
            .cloned()
        else {
            return Err(self.error(
                directive.pos,
                format!("{here}: @index works on scalar fields only"),
            ));
        };
        let sort_fields = self.string_list_argument(directive, "sortKeyFields", &here)?;
        let sort_fields = self.sort_key_fields(
            owner,
            &here,
            (fields, timestamps),
            &field_name,
            &sort_fields,
            directive.pos,
        )?;
        let suffix = format!(
            "{}{}",
            crate::model::upper_first(&field_name),
            sort_fields
                .iter()
                .map(|(sort, _)| format!("And{}", crate::model::upper_first(sort)))
                .collect::<String>()
        );
        let name = self
            .optional_string_argument(directive, "name")?
            .unwrap_or_else(|| format!("by{suffix}"));
        if name.is_empty() || name.contains('#') {
            return Err(self.error(
                directive.pos,
                format!("{here}: an index name is not empty and holds no '#', not {name:?}"),
            ));
        }
        // Amplify's default (its flag `enableAutoIndexQueryNames`): `<types>By<Field>[And…]`,
        // or no query; `queryField: null` asks for none.
        let amplify = self.dialect.amplify_shape();
        let query_field = match directive.node.get_argument("queryField").map(|v| &v.node) {
            Some(ConstValue::Null) => None,
            Some(_) => self.optional_string_argument(directive, "queryField")?,
            None if !amplify => Some(format!("list{owner}By{suffix}")),
            None if self.dialect.flags.enable_auto_index_query_names => Some(format!(
                "{}By{suffix}",
                crate::model::lower_first(&super::super::dialect::amplify_plural(owner))
            )),
            None => None,
        };
        if let Some(query_field) = &query_field {
            let valid_name = query_field
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && query_field
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid_name {
                return Err(self.error(
                    directive.pos,
                    format!("{here}: queryField {query_field:?} is not a GraphQL name"),
                ));
            }
        }
        Ok(IndexDef {
            name,
            field: field_name,
            scalar,
            sort_fields,
            query_field,
            slot: 0,
        })
    }

    /// The fields `sortKeyFields:` names on a key of `key_field`, with their types: each
    /// another scalar field of `owner` (or a timestamp), named once.
    fn sort_key_fields(
        &self,
        owner: &str,
        here: &str,
        (fields, timestamps): (&[FieldDef], &crate::model::Timestamps),
        key_field: &str,
        names: &[String],
        pos: Pos,
    ) -> Result<Vec<(String, ScalarType)>, ModelError> {
        let mut sort_fields: Vec<(String, ScalarType)> = Vec::new();
        for sort in names {
            let scalar = match fields
                .iter()
                .find(|f| f.name == *sort)
                .and_then(|f| f.scalar())
            {
                _ if sort == key_field || sort_fields.iter().any(|(f, _)| f == sort) => None,
                Some(ScalarType::AwsJson) => None,
                Some(scalar) => Some(scalar.clone()),
                None if timestamps.is(sort) => Some(ScalarType::AwsDateTime),
                None => None,
            };
            let Some(scalar) = scalar else {
                return Err(self.error(
                    pos,
                    format!(
                        "{here}: sortKeyFields names {sort:?}, which is no other scalar field of \
                         {owner} (each sort key field is a scalar field, named once)"
                    ),
                ));
            };
            sort_fields.push((sort.clone(), scalar));
        }
        Ok(sort_fields)
    }

    /// `@model(list: false)` (no type index), or the shards of `@model(listShards: N)`.
    pub(super) fn list_argument(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
    ) -> Result<Option<u8>, ModelError> {
        match directive.node.get_argument("list").map(|v| &v.node) {
            None | Some(ConstValue::Boolean(true)) => {}
            Some(ConstValue::Boolean(false)) => {
                if directive.node.get_argument("listShards").is_some() {
                    return Err(self.error(
                        directive.pos,
                        format!("type {name}: @model(listShards:) needs a list"),
                    ));
                }
                return Ok(None);
            }
            Some(_) => {
                return Err(self.error(directive.pos, "@model(list:) takes true or false"));
            }
        }
        match directive.node.get_argument("listShards").map(|v| &v.node) {
            None => Ok(Some(DEFAULT_LIST_SHARDS)),
            Some(ConstValue::Number(n)) => n
                .as_u64()
                .and_then(|n| u8::try_from(n).ok())
                .filter(|n| (1..=MAX_LIST_SHARDS).contains(n))
                .map(Some)
                .ok_or_else(|| {
                    self.error(
                        directive.pos,
                        format!(
                            "type {name}: @model(listShards:) takes 1 to {MAX_LIST_SHARDS}, not {n}"
                        ),
                    )
                }),
            Some(_) => Err(self.error(
                directive.pos,
                format!("type {name}: @model(listShards:) takes a number"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The types' own directives: type indexes and `@index` slots.

    use super::super::error_of;
    use crate::model::*;

    #[test]
    fn a_type_index_can_be_sharded_or_left_out() {
        let model = Model::parse(
            "schema.graphql",
            "type A @model(listShards: 8) { name: String }
             type B @model(list: false) { name: String }
             type C @model { name: String }",
        )
        .expect("the schema loads");
        let list = |name: &str| model.type_def(name).and_then(|t| t.list);
        assert_eq!(list("A"), Some(ListDef { slot: 1, shards: 8 }));
        assert_eq!(list("B"), None);
        assert_eq!(
            list("C"),
            Some(ListDef {
                slot: 1,
                shards: DEFAULT_LIST_SHARDS
            })
        );
        assert_eq!(model.indexes, vec![1]);
        for (directive, said) in [
            ("@model(listShards: 0)", "takes 1 to 32, not 0"),
            ("@model(listShards: 33)", "takes 1 to 32, not 33"),
            ("@model(list: false, listShards: 2)", "needs a list"),
            ("@model(list: 1)", "takes true or false"),
            (
                "@model(list: false, listSortBy: \"name\")",
                "listSortBy:) needs a list",
            ),
            (
                "@model(listSortBy: \"colour\")",
                "names no scalar field of A",
            ),
        ] {
            let error = error_of(&format!("type A {directive} {{ name: String }}"));
            assert!(error.contains(said), "{directive}: {error}");
        }
    }

    #[test]
    fn an_index_takes_the_lowest_slot_its_type_leaves_free() {
        let model = Model::parse(
            "schema.graphql",
            "type A @model {
               color: String @index(name: \"byColor\", sortKeyFields: [\"name\"], queryField: \"asByColor\")
               name: String
               size: Int @index
               day: AWSDate @index(sortKeyFields: [\"createdAt\"])
             }",
        )
        .expect("the schema loads");
        let a = model.type_def("A").expect("a model");
        let indexes: Vec<(&str, &str, u8, Option<&str>, &str)> = a
            .indexes
            .iter()
            .map(|i| {
                (
                    i.name.as_str(),
                    i.field.as_str(),
                    i.slot,
                    i.sort_fields.first().map(|(f, _)| f.as_str()),
                    i.query_field.as_deref().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            indexes,
            [
                ("byColor", "color", 2, Some("name"), "asByColor"),
                // Amplify's default query names: the schema uses no directive of tablegraph's.
                ("bySize", "size", 3, None, "asBySize"),
                (
                    "byDayAndCreatedAt",
                    "day",
                    4,
                    Some("createdAt"),
                    "asByDayAndCreatedAt"
                ),
            ]
        );
        // In Relay's shape, tablegraph's names.
        let relay = crate::model::DialectChoice {
            shape: Some(crate::model::ApiShape::Relay),
            ..Default::default()
        };
        let relay = Model::parse_as(
            "schema.graphql",
            "type A @model { size: Int @index day: Int @index(queryField: null) }",
            &relay,
        )
        .expect("the schema loads");
        let names: Vec<Option<&str>> = relay.types[0]
            .indexes
            .iter()
            .map(|i| i.query_field.as_deref())
            .collect();
        assert_eq!(names, [Some("listABySize"), None]);
        assert_eq!(model.indexes, vec![1, 2, 3, 4]);
        for (fields, said) in [
            (
                "a: String @index(sortKeyFields: [\"b\", \"b\"]) b: String",
                "which is no other scalar field of A (each sort key field is a scalar field, named once)",
            ),
            (
                "a: String @index(sortKeyFields: [\"zz\"])",
                "no other scalar field",
            ),
            (
                "a: String @index(sortKeyFields: [\"a\"])",
                "no other scalar field",
            ),
            (
                "a: String @index(queryField: \"listAs\")",
                "already a field of Query",
            ),
            (
                "a: String @index(name: \"x\") b: String @index(name: \"x\")",
                "two indexes are named x",
            ),
            (
                "a: String @index(queryField: \"not a name\")",
                "is not a GraphQL name",
            ),
            ("a: String @index(unknown: 1)", "unknown"),
        ] {
            let error = error_of(&format!("type A @model {{ {fields} }}"));
            assert!(error.contains(said), "{fields}: {error}");
        }
    }

    #[test]
    fn model_timestamps_name_the_times_and_keys_hold_text_or_numbers() {
        let model = Model::parse(
            "schema.graphql",
            "type A @model(timestamps: { createdAt: \"createdOn\", updatedAt: null }) {
               n: Int @index(sortKeyFields: [\"createdOn\"]) createdOn: AWSDateTime
             }
             type B @model(timestamps: null) { n: Int }",
        )
        .expect("the schema loads");
        let times: Vec<(Option<&str>, Option<&str>)> = model
            .types
            .iter()
            .map(|t| {
                (
                    t.timestamps.created.as_deref(),
                    t.timestamps.updated.as_deref(),
                )
            })
            .collect();
        assert_eq!(times, [(Some("createdOn"), None), (None, None)]);
        assert!(
            model.types[0].field("createdOn").is_none(),
            "a time, not a field"
        );
        // An interface's time is the type's own, as named.
        Model::parse(
            "schema.graphql",
            "interface Stamped { createdOn: AWSDateTime! }
             type A implements Stamped @model(timestamps: { createdAt: \"createdOn\" }) { n: Int }",
        )
        .expect("a renamed time meets the interface");
        for (schema, said) in [
            (
                "type A @model(timestamps: { createdAt: \"at\", updatedAt: \"at\" }) { n: Int }",
                "A: @model(timestamps:): at cannot be a time's name",
            ),
            (
                "type A @model(timestamps: { createdAt: \"version\" }) { n: Int }",
                "version cannot be a time's name",
            ),
            (
                "interface S { createdAt: AWSDateTime! }\ntype A implements S @model(timestamps: null) { n: Int }",
                "type A implements S, so it needs the field `createdAt: AWSDateTime!`",
            ),
            (
                "type A @model(timestamps: { updatedAt: \"PK01\" }) { n: Int }",
                "PK01 cannot be a time's name",
            ),
            (
                "type A @model { k: String! @primaryKey(sortKeyFields: [\"b\"]) b: Boolean! }",
                "sortKeyFields names \"b\", which is no required scalar field of A of text or numbers",
            ),
            (
                "type A @model { b: Boolean! @primaryKey }",
                "A.b: @primaryKey goes on a required scalar field of text or numbers",
            ),
            (
                "type A @model(timestamps: { createdAt: \"not a name\" }) { n: Int }",
                "createdAt takes a field name or null",
            ),
            (
                "type A @model(timestamps: \"x\") { n: Int }",
                "takes null or { createdAt",
            ),
            (
                "type A @model(timestamps: { createdAt: \"on\" }) { n: Int on: Int }",
                "A.on is a time kept by @model(timestamps:) as `on: AWSDateTime!`",
            ),
            (
                "type A @model(timestamps: null) { n: Int createdAt: AWSDateTime }",
                "A.createdAt: @model(timestamps:) leaves createdAt out or renames it",
            ),
            (
                "type A @model(timestamps: null) { n: Int @index(sortKeyFields: [\"createdAt\"]) }",
                "sortKeyFields names \"createdAt\", which is no other scalar field of A",
            ),
        ] {
            let error = Model::parse("schema.graphql", schema).expect_err(schema);
            assert!(error.to_string().contains(said), "{schema}: {error}");
        }
    }
}
