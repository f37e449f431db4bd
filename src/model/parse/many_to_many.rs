//! Amplify's `@manyToMany(relationName:)`, read as Amplify's transformer reads it: shorthand for
//! a join `@model` type named after the relation, which the schema then holds as if written.
//! For `Post.tags: [Tag] @manyToMany(relationName: "PostTags")` and `Tag.posts: [Post]
//! @manyToMany(relationName: "PostTags")`:
//!
//! ```text
//! type PostTags @model @auth(rules: [<Post's rules>, <Tag's rules>]) {
//!   id: ID!
//!   postId: ID! @index(name: "byPost")
//!   tagId: ID! @index(name: "byTag")
//!   post: Post! @hasOne(fields: ["postId"])
//!   tag: Tag! @hasOne(fields: ["tagId"])
//! }
//! ```
//!
//! and `Post.tags: [PostTags] @hasMany(indexName: "byPost", fields: ["id"])` (the key fields
//! are `postID`/`tagID` without Amplify's flag `respectPrimaryKeyAttributesOnConnectionField`).

use async_graphql_parser::types::{
    BaseType, ConstDirective, ServiceDocument, Type, TypeDefinition, TypeKind, TypeSystemDefinition,
};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::{ConstValue, Name};

use super::Reader;
use crate::model::{ModelError, upper_first};

/// One side of a relation: the type, the field, and where its directive is.
struct Side {
    definition: usize,
    field: usize,
    type_name: String,
    pos: Pos,
}

impl Reader<'_> {
    /// `document` with each `@manyToMany` relation written out as Amplify writes it.
    pub(super) fn expand_many_to_many(
        &self,
        document: &ServiceDocument,
    ) -> Result<ServiceDocument, ModelError> {
        let mut relations: Vec<(String, Vec<Side>)> = Vec::new();
        for (index, definition) in document.definitions.iter().enumerate() {
            let TypeSystemDefinition::Type(definition) = definition else {
                continue;
            };
            let TypeKind::Object(object) = &definition.node.kind else {
                continue;
            };
            for (field_index, field) in object.fields.iter().enumerate() {
                let Some(directive) = field
                    .node
                    .directives
                    .iter()
                    .find(|d| d.node.name.node == "manyToMany")
                else {
                    continue;
                };
                self.expect_arguments(directive, &["relationName", "limit"])?;
                let name = match directive.node.get_argument("relationName").map(|v| &v.node) {
                    Some(ConstValue::String(name)) if is_name(&upper_first(name)) => {
                        upper_first(name)
                    }
                    _ => {
                        return Err(self.error(
                            directive.pos,
                            "@manyToMany(relationName:) names the join type, a GraphQL name",
                        ));
                    }
                };
                let side = Side {
                    definition: index,
                    field: field_index,
                    type_name: definition.node.name.node.to_string(),
                    pos: directive.pos,
                };
                match relations.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, sides)) => sides.push(side),
                    None => relations.push((name, vec![side])),
                }
            }
        }
        if relations.is_empty() {
            return Ok(document.clone());
        }
        let mut expanded = document.clone();
        for (name, sides) in &relations {
            let [one, two] = &sides[..] else {
                return Err(self.error(
                    sides[0].pos,
                    format!(
                        "@manyToMany(relationName: {name:?}) must be used in exactly two \
                         places, one on each type it relates; it is used in {}",
                        sides.len()
                    ),
                ));
            };
            if one.type_name == two.type_name {
                return Err(self.error(
                    two.pos,
                    format!(
                        "@manyToMany(relationName: {name:?}) relates {0} to itself; Amplify's \
                         join type needs two types (write the join type with two @belongsTo)",
                        one.type_name
                    ),
                ));
            }
            let taken = document.definitions.iter().any(
                |d| matches!(d, TypeSystemDefinition::Type(t) if t.node.name.node == name.as_str()),
            );
            if taken {
                return Err(self.error(
                    one.pos,
                    format!(
                        "@manyToMany(relationName: {name:?}): the schema already has a type \
                         {name}, the join type the relation makes"
                    ),
                ));
            }
            for (side, other) in [(one, two), (two, one)] {
                self.check_side(document, side, other, name)?;
            }
            let join = self.join_type(document, name, one, two)?;
            for side in [one, two] {
                rewrite_side(&mut expanded, side, name);
            }
            expanded.definitions.push(TypeSystemDefinition::Type(join));
        }
        Ok(expanded)
    }

    /// Refuses a side whose field is not a list of the other side's type.
    fn check_side(
        &self,
        document: &ServiceDocument,
        side: &Side,
        other: &Side,
        relation: &str,
    ) -> Result<(), ModelError> {
        let field = field_of(document, side);
        let listed = match &field.node.ty.node.base {
            BaseType::List(inner) => match &inner.base {
                BaseType::Named(element) => Some(element.to_string()),
                BaseType::List(_) => None,
            },
            BaseType::Named(_) => None,
        };
        if listed.as_deref() != Some(other.type_name.as_str()) {
            return Err(self.error(
                side.pos,
                format!(
                    "{}.{}: @manyToMany(relationName: {relation:?}) needs a list of {}, the \
                     other type of the relation",
                    side.type_name, field.node.name.node, other.type_name
                ),
            ));
        }
        Ok(())
    }

    /// The join type of `one` and `two`, as Amplify writes it.
    fn join_type(
        &self,
        document: &ServiceDocument,
        name: &str,
        one: &Side,
        two: &Side,
    ) -> Result<Positioned<TypeDefinition>, ModelError> {
        let key = |side: &Side| {
            let suffix = match self
                .dialect
                .flags
                .respect_primary_key_attributes_on_connection_field
            {
                true => "Id",
                false => "ID",
            };
            format!("{}{suffix}", crate::model::lower_first(&side.type_name))
        };
        let (key_one, key_two) = (key(one), key(two));
        let (field_one, field_two) = (
            crate::model::lower_first(&one.type_name),
            crate::model::lower_first(&two.type_name),
        );
        let source = format!(
            "type {name} @model {{
               id: ID!
               {key_one}: ID! @index(name: \"by{}\")
               {key_two}: ID! @index(name: \"by{}\")
               {field_one}: {}! @hasOne(fields: [\"{key_one}\"])
               {field_two}: {}! @hasOne(fields: [\"{key_two}\"])
             }}",
            one.type_name, two.type_name, one.type_name, two.type_name
        );
        let parsed = async_graphql_parser::parse_schema(&source)
            .map_err(|e| self.error(one.pos, format!("@manyToMany: {e}")))?;
        let Some(TypeSystemDefinition::Type(mut join)) = parsed.definitions.into_iter().next()
        else {
            return Err(self.error(one.pos, "@manyToMany: no join type"));
        };
        // Where the schema wrote the relation, for any message about the join type.
        join.pos = one.pos;
        if let TypeKind::Object(object) = &mut join.node.kind {
            for field in &mut object.fields {
                field.pos = one.pos;
                for directive in &mut field.node.directives {
                    directive.pos = one.pos;
                }
            }
        }
        // The rules of both types, as Amplify joins them.
        let rules: Vec<ConstValue> = [one, two]
            .iter()
            .filter_map(|side| auth_of(document, side))
            .flat_map(
                |auth| match auth.node.get_argument("rules").map(|v| &v.node) {
                    Some(ConstValue::List(rules)) => rules.clone(),
                    _ => Vec::new(),
                },
            )
            .collect();
        if !rules.is_empty() {
            join.node.directives.push(Positioned::new(
                ConstDirective {
                    name: Positioned::new(Name::new("auth"), one.pos),
                    arguments: vec![(
                        Positioned::new(Name::new("rules"), one.pos),
                        Positioned::new(ConstValue::List(rules), one.pos),
                    )],
                },
                one.pos,
            ));
        }
        Ok(join)
    }
}

fn field_of<'d>(
    document: &'d ServiceDocument,
    side: &Side,
) -> &'d Positioned<async_graphql_parser::types::FieldDefinition> {
    let TypeSystemDefinition::Type(definition) = &document.definitions[side.definition] else {
        unreachable!("a side is found on a type");
    };
    let TypeKind::Object(object) = &definition.node.kind else {
        unreachable!("a side is found on an object type");
    };
    &object.fields[side.field]
}

/// The `@auth` of the side's type, on its definition or on an `extend type` of it.
fn auth_of<'d>(
    document: &'d ServiceDocument,
    side: &Side,
) -> Option<&'d Positioned<ConstDirective>> {
    document
        .definitions
        .iter()
        .filter_map(|definition| match definition {
            TypeSystemDefinition::Type(t) if t.node.name.node == side.type_name.as_str() => Some(t),
            _ => None,
        })
        .flat_map(|definition| &definition.node.directives)
        .find(|d| d.node.name.node == "auth")
}

/// The side's field made `[<Join>] @hasMany(indexName: "by<Type>", fields: ["id"])`.
fn rewrite_side(document: &mut ServiceDocument, side: &Side, join: &str) {
    let TypeSystemDefinition::Type(definition) = &mut document.definitions[side.definition] else {
        return;
    };
    let TypeKind::Object(object) = &mut definition.node.kind else {
        return;
    };
    let field = &mut object.fields[side.field].node;
    field.ty.node = Type {
        base: BaseType::List(Box::new(Type::new(join).expect("a join type's name"))),
        nullable: field.ty.node.nullable,
    };
    let pos = side.pos;
    let value = |v: ConstValue| Positioned::new(v, pos);
    let name = |n: &str| Positioned::new(Name::new(n), pos);
    field
        .directives
        .retain(|d| d.node.name.node != "manyToMany");
    field.directives.push(Positioned::new(
        ConstDirective {
            name: name("hasMany"),
            arguments: vec![
                (
                    name("indexName"),
                    value(ConstValue::String(format!("by{}", side.type_name))),
                ),
                (
                    name("fields"),
                    value(ConstValue::List(vec![ConstValue::String("id".to_owned())])),
                ),
            ],
        },
        pos,
    ));
}

fn is_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::super::error_of;
    use crate::model::{FieldKind, Model};

    const SCHEMA: &str = "type Post @model @auth(rules: [{ allow: owner }]) {
           id: ID!
           title: String
           tags: [Tag] @manyToMany(relationName: \"PostTags\")
         }
         type Tag @model {
           id: ID!
           label: String
           posts: [Post] @manyToMany(relationName: \"PostTags\")
         }";

    #[test]
    fn a_many_to_many_relation_is_amplifys_join_type_with_two_has_many() {
        let model = Model::parse("schema.graphql", SCHEMA).expect("it loads");
        let join = model.type_def("PostTags").expect("the join type");
        let keys: Vec<(&str, bool)> = join
            .fields
            .iter()
            .filter_map(|f| match &f.kind {
                FieldKind::Scalar { required, .. } => Some((f.name.as_str(), *required)),
                _ => None,
            })
            .collect();
        // Post's owner rule brings its owner field, as Amplify's join type has it.
        assert_eq!(keys, [("postId", true), ("tagId", true), ("owner", false)]);
        let indexes: Vec<&str> = join.indexes.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(indexes, ["byPost", "byTag"]);
        // The owner rule of Post is the join type's too.
        assert_eq!(join.auth.len(), 1);
        // Also when the relation is written in an extension of the type that has the rules.
        let extended = SCHEMA.replace(
            "tags: [Tag] @manyToMany(relationName: \"PostTags\")\n         }",
            "}\n         extend type Post { tags: [Tag] @manyToMany(relationName: \"PostTags\") }",
        );
        assert_ne!(extended, SCHEMA);
        let model = Model::parse("schema.graphql", &extended).expect("it loads");
        let join = model.type_def("PostTags").expect("the join type");
        assert_eq!(join.auth.len(), 1);
        for (owner, field, key) in [("Post", "tags", "postId"), ("Tag", "posts", "tagId")] {
            let field = model
                .type_def(owner)
                .and_then(|t| t.field(field))
                .expect("the field");
            match &field.kind {
                FieldKind::HasMany(has_many) => {
                    assert_eq!(
                        (has_many.element.as_str(), has_many.foreign_key.as_str()),
                        ("PostTags", key)
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_relation_not_used_twice_on_two_types_is_refused() {
        for (schema, says) in [
            (
                "type Post @model { tags: [Tag] @manyToMany(relationName: \"PostTags\") }\ntype Tag @model { x: Int }",
                "schema.graphql:1:32: @manyToMany(relationName: \"PostTags\") must be used in exactly two places",
            ),
            (
                "type Post @model { a: [Post] @manyToMany(relationName: \"X\") b: [Post] @manyToMany(relationName: \"X\") }",
                "relates Post to itself",
            ),
            (
                "type Post @model { tags: Tag @manyToMany(relationName: \"PT\") }\ntype Tag @model { posts: [Post] @manyToMany(relationName: \"PT\") }",
                "Post.tags: @manyToMany(relationName: \"PT\") needs a list of Tag",
            ),
            (
                "type Post @model { tags: [Tag] @manyToMany(relationName: \"PT\") }\ntype Tag @model { posts: [Post] @manyToMany(relationName: \"PT\") }\ntype PT { x: Int }",
                "the schema already has a type PT",
            ),
        ] {
            let error = error_of(schema);
            assert!(error.contains(says), "{schema}: {error}");
        }
    }
}
