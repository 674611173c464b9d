"""Schedules on the My Agents page: each card says its schedule, and the editor (time zone,
presets, a wake and a sleep cron previewed with their next three occurrences) saves and
removes it through `PUT|DELETE …/schedule` of a real `snapwake serve --demo`."""

import json
import re
from datetime import datetime, timezone

from playwright.sync_api import expect

from conftest import DATA_HELPER
from test_my_agents import card, open_as_alice

SCHEDULE = f"/v1/agents/codex/{DATA_HELPER}/schedule"


def editor(page, name="Data helper", verb="Set a schedule for"):
    card(page, name).get_by_role("button", name=f"{verb} {name}").click()
    dialog = page.get_by_role("dialog", name=f"Schedule of {name}")
    expect(dialog).to_be_visible()
    return dialog


def previewed(dialog, field):
    return dialog.locator(f"#schedule-{field}-next time").evaluate_all("els => els.map(e => e.dateTime)")


def test_the_cron_preview_follows_new_york_across_daylight_saving(watched, server):
    w = watched()
    page = w.page
    # "Now" is Friday 6 March 2026, 07:00 in New York; clocks go forward on Sunday 8 March.
    page.clock.set_fixed_time(datetime(2026, 3, 6, 12, 0, tzinfo=timezone.utc))
    page.goto(server.url + "/")
    dialog = editor(page)
    expect(dialog.get_by_label("Time zone")).to_have_value("UTC")  # the browser's
    expect(dialog.get_by_label("Time zone")).to_be_focused()
    dialog.get_by_label("Time zone").select_option("America/New_York")
    dialog.get_by_label("Wake at").fill("30 2 * * *")
    # 02:30 does not exist on 8 March: that wake is at the transition (03:00 EDT), once.
    expect(dialog.locator("#schedule-wake-next time")).to_have_count(3)
    assert previewed(dialog, "wake") == [
        "2026-03-07T07:30:00.000Z", "2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"]
    expect(dialog.locator("#schedule-wake-next")).to_contain_text("Sat, 7 Mar 2026, 02:30 GMT-5")
    expect(dialog.locator("#schedule-wake-next")).to_contain_text("Sun, 8 Mar 2026, 03:00 GMT-4")
    expect(dialog.get_by_role("radio", name="Custom")).to_be_checked()
    dialog.get_by_label("Sleep at").fill("*/20 2 * * SUN")
    assert previewed(dialog, "sleep") == [
        "2026-03-08T07:00:00.000Z", "2026-03-15T06:00:00.000Z", "2026-03-15T06:20:00.000Z"]
    w.shot("34-schedule-preview-dst")

    # The evaluator alone: a fold (1 November, 01:30 twice) fires once, at the first; Vixie's
    # rule (both day fields restricted: either); Sunday as 7; names; a date that never comes.
    got = page.evaluate("""async () => {
        const c = await import('/js/cron.js');
        const at = (e, z, now, n = 3) => c.nextOccurrences(e, z, n, Date.parse(now)).map((d) => d.toISOString());
        return {
          fold: at('30 1 * * *', 'America/New_York', '2026-10-30T12:00:00Z'),
          vixie: at('0 0 13 * FRI', 'UTC', '2026-01-01T00:00:00Z'),
          sunday7: at('0 9 * * 7', 'Europe/Berlin', '2026-01-01T00:00:00Z', 2),
          names: at('15 10 1 jan-mar *', 'UTC', '2026-01-01T11:00:00Z'),
          never: at('0 0 30 2 *', 'UTC', '2026-01-01T00:00:00Z'),
          errors: ['0 9 * *', '61 9 * * *', '0 9 * * FUN', '0 18-9 * * *', '*/0 * * * *'].map(c.cronError),
        };
    }""")
    assert got["fold"] == ["2026-10-31T05:30:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"]
    assert got["vixie"] == ["2026-01-02T00:00:00.000Z", "2026-01-09T00:00:00.000Z", "2026-01-13T00:00:00.000Z"]
    assert got["sunday7"] == ["2026-01-04T08:00:00.000Z", "2026-01-11T08:00:00.000Z"]
    assert got["names"] == ["2026-02-01T10:15:00.000Z", "2026-03-01T10:15:00.000Z", "2027-01-01T10:15:00.000Z"]
    assert got["never"] == []
    assert all(got["errors"]), got["errors"]
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert not w.sent("PUT", "/schedule")


def test_the_time_zone_defaults_to_the_browsers(watched, server):
    w = watched(timezone_id="Asia/Kolkata")
    w.page.goto(server.url + "/")
    dialog = editor(w.page)
    expect(dialog.get_by_label("Time zone")).to_have_value(re.compile("^Asia/(Kolkata|Calcutta)$"))
    expect(dialog.get_by_role("radio", name="None")).to_be_checked()


def test_a_preset_saved_shown_on_the_card_and_removed(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    helper = card(page, "Data helper")
    expect(helper).to_contain_text("No schedule")
    dialog = editor(page)
    dialog.get_by_label("Time zone").select_option("Europe/Berlin")
    dialog.get_by_role("radio", name="Weekdays 9–18").check()
    expect(dialog.get_by_label("Wake at")).to_have_value("0 9 * * MON-FRI")
    expect(dialog.get_by_label("Sleep at")).to_have_value("0 18 * * MON-FRI")
    expect(dialog.locator("#schedule-wake-next time")).to_have_count(3)
    w.shot("35-schedule-dialog")
    dialog.get_by_role("button", name="Save schedule").click()
    expect(dialog).to_be_hidden()
    expect(helper).to_contain_text("Wakes weekdays 09:00 · sleeps 18:00 (Europe/Berlin) — next ")
    sent = w.sent("PUT", "/schedule")
    assert len(sent) == 1
    assert json.loads(sent[0]["body"]) == {"timezone": "Europe/Berlin", "wake": "0 9 * * MON-FRI", "sleep": "0 18 * * MON-FRI"}
    status, _, saved = server.api("GET", SCHEDULE)
    assert status == 200 and saved["timezone"] == "Europe/Berlin" and saved["wake"] == "0 9 * * MON-FRI"
    nxt = min(t for t in (saved["next_wake_at"], saved["next_sleep_at"]) if t)
    # The next occurrence is on the card (beside when waking starts: nothing is measured yet,
    # so a wake starts early by the readiness prior).
    expect(helper.locator(f'.schedule time[datetime="{nxt}"]')).to_have_count(1)
    expect(page.locator("#status")).to_contain_text("Data helper now wakes weekdays 09:00")
    w.shot("36-card-with-schedule")

    # Listed afresh, the view carries it; the editor opens on it.
    page.reload()
    expect(helper).to_contain_text("Wakes weekdays 09:00 · sleeps 18:00 (Europe/Berlin)")
    dialog = editor(page, verb="Edit the schedule of")
    expect(dialog.get_by_label("Time zone")).to_have_value("Europe/Berlin")
    expect(dialog.get_by_role("radio", name="Weekdays 9–18")).to_be_checked()
    # A custom sleep: the preset says so.
    dialog.get_by_label("Sleep at").fill("30 19 * * MON-FRI")
    expect(dialog.get_by_role("radio", name="Custom")).to_be_checked()
    dialog.get_by_role("button", name="Save schedule").click()
    expect(helper).to_contain_text("Wakes weekdays 09:00 · sleeps 19:30 (Europe/Berlin)")
    assert server.api("GET", SCHEDULE)[2]["sleep"] == "30 19 * * MON-FRI"

    dialog = editor(page, verb="Edit the schedule of")
    dialog.get_by_role("button", name="Remove schedule").click()
    expect(dialog).to_be_hidden()
    expect(helper).to_contain_text("No schedule")
    assert server.api("GET", SCHEDULE)[0] == 404
    assert len(w.sent("DELETE", "/schedule")) == 1
    # "None" on an agent without one saves nothing.
    dialog = editor(page)
    dialog.get_by_role("radio", name="None").check()
    dialog.get_by_role("button", name="Save schedule").click()
    expect(dialog).to_be_hidden()
    assert len(w.sent("PUT", "/schedule")) == 2


def test_an_invalid_cron_is_shown_before_saving(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    dialog = editor(page)
    wake = dialog.get_by_label("Wake at")
    wake.fill("61 9 * * *")
    error = dialog.locator("#schedule-wake-error")
    expect(error).to_have_text("Not a schedule: minute 61 is out of range (0–59).")
    expect(wake).to_have_attribute("aria-invalid", "true")
    expect(wake).to_have_accessible_description(re.compile("minute 61 is out of range"))
    expect(dialog.locator("#schedule-wake-next time")).to_have_count(0)
    w.shot("37-schedule-invalid-cron")
    dialog.get_by_role("button", name="Save schedule").click()
    expect(wake).to_be_focused()
    expect(dialog).to_be_visible()
    wake.fill("0 0 30 2 *")
    expect(error).to_contain_text("never fires")
    wake.fill("0 9 * * 1-5")
    expect(error).to_be_hidden()
    expect(wake).not_to_have_attribute("aria-invalid", "true")
    assert not w.sent("PUT", "/schedule")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_the_servers_422_is_shown_next_to_its_field(watched, server):
    w = open_as_alice(watched, server)
    w.allowed.append("status of 422")
    page = w.page
    dialog = editor(page)
    # A zone this browser has not heard of reaches the real server, which names the field.
    dialog.get_by_label("Time zone").evaluate("s => s.add(new Option('Mars/Olympus_Mons', 'Mars/Olympus_Mons'))")
    dialog.get_by_label("Time zone").select_option("Mars/Olympus_Mons")
    dialog.get_by_label("Wake at").fill("0 9 * * *")
    dialog.get_by_role("button", name="Save schedule").click()
    zone_error = dialog.locator("#schedule-timezone-error")
    expect(zone_error).to_be_visible()
    expect(dialog.get_by_label("Time zone")).to_have_attribute("aria-invalid", "true")
    expect(dialog.get_by_label("Time zone")).to_be_focused()
    expect(dialog.locator("#schedule-problem")).to_be_hidden()
    _, _, problem = server.api("PUT", SCHEDULE, body={"timezone": "Mars/Olympus_Mons", "wake": "0 9 * * *"})
    assert problem["field"] == "timezone"
    expect(zone_error).to_have_text(re.sub(r"^timezone: ", "", problem["detail"]))
    w.shot("38-schedule-422-timezone")

    # NOT_SLEEPABLE names no field but is the sleep's (the page never sends one for a
    # temporary agent, so only an intercepted answer can show it).
    def refuse(route):
        route.fulfill(status=422, content_type="application/problem+json", body=json.dumps({
            "type": "urn:snapwake:problem:not-sleepable", "title": "Agent not sleepable", "status": 422,
            "detail": "sleep: a temporary agent keeps no snapshot, so it cannot be put to sleep",
            "code": "NOT_SLEEPABLE", "retryable": False, "request_id": "r-1"}))

    page.route(re.compile(r".*/schedule$"), lambda route: refuse(route) if route.request.method == "PUT" else route.continue_())
    dialog.get_by_label("Time zone").select_option("Europe/Berlin")
    expect(zone_error).to_be_hidden()
    dialog.get_by_label("Sleep at").fill("0 18 * * *")
    dialog.get_by_role("button", name="Save schedule").click()
    expect(dialog.locator("#schedule-sleep-error")).to_have_text(
        "a temporary agent keeps no snapshot, so it cannot be put to sleep")
    expect(dialog.get_by_label("Sleep at")).to_be_focused()


def test_a_temporary_agent_has_no_sleep_schedule_and_says_why(watched, server):
    # A sandbox started outside snapwake, which keeps no record of it (yet).
    server.sim_post("/_sim/sessions", {
        "tool_id": "t-codex-recoverable", "user_session_id": "studio-alice-00000000000000000000000000000099",
        "status": "Ready",
        "metadata": [{"Key": "Username", "Type": "String", "Value": "alice"},
                     {"Key": "veadk_display_name", "Type": "String", "Value": "Outsider"}]})
    w = open_as_alice(watched, server, width=390, height=844)
    page = w.page
    dialog = editor(page, name="Scratch hermes")
    sleep = dialog.get_by_label("Sleep at")
    expect(sleep).to_be_disabled()
    expect(sleep).to_have_accessible_description(re.compile("^Sleep: temporary agents can't sleep"))
    expect(dialog).to_contain_text("Sleep: temporary agents can't sleep (no snapshot would be kept).")
    dialog.get_by_role("radio", name="Weekdays 9–18").check()
    expect(sleep).to_have_value("")
    expect(dialog.get_by_role("radio", name="Weekdays 9–18")).to_be_checked()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    w.shot("39-schedule-temporary-phone")
    dialog.get_by_role("button", name="Save schedule").click()
    expect(dialog).to_be_hidden()
    assert json.loads(w.sent("PUT", "/schedule")[0]["body"])["sleep"] is None
    expect(card(page, "Scratch hermes")).to_contain_text("Wakes weekdays 09:00 (UTC)")
    # An agent snapwake keeps no record of cannot have one yet, and says so.
    old = card(page, "Outsider").get_by_role("button", name="Set a schedule for Outsider")
    expect(old).to_be_disabled()
    expect(old).to_have_accessible_description(re.compile("^Schedule: snapwake keeps no record"))
    w.shot("40-card-with-schedule-phone")


def test_the_editor_in_dark_mode_with_the_keyboard(watched, server):
    w = watched(color_scheme="dark")
    page = w.page
    page.goto(server.url + "/")
    card(page, "Data helper").get_by_role("button", name="Set a schedule for Data helper").focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Schedule of Data helper")
    expect(dialog.get_by_label("Time zone")).to_be_focused()
    # Focus stays in the dialog (modal): Tab cycles through its controls only.
    for _ in range(15):
        page.keyboard.press("Tab")
        assert not page.evaluate("document.querySelector('main').contains(document.activeElement)")
    dialog.get_by_label("Wake at").fill("45 7 * * MON,WED,FRI")
    w.shot("41-schedule-dialog-dark")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_the_card_says_when_waking_starts(watched, server):
    """A kind whose readiness snapwake has measured wakes early so as to be Ready at the
    owner's minute: the card says when waking starts. (What the server answers is tested in the
    Rust suites; serve --demo has nothing measured, so the listing's `wake_starts_at` is the
    prior's, set here two minutes before the wake.)"""
    status, _, saved = server.api("PUT", SCHEDULE, body={"timezone": "UTC", "wake": "30 8 * * *"})
    # Nothing measured: the readiness prior already starts it early, on the tick before.
    assert status == 200 and saved["wake_starts_at"] < saved["next_wake_at"], saved
    wake = saved["next_wake_at"]
    starts = datetime.fromtimestamp(datetime.fromisoformat(wake.replace("Z", "+00:00")).timestamp() - 120,
                                    tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    w = watched()
    page = w.page

    def early(route):
        res = route.fetch()
        body = res.json()
        for agent in body.get("agents", []):
            if agent["agent_id"] == DATA_HELPER:
                agent["schedule"]["wake_starts_at"] = starts
        route.fulfill(response=res, body=json.dumps(body))

    page.route(re.compile(r".*/v1/agents(\?.*)?$"), early)
    page.goto(server.url + "/")
    helper = card(page, "Data helper")
    expect(helper.locator(".schedule time").first).to_have_attribute("datetime", wake)
    starts_at = helper.locator(".schedule time.starts")
    expect(starts_at).to_have_attribute("datetime", starts)
    expect(starts_at).to_contain_text("08:28")
    expect(helper).to_contain_text(re.compile(r"next wake .*08:30 \(waking starts .*08:28 to be ready by then\)"))
    w.shot("42-card-waking-starts")
    # Nothing measured (as served): the readiness prior's early start is what the card says.
    page.unroute(re.compile(r".*/v1/agents(\?.*)?$"))
    page.reload()
    expect(card(page, "Data helper").locator(".schedule time.starts")).to_have_attribute(
        "datetime", saved["wake_starts_at"])
