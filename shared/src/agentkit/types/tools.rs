//! The Tool actions, and the configuration a Tool is created with.

use serde::{Deserialize, Serialize};

use super::resources::{Action, Empty, EnvVar, Filter, Tool};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ListTools {
    pub project_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
    /// `[{Name: "Name", Values: [<exact name>]}]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<Filter>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListToolsResult {
    pub tools: Vec<Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

impl Action for ListTools {
    const NAME: &'static str = "ListTools";
    type Output = ListToolsResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct GetTool {
    pub tool_id: String,
}

impl Action for GetTool {
    const NAME: &'static str = "GetTool";
    type Output = Tool;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct KeyAuth {
    pub api_key_name: String,
    pub api_key_location: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct AuthorizerConfiguration {
    pub key_auth: KeyAuth,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct NetworkConfiguration {
    pub enable_public_network: bool,
    pub enable_private_network: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct CreateTool {
    pub name: String,
    pub tool_type: String,
    pub project_name: String,
    pub cpu_milli: u32,
    pub memory_mb: u32,
    pub enable_snapshot: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_agent_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorizer_configuration: Option<AuthorizerConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_configuration: Option<NetworkConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envs: Option<Vec<EnvVar>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CreateToolResult {
    pub tool_id: String,
}

impl Action for CreateTool {
    const NAME: &'static str = "CreateTool";
    const IDEMPOTENT: bool = false;
    type Output = CreateToolResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct UpdateTool {
    pub tool_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_snapshot: Option<bool>,
    /// The full list: it replaces the Tool's `Envs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envs: Option<Vec<EnvVar>>,
}

impl Action for UpdateTool {
    const NAME: &'static str = "UpdateTool";
    type Output = Empty;
}
