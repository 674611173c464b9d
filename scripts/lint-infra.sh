#!/usr/bin/env bash
# Lint the AWS SAM template offline: translate it with aws-sam-translator (the transform SAM
# itself runs), then cfn-lint the template (SAM and CloudFormation rules). Both are pinned in
# infra/requirements.txt (with schemathesis, which scripts/conformance.sh runs) and installed
# into target/infra-venv on first use. Then what the template must keep for failed events
# (scripts/check_template.py: retry policies, dead-letter queues, on-failure destinations, their
# alarms, the offboarding sources, each function's IAM), and that check's self-test. Zero
# errors, or this fails.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/infra-venv
if [[ ! -x "$venv/bin/cfn-lint" ]] || ! cmp -s infra/requirements.txt "$venv/requirements.txt"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r infra/requirements.txt
  cp infra/requirements.txt "$venv/requirements.txt"
fi

# 1. The SAM transform, as `sam deploy` would run it: any error in the serverless resources
#    stops here with the translator's own message.
"$venv/bin/python" - <<'PY'
import sys
from samtranslator.public.exceptions import InvalidDocumentException

# The template with CloudFormation's short forms (!Ref, !GetAtt ...) as their long forms, and the
# transform as check_template.py runs it (a stand-in for each CodeUri that `sam package` uploads).
sys.dont_write_bytecode = True
sys.path.insert(0, "scripts")
from check_template import load_template, translate

try:
    out = translate(load_template("infra/template.yaml"))
except InvalidDocumentException as e:
    for cause in e.causes:
        print(f"sam-translator: {cause.message}", file=sys.stderr)
    sys.exit(1)
print(f"sam-translator: {len(out['Resources'])} CloudFormation resources")
PY

# 2. cfn-lint: CloudFormation and SAM rules; any error (or warning) fails.
"$venv/bin/cfn-lint" infra/template.yaml
echo "cfn-lint: infra/template.yaml clean"

# 3. What cfn-lint cannot see: every event source keeps its retry policy and dead-letter queue,
#    every queue its alarm (docs/operations.md, "Failed events: dead-letter queues and redrive"),
#    every function's role exactly the actions its code calls (docs/security.md, "What each
#    function may do"); then the check's self-test, which breaks a copy of the template each of
#    those ways.
"$venv/bin/python" scripts/check_template.py
"$venv/bin/python" scripts/check_template.py --self-test
