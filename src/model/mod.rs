//! `schema.graphql` → [`Model`]: the validated description of what is stored and how.
//!
//! Invariant: a `Model` that exists is consistent. Every relation names existing types and
//! fields, no two relations of one type share a slot, and every key value the model derives is
//! an id or an encoded sort value. The rest of the server trusts it and never re-checks.
//! This module is pure: no I/O beyond the text it is given.

mod auth_rules;
mod conflict;
mod dialect;
mod error;
mod parse;

pub use auth_rules::{Allow, AuthRule, Operation, Provider, v1_subscription_owners};
pub use conflict::{ConflictConfig, ConflictHandler, DELTA_MARGIN_MS, DELTA_SYNC_MINUTES};
pub use dialect::{
    ARGUMENT as AMPLIFY_FLAG_ARGUMENT, AmplifyFlags, ApiShape, DEPLOYED_API, Dialect,
    DialectChoice, SchemaLanguage, amplify_plural, plural,
};
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
    /// The fields the schema declares on `type Query` and `type Mutation` itself, beside the
    /// generated ones.
    pub own_fields: Vec<OwnField>,
    /// What the schema asks for that the API leaves out (`@searchable`'s queries), one line
    /// each, for start-up to say.
    pub warnings: Vec<String>,
    /// The index slot of each type index (`Post.list`), `@index` (`Comment@byPost`) and
    /// relation slot chosen for a `@hasMany` without `index:` (`Post:Blog.posts`): what
    /// `slots.lock` pins, so that editing the schema never moves a slot that holds items.
    pub slot_pins: std::collections::BTreeMap<String, u8>,
    /// The language the schema is read in and the shape of its API.
    pub dialect: Dialect,
}

/// The root type a field of the schema's own is declared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    Query,
    Mutation,
}

impl Root {
    pub fn name(self) -> &'static str {
        match self {
            Root::Query => "Query",
            Root::Mutation => "Mutation",
        }
    }
}

/// A field the schema declares on `type Query` or `type Mutation` itself (AppSync's and
/// Amplify's custom queries and mutations), and the functions that resolve it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnField {
    pub root: Root,
    pub name: String,
    pub description: Option<String>,
    /// Its type and arguments (scalars, enums and the schema's input types).
    pub field: CustomField,
    /// The functions of its `@function(name:)` directives, in order: each is given the answer
    /// of the one before as `prev.result`, and the last one's answer is the field's value.
    /// Empty: nothing resolves it (unless `http` does), and it answers `null` with an error.
    pub functions: Vec<String>,
    /// `@http(…)`: the HTTP call that answers it instead of functions.
    pub http: Option<HttpCall>,
    /// Bound to its functions in `resolvers/`, not by `@function`: they get AppSync's direct
    /// Lambda resolver event rather than Amplify's.
    pub direct: bool,
    /// Who may ask for it (AppSync's `@aws_api_key`, `@aws_oidc`,
    /// `@aws_cognito_user_pools(cognito_groups:)`); empty: every caller the API admits.
    pub auth: Vec<AuthRule>,
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
/// nodes of the `@model` type `type_name` that the named generated mutations write, as they
/// write them; or the answers of the schema's own mutations returning the object type
/// `type_name` (AppSync's pub/sub through local resolvers).
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionDef {
    pub name: String,
    pub description: Option<String>,
    pub type_name: String,
    /// What the generated mutations do: create, update or delete. Empty for a subscription to
    /// answers.
    pub operations: Vec<Operation>,
    /// The schema's own mutations whose answers are the events, each once; empty for a
    /// subscription to nodes.
    pub answers_of: Vec<String>,
    /// Arguments, each a scalar field of the type that must equal the event's value.
    pub arguments: Vec<(String, ScalarType)>,
    /// The arguments declared non-null.
    pub required: Vec<String>,
    /// Who may subscribe to answers (AppSync's `@aws_*` on the field); empty: every caller the
    /// API admits. A subscription to nodes is held to its type's rules instead.
    pub auth: Vec<AuthRule>,
}

impl Model {
    /// Whether a declared subscription follows the answers of the schema's own mutation
    /// `mutation`, so that each answer of it is published.
    pub fn publishes(&self, mutation: &str) -> bool {
        self.subscriptions
            .iter()
            .any(|subscription| subscription.answers_of.iter().any(|m| m == mutation))
    }
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
    /// The root fields generated for it, by name (Amplify's `@model(queries:, mutations:,
    /// subscriptions:)` renames or leaves them out).
    pub roots: RootNames,
    /// Amplify's `@primaryKey` on a required scalar field: the node's id is that field's value
    /// (escaped, `keys::primary_key_id`), and `get`, `update` and `delete` take the field
    /// instead of `id`. `None`: the id is `id`.
    pub primary_key: Option<(String, ScalarType)>,
    /// The sort key fields of a composite `@primaryKey(sortKeyFields:)`, in order: the id is
    /// then every key field's value, escaped and joined (`keys::primary_key_id_of`), the
    /// key fields name the node, and the index [`PRIMARY_INDEX`] lists one key value's nodes
    /// sorted by these fields. Empty otherwise.
    pub primary_sort: Vec<(String, ScalarType)>,
    /// The attributes, and fields, that hold when a node was created and last changed.
    pub timestamps: Timestamps,
    /// The fields the schema does not declare that its rules add (an owner rule's `owner`, as
    /// Amplify adds it): in the type and its filters, but set by the server, so not in the
    /// inputs of Amplify's creates and updates.
    pub added: Vec<String>,
    /// The keys of relations the schema does not declare, added as Amplify adds them
    /// (`Post.blogPostsId` of a bare `Blog.posts: [Post] @hasMany`).
    pub implied: Vec<String>,
    /// How many fields the schema declares before `id` (time fields aside), where it declares
    /// `id`; `None` where Amplify adds it, after the declared fields.
    pub id_at: Option<usize>,
    /// `id: ID! @primaryKey`: the schema names `id` as the key, so Amplify's list of the type
    /// takes `id` and `sortDirection`, as for a key field of its own.
    pub id_is_primary_key: bool,
    /// `id: ID`, declared optional (Amplify's language): Amplify's API serves it so, while
    /// every node still has one.
    pub id_is_optional: bool,
    /// Conflict detection (DataStore): the type serves `_version`, `_deleted` and
    /// `_lastChangedAt`, its deletes leave tombstones, and a stale `_version` is resolved by
    /// this handler. `None`: today's writes.
    pub conflict: Option<ConflictHandler>,
    /// Amplify's `@searchable`: the name of its search query (`search<Types>`), answered from
    /// the type's nodes (`engine::read::search`).
    pub search: Option<String>,
}

/// The attributes that hold when a node was created and last changed, served as fields of the
/// same names: `createdAt` and `updatedAt`, or the names Amplify's `@model(timestamps:)` gives;
/// `None` for one it leaves out (neither stored nor served).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timestamps {
    pub created: Option<String>,
    pub updated: Option<String>,
    /// The times the schema declares, and the type each is declared with (`String!`,
    /// `AWSDateTime`): Amplify's API serves a declared time as declared, and its creates and
    /// updates take it (the server's time when left out).
    pub declared: Vec<(String, DeclaredTime)>,
}

/// How a time is declared: as a `String` or an `AWSDateTime`, required or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredTime {
    pub string: bool,
    pub required: bool,
    /// How many of the type's fields the schema declares before it (the fields Amplify's
    /// API serves it among, in the schema's order).
    pub position: usize,
}

impl DeclaredTime {
    /// The scalar the time is declared as.
    pub fn scalar(self) -> ScalarType {
        match self.string {
            true => ScalarType::String,
            false => ScalarType::AwsDateTime,
        }
    }
}

impl Default for Timestamps {
    fn default() -> Self {
        Timestamps {
            created: Some("createdAt".to_owned()),
            updated: Some("updatedAt".to_owned()),
            declared: Vec::new(),
        }
    }
}

impl Timestamps {
    /// Whether `name` is one of them.
    pub fn is(&self, name: &str) -> bool {
        self.created.as_deref() == Some(name) || self.updated.as_deref() == Some(name)
    }

    /// How the time `name` is declared, if the schema declares it.
    pub fn declared(&self, name: &str) -> Option<DeclaredTime> {
        self.declared
            .iter()
            .find(|(declared, _)| declared == name)
            .map(|(_, how)| *how)
    }
}

/// The index of a type with a composite primary key: its nodes under the value of the key's
/// first field, sorted by the others, for `list<Types>(<key>:, <sort key condition>)`.
pub const PRIMARY_INDEX: &str = "primary";

/// The root fields `@model` generates for a type, each by its name; `None` where Amplify's
/// `@model(queries:, mutations:, subscriptions:)` leaves one out. The batch mutations
/// (`createFarms`…) come with their single one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootNames {
    pub get: Option<String>,
    pub list: Option<String>,
    pub create: Option<String>,
    pub update: Option<String>,
    pub delete: Option<String>,
    pub on_create: Option<String>,
    pub on_update: Option<String>,
    pub on_delete: Option<String>,
}

impl RootNames {
    /// Every root field of `type_name`, by tablegraph's names (`farm`, `listFarms`,
    /// `createFarm`…, `onCreateFarm`…).
    pub fn of(type_name: &str) -> RootNames {
        RootNames::in_dialect(type_name, &Dialect::default())
    }

    /// Every root field of `type_name`, by the names of the dialect's shape: Amplify's get
    /// query is `get<Type>`, and its list is named by its flag `improvePluralization`.
    pub fn in_dialect(type_name: &str, dialect: &Dialect) -> RootNames {
        let amplify = dialect.shape == ApiShape::Amplify;
        RootNames {
            get: Some(match amplify {
                false => lower_first(type_name),
                true => format!("get{type_name}"),
            }),
            list: Some(match amplify && dialect.flags.simple_plurals() {
                true => format!("list{type_name}s"),
                false if amplify => format!("list{}", dialect::amplify_plural(type_name)),
                false => format!("list{}", plural(type_name)),
            }),
            create: Some(format!("create{type_name}")),
            update: Some(format!("update{type_name}")),
            delete: Some(format!("delete{type_name}")),
            on_create: Some(format!("onCreate{type_name}")),
            on_update: Some(format!("onUpdate{type_name}")),
            on_delete: Some(format!("onDelete{type_name}")),
        }
    }

    /// The list query's name, for messages, even where it is left out of the API.
    pub fn list_name(&self, type_name: &str) -> String {
        self.list
            .clone()
            .unwrap_or_else(|| format!("list{}", plural(type_name)))
    }
}

/// A secondary index of a non-unique field, Amplify's `@index(name:, sortKeyFields:,
/// queryField:)`: each node whose `field` is not null stores `PKnn = <Type>#<name>#<value>` and
/// `SKnn = <sort value of each sort field, joined by '#'>#<id>` in slot `slot`, a slot its nodes
/// use for nothing else; the root query `query_field` (if any) reads one value's partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub name: String,
    pub field: String,
    pub scalar: ScalarType,
    /// The fields its entries sort by (its sort key fields, in order; several make Amplify's
    /// composite sort key), with their types; by id without.
    pub sort_fields: Vec<(String, ScalarType)>,
    /// `None` where Amplify generates no query: `queryField: null`, or no `queryField:` with
    /// its flag `enableAutoIndexQueryNames` off.
    pub query_field: Option<String>,
    pub slot: u8,
}

impl IndexDef {
    /// What its entries sort by, for people: `id`, or its sort key fields (`status, createdAt`).
    pub fn sort_by(&self) -> String {
        match self.sort_fields.is_empty() {
            true => "id".to_owned(),
            false => self
                .sort_fields
                .iter()
                .map(|(field, _)| field.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
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
    /// `@function(name:)` or `@http(…)`: a field whose value its functions answer, given the
    /// node as the event's `source`, or an HTTP call answers. It is never stored.
    Function {
        field: CustomField,
        /// The functions, in order (see [`OwnField::functions`]).
        functions: Vec<String>,
        /// The HTTP call that answers it instead (see [`OwnField::http`]).
        http: Option<HttpCall>,
        /// Its functions get AppSync's direct event (see [`OwnField::direct`]).
        direct: bool,
    },
}

/// A field functions or an `@http` call answer, wherever it is declared
/// ([`Model::computed_fields`]).
#[derive(Debug, Clone, Copy)]
pub struct Computed<'a> {
    /// The type it is a field of.
    pub owner: &'a str,
    pub name: &'a str,
    pub field: &'a CustomField,
    pub functions: &'a [String],
    pub http: Option<&'a HttpCall>,
}

/// Amplify's `@http(method:, url:, headers:)`: a field whose value is the JSON an HTTP endpoint
/// answers. As Amplify does, the field's arguments are rewritten: the URL's `:name` path
/// parameters become `params: <Type><Field>ParamsInput!`, the field's other arguments
/// `query: <Type><Field>QueryInput` and, for a method with a body, `body:
/// <Type><Field>BodyInput`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpCall {
    pub method: HttpMethod,
    /// As written: `${env}` and `${aws_region}` stand for the environment and the region,
    /// `:name` for the `params` argument's `name`.
    pub url: String,
    /// Static headers, in order.
    pub headers: Vec<(String, String)>,
    /// The URL's path parameters, in order.
    pub params: Vec<String>,
    /// The field's arguments as declared that `query` (and `body`) carry, and whether each was
    /// declared non-null (then it must be given in one of them).
    pub query: Vec<(String, bool)>,
    /// The input types generated for `params`, `query` and `body`.
    pub inputs: Vec<DeclaredType>,
}

/// An `@http` method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Delete,
    Patch,
}

impl HttpMethod {
    pub fn name(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
        }
    }

    /// Whether its request carries the `body` argument as JSON.
    pub fn has_body(self) -> bool {
        matches!(self, HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch)
    }
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
    /// Served with no resolver at all, as Amplify's transformer serves a field of a `@model`
    /// type that no directive relates: it answers null.
    pub unresolved: bool,
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
    /// The element's `@index` the relation names (Amplify's `indexName:`, v1's `keyName:`):
    /// where that index is sorted, the connection reads it, in its order and with its sort key
    /// condition, as Amplify's does.
    pub index: Option<String>,
}

impl HasMany {
    /// The sorted `@index` of the element that the relation names and reads (Amplify's
    /// `indexName:` of an index with sort key fields); `None` when it reads its own slot.
    pub fn sorted_index<'m>(&self, model: &'m Model) -> Option<(&'m TypeDef, &'m IndexDef)> {
        let name = self.index.as_deref()?;
        let element = model.type_def(&self.element)?;
        let index = element.indexes.iter().find(|index| index.name == name)?;
        (!index.sort_fields.is_empty()).then_some((element, index))
    }
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
        Model::parse_as(file, source, &DialectChoice::default())
    }

    /// Like [`Model::parse`], with the language, the API shape or Amplify's feature flags
    /// chosen rather than detected.
    pub fn parse_as(file: &str, source: &str, choice: &DialectChoice) -> Result<Model, ModelError> {
        parse::parse_model(
            file,
            source,
            &std::collections::BTreeSet::new(),
            &std::collections::BTreeMap::new(),
            &std::collections::BTreeMap::new(),
            choice,
        )
    }

    /// Like [`Model::parse`], for a schema whose fields `resolved` (`Type.field`) are served by
    /// resolver files: such a field is computed, never stored, even when it is a plain scalar.
    pub fn parse_with_resolvers(
        file: &str,
        source: &str,
        resolved: &std::collections::BTreeSet<String>,
    ) -> Result<Model, ModelError> {
        parse::parse_model(
            file,
            source,
            resolved,
            &std::collections::BTreeMap::new(),
            &std::collections::BTreeMap::new(),
            &DialectChoice::default(),
        )
    }

    /// Like [`Model::parse_with_resolvers`], with the fields `resolvers/` binds to functions
    /// (`Type.field` → the functions, in order): each is resolved by them with AppSync's direct
    /// Lambda resolver event, as AppSync's resolvers bind fields outside the schema; and the
    /// index slots `slots.lock` pins (see [`Model::slot_pins`]).
    pub fn parse_with_resolver_files(
        file: &str,
        source: &str,
        resolved: &std::collections::BTreeSet<String>,
        bound: &std::collections::BTreeMap<String, Vec<String>>,
        slot_pins: &std::collections::BTreeMap<String, u8>,
        choice: &DialectChoice,
    ) -> Result<Model, ModelError> {
        parse::parse_model(file, source, resolved, bound, slot_pins, choice)
    }

    /// Whether a resolver file serves `type_name.field` rather than its directive.
    pub fn is_resolved(&self, type_name: &str, field: &str) -> bool {
        // Without building the `Type.field` string: prefetch asks this for each relation it
        // plans, about a hundred times on a page of goals.
        self.resolved
            .iter()
            .any(|name| name.split_once('.') == Some((type_name, field)))
    }

    /// Every field functions or an `@http` call answer: the schema's own root fields, then
    /// those of `@model` types and of types without `@model`.
    pub fn computed_fields(&self) -> impl Iterator<Item = Computed<'_>> {
        let own = self.own_fields.iter().map(|own| Computed {
            owner: own.root.name(),
            name: &own.name,
            field: &own.field,
            functions: &own.functions,
            http: own.http.as_ref(),
        });
        let of_types = self
            .types
            .iter()
            .map(|t| (t.name.as_str(), &t.fields))
            .chain(self.objects.iter().map(|o| (o.name.as_str(), &o.fields)))
            .flat_map(|(owner, fields)| {
                fields.iter().filter_map(move |field| match &field.kind {
                    FieldKind::Function {
                        field: custom,
                        functions,
                        http,
                        ..
                    } => Some(Computed {
                        owner,
                        name: &field.name,
                        field: custom,
                        functions,
                        http: http.as_ref(),
                    }),
                    _ => None,
                })
            });
        own.chain(of_types)
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

    /// The create or update input of `type_def` the schema declares itself, `Create<Type>Input`
    /// or `Update<Type>Input` (`operation` is `Create` or `Update`), which Amplify's
    /// transformer keeps in place of its own.
    pub fn own_input(&self, operation: &str, type_def: &TypeDef) -> Option<&DeclaredType> {
        let name = format!("{operation}{}Input", type_def.name);
        self.inputs.iter().find(|input| input.name == name)
    }

    /// Whether the declared input `name` is a model's own create or update input.
    pub fn is_own_input(&self, name: &str) -> bool {
        self.types.iter().any(|type_def| {
            ["Create", "Update"].iter().any(|operation| {
                self.own_input(operation, type_def)
                    .is_some_and(|i| i.name == name)
            })
        })
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

    /// The fields that name a node of the type, with their types: `@primaryKey`'s field and its
    /// sort key fields, in order; none when its id is `id`.
    pub fn key_fields(&self) -> impl Iterator<Item = &(String, ScalarType)> {
        self.primary_key.iter().chain(&self.primary_sort)
    }

    /// The index [`PRIMARY_INDEX`] of a type with a composite primary key.
    pub fn primary_index(&self) -> Option<&IndexDef> {
        match self.primary_sort.is_empty() {
            true => None,
            false => self.indexes.iter().find(|i| i.name == PRIMARY_INDEX),
        }
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
