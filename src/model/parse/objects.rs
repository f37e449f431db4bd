//! `@model` types: their directives, fields, field rules and the list arguments they take
//! (their `@primaryKey` and `@index` keys are read in `keys`, the embedded types stored
//! inside a node in `embedded`).

use super::{Names, PendingRelation, Reader, description};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::auth_rules::WrittenRule;
use crate::model::{
    Allow, AuthRule, DEFAULT_LIST_SHARDS, FieldDef, FieldKind, IndexDef, ListDef, MAX_LIST_SHARDS,
    ModelError, ScalarType, TypeDef,
};
use async_graphql_parser::types::{
    ConstDirective, FieldDefinition, ObjectType, TypeDefinition, TypeKind,
};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;
use std::collections::BTreeSet;

/// What `@model` and the auth directives of a type say, read by `model_directives`.
struct ModelDirectives {
    roots: crate::model::RootNames,
    timestamps: crate::model::Timestamps,
    list: Option<u8>,
    list_sort_by: Option<(Pos, String)>,
    auth: Vec<WrittenRule>,
    /// `@searchable`: the name of its search query, unless `queries: { search: null }`.
    search: Option<String>,
}

impl Reader<'_> {
    /// A `@model` type: its fields, keys, indexes and auth rules.
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
        let directives = self.model_directives(definition, &name)?;
        let mut timestamps = directives.timestamps;
        let implements = self.check_implements(&name, kind, names, &timestamps)?;
        let mut fields = self.read_object_fields(&name, kind, &timestamps, names, relations)?;
        timestamps.declared = declared_times(kind, &timestamps);
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
        self.read_indexes(&name, kind, &fields, &timestamps, &mut indexes)?;
        let field_rules = self.field_rules(kind)?;
        let declared = fields.len();
        let auth = self.resolve_rule_fields(&name, directives.auth, &mut fields)?;
        let keys = Keys {
            indexes: &indexes,
            list_sort_by: directives.list_sort_by.as_ref(),
        };
        for (field_name, rules) in field_rules {
            let pos = rules.first().map_or(definition.pos, |rule| rule.pos);
            self.field_auth_is_on_stored_fields(&name, &field_name, &rules, &fields)?;
            let rules = self.resolve_rule_fields(&name, rules, &mut fields)?;
            self.field_auth_names_fields_the_type_names(&name, &field_name, pos, &rules, &auth)?;
            self.field_auth_protects_no_key(&name, &field_name, pos, &fields, &keys)?;
            if let Some(field) = fields.iter_mut().find(|f| f.name == field_name) {
                field.auth = rules;
            }
        }
        let list_sort = self.list_sort(
            &name,
            directives.list,
            directives.list_sort_by,
            &timestamps,
            &fields,
        )?;
        let added = fields[declared..].iter().map(|f| f.name.clone()).collect();
        Ok(TypeDef {
            name,
            description: description(definition.node.description.as_ref()),
            added,
            implied: Vec::new(),
            id_at: declared_id(kind, &timestamps),
            id_is_primary_key: id_is_primary_key(kind),
            id_is_optional: kind
                .fields
                .iter()
                .any(|f| f.node.name.node == "id" && f.node.ty.node.to_string() == "ID"),
            fields,
            list_sort,
            conflict: None,
            search: directives.search.clone(),
            slots: Vec::new(),
            // The slots are chosen once every relation's slots are known.
            list: directives.list.map(|shards| ListDef { slot: 0, shards }),
            indexes,
            auth,
            implements,
            roots: directives.roots,
            primary_key,
            primary_sort,
            timestamps,
        })
    }

    /// Reads a type's directives: `@model` with its arguments (which every object type read
    /// here has: it is stored as nodes), the auth directives, and Amplify's `@searchable`.
    fn model_directives(
        &self,
        definition: &Positioned<TypeDefinition>,
        name: &str,
    ) -> Result<ModelDirectives, ModelError> {
        let mut is_model = false;
        let mut found = ModelDirectives {
            roots: crate::model::RootNames::in_dialect(name, &self.dialect),
            timestamps: crate::model::Timestamps::default(),
            list: Some(DEFAULT_LIST_SHARDS),
            list_sort_by: None,
            auth: Vec::new(),
            search: None,
        };
        for directive in &definition.node.directives {
            match directive.node.name.node.as_str() {
                "auth" => found.auth.extend(self.auth_rules(directive)?),
                name if APPSYNC_DIRECTIVES.contains(&name) => {
                    found.auth.push(self.appsync_rule(directive)?);
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
                    found.roots = self.root_names(name, directive)?;
                    found.timestamps = self.timestamps(name, directive)?;
                    is_model = true;
                    found.list = self.list_argument(directive, name)?;
                    found.list_sort_by = self
                        .optional_string_argument(directive, "listSortBy")?
                        .map(|field| (directive.pos, field));
                }
                // Amplify's full-text search, served from the type's nodes (`engine::read::search`).
                "searchable" => found.search = self.search_query(directive, name)?,
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        self.an_object_type_has_model(definition, name, is_model)?;
        Ok(found)
    }

    /// The name of `@searchable`'s query (`search<Types>`, as Amplify's transformer names it,
    /// unless `queries: { search: "name" }` names it), or `None` for `queries: { search: null }`.
    fn search_query(
        &self,
        directive: &Positioned<ConstDirective>,
        name: &str,
    ) -> Result<Option<String>, ModelError> {
        self.expect_arguments(directive, &["queries"])?;
        let generated = Some(format!("search{}", crate::model::amplify_plural(name)));
        let Some(queries) = directive.node.get_argument("queries") else {
            return Ok(generated);
        };
        match &queries.node {
            ConstValue::Object(queries) => match queries.get("search") {
                None | Some(ConstValue::Null) => Ok(None),
                Some(ConstValue::String(query)) => Ok(Some(query.clone())),
                Some(_) => Err(self.error(
                    directive.pos,
                    format!("{name}: @searchable(queries: {{ search }}) names the query"),
                )),
            },
            ConstValue::Null => Ok(generated),
            _ => Err(self.error(
                directive.pos,
                format!("{name}: @searchable(queries:) takes an object"),
            )),
        }
    }

    /// Every object type read as a node type has `@model`: each is stored as nodes.
    fn an_object_type_has_model(
        &self,
        definition: &Positioned<TypeDefinition>,
        name: &str,
        is_model: bool,
    ) -> Result<(), ModelError> {
        if !is_model {
            return Err(self.error(
                definition.pos,
                format!("type {name} needs @model: every object type is stored as nodes"),
            ));
        }
        Ok(())
    }

    /// Reads a type's fields, each declared once, leaving out the timestamps it declares.
    fn read_object_fields(
        &self,
        name: &str,
        kind: &ObjectType,
        timestamps: &crate::model::Timestamps,
        names: &Names<'_>,
        relations: &mut Vec<PendingRelation>,
    ) -> Result<Vec<FieldDef>, ModelError> {
        let mut fields = Vec::new();
        let mut seen = BTreeSet::new();
        for field in &kind.fields {
            self.a_field_is_declared_once(name, field, &mut seen)?;
            if self.declared_timestamp(name, timestamps, field)? {
                continue;
            }
            if let Some(field) = self.read_field(name, field, names, relations)? {
                fields.push(field);
            }
        }
        Ok(fields)
    }

    /// A field of type `name` is declared once (`seen` holds those before it): a field declared
    /// twice would be one attribute with two meanings.
    fn a_field_is_declared_once<'f>(
        &self,
        name: &str,
        field: &'f Positioned<FieldDefinition>,
        seen: &mut BTreeSet<&'f str>,
    ) -> Result<(), ModelError> {
        let field_name = field.node.name.node.as_str();
        if !seen.insert(field_name) {
            return Err(self.error(field.pos, format!("{name}.{field_name} is declared twice")));
        }
        Ok(())
    }

    /// Reads each `@index` of a type's fields after the indexes already in `indexes`, each
    /// named apart from the others: queries and slots are found by the name.
    fn read_indexes(
        &self,
        name: &str,
        kind: &ObjectType,
        fields: &[FieldDef],
        timestamps: &crate::model::Timestamps,
        indexes: &mut Vec<IndexDef>,
    ) -> Result<(), ModelError> {
        for field in &kind.fields {
            for directive in &field.node.directives {
                if directive.node.name.node == "index" {
                    let index = self.read_index(name, fields, timestamps, field, directive)?;
                    self.indexes_are_named_apart(name, directive.pos, &index, indexes)?;
                    indexes.push(index);
                }
            }
        }
        Ok(())
    }

    /// `index` (written at `pos`) is named apart from the type's `indexes` before it: queries
    /// and slots are found by the name.
    fn indexes_are_named_apart(
        &self,
        name: &str,
        pos: Pos,
        index: &IndexDef,
        indexes: &[IndexDef],
    ) -> Result<(), ModelError> {
        if indexes.iter().any(|i| i.name == index.name) {
            let taken = match index.name == crate::model::PRIMARY_INDEX {
                true => " (the name of its composite primary key's index)",
                false => "",
            };
            return Err(self.error(
                pos,
                format!("type {name}: two indexes are named {}{taken}", index.name),
            ));
        }
        Ok(())
    }

    /// The auth rules written on each field of a type, for the fields that have some.
    fn field_rules(
        &self,
        kind: &ObjectType,
    ) -> Result<Vec<(String, Vec<WrittenRule>)>, ModelError> {
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
        Ok(field_rules)
    }

    /// `@auth` on a field is on a stored field or, in Amplify's language, on a `@belongsTo`,
    /// `@hasOne` or `@hasMany` (who may follow the relation from this node); elsewhere a
    /// relation's values are guarded by the rules of the type it relates to.
    fn field_auth_is_on_stored_fields(
        &self,
        name: &str,
        field_name: &str,
        rules: &[WrittenRule],
        fields: &[FieldDef],
    ) -> Result<(), ModelError> {
        let field = fields.iter().find(|f| f.name == field_name);
        let stored = field.and_then(FieldDef::stored);
        let relation = field
            .is_some_and(|f| matches!(f.kind, FieldKind::BelongsTo { .. } | FieldKind::HasMany(_)));
        if relation && self.amplify_language() {
            return Ok(());
        }
        if let (None, Some(rule)) = (stored, rules.first()) {
            return Err(self.error(
                rule.pos,
                format!(
                    "{name}.{field_name}: @auth on a field works on stored fields (scalars, \
                     enums and lists of them); put the rules on the type it relates to"
                ),
            ));
        }
        Ok(())
    }

    /// An owner or group field a field's rules name is one the type's rules name too: those
    /// set it on create and guard it on update.
    fn field_auth_names_fields_the_type_names(
        &self,
        name: &str,
        field_name: &str,
        pos: Pos,
        rules: &[AuthRule],
        auth: &[AuthRule],
    ) -> Result<(), ModelError> {
        for rule in rules {
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
        Ok(())
    }

    /// A field with rules of its own is no key (`@unique`, an index's, `listSortBy`): a key's
    /// value shows in lookups, index pages, sort order and cursors, to more callers than the
    /// rules let read it.
    fn field_auth_protects_no_key(
        &self,
        name: &str,
        field_name: &str,
        pos: Pos,
        fields: &[FieldDef],
        keys: &Keys<'_>,
    ) -> Result<(), ModelError> {
        let unique = fields.iter().any(|f| {
            f.name == field_name && matches!(f.kind, FieldKind::Scalar { unique: true, .. })
        });
        let indexed = keys.indexes.iter().any(|index| {
            index.field == field_name || index.sort_fields.iter().any(|(f, _)| *f == field_name)
        });
        let sorted = keys.list_sort_by.is_some_and(|(_, f)| *f == field_name);
        if unique || indexed || sorted {
            return Err(self.error(
                pos,
                format!(
                    "{name}.{field_name}: @auth on a field cannot protect a key (@unique, @index, listSortBy): its values show in lookups, pages and cursors; put the rules on the type"
                ),
            ));
        }
        Ok(())
    }

    /// The field a type's list is sorted by (`@model(listSortBy:)`): a scalar field of the
    /// type or a timestamp, and only where the type has a list.
    fn list_sort(
        &self,
        name: &str,
        list: Option<u8>,
        list_sort_by: Option<(Pos, String)>,
        timestamps: &crate::model::Timestamps,
        fields: &[FieldDef],
    ) -> Result<Option<(String, ScalarType)>, ModelError> {
        let Some((pos, field)) = list_sort_by else {
            return Ok(None);
        };
        self.list_sort_by_needs_a_list(name, list, pos)?;
        if timestamps.is(&field) {
            return Ok(Some((field, ScalarType::AwsDateTime)));
        }
        let scalar = self.list_sort_by_names_a_scalar_field(name, pos, &field, fields)?;
        Ok(Some((field, scalar)))
    }

    /// `@model(listSortBy:)` is on a type with a list (`list`): it sorts nothing else.
    fn list_sort_by_needs_a_list(
        &self,
        name: &str,
        list: Option<u8>,
        pos: Pos,
    ) -> Result<(), ModelError> {
        if list.is_none() {
            return Err(self.error(
                pos,
                format!("type {name}: @model(listSortBy:) needs a list"),
            ));
        }
        Ok(())
    }

    /// The scalar type of `field`, which `@model(listSortBy:)` names (at `pos`) and is not a
    /// timestamp: a stored scalar, as the list's sort key holds its value.
    fn list_sort_by_names_a_scalar_field(
        &self,
        name: &str,
        pos: Pos,
        field: &str,
        fields: &[FieldDef],
    ) -> Result<ScalarType, ModelError> {
        match fields
            .iter()
            .find(|f| f.name == field)
            .and_then(|f| f.scalar())
        {
            Some(scalar) => Ok(scalar.clone()),
            None => Err(self.error(
                pos,
                format!(
                    "type {name}: @model(listSortBy: {field:?}) names no scalar field of \
                     {name}"
                ),
            )),
        }
    }
}

/// The keys of a type a field's own rules may not protect, besides its `@unique` fields.
struct Keys<'k> {
    indexes: &'k [IndexDef],
    list_sort_by: Option<&'k (Pos, String)>,
}

impl Reader<'_> {
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

/// How many fields `kind` declares before `id` (its times aside), if it declares `id`.
/// Whether `kind` declares `id: ID! @primaryKey`.
fn id_is_primary_key(kind: &ObjectType) -> bool {
    kind.fields.iter().any(|field| {
        field.node.name.node == "id"
            && field
                .node
                .directives
                .iter()
                .any(|d| d.node.name.node == "primaryKey")
    })
}

fn declared_id(kind: &ObjectType, timestamps: &crate::model::Timestamps) -> Option<usize> {
    let names = kind
        .fields
        .iter()
        .map(|field| field.node.name.node.as_str());
    let mut position = 0;
    for name in names {
        if name == "id" {
            return Some(position);
        }
        position += usize::from(!timestamps.is(name));
    }
    None
}

/// The times `kind` declares (read, and checked, with its fields), each as it is declared.
fn declared_times(
    kind: &ObjectType,
    timestamps: &crate::model::Timestamps,
) -> Vec<(String, crate::model::DeclaredTime)> {
    let mut declared = Vec::new();
    let mut position = 0;
    for field in &kind.fields {
        let name = field.node.name.node.as_str();
        if !timestamps.is(name) {
            // `id` is served before every field, not among them.
            position += usize::from(name != "id");
            continue;
        }
        let ty = &field.node.ty.node;
        let how = crate::model::DeclaredTime {
            string: ty.to_string().trim_end_matches('!') == "String",
            required: !ty.nullable,
            position,
        };
        declared.push((name.to_owned(), how));
    }
    declared
}

#[cfg(test)]
mod tests {
    //! The types' own directives: type indexes and `@index` slots.

    use super::super::{assert_refused, error_of};
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
                ("bySize", "size", 3, None, "aSBySize"),
                (
                    "byDayAndCreatedAt",
                    "day",
                    4,
                    Some("createdAt"),
                    "aSByDayAndCreatedAt"
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
                "a: String @index(queryField: \"listAS\")",
                "already a field of Query",
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

    #[test]
    fn a_field_declared_twice_is_refused() {
        assert_refused("type A @model { n: Int n: Int }", "A.n is declared twice");
    }

    #[test]
    fn two_indexes_of_one_name_are_refused() {
        let schema = "type A @model { m: ID @index(name: \"byX\") n: ID @index(name: \"byX\") }";
        assert_refused(schema, "type A: two indexes are named byX");
    }

    #[test]
    fn field_auth_on_a_relation_is_refused_in_tablegraphs_language() {
        assert_refused(
            "type A @model { bId: ID b: B @belongsTo(field: \"bId\") @auth(rules: [{ allow: public }]) }\ntype B @model { n: String @unique }",
            "A.b: @auth on a field works on stored fields (scalars, enums and lists of them); \
             put the rules on the type it relates to",
        );
    }

    #[test]
    fn field_auth_naming_an_owner_field_the_type_does_not_name_is_refused() {
        assert_refused(
            "type A @model @auth(rules: [{ allow: public }]) { n: Int @auth(rules: [{ allow: owner, ownerField: \"who\" }]) who: String }",
            "A.n: @auth on a field may name the owner or groups field \"who\" only when the \
             rules of A name it too",
        );
    }

    #[test]
    fn field_auth_on_a_key_is_refused() {
        assert_refused(
            "type A @model @auth(rules: [{ allow: public }]) { n: ID @index(name: \"byN\") @auth(rules: [{ allow: public }]) }",
            "A.n: @auth on a field cannot protect a key (@unique, @index, listSortBy): its \
             values show in lookups, pages and cursors; put the rules on the type",
        );
    }

    #[test]
    fn list_sort_by_without_a_list_is_refused() {
        let schema = "type A @model(list: false, listSortBy: \"n\") { n: Int }";
        assert_refused(schema, "type A: @model(listSortBy:) needs a list");
    }

    #[test]
    fn list_sort_by_naming_no_scalar_field_is_refused() {
        let schema = "type A @model(listSortBy: \"x\") { n: Int }";
        assert_refused(
            schema,
            "type A: @model(listSortBy: \"x\") names no scalar field of A",
        );
    }

    #[test]
    fn an_index_sorted_by_id_loads_as_the_docs_warehouse_example() {
        let model = Model::parse(
            "schema.graphql",
            "type Stock @model {\n\
               sku: String!\n\
               warehouseID: ID! @index(name: \"byWarehouse\", sortKeyFields: [\"id\"], queryField: \"stockByWarehouse\")\n\
             }",
        )
        .expect("an index sorted by id loads");
        let stock = model.type_def("Stock").expect("declared");
        let index = stock
            .indexes
            .iter()
            .find(|i| i.name == "byWarehouse")
            .expect("declared");
        assert_eq!(index.sort_fields, [("id".to_owned(), ScalarType::Id)]);
        // A primary key cannot be: a node's id is made of it.
        assert_refused(
            "type Stock @model { sku: String! @primaryKey(sortKeyFields: [\"id\"]) }",
            "Stock.sku: @primaryKey(sortKeyFields: [\"id\"]) is not served: a node's id is made of its primary key's values; sort an @index by id instead",
        );
    }
}
