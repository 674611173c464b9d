//! Verified claims, normalised from whichever authorizer API Gateway ran: a JWT authorizer's
//! are all strings (an array flattened into `"[a b]"`), a Lambda authorizer's any JSON. Scalars
//! become text, arrays lists of text, and `null` or objects are dropped (they identify nobody).

use std::collections::BTreeMap;

use lambda_http::aws_lambda_events::apigw::ApiGatewayRequestAuthorizer;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimValue {
    Text(String),
    /// An array claim (Lambda authorizer only: JWT arrays arrive flattened into [`Self::Text`]).
    List(Vec<String>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    values: BTreeMap<String, ClaimValue>,
}

impl Claims {
    /// The JWT authorizer's claims when present, else the Lambda authorizer's context. An IAM
    /// authorizer identifies no person, so it yields no claims.
    pub fn from_authorizer(authorizer: &ApiGatewayRequestAuthorizer) -> Claims {
        match &authorizer.jwt {
            Some(jwt) if !jwt.claims.is_empty() => Claims::from_jwt(
                jwt.claims
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.as_str())),
            ),
            _ => Claims::from_lambda(
                authorizer
                    .fields
                    .iter()
                    .map(|(name, value)| (name.as_str(), value)),
            ),
        }
    }

    pub fn from_jwt<'a>(claims: impl IntoIterator<Item = (&'a str, &'a str)>) -> Claims {
        let values = claims
            .into_iter()
            .map(|(name, value)| (name.to_string(), ClaimValue::Text(value.to_string())))
            .collect();
        Claims { values }
    }

    pub fn from_lambda<'a>(fields: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Claims {
        let values = fields
            .into_iter()
            .filter_map(|(name, value)| {
                let value = match value {
                    Value::Array(items) => {
                        ClaimValue::List(items.iter().filter_map(scalar_text).collect())
                    }
                    other => ClaimValue::Text(scalar_text(other)?),
                };
                Some((name.to_string(), value))
            })
            .collect();
        Claims { values }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&ClaimValue> {
        self.values.get(name)
    }

    /// A scalar claim, blank counting as absent. Not trimmed: an owner id compares byte for byte.
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.values.get(name)? {
            ClaimValue::Text(t) if !t.trim().is_empty() => Some(t),
            _ => None,
        }
    }

    /// Every value of a claim: a scalar is one value, an array each of its items.
    pub fn values(&self, name: &str) -> Vec<&str> {
        match self.values.get(name) {
            Some(ClaimValue::Text(t)) => vec![t.as_str()],
            Some(ClaimValue::List(items)) => items.iter().map(String::as_str).collect(),
            None => Vec::new(),
        }
    }

    /// A group-like claim as a list of names ([`parse_group_list`]).
    pub fn groups(&self, name: &str) -> Vec<String> {
        match self.values.get(name) {
            Some(ClaimValue::Text(t)) => parse_group_list(t),
            Some(ClaimValue::List(items)) => items
                .iter()
                .map(|g| g.trim())
                .filter(|g| !g.is_empty())
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        }
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// The group names in a group claim that arrived as a string: API Gateway's flattened array
/// `[admins devs]`, a stringified JSON array `["admins","devs"]`, or a comma list. Inside
/// brackets commas and whitespace separate names, outside only commas, so a plain single value
/// is taken whole.
pub fn parse_group_list(raw: &str) -> Vec<String> {
    let trimmed = raw.trim();
    let names: Vec<&str> = match trimmed
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        Some(inner) => {
            if let Ok(items) = serde_json::from_str::<Vec<Value>>(trimmed) {
                return items
                    .iter()
                    .filter_map(scalar_text)
                    .map(|g| g.trim().to_string())
                    .filter(|g| !g.is_empty())
                    .collect();
            }
            inner
                .split(|c: char| c == ',' || c.is_whitespace())
                .collect()
        }
        None => trimmed.split(',').collect(),
    };
    names
        .into_iter()
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect()
}
