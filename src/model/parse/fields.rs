//! One field of a type: its kind (scalar, relation, edge connection, targets, a resolver's own)
//! and what its directives ask of it.

use super::amplify::AUTO_SLOT;
use super::{
    MAX_SLOT, Names, PendingRelation, Reader, declared_at, default_fits, description,
    is_reserved_attribute, managed_field_type, parse_slot,
};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{
    CustomArgument, CustomField, FieldDef, FieldKind, HasMany, Model, ModelError, ScalarType,
};
use async_graphql_parser::types::{BaseType, FieldDefinition};
use async_graphql_parser::{Pos, Positioned};
use std::collections::HashMap;

impl Reader<'_> {
    /// Reads one field; `None` for a redundant declaration of a managed field.
    pub(super) fn read_field(
        &self,
        owner: &str,
        field: &Positioned<FieldDefinition>,
        names: &Names<'_>,
        relations: &mut Vec<PendingRelation>,
    ) -> Result<Option<FieldDef>, ModelError> {
        let name = field.node.name.node.to_string();
        let ty = &field.node.ty.node;
        if let Some(expected) = managed_field_type(&name) {
            // Amplify lets a schema declare its timestamps, as `AWSDateTime` or `String`,
            // required or not; they are served as the managed `AWSDateTime!` either way.
            let timestamp = matches!(name.as_str(), "createdAt" | "updatedAt")
                && matches!(
                    ty.to_string().as_str(),
                    "AWSDateTime" | "String" | "String!"
                );
            // `id: ID! @primaryKey` says what is so; with sort key fields it is refused by name.
            let key = name == "id"
                && field
                    .node
                    .directives
                    .iter()
                    .all(|d| d.node.name.node == "primaryKey");
            if (ty.to_string() == expected || timestamp)
                && (field.node.directives.is_empty() || key)
            {
                return Ok(None);
            }
            return Err(self.error(
                field.pos,
                format!("{owner}.{name} is managed by @model as `{name}: {expected}`; remove it"),
            ));
        }
        if is_reserved_attribute(&name) {
            return Err(self.error(
                field.pos,
                format!("{owner}.{name}: the name {name} is reserved for the table's keys"),
            ));
        }
        if let Some(computed) = self.computed_field_def(owner, field, names)? {
            return Ok(Some(computed));
        }
        if let Some(custom) = self.read_custom_field(owner, field, names)? {
            return Ok(Some(FieldDef {
                name,
                description: description(field.node.description.as_ref()),
                kind: FieldKind::Custom(custom),
                auth: Vec::new(),
            }));
        }

        let mut unique = None;
        let mut default = None;
        let mut belongs_to = None;
        let mut has_many = None;
        let mut edge_field = None;
        for directive in &field.node.directives {
            match directive.node.name.node.as_str() {
                "unique" => {
                    self.expect_arguments(directive, &[])?;
                    unique = Some(directive.pos);
                }
                "default" => {
                    self.expect_arguments(directive, &["value"])?;
                    default = Some((directive.pos, self.string_argument(directive, "value")?));
                }
                "belongsTo" => {
                    self.expect_arguments(directive, &["field", "fields", "references"])?;
                    belongs_to = Some(directive);
                }
                // Amplify's one-to-one: the key is stored on this side, as a belongsTo's is.
                "hasOne" => {
                    self.expect_arguments(directive, &["fields", "references"])?;
                    belongs_to = Some(directive);
                }
                "hasMany" => {
                    self.expect_arguments(
                        directive,
                        &[
                            "index",
                            "field",
                            "sortBy",
                            "indexName",
                            "fields",
                            "references",
                        ],
                    )?;
                    has_many = Some(directive);
                }
                "outgoing" | "incoming" => {
                    self.expect_arguments(directive, &["edge"])?;
                    edge_field = Some(directive);
                }
                "targets" => {
                    self.expect_arguments(directive, &["edge", "role"])?;
                    edge_field = Some(directive);
                }
                // Read by `read_index` and `read_object` once the type's fields are known.
                "index" | "auth" | "primaryKey" => {}
                name if APPSYNC_DIRECTIVES.contains(&name) => {}
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        let relation_count = usize::from(belongs_to.is_some())
            + usize::from(has_many.is_some())
            + usize::from(edge_field.is_some());
        if relation_count > 1 {
            return Err(self.error(
                field.pos,
                format!("{owner}.{name}: use one of @belongsTo, @hasMany, @outgoing, @incoming and @targets"),
            ));
        }

        let description = description(field.node.description.as_ref());
        let default_at = default.as_ref().map(|(pos, _)| *pos);
        let kind = match &ty.base {
            BaseType::Named(type_name) => {
                if let Some(directive) = edge_field {
                    return Err(self.error(
                        directive.pos,
                        format!(
                            "{owner}.{name}: @{} needs a list type, like [{type_name}]",
                            directive.node.name.node
                        ),
                    ));
                }
                if let Some(scalar) = names.scalar(type_name) {
                    if let Some(directive) = belongs_to.or(has_many) {
                        return Err(self.error(
                            directive.pos,
                            format!("{owner}.{name}: @{} needs a field of a @model type, not {type_name}", directive.node.name.node),
                        ));
                    }
                    let uniqueness_allowed = matches!(
                        scalar,
                        ScalarType::String
                            | ScalarType::Id
                            | ScalarType::Int
                            | ScalarType::AwsEmail
                    );
                    if let Some(pos) = unique
                        && !uniqueness_allowed
                    {
                        return Err(self.error(
                            pos,
                            format!("{owner}.{name}: @unique works on String, ID, Int and AWSEmail fields"),
                        ));
                    }
                    let default = match default {
                        Some((pos, value)) => {
                            if let Err(problem) = default_fits(&value, &scalar, names.enums) {
                                return Err(self.error(
                                    pos,
                                    format!("{owner}.{name}: @default(value: {value:?}) {problem}"),
                                ));
                            }
                            Some(value)
                        }
                        None => None,
                    };
                    FieldKind::Scalar {
                        scalar,
                        required: !ty.nullable,
                        unique: unique.is_some(),
                        default,
                    }
                } else if names.objects.contains(type_name.as_str()) {
                    let directive = belongs_to.or(has_many);
                    if let Some(directive) = directive {
                        return Err(self.error(
                            directive.pos,
                            format!("{owner}.{name}: @{} needs a field of a @model type; {type_name} has no @model", directive.node.name.node),
                        ));
                    }
                    if let Some(pos) = unique {
                        return Err(self.error(
                            pos,
                            format!("{owner}.{name}: @unique works on scalar fields only"),
                        ));
                    }
                    FieldKind::Embedded {
                        object: type_name.to_string(),
                        required: !ty.nullable,
                        list: None,
                    }
                } else if names.is_node_type(type_name) {
                    if let Some(pos) = unique {
                        return Err(self.error(
                            pos,
                            format!("{owner}.{name}: @unique works on scalar fields only"),
                        ));
                    }
                    if let Some(directive) = has_many {
                        return Err(self.error(
                            directive.pos,
                            format!(
                                "{owner}.{name}: @hasMany needs a list type, like [{type_name}]"
                            ),
                        ));
                    }
                    let Some(directive) = belongs_to else {
                        return Err(self.error(
                            field.pos,
                            format!("{owner}.{name}: a field of type {type_name} needs @belongsTo(field: \"{name}Id\") or a resolver file resolvers/{owner}.{name}.toml"),
                        ));
                    };
                    relations.push(PendingRelation {
                        owner: owner.to_owned(),
                        field: name.clone(),
                        pos: directive.pos,
                    });
                    FieldKind::BelongsTo {
                        target: type_name.to_string(),
                        foreign_key: self.belongs_to_key(owner, &name, directive)?,
                        required: !ty.nullable,
                    }
                } else {
                    return Err(self.error(
                        field.node.ty.pos,
                        format!("{owner}.{name}: unknown type {type_name}"),
                    ));
                }
            }
            // A list of values: scalars, enum values or objects without @model.
            BaseType::List(element) if matches!(&element.base, BaseType::Named(n) if names.objects.contains(n.as_str()) || names.scalar(n).is_some()) =>
            {
                let BaseType::Named(element_name) = &element.base else {
                    unreachable!("matched as named above");
                };
                let directive = belongs_to.or(has_many).or(edge_field);
                if let Some(directive) = directive {
                    return Err(self.error(
                        directive.pos,
                        format!(
                            "{owner}.{name}: @{} needs a field of a @model type, not [{element_name}]",
                            directive.node.name.node
                        ),
                    ));
                }
                if let Some(pos) = unique {
                    return Err(self.error(
                        pos,
                        format!("{owner}.{name}: @unique works on single values, not lists"),
                    ));
                }
                match names.scalar(element_name) {
                    Some(scalar) => FieldKind::ScalarList {
                        scalar,
                        required: !ty.nullable,
                        elements_required: !element.nullable,
                    },
                    None => FieldKind::Embedded {
                        object: element_name.to_string(),
                        required: !ty.nullable,
                        list: Some(!element.nullable),
                    },
                }
            }
            BaseType::List(element) => {
                let element_name = match &element.base {
                    BaseType::Named(element_name) if names.is_node_type(element_name) => {
                        element_name
                    }
                    _ => {
                        return Err(self.error(
                            field.node.ty.pos,
                            format!("{owner}.{name}: list fields must be [T] of a @model type or union, with @hasMany, or have a resolver file resolvers/{owner}.{name}.toml"),
                        ));
                    }
                };
                if let Some(pos) = unique {
                    return Err(self.error(
                        pos,
                        format!("{owner}.{name}: @unique works on scalar fields only"),
                    ));
                }
                if let Some(directive) = belongs_to {
                    return Err(self.error(
                        directive.pos,
                        format!("{owner}.{name}: @belongsTo needs a single {element_name}; a list needs @hasMany"),
                    ));
                }
                if let Some(directive) = edge_field {
                    relations.push(PendingRelation {
                        owner: owner.to_owned(),
                        field: name.clone(),
                        pos: directive.pos,
                    });
                    let edge = self.string_argument(directive, "edge")?;
                    let element = element_name.to_string();
                    let kind = match directive.node.name.node.as_str() {
                        "outgoing" => FieldKind::Outgoing { edge, element },
                        "incoming" => FieldKind::Incoming { edge, element },
                        _ => FieldKind::Targets {
                            edge,
                            element,
                            role: self.enum_argument(directive, "role")?,
                        },
                    };
                    return Ok(Some(FieldDef {
                        name,
                        description,
                        kind,
                        auth: Vec::new(),
                    }));
                }
                let Some(directive) = has_many else {
                    return Err(self.error(
                        field.pos,
                        format!("{owner}.{name}: a list of {element_name} needs @hasMany(index:, field:), @outgoing(edge:), @incoming(edge:) or @targets(edge:), or a resolver file resolvers/{owner}.{name}.toml"),
                    ));
                };
                // Without `index:` (Amplify's forms), the slot is chosen once every type is read.
                let slot = match self.optional_string_argument(directive, "index")? {
                    Some(index) => parse_slot(&index).ok_or_else(|| {
                        self.error(
                            directive.pos,
                            format!("{owner}.{name}: index must be one of \"GSI01\" to \"GSI{MAX_SLOT}\", not {index:?}"),
                        )
                    })?,
                    None => AUTO_SLOT,
                };
                relations.push(PendingRelation {
                    owner: owner.to_owned(),
                    field: name.clone(),
                    pos: directive.pos,
                });
                FieldKind::HasMany(HasMany {
                    slot,
                    element: element_name.to_string(),
                    foreign_key: self.has_many_key(owner, &name, element_name, directive)?,
                    sort_by: self.optional_string_argument(directive, "sortBy")?,
                })
            }
        };
        if let Some(pos) = default_at
            && !matches!(kind, FieldKind::Scalar { .. })
        {
            return Err(self.error(
                pos,
                format!("{owner}.{name}: @default works on scalar and enum fields only"),
            ));
        }
        Ok(Some(FieldDef {
            name,
            description,
            kind,
            auth: Vec::new(),
        }))
    }

    /// A field the directives do not cover: one with arguments, or of a node type or a list,
    /// without a relation directive. Its resolver comes from `resolvers/`.
    pub(super) fn read_custom_field(
        &self,
        owner: &str,
        field: &Positioned<FieldDefinition>,
        names: &Names<'_>,
    ) -> Result<Option<CustomField>, ModelError> {
        const RELATIONS: [&str; 9] = [
            "unique",
            "index",
            "default",
            "belongsTo",
            "hasOne",
            "hasMany",
            "outgoing",
            "incoming",
            "targets",
        ];
        let name = field.node.name.node.as_str();
        let ty = &field.node.ty.node;
        let (element, list) = self.element_of(owner, field)?;
        let has_relation = field
            .node
            .directives
            .iter()
            .any(|d| RELATIONS.contains(&d.node.name.node.as_str()));
        let has_resolver = self.resolved.contains(&format!("{owner}.{name}"));
        if has_relation || !has_resolver {
            if let Some(argument) = field.node.arguments.first() {
                return Err(self.error(
                    argument.pos,
                    format!("{owner}.{name}: arguments need a resolver file resolvers/{owner}.{name}.toml; connection arguments are generated"),
                ));
            }
            return Ok(None);
        }
        if let Some(directive) = field.node.directives.first() {
            return Err(self.unknown_directive(directive.pos, &directive.node.name.node));
        }
        let known = |element: &str| names.scalar(element).is_some() || names.is_node_type(element);
        if !known(&element) {
            return Err(self.error(
                field.node.ty.pos,
                format!("{owner}.{name}: unknown type {element}"),
            ));
        }
        let mut arguments = Vec::new();
        for argument in &field.node.arguments {
            let argument_type = &argument.node.ty.node;
            let BaseType::Named(argument_element) = &argument_type.base else {
                return Err(self.error(
                    argument.pos,
                    format!(
                        "{owner}.{name}: argument {}: lists are not supported",
                        argument.node.name.node
                    ),
                ));
            };
            if names.scalar(argument_element).is_none() {
                return Err(self.error(
                    argument.pos,
                    format!("{owner}.{name}: argument {} must be a scalar or an enum, not {argument_element}", argument.node.name.node),
                ));
            }
            arguments.push(CustomArgument {
                name: argument.node.name.node.to_string(),
                ty: argument_type.to_string(),
                element: argument_element.to_string(),
            });
        }
        Ok(Some(CustomField {
            ty: ty.to_string(),
            element,
            list,
            arguments,
            line: field.pos.line,
            column: field.pos.column,
        }))
    }

    /// Checks what needs every type's fields: foreign keys, sort fields, slot conflicts; and
    /// derives each type's slots and the table's indexes.
    /// A field with rules of its own may not hold a relation's key (a `@belongsTo` or
    /// `@hasMany` foreign key) nor order a `@hasMany` or an edge: its values would show
    /// through the relation.
    pub(super) fn refuse_ruled_relation_keys(
        &self,
        model: &Model,
        declared: &HashMap<&str, Pos>,
    ) -> Result<(), ModelError> {
        let mut keys: Vec<(String, String)> = Vec::new();
        for type_def in &model.types {
            for field in &type_def.fields {
                match &field.kind {
                    FieldKind::BelongsTo { foreign_key, .. } => {
                        keys.push((type_def.name.clone(), foreign_key.clone()));
                    }
                    FieldKind::HasMany(has_many) => {
                        for element in model.possible_types(&has_many.element) {
                            keys.push((element.to_owned(), has_many.foreign_key.clone()));
                            if let Some(sort_by) = &has_many.sort_by {
                                keys.push((element.to_owned(), sort_by.clone()));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        for (type_name, key) in keys {
            let Some(field) = model.type_def(&type_name).and_then(|t| t.field(&key)) else {
                continue;
            };
            if !field.auth.is_empty() {
                return Err(self.error(
                    declared_at(declared, &type_name),
                    format!(
                        "{type_name}.{key}: @auth on a field cannot protect a relation's key or sort field: its values show through the relation; put the rules on the type"
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Fields: mistakes named with their line and column, and managed fields.

    use super::super::error_of;
    use crate::model::*;

    #[test]
    fn schema_mistakes_name_their_line_and_column() {
        let table = [
            (
                "type Farm @model @cached { name: String }",
                "schema.graphql:1:18: unknown directive @cached",
            ),
            (
                "type Farm @model {\n  name: String\n  cows: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\")\n}\ntype Cow @model { name: String }",
                "schema.graphql:3:15: Farm.cows: @hasMany(field: \"farmId\") needs a field `farmId: ID` on Cow",
            ),
            (
                "type Farm @model {\n  logo: Image @belongsTo(field: \"logoId\")\n}\ntype Image @model { url: String }",
                "schema.graphql:2:15: Farm.logo: @belongsTo(field: \"logoId\") needs a field `logoId: ID` on Farm",
            ),
            (
                "type Farm @model {\n  a: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\")\n  b: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\")\n}\ntype Cow @model { farmId: ID }",
                "schema.graphql:3:12: Farm.b: Cow already writes slot GSI01 for Farm.a; choose another index",
            ),
            (
                "type Farm @model { cows: [Cow] @hasMany(index: \"GSI21\", field: \"farmId\") }\ntype Cow @model { farmId: ID }",
                "schema.graphql:1:32: Farm.cows: index must be one of \"GSI01\" to \"GSI20\", not \"GSI21\"",
            ),
            (
                "type Farm @model { cow: Cow }\ntype Cow { farm: Farm }",
                "schema.graphql:2:18: Cow.farm: a type without @model holds values, not nodes",
            ),
            (
                "type Farm @model { cow: Cow @belongsTo(field: \"cowId\") cowId: ID }\ntype Cow { name: String }",
                "schema.graphql:1:29: Farm.cow: @belongsTo needs a field of a @model type; Cow has no @model",
            ),
            (
                "type Farm @model { cows: [Cow] @unique }\ntype Cow { name: String @unique }",
                "schema.graphql:2:25: Cow.name: @unique works on @model types; Cow has no @model",
            ),
            (
                "type Farm @model { owner: Person }",
                "schema.graphql:1:27: Farm.owner: unknown type Person",
            ),
            (
                "type Farm @model { logo: Image }\ntype Image @model { url: String }",
                "schema.graphql:1:20: Farm.logo: a field of type Image needs @belongsTo(field: \"logoId\")",
            ),
            (
                "type Farm @model { PK01: String }",
                "schema.graphql:1:20: Farm.PK01: the name PK01 is reserved for the table's keys",
            ),
            (
                "type Farm @model { version: String }",
                "schema.graphql:1:20: Farm.version is managed by @model as `version: Int!`; remove it",
            ),
            (
                "type Farm @model { tags: [[String]] }",
                "schema.graphql:1:26: Farm.tags: lists of lists are not supported",
            ),
            (
                "type Farm @model { tags: [String] @unique }",
                "schema.graphql:1:35: Farm.tags: @unique works on single values, not lists",
            ),
            (
                "type Farm @model { farmId: ID cows: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\") @auth(rules: [{ allow: owner }]) }\ntype Cow @model { farmId: ID }",
                "schema.graphql:1:85: Farm.cows: @auth on a field works on stored fields",
            ),
            (
                "type Farm @model @auth(rules: [{ allow: owner, ownerField: \"size\" }]) { size: Int }",
                "schema.graphql:1:18: Farm.size: @auth reads it as an owner or a group, so it must be String, ID, [String] or [ID]",
            ),
            (
                "type Farm @model @aws_iam(x: 1) { a: Int }",
                "schema.graphql:1:27: @aws_iam has no argument x",
            ),
            (
                "type Farm @model { a: Int @aws_lambda(x: 1) }",
                "schema.graphql:1:39: @aws_lambda has no argument x",
            ),
            (
                "type Farm @model @aws_api_key(cognito_groups: [\"A\"]) { a: Int }",
                "schema.graphql:1:31: @aws_api_key has no argument cognito_groups",
            ),
            (
                "type Farm @model @auth(rules: [{ allow: groups, groups: [\"A\"], provider: iam }]) { a: Int }",
                "schema.graphql:1:31: provider: iam goes with allow: private or public",
            ),
            (
                "type Farm @model { open: Boolean @unique }",
                "schema.graphql:1:34: Farm.open: @unique works on String, ID, Int and AWSEmail fields",
            ),
            (
                "type Farm @model { name: String }\ntype FarmConnection @model { x: Int }",
                "schema.graphql:2:1: type FarmConnection is generated for Farm; choose another name",
            ),
            ("type Farm @model { name: String", "schema.graphql:1:32: "),
            (
                "enum Kind { A }",
                "schema.graphql:1:1: the schema declares no @model type",
            ),
        ];
        for (source, expected) in table {
            let message = error_of(source);
            assert!(
                message.starts_with(expected),
                "{source}\n got: {message}\nwant: {expected}"
            );
        }
    }

    #[test]
    fn redundant_managed_fields_are_accepted() {
        let model = Model::parse(
            "schema.graphql",
            "type Farm @model { id: ID! name: String }",
        )
        .expect("declaring id: ID! is allowed");
        let names: Vec<&str> = model.types[0]
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, vec!["name"]);
    }
}
