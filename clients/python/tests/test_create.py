"""A create is made once however often it is repeated: an Idempotency-Key made once per call
(or given) and sent with every attempt."""

from __future__ import annotations

import httpx
import pytest

from snapwake import Client, InvalidRequest

from .serving import Serve


class LosesFirstAnswer(httpx.HTTPTransport):
    """Delivers each request, but loses the answer to the first create: snapwake made the
    agent, the caller never heard."""

    def __init__(self) -> None:
        super().__init__()
        self.lost = 0
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and request.url.path == "/v1/agents":
            self.keys.append(request.headers.get("Idempotency-Key"))
            if not self.lost:
                response.read()
                response.close()
                self.lost += 1
                raise httpx.ReadError("the connection dropped before the answer")
        return response


def test_a_create_retried_after_a_lost_answer_creates_one_agent(serve: Serve) -> None:
    transport = LosesFirstAnswer()
    sessions = serve.received("CreateSession")
    with Client(serve.url, user="erin", transport=transport) as erin:
        agent = erin.create("codex", "Said once", retention="recoverable")
        assert transport.lost == 1
        assert len(transport.keys) == 2 and transport.keys[0] == transport.keys[1]
        named = [a for a in erin.list() if a["display_name"] == "Said once"]
    assert [a["agent_id"] for a in named] == [agent["agent_id"]]
    assert serve.received("CreateSession") - sessions == 1


def test_a_key_given_by_the_caller_makes_a_second_process_create_nothing_new(serve: Serve) -> None:
    with Client(serve.url, user="erin") as first, Client(serve.url, user="erin") as second:
        one = first.create("hermes", "Restarted", idempotency_key="erin-restarted-1")
        again = second.create("hermes", "Restarted", idempotency_key="erin-restarted-1")
        assert again["agent_id"] == one["agent_id"]
        with pytest.raises(InvalidRequest) as other_body:
            second.create("hermes", "Another name", idempotency_key="erin-restarted-1")
    assert other_body.value.status == 422
