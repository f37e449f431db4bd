//! Amplify's `@http(method:, url:, headers:)` on a field: the call it makes, and the field's
//! arguments rewritten as Amplify rewrites them (`params`, `query`, `body` and their input
//! types), so that its clients' operations run unchanged.

use super::Reader;
use crate::model::{CustomArgument, DeclaredField, DeclaredType, HttpCall, HttpMethod, ModelError};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::ConstDirective;
use async_graphql_value::ConstValue;

impl Reader<'_> {
    /// The call `directive` makes for `owner.field`, and the field's arguments in place of
    /// `declared` (its arguments as written; `scalar` tells whether a named type is a scalar
    /// or an enum).
    pub(super) fn read_http(
        &self,
        owner: &str,
        field: &str,
        directive: &Positioned<ConstDirective>,
        declared: &[CustomArgument],
        scalar: impl Fn(&str) -> bool,
    ) -> Result<(HttpCall, Vec<CustomArgument>), ModelError> {
        self.expect_arguments(directive, &["method", "url", "headers"])?;
        let (method, url, headers) = self.http_request(owner, field, directive)?;
        let params = path_parameters(&url);
        // As Amplify: with path parameters, `query` (and `body`) carry the scalar arguments not
        // named in the path; without, every argument.
        let carried: Vec<&CustomArgument> = declared
            .iter()
            .filter(|argument| {
                params.is_empty() || (scalar(&argument.element) && !params.contains(&argument.name))
            })
            .collect();
        let type_name =
            |suffix: &str| format!("{}{}{suffix}", upper_first(owner), upper_first(field));
        let mut arguments = Vec::new();
        let mut inputs = Vec::new();
        if !params.is_empty() {
            let name = type_name("ParamsInput");
            inputs.push(DeclaredType {
                name: name.clone(),
                description: None,
                fields: params
                    .iter()
                    .map(|param| DeclaredField {
                        name: param.clone(),
                        ty: "String!".to_owned(),
                        description: None,
                    })
                    .collect(),
            });
            arguments.push(CustomArgument {
                name: "params".to_owned(),
                ty: format!("{name}!"),
                element: name,
            });
        }
        if !carried.is_empty() {
            // A GET keeps each argument's nullability (its `query` is required when one is);
            // a method with a body takes each from `query` or `body`, so neither requires any.
            let keep_required = method == HttpMethod::Get;
            let fields: Vec<DeclaredField> = carried
                .iter()
                .map(|argument| DeclaredField {
                    name: argument.name.clone(),
                    ty: if keep_required {
                        argument.ty.clone()
                    } else {
                        argument.ty.trim_end_matches('!').to_owned()
                    },
                    description: None,
                })
                .collect();
            let required = fields.iter().any(|f| f.ty.ends_with('!'));
            let mut carrier = |argument: &str, suffix: &str| {
                let name = type_name(suffix);
                inputs.push(DeclaredType {
                    name: name.clone(),
                    description: None,
                    fields: fields.clone(),
                });
                arguments.push(CustomArgument {
                    name: argument.to_owned(),
                    ty: if required {
                        format!("{name}!")
                    } else {
                        name.clone()
                    },
                    element: name,
                });
            };
            carrier("query", "QueryInput");
            if method.has_body() {
                carrier("body", "BodyInput");
            }
        }
        let call = HttpCall {
            method,
            url,
            headers,
            params,
            query: carried
                .iter()
                .map(|argument| (argument.name.clone(), argument.ty.ends_with('!')))
                .collect(),
            inputs,
        };
        Ok((call, arguments))
    }

    /// The request `@http` makes: its method (GET when left out), a URL of the web, and its
    /// headers, each argument refused when it is none of those.
    fn http_request(
        &self,
        owner: &str,
        field: &str,
        directive: &Positioned<ConstDirective>,
    ) -> Result<Request, ModelError> {
        let fail = |message: &str| self.error(directive.pos, format!("{owner}.{field}: {message}"));
        let method = http_method_is_known(directive).map_err(fail)?;
        let url = http_url_is_of_the_web(directive).map_err(fail)?;
        let headers = http_headers_are_key_value_objects(directive).map_err(fail)?;
        Ok((method, url, headers))
    }
}

const METHOD: &str = "@http(method:) is GET, POST, PUT, DELETE or PATCH";

/// `@http(method:)` names one of the methods a call is made with (GET when left out): refused
/// with [`METHOD`] otherwise.
fn http_method_is_known(
    directive: &Positioned<ConstDirective>,
) -> Result<HttpMethod, &'static str> {
    match directive.node.get_argument("method").map(|m| &m.node) {
        None => Some(HttpMethod::Get),
        Some(ConstValue::Enum(name)) => method_named(name.as_str()),
        Some(ConstValue::String(name)) => method_named(name),
        Some(_) => None,
    }
    .ok_or(METHOD)
}

const URL: &str = "@http(url:) needs a URL that begins with http:// or https://";

/// `@http(url:)` is a URL of the web, as only those are called: refused with [`URL`] otherwise.
fn http_url_is_of_the_web(directive: &Positioned<ConstDirective>) -> Result<String, &'static str> {
    match directive.node.get_argument("url").map(|u| &u.node) {
        Some(ConstValue::String(url))
            if url.starts_with("http://") || url.starts_with("https://") =>
        {
            Ok(url.clone())
        }
        _ => Err(URL),
    }
}

/// `@http(headers:)` is one `{ key, value }` object or a list of them (none when left out):
/// refused with [`HEADERS`] otherwise.
fn http_headers_are_key_value_objects(
    directive: &Positioned<ConstDirective>,
) -> Result<Vec<(String, String)>, &'static str> {
    match directive.node.get_argument("headers").map(|h| &h.node) {
        None => Ok(Vec::new()),
        Some(ConstValue::List(headers)) => headers
            .iter()
            .map(header)
            .collect::<Option<Vec<_>>>()
            .ok_or(HEADERS),
        Some(one) => Ok(vec![header(one).ok_or(HEADERS)?]),
    }
}

/// A request's method, URL and headers (each a key and a value).
type Request = (HttpMethod, String, Vec<(String, String)>);

const HEADERS: &str = "@http(headers:) lists { key: \"…\", value: \"…\" } objects";

fn method_named(name: &str) -> Option<HttpMethod> {
    Some(match name {
        "GET" => HttpMethod::Get,
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "DELETE" => HttpMethod::Delete,
        "PATCH" => HttpMethod::Patch,
        _ => return None,
    })
}

/// A `{ key, value }` header, both non-empty strings.
fn header(value: &ConstValue) -> Option<(String, String)> {
    let ConstValue::Object(header) = value else {
        return None;
    };
    if header.len() != 2 {
        return None;
    }
    let text = |name: &str| match header.get(name) {
        Some(ConstValue::String(text)) if !text.is_empty() => Some(text.clone()),
        _ => None,
    };
    Some((text("key")?, text("value")?))
}

/// The `:name` parameters of a URL's path (after its origin), in order, each once.
pub(crate) fn path_parameters(url: &str) -> Vec<String> {
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|at| &rest[at..]))
        .unwrap_or_default();
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let mut params: Vec<String> = Vec::new();
    for piece in path.split(':').skip(1) {
        let name: String = piece
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !params.contains(&name) {
            params.push(name);
        }
    }
    params
}

fn upper_first(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::assert_refused;
    use crate::model::*;

    /// A schema whose `Query.a: String` carries `http`, an `@http` directive as written.
    fn with_http(http: &str) -> String {
        format!("type Query {{ a: String {http} }}")
    }

    #[test]
    fn an_unknown_http_method_is_refused() {
        let message = "Query.a: @http(method:) is GET, POST, PUT, DELETE or PATCH";
        assert_refused(
            &with_http(r#"@http(url: "https://x", method: HEAD)"#),
            message,
        );
        assert_refused(&with_http(r#"@http(url: "https://x", method: 1)"#), message);
    }

    #[test]
    fn an_http_url_not_of_the_web_is_refused() {
        let message = "Query.a: @http(url:) needs a URL that begins with http:// or https://";
        assert_refused(&with_http(r#"@http(url: "ftp://x")"#), message);
        assert_refused(&with_http("@http(url: 1)"), message);
    }

    #[test]
    fn http_headers_that_are_not_key_value_objects_are_refused() {
        let message = "Query.a: @http(headers:) lists { key: \"…\", value: \"…\" } objects";
        assert_refused(
            &with_http(r#"@http(url: "https://x", headers: [{ key: "k" }])"#),
            message,
        );
        assert_refused(
            &with_http(r#"@http(url: "https://x", headers: "k")"#),
            message,
        );
    }

    #[test]
    fn http_fields_take_amplifys_params_query_and_body() {
        let model = Model::parse(
            "schema.graphql",
            r#"
            type Post { id: ID! title: String }
            type Query {
                getPost(id: ID!, verbose: Boolean): Post @http(url: "https://api.example/${env}/posts/:id")
                listPosts(limit: Int!, tag: String): [Post] @http(url: "https://api.example/posts")
                health: String @http(url: "https://api.example/health", headers: [{ key: "X-Probe", value: "1" }])
            }
            type Mutation {
                addPost(title: String!, views: Int): Post @http(method: POST, url: "https://api.example/posts")
            }
            "#,
        )
        .expect("the schema loads");
        let summary: Vec<(&str, Vec<&str>, Vec<&str>)> = model
            .own_fields
            .iter()
            .map(|own| {
                let http = own.http.as_ref().expect("an @http field");
                (
                    own.name.as_str(),
                    own.field.arguments.iter().map(|a| a.ty.as_str()).collect(),
                    http.inputs.iter().map(|i| i.name.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "getPost",
                    vec!["QueryGetPostParamsInput!", "QueryGetPostQueryInput"],
                    vec!["QueryGetPostParamsInput", "QueryGetPostQueryInput"]
                ),
                (
                    "listPosts",
                    vec!["QueryListPostsQueryInput!"],
                    vec!["QueryListPostsQueryInput"]
                ),
                ("health", vec![], vec![]),
                (
                    "addPost",
                    vec!["MutationAddPostQueryInput", "MutationAddPostBodyInput"],
                    vec!["MutationAddPostQueryInput", "MutationAddPostBodyInput"]
                ),
            ]
        );
        let get = model.own_fields[0].http.as_ref().expect("@http");
        assert_eq!(get.method, HttpMethod::Get);
        assert_eq!(get.params, ["id"]);
        // `id` is in the path: only `verbose` is carried by `query`.
        assert_eq!(get.query, [("verbose".to_owned(), false)]);
        let add = model.own_fields[3].http.as_ref().expect("@http");
        assert_eq!(
            add.query,
            [("title".to_owned(), true), ("views".to_owned(), false)]
        );
        // A body method's inputs require nothing: each argument may come in either.
        assert_eq!(add.inputs[1].fields[0].ty, "String");
        assert_eq!(
            model.own_fields[2].http.as_ref().expect("@http").headers,
            [("X-Probe".to_owned(), "1".to_owned())]
        );
    }

    #[test]
    fn http_mistakes_stop_start_up() {
        for (field, says) in [
            (
                r#"a: String @http(url: "ftp://x")"#,
                "begins with http:// or https://",
            ),
            (
                r#"a: String @http(url: "https://x", method: HEAD)"#,
                "GET, POST, PUT, DELETE or PATCH",
            ),
            (
                r#"a: String @http(url: "https://x", headers: [{ key: "k" }])"#,
                "{ key:",
            ),
            (
                r#"a: String @http(url: "https://x") @function(name: "f")"#,
                "not both",
            ),
        ] {
            let error = Model::parse("schema.graphql", &format!("type Query {{ {field} }}"))
                .expect_err(field);
            assert!(error.to_string().contains(says), "{field}: {error}");
        }
    }
}
