"""Every problem snapwake can answer is its own exception, carrying `code`, `retryable` and
`retry_after`; API Gateway's own answers are told apart from snapwake's."""

from __future__ import annotations

import json
import typing

import pytest
import yaml

from snapwake import (
    PROBLEMS,
    AgentGone,
    AgentNotFound,
    Client,
    GatewayError,
    InvalidRequest,
    MethodNotAllowed,
    NotAwake,
    NotSleepable,
    NotWakeable,
    PayloadTooLarge,
    PreconditionFailed,
    Problem,
    ProblemCode,
    ProviderThrottled,
    RouteNotFound,
    SnapwakeError,
    Unauthenticated,
)
from snapwake.errors import error_from

from .serving import ROOT, SCRATCH_HERMES, Serve


def openapi_codes() -> list[str]:
    description = yaml.safe_load((ROOT / "infra" / "openapi.yaml").read_text())
    return list(description["components"]["schemas"]["ProblemCode"]["enum"])


def test_every_code_of_the_api_has_its_own_class() -> None:
    codes = openapi_codes()
    assert sorted(PROBLEMS) == sorted(codes)
    assert sorted(typing.get_args(ProblemCode)) == sorted(codes)
    assert len(set(PROBLEMS.values())) == len(codes), "one class per code"


@pytest.mark.parametrize("code", openapi_codes())
def test_each_code_maps_to_its_exception(code: str) -> None:
    body = {
        "type": f"urn:snapwake:problem:{code.lower().replace('_', '-')}",
        "title": "t",
        "status": 409,
        "detail": "what happened",
        "code": code,
        "retryable": code == "AGENT_BUSY",
        "request_id": "r-1",
    }
    error = error_from(409, {"retry-after": "3"}, json.dumps(body).encode())
    assert type(error) is PROBLEMS[code]  # type: ignore[index]
    assert isinstance(error, Problem)
    assert (error.code, error.status, error.retryable, error.retry_after) == (
        code,
        409,
        code == "AGENT_BUSY",
        3.0,
    )
    assert error.request_id == "r-1"


def test_a_code_this_client_does_not_know_is_still_a_problem() -> None:
    body = {"title": "t", "status": 418, "detail": "d", "code": "NEW_CODE", "retryable": True}
    error = error_from(418, {}, json.dumps(body).encode())
    assert type(error) is Problem
    assert (error.code, error.retryable, error.retry_after) == ("NEW_CODE", True, None)


def test_api_gateways_own_answers_are_named_as_such() -> None:
    refused = error_from(401, {}, b'{"message":"Unauthorized"}')
    assert isinstance(refused, Unauthenticated) and not refused.retryable
    throttled = error_from(429, {"retry-after": "2"}, b'{"message":"Too Many Requests"}')
    assert isinstance(throttled, GatewayError)
    assert (throttled.retryable, throttled.retry_after) == (True, 2.0)
    failed = error_from(500, {}, b'{"message":"Internal Server Error"}')
    assert isinstance(failed, GatewayError) and not failed.retryable
    neither = error_from(502, {}, b"<html>bad gateway</html>")
    assert isinstance(neither, GatewayError) and neither.status == 502


def test_retry_after_as_an_http_date_and_capped_at_a_minute() -> None:
    later = error_from(503, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, b"{}")
    assert later.retry_after == 0.0  # in the past
    long = error_from(503, {"retry-after": "3600"}, b"{}")
    assert long.retry_after == 60.0


def test_real_answers_of_snapwake_serve_raise_their_exceptions(serve: Serve) -> None:
    alice = Client(serve.url, user="alice")
    bob = Client(serve.url, user="bob")
    nobody = Client(serve.url)
    mine = alice.create("codex", "Errors", retention="recoverable")
    agent_id = mine["agent_id"]
    alice.wake("codex", agent_id)

    def raised(call: typing.Callable[[], object]) -> SnapwakeError:
        try:
            answer = call()
        except SnapwakeError as error:
            return error
        raise AssertionError(f"no error but {answer!r}")

    cases: list[tuple[type[SnapwakeError], typing.Callable[[], object]]] = [
        (Unauthenticated, lambda: nobody.capabilities()),
        (AgentNotFound, lambda: bob.wake("codex", agent_id)),
        (RouteNotFound, lambda: alice.request("GET", "/v1/nothing-here")),
        (MethodNotAllowed, lambda: alice.request("PATCH", "/v1/agents")),
        (InvalidRequest, lambda: alice.create("codex", "   ")),
        (InvalidRequest, lambda: alice.keepalive("codex", agent_id, 5)),
        (NotSleepable, lambda: alice.sleep("hermes", SCRATCH_HERMES)),
        (PreconditionFailed, lambda: alice.delete("codex", agent_id, if_match='"999999"')),
        (PayloadTooLarge, lambda: alice.request("POST", "/v1/agents", json={"x": "y" * 20_000})),
    ]
    for expected, call in cases:
        error = raised(call)
        assert type(error) is expected, (expected, error)
        assert isinstance(error, Problem) and error.code == expected.code
        assert not error.retryable

    zone = raised(lambda: alice.set_schedule("codex", agent_id, timezone="Mars/Olympus"))
    assert isinstance(zone, InvalidRequest) and zone.field == "timezone"

    alice.sleep("codex", agent_id)
    assert type(raised(lambda: alice.keepalive("codex", agent_id, 600))) is NotAwake
    nameless = raised(lambda: alice.wake("codex", agent_id, snapshot_id="no-such-snapshot"))
    assert type(nameless) is NotWakeable and nameless.status == 422
    assert alice.get_schedule("codex", agent_id) is None

    alice.delete("codex", agent_id)
    gone = raised(lambda: alice.wake("codex", agent_id))
    assert type(gone) is AgentGone and gone.status == 410


def test_a_throttled_wake_is_asked_again_until_its_deadline_then_says_so(serve: Serve) -> None:
    with Client(serve.url, user="carol") as carol:
        agent = carol.create("openclaw", "Throttled", retention="recoverable")
        carol.sleep("openclaw", agent["agent_id"])
        resumes = serve.resumes()
        serve.fault(
            {
                "action": "ResumeSessionFromSnapshot",
                "error": {"code": "Throttling", "status": 429, "retry_after": 1},
                "trigger": "always",
            }
        )
        with pytest.raises(ProviderThrottled) as throttled:
            carol.wake("openclaw", agent["agent_id"], timeout=4.0)
    assert throttled.value.retryable and throttled.value.retry_after is not None
    # Asked again after each Retry-After, not at once: a handful of attempts in 4 s.
    assert 2 <= serve.resumes() - resumes <= 6
