//! Amplify's GraphQL transformer v1 directives, read as v1 read them and held as the v2 forms
//! (and tablegraph's `field:`) that store the same thing, so that a deployed v1 app loads
//! unchanged and keeps its keys:
//!
//! - `@key(fields: ["a", "b"])` (no name) is `a: … @primaryKey(sortKeyFields: ["b"])`;
//!   `@key(name: "n", fields: ["a", "b"], queryField: "q")` is `a: … @index(name: "n",
//!   sortKeyFields: ["b"], queryField: "q")` (without `queryField:`, no query, as in v1).
//! - `@connection(keyName: "k", fields: ["id"])` on a list is `@hasMany(indexName: "k",
//!   fields: ["id"])`; `@connection(fields: ["postID"])` on a single field is
//!   `@belongsTo(fields: ["postID"])`.
//! - `@connection(name: "N")`, bare `@connection`, or `keyName:` without `fields:` (which v1
//!   reads as bare) keep the key v1 made up: a single field `Comment.post` keeps it in
//!   `Comment.commentPostId`; a list `Post.comments: [Comment]` reads the key of the field of
//!   `Comment` that names the same connection, else `Comment.postCommentsId`. v1 keeps these
//!   keys out of the type and its filters; they are in the create and update inputs.

use async_graphql_parser::types::{
    BaseType, ConstDirective, FieldDefinition, ServiceDocument, TypeKind, TypeSystemDefinition,
};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::{ConstValue, Name};

use super::Reader;
use crate::model::{ModelError, lower_first, upper_first};

/// Whether `document` uses one of transformer v1's directives.
pub(super) fn uses_v1(document: &ServiceDocument) -> bool {
    objects(document).any(|(_, directives, fields)| {
        directives.iter().any(|d| is_v1(&d.node))
            || fields
                .iter()
                .any(|f| f.node.directives.iter().any(|d| is_v1(&d.node)))
    })
}

fn is_v1(directive: &ConstDirective) -> bool {
    matches!(directive.name.node.as_str(), "key" | "connection")
}

/// A field's type's named type and whether it is a list (`[Comment]!` → `Comment`, true).
fn element_of(field: &FieldDefinition) -> (&str, bool) {
    let mut ty = &field.ty.node;
    let mut list = false;
    while let BaseType::List(inner) = &ty.base {
        ty = inner;
        list = true;
    }
    match &ty.base {
        BaseType::Named(name) => (name.as_str(), list),
        BaseType::List(_) => unreachable!("lists were unwrapped"),
    }
}

type ObjectParts<'d> = (
    &'d str,
    &'d [Positioned<ConstDirective>],
    &'d [Positioned<FieldDefinition>],
);

fn objects(document: &ServiceDocument) -> impl Iterator<Item = ObjectParts<'_>> {
    document
        .definitions
        .iter()
        .filter_map(|definition| match definition {
            TypeSystemDefinition::Type(t) => match &t.node.kind {
                TypeKind::Object(object) => Some((
                    t.node.name.node.as_str(),
                    t.node.directives.as_slice(),
                    object.fields.as_slice(),
                )),
                _ => None,
            },
            _ => None,
        })
}

/// A directive to add to a field: (type, field, directive).
type Added = (String, String, Positioned<ConstDirective>);

impl Reader<'_> {
    /// `document` with v1's `@key` and `@connection` written as the forms that store the same.
    pub(super) fn translate_v1(
        &self,
        document: &ServiceDocument,
    ) -> Result<ServiceDocument, ModelError> {
        let mut added: Vec<Added> = Vec::new();
        for (type_name, directives, fields) in objects(document) {
            for directive in directives.iter().filter(|d| d.node.name.node == "key") {
                added.extend(self.key_as_v2(type_name, directive)?);
            }
            for field in fields {
                let Some(connection) = field
                    .node
                    .directives
                    .iter()
                    .find(|d| d.node.name.node == "connection")
                else {
                    continue;
                };
                let directive = self.connection_as_v2(document, type_name, field, connection)?;
                added.push((
                    type_name.to_owned(),
                    field.node.name.node.to_string(),
                    directive,
                ));
            }
        }
        let mut document = document.clone();
        for definition in &mut document.definitions {
            let TypeSystemDefinition::Type(definition) = definition else {
                continue;
            };
            definition.node.directives.retain(|d| !is_v1(&d.node));
            let type_name = definition.node.name.node.to_string();
            let TypeKind::Object(object) = &mut definition.node.kind else {
                continue;
            };
            for field in &mut object.fields {
                field.node.directives.retain(|d| !is_v1(&d.node));
                let name = field.node.name.node.as_str();
                field.node.directives.extend(
                    added
                        .iter()
                        .filter(|(t, f, _)| *t == type_name && f == name)
                        .map(|(_, _, directive)| directive.clone()),
                );
            }
        }
        Ok(document)
    }

    /// `@key(fields: [a, …rest], name:, queryField:)` on `type_name` as the directive its
    /// first field takes: `@primaryKey` without a name (none for `["id"]`), else `@index`.
    fn key_as_v2(
        &self,
        type_name: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<Option<Added>, ModelError> {
        self.expect_arguments(directive, &["fields", "name", "queryField"])?;
        let fields = self.names_argument(directive, "fields")?;
        let Some((first, rest)) = fields.split_first() else {
            return Err(self.error(
                directive.pos,
                format!(
                    "{type_name}: @key(fields:) names the key's fields, the first its partition key"
                ),
            ));
        };
        let pos = directive.pos;
        let sort_keys = (
            name("sortKeyFields", pos),
            Positioned::new(
                ConstValue::List(rest.iter().cloned().map(ConstValue::String).collect()),
                pos,
            ),
        );
        let new = match self.optional_string_argument(directive, "name")? {
            None if first == "id" && rest.is_empty() => return Ok(None),
            None => directive_of("primaryKey", vec![sort_keys], pos),
            Some(index) => {
                let mut arguments = vec![
                    (
                        name("name", pos),
                        Positioned::new(ConstValue::String(index), pos),
                    ),
                    sort_keys,
                ];
                if let Some(query) = self.optional_string_argument(directive, "queryField")? {
                    arguments.push((
                        name("queryField", pos),
                        Positioned::new(ConstValue::String(query), pos),
                    ));
                }
                directive_of("index", arguments, pos)
            }
        };
        Ok(Some((type_name.to_owned(), first.clone(), new)))
    }

    /// `owner.field`'s `@connection` as the relation that stores the same (module doc).
    fn connection_as_v2(
        &self,
        document: &ServiceDocument,
        owner: &str,
        field: &Positioned<FieldDefinition>,
        connection: &Positioned<ConstDirective>,
    ) -> Result<Positioned<ConstDirective>, ModelError> {
        self.expect_arguments(connection, &["name", "keyName", "fields", "limit"])?;
        let pos = connection.pos;
        let field_name = field.node.name.node.as_str();
        let (element, is_list) = element_of(&field.node);
        let fields = match connection.node.get_argument("fields") {
            Some(_) => self.names_argument(connection, "fields")?,
            None => Vec::new(),
        };
        let list = |values: Vec<String>| {
            Positioned::new(
                ConstValue::List(values.into_iter().map(ConstValue::String).collect()),
                pos,
            )
        };
        if !fields.is_empty() {
            if !is_list && connection.node.get_argument("keyName").is_some() {
                return Err(self.error(
                    pos,
                    format!(
                        "{owner}.{field_name}: @connection(keyName:, fields:) on a single field \
                         (the first node of an index) is not served: relate by the node's key \
                         with @connection(fields:)"
                    ),
                ));
            }
            if !is_list {
                return Ok(directive_of(
                    "belongsTo",
                    vec![(name("fields", pos), list(fields))],
                    pos,
                ));
            }
            let Some(index) = self.optional_string_argument(connection, "keyName")? else {
                return Err(self.error(
                    pos,
                    format!(
                        "{owner}.{field_name}: @connection(fields:) on a list goes with \
                         keyName:, the @key of {element} whose first field holds {}",
                        fields.join(", ")
                    ),
                ));
            };
            return Ok(directive_of(
                "hasMany",
                vec![
                    (
                        name("indexName", pos),
                        Positioned::new(ConstValue::String(index), pos),
                    ),
                    (name("fields", pos), list(fields)),
                ],
                pos,
            ));
        }
        let connection_name = self.optional_string_argument(connection, "name")?;
        let (holder, key) = if is_list {
            let partner = connection_name
                .as_deref()
                .and_then(|n| single_field_naming(document, element, n));
            match partner {
                Some(partner) => (element.to_owned(), connection_key(element, &partner)),
                None => (element.to_owned(), connection_key(owner, field_name)),
            }
        } else {
            (owner.to_owned(), connection_key(owner, field_name))
        };
        self.relation_keys
            .borrow_mut()
            .imply(&holder, &key, !is_list);
        let relation = if is_list { "hasMany" } else { "belongsTo" };
        Ok(directive_of(
            relation,
            vec![(
                name("field", pos),
                Positioned::new(ConstValue::String(key), pos),
            )],
            pos,
        ))
    }

    /// The strings of the list argument `argument` (a lone string is a list of one).
    fn names_argument(
        &self,
        directive: &Positioned<ConstDirective>,
        argument: &str,
    ) -> Result<Vec<String>, ModelError> {
        let value = directive.node.get_argument(argument);
        let strings = match value.map(|v| &v.node) {
            Some(ConstValue::String(one)) => Some(vec![one.clone()]),
            Some(ConstValue::List(values)) => values
                .iter()
                .map(|v| match v {
                    ConstValue::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        strings.ok_or_else(|| {
            self.error(
                value.map_or(directive.pos, |v| v.pos),
                format!(
                    "@{}({argument}:) is a list of field names",
                    directive.node.name.node
                ),
            )
        })
    }
}

/// The single-valued field of `type_name` whose `@connection` is named `connection`.
fn single_field_naming(
    document: &ServiceDocument,
    type_name: &str,
    connection: &str,
) -> Option<String> {
    let (_, _, fields) = objects(document).find(|(name, _, _)| *name == type_name)?;
    fields
        .iter()
        .filter(|f| !element_of(&f.node).1)
        .find(|f| {
            f.node.directives.iter().any(|d| {
                d.node.name.node == "connection"
                    && matches!(
                        d.node.get_argument("name").map(|v| &v.node),
                        Some(ConstValue::String(n)) if n == connection
                    )
            })
        })
        .map(|f| f.node.name.node.to_string())
}

/// v1's name of a connection's key: `Comment.post` → `commentPostId`.
fn connection_key(owner: &str, field: &str) -> String {
    format!("{}{}Id", lower_first(owner), upper_first(field))
}

fn name(text: &str, pos: Pos) -> Positioned<Name> {
    Positioned::new(Name::new(text), pos)
}

fn directive_of(
    directive: &str,
    arguments: Vec<(Positioned<Name>, Positioned<ConstValue>)>,
    pos: Pos,
) -> Positioned<ConstDirective> {
    Positioned::new(
        ConstDirective {
            name: name(directive, pos),
            arguments,
        },
        pos,
    )
}

#[cfg(test)]
mod tests {
    use super::super::assert_refused;
    use crate::model::*;

    fn kind(model: &Model, owner: &str, field: &str) -> FieldKind {
        model
            .type_def(owner)
            .and_then(|t| t.field(field))
            .map(|f| f.kind.clone())
            .expect("declared")
    }

    #[test]
    fn v1_connections_keep_the_keys_v1_made_up() {
        let model = Model::parse(
            "schema.graphql",
            "type Post @model {\n\
               comments: [Comment] @connection(name: \"PostComments\")\n\
               tags: [Tag] @connection\n\
               author: Author @connection\n\
               likes: [Like] @connection(keyName: \"byPost\", fields: [\"id\"])\n\
             }\n\
             type Comment @model { post: Post @connection(name: \"PostComments\") }\n\
             type Tag @model { label: String }\n\
             type Author @model { name: String }\n\
             type Like @model @key(name: \"byPost\", fields: [\"postID\", \"at\"], queryField: \"likesByPost\") {\n\
               postID: ID! at: String! post: Post @connection(fields: [\"postID\"])\n\
             }\n\
             type Order @model @key(fields: [\"customer\", \"date\"]) { customer: String! date: String! }",
        )
        .expect("a v1 schema loads");
        assert_eq!(model.dialect.flags.transformer_version, 1);
        assert!(model.dialect.v1_api());
        // A named connection: the list reads the key of the single field naming it.
        assert!(
            matches!(kind(&model, "Post", "comments"), FieldKind::HasMany(HasMany { ref foreign_key, .. }) if foreign_key == "commentPostId")
        );
        assert!(
            matches!(kind(&model, "Comment", "post"), FieldKind::BelongsTo { ref foreign_key, .. } if foreign_key == "commentPostId")
        );
        // Unnamed: the list's own key on the element, the single field's on its owner.
        assert!(
            matches!(kind(&model, "Post", "tags"), FieldKind::HasMany(HasMany { ref foreign_key, .. }) if foreign_key == "postTagsId")
        );
        assert!(
            matches!(kind(&model, "Post", "author"), FieldKind::BelongsTo { ref foreign_key, .. } if foreign_key == "postAuthorId")
        );
        for (holder, key) in [
            ("Comment", "commentPostId"),
            ("Tag", "postTagsId"),
            ("Post", "postAuthorId"),
        ] {
            let type_def = model.type_def(holder).expect("declared");
            assert!(type_def.implied.contains(&key.to_owned()), "{holder}.{key}");
        }
        // keyName/fields: over the index @key names; fields on a single field: its key.
        assert!(
            matches!(kind(&model, "Post", "likes"), FieldKind::HasMany(HasMany { ref foreign_key, .. }) if foreign_key == "postID")
        );
        assert!(
            matches!(kind(&model, "Like", "post"), FieldKind::BelongsTo { ref foreign_key, .. } if foreign_key == "postID")
        );
        let like = model.type_def("Like").expect("declared");
        let index = like
            .indexes
            .iter()
            .find(|i| i.name == "byPost")
            .expect("@key(name:) is an index");
        assert_eq!(
            (index.field.as_str(), index.query_field.as_deref()),
            ("postID", Some("likesByPost"))
        );
        let order = model.type_def("Order").expect("declared");
        assert!(
            !order.primary_sort.is_empty(),
            "@key without name is the primary key"
        );
    }

    #[test]
    fn v1_directives_that_say_too_little_are_refused() {
        assert_refused(
            "type A @model { bs: [B] @connection(fields: [\"id\"]) }\ntype B @model { aID: ID }",
            "A.bs: @connection(fields:) on a list goes with keyName:, the @key of B whose first field holds id",
        );
        assert_refused(
            "type A @model { b: B @connection(keyName: \"byA\", fields: [\"id\"]) }\ntype B @model { aID: ID }",
            "A.b: @connection(keyName:, fields:) on a single field (the first node of an index) is not served",
        );
        assert_refused(
            "type A @model @key(fields: []) { x: Int }",
            "A: @key(fields:) names the key's fields, the first its partition key",
        );
        assert_refused(
            "type A @model @key(fields: 3) { x: Int }",
            "@key(fields:) is a list of field names",
        );
        assert_refused(
            "type A @model { b: B @connection(sortField: \"x\") }\ntype B @model { x: Int }",
            "@connection has no argument sortField",
        );
        // In tablegraph's own language, v1's directives are not read.
        let tablegraph = DialectChoice {
            language: Some(SchemaLanguage::Tablegraph),
            ..DialectChoice::default()
        };
        let refused = Model::parse_as(
            "schema.graphql",
            "type A @model { b: B @connection }\ntype B @model { x: Int }",
            &tablegraph,
        )
        .expect_err("refused");
        assert!(
            refused
                .message
                .contains("@connection is Amplify's GraphQL transformer v1 directive, read in Amplify's schema language only"),
            "{refused}"
        );
    }
}
