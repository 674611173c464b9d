//! Which function makes each AWS call and, when asked, a record of every call: the evidence the
//! IAM check (`tests/tests/iam.rs`) holds against each function's policy (docs/security.md).
//! With `SNAPWAKE_AWS_CALLS=<dir>` set, the DynamoDB client and the SQS and EventBridge callers
//! write each distinct call once to `<dir>/calls-<pid>.jsonl`, on the wire: what is recorded is
//! what AWS would authorise, whichever store method or retry sent it.

pub mod dynamodb;

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

/// The variable that turns recording on: the directory the recordings go to.
pub const RECORD_VAR: &str = "SNAPWAKE_AWS_CALLS";

/// One AWS call as IAM sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AwsCall {
    /// The template's logical id of the function that made it; none outside every function.
    pub function: Option<String>,
    /// `dynamodb`, `sqs`, `events`.
    pub service: String,
    /// The API operation (`UpdateItem`); a transaction is recorded item by item, as IAM sees it.
    pub operation: String,
    /// What it addresses: `table` or `index/<name>` for DynamoDB; for the others, the
    /// environment variable the function was configured with (`env:SNAPWAKE_DUE_QUEUE_URL`).
    pub resource: String,
    /// The partition key the call leads with (`dynamodb:LeadingKeys`), when it has one.
    pub leading_key: Option<String>,
}

/// Where the calls of this process go, once opened; `None` when nobody records.
struct Recording {
    file: Mutex<File>,
    seen: Mutex<HashSet<AwsCall>>,
}

fn recording() -> Option<&'static Recording> {
    static RECORDING: OnceLock<Option<Recording>> = OnceLock::new();
    RECORDING
        .get_or_init(|| {
            let dir = PathBuf::from(std::env::var_os(RECORD_VAR)?);
            std::fs::create_dir_all(&dir).ok()?;
            let path = dir.join(format!("calls-{}.jsonl", std::process::id()));
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()?;
            Some(Recording {
                file: Mutex::new(file),
                seen: Mutex::new(HashSet::new()),
            })
        })
        .as_ref()
}

pub fn recording_on() -> bool {
    recording().is_some()
}

/// Record `call` once. Each line is written whole, so a process killed mid-test leaves the rest.
pub fn record(mut call: AwsCall) {
    let Some(recording) = recording() else {
        return;
    };
    if call.function.is_none() {
        call.function = crate::invocation::function().map(str::to_string);
    }
    let fresh = recording
        .seen
        .lock()
        .map(|mut seen| seen.insert(call.clone()))
        .unwrap_or(false);
    if !fresh {
        return;
    }
    if let (Ok(mut line), Ok(mut file)) = (serde_json::to_vec(&call), recording.file.lock()) {
        line.push(b'\n');
        let _ = file.write_all(&line);
    }
}
