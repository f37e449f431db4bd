//! `schema.graphql` → [`Model`]: the validated description of what is stored and how.
//!
//! Invariant: a `Model` that exists is consistent. Every relation names existing types and
//! fields, no two relations of one type share a slot, and every key value the model derives is
//! an id or an encoded sort value. The rest of the server trusts it and never re-checks.
//! This module is pure: no I/O beyond the text it is given.

mod auth_rules;
mod error;
mod parse;

pub use auth_rules::{Allow, AuthRule, Operation, Provider};
pub use error::ModelError;

/// The stored types of one schema and how they relate.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// `@model` object types, in the order the schema declares them.
    pub types: Vec<TypeDef>,
    pub unions: Vec<UnionDef>,
    pub enums: Vec<EnumDef>,
    /// `@edge` types: typed, directed relations between nodes, with metadata.
    pub edges: Vec<EdgeTypeDef>,
    /// Object types without `@model`: values stored inside the nodes that hold them.
    pub objects: Vec<ObjectDef>,
    /// Interfaces the `@model` types implement (besides the generated `Node`).
    pub interfaces: Vec<DeclaredType>,
    /// Input types the schema declares: read and checked, so AppSync schemas load, but every
    /// argument of the API is generated, so none takes them.
    pub inputs: Vec<DeclaredType>,
    /// The fields of a declared `Subscription` type: AppSync's `@aws_subscribe(mutations:)`,
    /// beside the generated `onCreate<Type>`….
    pub subscriptions: Vec<SubscriptionDef>,
    /// The generic indexes (`GSI01`…) the table needs: every slot some relation uses, ascending.
    pub indexes: Vec<u8>,
    /// `Type.field` of every field a resolver file serves (custom, or replacing a directive's).
    pub resolved: std::collections::BTreeSet<String>,
}

/// An object type without `@model` (AppSync's non-model types): a value of it is stored as a
/// map inside the node that holds it, never as an item of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectDef {
    pub name: String,
    pub description: Option<String>,
    /// Scalars, lists of them, and other non-model objects.
    pub fields: Vec<FieldDef>,
}

/// An interface or an input type as declared: each field's name, declared type (`[String!]`)
/// and description.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredType {
    pub name: String,
    pub description: Option<String>,
    pub fields: Vec<DeclaredField>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredField {
    pub name: String,
    pub ty: String,
    pub description: Option<String>,
}

/// A field of a declared `Subscription` type with `@aws_subscribe(mutations: [...])`: the
/// nodes of `type_name` that the named generated mutations write, as they write them.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionDef {
    pub name: String,
    pub description: Option<String>,
    pub type_name: String,
    /// What the mutations do: create, update or delete.
    pub operations: Vec<Operation>,
    /// Arguments, each a scalar field of the type that must equal the event's value.
    pub arguments: Vec<(String, ScalarType)>,
}

/// A `@model` type, stored as `NODE#<id>` items.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    pub name: String,
    pub description: Option<String>,
    /// The fields the schema declares, without the managed ones (`id`, `createdAt`, …).
    pub fields: Vec<FieldDef>,
    /// The relation slots nodes of this type write, derived from every `@hasMany` whose element
    /// is this type or a union containing it.
    pub slots: Vec<SlotDef>,
    /// The type index `list<Types>` reads; `None` with `@model(list: false)`.
    pub list: Option<ListDef>,
    /// The field `list<Types>` sorts by, with its type (`@model(listSortBy:)`); by id, which is
    /// creation order, without.
    pub list_sort: Option<(String, ScalarType)>,
    /// The secondary indexes of its fields (`@index`), in the order the fields declare them.
    pub indexes: Vec<IndexDef>,
    /// `@auth(rules:)`: who may create, read, update and delete its nodes. None means any
    /// caller the server let in.
    pub auth: Vec<AuthRule>,
    /// The declared interfaces it implements (`Node` is implemented always).
    pub implements: Vec<String>,
}

/// A secondary index of a non-unique field, Amplify's `@index(name:, sortKeyFields:,
/// queryField:)`: each node whose `field` is not null stores `PKnn = <Type>#<name>#<value>` and
/// `SKnn = <sort value of sort_field>#<id>` in slot `slot`, a slot its nodes use for nothing
/// else; the root query `query_field` reads one value's partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub name: String,
    pub field: String,
    pub scalar: ScalarType,
    /// The field its entries sort by (its one sort key field), with its type; by id without.
    pub sort_field: Option<(String, ScalarType)>,
    pub query_field: String,
    pub slot: u8,
}

/// A type's index of all its nodes: each node stores `PKnn = <Type>#LIST#<shard>` (its shard
/// from its id) and `SKnn = <id>` in slot `slot`, the lowest slot its nodes use for nothing
/// else, so that creating a type's nodes is spread over `shards` partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListDef {
    pub slot: u8,
    pub shards: u8,
}

/// Type-index partitions per type unless `@model(listShards:)` says otherwise: a page of a list
/// costs one Query per shard, and each shard takes DynamoDB's writes per partition.
pub const DEFAULT_LIST_SHARDS: u8 = 4;
/// The most shards `@model(listShards:)` may ask for.
pub const MAX_LIST_SHARDS: u8 = 32;

#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    pub name: String,
    pub description: Option<String>,
    pub kind: FieldKind,
    /// `@auth(rules:)` on the field: they replace the type's rules for reading and writing it.
    pub auth: Vec<AuthRule>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// A stored value.
    Scalar {
        scalar: ScalarType,
        required: bool,
        /// `@unique`: reserved by a unique-value item, and looked up by `<type>By<Field>`.
        unique: bool,
        /// `@default(value:)`: the value a create stores when the field is absent, as written
        /// in the schema (checked against the field's type).
        default: Option<String>,
    },
    /// A stored list of scalars or enum values (`[String]`, `[Role!]!`), kept as a DynamoDB
    /// list in the order given. It is never a key: no `@unique`, `@index` or sort.
    ScalarList {
        scalar: ScalarType,
        /// The list itself may not be null.
        required: bool,
        /// Its elements may not be null.
        elements_required: bool,
    },
    /// A value of a non-model object type (`address: Address`), or a list of them
    /// (`stops: [Stop!]`, `list` telling whether elements are required), stored as a map or a
    /// list of maps.
    Embedded {
        object: String,
        required: bool,
        list: Option<bool>,
    },
    /// `@belongsTo(field:)`: the node whose id is stored in `foreign_key`.
    BelongsTo {
        target: String,
        foreign_key: String,
        required: bool,
    },
    /// `@hasMany(index:, field:, sortBy:)`: a connection over a relation slot.
    HasMany(HasMany),
    /// `@outgoing(edge:)`: the node's edges of a type, read from its own partition; `element` is
    /// the edge's `to` type.
    Outgoing { edge: String, element: String },
    /// `@incoming(edge:)`: edges of a type pointing at the node, read from their inverse slot;
    /// `element` is the edge's `from` type.
    Incoming { edge: String, element: String },
    /// `@targets(edge:, role:)`: the targets of the node's edges of a type, read from its edge
    /// set; `element` is the field's list element type.
    Targets {
        edge: String,
        element: String,
        role: Option<String>,
    },
    /// A field whose value a file of `resolvers/` computes: one without a relation directive
    /// that has a resolver file. It is never stored, even when it is a plain scalar.
    Custom(CustomField),
}

/// A field served by a custom resolver: its declared type and arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomField {
    /// The type as declared, like `[User!]!`.
    pub ty: String,
    /// The named type inside it, like `User`.
    pub element: String,
    pub list: bool,
    pub arguments: Vec<CustomArgument>,
    /// Where the field is declared, for start-up errors.
    pub line: usize,
    pub column: usize,
}

/// An argument of a custom field.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomArgument {
    pub name: String,
    /// The type as declared, like `ID!`.
    pub ty: String,
    /// The named type inside it.
    pub element: String,
}

/// An `@edge` type. An edge from A to B is the item `PK = NODE#A`, `SK = <name>#B`, with its
/// metadata fields and an inverse slot `PKnn = <name>#B`, `SKnn = <sort value>#A`; unless the
/// type opts out, A's edge set holds `<name>#B#<sort value>`.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeTypeDef {
    pub name: String,
    pub description: Option<String>,
    /// The `@model` type edges start from.
    pub from: String,
    /// The `@model` type or union edges point to.
    pub to: String,
    /// Metadata fields (scalars).
    pub fields: Vec<FieldDef>,
    /// The metadata field the inverse slot sorts by; `None` sorts by the source's id.
    pub sort_by: Option<String>,
    /// Whether the source node keeps these edges in its edge set.
    pub edge_set: bool,
    /// The slot of the inverse lookup.
    pub slot: u8,
}

/// A one-to-many relation: each element stores `PKnn = <element>#<parent id>` and
/// `SKnn = <sort value>#<id>`.
#[derive(Debug, Clone, PartialEq)]
pub struct HasMany {
    pub slot: u8,
    /// The element type or union; its name prefixes the slot partition value.
    pub element: String,
    /// The field of each element type that holds the parent's id.
    pub foreign_key: String,
    /// The element field the connection is sorted by; `None` sorts by id (creation order).
    pub sort_by: Option<String>,
}

/// One slot a type's nodes write, because of one `@hasMany` relation.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotDef {
    pub slot: u8,
    pub element: String,
    pub foreign_key: String,
    pub sort_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScalarType {
    Id,
    String,
    Int,
    Float,
    Boolean,
    /// AppSync's `AWSDate`: `YYYY-MM-DD`.
    AwsDate,
    /// AppSync's `AWSDateTime`: an RFC 3339 timestamp.
    AwsDateTime,
    /// AppSync's `AWSEmail`.
    AwsEmail,
    /// AppSync's `AWSTime`: `hh:mm[:ss[.sss]]`, with an optional offset.
    AwsTime,
    /// AppSync's `AWSTimestamp`: seconds since the epoch, stored as a number.
    AwsTimestamp,
    /// AppSync's `AWSJSON`: a JSON document, given and stored as its text.
    AwsJson,
    /// AppSync's `AWSURL`.
    AwsUrl,
    /// AppSync's `AWSPhone`: digits, with an optional `+` and spaces or hyphens between groups.
    AwsPhone,
    /// AppSync's `AWSIPAddress`: IPv4 or IPv6, with an optional prefix length.
    AwsIpAddress,
    Enum(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct UnionDef {
    pub name: String,
    pub description: Option<String>,
    pub members: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnumDef {
    pub name: String,
    pub description: Option<String>,
    pub values: Vec<EnumValueDef>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnumValueDef {
    pub name: String,
    /// `@rank(value:)`: sorts by this number (Koan's `500-LEAD`); all values of an enum are
    /// ranked or none is.
    pub rank: Option<u16>,
}

/// Field names every `@model` type gets without declaring them.
pub const MANAGED_FIELDS: [&str; 4] = ["id", "createdAt", "updatedAt", "version"];

impl Model {
    /// Parses and validates `source`; errors name `file` with the line and column.
    pub fn parse(file: &str, source: &str) -> Result<Model, ModelError> {
        parse::parse_model(file, source, &std::collections::BTreeSet::new())
    }

    /// Like [`Model::parse`], for a schema whose fields `resolved` (`Type.field`) are served by
    /// resolver files: such a field is computed, never stored, even when it is a plain scalar.
    pub fn parse_with_resolvers(
        file: &str,
        source: &str,
        resolved: &std::collections::BTreeSet<String>,
    ) -> Result<Model, ModelError> {
        parse::parse_model(file, source, resolved)
    }

    /// Whether a resolver file serves `type_name.field` rather than its directive.
    pub fn is_resolved(&self, type_name: &str, field: &str) -> bool {
        // Without building the `Type.field` string: prefetch asks this for each relation it
        // plans, about a hundred times on a page of goals.
        self.resolved
            .iter()
            .any(|name| name.split_once('.') == Some((type_name, field)))
    }

    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.name == name)
    }

    pub fn union_def(&self, name: &str) -> Option<&UnionDef> {
        self.unions.iter().find(|u| u.name == name)
    }

    pub fn edge_def(&self, name: &str) -> Option<&EdgeTypeDef> {
        self.edges.iter().find(|e| e.name == name)
    }

    pub fn enum_def(&self, name: &str) -> Option<&EnumDef> {
        self.enums.iter().find(|e| e.name == name)
    }

    /// The rank of an enum value, if its enum is ranked.
    pub fn rank_of(&self, enum_name: &str, value: &str) -> Option<u16> {
        self.enum_def(enum_name)?
            .values
            .iter()
            .find(|v| v.name == value)?
            .rank
    }

    /// The non-model object type `name`.
    pub fn object_def(&self, name: &str) -> Option<&ObjectDef> {
        self.objects.iter().find(|o| o.name == name)
    }

    /// The `@model` types a field of type `name` may return: the type itself, or a union's
    /// members. Every read checks `__typename` against this list.
    pub fn possible_types<'a>(&'a self, name: &'a str) -> Vec<&'a str> {
        match self.union_def(name) {
            Some(union) => union.members.iter().map(String::as_str).collect(),
            None => vec![name],
        }
    }
}

impl TypeDef {
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The fields whose values are reserved by unique-value items.
    pub fn unique_fields(&self) -> impl Iterator<Item = &FieldDef> {
        self.fields
            .iter()
            .filter(|f| matches!(f.kind, FieldKind::Scalar { unique: true, .. }))
    }

    /// The fields with a `@default`: each field's name, type and default as written.
    pub fn defaults(&self) -> impl Iterator<Item = (&str, &ScalarType, &str)> {
        self.fields.iter().filter_map(|field| match &field.kind {
            FieldKind::Scalar {
                scalar,
                default: Some(default),
                ..
            } => Some((field.name.as_str(), scalar, default.as_str())),
            _ => None,
        })
    }
}

impl EdgeTypeDef {
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The type of the field the inverse slot sorts by.
    pub fn sort_scalar(&self) -> Option<&ScalarType> {
        self.field(self.sort_by.as_deref()?)?.scalar()
    }
}

impl EnumDef {
    pub fn is_ranked(&self) -> bool {
        self.values.iter().any(|v| v.rank.is_some())
    }
}

impl ScalarType {
    /// Its name in GraphQL: `ID`, `AWSDateTime`, or the enum's.
    pub fn name(&self) -> &str {
        match self {
            ScalarType::Id => "ID",
            ScalarType::String => "String",
            ScalarType::Int => "Int",
            ScalarType::Float => "Float",
            ScalarType::Boolean => "Boolean",
            ScalarType::AwsDate => "AWSDate",
            ScalarType::AwsDateTime => "AWSDateTime",
            ScalarType::AwsEmail => "AWSEmail",
            ScalarType::AwsTime => "AWSTime",
            ScalarType::AwsTimestamp => "AWSTimestamp",
            ScalarType::AwsJson => "AWSJSON",
            ScalarType::AwsUrl => "AWSURL",
            ScalarType::AwsPhone => "AWSPhone",
            ScalarType::AwsIpAddress => "AWSIPAddress",
            ScalarType::Enum(name) => name,
        }
    }
}

impl FieldDef {
    /// Whether the field is stored on its node (a scalar, or a list of them), and with it
    /// whether it may not be null.
    pub fn stored(&self) -> Option<bool> {
        match &self.kind {
            FieldKind::Scalar { required, .. }
            | FieldKind::ScalarList { required, .. }
            | FieldKind::Embedded { required, .. } => Some(*required),
            _ => None,
        }
    }

    /// The scalar type of a stored field, `None` for relations.
    pub fn scalar(&self) -> Option<&ScalarType> {
        match &self.kind {
            FieldKind::Scalar { scalar, .. } => Some(scalar),
            _ => None,
        }
    }
}

/// A type name's plural, for the batch mutations (`createFarms`, `createStories`,
/// `createBoxes`), as Amplify forms its list names: English rules, no irregular words.
///
/// ```
/// use tablegraph::model::plural;
/// assert_eq!(plural("Farm"), "Farms");
/// assert_eq!(plural("Story"), "Stories");
/// assert_eq!(plural("Key"), "Keys");
/// assert_eq!(plural("Box"), "Boxes");
/// assert_eq!(plural("Address"), "Addresses");
/// ```
pub fn plural(name: &str) -> String {
    let vowel_before_y = ["ay", "ey", "iy", "oy", "uy"]
        .iter()
        .any(|ending| name.ends_with(ending));
    if let Some(stem) = name.strip_suffix('y')
        && !vowel_before_y
    {
        format!("{stem}ies")
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|ending| name.ends_with(ending))
    {
        format!("{name}es")
    } else {
        format!("{name}s")
    }
}

/// `Farm` → `farm`, `KeyResult` → `keyResult`: a field name from a type name.
pub fn lower_first(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `name` → `Name`, `farmId` → `FarmId`: a part of a type name from a field name.
pub fn upper_first(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FARMS: &str = include_str!("../../schema.graphql");

    /// The default schema, with its one resolver file.
    fn farms() -> Model {
        let resolved = ["Team.goalLeads".to_owned()].into();
        Model::parse_with_resolvers("schema.graphql", FARMS, &resolved)
            .expect("the default schema is valid")
    }

    fn error_of(source: &str) -> String {
        Model::parse("schema.graphql", source)
            .expect_err("the schema should be refused")
            .to_string()
    }

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
                    i.sort_field.as_ref().map(|(f, _)| f.as_str()),
                    i.query_field.as_str(),
                )
            })
            .collect();
        assert_eq!(
            indexes,
            [
                ("byColor", "color", 2, Some("name"), "asByColor"),
                ("bySize", "size", 3, None, "listABySize"),
                (
                    "byDayAndCreatedAt",
                    "day",
                    4,
                    Some("createdAt"),
                    "listAByDayAndCreatedAt"
                ),
            ]
        );
        assert_eq!(model.indexes, vec![1, 2, 3, 4]);
        for (fields, said) in [
            (
                "a: String @index(sortKeyFields: [\"b\", \"c\"]) b: String c: String",
                "takes one sort key field, not 2",
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
    fn default_schema_derives_the_seed_layout() {
        let model = farms();
        // Slots 1 and 2 for relations; a cow uses both, so its type index takes slot 3, and
        // its index of breeds slot 4.
        assert_eq!(model.indexes, vec![1, 2, 3, 4]);
        let list_slot = |name: &str| model.type_def(name).and_then(|t| t.list).map(|l| l.slot);
        assert_eq!(list_slot("Farm"), Some(1));
        assert_eq!(list_slot("Cow"), Some(3));
        assert_eq!(list_slot("Goal"), Some(2));
        assert_eq!(
            model
                .type_def("Farm")
                .and_then(|t| t.list)
                .map(|l| l.shards),
            Some(DEFAULT_LIST_SHARDS)
        );
        let cow = model.type_def("Cow").expect("Cow is a model");
        let slots: Vec<(u8, &str)> = cow
            .slots
            .iter()
            .map(|s| (s.slot, s.element.as_str()))
            .collect();
        assert_eq!(slots, vec![(1, "Cow"), (2, "Animal")]);
        let farm = model.type_def("Farm").expect("Farm is a model");
        assert!(farm.slots.is_empty());
        assert_eq!(
            farm.unique_fields()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>(),
            vec!["name"]
        );
        assert_eq!(model.possible_types("Animal"), vec!["Chicken", "Cow"]);
    }

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
                arguments: vec![("name".into(), ScalarType::String)],
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
                "type A @model { x: Int }\ntype Query { a: A }",
                "schema.graphql:2:1: type Query: its fields are generated from the @model types",
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
    fn appsync_directives_are_rules_of_the_callers_they_name() {
        let model = Model::parse(
            "schema.graphql",
            r#"
            type Post @model @aws_api_key @aws_cognito_user_pools(cognito_groups: ["Editors"]) {
                title: String
                secret: String @aws_oidc
                notes: String @aws_auth
            }
            "#,
        )
        .expect("valid");
        let post = model.type_def("Post").expect("declared");
        let allows: Vec<&Allow> = post.auth.iter().map(|rule| &rule.allow).collect();
        assert_eq!(
            allows,
            [
                &Allow::Public,
                &Allow::Groups {
                    groups: vec!["Editors".into()],
                    group_claim: None
                }
            ]
        );
        assert_eq!(post.auth[0].provider, Provider::ApiKey);
        for field in ["secret", "notes"] {
            let rules = &post.field(field).expect("declared").auth;
            assert_eq!(rules.len(), 1, "{field}");
            assert_eq!(rules[0].allow, Allow::Private, "{field}");
        }
    }

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
                "schema.graphql:1:18: Farm.size: @auth reads it as an owner or a group, so it must be String or [String]",
            ),
            (
                "type Farm @model @aws_iam { a: Int }",
                "schema.graphql:1:18: @aws_iam needs an IAM verifier, and this server has none",
            ),
            (
                "type Farm @model { a: Int @aws_lambda }",
                "schema.graphql:1:27: @aws_lambda needs a Lambda authorizer",
            ),
            (
                "type Farm @model @aws_api_key(cognito_groups: [\"A\"]) { a: Int }",
                "schema.graphql:1:31: @aws_api_key has no argument cognito_groups",
            ),
            (
                "type Farm @model @auth(rules: [{ allow: private, provider: iam }]) { a: Int }",
                "schema.graphql:1:31: provider: iam needs an IAM verifier",
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
    fn edge_mistakes_name_their_line_and_column() {
        let base = "type Goal @model { title: String }\ntype User @model { name: String }\nunion Member = User\n";
        let table = [
            (
                "type M @edge(from: \"Nobody\", to: \"User\") { x: Int }",
                "schema.graphql:4:8: @edge(from: \"Nobody\"): Nobody is not a @model type",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\", sortBy: \"rank\") { x: Int }",
                "schema.graphql:4:8: @edge(sortBy: \"rank\") needs a metadata field rank on M",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\") { from: ID }",
                "schema.graphql:4:42: M.from: the name from is managed by @edge",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\", edgeSet: false) { x: Int }\nextend type Nobody { y: Int }",
                "schema.graphql:5:1: extend Nobody: no type Nobody is declared to extend",
            ),
            (
                "enum Role { A @rank(value: 5) B }",
                "schema.graphql:4:31: B needs @rank: rank every value of an enum or none",
            ),
            (
                "enum Role { A @rank(value: 1000) }",
                "schema.graphql:4:15: @rank(value:) takes a whole number from 0 to 999",
            ),
        ];
        for (addition, expected) in table {
            let message = error_of(&format!("{base}{addition}"));
            assert!(
                message.starts_with(expected),
                "{addition}\n got: {message}\nwant: {expected}"
            );
        }
    }

    #[test]
    fn edge_fields_must_match_their_edge() {
        let schema = |field: &str| {
            format!(
                "type Goal @model {{ title: String\n  {field}\n}}\ntype User @model {{ name: String }}\ntype Tag @model {{ x: Int }}\ntype Sub @edge(from: \"Goal\", to: \"User\", edgeSet: false) {{ x: Int }}\ntype Lead @edge(from: \"Goal\", to: \"User\") {{ x: Int }}"
            )
        };
        let table = [
            (
                "tags: [Tag] @outgoing(edge: \"Lead\")",
                "Goal.tags: Lead goes from Goal to User, so @outgoing",
            ),
            (
                "owners: [User] @incoming(edge: \"Lead\")",
                "Goal.owners: Lead goes from Goal to User, so @incoming",
            ),
            (
                "subs: [User] @targets(edge: \"Sub\")",
                "Goal.subs: Sub is kept out of the edge set",
            ),
            (
                "leads: [User] @targets(edge: \"Lead\", role: LEAD)",
                "Goal.leads: role: needs Lead to sort by an enum field",
            ),
            (
                "x: [User] @outgoing(edge: \"Nope\")",
                "Goal.x: there is no @edge type Nope",
            ),
            (
                "y: User @targets(edge: \"Lead\")",
                "Goal.y: @targets needs a list type, like [User]",
            ),
        ];
        for (field, expected) in table {
            let message = error_of(&schema(field));
            assert!(
                message.contains(expected),
                "{field}\n got: {message}\nwant: {expected}"
            );
        }
        let valid = schema("leads: [User] @targets(edge: \"Lead\")");
        let model = Model::parse("schema.graphql", &valid).expect("a valid edge schema");
        assert_eq!(model.edges.len(), 2);
        assert_eq!(
            model.indexes,
            vec![1],
            "edges use GSI01 for their inverse lookups"
        );
    }

    #[test]
    fn the_default_schema_ranks_goal_roles() {
        let model = farms();
        assert_eq!(model.rank_of("GoalRole", "LEAD"), Some(500));
        assert_eq!(model.rank_of("TeamRole", "MANAGER"), None);
        let membership = model.edge_def("GoalMembership").expect("an edge type");
        assert!(membership.edge_set);
        assert!(
            !model
                .edge_def("GoalSubscription")
                .expect("an edge type")
                .edge_set
        );
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
