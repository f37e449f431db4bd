//! Amplify's ways of writing a schema that tablegraph's own directives write otherwise: the
//! schema-wide `input AMPLIFY { globalAuthRule: AuthRule = { allow: public } }` (the rule of
//! every `@model` type that has none of its own, as Amplify's sandbox sets it), and relations
//! without tablegraph's arguments (`@hasMany` bare or with `indexName:`/`fields:`/`references:`,
//! `@belongsTo` bare, `@hasOne`), whose keys are Amplify's: a bare `Blog.posts: [Post] @hasMany`
//! keeps the blog's id in `Post.blogPostsId` (added when the schema does not declare it), and
//! a bare `@belongsTo` on `Post.blog` finds that key.

use super::{PendingRelation, Reader};
use crate::model::auth_rules::read_rules;
use crate::model::{
    FieldDef, FieldKind, Model, ModelError, ScalarType, TypeDef, lower_first, upper_first,
};
use async_graphql_parser::types::{ConstDirective, InputValueDefinition, TypeDefinition, TypeKind};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;

impl Reader<'_> {
    /// Gives every type of `types` without rules of its own (on the type or any field) the
    /// rule `input AMPLIFY`'s `globalAuthRule` sets.
    pub(super) fn apply_global_auth_rule(
        &self,
        definition: &Positioned<TypeDefinition>,
        types: &mut [TypeDef],
    ) -> Result<(), ModelError> {
        self.refuse_directives(&definition.node.directives)?;
        let TypeKind::InputObject(input) = &definition.node.kind else {
            unreachable!("input AMPLIFY is an input type");
        };
        let mut global = None;
        for field in &input.fields {
            global = Some(self.amplify_holds_the_global_auth_rule_only(field)?);
        }
        let Some((pos, rule)) = global else {
            return Ok(());
        };
        for type_def in types.iter_mut() {
            let ruled =
                !type_def.auth.is_empty() || type_def.fields.iter().any(|f| !f.auth.is_empty());
            if ruled {
                continue;
            }
            let written = read_rules(&ConstValue::List(vec![rule.clone()]), pos)
                .map_err(|message| self.error(pos, format!("AMPLIFY.globalAuthRule: {message}")))?;
            type_def.auth =
                self.resolve_rule_fields(&type_def.name, written, &mut type_def.fields)?;
        }
        Ok(())
    }
}

impl Reader<'_> {
    /// A field of `input AMPLIFY`, and the rule it sets: `globalAuthRule` with its rule as the
    /// default value, as Amplify's sandbox writes it; any other field would be ignored by
    /// Amplify's meaning, so it is refused rather than silently dropped.
    fn amplify_holds_the_global_auth_rule_only(
        &self,
        field: &Positioned<InputValueDefinition>,
    ) -> Result<(Pos, ConstValue), ModelError> {
        let name = field.node.name.node.as_str();
        match (name, &field.node.default_value) {
            ("globalAuthRule", Some(rule)) => Ok((field.pos, rule.node.clone())),
            ("globalAuthRule", None) => Err(self.error(
                field.pos,
                "AMPLIFY.globalAuthRule needs its rule as the default value: \
                 globalAuthRule: AuthRule = { allow: public }",
            )),
            _ => Err(self.error(
                field.pos,
                format!("AMPLIFY.{name}: input AMPLIFY holds globalAuthRule only"),
            )),
        }
    }
}

/// The slot of a `@hasMany` written without `index:`: chosen once every type is read.
pub(super) const AUTO_SLOT: u8 = 0;

/// Relation keys that Amplify's forms leave to be found once every type is read.
#[derive(Debug, Default)]
pub(super) struct RelationKeys {
    /// (type or union, key field, whether a single relation of that type's own reads it)
    /// Amplify adds as `ID` when the schema does not declare it.
    implicit: Vec<(String, String, bool)>,
    /// (owner, field) of a `@belongsTo` without its key: the key of the `@hasMany` it answers,
    /// or Amplify's own name.
    bare_belongs_to: Vec<(String, String)>,
    /// (owner, field, index) of a `@hasMany(indexName:)`: that index's field is the key.
    by_index: Vec<(String, String, String)>,
}

impl RelationKeys {
    /// Adds `key` to `holder` (a type or union) as Amplify adds it, unless the schema
    /// declares it; `single` when a single relation of the holder's own reads it (a list's key
    /// is kept on its elements).
    pub(super) fn imply(&mut self, holder: &str, key: &str, single: bool) {
        self.implicit
            .push((holder.to_owned(), key.to_owned(), single));
    }
}

impl Reader<'_> {
    /// The key field of `owner.field`'s `@belongsTo` or `@hasOne`: `field:` (tablegraph's),
    /// `fields:` or `references:` (Amplify's, one field), or, without, Amplify's implicit one:
    /// `<owner><Field>Id` for `@hasOne`; for `@belongsTo` found once every type is read
    /// (empty until then).
    pub(super) fn belongs_to_key(
        &self,
        owner: &str,
        field: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<String, ModelError> {
        if let Some(key) = self.optional_string_argument(directive, "field")? {
            return Ok(key);
        }
        if let Some(key) = self.key_fields(owner, field, directive)? {
            return Ok(key);
        }
        let mut keys = self.relation_keys.borrow_mut();
        if directive.node.name.node == "hasOne" {
            let key = implicit_key(owner, field);
            keys.implicit.push((owner.to_owned(), key.clone(), true));
            return Ok(key);
        }
        keys.bare_belongs_to
            .push((owner.to_owned(), field.to_owned()));
        Ok(String::new())
    }

    /// The key field of `owner.field`'s `@hasMany` over `element`: `field:`, `fields:` or
    /// `references:` (one field), that of the index `indexName:` names (found once every type
    /// is read), or Amplify's implicit `<owner><Field>Id` on the element.
    pub(super) fn has_many_key(
        &self,
        owner: &str,
        field: &str,
        element: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<String, ModelError> {
        if let Some(key) = self.optional_string_argument(directive, "field")? {
            return Ok(key);
        }
        if let Some(index) = self.optional_string_argument(directive, "indexName")? {
            self.relation_keys.borrow_mut().by_index.push((
                owner.to_owned(),
                field.to_owned(),
                index,
            ));
            return Ok(String::new());
        }
        self.has_many_fields_go_with_index_name(owner, field, element, directive)?;
        if let Some(key) = self.key_fields(owner, field, directive)? {
            return Ok(key);
        }
        let key = implicit_key(owner, field);
        self.relation_keys
            .borrow_mut()
            .implicit
            .push((element.to_owned(), key.clone(), false));
        Ok(key)
    }

    /// A `@hasMany(fields:)` comes with `indexName:` (read before this): Amplify's `fields:`
    /// there names the parent's fields, not the child's key, which only the index names.
    fn has_many_fields_go_with_index_name(
        &self,
        owner: &str,
        field: &str,
        element: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<(), ModelError> {
        if directive.node.get_argument("fields").is_some() {
            return Err(self.error(
                directive.pos,
                format!(
                    "{owner}.{field}: @hasMany(fields:) goes with indexName:, the index of \
                     {element} whose field holds the parent's id"
                ),
            ));
        }
        Ok(())
    }

    /// `fields: [...]` or `references: [...]` naming one field.
    fn key_fields(
        &self,
        owner: &str,
        field: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<Option<String>, ModelError> {
        let given = ["fields", "references"]
            .iter()
            .find_map(|name| directive.node.get_argument(name).map(|v| (*name, v)));
        let Some((name, value)) = given else {
            return Ok(None);
        };
        let keys: Vec<&str> = match &value.node {
            ConstValue::List(keys) => keys
                .iter()
                .filter_map(|key| match key {
                    ConstValue::String(key) => Some(key.as_str()),
                    _ => None,
                })
                .collect(),
            ConstValue::String(key) => vec![key.as_str()],
            _ => Vec::new(),
        };
        self.key_fields_name_one_field(owner, field, name, value, &keys)
            .map(Some)
    }

    /// `fields:` or `references:` (`name`, written as `value`) names one field, read as
    /// `keys`: none names no key, and several would be a composite key, which a relation does
    /// not read.
    fn key_fields_name_one_field(
        &self,
        owner: &str,
        field: &str,
        name: &str,
        value: &Positioned<ConstValue>,
        keys: &[&str],
    ) -> Result<String, ModelError> {
        match keys {
            [key] => Ok((*key).to_owned()),
            [] => Err(self.error(value.pos, format!("{owner}.{field}: {name}: names a field"))),
            _ => Err(self.error(
                value.pos,
                format!(
                    "{owner}.{field}: {name}: names {} fields; a composite key is not served \
                     here yet: relate by one field",
                    keys.len()
                ),
            )),
        }
    }

    /// Refuses a relation whose parent has a composite primary key: a relation names its
    /// parent by one stored value, its id.
    pub(super) fn check_relation_parent(
        &self,
        model: &Model,
        relation: &PendingRelation,
        field: &crate::model::FieldDef,
    ) -> Result<(), ModelError> {
        let parent = match &field.kind {
            FieldKind::BelongsTo { target, .. } => target.as_str(),
            FieldKind::HasMany(_) => relation.owner.as_str(),
            _ => return Ok(()),
        };
        match model.type_def(parent) {
            Some(parent) if !parent.primary_sort.is_empty() => Err(self.error(
                relation.pos,
                format!(
                    "{}.{}: a relation to {parent}, whose @primaryKey has sortKeyFields (a \
                     composite key), is not served: key {parent} by one field to relate it",
                    relation.owner,
                    relation.field,
                    parent = parent.name
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Finds the keys Amplify's forms left open, and adds the key fields Amplify adds; before
    /// the relations are checked.
    pub(super) fn settle_relation_keys(
        &self,
        model: &mut Model,
        relations: &[PendingRelation],
    ) -> Result<(), ModelError> {
        let keys = std::mem::take(&mut *self.relation_keys.borrow_mut());
        let pos_of = |owner: &str, field: &str| {
            relations
                .iter()
                .find(|r| r.owner == owner && r.field == field)
                .map_or(Pos::default(), |r| r.pos)
        };
        let mut implicit = keys.implicit;
        for (owner, field, index) in keys.by_index {
            let Some(FieldKind::HasMany(has_many)) = field_kind(model, &owner, &field) else {
                continue;
            };
            let element = has_many.element.clone();
            let at = (pos_of(&owner, &field), owner.as_str(), field.as_str());
            let key = self.has_many_index_is_declared(model, at, &element, &index)?;
            set_key(model, &owner, &field, key);
            set_index(model, &owner, &field, index);
        }
        for (owner, field) in keys.bare_belongs_to {
            let Some(FieldKind::BelongsTo { target, .. }) = field_kind(model, &owner, &field)
            else {
                continue;
            };
            // The key of the `@hasMany` of the target that lists the owner's nodes, if any; of
            // several, the schema must say which.
            let answering: Vec<(String, String)> = model
                .type_def(target)
                .map(|target| {
                    target
                        .fields
                        .iter()
                        .filter_map(|f| match &f.kind {
                            FieldKind::HasMany(has_many)
                                if model
                                    .possible_types(&has_many.element)
                                    .contains(&owner.as_str()) =>
                            {
                                Some((f.name.clone(), has_many.foreign_key.clone()))
                            }
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            self.belongs_to_is_answered_once(
                (pos_of(&owner, &field), &owner, &field),
                target,
                &answering,
            )?;
            let answered = answering.into_iter().next().map(|(_, key)| key);
            let key = match answered {
                Some(key) => key,
                None => {
                    let key = implicit_key(&owner, &field);
                    implicit.push((owner.clone(), key.clone(), true));
                    key
                }
            };
            set_key(model, &owner, &field, key);
        }
        add_implicit_keys(model, implicit);
        Ok(())
    }
}

impl Reader<'_> {
    /// The key of the `@hasMany(indexName: index)` at `(pos, owner, field)`: the field of the
    /// index of `element` (or of a member) so named, declared with `@index(name:)`; without
    /// one, the relation would have no key to read, so it is refused.
    fn has_many_index_is_declared(
        &self,
        model: &Model,
        (pos, owner, field): (Pos, &str, &str),
        element: &str,
        index: &str,
    ) -> Result<String, ModelError> {
        model
            .possible_types(element)
            .iter()
            .filter_map(|member| model.type_def(member))
            .find_map(|member| member.indexes.iter().find(|i| i.name == index))
            .map(|i| i.field.clone())
            .ok_or_else(|| {
                self.error(
                    pos,
                    format!(
                        "{owner}.{field}: @hasMany(indexName: {index:?}) needs \
                         @index(name: {index:?}) on the field of {element} that holds the \
                         parent's id"
                    ),
                )
            })
    }

    /// A bare `@belongsTo` at `(pos, owner, field)` is answered by at most one `@hasMany` of
    /// `target` (`answering`, each field and its key): of several, which key it reads is the
    /// schema's to say.
    fn belongs_to_is_answered_once(
        &self,
        (pos, owner, field): (Pos, &str, &str),
        target: &str,
        answering: &[(String, String)],
    ) -> Result<(), ModelError> {
        if answering.len() > 1 {
            let names: Vec<&str> = answering.iter().map(|(name, _)| name.as_str()).collect();
            return Err(self.error(
                pos,
                format!(
                    "{owner}.{field}: {target} lists {owner} in {}; say which key it reads \
                     with @belongsTo(fields: [\"…\"])",
                    names.join(" and ")
                ),
            ));
        }
        Ok(())
    }
}

/// Adds each key field Amplify adds (to every member of `holder`, a type or union) where the
/// schema does not declare it: required, as Amplify's transformer makes it, when a non-null
/// single relation of the holder's own reads it (`auction: Auction! @hasOne`), else optional
/// (a list's key on its elements, or a nullable relation's).
fn add_implicit_keys(model: &mut Model, implicit: Vec<(String, String, bool)>) {
    // A key implied twice (both sides of transformer v1's named connection) is a list's key,
    // optional, whichever side is read first.
    let mut merged: Vec<(String, String, bool)> = Vec::new();
    for (holder, key, single) in implicit {
        match merged
            .iter_mut()
            .find(|(h, k, _)| *h == holder && *k == key)
        {
            Some(entry) => entry.2 &= single,
            None => merged.push((holder, key, single)),
        }
    }
    for (holder, key, single) in merged {
        let members: Vec<String> = model
            .possible_types(&holder)
            .iter()
            .map(|m| (*m).to_owned())
            .collect();
        for member in members {
            let Some(type_def) = model.types.iter_mut().find(|t| t.name == member) else {
                continue;
            };
            if type_def.field(&key).is_some() {
                continue;
            }
            let required = single
                && type_def.fields.iter().any(|field| {
                    matches!(&field.kind, FieldKind::BelongsTo { foreign_key, required: true, .. }
                        if *foreign_key == key)
                });
            type_def.implied.push(key.clone());
            type_def.fields.push(FieldDef {
                name: key.clone(),
                description: Some(
                    "The id of the node this one is related to (added as Amplify adds it)."
                        .to_owned(),
                ),
                kind: FieldKind::Scalar {
                    scalar: ScalarType::Id,
                    required,
                    unique: false,
                    default: None,
                },
                auth: Vec::new(),
            });
        }
    }
}

/// Amplify's name of a relation's key field: `Blog.posts` → `blogPostsId`.
fn implicit_key(owner: &str, field: &str) -> String {
    format!("{}{}Id", lower_first(owner), upper_first(field))
}

fn field_kind<'m>(model: &'m Model, owner: &str, field: &str) -> Option<&'m FieldKind> {
    model.type_def(owner)?.field(field).map(|f| &f.kind)
}

fn field_kind_mut<'m>(model: &'m mut Model, owner: &str, field: &str) -> Option<&'m mut FieldKind> {
    model
        .types
        .iter_mut()
        .find(|t| t.name == owner)?
        .fields
        .iter_mut()
        .find(|f| f.name == field)
        .map(|f| &mut f.kind)
}

fn set_key(model: &mut Model, owner: &str, field: &str, key: String) {
    match field_kind_mut(model, owner, field) {
        Some(FieldKind::HasMany(has_many)) => has_many.foreign_key = key,
        Some(FieldKind::BelongsTo { foreign_key, .. }) => *foreign_key = key,
        _ => {}
    }
}

/// Records the index `owner.field`'s `@hasMany(indexName:)` names.
fn set_index(model: &mut Model, owner: &str, field: &str, index: String) {
    if let Some(FieldKind::HasMany(has_many)) = field_kind_mut(model, owner, field) {
        has_many.index = Some(index);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{assert_all_refused as refused, assert_refused};
    use crate::model::*;

    #[test]
    fn the_global_auth_rule_is_the_rule_of_types_without_their_own() {
        let model = Model::parse(
            "schema.graphql",
            "input AMPLIFY { globalAuthRule: AuthRule = { allow: public } }\n\
             type Todo @model { name: String }\n\
             type Note @model @auth(rules: [{ allow: owner }]) { text: String }",
        )
        .expect("the schema loads");
        let todo = model.type_def("Todo").expect("declared");
        assert_eq!(todo.auth.len(), 1);
        assert_eq!(todo.auth[0].allow, Allow::Public);
        let note = model.type_def("Note").expect("declared");
        assert!(matches!(
            note.auth[..],
            [AuthRule {
                allow: Allow::Owner { .. },
                ..
            }]
        ));
        // AMPLIFY is no input of the API.
        assert!(model.inputs.is_empty());
        refused(&[
            (
                "input AMPLIFY { globalAuthRule: AuthRule }\ntype T @model { a: Int }",
                "needs its rule as the default value",
            ),
            (
                "input AMPLIFY { other: String }\ntype T @model { a: Int }",
                "holds globalAuthRule only",
            ),
        ]);
    }

    #[test]
    fn searchable_names_its_query_and_v1_directives_name_their_v2_ones() {
        let model = Model::parse(
            "schema.graphql",
            "type Post @model @searchable @auth(rules: [{ allow: owner }]) { title: String owner: ID }\n\
             type Note @model @searchable(queries: { search: \"findNotes\" }) { t: String }\n\
             type Tag @model @searchable(queries: { search: null }) { t: String }",
        )
        .expect("the schema loads");
        assert_eq!(model.warnings, Vec::<String>::new());
        let search = |name: &str| model.type_def(name).and_then(|t| t.search.clone());
        assert_eq!(search("Post").as_deref(), Some("searchPosts"));
        assert_eq!(search("Note").as_deref(), Some("findNotes"));
        assert_eq!(search("Tag"), None);
        // An owner field may be an ID, as Amplify's may.
        let post = model.type_def("Post").expect("declared");
        assert!(
            matches!(&post.auth[0].allow, Allow::Owner { field, many: false, .. } if field == "owner")
        );
        refused(&[
            (
                "type Post @model @versioned { a: Int }",
                "@versioned is Amplify's GraphQL transformer v1 directive, not read",
            ),
            (
                "type Post @model { slug: String! @primaryKey(sortKeyFields: [\"day\"]) day: String }",
                "schema.graphql:1:34: Post.slug: sortKeyFields names \"day\", which is no required scalar field of Post",
            ),
            (
                "type Post @model { id: ID! @primaryKey(sortKeyFields: [\"day\"]) day: String! }",
                "Post.id: @primaryKey(sortKeyFields:) on id is not served",
            ),
            (
                "type Post @model { slug: String! @primaryKey(sortKeyFields: [\"day\"]) day: String! cs: [C] @hasMany }\ntype C @model { t: String }",
                "Post.cs: a relation to Post, whose @primaryKey has sortKeyFields (a composite key), is not served",
            ),
            (
                "type Post @model { slug: String! @primaryKey(sortKeyFields: [\"day\"]) @index(name: \"primary\") day: String! }",
                "two indexes are named primary (the name of its composite primary key's index)",
            ),
            (
                "type Post @model { slug: String @primaryKey }",
                "Post.slug: @primaryKey goes on a required scalar field",
            ),
            (
                "type Post @model { a: String! @primaryKey b: String! @primaryKey }",
                "type Post: one field has @primaryKey",
            ),
        ]);
    }

    #[test]
    fn amplifys_relation_forms_find_their_keys_and_slots() {
        let model = Model::parse(
            "schema.graphql",
            include_str!("../../../tests/fixtures/amplify-relations/schema.graphql"),
        )
        .expect("the schema loads");
        let kind = |owner: &str, field: &str| {
            model
                .type_def(owner)
                .and_then(|t| t.field(field))
                .map(|f| f.kind.clone())
                .expect("declared")
        };
        assert!(
            matches!(kind("Blog", "posts"), FieldKind::HasMany(HasMany { slot: 2, ref foreign_key, .. }) if foreign_key == "blogPostsId")
        );
        assert!(
            matches!(kind("Post", "blog"), FieldKind::BelongsTo { ref foreign_key, .. } if foreign_key == "blogPostsId")
        );
        // Over the index of Comment: its field is the key; the slot is past the index's.
        assert!(
            matches!(kind("Post", "comments"), FieldKind::HasMany(HasMany { slot: 3, ref foreign_key, .. }) if foreign_key == "postID")
        );
        assert!(
            matches!(kind("Project", "team"), FieldKind::BelongsTo { ref foreign_key, .. } if foreign_key == "projectTeamId")
        );
        // The keys Amplify adds are fields.
        assert!(matches!(
            kind("Post", "blogPostsId"),
            FieldKind::Scalar {
                scalar: ScalarType::Id,
                required: false,
                ..
            }
        ));
        assert!(
            model
                .type_def("Project")
                .and_then(|t| t.field("projectTeamId"))
                .is_some()
        );
        refused(&[
            (
                "type A @model { bs: [B] @hasMany(indexName: \"byA\", fields: [\"id\"]) }\ntype B @model { aId: ID }",
                "needs @index(name: \"byA\") on the field of B",
            ),
            (
                "type A @model { b: B @hasOne(fields: [\"x\", \"y\"]) x: ID y: ID }\ntype B @model { n: Int }",
                "a composite key is not served here yet",
            ),
            (
                "type Blog @model { posts: [Post] @hasMany drafts: [Post] @hasMany }\ntype Post @model { blog: Blog @belongsTo }",
                "Post.blog: Blog lists Post in posts and drafts",
            ),
        ]);
    }

    #[test]
    fn input_amplify_holds_the_global_auth_rule_only() {
        assert_refused(
            "input AMPLIFY { globalAuthRule: AuthRule }\ntype A @model { n: Int }",
            "AMPLIFY.globalAuthRule needs its rule as the default value: \
             globalAuthRule: AuthRule = { allow: public }",
        );
        assert_refused(
            "input AMPLIFY { other: Int }\ntype A @model { n: Int }",
            "AMPLIFY.other: input AMPLIFY holds globalAuthRule only",
        );
    }

    #[test]
    fn has_many_fields_without_index_name_are_refused() {
        assert_refused(
            "type A @model { bs: [B] @hasMany(fields: [\"id\"]) }\ntype B @model { aId: ID }",
            "A.bs: @hasMany(fields:) goes with indexName:, the index of B whose field holds \
             the parent's id",
        );
    }

    #[test]
    fn key_fields_that_name_no_field_or_several_are_refused() {
        assert_refused(
            "type A @model { b: B @hasOne(references: []) }\ntype B @model { n: Int }",
            "A.b: references: names a field",
        );
        assert_refused(
            "type A @model { b: B @hasOne(fields: [\"x\", \"y\"]) x: ID y: ID }\ntype B @model { n: Int }",
            "A.b: fields: names 2 fields; a composite key is not served here yet: relate by \
             one field",
        );
    }

    #[test]
    fn a_has_many_index_name_without_its_index_is_refused() {
        assert_refused(
            "type A @model { bs: [B] @hasMany(indexName: \"byA\") }\ntype B @model { aId: ID }",
            "A.bs: @hasMany(indexName: \"byA\") needs @index(name: \"byA\") on the field of B \
             that holds the parent's id",
        );
    }

    #[test]
    fn a_bare_belongs_to_answered_by_several_has_many_is_refused() {
        assert_refused(
            "type Blog @model { posts: [Post] @hasMany drafts: [Post] @hasMany }\ntype Post @model { blog: Blog @belongsTo }",
            "Post.blog: Blog lists Post in posts and drafts; say which key it reads with \
             @belongsTo(fields: [\"…\"])",
        );
    }
}
