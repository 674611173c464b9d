//! The API description, `infra/openapi.yaml`, served as JSON at `/v1/openapi.json`: clients
//! and the conformance run (scripts/conformance.sh) read it from the server they talk to.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use saphyr::{LoadableYamlNode, Scalar, Yaml};
use serde_json::{Map, Number, Value};

/// The description, compiled in: the server always serves the one it was built with.
const OPENAPI_YAML: &str = include_str!("../../../infra/openapi.yaml");

/// Why the description is not JSON.
#[derive(Debug, thiserror::Error)]
pub enum DescriptionError {
    #[error("YAML: {0}")]
    Yaml(#[from] saphyr::ScanError),
    #[error("not JSON: {0}")]
    NotJson(String),
}

/// The description as JSON.
pub fn openapi() -> Result<Value, DescriptionError> {
    yaml_to_json(OPENAPI_YAML)
}

/// A one-document YAML text as JSON, the value serde_yaml (deprecated, which served it before)
/// gave: the YAML 1.2 core schema's scalars, mappings with string keys. Where the two part, the
/// description has nothing: `0123` is a number here (a string there), `0b101` a string (a
/// number), an integer past i64 a float, and a key given twice an error (the last one won).
fn yaml_to_json(text: &str) -> Result<Value, DescriptionError> {
    match Yaml::load_from_str(text)?.as_slice() {
        [document] => node_to_json(document),
        documents => Err(DescriptionError::NotJson(format!(
            "{} YAML documents, not one",
            documents.len()
        ))),
    }
}

fn node_to_json(node: &Yaml) -> Result<Value, DescriptionError> {
    Ok(match node {
        Yaml::Value(scalar) => scalar_to_json(scalar),
        Yaml::Sequence(items) => {
            Value::Array(items.iter().map(node_to_json).collect::<Result<_, _>>()?)
        }
        Yaml::Mapping(entries) => {
            let mut object = Map::new();
            for (key, value) in entries {
                object.insert(key_to_json(key)?, node_to_json(value)?);
            }
            Value::Object(object)
        }
        // A tag (`!Ref x`) has no JSON form; serde_yaml refused them too. The loader resolves
        // aliases and parses every scalar, so neither of the last two is left.
        Yaml::Tagged(tag, _) => return Err(DescriptionError::NotJson(format!("the tag {tag}"))),
        Yaml::Representation(..) | Yaml::Alias(_) | Yaml::BadValue => {
            return Err(DescriptionError::NotJson(format!("{node:?}")))
        }
    })
}

fn scalar_to_json(scalar: &Scalar) -> Value {
    match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::from(*i),
        // JSON has no NaN nor infinities: null, as serde_json gave for serde_yaml's `.nan`.
        Scalar::FloatingPoint(f) => {
            Number::from_f64(f.into_inner()).map_or(Value::Null, Value::Number)
        }
        Scalar::String(s) => Value::String(s.to_string()),
    }
}

/// A key as JSON has it, a string: an integer's digits (an unquoted status code, `200:`), as
/// serde_yaml read it; any other key that is not a string is refused.
fn key_to_json(key: &Yaml) -> Result<String, DescriptionError> {
    match key {
        Yaml::Value(Scalar::String(s)) => Ok(s.to_string()),
        Yaml::Value(Scalar::Integer(i)) => Ok(i.to_string()),
        other => Err(DescriptionError::NotJson(format!("the key {other:?}"))),
    }
}

/// `GET /v1/openapi.json`.
pub async fn serve() -> Response {
    match openapi() {
        Ok(json) => (
            [(header::CONTENT_TYPE, "application/json")],
            json.to_string(),
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "the compiled-in API description does not parse");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{openapi, yaml_to_json};

    #[test]
    fn the_description_is_openapi_3_1_with_every_path() {
        let json = openapi().expect("infra/openapi.yaml parses");
        assert_eq!(json["openapi"], "3.1.0");
        let paths = json["paths"].as_object().expect("paths");
        assert!(paths.contains_key("/v1/agents/{kind}/{agent_id}/keepalive"));
        assert!(paths.contains_key("/v1/agents/{kind}/{agent_id}/schedule"));
        assert!(paths.contains_key("/v1/agents/{kind}/{agent_id}/activity"));
        assert!(paths.contains_key("/v1/agents/{kind}/{agent_id}/idle"));
        assert!(paths.contains_key("/v1/usage"));
        assert_eq!(paths.len(), 11);
    }

    #[test]
    fn the_description_keeps_the_types_serde_yaml_gave() {
        // Values of infra/openapi.yaml whose JSON type a reader could get wrong: versions that
        // look like numbers, quoted status codes, numbers, booleans, empty lists, null in a
        // type list, folded text (`>-`: no final newline).
        let json = openapi().expect("infra/openapi.yaml parses");
        assert_eq!(json["info"]["version"], json!("1"));
        assert!(json["info"]["description"].as_str().is_some_and(|d| d
            .starts_with("A person's agents, awake and asleep; create,")
            && d.ends_with("explains the semantics.")));
        assert_eq!(
            json["security"],
            json!([{ "jwt": [] }, { "localUser": [] }])
        );
        let list = &json["paths"]["/v1/agents"]["get"];
        assert_eq!(list["x-snapwake-function"], "list");
        assert_eq!(
            list["responses"]["200"]["content"]["application/json"]["schema"],
            json!({ "$ref": "#/components/schemas/Listing" })
        );
        let limit = list["parameters"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == "limit"))
            .expect("the limit parameter");
        assert_eq!(
            limit["schema"],
            json!({ "type": "integer", "minimum": 1, "maximum": 100, "default": 50 })
        );
        assert_eq!(
            json["paths"]["/v1/agents"]["post"]["requestBody"]["required"],
            true
        );
        let problem = &json["components"]["schemas"]["Problem"]["properties"]["status"];
        assert_eq!(
            problem,
            &json!({ "type": "integer", "minimum": 400, "maximum": 599 })
        );
    }

    #[test]
    fn yaml_becomes_the_json_serde_yaml_made_of_it() {
        // The expected values are serde_yaml 0.9.34's (serde_yaml::from_str::<serde_json::Value>),
        // which served the description before saphyr.
        let yaml = r##"
plain: text
quoted: "200"
single: 'it''s'
int: 42
negative: -7
plus: +3
hex: 0x1F
octal: 0o17
float: 1.5
exp: 6.02e23
inf: .inf
nan: .nan
t: true
f: False
n: null
tilde: ~
empty:
notinf: inf
underscored: 1_000
"200": { description: OK }
201: created
list: [a, 1, 2.0, true, ~]
nested:
  - x: 1
    y: [ ]
  - {}
folded: >
  one
  two
literal: |
  line one
  line two
anchor: &a { k: v }
alias: *a
pattern: ^[a-z0-9-]{1,64}$
ref: { $ref: "#/components/schemas/X" }
date: 2024-01-01
version: 3.1.0
"##;
        let expected = json!({
            "200": { "description": "OK" },
            "201": "created",
            "alias": { "k": "v" },
            "anchor": { "k": "v" },
            "date": "2024-01-01",
            "empty": null,
            "exp": 6.02e23,
            "f": false,
            "float": 1.5,
            "folded": "one two\n",
            "hex": 31,
            "inf": null,
            "int": 42,
            "list": ["a", 1, 2.0, true, null],
            "literal": "line one\nline two\n",
            "n": null,
            "nan": null,
            "negative": -7,
            "nested": [{ "x": 1, "y": [] }, {}],
            "notinf": "inf",
            "octal": 15,
            "pattern": "^[a-z0-9-]{1,64}$",
            "plain": "text",
            "plus": 3,
            "quoted": "200",
            "ref": { "$ref": "#/components/schemas/X" },
            "single": "it's",
            "t": true,
            "tilde": null,
            "underscored": "1_000",
            "version": "3.1.0"
        });
        assert_eq!(yaml_to_json(yaml).expect("parses"), expected);
    }

    #[test]
    fn what_json_cannot_hold_is_refused_not_dropped() {
        // serde_yaml refused these too: a tag, a key that is not a scalar, two documents. A key
        // given twice it took the last of, which hid a mistake.
        for yaml in ["a: !Ref x", "? [a]\n: b", "a: 1\n---\nb: 2", "a: 1\na: 2"] {
            assert!(yaml_to_json(yaml).is_err(), "{yaml:?}");
        }
    }
}
