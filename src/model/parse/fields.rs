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
use async_graphql_parser::types::{BaseType, ConstDirective, FieldDefinition, Type};
use async_graphql_parser::{Pos, Positioned};
use std::collections::HashMap;

/// The field being read: its type's name, its own, and its definition.
struct FieldAt<'f> {
    owner: &'f str,
    name: &'f str,
    field: &'f Positioned<FieldDefinition>,
}

/// The directives of a field that decide its kind, found by `field_directives`.
#[derive(Default)]
struct FieldDirectives<'f> {
    unique: Option<Pos>,
    default: Option<(Pos, String)>,
    belongs_to: Option<&'f Positioned<ConstDirective>>,
    has_many: Option<&'f Positioned<ConstDirective>>,
    edge_field: Option<&'f Positioned<ConstDirective>>,
}

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
        let at = FieldAt {
            owner,
            name: &name,
            field,
        };
        // In Amplify's language a type may have a field of its own named `version`: the
        // node's version is then kept in `_version`, where Amplify keeps its own.
        if let Some(expected) = managed_field_type(&name)
            && !(name == "version" && self.amplify_language())
        {
            return self
                .a_managed_field_is_declared_as_managed(&at, expected)
                .map(|()| None);
        }
        self.a_field_takes_no_reserved_name(&at)?;
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
        let directives = self.field_directives(field)?;
        self.a_field_has_one_relation(&at, &directives)?;
        let description = description(field.node.description.as_ref());
        let default_at = directives.default.as_ref().map(|(pos, _)| *pos);
        let ty = &field.node.ty.node;
        let kind = match &ty.base {
            BaseType::Named(type_name) => {
                self.named_field_kind(&at, type_name, directives, names, relations)?
            }
            // A list of values: scalars, enum values or objects without @model.
            BaseType::List(element) if matches!(&element.base, BaseType::Named(n) if names.objects.contains(n.as_str()) || names.scalar(n).is_some()) => {
                self.value_list_kind(&at, element, &directives, names)?
            }
            BaseType::List(element) => {
                let kind = self.node_list_kind(&at, element, &directives, names, relations)?;
                // An edge field takes no @default; it is not asked about one.
                if directives.edge_field.is_some() {
                    return Ok(Some(FieldDef {
                        name,
                        description,
                        kind,
                        auth: Vec::new(),
                    }));
                }
                kind
            }
        };
        self.default_is_on_scalar_and_enum_fields(&at, default_at, &kind)?;
        Ok(Some(FieldDef {
            name,
            description,
            kind,
            auth: Vec::new(),
        }))
    }

    /// A field `@model` manages (`id`, the timestamps, `version`) is declared only as it is
    /// served, and without directives: anything else would promise what the API does not do.
    fn a_managed_field_is_declared_as_managed(
        &self,
        at: &FieldAt<'_>,
        expected: &str,
    ) -> Result<(), ModelError> {
        let (name, field) = (at.name, at.field);
        let ty = &field.node.ty.node;
        // Amplify lets a schema declare its timestamps, as `AWSDateTime` or `String`,
        // required or not; they are served as the managed `AWSDateTime!` either way.
        let timestamp = matches!(name, "createdAt" | "updatedAt")
            && matches!(
                ty.to_string().as_str(),
                "AWSDateTime" | "String" | "String!"
            );
        // Amplify's language may declare `id: ID`: served as declared, every node having one.
        let optional_id = name == "id" && ty.to_string() == "ID" && self.amplify_language();
        // `id: ID! @primaryKey` says what is so; with sort key fields it is refused by name.
        let key = name == "id"
            && field
                .node
                .directives
                .iter()
                .all(|d| d.node.name.node == "primaryKey");
        if (ty.to_string() == expected || timestamp || optional_id)
            && (field.node.directives.is_empty() || key)
        {
            return Ok(());
        }
        Err(self.error(
            field.pos,
            format!(
                "{}.{name} is managed by @model as `{name}: {expected}`; remove it",
                at.owner
            ),
        ))
    }

    /// A field takes no name of the table's key attributes: it would overwrite them.
    fn a_field_takes_no_reserved_name(&self, at: &FieldAt<'_>) -> Result<(), ModelError> {
        if is_reserved_attribute(at.name) {
            return Err(self.error(
                at.field.pos,
                format!(
                    "{}.{name}: the name {name} is reserved for the table's keys",
                    at.owner,
                    name = at.name
                ),
            ));
        }
        Ok(())
    }

    /// The directives that decide a field's kind, each with the arguments it may take; a
    /// directive nobody reads is refused.
    fn field_directives<'f>(
        &self,
        field: &'f Positioned<FieldDefinition>,
    ) -> Result<FieldDirectives<'f>, ModelError> {
        let mut found = FieldDirectives::default();
        for directive in &field.node.directives {
            match directive.node.name.node.as_str() {
                "unique" => {
                    self.expect_arguments(directive, &[])?;
                    found.unique = Some(directive.pos);
                }
                "default" => {
                    self.expect_arguments(directive, &["value"])?;
                    found.default =
                        Some((directive.pos, self.string_argument(directive, "value")?));
                }
                "belongsTo" => {
                    self.expect_arguments(directive, &["field", "fields", "references"])?;
                    found.belongs_to = Some(directive);
                }
                // Amplify's one-to-one: the key is stored on this side, as a belongsTo's is.
                "hasOne" => {
                    self.expect_arguments(directive, &["fields", "references"])?;
                    found.belongs_to = Some(directive);
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
                    found.has_many = Some(directive);
                }
                "outgoing" | "incoming" => {
                    self.expect_arguments(directive, &["edge"])?;
                    found.edge_field = Some(directive);
                }
                "targets" => {
                    self.expect_arguments(directive, &["edge", "role"])?;
                    found.edge_field = Some(directive);
                }
                // Read by `read_index` and `read_object` once the type's fields are known.
                "index" | "auth" | "primaryKey" => {}
                name if APPSYNC_DIRECTIVES.contains(&name) => {}
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        Ok(found)
    }

    /// A field is one relation at most: each relation directive stores it its own way.
    fn a_field_has_one_relation(
        &self,
        at: &FieldAt<'_>,
        directives: &FieldDirectives<'_>,
    ) -> Result<(), ModelError> {
        let relation_count = usize::from(directives.belongs_to.is_some())
            + usize::from(directives.has_many.is_some())
            + usize::from(directives.edge_field.is_some());
        if relation_count > 1 {
            return Err(self.error(
                at.field.pos,
                format!(
                    "{}.{}: use one of @belongsTo, @hasMany, @outgoing, @incoming and @targets",
                    at.owner, at.name
                ),
            ));
        }
        Ok(())
    }

    /// The kind of a field of a named type: a scalar, an embedded object, or a `@belongsTo`.
    fn named_field_kind(
        &self,
        at: &FieldAt<'_>,
        type_name: &str,
        directives: FieldDirectives<'_>,
        names: &Names<'_>,
        relations: &mut Vec<PendingRelation>,
    ) -> Result<FieldKind, ModelError> {
        let (owner, name) = (at.owner, at.name);
        let ty = &at.field.node.ty.node;
        self.an_edge_field_is_a_list(at, type_name, &directives)?;
        if let Some(scalar) = names.scalar(type_name) {
            return self.scalar_field_kind(at, type_name, scalar, directives, names);
        }
        if names.objects.contains(type_name) {
            self.a_relation_is_no_embedded_object(at, type_name, &directives)?;
            self.unique_is_on_scalar_fields_only(at, directives.unique)?;
            return Ok(FieldKind::Embedded {
                object: type_name.to_string(),
                required: !ty.nullable,
                list: None,
            });
        }
        if !names.is_node_type(type_name) {
            return Err(self.error(
                at.field.node.ty.pos,
                format!("{owner}.{name}: unknown type {type_name}"),
            ));
        }
        self.unique_is_on_scalar_fields_only(at, directives.unique)?;
        self.has_many_is_on_a_list(at, type_name, &directives)?;
        let directive = self.a_node_field_has_belongs_to(at, type_name, &directives)?;
        relations.push(PendingRelation {
            owner: owner.to_owned(),
            field: name.to_owned(),
            pos: directive.pos,
        });
        Ok(FieldKind::BelongsTo {
            target: type_name.to_string(),
            foreign_key: self.belongs_to_key(owner, name, directive)?,
            required: !ty.nullable,
        })
    }

    /// `@outgoing`, `@incoming` and `@targets` are on lists: they read many edges.
    fn an_edge_field_is_a_list(
        &self,
        at: &FieldAt<'_>,
        type_name: &str,
        directives: &FieldDirectives<'_>,
    ) -> Result<(), ModelError> {
        if let Some(directive) = directives.edge_field {
            return Err(self.error(
                directive.pos,
                format!(
                    "{}.{}: @{} needs a list type, like [{type_name}]",
                    at.owner, at.name, directive.node.name.node
                ),
            ));
        }
        Ok(())
    }

    /// The kind of a scalar or enum field, with what `@unique` and `@default` ask of it.
    fn scalar_field_kind(
        &self,
        at: &FieldAt<'_>,
        type_name: &str,
        scalar: ScalarType,
        directives: FieldDirectives<'_>,
        names: &Names<'_>,
    ) -> Result<FieldKind, ModelError> {
        let (owner, name) = (at.owner, at.name);
        if let Some(directive) = directives.belongs_to.or(directives.has_many) {
            return Err(self.error(
                directive.pos,
                format!(
                    "{owner}.{name}: @{} needs a field of a @model type, not {type_name}",
                    directive.node.name.node
                ),
            ));
        }
        self.unique_is_on_keyable_scalars(at, &scalar, directives.unique)?;
        let default = match directives.default {
            Some((pos, value)) => {
                self.a_default_fits_its_field(at, pos, &value, &scalar, names)?;
                Some(value)
            }
            None => None,
        };
        Ok(FieldKind::Scalar {
            scalar,
            required: !at.field.node.ty.node.nullable,
            unique: directives.unique.is_some(),
            default,
        })
    }

    /// `@unique` is on a String, ID, Int or AWSEmail field: the values a lookup is made by.
    fn unique_is_on_keyable_scalars(
        &self,
        at: &FieldAt<'_>,
        scalar: &ScalarType,
        unique: Option<Pos>,
    ) -> Result<(), ModelError> {
        let uniqueness_allowed = matches!(
            scalar,
            ScalarType::String | ScalarType::Id | ScalarType::Int | ScalarType::AwsEmail
        );
        if let Some(pos) = unique
            && !uniqueness_allowed
        {
            return Err(self.error(
                pos,
                format!(
                    "{}.{}: @unique works on String, ID, Int and AWSEmail fields",
                    at.owner, at.name
                ),
            ));
        }
        Ok(())
    }

    /// `@default(value:)` is a value of the field's scalar or enum.
    fn a_default_fits_its_field(
        &self,
        at: &FieldAt<'_>,
        pos: Pos,
        value: &str,
        scalar: &ScalarType,
        names: &Names<'_>,
    ) -> Result<(), ModelError> {
        default_fits(value, scalar, names.enums).map_err(|problem| {
            self.error(
                pos,
                format!(
                    "{}.{}: @default(value: {value:?}) {problem}",
                    at.owner, at.name
                ),
            )
        })
    }

    /// A relation directive is not on a field of an object without `@model`: such a value is
    /// stored inside its node, not related to it.
    fn a_relation_is_no_embedded_object(
        &self,
        at: &FieldAt<'_>,
        type_name: &str,
        directives: &FieldDirectives<'_>,
    ) -> Result<(), ModelError> {
        if let Some(directive) = directives.belongs_to.or(directives.has_many) {
            return Err(self.error(
                directive.pos,
                format!(
                    "{}.{}: @{} needs a field of a @model type; {type_name} has no @model",
                    at.owner, at.name, directive.node.name.node
                ),
            ));
        }
        Ok(())
    }

    /// `@unique` is on a scalar field: a lookup is made by one stored value.
    fn unique_is_on_scalar_fields_only(
        &self,
        at: &FieldAt<'_>,
        unique: Option<Pos>,
    ) -> Result<(), ModelError> {
        if let Some(pos) = unique {
            return Err(self.error(
                pos,
                format!(
                    "{}.{}: @unique works on scalar fields only",
                    at.owner, at.name
                ),
            ));
        }
        Ok(())
    }

    /// `@hasMany` is on a list: it reads many nodes.
    fn has_many_is_on_a_list(
        &self,
        at: &FieldAt<'_>,
        type_name: &str,
        directives: &FieldDirectives<'_>,
    ) -> Result<(), ModelError> {
        if let Some(directive) = directives.has_many {
            return Err(self.error(
                directive.pos,
                format!(
                    "{}.{}: @hasMany needs a list type, like [{type_name}]",
                    at.owner, at.name
                ),
            ));
        }
        Ok(())
    }

    /// A field of a node type is a `@belongsTo` (or has a resolver file, read before): nothing
    /// else says how to find its node. Returns the directive.
    fn a_node_field_has_belongs_to<'f>(
        &self,
        at: &FieldAt<'_>,
        type_name: &str,
        directives: &FieldDirectives<'f>,
    ) -> Result<&'f Positioned<ConstDirective>, ModelError> {
        let (owner, name) = (at.owner, at.name);
        directives.belongs_to.ok_or_else(|| {
            self.error(
                at.field.pos,
                format!("{owner}.{name}: a field of type {type_name} needs @belongsTo(field: \"{name}Id\") or a resolver file resolvers/{owner}.{name}.toml"),
            )
        })
    }

    /// The kind of a list of values: scalars, enum values or objects without `@model`.
    fn value_list_kind(
        &self,
        at: &FieldAt<'_>,
        element: &Type,
        directives: &FieldDirectives<'_>,
        names: &Names<'_>,
    ) -> Result<FieldKind, ModelError> {
        let (owner, name) = (at.owner, at.name);
        let BaseType::Named(element_name) = &element.base else {
            unreachable!("matched as named by the caller");
        };
        let directive = directives
            .belongs_to
            .or(directives.has_many)
            .or(directives.edge_field);
        if let Some(directive) = directive {
            return Err(self.error(
                directive.pos,
                format!(
                    "{owner}.{name}: @{} needs a field of a @model type, not [{element_name}]",
                    directive.node.name.node
                ),
            ));
        }
        if let Some(pos) = directives.unique {
            return Err(self.error(
                pos,
                format!("{owner}.{name}: @unique works on single values, not lists"),
            ));
        }
        let required = !at.field.node.ty.node.nullable;
        Ok(match names.scalar(element_name) {
            Some(scalar) => FieldKind::ScalarList {
                scalar,
                required,
                elements_required: !element.nullable,
            },
            None => FieldKind::Embedded {
                object: element_name.to_string(),
                required,
                list: Some(!element.nullable),
            },
        })
    }

    /// The kind of a list of nodes: an edge field or a `@hasMany`.
    fn node_list_kind(
        &self,
        at: &FieldAt<'_>,
        element: &Type,
        directives: &FieldDirectives<'_>,
        names: &Names<'_>,
        relations: &mut Vec<PendingRelation>,
    ) -> Result<FieldKind, ModelError> {
        let (owner, name) = (at.owner, at.name);
        let element_name = self.a_list_holds_nodes(at, element, names)?;
        self.unique_is_on_scalar_fields_only(at, directives.unique)?;
        if let Some(directive) = directives.belongs_to {
            return Err(self.error(
                directive.pos,
                format!("{owner}.{name}: @belongsTo needs a single {element_name}; a list needs @hasMany"),
            ));
        }
        let pending = |directive: &Positioned<ConstDirective>| PendingRelation {
            owner: owner.to_owned(),
            field: name.to_owned(),
            pos: directive.pos,
        };
        if let Some(directive) = directives.edge_field {
            relations.push(pending(directive));
            let edge = self.string_argument(directive, "edge")?;
            let element = element_name.to_string();
            return Ok(match directive.node.name.node.as_str() {
                "outgoing" => FieldKind::Outgoing { edge, element },
                "incoming" => FieldKind::Incoming { edge, element },
                _ => FieldKind::Targets {
                    edge,
                    element,
                    role: self.enum_argument(directive, "role")?,
                },
            });
        }
        let Some(directive) = directives.has_many else {
            return Err(self.error(
                at.field.pos,
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
        relations.push(pending(directive));
        Ok(FieldKind::HasMany(HasMany {
            slot,
            element: element_name.to_string(),
            foreign_key: self.has_many_key(owner, name, element_name, directive)?,
            sort_by: self.optional_string_argument(directive, "sortBy")?,
            index: None,
        }))
    }

    /// A list field without a resolver file holds nodes: one of a `@model` type or a union of
    /// them. Returns the element's name.
    fn a_list_holds_nodes<'t>(
        &self,
        at: &FieldAt<'_>,
        element: &'t Type,
        names: &Names<'_>,
    ) -> Result<&'t str, ModelError> {
        match &element.base {
            BaseType::Named(element_name) if names.is_node_type(element_name) => {
                Ok(element_name.as_str())
            }
            _ => Err(self.error(
                at.field.node.ty.pos,
                format!(
                    "{owner}.{name}: list fields must be [T] of a @model type or union, with @hasMany, or have a resolver file resolvers/{owner}.{name}.toml",
                    owner = at.owner,
                    name = at.name
                ),
            )),
        }
    }

    /// `@default` is on a scalar or enum field: the one value it writes.
    fn default_is_on_scalar_and_enum_fields(
        &self,
        at: &FieldAt<'_>,
        default_at: Option<Pos>,
        kind: &FieldKind,
    ) -> Result<(), ModelError> {
        if let Some(pos) = default_at
            && !matches!(kind, FieldKind::Scalar { .. })
        {
            return Err(self.error(
                pos,
                format!(
                    "{}.{}: @default works on scalar and enum fields only",
                    at.owner, at.name
                ),
            ));
        }
        Ok(())
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
        let (element, list) = self.element_of(owner, field)?;
        let has_relation = field
            .node
            .directives
            .iter()
            .any(|d| RELATIONS.contains(&d.node.name.node.as_str()));
        let has_resolver = self.resolved.contains(&format!("{owner}.{name}"));
        if self.unresolved_in_amplify(field, &element, names) && !has_resolver {
            let unresolved = CustomField {
                unresolved: true,
                ..self.custom_field(field, element, list, Vec::new())
            };
            return Ok(Some(unresolved));
        }
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
        Ok(Some(self.custom_field(field, element, list, arguments)))
    }

    /// The custom field `field` declares.
    fn custom_field(
        &self,
        field: &Positioned<FieldDefinition>,
        element: String,
        list: bool,
        arguments: Vec<CustomArgument>,
    ) -> CustomField {
        CustomField {
            ty: field.node.ty.node.to_string(),
            element,
            list,
            arguments,
            line: field.pos.line,
            column: field.pos.column,
            unresolved: false,
        }
    }

    /// In Amplify's language, a field of a `@model` type (or a list of one) with no relation
    /// directive, no directive at all and no arguments: Amplify's transformer serves it as
    /// declared, with no resolver, so it answers null, and leaves it out of inputs and filters.
    fn unresolved_in_amplify(
        &self,
        field: &Positioned<FieldDefinition>,
        element: &str,
        names: &Names<'_>,
    ) -> bool {
        self.amplify_language()
            && names.is_node_type(element)
            && field.node.directives.is_empty()
            && field.node.arguments.is_empty()
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

    use super::super::{assert_refused, error_of};
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
                "type Farm @model { logo: Image }\ntype Image @model { url: String @unique }",
                "schema.graphql:1:20: Farm.logo: a field of type Image needs @belongsTo(field: \"logoId\")",
            ),
            (
                "type Farm @model { PK01: String }",
                "schema.graphql:1:20: Farm.PK01: the name PK01 is reserved for the table's keys",
            ),
            (
                // In tablegraph's language (`@unique`); Amplify's allows a field of its own.
                "type Farm @model { version: String code: String @unique }",
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

    #[test]
    fn a_field_with_two_relation_directives_is_refused() {
        assert_refused(
            "type Farm @model { cows: [Cow] @hasMany @outgoing(edge: \"E\") }\ntype Cow @model { n: Int }",
            "Farm.cows: use one of @belongsTo, @hasMany, @outgoing, @incoming and @targets",
        );
    }

    #[test]
    fn an_edge_field_of_one_node_is_refused() {
        assert_refused(
            "type Farm @model { cow: Cow @outgoing(edge: \"E\") }\ntype Cow @model { n: Int }",
            "Farm.cow: @outgoing needs a list type, like [Cow]",
        );
    }

    #[test]
    fn a_relation_on_a_scalar_is_refused() {
        assert_refused(
            "type Farm @model { cow: String @belongsTo(field: \"cowId\") }",
            "Farm.cow: @belongsTo needs a field of a @model type, not String",
        );
    }

    #[test]
    fn a_default_that_does_not_fit_its_field_is_refused() {
        assert_refused(
            "type Farm @model { size: Int @default(value: \"big\") }",
            "Farm.size: @default(value: \"big\")",
        );
    }

    #[test]
    fn unique_on_an_embedded_object_is_refused() {
        assert_refused(
            "type Farm @model { place: Place @unique }\ntype Place { x: Int }",
            "Farm.place: @unique works on scalar fields only",
        );
    }

    #[test]
    fn a_has_many_of_one_node_is_refused() {
        assert_refused(
            "type Farm @model { cow: Cow @hasMany }\ntype Cow @model { n: Int }",
            "Farm.cow: @hasMany needs a list type, like [Cow]",
        );
    }

    #[test]
    fn a_relation_on_a_list_of_values_is_refused() {
        assert_refused(
            "type Farm @model { tags: [String] @hasMany }",
            "Farm.tags: @hasMany needs a field of a @model type, not [String]",
        );
    }

    #[test]
    fn a_list_of_an_unknown_type_is_refused() {
        assert_refused(
            "type Farm @model { cows: [Nobody] }",
            "Farm.cows: list fields must be [T] of a @model type or union",
        );
    }

    #[test]
    fn a_belongs_to_on_a_list_is_refused() {
        assert_refused(
            "type Farm @model { cows: [Cow] @belongsTo(field: \"cowId\") }\ntype Cow @model { n: Int }",
            "Farm.cows: @belongsTo needs a single Cow; a list needs @hasMany",
        );
    }

    #[test]
    fn a_list_of_nodes_without_a_relation_is_refused() {
        assert_refused(
            "type Farm @model { cows: [Cow] }\ntype Cow @model { n: Int name: String @unique }",
            "Farm.cows: a list of Cow needs @hasMany(index:, field:)",
        );
    }

    #[test]
    fn a_default_on_a_list_is_refused() {
        assert_refused(
            "type Farm @model { tags: [String] @default(value: \"a\") }",
            "Farm.tags: @default works on scalar and enum fields only",
        );
    }
}
