//! The keys a `@model` type declares: Amplify's `@primaryKey` (the field, and the sort key
//! fields, whose values are the node's id) and `@index` (a secondary index of a field, sorted
//! by its sort key fields), each checked against the fields they name.

use super::Reader;
use crate::model::{FieldDef, FieldKind, IndexDef, ModelError, ScalarType};
use async_graphql_parser::types::{ConstDirective, FieldDefinition};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;

impl Reader<'_> {
    /// Amplify's `@primaryKey` on a required scalar field of `owner`: the field whose value is
    /// the node's id, and the required scalar fields of `sortKeyFields:` that complete it. On
    /// `id` alone it is the default.
    #[allow(clippy::type_complexity)]
    pub(super) fn read_primary_key(
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
                    declared: Vec::new(),
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
                    if sort_field == "id" {
                        return Err(self.error(
                            directive.pos,
                            format!(
                                "{here}: @primaryKey(sortKeyFields: [\"id\"]) is not served: a \
                                 node's id is made of its primary key's values; sort an @index \
                                 by id instead"
                            ),
                        ));
                    }
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
    /// another scalar field of `owner` (or a timestamp, or `id`), named once.
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
                // `id`, which every node holds (the docs' warehouse example sorts an index by
                // it; a primary key cannot be, see `read_primary_key`).
                None if sort == "id" => Some(ScalarType::Id),
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
}
