"""One clear state per card: a failed wake is an asleep card with one notice and one "Try
again"; every disabled button says why in words on the card; an awake agent with an
`open_url` has an Open link."""

import json
import re

from playwright.sync_api import expect

from conftest import DATA_HELPER
from test_my_agents import card, group, open_as_alice

RESEARCH_CLAW = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141517"

# Every disabled (or busy) button on the page that is not described by visible words.
UNEXPLAINED = """() => [...document.querySelectorAll('button:disabled, button[aria-disabled="true"]')]
  .filter((b) => b.offsetParent !== null)
  .filter((b) => !(b.getAttribute('aria-describedby') || '').split(/\\s+/).filter(Boolean)
    .map((id) => document.getElementById(id))
    .some((e) => e && e.offsetParent !== null && e.textContent.trim()))
  .map((b) => b.getAttribute('aria-label') || b.textContent)"""


def test_a_failed_wake_is_one_asleep_card_with_one_notice(watched, server):
    w = open_as_alice(watched, server)
    w.allowed.append("status of 502")
    page = w.page
    # The session the wake starts stays Starting, and AgentKit loses it at the first poll: the
    # wake fails while AgentKit still lists that session (the API's view says "starting").
    server.sim_post("/_sim/settings", {"stuck_sessions": 1})
    server.sim_post("/_sim/faults", {"action": "GetSession", "trigger": {"next": 1},
                                     "error": {"code": "InvalidResource.NotFound", "status": 404}})
    helper = card(page, "Data helper")
    helper.get_by_role("button", name="Wake Data helper").click()
    expect(helper.get_by_role("alert")).to_contain_text("Wake failed", timeout=30_000)
    _, _, view = server.api("GET", f"/v1/agents/codex/{DATA_HELPER}")
    assert view["state"] == "starting" and view["wake"]["state"] == "failed", view

    def one_clear_state(why):
        expect(group(page, "Asleep").get_by_role("heading", name="Data helper")).to_be_visible()
        expect(page.get_by_role("heading", name=re.compile("^Waking"))).to_have_count(0)
        expect(helper.locator(".badge")).to_have_text("Asleep")
        expect(helper).not_to_contain_text("Starting")
        expect(helper).not_to_contain_text("Session ends")
        notice = helper.get_by_role("alert")
        expect(notice).to_have_count(1)
        expect(notice).to_contain_text(re.compile(f"^Wake failed.* — {why}"))
        expect(helper.get_by_role("button", name=re.compile("Try again"))).to_have_count(1)
        expect(helper.get_by_role("button", name=re.compile("^Wake"))).to_have_count(0)

    # Listed again: the page's problem (with its request id) and the view's failure are one.
    page.get_by_role("button", name="Refresh").click()
    expect(page.locator("#status")).to_have_text("4 agents listed.")
    one_clear_state("the sandbox did not start")
    w.shot("30-wake-failed-one-notice")
    # A fresh page knows the failure from the view alone.
    page.reload()
    expect(helper).to_be_visible()
    one_clear_state("the sandbox stopped before it was ready")

    # AgentKit's session is Ready after all: "Try again" wakes it (the view's, after a reload).
    server.sim_post(f"/_sim/sessions/{view['session']['session_id']}/status", {"status": "Ready"})
    helper.get_by_role("button", name="Try again: wake Data helper").click()
    expect(group(page, "Awake").get_by_role("heading", name="Data helper")).to_be_visible(timeout=30_000)
    expect(helper.locator(".badge")).to_have_text("Awake")
    expect(helper.get_by_role("alert")).to_have_count(0)


def test_every_disabled_button_says_why(watched, serve):
    server = serve(slow_wake=True)
    w = open_as_alice(watched, server)
    page = w.page

    scratch = card(page, "Scratch hermes")
    expect(scratch.get_by_role("button", name="Sleep now: put Scratch hermes to sleep")).to_be_disabled()
    expect(scratch.get_by_role("button", name="Sleep now: put Scratch hermes to sleep")).to_have_accessible_description(
        "Sleep: temporary agents can't sleep (no snapshot would be kept)")
    expect(scratch).to_contain_text("Sleep: temporary agents can't sleep (no snapshot would be kept)")
    research = card(page, "Research claw")
    keep = research.get_by_role("button", name="+1 h: keep Research claw awake 1 more hour")
    expect(keep).to_be_disabled()
    expect(keep).to_have_accessible_description("Keep awake: the session already lasts the longest allowed (8 h)")
    expect(research.locator(".why")).to_be_visible()
    assert page.evaluate(UNEXPLAINED) == []
    w.shot("31-disabled-reasons")

    # Someone else wakes Data helper (a 202 at once; its session takes 3 s): listed while it
    # wakes, its Wake is off and says why.
    helper = card(page, "Data helper")
    assert server.api("POST", f"/v1/agents/codex/{DATA_HELPER}/resume")[0] == 202
    page.get_by_role("button", name="Refresh").click()
    expect(helper.locator(".badge")).to_have_text("Waking")
    expect(helper.get_by_role("button", name="Wake Data helper")).to_have_accessible_description(
        "Wake: it is already waking; Refresh shows when it is awake")
    assert page.evaluate(UNEXPLAINED) == []
    # Its waker carries the wake to the end, then puts it back to sleep.
    for verb in ("resume", "sleep"):
        for _ in range(30):
            status = server.api("POST", f"/v1/agents/codex/{DATA_HELPER}/{verb}", headers={"Prefer": "wait=2"})[0]
            if status == 200:
                break
            assert status == 202
        else:
            raise AssertionError(f"{verb} did not end")
    page.get_by_role("button", name="Refresh").click()
    expect(helper.locator(".badge")).to_have_text("Asleep")

    # Busy: every button of the card is off, described by what is under way.
    helper.get_by_role("button", name="Wake Data helper").click()
    waking = helper.get_by_role("button", name="Waking Data helper")
    expect(waking).to_have_attribute("aria-disabled", "true")
    expect(waking).to_have_accessible_description(re.compile("Data helper is still waking|Waking…"))
    expect(helper.get_by_role("button", name="Delete agent Data helper")).to_have_accessible_description(re.compile("waking|Waking"))
    assert page.evaluate(UNEXPLAINED) == []
    expect(helper.locator(".badge")).to_have_text("Awake", timeout=30_000)

    # At phone width the reasons wrap inside their cards.
    phone = watched(width=390, height=844)
    phone.page.goto(server.url + "/")
    expect(card(phone.page, "Scratch hermes")).to_contain_text("temporary agents can't sleep")
    assert phone.page.evaluate("document.documentElement.scrollWidth") <= 390
    phone.shot("32-disabled-reasons-phone")


def with_open_urls(page, urls):
    """The listing as the server answers it, but with `open_url` replaced for the agents in
    `urls` (by agent id): for what serve --demo's template cannot produce."""

    def fill(route):
        res = route.fetch()
        body = res.json()
        for agent in body.get("agents", []):
            if agent["agent_id"] in urls:
                agent["open_url"] = urls[agent["agent_id"]]
        route.fulfill(response=res, body=json.dumps(body))

    page.route(re.compile(r".*/v1/agents(\?.*)?$"), fill)


def test_an_awake_agent_opens_in_a_new_tab(watched, server):
    w = watched()
    page = w.page
    page.context.route("https://studio.example/**",
                       lambda route: route.fulfill(body="<title>Studio</title>", content_type="text/html"))
    # serve --demo's template: https://studio.example/agents/{kind}/{agent_id}?session={session_id}
    _, _, research_view = server.api("GET", f"/v1/agents/openclaw/{RESEARCH_CLAW}")
    research_url = research_view["open_url"]
    assert research_url == (f"https://studio.example/agents/openclaw/{RESEARCH_CLAW}"
                            f"?session={research_view['session']['session_id']}")
    assert server.api("GET", f"/v1/agents/codex/{DATA_HELPER}")[2]["open_url"] is None
    with_open_urls(page, {
        # Not a web address (no real template makes one): not a link.
        "studio-alice-0d5e1f0a0b0c0d0e0f10111213141518": "javascript:alert(1)",
    })
    page.goto(server.url + "/")
    research = card(page, "Research claw")
    open_link = research.get_by_role("link", name="Open Research claw (opens a new tab)")
    expect(open_link).to_have_attribute("href", research_url)
    expect(open_link).to_have_attribute("target", "_blank")
    expect(open_link).to_have_attribute("rel", "noopener")
    expect(open_link).to_have_text("Open↗")
    expect(card(page, "Data helper").get_by_role("link", name=re.compile("^Open"))).to_have_count(0)
    expect(card(page, "Scratch hermes").get_by_role("link", name=re.compile("^Open"))).to_have_count(0)
    expect(card(page, "Alice Old").get_by_role("link", name=re.compile("^Open"))).to_have_count(0)
    w.shot("33-open-link")
    # Keyboard: the link is reachable and opens a new tab.
    open_link.focus()
    with page.context.expect_page() as opened:
        page.keyboard.press("Enter")
    opened.value.wait_for_load_state()
    assert opened.value.url == research_url
    assert opened.value.evaluate("window.opener") is None, "rel=noopener"
    opened.value.close()
