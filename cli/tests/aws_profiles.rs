//! The CLI reads an operator's AWS profile as the AWS CLI does, `credential_process` included
//! (the functions leave it out; docs/deploy.md, step 4). Run against DynamoDB Local
//! (`AWS_ENDPOINT_URL`), which takes any credentials but needs some: without credentials the
//! SDK refuses to sign and the command fails.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_snapwake");

/// `snapwake table create` with no AWS keys in the environment, only `AWS_CONFIG_FILE`'s
/// profile `ops` (and an empty credentials file).
fn table_create_with_profile(dir: &Path, config: &str, table: &str) -> Output {
    assert!(
        std::env::var("AWS_ENDPOINT_URL").is_ok(),
        "AWS_ENDPOINT_URL must name DynamoDB Local (scripts/start-dynamodb-local.sh)"
    );
    let config_file = dir.join("config");
    std::fs::write(&config_file, config).expect("write the AWS config file");
    let credentials_file = dir.join("credentials");
    std::fs::write(&credentials_file, "").expect("write the credentials file");
    let mut command = Command::new(BIN);
    command.args(["table", "create", "--table", table]);
    for name in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "SNAPWAKE_TABLE",
    ] {
        command.env_remove(name);
    }
    command
        .env("AWS_CONFIG_FILE", &config_file)
        .env("AWS_SHARED_CREDENTIALS_FILE", &credentials_file)
        .env("AWS_PROFILE", "ops")
        // No instance metadata here: do not wait for it.
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .expect("run snapwake table create")
}

fn table_name(what: &str) -> String {
    format!("cli-profile-{what}-{}", uuid::Uuid::new_v4().simple())
}

/// A fresh directory for one test's AWS files.
fn scratch_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("snapwake-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("make a scratch directory");
    dir
}

#[test]
fn a_credential_process_profile_signs_the_cli_s_requests() {
    let dir = scratch_dir();
    let marker = dir.join("process-ran");
    let config = format!(
        "[profile ops]\nregion = us-east-1\ncredential_process = sh -c 'touch {} && echo \
         {{\\\"Version\\\":1,\\\"AccessKeyId\\\":\\\"local\\\",\\\"SecretAccessKey\\\":\\\"local\\\"}}'\n",
        marker.display()
    );
    let table = table_name("process");
    let out = table_create_with_profile(&dir, &config, &table);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "table create with a credential_process profile failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("table {table} is ready")),
        "{stdout}"
    );
    assert!(
        marker.exists(),
        "the profile's credential_process never ran"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_profile_without_credentials_fails_the_command_clearly() {
    let dir = scratch_dir();
    let table = table_name("none");
    let out = table_create_with_profile(&dir, "[profile ops]\nregion = us-east-1\n", &table);
    let stderr = String::from_utf8_lossy(&out.stderr);
    std::fs::remove_dir_all(&dir).ok();
    assert!(!out.status.success(), "it succeeded without credentials");
    assert!(
        stderr.contains(&format!("cannot create table {table}")),
        "{stderr}"
    );
}
