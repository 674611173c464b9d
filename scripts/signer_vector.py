"""Compute the Volcengine HMAC-SHA256 signer test vector with the official Python SDK.

Run once by hand (`pip install volcengine==1.0.229`, then `python scripts/signer_vector.py`);
its output is pasted into `shared/src/agentkit/signer.rs` tests. It is kept so anyone can
re-derive the vector independently of our Rust signer.
"""
import datetime
import json
from collections import OrderedDict

from volcengine.auth.SignerV4 import SignerV4
from volcengine.auth.SignParam import SignParam
from volcengine.Credentials import Credentials

CASES = [
    # (access key, secret key, session token, region, iso time, action, body)
    ("AKLTexampleAccessKey", "exampleSecretKey==", "", "cn-beijing",
     "2026-11-30T08:15:42", "ListSessions",
     '{"MaxResults":10,"ToolId":"t-abc123"}'),
    ("AKLTexampleAccessKey", "exampleSecretKey==", "STS-token-xyz", "cn-shanghai",
     "2026-01-02T03:04:05", "ResumeSessionFromSnapshot",
     '{"CreateNewInstance":false,"SnapshotId":"snap-1","ToolId":"t-1","Ttl":28800}'),
]

out = []
for ak, sk, token, region, when, action, body in CASES:
    p = SignParam()
    p.set_method("POST")
    p.set_host("open.volcengineapi.com")
    p.set_path("/")
    p.set_query(OrderedDict([("Action", action), ("Version", "2025-10-30")]))
    p.set_body(body)
    p.set_date(datetime.datetime.fromisoformat(when))
    p.set_header_list(OrderedDict([("Host", "open.volcengineapi.com"),
                                   ("Content-Type", "application/json")]))
    cred = Credentials(ak, sk, "agentkit", region, token)
    r = SignerV4.sign_only(p, cred)
    out.append({"ak": ak, "sk": sk, "token": token, "region": region, "x_date": r.xdate,
                "action": action, "body": body, "content_sha256": r.xContextSha256,
                "authorization": r.authorization})
print(json.dumps(out, indent=2))
