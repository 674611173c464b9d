"""The Usage view of My Agents (docs/console.md, "Usage") against `snapwake serve --demo`:
`GET /v1/usage` drawn as a Chart.js chart and shown in tables whose numbers are the API's, the
range asked again when it changes, both CSV downloads, the keyboard. The demo only has today's
usage, so the screenshots of a full week answer the page a made-up week instead (the last test,
a fixture, says so)."""

import json
import re
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from conftest import DATA_HELPER, SHOTS

PRICES = {"SNAPWAKE_PRICES": "codex=0.12,openclaw=0.10,hermes=0.08"}
USAGE = re.compile(r".*/v1/usage(\?.*)?$")


def utc_days(n):
    """The last `n` UTC days up to today, as the page computes them: (from, to)."""
    today = datetime.now(timezone.utc).date()
    return (today - timedelta(days=n - 1)).isoformat(), today.isoformat()


def field(row, path):
    for key in path.split("."):
        row = row[key]
    return row


def used_today(server):
    """A person wakes Data helper, it is awake a moment, then put to sleep; then wait for the
    change relay (every 250 ms) to count it: the API's total for today is above zero."""
    for verb in ("resume", "sleep"):
        status, _, body = server.api("POST", f"/v1/agents/codex/{DATA_HELPER}/{verb}",
                                     headers={"Prefer": "wait=20"})
        assert status == 200, (verb, status, body)
        time.sleep(1.2)
    deadline = time.monotonic() + 15
    while True:
        _, _, report = server.api("GET", "/v1/usage?by=agent")
        helper = [r for r in report["rows"] if r["agent_id"] == DATA_HELPER]
        if report["total"]["awake_s"]["total"] > 0 and helper and helper[0]["sleeps"]["person"] >= 1:
            return report
        assert time.monotonic() < deadline, f"no usage counted yet: {report}"
        time.sleep(0.25)


def open_usage(watched, server, **kw):
    """Alice's page with the Usage view chosen; returns (watched, JSON by day, JSON by agent):
    the answers the page drew, as it received them."""
    w = watched(**kw)
    page = w.page
    page.goto(server.url + "/")
    expect(page.get_by_role("heading", name="Data helper")).to_be_visible()
    with page.expect_response(lambda r: "/v1/usage" in r.url and "by=day" in r.url) as by_day, \
            page.expect_response(lambda r: "/v1/usage" in r.url and "by=agent" in r.url) as by_agent:
        page.get_by_role("tab", name="Usage").click()
    expect(page.locator("#panel-usage")).to_have_attribute("aria-busy", "false")
    expect(page.locator("#usage-agents-wrap table")).to_be_visible()
    return w, by_day.value.json(), by_agent.value.json()


def rows_shown(page, table):
    """Each body row of `table`: its keys and, per number cell, (data-value, text)."""
    return page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' tbody tr')].map((tr) => ({
        day: tr.dataset.day ?? null, kind: tr.dataset.kind ?? null, agent_id: tr.dataset.agentId ?? null,
        head: tr.querySelector('th')?.textContent ?? '',
        cells: Object.fromEntries([...tr.querySelectorAll('td[data-field]')]
            .map((td) => [td.dataset.field, [Number(td.dataset.value), td.textContent]])),
    }))""", table)


def as_the_page_words_them(page, pairs, currency):
    """The words the page's own formatters (js/format.js) give each (field, value)."""
    return page.evaluate("""async ([pairs, currency]) => {
        const f = await import('/js/format.js');
        const n = new Intl.NumberFormat();
        return pairs.map(([k, v]) => k.startsWith('cost.') ? f.money(v, currency)
            : (k.endsWith('_s') || k.startsWith('awake_s.')) ? f.hours(v) : n.format(v));
    }""", [pairs, currency])


def assert_table_is(page, table, report, key):
    """Every number of `table` is the report's, as the value and in words."""
    shown = rows_shown(page, table)
    assert len(shown) == len(report["rows"]) > 0
    by_key = {key(r): r for r in report["rows"]}
    pairs, seen = [], []
    for row in shown:
        api = by_key[(row["day"],) if row["day"] else (row["kind"], row["agent_id"])]
        assert row["cells"], row
        for name, (value, text) in row["cells"].items():
            assert value == field(api, name), (row, name)
            pairs.append([name, field(api, name)])
            seen.append(text)
    currency = (report.get("prices") or {}).get("currency")
    assert seen == as_the_page_words_them(page, pairs, currency)
    total = page.evaluate("""(sel) => Object.fromEntries([...document.querySelectorAll(sel + ' tfoot td[data-field]')]
        .map((td) => [td.dataset.field, Number(td.dataset.value)]))""", table)
    assert total and all(v == field(report["total"], k) for k, v in total.items()), total


def test_the_chart_and_tables_show_what_the_api_answers(watched, serve):
    server = serve(env=PRICES)
    used_today(server)
    w, by_day, by_agent = open_usage(watched, server)
    page = w.page
    start, today = utc_days(7)
    assert (by_day["from"], by_day["to"], by_agent["from"], by_agent["to"]) == (start, today, start, today)
    assert by_day["total"]["awake_s"]["total"] > 0 and by_agent["prices"]["currency"] == "USD"

    # The chart: a Chart.js chart on the canvas, drawn, its numbers the API's hours per day.
    canvas = page.get_by_role("img", name=re.compile(r"^Bar chart of awake hours per day, Last 7 days"))
    expect(canvas).to_be_visible()
    chart = page.evaluate("""() => {
        const canvas = document.getElementById('usage-chart');
        const chart = window.Chart && window.Chart.getChart(canvas);
        const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let drawn = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) drawn += 1;
        return chart && {drawn, type: chart.config.type, labels: chart.data.labels.length,
            series: chart.data.datasets.map((d) => [d.label, d.stack, d.data])};
    }""")
    assert chart and chart["type"] == "bar" and chart["drawn"] > 1000, chart
    assert chart["labels"] == 7
    keys = [("awake_s.person", "awake"), ("awake_s.schedule", "awake"), ("awake_s.agentkit", "awake"),
            ("saved_s", "saved")]
    for (label, stack, data), (key, want_stack) in zip(chart["series"], keys):
        assert stack == want_stack, label
        assert data == [field(r, key) / 3600 for r in by_day["rows"]], label
    assert by_day["rows"][-1]["day"] == today and by_day["rows"][-1]["awake_s"]["person"] > 0

    # The same numbers in a real table (hidden from sight, not from a screen reader), and the
    # report by agent with its cost columns: the API's values, in the page's words.
    days_table = page.get_by_role("table", name=re.compile("^Hours per day"))
    expect(days_table).to_be_attached()
    assert_table_is(page, "#usage-days-wrap", by_day, lambda r: (r["day"],))
    agents = page.get_by_role("table", name="By agent")
    expect(agents.get_by_role("columnheader", name="Cost (USD)")).to_be_visible()
    expect(agents.get_by_role("rowheader", name=re.compile("^Data helper"))).to_be_visible()
    assert_table_is(page, "#usage-agents-wrap", by_agent, lambda r: (r["kind"], r["agent_id"]))
    helper = next(r for r in rows_shown(page, "#usage-agents-wrap") if r["agent_id"] == DATA_HELPER)
    assert helper["head"].startswith("Data helper") and helper["cells"]["sleeps.person"][0] >= 1

    # The totals in words, from the same answer.
    words = as_the_page_words_them(page, [["awake_s.total", by_day["total"]["awake_s"]["total"]]], None)[0]
    expect(page.locator("#usage-summary")).to_have_text(re.compile(rf"^Last 7 days: {re.escape(words)} awake, "))

    # Asked again from the page (its origin, its identity): the same agents and counts; the
    # seconds have only moved on by the time between the two answers.
    later = page.evaluate("""async ([from, to]) => {
        const r = await fetch(`/v1/usage?from=${from}&to=${to}&by=agent`, {headers: {'X-Snapwake-User': 'alice'}});
        return r.json();
    }""", [start, today])
    assert sorted(r["agent_id"] for r in later["rows"]) == sorted(r["agent_id"] for r in by_agent["rows"])
    then = {r["agent_id"]: r for r in by_agent["rows"]}
    for row in later["rows"]:
        before = then[row["agent_id"]]
        for name in ("wakes", "creates", "failed_wakes", "sleeps.idle", "sleeps.schedule", "sleeps.person"):
            assert field(row, name) == field(before, name), name
        for name in ("awake_s.total", "awake_s.person", "reference_s"):
            assert 0 <= field(row, name) - field(before, name) <= 30, name


def test_another_range_is_asked_again_and_both_csvs_download(watched, server):
    used_today(server)
    w, _, _ = open_usage(watched, server)
    page = w.page
    start, today = utc_days(7)
    first = w.sent("GET", "/v1/usage")
    assert {parse_qs(urlparse(r["url"]).query)["by"][0] for r in first} == {"day", "agent"}
    for r in first:
        q = parse_qs(urlparse(r["url"]).query)
        assert (q["from"][0], q["to"][0]) == (start, today)
        assert "owner" not in q and r["headers"]["x-snapwake-user"] == "alice"

    # Last 30 days: the page asks again with the new from/to, and draws 30 days.
    start30, _ = utc_days(30)
    with page.expect_response(lambda r: "/v1/usage" in r.url and f"from={start30}" in r.url and "by=day" in r.url):
        page.get_by_role("radio", name="Last 30 days").check()
    asked = w.sent("GET", "/v1/usage")[len(first):]
    assert len(asked) == 2
    for r in asked:
        q = parse_qs(urlparse(r["url"]).query)
        assert (q["from"][0], q["to"][0]) == (start30, today), r["url"]
    expect(page.locator("#usage-summary")).to_contain_text("Last 30 days:")
    expect(page.locator("#usage-days-wrap tbody tr")).to_have_count(30)
    assert page.evaluate("window.Chart.getChart(document.getElementById('usage-chart')).data.labels.length") == 30

    # CSV: the same range, asked for as text/csv, saved as a file.
    for by, header in (("day", "day,"), ("agent", "kind,agent_id,owner,")):
        with page.expect_download() as download:
            page.get_by_role("button", name=f"Download CSV by {by}").click()
        saved = download.value
        assert saved.suggested_filename == f"snapwake-usage-by-{by}-{start30}-{today}.csv"
        lines = open(saved.path(), encoding="utf-8").read().splitlines()
        assert lines[0].startswith(header), lines[0]
        if by == "day":
            assert len(lines) == 31 and lines[-1].startswith(today)
        else:
            assert any(line.startswith(f"codex,{DATA_HELPER},alice,") for line in lines[1:])
        csv = w.sent("GET", f"by={by}")[-1]
        assert csv["headers"]["accept"] == "text/csv"
        q = parse_qs(urlparse(csv["url"]).query)
        assert (q["from"][0], q["to"][0]) == (start30, today)
        expect(page.locator("#status")).to_have_text(f"Saved snapwake-usage-by-{by}-{start30}-{today}.csv.")


def test_an_admin_sees_everyones_usage_with_owners(watched, server):
    w = watched()
    page = w.page
    page.goto(server.url + "/")
    page.get_by_label("Signed in as").select_option("root")
    page.get_by_role("tab", name="Usage").click()
    expect(page.locator("#usage-agents-wrap table")).to_be_visible()
    page.get_by_role("radio", name="Everyone").check()
    with page.expect_response(lambda r: "/v1/usage" in r.url and "owner=*" in r.url.replace("%2A", "*")):
        page.get_by_role("button", name="Show", exact=True).click()
    agents = page.get_by_role("table", name="By agent")
    expect(agents.get_by_role("columnheader", name="Owner")).to_be_visible()
    last = w.sent("GET", "/v1/usage")[-1]
    assert parse_qs(urlparse(last["url"]).query)["owner"] == ["*"]
    assert last["headers"].get("x-snapwake-admin") == "1"


def test_the_keyboard_reaches_the_view_and_every_control(watched, server):
    w = watched()
    page = w.page
    page.goto(server.url + "/")
    expect(page.get_by_role("heading", name="Data helper")).to_be_visible()
    focused = lambda: page.evaluate("document.activeElement.id || document.activeElement.getAttribute('aria-label') || ''")
    for _ in range(30):
        page.keyboard.press("Tab")
        if focused() == "tab-agents":
            break
    else:
        raise AssertionError("the Agents tab is not reachable with Tab")
    # ← → between the views (the selected tab is the one Tab stop), End and Home too.
    page.keyboard.press("ArrowRight")
    usage_tab = page.get_by_role("tab", name="Usage")
    expect(usage_tab).to_be_focused()
    expect(usage_tab).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tabpanel", name="Usage")).to_be_visible()
    expect(page.locator("#panel-agents")).to_be_hidden()
    assert page.evaluate("location.hash") == "#usage"
    page.keyboard.press("Home")
    expect(page.get_by_role("tab", name="Agents")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#panel-usage")).to_be_hidden()
    page.keyboard.press("End")
    expect(usage_tab).to_have_attribute("aria-selected", "true")
    expect(page.locator("#usage-agents-wrap table")).to_be_visible()

    # Into the view: the range (a radio group: arrows choose), the downloads, the table toggle,
    # and the agents' table, which scrolls sideways on a phone.
    page.keyboard.press("Tab")
    expect(page.get_by_role("radio", name="Last 7 days")).to_be_focused()
    start30, _ = utc_days(30)
    with page.expect_response(lambda r: "/v1/usage" in r.url and f"from={start30}" in r.url):
        page.keyboard.press("ArrowDown")
    expect(page.get_by_role("radio", name="Last 30 days")).to_be_checked()
    expect(page.locator("#usage-summary")).to_contain_text("Last 30 days:")
    for name in ("usage-csv-day", "usage-csv-agent", "usage-days-toggle"):
        page.keyboard.press("Tab")
        assert focused() == name
    page.keyboard.press("Enter")
    expect(page.locator("#usage-days-toggle")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_role("table", name=re.compile("^Hours per day"))).to_be_visible()
    page.keyboard.press("Tab")
    assert focused() == "usage-days-wrap"
    page.keyboard.press("Tab")
    assert focused() == "usage-agents-wrap"
    expect(page.get_by_role("region", name="By agent")).to_be_focused()

    # The address keeps the view: a reload opens Usage again.
    page.reload()
    expect(page.get_by_role("tab", name="Usage")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#usage-agents-wrap table")).to_be_visible()


def test_hours_are_words_a_person_reads(watched, server):
    """The page's hours (js/format.js), which every usage number goes through."""
    w = watched()
    w.page.goto(server.url + "/")
    seconds = [0, 20, -20, 90, 359, 360, 149_400, 453_600, -7_200]
    words = w.page.evaluate("async (s) => s.map((await import('/js/format.js')).hours)", seconds)
    assert words == ["0 h", "under a minute", "under a minute", "2 min", "6 min", "0.1 h", "41.5 h",
                     "126 h", "−2 h"]


# ---- Screenshots of a fixture week (serve --demo has only today's usage).

AGENTS = [  # kind, agent_id, hours awake, hours saved, wakes, sleeps (idle, schedule, person, agentkit)
    ("codex", DATA_HELPER, 20, 60, 9, (3, 4, 2, 0)),
    ("openclaw", "studio-alice-0d5e1f0a0b0c0d0e0f10111213141517", 14.5, 40, 7, (2, 3, 1, 0)),
    ("hermes", "studio-alice-0d5e1f0a0b0c0d0e0f10111213141518", 4, 10, 4, (0, 0, 0, 4)),
    ("codex", "studio2-2bd806c97f0e00af-0123456789abcdef-QWxpY2UgT2xk", 3, 16, 2, (1, 0, 1, 0)),
]
PER_HOUR = {"codex": 0.12, "openclaw": 0.10, "hermes": 0.08}
# Per day: hours awake woken by a person, by schedule, by AgentKit; hours saved; wakes; sleeps.
WEEK = [
    (2, 3.5, 0.5, 18, 3, (1, 2, 1, 0)),
    (3.5, 3.5, 0.5, 20.5, 4, (1, 1, 1, 1)),
    (1.5, 3.5, 0.5, 14.5, 3, (1, 1, 0, 0)),
    (5.5, 3.5, 1, 24, 5, (1, 1, 1, 1)),
    (4, 3.5, 0.5, 22, 4, (1, 1, 1, 1)),
    (0, 0, 1.5, 10.5, 1, (0, 0, 0, 1)),
    (2.5, 0, 0.5, 16.5, 2, (1, 1, 0, 0)),
]
H = 3600


def entry(person, schedule, agentkit, saved, wakes, sleeps, cost=None):
    """One row of the documented shape, from hours."""
    awake = person + schedule + agentkit
    row = {
        "awake_s": {"person": round(person * H), "schedule": round(schedule * H),
                    "agentkit": round(agentkit * H), "total": round(awake * H)},
        "asleep_s": round((24 - awake) * H), "reference_s": round((awake + saved) * H),
        "saved_s": round(saved * H), "wakes": wakes, "creates": 0, "failed_wakes": 0,
        "sleeps": dict(zip(("idle", "schedule", "person", "agentkit"), sleeps)),
        "snapshots": sum(sleeps[:3]),
    }
    if cost:
        row["cost"] = {k: round(v, 4) for k, v in cost.items()}
    return row


def fixture(url):
    """A made-up report for the days `url` asks (the week above, again for longer ranges)."""
    q = parse_qs(urlparse(url).query)
    start, end = (datetime.fromisoformat(q[k][0]).date() for k in ("from", "to"))
    n = (end - start).days + 1
    days = [WEEK[(i - n) % 7] for i in range(n)]  # the last day is always WEEK's last
    agents = []
    for kind, agent_id, awake, saved, wakes, sleeps in AGENTS:
        scale = n / 7
        price = PER_HOUR[kind]
        cost = {"awake": awake * scale * price, "reference": (awake + saved) * scale * price,
                "saved": saved * scale * price, "snapshots": 0.0}
        row = entry(awake * scale * 0.45, awake * scale * 0.42, awake * scale * 0.13, saved * scale,
                    round(wakes * scale), tuple(round(s * scale) for s in sleeps), cost)
        row.update(kind=kind, agent_id=agent_id, owner="alice")
        agents.append(row)
    money = {k: sum(a["cost"][k] for a in agents) for k in ("awake", "reference", "saved", "snapshots")}
    awake_h = sum(d[0] + d[1] + d[2] for d in days)
    rows = []
    for i, (person, schedule, agentkit, saved, wakes, sleeps) in enumerate(days):
        share = (person + schedule + agentkit) / awake_h
        r = entry(person, schedule, agentkit, saved, wakes, sleeps, {k: v * share for k, v in money.items()})
        r["day"] = (start + timedelta(days=i)).isoformat()
        rows.append(r)
    total = entry(*(sum(d[j] for d in days) for j in range(4)), sum(d[4] for d in days),
                  tuple(sum(d[5][j] for d in days) for j in range(4)), money)
    by = q.get("by", ["day"])[0]
    return {"from": start.isoformat(), "to": end.isoformat(), "by": by, "owner": "alice",
            "prices": {"currency": "USD", "per_sandbox_hour": PER_HOUR,
                       "per_snapshot_gb_month": None, "gb_per_snapshot": None},
            "rows": rows if by == "day" else agents, "total": total}


def answer_fixture(route):
    route.fulfill(status=200, content_type="application/json", body=json.dumps(fixture(route.request.url)))


def test_screenshots_of_a_fixture_week(watched, server):
    """FIXTURE, not the API: `GET /v1/usage` is answered with the made-up week above (in the
    documented shape), for screenshots of a full week at desktop and phone width; its words and
    tables are checked against that fixture."""
    for name, size, scheme in (("50-usage-desktop", (1280, 900), "light"),
                               ("51-usage-phone", (375, 812), "light"),
                               ("52-usage-phone-dark", (375, 812), "dark")):
        w = watched(width=size[0], height=size[1], color_scheme=scheme)
        page = w.page
        page.route(USAGE, answer_fixture)
        page.goto(server.url + "/#usage")
        expect(page.get_by_role("tab", name="Usage")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#usage-summary")).to_have_text("Last 7 days: 41.5 h awake, 126 h saved.")
        expect(page.locator("#usage-summary-more")).to_contain_text("never puts agents to sleep would have kept them awake 167.5 h")
        expect(page.locator("#usage-summary-more")).to_contain_text(re.compile(r"Cost: \S*4\.53 awake; \S*13\.92 saved\."))
        rows = page.get_by_role("table", name="By agent").locator("tbody tr")
        expect(rows).to_have_count(4)
        expect(rows.first.get_by_role("rowheader")).to_contain_text("Data helper")
        expect(page.get_by_role("img", name=re.compile(r"In all 41\.5 h awake \(by a person 19 h, by schedule 17\.5 h, by AgentKit 5 h\) and 126 h saved\. Most awake: .*, 10 h\.")))\
            .to_be_visible()
        # Drawn, and done animating, before the picture is taken.
        page.wait_for_function("() => { const c = window.Chart?.getChart(document.getElementById('usage-chart'));"
                               " return c && !c.animating && c.chartArea?.width > 0; }")
        page.wait_for_timeout(400)
        assert page.evaluate("document.documentElement.scrollWidth") <= size[0], name
        w.shot(name)
        assert (SHOTS / f"{name}.png").exists()
