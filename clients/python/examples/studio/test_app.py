"""The reference Studio's flows through the example, end to end against `snapwake serve --demo`:
capabilities, the list of sessions and wakeable snapshots, create with retention, resume (one
wake however many clicks), delete a snapshot, and the reference's errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import snapwake
from fastapi.testclient import TestClient

from tests.serving import Serve

from .app import create_app

ALICE = {"X-Snapwake-User": "alice"}
BOB = {"X-Snapwake-User": "bob"}


@pytest.fixture(scope="module")
def studio(serve: Serve) -> Iterator[TestClient]:
    with TestClient(create_app(serve.url, local_identity=True)) as client:
        yield client


def error(response: httpx.Response) -> dict[str, object]:
    detail = response.json()["detail"]
    assert set(detail) == {"code", "message", "retryable"}, detail
    return detail


@pytest.mark.parametrize("prefix", ["/web/sandbox", "/web/openclaw", "/web/hermes"])
def test_capabilities_say_what_can_be_created(studio: TestClient, prefix: str) -> None:
    answer = studio.get(f"{prefix}/capabilities", headers=ALICE)
    assert answer.status_code == 200
    assert answer.json() == {
        "enabled": True,
        "reason": None,
        "defaultRetentionMode": "recoverable",
        "retentionModes": {
            "temporary": {"enabled": True, "reason": None},
            "recoverable": {"enabled": True, "reason": None},
        },
    }


def test_a_snapshot_is_listed_woken_once_and_then_a_session(
    studio: TestClient, serve: Serve
) -> None:
    listed = studio.get("/web/sandbox/sessions", headers=ALICE).json()
    wakeable = [s for s in listed["snapshots"] if s["displayName"] == "Data helper"]
    assert wakeable and all(s["status"] == "Wakeable" for s in wakeable)
    assert wakeable[0]["toolName"] == "veadk-studio-codex"
    assert wakeable[0]["snapshotStatus"] == "Ready"
    snapshot = wakeable[0]["snapshotId"]

    # Five clicks at once: one wake, one session for all.
    resumes = serve.resumes()
    with ThreadPoolExecutor(5) as clicks:
        answers = list(
            clicks.map(
                lambda _: studio.post(f"/web/sandbox/snapshots/{snapshot}/resume", headers=ALICE),
                range(5),
            )
        )
    assert [a.status_code for a in answers] == [200] * 5
    sessions = {a.json()["sessionId"] for a in answers}
    assert len(sessions) == 1
    assert serve.resumes() - resumes == 1
    session = answers[0].json()
    assert session["status"] == "Ready" and session["toolType"] == "CodeEnv"
    assert session["userSessionId"] == wakeable[0]["userSessionId"]
    assert "endpoint" not in json.dumps(session).lower()

    after = studio.get("/web/sandbox/sessions", headers=ALICE).json()
    assert session["sessionId"] in {s["sessionId"] for s in after["sessions"]}
    assert all("toolName" not in s for s in after["sessions"]), "the Codex list leaves it out"
    assert snapshot not in {s["snapshotId"] for s in after.get("snapshots", [])}


def test_create_with_the_retention_its_owner_chooses(studio: TestClient) -> None:
    made = studio.post(
        "/web/hermes/sessions",
        headers=BOB,
        json={"displayName": "Inbox helper", "retentionMode": "temporary"},
    )
    assert made.status_code == 200, made.text
    session = made.json()
    assert (session["displayName"], session["toolName"], session["toolType"]) == (
        "Inbox helper",
        "hermes",
        "HermesEnv",
    )
    listed = studio.get("/web/hermes/sessions", headers=BOB).json()
    assert session["sessionId"] in {s["sessionId"] for s in listed["sessions"]}

    unknown = studio.post("/web/hermes/sessions", headers=BOB, json={"retentionMode": "forever"})
    assert unknown.status_code == 422
    assert error(unknown)["code"] == "SANDBOX_INVALID_REQUEST"
    too_long = studio.post("/web/hermes/sessions", headers=BOB, json={"displayName": "x" * 41})
    assert too_long.status_code == 422
    assert error(too_long)["code"] == "SANDBOX_INVALID_REQUEST"


def test_a_studio_reports_its_users_activity_and_idle_sleep_counts_from_it(
    studio: TestClient, serve: Serve
) -> None:
    made = studio.post("/web/hermes/sessions", headers=ALICE, json={"displayName": "Busy"})
    assert made.status_code == 200, made.text
    agent_id = made.json()["userSessionId"]
    used = studio.post(f"/web/hermes/sessions/{agent_id}/activity", headers=ALICE)
    assert (used.status_code, used.json()) == (200, {"ok": True}), used.text
    # `serve --demo` runs idle sleep at 30 minutes: the agent goes to sleep 30 minutes after
    # its last use unless the Studio reports more.
    with snapwake.Client(serve.url, user="alice") as client:
        idle = client.get_idle("hermes", agent_id)
        assert (idle["deployment_minutes"], idle["effective_minutes"]) == (30, 30), idle
        assert idle["idle_sleep_at"] is not None, idle
        set_ = client.set_idle("hermes", agent_id, 0)
        assert (set_["minutes"], set_["idle_sleep_at"]) == (0, None), set_
    foreign = studio.post(f"/web/hermes/sessions/{agent_id}/activity", headers=BOB)
    assert foreign.status_code == 404, foreign.text


def test_delete_a_snapshot_and_a_foreign_one_is_not_found(studio: TestClient) -> None:
    listed = studio.get("/web/sandbox/sessions", headers=ALICE).json()
    snapshot = listed["snapshots"][0]["snapshotId"]

    foreign = studio.delete(f"/web/sandbox/snapshots/{snapshot}", headers=BOB)
    assert foreign.status_code == 404
    assert error(foreign) == {
        "code": "SANDBOX_SESSION_NOT_FOUND",
        "message": "snapshot not found",
        "retryable": False,
    }
    woken_by_bob = studio.post(f"/web/sandbox/snapshots/{snapshot}/resume", headers=BOB)
    assert woken_by_bob.status_code == 404

    deleted = studio.delete(f"/web/sandbox/snapshots/{snapshot}", headers=ALICE)
    assert (deleted.status_code, deleted.json()) == (200, {"deleted": True})
    again = studio.get("/web/sandbox/sessions", headers=ALICE).json()
    assert snapshot not in {s["snapshotId"] for s in again.get("snapshots", [])}
    assert (
        studio.post(f"/web/sandbox/snapshots/{snapshot}/resume", headers=ALICE).status_code == 404
    )


def test_routes_of_no_kind_and_callers_of_no_identity(studio: TestClient) -> None:
    assert studio.get("/web/codex/sessions", headers=ALICE).status_code == 404
    assert studio.get("/web/other/capabilities", headers=ALICE).status_code == 404
    assert error(studio.get("/web/sandbox/sessions"))["code"] == "SANDBOX_UNAUTHENTICATED"


def test_the_local_identity_header_is_ignored_unless_the_app_says_so(serve: Serve) -> None:
    with TestClient(create_app(serve.url, local_identity=False)) as deployed:
        answer = deployed.get("/web/sandbox/sessions", headers=ALICE)
    assert answer.status_code == 401
    assert error(answer)["code"] == "SANDBOX_UNAUTHENTICATED"


def test_a_page_retrying_its_create_with_one_key_creates_one_agent(studio: TestClient) -> None:
    ask = {**BOB, "Idempotency-Key": "page-create-1"}
    body = {"displayName": "Once", "retentionMode": "recoverable"}
    first = studio.post("/web/openclaw/sessions", headers=ask, json=body).json()
    again = studio.post("/web/openclaw/sessions", headers=ask, json=body).json()
    assert first["userSessionId"] == again["userSessionId"]
    listed = studio.get("/web/openclaw/sessions", headers=BOB).json()
    assert [s["displayName"] for s in listed["sessions"]].count("Once") == 1


def test_a_refused_token_is_401_a_missing_tool_503_and_a_failed_wake_502_retryable() -> None:
    def snapwake(request: httpx.Request) -> httpx.Response:
        problems = {
            "/v1/agents": (503, "NOT_CONFIGURED", False),
            "/v1/agents/codex/a1/resume": (502, "PROVIDER_ERROR", True),
        }
        if request.url.path == "/v1/capabilities":
            # API Gateway's authorizer refusing an expired token.
            return httpx.Response(401, json={"message": "Unauthorized"})
        if request.method == "GET":
            agent = {
                "kind": "codex",
                "agent_id": "a1",
                "display_name": "A",
                "retention": "recoverable",
                "state": "asleep",
                "session": None,
                "snapshots": [{"snapshot_id": "s1", "status": "Ready"}],
            }
            return httpx.Response(200, json={"agents": [agent], "truncated": False, "partial": []})
        status, code, retryable = problems[request.url.path]
        body = {
            "type": "urn:snapwake:problem:x",
            "title": "t",
            "status": status,
            "detail": "said snapwake",
            "code": code,
            "retryable": retryable,
        }
        return httpx.Response(status, json=body)

    app = create_app(
        "http://snapwake.test", local_identity=True, transport=httpx.MockTransport(snapwake)
    )
    with TestClient(app) as studio:
        expired = studio.get("/web/sandbox/capabilities", headers=ALICE)
        assert expired.status_code == 401
        assert error(expired)["code"] == "SANDBOX_UNAUTHENTICATED"
        made = studio.post("/web/sandbox/sessions", headers=ALICE)
        assert made.status_code == 503
        assert error(made)["code"] == "SANDBOX_NOT_CONFIGURED"
        woken = studio.post("/web/sandbox/snapshots/s1/resume", headers=ALICE)
        assert woken.status_code == 502
        assert error(woken)["code"] == "SANDBOX_PROVISIONING_FAILED"
        assert error(woken)["retryable"] is True


def test_a_failure_of_the_apps_own_is_the_references_500() -> None:
    def snapwake(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"unexpected": "shape"})  # no "agents"

    app = create_app(
        "http://snapwake.test", local_identity=True, transport=httpx.MockTransport(snapwake)
    )
    with TestClient(app, raise_server_exceptions=False) as studio:
        failed = studio.get("/web/sandbox/sessions", headers=ALICE)
    assert failed.status_code == 500
    assert error(failed) == {
        "code": "SANDBOX_INTERNAL_ERROR",
        "message": "the sandbox service failed",
        "retryable": False,
    }
