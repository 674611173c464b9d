//! The IAM check (docs/security.md, "What each function may do, proven by its calls"): every
//! AWS call a function made in the test suites, as `snapwake::aws_calls` recorded it, against
//! that function's policy in `infra/template.yaml`, conditions included.
//!
//! A call is allowed when one statement of its function's `Policies` allows its IAM action on
//! its resource and its condition holds for the call's partition key. The resource a call
//! addresses is resolved the way the deployed function finds it: through the environment
//! variable the template gives it (`SNAPWAKE_TABLE: !Ref Table`, so `table` is
//! `!GetAtt Table.Arn`, `index/by_owner` is `!Sub "${Table.Arn}/index/by_owner"`).
//!
//! A grant no recorded call uses is reported, unless Lambda itself uses it on the function's
//! role: an event source mapping polling its queue, or the Parameters and Secrets extension
//! reading the AgentKit credentials at a cold start that the function's `main.rs` asks for.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde_json::Value;
use snapwake::aws_calls::AwsCall;

/// What a statement's `Resource` names, as the template writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// `*`.
    Any,
    /// `!GetAtt X.Arn`: resource X.
    Arn(String),
    /// `!Sub "${X.Arn}/index/NAME"`: an index of table X.
    Index(String, String),
    /// `!Sub "arn:...:event-bus/${P}"`: the bus parameter P names.
    Bus(String),
    /// `!Ref X`: what parameter or resource X is.
    Ref(String),
    /// Anything else, as JSON: matches only itself.
    Other(String),
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Any => write!(f, "*"),
            Resource::Arn(x) => write!(f, "{x}"),
            Resource::Index(t, i) => write!(f, "{t}/index/{i}"),
            Resource::Bus(p) => write!(f, "the bus ${{{p}}}"),
            Resource::Ref(x) => write!(f, "!Ref {x}"),
            Resource::Other(x) => write!(f, "{x}"),
        }
    }
}

impl Resource {
    fn of(value: &Value) -> Resource {
        if value == "*" {
            return Resource::Any;
        }
        if let Some(x) = value["Ref"].as_str() {
            return Resource::Ref(x.into());
        }
        if let (Some(x), Some("Arn")) = (
            value["Fn::GetAtt"][0].as_str(),
            value["Fn::GetAtt"][1].as_str(),
        ) {
            return Resource::Arn(x.into());
        }
        if let Some(text) = value["Fn::Sub"].as_str() {
            if let Some((table, index)) = text
                .strip_prefix("${")
                .and_then(|t| t.split_once(".Arn}/index/"))
            {
                return Resource::Index(table.into(), index.into());
            }
            if let Some(p) = text
                .split_once(":event-bus/${")
                .and_then(|(_, p)| p.strip_suffix('}'))
            {
                return Resource::Bus(p.into());
            }
        }
        Resource::Other(value.to_string())
    }
}

/// A statement's condition, as far as the check can read one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    None,
    /// `ForAllValues:StringLike` (or `StringEquals`, `like: false`) on `dynamodb:LeadingKeys`.
    LeadingKeys {
        patterns: Vec<String>,
        like: bool,
    },
    /// Any other: it never holds here, so a call it guards is refused (and reported).
    Unreadable(String),
}

impl Condition {
    fn of(value: Option<&Value>) -> Condition {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Condition::None;
        };
        let read = |operator: &str, like: bool| {
            let tests = value.as_object()?;
            (tests.len() == 1).then_some(())?;
            let keys = tests.get(operator)?.as_object()?;
            (keys.len() == 1).then_some(())?;
            let patterns = keys.get("dynamodb:LeadingKeys")?;
            let patterns = match patterns {
                Value::String(s) => vec![s.clone()],
                Value::Array(a) => a
                    .iter()
                    .filter_map(|p| p.as_str().map(str::to_string))
                    .collect(),
                _ => return None,
            };
            Some(Condition::LeadingKeys { patterns, like })
        };
        read("ForAllValues:StringLike", true)
            .or_else(|| read("ForAllValues:StringEquals", false))
            .unwrap_or_else(|| Condition::Unreadable(value.to_string()))
    }

    /// Whether it holds for a call leading with `key`. `ForAllValues` over no key holds, as in
    /// IAM (a `Scan` has none).
    fn holds(&self, key: Option<&str>) -> bool {
        match self {
            Condition::None => true,
            Condition::Unreadable(_) => false,
            Condition::LeadingKeys { patterns, like } => key.is_none_or(|key| {
                patterns
                    .iter()
                    .any(|p| if *like { glob(p, key) } else { p == key })
            }),
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::None => Ok(()),
            Condition::LeadingKeys { patterns, .. } => {
                write!(f, " if dynamodb:LeadingKeys in [{}]", patterns.join(", "))
            }
            Condition::Unreadable(c) => write!(f, " if {c}"),
        }
    }
}

/// IAM's `StringLike`: `*` any run of characters, `?` any one.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// One action on one resource that one statement allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The statement's place in the function's policy (for the mutations).
    pub statement: usize,
    pub action: String,
    pub resource: Resource,
    pub condition: Condition,
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}{}", self.action, self.resource, self.condition)
    }
}

/// A function of the template: what its policy allows, and what it is configured with.
#[derive(Debug, Clone)]
pub struct Function {
    pub grants: Vec<Grant>,
    /// Its environment: the template's `Globals` and its own, its own winning.
    environment: serde_json::Map<String, Value>,
    /// The queues an event source mapping polls for it.
    polled: BTreeSet<String>,
    /// Whether its `main.rs` loads the AgentKit credentials at cold start.
    reads_credentials: bool,
}

/// Every function of the template.
#[derive(Debug, Clone)]
pub struct Policies {
    pub functions: BTreeMap<String, Function>,
    /// Each resource's `Type`, and the parameters (`Parameter`).
    kinds: BTreeMap<String, String>,
}

/// The crate directory of each function binary (`BuildProperties.Binary`).
const FUNCTIONS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../functions");

impl Policies {
    /// The policies of `template` (as [`crate::template`] reads it).
    pub fn of(template: &Value) -> Policies {
        let empty = serde_json::Map::new();
        let resources = template["Resources"].as_object().unwrap_or(&empty);
        let globals = template["Globals"]["Function"]["Environment"]["Variables"]
            .as_object()
            .unwrap_or(&empty);
        let mut kinds: BTreeMap<String, String> = resources
            .iter()
            .map(|(name, r)| (name.clone(), r["Type"].as_str().unwrap_or("").to_string()))
            .collect();
        for name in template["Parameters"].as_object().unwrap_or(&empty).keys() {
            kinds.insert(name.clone(), "Parameter".into());
        }
        let mut functions = BTreeMap::new();
        for (name, r) in resources {
            if r["Type"] != "AWS::Serverless::Function" {
                continue;
            }
            let props = &r["Properties"];
            let mut grants = Vec::new();
            let statements = props["Policies"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|p| listed(&p["Statement"]));
            for (i, statement) in statements.enumerate() {
                if statement["Effect"] != "Allow" {
                    continue;
                }
                let condition = Condition::of(statement.get("Condition"));
                for action in listed(&statement["Action"]) {
                    for resource in listed(&statement["Resource"]) {
                        grants.push(Grant {
                            statement: i,
                            action: action.as_str().unwrap_or_default().to_string(),
                            resource: Resource::of(resource),
                            condition: condition.clone(),
                        });
                    }
                }
            }
            let mut environment = globals.clone();
            for (k, v) in props["Environment"]["Variables"]
                .as_object()
                .unwrap_or(&empty)
            {
                environment.insert(k.clone(), v.clone());
            }
            let polled = resources
                .values()
                .filter(|m| m["Type"] == "AWS::Lambda::EventSourceMapping")
                .filter(|m| m["Properties"]["FunctionName"]["Ref"] == name.as_str())
                .filter_map(|m| match Resource::of(&m["Properties"]["EventSourceArn"]) {
                    Resource::Arn(q) => Some(q),
                    _ => None,
                })
                .collect();
            let binary = r["Metadata"]["BuildProperties"]["Binary"]
                .as_str()
                .unwrap_or_default();
            let main =
                std::fs::read_to_string(Path::new(FUNCTIONS_DIR).join(binary).join("src/main.rs"))
                    .unwrap_or_default();
            functions.insert(
                name.clone(),
                Function {
                    grants,
                    environment,
                    polled,
                    reads_credentials: main.contains("bootstrap::agentkit("),
                },
            );
        }
        Policies { functions, kinds }
    }

    /// The resource `call` addresses for `function`, resolved through its environment.
    fn resource_of(&self, function: &Function, call: &AwsCall) -> Option<Resource> {
        let named = |var: &str| {
            function.environment.get(var)?["Ref"]
                .as_str()
                .map(str::to_string)
        };
        if call.service == "dynamodb" {
            let table = named("SNAPWAKE_TABLE")?;
            return Some(match call.resource.strip_prefix("index/") {
                Some(index) => Resource::Index(table, index.into()),
                None => Resource::Arn(table),
            });
        }
        let target = named(call.resource.strip_prefix("env:")?)?;
        Some(match self.kinds.get(&target).map(String::as_str) {
            Some("Parameter") if call.service == "events" => Resource::Bus(target),
            Some("AWS::SQS::Queue") => Resource::Arn(target),
            _ => Resource::Ref(target),
        })
    }

    /// Why `call` is not allowed, or `None` when it is.
    pub fn refusal(&self, call: &AwsCall) -> Option<String> {
        let name = call.function.as_deref()?;
        let said = describe(call);
        let Some(function) = self.functions.get(name) else {
            return Some(format!(
                "{name}: not a function of the template, yet it made {said}"
            ));
        };
        let Some(resource) = self.resource_of(function, call) else {
            return Some(format!(
                "{name}: {said}, on a resource its environment does not name"
            ));
        };
        let action = iam_action(call);
        let allowed = function
            .grants
            .iter()
            .any(|g| allows(g, &action, &resource, call));
        (!allowed)
            .then(|| format!("{name}: its policy does not allow {said} ({action} on {resource})"))
    }

    /// Every refusal of `calls`, once each.
    pub fn refusals<'a>(&self, calls: impl IntoIterator<Item = &'a AwsCall>) -> BTreeSet<String> {
        calls.into_iter().filter_map(|c| self.refusal(c)).collect()
    }

    /// The grants of each function that none of `calls` uses and Lambda does not use either.
    pub fn unused(&self, calls: &[&AwsCall]) -> Vec<(String, Grant)> {
        let mut unused = Vec::new();
        for (name, function) in &self.functions {
            for grant in &function.grants {
                let used = calls.iter().any(|call| {
                    call.function.as_deref() == Some(name.as_str())
                        && self
                            .resource_of(function, call)
                            .is_some_and(|r| allows(grant, &iam_action(call), &r, call))
                });
                if !used && !function.used_by_lambda(grant) {
                    unused.push((name.clone(), grant.clone()));
                }
            }
        }
        unused
    }

    /// These policies with `function`'s grant of `action` on `resource` taken away.
    pub fn without(&self, function: &str, grant: &Grant) -> Policies {
        let mut mutated = self.clone();
        if let Some(f) = mutated.functions.get_mut(function) {
            f.grants.retain(|g| g != grant);
        }
        mutated
    }

    /// These policies with `pattern` taken from the `dynamodb:LeadingKeys` of `function`'s
    /// statement `statement`.
    pub fn narrowed(&self, function: &str, statement: usize, pattern: &str) -> Policies {
        let mut mutated = self.clone();
        if let Some(f) = mutated.functions.get_mut(function) {
            for g in f.grants.iter_mut().filter(|g| g.statement == statement) {
                if let Condition::LeadingKeys { patterns, .. } = &mut g.condition {
                    patterns.retain(|p| p != pattern);
                }
            }
        }
        mutated
    }
}

fn listed(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    }
}

/// Whether `grant` allows `action` on `resource` for `call`.
fn allows(grant: &Grant, action: &str, resource: &Resource, call: &AwsCall) -> bool {
    (grant.action == action || grant.action == "*" || grant.action == format!("{}:*", call.service))
        && (grant.resource == Resource::Any || grant.resource == *resource)
        && grant.condition.holds(call.leading_key.as_deref())
}

/// The IAM action that authorises `call`: its operation's own, except where a batch is
/// authorised as each of its entries' action.
pub fn iam_action(call: &AwsCall) -> String {
    let operation = match (call.service.as_str(), call.operation.as_str()) {
        ("sqs", "SendMessageBatch") => "SendMessage",
        ("sqs", "DeleteMessageBatch") => "DeleteMessage",
        ("sqs", "ChangeMessageVisibilityBatch") => "ChangeMessageVisibility",
        (_, operation) => operation,
    };
    format!("{}:{operation}", call.service)
}

impl Function {
    /// Whether Lambda, not the code, uses `grant` on this function's role.
    pub fn used_by_lambda(&self, grant: &Grant) -> bool {
        const POLLING: [&str; 4] = [
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:ChangeMessageVisibility",
            "sqs:GetQueueAttributes",
        ];
        match (&grant.resource, grant.action.as_str()) {
            (Resource::Arn(queue), action) if POLLING.contains(&action) => {
                self.polled.contains(queue)
            }
            // One secret named by reference, not every secret (`*`).
            (Resource::Ref(_), "secretsmanager:GetSecretValue") => self.reads_credentials,
            _ => false,
        }
    }
}

fn describe(call: &AwsCall) -> String {
    let mut said = format!("{} {} on {}", call.service, call.operation, call.resource);
    if let Some(key) = &call.leading_key {
        said.push_str(" with key ");
        said.push_str(key);
    }
    said
}

/// The calls recorded under `dir` (each `*.jsonl` a process wrote), distinct; and how many
/// lines could not be read (a process killed mid-line).
pub fn recorded(dir: &Path) -> (Vec<AwsCall>, usize) {
    let mut calls = std::collections::HashSet::new();
    let mut unreadable = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
            match serde_json::from_str::<AwsCall>(line) {
                Ok(call) => {
                    calls.insert(call);
                }
                Err(_) => unreadable += 1,
            }
        }
    }
    (calls.into_iter().collect(), unreadable)
}
