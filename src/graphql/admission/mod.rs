//! One admission path for every request, whatever brought it: a POST, a GET (by its query or by
//! a persisted query's hash), graphql-transport-ws and graphql-ws, AppSync's real-time `start`,
//! and SSE in both of graphql-sse's modes. Each transport checks the request's credentials in
//! its own way (`http::credentials` before an HTTP request reaches its handler; a socket at its
//! `connection_init`, and a real-time `start` with its own `authorization`), and then hands the
//! request here, where the rest runs in one order:
//!
//! 1. the `operationName` field's length, and a persisted query's hash looked up (nothing is
//!    parsed: the hash stands for a text);
//! 2. the limits on the text (nesting, tokens, names), then the parse (`Limits::parse`, the
//!    server's one call of the parser);
//! 3. the limits on the document's shape, its values and its cost with the request's
//!    variables;
//! 4. then, as the request runs, async-graphql's validation; and only once all of these passed
//!    does the persisted-query store keep a query sent with its hash.
//!
//! An [`Admitted`] request is the only kind the API runs ([`Api::execute`](super::Api::execute),
//! [`Transport`](super::Transport)), so a new transport cannot skip a step or reorder them.
//!
//! Invariant: no document is parsed, measured, run or kept before the steps above it passed.

pub(in crate::graphql) mod limits;
pub(in crate::graphql) mod operation_span;
pub(in crate::graphql) mod persisted;
pub(in crate::graphql) mod shape;

use async_graphql::parser::types::{ExecutableDocument, OperationType};
use async_graphql::registry::Registry;
use async_graphql::{Request, Response, ServerError};

use self::limits::{Limits, Parsed, QueryLimits};
use self::persisted::{Lookup, PersistedQueries, PersistedSettings};

/// A request that passed the admission: its document parsed within every limit.
pub struct Admitted {
    request: Request,
    /// A query sent with its hash, kept once the request ran without a request error.
    keep: Option<Keep>,
}

/// The type of the operation a request runs: the one named, or the document's first.
fn operation_type(document: &ExecutableDocument, name: Option<&str>) -> Option<OperationType> {
    let mut operations = document.operations.iter();
    let (_, operation) = match name {
        Some(name) => operations.find(|(n, _)| n.is_some_and(|n| n.as_str() == name)),
        None => operations.next(),
    }?;
    Some(operation.node.ty)
}

/// What the persisted-query store keeps of a request that registered its query.
struct Keep {
    hash: [u8; 32],
    /// The text's tokens, and its document when the store keeps it parsed (a small tree).
    tokens: usize,
    document: Option<ExecutableDocument>,
}

impl Admitted {
    /// The type of the operation the request runs: the one named, or the document's first.
    pub fn operation_type(&mut self) -> Option<OperationType> {
        let name = self.request.operation_name.clone();
        operation_type(self.document(), name.as_deref())
    }

    /// Attaches `data` for the resolvers.
    pub fn data<D: std::any::Any + Send + Sync>(mut self, data: D) -> Admitted {
        self.request = self.request.data(data);
        self
    }

    /// The request's text, as the client sent it (or as its hash stands for it).
    pub fn query(&self) -> &str {
        &self.request.query
    }

    /// The request's variables.
    pub fn variables(&self) -> &async_graphql::Variables {
        &self.request.variables
    }

    /// The parsed document. Set by the admission, so this never parses.
    pub(in crate::graphql) fn document(&mut self) -> &ExecutableDocument {
        // An admitted request always has its document: `parsed_query` only hands it out.
        let parsed = self.request.parsed_query();
        parsed.expect("an admitted request carries its parsed document")
    }

    /// The request, for the schema to run.
    pub(in crate::graphql) fn into_request(self) -> Request {
        self.request
    }
}

/// The steps of the admission after the credentials, and what they keep: documents parsed
/// before, and persisted queries.
pub(in crate::graphql) struct Admission {
    limits: Limits,
    persisted: PersistedQueries,
}

impl Admission {
    pub(in crate::graphql) fn new(limits: QueryLimits, persisted: PersistedSettings) -> Admission {
        Admission {
            limits: Limits::new(limits),
            persisted: PersistedQueries::new(persisted),
        }
    }

    /// Admits `request` against the schema's `registry`, or the request error to answer.
    pub(in crate::graphql) fn admit(
        &self,
        registry: &Registry,
        mut request: Request,
    ) -> Result<Admitted, ServerError> {
        if let Some(operation_name) = &request.operation_name {
            self::shape::name(operation_name)?;
        }
        let lookup = self.persisted.look_up(&request)?;
        let held = match &lookup {
            Lookup::Found(query) => {
                request.query.clone_from(&query.text);
                query.document.clone()
            }
            Lookup::Absent | Lookup::Register(_) => None,
        };
        let parsed = match held {
            // Held parsed only once it passed every step: its tokens are not needed again.
            Some(document) => Parsed {
                document,
                tokens: 0,
                cached: true,
            },
            None => self.limits.parse(&request.query)?,
        };
        let Parsed {
            document,
            tokens,
            cached,
        } = parsed;
        self.limits.check(
            registry,
            &document,
            request.operation_name.as_deref(),
            &request.variables,
        )?;
        if !cached {
            self.limits.remember(&request.query, &document, tokens);
        }
        let keep = match lookup {
            Lookup::Register(hash) => {
                let parsed = persisted::keeps_parsed(request.query.len(), tokens);
                Some(Keep {
                    hash,
                    tokens,
                    document: parsed.then(|| document.clone()),
                })
            }
            Lookup::Absent | Lookup::Found(_) => None,
        };
        request.set_parsed_query(document);
        Ok(Admitted { request, keep })
    }

    /// What to do once an admitted request has answered `response`: the persisted-query store
    /// keeps a query sent with its hash when the request passed validation too (a request
    /// error has no `data` and no path).
    pub(in crate::graphql) fn ran(&self, registration: Registration, response: &Response) {
        let Some((keep, query)) = registration.0 else {
            return;
        };
        let refused = response.data == async_graphql::Value::Null
            && !response.errors.is_empty()
            && response.errors.iter().all(|error| error.path.is_empty());
        if !refused {
            self.persisted
                .keep(keep.hash, query, keep.document, keep.tokens);
        }
    }
}

/// A query to keep by its hash once its request has run, taken out of an [`Admitted`] request
/// before the schema consumes it.
pub(in crate::graphql) struct Registration(Option<(Keep, String)>);

impl Registration {
    pub(in crate::graphql) fn of(admitted: &mut Admitted) -> Registration {
        Registration(
            admitted
                .keep
                .take()
                .map(|keep| (keep, admitted.request.query.clone())),
        )
    }
}
