//! The routes are declared three times, for three readers: the handlers' `ROUTES` (what the
//! code serves), `infra/template.yaml` (what API Gateway sends to which function) and
//! `infra/openapi.yaml` (what clients are told). A route added to one and not the others fails
//! here.

use std::collections::BTreeSet;

use saphyr::{LoadableYamlNode, SafelyIndex, YamlOwned};
use snapwake::http::edge::Route;

/// `(function, METHOD, path)`.
type Declared = BTreeSet<(String, String, String)>;

fn read(path: &str) -> String {
    let full = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

fn from_handlers() -> Declared {
    let tables: [(&str, &[Route]); 4] = [
        ("list", &snapwake_list::ROUTES),
        ("create", &snapwake_create::ROUTES),
        ("resume", &snapwake_resume::ROUTES),
        ("delete", &snapwake_delete::ROUTES),
    ];
    tables
        .iter()
        .flat_map(|(function, routes)| {
            routes.iter().map(move |r| {
                (
                    function.to_string(),
                    r.method.to_string(),
                    r.pattern.to_string(),
                )
            })
        })
        .collect()
}

/// One YAML file of the repository, parsed.
fn yaml(path: &str) -> YamlOwned {
    let mut documents =
        YamlOwned::load_from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(documents.len(), 1, "{path}: one YAML document");
    documents.remove(0)
}

/// A mapping's entries with string keys (a node that is not a mapping has none).
fn entries(node: Option<&YamlOwned>) -> impl Iterator<Item = (&str, &YamlOwned)> {
    node.and_then(YamlOwned::as_mapping)
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| Some((key.as_str()?, value)))
}

/// The `HttpApi` events of each `<Name>Function` resource of the template.
fn from_template() -> Declared {
    let template = yaml("infra/template.yaml");
    let mut out = Declared::new();
    for (name, resource) in entries(template.as_mapping_get("Resources")) {
        let Some(function) = name.strip_suffix("Function") else {
            continue;
        };
        for (event, properties) in entries(resource.get("Properties").get("Events")) {
            if properties.get("Type").and_then(YamlOwned::as_str) != Some("HttpApi") {
                continue;
            }
            let field = |key: &str| {
                properties
                    .get("Properties")
                    .get(key)
                    .and_then(YamlOwned::as_str)
                    .unwrap_or_else(|| panic!("{name}'s event {event} has no {key}"))
                    .to_string()
            };
            out.insert((function.to_lowercase(), field("Method"), field("Path")));
        }
    }
    out
}

/// The keys of an OpenAPI path item that are operations: beside them it may hold `parameters`,
/// `summary`...
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The operations of the OpenAPI document, with the function its `x-snapwake-function` names.
fn from_openapi() -> Declared {
    let openapi = yaml("infra/openapi.yaml");
    let mut out = Declared::new();
    for (path, operations) in entries(openapi.as_mapping_get("paths")) {
        for (method, operation) in entries(Some(operations)) {
            if !METHODS.contains(&method) {
                continue;
            }
            let function = operation
                .get("x-snapwake-function")
                .and_then(YamlOwned::as_str)
                .unwrap_or_else(|| panic!("{method} {path} has no x-snapwake-function"));
            out.insert((
                function.to_string(),
                method.to_uppercase(),
                path.to_string(),
            ));
        }
    }
    out
}

fn differences(a_name: &str, a: &Declared, b_name: &str, b: &Declared) -> Vec<String> {
    let mut out: Vec<String> = a
        .difference(b)
        .map(|r| format!("{r:?} is in {a_name}, not in {b_name}"))
        .collect();
    out.extend(
        b.difference(a)
            .map(|r| format!("{r:?} is in {b_name}, not in {a_name}")),
    );
    out
}

#[test]
fn template_handlers_and_api_description_declare_the_same_routes() {
    let handlers = from_handlers();
    assert_eq!(handlers.len(), 16, "the handlers serve sixteen routes");
    let mut wrong = differences("the handlers", &handlers, "the template", &from_template());
    wrong.extend(differences(
        "the handlers",
        &handlers,
        "the OpenAPI document",
        &from_openapi(),
    ));
    assert!(wrong.is_empty(), "routes disagree:\n{}", wrong.join("\n"));
}

#[test]
fn the_readers_see_a_route_missing_from_one_of_them() {
    // The check itself: a template without the sleep route is caught.
    let handlers = from_handlers();
    let mut template = from_template();
    template.retain(|(_, _, path)| !path.ends_with("/sleep"));
    let wrong = differences("the handlers", &handlers, "the template", &template);
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert!(wrong[0].contains("/sleep"));
}

#[test]
fn every_problem_code_the_code_answers_is_described() {
    // The codes an error answers, read from its source (`Error::code`): each `=> (status, "CODE")`.
    let source = read("shared/src/error.rs");
    let source = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut codes = BTreeSet::new();
    for (at, _) in source.match_indices("=> (") {
        let rest = &source[at..];
        if let Some(start) = rest.find('"') {
            let code: String = rest[start + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            codes.insert(code);
        }
    }
    assert!(codes.len() >= 15, "{codes:?}");
    let openapi = read("infra/openapi.yaml");
    let missing: Vec<&String> = codes
        .iter()
        .filter(|c| !openapi.contains(&format!("- {c}\n")))
        .collect();
    assert!(
        missing.is_empty(),
        "codes not in the Problem schema: {missing:?}"
    );
}
