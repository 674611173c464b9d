//! The routes are declared three times, for three readers: the handlers' `ROUTES` (what the
//! code serves), `infra/template.yaml` (what API Gateway sends to which function) and
//! `infra/openapi.yaml` (what clients are told). A route added to one and not the others fails
//! here.

use std::collections::BTreeSet;

use snapwake::http::request::Route;

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

/// The `HttpApi` events of each `<Name>Function` resource of the template. The template keeps
/// one shape for them (`Method:` then `Path:`, on one line or two), which is what this reads.
fn from_template() -> Declared {
    let text = read("infra/template.yaml");
    let mut out = Declared::new();
    let mut function: Option<String> = None;
    let mut method: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if line.starts_with("  ") && !line.starts_with("   ") && trimmed.ends_with("Function:") {
            function = Some(trimmed.trim_end_matches("Function:").to_lowercase());
            continue;
        }
        if !line.starts_with(' ') {
            function = None;
        }
        for part in trimmed
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .map(str::trim)
        {
            if let Some(m) = part.strip_prefix("Method:") {
                method = Some(m.trim().to_string());
            }
            if let Some(p) = part.strip_prefix("Path:") {
                let path = p.trim().trim_matches('"').to_string();
                if let (Some(f), Some(m)) = (&function, method.take()) {
                    out.insert((f.clone(), m, path));
                }
            }
        }
    }
    out
}

/// The operations of the OpenAPI document, with the function its `x-snapwake-function` names.
fn from_openapi() -> Declared {
    let text = read("infra/openapi.yaml");
    let mut out = Declared::new();
    let mut path: Option<String> = None;
    let mut method: Option<String> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if indent == 2 && trimmed.starts_with("/v1/") && trimmed.ends_with(':') {
            path = Some(trimmed.trim_end_matches(':').to_string());
            method = None;
        } else if indent == 0 && !trimmed.is_empty() {
            path = None;
        } else if indent == 4 && path.is_some() {
            let word = trimmed.trim_end_matches(':');
            if ["get", "post", "delete", "put", "patch"].contains(&word) {
                method = Some(word.to_uppercase());
            }
        } else if let Some(f) = trimmed.strip_prefix("x-snapwake-function:") {
            if let (Some(p), Some(m)) = (&path, &method) {
                out.insert((f.trim().to_string(), m.clone(), p.clone()));
            }
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
    assert_eq!(handlers.len(), 9, "the handlers serve nine routes");
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
    // The codes `http::problem` builds, read from its source: each `Problem::new(status, "CODE"`.
    let source = read("shared/src/http/problem.rs");
    let source = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut codes = BTreeSet::new();
    for (at, _) in source.match_indices("Problem::new(") {
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
