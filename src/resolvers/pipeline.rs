//! What a resolver file becomes: a [`Pipeline`] of [`Step`]s over values ([`ValueRef`]) and
//! the [`Output`] its field's declared type asks for, and the [`ResolverError`] of a file that
//! does not make one.

/// Most edges an `incoming` step reads.
pub const MAX_INCOMING: usize = 1000;

#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ResolverError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueRef {
    Literal(String),
    Argument(String),
    Parent(String),
    Claim(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Incoming {
        edge: String,
        slot: u8,
        role_sort: Option<String>,
    },
    Query {
        relation: String,
        slot: u8,
        element: String,
    },
    Targets {
        edge: String,
        role_sort: Option<String>,
    },
    Load {
        allowed: Vec<String>,
    },
    FilterId(ValueRef),
    FilterField(String, ValueRef),
    Distinct,
}

/// What the field answers, from its declared type.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Nodes {
        list: bool,
        allowed: Vec<String>,
        is_abstract: bool,
    },
    Ids {
        list: bool,
    },
    Exists,
    Count,
}

/// A validated resolver.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// `resolvers/Team.goalLeads.toml`.
    pub file: String,
    pub type_name: String,
    pub field: String,
    pub description: String,
    pub steps: Vec<Step>,
    pub output: Output,
}
