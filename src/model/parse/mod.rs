//! The reader of `schema.graphql`: GraphQL type definitions with tablegraph's directives in,
//! a validated [`Model`] or the first mistake (with its line and column) out.
//!
//! This file reads the document in order (enums, unions, the `schema` block, `extend type`,
//! the schema's own types and interfaces); by what they read, the rest is in `objects`
//! (`@model` types, `@index`), `embedded` (object types without `@model`), `fields` (one field
//! and its directives), `relations` (`@belongsTo`/`@hasMany` and edge fields, checked once every
//! type is read), `slots` (the index slots then chosen), `edges` (`@edge` types), `sorted` (each
//! definition sorted by what it is, its name checked),
//! `model_arguments` (`@model`'s root names and timestamps), `amplify` (Amplify's global
//! rule and relation keys), `language` (the schema's language, decided before reading),
//! `subscriptions` (`@aws_subscribe`), `rules` (`@auth` and AppSync's `@aws_*`) and
//! `arguments` (a directive's arguments, each read as the type it must be).

mod amplify;
mod arguments;
mod declared;
mod edges;
mod embedded;
mod fields;
mod http;
mod keys;
mod language;
mod many_to_many;
mod model_arguments;
mod objects;
mod relations;
mod roots;
mod rules;
mod slots;
mod sorted;
mod subscriptions;
mod v1;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_graphql_parser::types::{
    BaseType, FieldDefinition, SchemaDefinition, ServiceDocument, TypeDefinition, TypeKind,
    TypeSystemDefinition,
};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;

use super::dialect::{Dialect, DialectChoice, SchemaLanguage};
use super::{
    DeclaredType, EnumDef, EnumValueDef, MANAGED_FIELDS, Model, ModelError, ScalarType, TypeDef,
    UnionDef,
};

/// DynamoDB allows 20 global secondary indexes per table.
const MAX_SLOT: u8 = 20;

/// Field names an `@edge` type's objects and Relay edges have without declaring them, and
/// attributes its items keep.
const MANAGED_EDGE_FIELDS: [&str; 7] = [
    "from",
    "to",
    "toType",
    "createdAt",
    "updatedAt",
    "node",
    "cursor",
];

/// The largest `@rank`: ranks are written with three digits.
const MAX_RANK: i64 = 999;

/// Scalars a schema may use without declaring them (declaring them is allowed too).
const AWS_SCALARS: [(&str, ScalarType); 9] = [
    ("AWSDate", ScalarType::AwsDate),
    ("AWSDateTime", ScalarType::AwsDateTime),
    ("AWSEmail", ScalarType::AwsEmail),
    ("AWSTime", ScalarType::AwsTime),
    ("AWSTimestamp", ScalarType::AwsTimestamp),
    ("AWSJSON", ScalarType::AwsJson),
    ("AWSURL", ScalarType::AwsUrl),
    ("AWSPhone", ScalarType::AwsPhone),
    ("AWSIPAddress", ScalarType::AwsIpAddress),
];

/// Type names the generated API defines itself.
const GENERATED_TYPES: [&str; 5] = ["Query", "Mutation", "Subscription", "Node", "PageInfo"];
/// GraphQL's own scalars: no declared type may take their names.
const BUILT_IN_SCALARS: [&str; 5] = ["ID", "String", "Int", "Float", "Boolean"];

pub(super) fn parse_model(
    file: &str,
    source: &str,
    resolved: &BTreeSet<String>,
    bound: &BTreeMap<String, Vec<String>>,
    slot_pins: &BTreeMap<String, u8>,
    choice: &DialectChoice,
) -> Result<Model, ModelError> {
    let document = async_graphql_parser::parse_schema(source).map_err(|e| {
        let pos = e.positions().next().unwrap_or(Pos { line: 1, column: 1 });
        ModelError {
            file: file.to_owned(),
            line: pos.line,
            column: pos.column,
            message: e.to_string(),
        }
    })?;
    let reader = Reader {
        file,
        resolved,
        bound,
        slot_pins,
        dialect: language::dialect(&document, choice),
        warnings: std::cell::RefCell::default(),
        relation_keys: std::cell::RefCell::default(),
    };
    let document = if reader.amplify_language() && v1::uses_v1(&document) {
        reader.translate_v1(&document)?
    } else {
        document
    };
    let document = reader.expand_many_to_many(&document)?;
    reader.read(&document)
}

struct Reader<'a> {
    file: &'a str,
    /// `Type.field` of every field a resolver file serves.
    resolved: &'a BTreeSet<String>,
    /// `Type.field` of every field a resolver file binds to functions, with them.
    bound: &'a BTreeMap<String, Vec<String>>,
    /// The index slots `slots.lock` pins (see [`Model::slot_pins`]).
    slot_pins: &'a BTreeMap<String, u8>,
    /// The schema's language and the API's shape, decided before reading.
    dialect: Dialect,
    /// What the API leaves out of what the schema asks, found while reading.
    warnings: std::cell::RefCell<Vec<String>>,
    /// Relation keys Amplify's forms leave to be found once every type is read.
    relation_keys: std::cell::RefCell<amplify::RelationKeys>,
}

/// A relation seen while reading fields, checked once every type's fields are known.
struct PendingRelation {
    owner: String,
    field: String,
    pos: Pos,
}

/// What `read_types` reads, before the relations between the types are checked.
struct TypesRead {
    types: Vec<super::TypeDef>,
    edges: Vec<super::EdgeTypeDef>,
    objects: Vec<super::ObjectDef>,
    own_fields: Vec<super::OwnField>,
    subscriptions: Vec<super::SubscriptionDef>,
    relations: Vec<PendingRelation>,
}

impl Reader<'_> {
    /// Whether the schema is written in Amplify's language.
    fn amplify_language(&self) -> bool {
        self.dialect.language == SchemaLanguage::Amplify
    }

    fn error(&self, pos: Pos, message: impl Into<String>) -> ModelError {
        ModelError {
            file: self.file.to_owned(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        }
    }

    /// Reads the document: the `schema` block, then each definition sorted by what it is,
    /// enums, unions, interfaces and inputs, then the types that use them, then the relations
    /// between the types; in this order, which decides the first mistake a schema is refused
    /// with.
    fn read(&self, document: &ServiceDocument) -> Result<Model, ModelError> {
        for definition in &document.definitions {
            if let TypeSystemDefinition::Schema(schema) = definition {
                self.check_schema_block(schema)?;
            }
        }
        let merged = self.merged_extensions(document)?;
        let sorted = self.sort_definitions(&merged)?;
        let enums = sorted
            .enums
            .iter()
            .map(|definition| self.read_enum(definition))
            .collect::<Result<Vec<_>, _>>()?;
        let model_names: BTreeSet<&str> = sorted
            .objects
            .iter()
            .map(|o| o.node.name.node.as_str())
            .collect();
        let unions = sorted
            .unions
            .iter()
            .map(|definition| self.read_union(definition, &model_names))
            .collect::<Result<Vec<_>, _>>()?;
        let embedded_names: BTreeSet<&str> = sorted
            .embedded
            .iter()
            .map(|o| o.node.name.node.as_str())
            .collect();
        let interface_names: BTreeSet<&str> = sorted
            .interfaces
            .iter()
            .map(|i| i.node.name.node.as_str())
            .collect();
        let input_names: BTreeSet<&str> = sorted
            .inputs
            .iter()
            .map(|i| i.node.name.node.as_str())
            .collect();
        let interfaces = sorted
            .interfaces
            .iter()
            .map(|definition| {
                self.read_declared(definition, |element| {
                    model_names.contains(element)
                        || enums.iter().any(|e| e.name == element)
                        || embedded_names.contains(element)
                        || interface_names.contains(element)
                        || unions.iter().any(|u| u.name == element)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let inputs = sorted
            .inputs
            .iter()
            .map(|definition| {
                self.read_declared(definition, |element| {
                    input_names.contains(element) || enums.iter().any(|e| e.name == element)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let names = Names {
            models: &model_names,
            unions: &unions,
            enums: &enums,
            objects: &embedded_names,
            interfaces: &interfaces,
            inputs: &inputs,
        };
        let read = self.read_types(&sorted, &names)?;
        let mut model = Model {
            types: read.types,
            unions,
            enums,
            edges: read.edges,
            objects: read.objects,
            interfaces,
            inputs,
            subscriptions: read.subscriptions,
            indexes: Vec::new(),
            resolved: self.resolved.clone(),
            own_fields: read.own_fields,
            warnings: self.warnings.take(),
            slot_pins: BTreeMap::new(),
            dialect: self.dialect.clone(),
        };
        self.settle_relation_keys(&mut model, &read.relations)?;
        self.check_relations(&mut model, &read.relations)?;
        self.refuse_ruled_relation_keys(&model, &sorted.declared)?;
        self.apply_conflict_detection(&mut model.types)?;
        Ok(model)
    }

    /// Gives each type the conflict handler the dialect's choice names for it: in Amplify's
    /// shape only (DataStore's API is Amplify's), for types the schema has.
    fn apply_conflict_detection(&self, types: &mut [TypeDef]) -> Result<(), ModelError> {
        let config = &self.dialect.conflict;
        let at = Pos { line: 1, column: 1 };
        if !config.any() {
            return Ok(());
        }
        if !self.dialect.amplify_shape() {
            return Err(self.error(
                at,
                "conflict detection (DataStore) is served in Amplify's API shape: add \
                 --api-shape amplify",
            ));
        }
        if let Some(unknown) = config
            .models
            .keys()
            .find(|name| !types.iter().any(|t| &t.name == *name))
        {
            return Err(self.error(
                at,
                format!("transform.conf.json's ResolverConfig names model {unknown}, which the schema does not declare"),
            ));
        }
        for type_def in types {
            type_def.conflict = config.for_model(&type_def.name);
        }
        Ok(())
    }

    /// Reads what uses the declared names: embedded types, the schema's own root fields, edge
    /// types and `@model` types (with Amplify's global rule), and subscriptions.
    fn read_types(
        &self,
        sorted: &sorted::Sorted<'_>,
        names: &Names<'_>,
    ) -> Result<TypesRead, ModelError> {
        let objects = sorted
            .embedded
            .iter()
            .map(|definition| self.read_embedded(definition, names))
            .collect::<Result<Vec<_>, _>>()?;
        let mut own_fields = Vec::new();
        for (root, definition) in &sorted.own_roots {
            own_fields.extend(self.read_own_fields(*root, definition, names)?);
        }
        self.refuse_generated_name_clashes(
            &sorted.objects,
            names.unions,
            &sorted.edge_definitions,
            &sorted.declared,
            names.inputs,
        )?;
        let edges = sorted
            .edge_definitions
            .iter()
            .map(|definition| self.read_edge(definition, names))
            .collect::<Result<Vec<_>, _>>()?;
        let mut types = Vec::new();
        let mut relations = Vec::new();
        for definition in &sorted.objects {
            types.push(self.read_object(definition, names, &mut relations)?);
        }
        if let Some(definition) = sorted.amplify {
            self.apply_global_auth_rule(definition, &mut types)?;
        }
        self.a_schema_declares_something_to_serve(&types, &own_fields)?;
        let subscriptions = match sorted.subscription {
            Some(definition) => {
                let known = subscriptions::Known {
                    types: &types,
                    objects: &objects,
                    own_fields: &own_fields,
                };
                self.read_subscriptions(definition, &known)?
            }
            None => Vec::new(),
        };
        Ok(TypesRead {
            types,
            edges,
            objects,
            own_fields,
            subscriptions,
            relations,
        })
    }

    /// A schema declares a `@model` type or a root field of its own: else the API is empty.
    fn a_schema_declares_something_to_serve(
        &self,
        types: &[super::TypeDef],
        own_fields: &[super::OwnField],
    ) -> Result<(), ModelError> {
        if types.is_empty() && own_fields.is_empty() {
            return Err(self.error(
                Pos { line: 1, column: 1 },
                "the schema declares no @model type, and no field of its own on type Query or \
                 type Mutation",
            ));
        }
        Ok(())
    }

    fn refuse_generated_name_clashes(
        &self,
        objects: &[&Positioned<TypeDefinition>],
        unions: &[UnionDef],
        edges: &[&Positioned<TypeDefinition>],
        declared: &HashMap<&str, Pos>,
        inputs: &[DeclaredType],
    ) -> Result<(), ModelError> {
        let models = objects.iter().map(|o| o.node.name.node.to_string());
        // In Amplify's language a schema may declare a model's create or update input itself:
        // the transformer keeps the schema's, and so does tablegraph.
        let own_input = |generated: &str, name: &str| {
            self.amplify_language()
                && [format!("Create{name}Input"), format!("Update{name}Input")]
                    .iter()
                    .any(|own| own == generated)
                && inputs.iter().any(|input| input.name == generated)
        };
        let edge_names = edges.iter().map(|e| e.node.name.node.to_string());
        // Each generated name, with the type it is generated for.
        let mut owners: HashMap<String, String> = HashMap::new();
        for name in models
            .clone()
            .chain(unions.iter().map(|u| u.name.clone()))
            .chain(edge_names.clone())
        {
            let mut generated = vec![format!("{name}Connection"), format!("{name}Edge")];
            if models.clone().any(|m| m == name) {
                generated.push(format!("Create{name}Input"));
                generated.push(format!("Update{name}Input"));
            }
            if edge_names.clone().any(|e| e == name) {
                generated.push(format!("{name}InverseConnection"));
                generated.push(format!("{name}InverseEdge"));
                generated.push(format!("Add{name}Input"));
            }
            for generated in generated {
                if let Some(pos) = declared.get(generated.as_str())
                    && !own_input(&generated, &name)
                {
                    return Err(self.error(
                        *pos,
                        format!("type {generated} is generated for {name}; choose another name"),
                    ));
                }
                if let Some(other) = owners.insert(generated.clone(), name.clone()) {
                    return Err(self.error(
                        declared_at(declared, &name),
                        format!(
                            "type {generated} would be generated for both {other} and {name}; rename one of them"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The named type inside `field`'s type, and whether the field is a list of it; a list of
    /// lists is refused.
    fn element_of(
        &self,
        owner: &str,
        field: &Positioned<FieldDefinition>,
    ) -> Result<(String, bool), ModelError> {
        match &field.node.ty.node.base {
            BaseType::Named(element) => Ok((element.to_string(), false)),
            BaseType::List(inner) => match &inner.base {
                BaseType::Named(element) => Ok((element.to_string(), true)),
                BaseType::List(_) => Err(self.error(
                    field.node.ty.pos,
                    format!(
                        "{owner}.{}: lists of lists are not supported",
                        field.node.name.node
                    ),
                )),
            },
        }
    }

    fn read_enum(&self, definition: &Positioned<TypeDefinition>) -> Result<EnumDef, ModelError> {
        self.refuse_directives(&definition.node.directives)?;
        let TypeKind::Enum(kind) = &definition.node.kind else {
            unreachable!("read_enum is only called for enums");
        };
        let mut values = Vec::new();
        for value in &kind.values {
            let mut rank = None;
            for directive in &value.node.directives {
                if directive.node.name.node != "rank" {
                    return Err(self.unknown_directive(directive.pos, &directive.node.name.node));
                }
                self.expect_arguments(directive, &["value"])?;
                match directive.node.get_argument("value").map(|v| &v.node) {
                    Some(ConstValue::Number(n))
                        if n.as_i64().is_some_and(|n| (0..=MAX_RANK).contains(&n)) =>
                    {
                        rank = n.as_u64().and_then(|n| u16::try_from(n).ok());
                    }
                    _ => {
                        return Err(self.error(
                            directive.pos,
                            format!("@rank(value:) takes a whole number from 0 to {MAX_RANK}"),
                        ));
                    }
                }
            }
            values.push((
                value.pos,
                EnumValueDef {
                    name: value.node.value.node.to_string(),
                    rank,
                },
            ));
        }
        let ranked = values.iter().filter(|(_, v)| v.rank.is_some()).count();
        if ranked > 0 && ranked < values.len() {
            let (pos, unranked) = values
                .iter()
                .find(|(_, v)| v.rank.is_none())
                .expect("some value is unranked");
            return Err(self.error(
                *pos,
                format!(
                    "{} needs @rank: rank every value of an enum or none",
                    unranked.name
                ),
            ));
        }
        let values = values.into_iter().map(|(_, v)| v).collect();
        Ok(EnumDef {
            name: definition.node.name.node.to_string(),
            description: description(definition.node.description.as_ref()),
            values,
        })
    }

    fn read_union(
        &self,
        definition: &Positioned<TypeDefinition>,
        models: &BTreeSet<&str>,
    ) -> Result<UnionDef, ModelError> {
        self.refuse_directives(&definition.node.directives)?;
        let TypeKind::Union(kind) = &definition.node.kind else {
            unreachable!("read_union is only called for unions");
        };
        let name = definition.node.name.node.to_string();
        let mut members = Vec::new();
        for member in &kind.members {
            if !models.contains(member.node.as_str()) {
                return Err(self.error(
                    member.pos,
                    format!("union {name}: member {} is not a @model type", member.node),
                ));
            }
            members.push(member.node.to_string());
        }
        Ok(UnionDef {
            name,
            description: description(definition.node.description.as_ref()),
            members,
        })
    }

    /// `schema { query: Query mutation: Mutation subscription: Subscription }`, as AppSync
    /// schemas write it. The generated API's roots have these names, so other names are refused.
    fn check_schema_block(&self, schema: &Positioned<SchemaDefinition>) -> Result<(), ModelError> {
        self.refuse_directives(&schema.node.directives)?;
        for (operation, root, expected) in [
            ("query", &schema.node.query, "Query"),
            ("mutation", &schema.node.mutation, "Mutation"),
            ("subscription", &schema.node.subscription, "Subscription"),
        ] {
            if let Some(root) = root
                && root.node != expected
            {
                return Err(self.error(
                    root.pos,
                    format!(
                        "schema {{ {operation}: {} }}: the generated API's {operation} type is \
                         {expected}; name it {expected}",
                        root.node
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The type definitions with each `extend type` (or `extend enum`, `extend input`…) merged
    /// into the type it extends: its directives, interfaces and fields added to the type's.
    fn merged_extensions(
        &self,
        document: &ServiceDocument,
    ) -> Result<Vec<Positioned<TypeDefinition>>, ModelError> {
        let mut merged: Vec<Positioned<TypeDefinition>> = Vec::new();
        let mut extensions = Vec::new();
        for definition in &document.definitions {
            if let TypeSystemDefinition::Type(definition) = definition {
                if definition.node.extend {
                    extensions.push(definition);
                } else {
                    merged.push(definition.clone());
                }
            }
        }
        for extension in extensions {
            let name = extension.node.name.node.as_str();
            let Some(base) = merged.iter_mut().find(|t| t.node.name.node == name) else {
                return Err(self.error(
                    extension.pos,
                    format!("extend {name}: no type {name} is declared to extend"),
                ));
            };
            base.node
                .directives
                .extend(extension.node.directives.iter().cloned());
            match (&mut base.node.kind, &extension.node.kind) {
                (TypeKind::Object(base), TypeKind::Object(more)) => {
                    base.implements.extend(more.implements.iter().cloned());
                    base.fields.extend(more.fields.iter().cloned());
                }
                (TypeKind::Interface(base), TypeKind::Interface(more)) => {
                    base.implements.extend(more.implements.iter().cloned());
                    base.fields.extend(more.fields.iter().cloned());
                }
                (TypeKind::InputObject(base), TypeKind::InputObject(more)) => {
                    base.fields.extend(more.fields.iter().cloned());
                }
                (TypeKind::Enum(base), TypeKind::Enum(more)) => {
                    base.values.extend(more.values.iter().cloned());
                }
                (TypeKind::Union(base), TypeKind::Union(more)) => {
                    base.members.extend(more.members.iter().cloned());
                }
                (TypeKind::Scalar, TypeKind::Scalar) => {}
                _ => {
                    return Err(self.error(
                        extension.pos,
                        format!("extend {name}: {name} is declared as another kind of type"),
                    ));
                }
            }
        }
        Ok(merged)
    }
}

/// Why `value` is no default of a field holding `scalar`, if it is not. The AppSync scalars'
/// formats are checked where clients' values are (`graphql::values`), when the API is built.
fn default_fits(value: &str, scalar: &ScalarType, enums: &[EnumDef]) -> Result<(), String> {
    let fits = match scalar {
        ScalarType::Int | ScalarType::AwsTimestamp => value.parse::<i64>().is_ok(),
        ScalarType::Float => value.parse::<f64>().is_ok_and(f64::is_finite),
        ScalarType::Boolean => matches!(value, "true" | "false"),
        ScalarType::Enum(name) => enums
            .iter()
            .find(|e| e.name == *name)
            .is_some_and(|e| e.values.iter().any(|v| v.name == value)),
        _ => true,
    };
    if fits {
        Ok(())
    } else {
        let name = match scalar {
            ScalarType::Enum(name) => name.as_str(),
            ScalarType::Int => "Int",
            ScalarType::AwsTimestamp => "AWSTimestamp",
            ScalarType::Float => "Float",
            _ => "Boolean",
        };
        Err(format!("is no {name} value"))
    }
}

/// What a type name in a field declaration refers to.
struct Names<'a> {
    models: &'a BTreeSet<&'a str>,
    unions: &'a [UnionDef],
    enums: &'a [EnumDef],
    /// Object types without `@model`.
    objects: &'a BTreeSet<&'a str>,
    /// Declared interfaces.
    interfaces: &'a [DeclaredType],
    /// Declared input types: what arguments of the schema's own fields may take.
    inputs: &'a [DeclaredType],
}

impl Names<'_> {
    fn scalar(&self, name: &str) -> Option<ScalarType> {
        let builtin = match name {
            "ID" => Some(ScalarType::Id),
            "String" => Some(ScalarType::String),
            "Int" => Some(ScalarType::Int),
            "Float" => Some(ScalarType::Float),
            "Boolean" => Some(ScalarType::Boolean),
            _ => AWS_SCALARS
                .iter()
                .find(|(aws, _)| *aws == name)
                .map(|(_, scalar)| scalar.clone()),
        };
        builtin.or_else(|| {
            self.enums
                .iter()
                .any(|e| e.name == name)
                .then(|| ScalarType::Enum(name.to_owned()))
        })
    }

    fn is_node_type(&self, name: &str) -> bool {
        self.models.contains(name) || self.unions.iter().any(|u| u.name == name)
    }
}

/// Where type `name` is declared (the file's start for a name never declared).
fn declared_at(declared: &HashMap<&str, Pos>, name: &str) -> Pos {
    declared
        .get(name)
        .copied()
        .unwrap_or(Pos { line: 1, column: 1 })
}

fn description(description: Option<&Positioned<String>>) -> Option<String> {
    description.map(|d| d.node.clone())
}

fn managed_field_type(name: &str) -> Option<&'static str> {
    let index = MANAGED_FIELDS.iter().position(|managed| *managed == name)?;
    Some(["ID!", "AWSDateTime!", "AWSDateTime!", "Int!"][index])
}

/// `PK`, `SK`, `PKnn`, `SKnn` and `edges` are item attributes the table itself uses.
fn is_reserved_attribute(name: &str) -> bool {
    let is_slot = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    };
    matches!(name, "PK" | "SK" | "edges") || is_slot("PK") || is_slot("SK")
}

/// `"GSI01"` → 1.
fn parse_slot(index: &str) -> Option<u8> {
    let digits = index.strip_prefix("GSI")?;
    if digits.len() != 2 {
        return None;
    }
    let slot: u8 = digits.parse().ok()?;
    (1..=MAX_SLOT).contains(&slot).then_some(slot)
}

/// The default schema, with its one resolver file.
#[cfg(test)]
fn farms() -> Model {
    let resolved = ["Team.goalLeads".to_owned()].into();
    Model::parse_with_resolvers(
        "schema.graphql",
        include_str!("../../../schema.graphql"),
        &resolved,
    )
    .expect("the default schema is valid")
}

/// The error a schema that should be refused is refused with.
#[cfg(test)]
fn error_of(source: &str) -> String {
    Model::parse("schema.graphql", source)
        .expect_err("the schema should be refused")
        .to_string()
}

/// Asserts that `source` is refused with a message that holds `message`.
#[cfg(test)]
fn assert_refused(source: &str, message: &str) {
    let error = error_of(source);
    assert!(error.contains(message), "got: {error}\nwant: {message}");
}

/// Asserts that each schema of `cases` is refused with a message that holds its text.
#[cfg(test)]
fn assert_all_refused(cases: &[(&str, &str)]) {
    for (source, message) in cases {
        assert_refused(source, message);
    }
}

#[cfg(test)]
mod tests {
    //! The schema as a whole: names that clash with generated ones, and AppSync's shapes.

    use super::{assert_refused, error_of};
    use crate::model::*;

    #[test]
    fn names_that_belong_to_graphql_or_to_generated_types_are_refused() {
        let table = [
            (
                "type Farm @model { name: String }\ntype String @model { x: Int }",
                "schema.graphql:2:1: type String: the name belongs to GraphQL",
            ),
            (
                "type Farm @model { name: String }\nenum __Schema { A }",
                "schema.graphql:2:1: type __Schema: the name belongs to GraphQL",
            ),
            (
                "type Farm @model { name: String }\nenum AWSDateTime { A }",
                "schema.graphql:2:1: type AWSDateTime: the name belongs to the AppSync scalar AWSDateTime",
            ),
            (
                "type Goal @model { title: String }\ntype User @model {\n  fans: [Goal] @incoming(edge: \"Likes\")\n  likers: [LikesInverse] @hasMany(index: \"GSI02\", field: \"userId\")\n}\ntype LikesInverse @model { userId: ID }\ntype Likes @edge(from: \"Goal\", to: \"User\") { at: String }",
                "type LikesInverseConnection would be generated for both",
            ),
        ];
        for (source, expected) in table {
            let error = error_of(source);
            assert!(error.contains(expected), "{error} for {source}");
        }
    }

    #[test]
    fn appsync_schema_shapes_are_read() {
        let model = Model::parse(
            "schema.graphql",
            r#"
            schema { query: Query mutation: Mutation subscription: Subscription }
            "Something with a name."
            interface Named { name: String! }
            input PostInput { title: String! tags: [String!] }
            type Post implements Named @model { name: String! }
            extend type Post @aws_api_key { body: String }
            type Subscription {
                "Posts as they are written."
                onPostWritten(name: String): Post
                    @aws_subscribe(mutations: ["createPost", "updatePost"])
            }
            "#,
        )
        .expect("valid");
        let post = model.type_def("Post").expect("declared");
        assert_eq!(post.implements, ["Named"]);
        assert!(
            post.field("body").is_some(),
            "the extension's field is added"
        );
        assert_eq!(post.auth.len(), 1, "the extension's directive is added");
        assert_eq!(model.interfaces[0].name, "Named");
        assert_eq!(
            model.interfaces[0].description.as_deref(),
            Some("Something with a name.")
        );
        let tags = &model.inputs[0].fields[1];
        assert_eq!(
            (tags.name.as_str(), tags.ty.as_str()),
            ("tags", "[String!]")
        );
        assert_eq!(
            model.subscriptions,
            [SubscriptionDef {
                name: "onPostWritten".into(),
                description: Some("Posts as they are written.".into()),
                type_name: "Post".into(),
                operations: vec![Operation::Create, Operation::Update],
                answers_of: Vec::new(),
                arguments: vec![("name".into(), ScalarType::String)],
                required: Vec::new(),
                auth: Vec::new(),
            }]
        );
    }

    #[test]
    fn appsync_schema_mistakes_name_their_line_and_column() {
        let table = [
            (
                "schema { query: Root }\ntype A @model { x: Int }",
                "schema.graphql:1:17: schema { query: Root }: the generated API's query type is Query; name it Query",
            ),
            (
                "type A implements Named @model { x: Int }",
                "schema.graphql:1:19: type A implements Named, which is not a declared interface",
            ),
            (
                "interface Named { name: String! }\ntype A implements Named @model { name: String }",
                "schema.graphql:2:19: type A implements Named, so it needs the field `name: String!`, not `name: String`",
            ),
            (
                "interface Stamped { createdAt: AWSDateTime! }\ntype A implements Stamped @model { x: Int }",
                "",
            ),
            (
                "input I { x: Unknown }\ntype A @model { x: Int }",
                "schema.graphql:1:14: I.x: unknown type Unknown",
            ),
            (
                "type A @model { x: Int }\nextend enum A { B }",
                "schema.graphql:2:1: extend A: A is declared as another kind of type",
            ),
            (
                "type A @model { x: Int }\ntype Subscription { onA: A }",
                "schema.graphql:2:21: Subscription.onA: a declared subscription needs @aws_subscribe(mutations: [...])",
            ),
            (
                "type A @model { x: Int }\ntype Subscription { onA: A @aws_subscribe(mutations: [\"createB\"]) }",
                "schema.graphql:2:28: Subscription.onA: @aws_subscribe names createB, which is not a mutation returning A",
            ),
            (
                "type A @model { x: Int }\ntype Subscription { onA(y: Int): A @aws_subscribe(mutations: [\"createA\"]) }",
                "schema.graphql:2:25: Subscription.onA: argument y must be named after a scalar field of A",
            ),
            (
                "type A @model { x: Int }\ntype Subscription { onA(x: String): A @aws_subscribe(mutations: [\"createA\"]) }",
                "schema.graphql:2:28: Subscription.onA: argument x has the type of A.x, Int, not String",
            ),
            (
                "type A @model { x: Int }\ntype Subscription { onCreateA: A @aws_subscribe(mutations: [\"createA\"]) }",
                "schema.graphql:2:21: Subscription.onCreateA is generated; choose another name",
            ),
            (
                "type A @model { x: Int }\ntype Query { a: A @aws_iam(x: 1) }",
                "schema.graphql:2:28: @aws_iam has no argument x",
            ),
            (
                "type A @model { x: Int }\ntype Query { a: Int }\nextend type Query { a: Int }",
                "schema.graphql:3:21: Query.a is declared twice (first at line 2)",
            ),
            (
                "type A @model { x: Int }\ntype Query { a: Node }",
                "schema.graphql:2:17: Query.a: returns Node, which is not a scalar, an enum or an object type of the schema",
            ),
            (
                "type A @model { x: Int }\ntype Mutation { a(x: A): Int }",
                "schema.graphql:2:19: Mutation.a: argument x must be a scalar, an enum or an input type of the schema, not A",
            ),
            (
                "type A @model { x: Int }\ntype Query { a: Int @function }",
                "schema.graphql:2:21: Query.a: @function(name:) names a function",
            ),
            (
                "type A @model @auth(rules: [{ allow: private }]) { secret: String @auth(rules: [{ allow: owner }]) }",
                "schema.graphql:1:67: A.secret: @auth on a field may name the owner or groups field \"owner\" only when the rules of A name it too",
            ),
            (
                "type A @model { code: String @unique @aws_api_key }",
                "schema.graphql:1:38: A.code: @auth on a field cannot protect a key",
            ),
            (
                "type A @model { farmId: ID @aws_api_key farm: F @belongsTo(field: \"farmId\") }\ntype F @model { x: Int }",
                "schema.graphql:1:1: A.farmId: @auth on a field cannot protect a relation's key",
            ),
            (
                "type Post @model { title: String }\ntype Backstage { notes: String }\ntype E @model { backstage: Backstage @aws_api_key }",
                "",
            ),
        ];
        for (source, expected) in table {
            match Model::parse("schema.graphql", source) {
                Ok(_) if expected.is_empty() => {}
                Ok(_) => panic!("{source}\nwas accepted; want: {expected}"),
                Err(error) => {
                    let message = error.to_string();
                    assert!(
                        !expected.is_empty() && message.starts_with(expected),
                        "{source}\n got: {message}\nwant: {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_schema_with_nothing_to_serve_is_refused() {
        assert_refused(
            "enum Kind { A }",
            "the schema declares no @model type, and no field of its own on type Query or type Mutation",
        );
    }
}
