//! The schema's language (tablegraph's own or Amplify's) and the API's shape, decided before
//! reading: as chosen, else detected from the directives the schema uses.

use crate::model::{ApiShape, Dialect, DialectChoice, SchemaLanguage};
use async_graphql_parser::Positioned;
use async_graphql_parser::types::{
    ConstDirective, ServiceDocument, TypeKind, TypeSystemDefinition,
};

/// The schema's language and its API's shape: as chosen, else the language detected (Amplify's
/// when the schema uses Amplify's relation arguments, or none of tablegraph's own directives)
/// and the shape that follows it.
pub(super) fn dialect(document: &ServiceDocument, choice: &DialectChoice) -> Dialect {
    let (language, language_reason) = match choice.language {
        Some(language) => (language, String::from("--schema-language")),
        None => detect_language(document),
    };
    let (shape, shape_reason) = match choice.shape {
        Some(shape) => (shape, "--api-shape"),
        None => (
            match language {
                SchemaLanguage::Amplify => ApiShape::Amplify,
                SchemaLanguage::Tablegraph => ApiShape::Relay,
            },
            "follows the language",
        ),
    };
    let mut flags = choice.flags.clone();
    if language == SchemaLanguage::Amplify && super::v1::uses_v1(document) {
        flags.detect_version(
            1,
            "detected: the schema uses transformer v1's @key or @connection",
        );
    }
    Dialect {
        language,
        shape,
        language_reason,
        shape_reason,
        flags,
        strict: choice.strict,
        conflict: choice.conflict.clone(),
    }
}

/// The language `document` is written in, and what showed it.
fn detect_language(document: &ServiceDocument) -> (SchemaLanguage, String) {
    let mut own = None;
    for definition in &document.definitions {
        let TypeSystemDefinition::Type(definition) = definition else {
            continue;
        };
        let type_name = definition.node.name.node.as_str();
        if type_name == "AMPLIFY" && matches!(definition.node.kind, TypeKind::InputObject(_)) {
            return (
                SchemaLanguage::Amplify,
                String::from("detected: input AMPLIFY"),
            );
        }
        let mut directives: Vec<(String, &Positioned<ConstDirective>)> = definition
            .node
            .directives
            .iter()
            .map(|d| (type_name.to_owned(), d))
            .collect();
        if let TypeKind::Object(object) = &definition.node.kind {
            for field in &object.fields {
                let at = format!("{type_name}.{}", field.node.name.node);
                directives.extend(field.node.directives.iter().map(|d| (at.clone(), d)));
            }
        }
        for (at, directive) in directives {
            let name = directive.node.name.node.as_str();
            let has = |argument: &str| directive.node.get_argument(argument).is_some();
            let amplify = match name {
                "hasOne" | "manyToMany" | "primaryKey" | "key" | "connection" => true,
                "hasMany" => !has("index") && !has("field"),
                "belongsTo" => !has("field"),
                _ => false,
            };
            if amplify {
                return (
                    SchemaLanguage::Amplify,
                    format!("detected: Amplify's @{name} on {at}"),
                );
            }
            let tablegraph = match name {
                "unique" | "edge" | "rank" | "outgoing" | "incoming" | "targets" | "hasMany"
                | "belongsTo" => true,
                "model" => has("list") || has("listShards") || has("listSortBy"),
                _ => false,
            };
            if tablegraph && own.is_none() {
                own = Some(format!("detected: tablegraph's @{name} on {at}"));
            }
        }
    }
    match own {
        Some(reason) => (SchemaLanguage::Tablegraph, reason),
        None => (
            SchemaLanguage::Amplify,
            String::from("detected: none of tablegraph's own directives"),
        ),
    }
}

#[cfg(test)]
mod tests {
    //! The language detected, and the shape that follows it.

    use crate::model::*;

    #[test]
    fn the_language_is_detected_and_the_shape_follows_it_unless_chosen() {
        let dialect = |schema: &str, choice: &DialectChoice| {
            let model = Model::parse_as("schema.graphql", schema, choice).expect("it loads");
            (
                model.dialect.language,
                model.dialect.shape,
                model.dialect.language_reason,
            )
        };
        let none = DialectChoice::default();
        for (schema, language, why) in [
            // Amplify's relation arguments win over tablegraph's directives.
            (
                "type A @model { name: String @unique bs: [B] @hasMany } type B @model { x: Int }",
                SchemaLanguage::Amplify,
                "Amplify's @hasMany on A.bs",
            ),
            (
                "input AMPLIFY { globalAuthRule: AuthRule = { allow: public } } type A @model { x: Int }",
                SchemaLanguage::Amplify,
                "input AMPLIFY",
            ),
            (
                "type A @model { x: Int }",
                SchemaLanguage::Amplify,
                "none of tablegraph's own directives",
            ),
            (
                "type A @model(listShards: 2) { x: Int }",
                SchemaLanguage::Tablegraph,
                "tablegraph's @model on A",
            ),
            (
                "type A @model { name: String @unique }",
                SchemaLanguage::Tablegraph,
                "tablegraph's @unique on A.name",
            ),
        ] {
            let (got, shape, reason) = dialect(schema, &none);
            assert_eq!(got, language, "{schema}");
            assert!(reason.contains(why), "{schema}: {reason}");
            let follows = match language {
                SchemaLanguage::Amplify => ApiShape::Amplify,
                SchemaLanguage::Tablegraph => ApiShape::Relay,
            };
            assert_eq!(shape, follows, "{schema}");
        }
        let chosen = DialectChoice {
            language: Some(SchemaLanguage::Tablegraph),
            shape: Some(ApiShape::Amplify),
            ..DialectChoice::default()
        };
        let (language, shape, reason) = dialect("type A @model { x: Int }", &chosen);
        assert_eq!(
            (language, shape, reason.as_str()),
            (
                SchemaLanguage::Tablegraph,
                ApiShape::Amplify,
                "--schema-language"
            )
        );
        let model =
            Model::parse_as("schema.graphql", "type A @model { x: Int }", &chosen).expect("loads");
        assert_eq!(model.types[0].roots.get.as_deref(), Some("getA"));
    }
}
