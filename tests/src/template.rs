//! `infra/template.yaml` as JSON, CloudFormation's short forms in their long forms (`!Ref X`
//! is `{"Ref": "X"}`, `!GetAtt T.Arn` is `{"Fn::GetAtt": ["T", "Arn"]}`, `!Sub s` is
//! `{"Fn::Sub": s}`), as CloudFormation reads it.

use saphyr::{LoadableYamlNode, Scalar, Yaml};
use serde_json::{json, Map, Value};

/// The template's path.
pub const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../infra/template.yaml");

/// The template, read from disk.
pub fn load() -> Value {
    let text = std::fs::read_to_string(PATH).expect("infra/template.yaml");
    parse(&text)
}

/// A template's text as JSON. Panics on YAML that is not a template.
pub fn parse(text: &str) -> Value {
    let documents = Yaml::load_from_str(text).expect("YAML");
    to_json(documents.first().expect("one YAML document"))
}

fn to_json(node: &Yaml) -> Value {
    match node {
        Yaml::Value(scalar) => scalar_json(scalar),
        Yaml::Representation(text, _, _) => Value::String(text.to_string()),
        Yaml::Sequence(items) => Value::Array(items.iter().map(to_json).collect()),
        Yaml::Mapping(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (text_of(k), to_json(v)))
                .collect::<Map<_, _>>(),
        ),
        Yaml::Tagged(tag, inner) => {
            let argument = to_json(inner);
            match tag.suffix.as_str() {
                "Ref" => json!({ "Ref": argument }),
                "GetAtt" => {
                    let argument = match argument {
                        Value::String(s) => {
                            let (resource, attribute) = s.split_once('.').unwrap_or((&s, ""));
                            json!([resource, attribute])
                        }
                        other => other,
                    };
                    json!({ "Fn::GetAtt": argument })
                }
                function => json!({ format!("Fn::{function}"): argument }),
            }
        }
        Yaml::Alias(_) | Yaml::BadValue => Value::Null,
    }
}

fn scalar_json(scalar: &Scalar) -> Value {
    match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => json!(i),
        Scalar::FloatingPoint(f) => json!(f.into_inner()),
        Scalar::String(s) => Value::String(s.to_string()),
    }
}

fn text_of(key: &Yaml) -> String {
    match to_json(key) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_become_long_forms() {
        let t = parse(
            "A: !Ref Table\nB: !GetAtt Table.Arn\nC: !Sub \"${Table.Arn}/index/x\"\n\
             D: !Join [\",\", !Ref L]\nE: [1, true]\n",
        );
        assert_eq!(t["A"], json!({"Ref": "Table"}));
        assert_eq!(t["B"], json!({"Fn::GetAtt": ["Table", "Arn"]}));
        assert_eq!(t["C"], json!({"Fn::Sub": "${Table.Arn}/index/x"}));
        assert_eq!(t["D"], json!({"Fn::Join": [",", {"Ref": "L"}]}));
        assert_eq!(t["E"], json!([1, true]));
    }
}
