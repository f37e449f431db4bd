//! The query GraphiQL opens on, instead of its generic welcome text: a working example of the
//! served API. For the default schema (the one with the Koan page's `teamByName`), the README's
//! first query, the team's goals with each goal's leads and teams; for any other, the first page
//! of its first type that has a list, with a few of its fields.

use crate::model::{ApiShape, FieldKind, Model};

/// The README's first query (a test checks the two are the same).
pub const KOAN_QUERY: &str = r#"{
  teamByName(name: "Growth") {
    id
    goals(first: 50) {
      edges { role node { title leads { name } teams { name } } }
    }
  }
}"#;

/// The example query of `model`'s API, if it has a list to show.
pub fn example_query(model: &Model) -> Option<String> {
    let team = model.type_def("Team");
    let koan = team.is_some_and(|team| {
        team.roots.list.is_some()
            && team.fields.iter().any(|f| f.name == "goals")
            && team.fields.iter().any(|f| {
                f.name == "name" && matches!(f.kind, FieldKind::Scalar { unique: true, .. })
            })
    });
    if koan && model.dialect.shape == ApiShape::Relay {
        return Some(KOAN_QUERY.to_owned());
    }
    let (type_def, list) = model
        .types
        .iter()
        .find_map(|type_def| Some((type_def, type_def.roots.list.as_ref()?)))?;
    let mut fields = vec!["id".to_owned()];
    fields.extend(
        type_def
            .fields
            .iter()
            .filter(|field| field.auth.is_empty() && field.name != "id")
            .filter(|field| matches!(field.kind, FieldKind::Scalar { .. }))
            .take(3)
            .map(|field| field.name.clone()),
    );
    let fields = fields.join(" ");
    let page = match model.dialect.shape {
        ApiShape::Relay => format!(
            "{list}(first: 10) {{\n    edges {{ node {{ {fields} }} }}\n    pageInfo {{ hasNextPage endCursor }}\n  }}"
        ),
        ApiShape::Amplify => {
            format!("{list}(limit: 10) {{\n    items {{ {fields} }}\n    nextToken\n  }}")
        }
    };
    Some(format!(
        "# The first page of {}: press the run button (or Ctrl-Enter).\n{{\n  {page}\n}}\n",
        crate::model::plural(&type_def.name)
    ))
}
