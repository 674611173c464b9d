"""Usage through the client, against `snapwake serve`: a new agent's awake time and create
counted (serve's relay derives usage from the table's change stream every 250 ms), by day and
by agent, the same in CSV as in JSON, and its errors typed."""

from __future__ import annotations

import csv
import io
import time
from datetime import date

import pytest

from snapwake import AgentNotFound, AsyncClient, Client, InvalidRequest, NotFound
from snapwake.schema import Usage, UsageRow

from .serving import Serve

#: How long the relay may take to count a change (it polls every 250 ms).
RELAY_S = 10.0


def counted(report: Usage) -> UsageRow | None:
    """Today's row (the report's last day) once it shows the agent awake and its create."""
    today = [row for row in report["rows"] if row.get("day") == report["to"]]
    assert len(today) == 1, report
    row = today[0]
    return row if row["awake_s"]["total"] > 0 and row["creates"] + row["wakes"] >= 1 else None


def agent_row(report: Usage, agent_id: str) -> UsageRow:
    rows = [row for row in report["rows"] if row.get("agent_id") == agent_id]
    assert len(rows) == 1, report
    return rows[0]


def test_a_new_agents_usage_by_day_by_agent_and_as_csv(serve: Serve) -> None:
    with Client(serve.url, user="erin") as erin:
        agent_id = erin.create("hermes", "Counted", retention="recoverable")["agent_id"]
        deadline = time.monotonic() + RELAY_S
        while (today := counted(report := erin.usage())) is None:
            assert time.monotonic() < deadline, f"not counted in {RELAY_S} s: {report}"
            time.sleep(0.25)
        assert report["by"] == "day" and report["owner"] == "erin"
        assert len(report["rows"]) == 7, "the last 7 days by default, today included"
        assert report["total"]["creates"] == today["creates"] >= 1

        # One day, as a date or as a string: the same row.
        day = date.fromisoformat(report["to"])
        one = erin.usage(from_=day, to=report["to"])
        assert (one["from"], one["to"], len(one["rows"])) == (report["to"], report["to"], 1)
        assert one["rows"][0]["creates"] == today["creates"]

        by_agent = erin.usage(by="agent")
        row = agent_row(by_agent, agent_id)
        assert (by_agent["by"], row.get("kind"), row.get("owner")) == ("agent", "hermes", "erin")
        assert row["awake_s"]["total"] > 0 and row["creates"] == 1

        # CSV: the same rows. Its awake time is read between two JSON reads: still open, it
        # grows between them.
        before = agent_row(erin.usage(by="agent"), agent_id)
        text = erin.usage_csv(by="agent")
        after = agent_row(erin.usage(by="agent"), agent_id)
        lines = list(csv.DictReader(io.StringIO(text)))
        assert [line["agent_id"] for line in lines] == [agent_id], text
        line = lines[0]
        assert (line["kind"], line["owner"]) == ("hermes", "erin")
        assert before["awake_s"]["total"] <= int(line["awake_s"]) <= after["awake_s"]["total"]
        assert int(line["creates"]) == before["creates"] == after["creates"]
        assert int(line["wakes"]) == before["wakes"] == after["wakes"]
        by_day = list(csv.DictReader(io.StringIO(erin.usage_csv(from_=day, to=day))))
        assert [line["day"] for line in by_day] == [report["to"]], by_day

    with Client(serve.url, user="root", admin=True) as admin:
        everyone = admin.usage(by="agent", owner="*")
        assert everyone["owner"] == "*"
        assert agent_row(everyone, agent_id)["owner"] == "erin"
        assert agent_row(admin.usage(by="agent", owner="erin"), agent_id)["creates"] == 1


def test_a_bad_day_is_invalid_request_and_everyones_usage_is_for_admins(serve: Serve) -> None:
    with Client(serve.url, user="erin") as erin:
        for ask in (
            lambda: erin.usage(from_="2026-13-01"),
            lambda: erin.usage_csv(to="yesterday"),
        ):
            with pytest.raises(InvalidRequest) as bad:
                ask()
            assert (bad.value.status, bad.value.code, bad.value.retryable) == (
                400,
                "INVALID_REQUEST",
                False,
            )
        # A range whose from is after its to holds no day; a long one keeps its last 367 days.
        assert erin.usage(from_=date(2026, 12, 7), to=date(2026, 12, 1))["rows"] == []
        long = erin.usage(from_="2000-01-01", to="2026-12-07")
        assert (long["from"], len(long["rows"])) == ("2025-12-06", 367)
        with pytest.raises(NotFound) as refused:
            erin.usage(owner="*")
        assert isinstance(refused.value, AgentNotFound) and refused.value.status == 404
        with pytest.raises(NotFound):
            erin.usage_csv(owner="frank")


async def test_the_asyncio_client_reads_the_same_report(serve: Serve) -> None:
    async with AsyncClient(serve.url, user="gail") as gail:
        report = await gail.usage(from_="2026-12-01", to=date(2026, 12, 7), by="agent")
        assert (report["from"], report["to"], report["by"], report["owner"]) == (
            "2026-12-01",
            "2026-12-07",
            "agent",
            "gail",
        )
        assert report["rows"] == [] and report["total"]["creates"] == 0
        text = await gail.usage_csv(by="agent")
        assert text.splitlines()[0].startswith("kind,agent_id,owner,"), text
        with pytest.raises(InvalidRequest):
            await gail.usage(to="2026-02-30")
