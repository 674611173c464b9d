"""My Agents against `snapwake serve --demo`, in headless Chromium: what alice sees and does,
what bob and an admin see, and that a double click sends one wake and creates one agent."""

import json
import re

from playwright.sync_api import expect

from conftest import DATA_HELPER


def card(page, name):
    return page.locator("article.card").filter(has=page.get_by_role("heading", name=name, exact=True))


def group(page, title):
    return page.locator("section.group").filter(has=page.get_by_role("heading", name=re.compile(f"^{title}")))


def open_as_alice(watched, server, **kw):
    w = watched(**kw)
    w.page.goto(server.url + "/")
    expect(card(w.page, "Data helper")).to_be_visible()
    return w


def test_alice_sees_her_agents_grouped_by_state_and_nobody_elses(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    expect(page).to_have_title("My Agents · snapwake")
    expect(page.get_by_label("Signed in as")).to_have_value("alice")
    expect(page.get_by_role("heading", name="Awake 2")).to_be_visible()
    expect(page.get_by_role("heading", name="Asleep 2")).to_be_visible()
    awake = group(page, "Awake")
    expect(awake.locator("article.card")).to_have_count(2)
    helper = card(page, "Data helper")
    expect(helper.locator(".badge")).to_have_text("Asleep")
    expect(helper).to_contain_text("Codex")
    expect(helper).to_contain_text("Snapshots (2), newest first")
    dates = helper.locator(".snapshots time")
    expect(dates).to_have_count(2)
    first, second = (dates.nth(i).get_attribute("datetime") for i in range(2))
    assert first > second, "snapshots newest first"
    expect(helper.get_by_role("button", name="Wake Data helper")).to_be_enabled()
    # An awake agent offers what fits it (no Wake at all), and says why what cannot act is off.
    expect(card(page, "Research claw").get_by_role("button", name="Wake Research claw")).to_have_count(0)
    expect(card(page, "Research claw")).to_contain_text("Session ends")
    # Foreign agents are not shown (bob's, carol's, the ownerless one).
    for foreign in ("Bob's notebook", "Mail sorter", "Crawler", "Pair programmer"):
        expect(page.get_by_text(foreign)).to_have_count(0)
    assert all(r["headers"].get("x-snapwake-user") == "alice" for r in w.requests)
    assert not any("x-snapwake-admin" in r["headers"] for r in w.requests)
    w.shot("01-my-agents-alice")

    # Signed in as bob: his agents, none of alice's.
    page.get_by_label("Signed in as").select_option("bob")
    expect(card(page, "Bob's notebook")).to_be_visible()
    expect(card(page, "Mail sorter")).to_contain_text("Snapshots (3)")
    expect(page.get_by_text("Data helper")).to_have_count(0)
    assert w.requests[-1]["headers"]["x-snapwake-user"] == "bob"


def test_wake_follows_202s_then_sleep_and_wake_again(watched, serve):
    server = serve(slow_wake=True)
    w = open_as_alice(watched, server)
    page = w.page
    helper = card(page, "Data helper")
    helper.get_by_role("button", name="Wake Data helper").click()
    waking = helper.get_by_role("button", name="Waking Data helper")
    expect(waking).to_have_text("Waking…")
    expect(waking).to_have_attribute("aria-disabled", "true")
    expect(helper).to_have_attribute("aria-busy", "true")
    expect(page.get_by_role("status").first).to_contain_text("Data helper is still waking")
    w.shot("02-waking")
    expect(helper.locator(".badge")).to_have_text("Awake", timeout=30_000)
    expect(group(page, "Awake").get_by_role("heading", name="Data helper")).to_be_visible()
    expect(page.locator("#status")).to_have_text("Data helper is awake.")
    w.shot("03-awake")
    resumes = w.sent("POST", f"{DATA_HELPER}/resume")
    assert len(resumes) >= 2, "the first answer was a 202; the page asked again"
    assert all("prefer" not in {k.lower() for k in r["headers"]} for r in resumes), \
        "the page polls with short requests, not a held one"
    assert server.received("ResumeSessionFromSnapshot") == 1

    helper.get_by_role("button", name="Sleep now: put Data helper to sleep").click()
    expect(helper.locator(".badge")).to_have_text("Asleep", timeout=30_000)
    expect(page.locator("#status")).to_contain_text("Data helper is asleep")
    expect(helper).to_contain_text("Snapshots (3)")
    expect(helper).to_contain_text("put to sleep")

    helper.get_by_role("button", name="Wake Data helper").click()
    expect(helper.locator(".badge")).to_have_text("Awake", timeout=30_000)
    assert server.received("ResumeSessionFromSnapshot") == 2


def test_keep_awake_adds_hours_up_to_the_longest_session(watched, server):
    claw = "/v1/agents/openclaw/studio-alice-0d5e1f0a0b0c0d0e0f10111213141517"
    w = open_as_alice(watched, server)
    page = w.page
    research = card(page, "Research claw")
    # A fresh session already lasts the longest a session may: nothing to add.
    expect(research.get_by_role("button", name="+1 h: keep Research claw awake 1 more hour")).to_be_disabled()
    # Half an hour left (as late in a working day).
    status, _, _ = server.api("POST", claw + "/keepalive", body={"ttl_s": 1800})
    assert status == 200
    page.get_by_role("button", name="Refresh").click()
    expect(research).to_contain_text("in 29 min")
    research.get_by_role("button", name="+1 h: keep Research claw awake 1 more hour").click()
    expect(page.locator("#status")).to_contain_text("Research claw stays awake until")
    expect(research).to_contain_text("in 1 h 29 min")
    sent = w.sent("POST", "/keepalive")[-1]
    assert 5300 <= int(re.search(r'"ttl_s":(\d+)', sent["body"]).group(1)) <= 5400
    research.get_by_role("button", name="+4 h: keep Research claw awake 4 more hours").click()
    expect(research).to_contain_text("in 5 h 29 min")
    _, _, view = server.api("GET", claw)
    assert view["state"] == "awake"


def test_delete_a_snapshot_after_a_confirmation_naming_it(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    helper = card(page, "Data helper")
    older = helper.locator(".snapshots li").nth(1)
    older.get_by_role("button", name=re.compile("^Delete the snapshot of Data helper")).click()
    dialog = page.get_by_role("dialog", name="Delete a snapshot of Data helper?")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("is deleted for good")
    expect(dialog).to_contain_text("Data helper keeps its other 1 snapshot.")
    w.shot("04-confirm-delete-snapshot")
    dialog.get_by_role("button", name="Keep it").click()
    expect(dialog).to_be_hidden()
    expect(helper).to_contain_text("Snapshots (2)")
    assert not w.sent("DELETE", "/snapshots/")

    older.get_by_role("button", name=re.compile("^Delete the snapshot of Data helper")).click()
    dialog.get_by_role("button", name="Delete snapshot").click()
    expect(helper).to_contain_text("Snapshots (1)")
    expect(page.locator("#status")).to_have_text("Deleted the snapshot of Data helper.")
    _, _, view = server.api("GET", f"/v1/agents/codex/{DATA_HELPER}")
    assert [s["snapshot_id"] for s in view["snapshots"]] == ["snap-141516-2"]

    # The last one: the confirmation says it is the agent's only way back.
    helper.get_by_role("button", name=re.compile("^Delete the snapshot of Data helper")).click()
    expect(dialog).to_contain_text("only way back")
    dialog.get_by_role("button", name="Keep it").click()


def test_delete_an_agent(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    card(page, "Data helper").get_by_role("button", name="Delete agent Data helper").click()
    dialog = page.get_by_role("dialog", name="Delete Data helper?")
    expect(dialog).to_contain_text("All 2 of its snapshots")
    expect(dialog).to_contain_text("cannot be woken or brought back")
    dialog.get_by_role("button", name="Delete agent").click()
    expect(page.locator("#status")).to_have_text("Deleted Data helper.")
    expect(card(page, "Data helper")).to_have_count(0)
    status, _, _ = server.api("POST", f"/v1/agents/codex/{DATA_HELPER}/resume")
    assert status == 410


def create(page, kind, name, retention=None, double=False):
    page.get_by_role("button", name="New agent").click()
    dialog = page.get_by_role("dialog", name="New agent")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Kind").select_option(label=kind)
    dialog.get_by_label("Name").fill(name)
    if retention:
        dialog.get_by_role("radio", name=re.compile(f"^{retention}")).check()
    submit = dialog.get_by_role("button", name="Create agent")
    if double:
        submit.dblclick()
    else:
        submit.click()
    expect(dialog).to_be_hidden(timeout=20_000)
    return card(page, name)


def test_create_an_agent_with_each_retention(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    page.get_by_role("button", name="New agent").click()
    dialog = page.get_by_role("dialog", name="New agent")
    recoverable = dialog.get_by_role("radio", name=re.compile("^Recoverable"))
    temporary = dialog.get_by_role("radio", name=re.compile("^Temporary"))
    expect(recoverable).to_be_checked()
    expect(temporary).not_to_be_checked()
    expect(dialog).to_contain_text("A snapshot of its workspace is kept")
    expect(dialog).to_contain_text("Its workspace is deleted")
    expect(dialog.get_by_label("Kind").locator("option")).to_have_text(["Codex", "OpenClaw", "Hermes"])
    w.shot("05-create-dialog")
    dialog.get_by_role("button", name="Cancel").click()

    inbox = create(page, "Hermes", "Inbox helper")
    expect(inbox).to_contain_text("Recoverable")
    expect(inbox).to_contain_text("Hermes")
    scratch = create(page, "Codex", "Scratch pad", retention="Temporary")
    expect(scratch).to_contain_text("Temporary")
    _, _, listing = server.api("GET", "/v1/agents")
    made = {a["display_name"]: a["retention"] for a in listing["agents"]}
    assert made["Inbox helper"] == "recoverable"
    assert made["Scratch pad"] == "temporary"
    keys = [r["headers"].get("idempotency-key") for r in w.sent("POST", "/v1/agents") if r["url"].endswith("/v1/agents")]
    assert len(keys) == 2 and all(keys) and keys[0] != keys[1], "one key per dialog"
    expect(page.locator("article.card")).to_have_count(6)


def test_a_double_click_on_wake_sends_one_wake(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    helper = card(page, "Data helper")
    before = server.received("ResumeSessionFromSnapshot")
    helper.get_by_role("button", name="Wake Data helper").dblclick()
    expect(helper.locator(".badge")).to_have_text("Awake", timeout=30_000)
    # One wake, however the clicks and the polls that followed the 202s add up.
    assert server.received("ResumeSessionFromSnapshot") - before == 1


def test_a_double_click_on_create_creates_one_agent(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    before = server.received("CreateSession")
    create(page, "Codex", "Twice clicked", double=True)
    expect(card(page, "Twice clicked")).to_have_count(1)
    assert len([r for r in w.sent("POST", "/v1/agents") if r["url"].endswith("/v1/agents")]) == 1
    assert server.received("CreateSession") - before == 1
    _, _, listing = server.api("GET", "/v1/agents")
    assert [a["display_name"] for a in listing["agents"]].count("Twice clicked") == 1


def test_a_create_whose_answer_was_lost_is_retried_with_its_key(watched, server):
    """The first answer never reaches the page (the connection drops after the server
    acted); the page asks again with the same Idempotency-Key and gets the same agent."""
    w = watched()
    w.allowed.append("net::ERR_FAILED")
    page = w.page
    dropped = []

    def drop_first(route):
        if route.request.method == "POST" and not dropped:
            route.fetch()  # the server creates the agent...
            dropped.append(route.request.headers["idempotency-key"])
            route.abort("failed")  # ...and the page never hears of it
        else:
            route.continue_()

    page.route(re.compile(r".*/v1/agents$"), drop_first)
    page.goto(server.url + "/")
    expect(card(page, "Data helper")).to_be_visible()
    create(page, "Codex", "Lost answer")
    posts = [r for r in w.sent("POST", "/v1/agents") if r["url"].endswith("/v1/agents")]
    assert len(posts) == 2 and {p["headers"]["idempotency-key"] for p in posts} == set(dropped)
    assert server.received("CreateSession") == 1
    _, _, listing = server.api("GET", "/v1/agents")
    assert [a["display_name"] for a in listing["agents"]].count("Lost answer") == 1


def test_an_admin_pages_through_everyone(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    expect(page.get_by_role("group", name="Whose agents")).to_be_hidden()
    page.get_by_label("Signed in as").select_option(label="root (admin)")
    filt = page.get_by_role("group", name="Whose agents")
    expect(filt).to_be_visible()
    filt.get_by_role("radio", name="Everyone").check()
    page.get_by_label("Per page").select_option("5")
    filt.get_by_role("button", name="Show").click()
    expect(page.locator("#page-label")).to_have_text("Page 1 (the first)")
    expect(page.locator("article.card")).to_have_count(5)
    first = page.locator("article.card h3").all_inner_texts()
    expect(page.locator("article.card").first).to_contain_text("Owner:")
    w.shot("06-admin-everyone")
    page.get_by_role("button", name="Next page").click()
    expect(page.locator("#page-label")).to_have_text("Page 2 (the last)")
    expect(page.locator("article.card")).to_have_count(4)
    second = page.locator("article.card h3").all_inner_texts()
    expect(page.get_by_role("button", name="Next page")).to_be_disabled()
    expect(page.get_by_role("button", name="Next page")).to_have_accessible_description("Page 2 (the last)")
    everyone = first + second
    assert len(everyone) == 9 and len(set(everyone)) == 9, everyone
    for name in ("Data helper", "Bob's notebook", "Mail sorter", "Crawler", "Pair programmer"):
        assert name in everyone
    listed = w.sent("GET", "owner=*")
    assert listed and all(r["headers"].get("x-snapwake-admin") == "1" for r in listed)
    assert any("limit=5" in r["url"] and "cursor=" in r["url"] for r in listed)
    page.get_by_role("button", name="First page").click()
    expect(page.locator("#page-label")).to_have_text("Page 1 (the first)")

    # One owner's agents.
    filt.get_by_label("Owner id").fill("carol")
    filt.get_by_role("button", name="Show").click()
    expect(page.locator("article.card")).to_have_count(2)
    expect(card(page, "Crawler")).to_contain_text("Owner: carol")


def wake_data_helper_under_fault(watched, server, status, action, error, times):
    """Alice's page, the browser allowed to log `status`, AgentKit failing the next `times`
    calls of `action` with `error`, and Data helper's Wake clicked: (watched page, its card)."""
    w = open_as_alice(watched, server)
    w.allowed.append(f"status of {status}")
    server.sim_post("/_sim/faults", {"action": action, "error": error,
                                     "trigger": {"next": times}})
    helper = card(w.page, "Data helper")
    helper.get_by_role("button", name="Wake Data helper").click()
    return w, helper


def test_a_failed_wake_shows_the_problem_and_tries_again(watched, server):
    # The resumed session is gone at the first poll: the wake fails for sure (502, retryable).
    w, helper = wake_data_helper_under_fault(
        watched, server, 502, "GetSession",
        {"code": "InvalidResource.NotFound", "status": 404}, 1)
    page = w.page
    alert = helper.get_by_role("alert")
    expect(alert).to_contain_text("Wake failed", timeout=30_000)
    expect(alert).to_contain_text("its snapshot is intact")
    again = alert.get_by_role("button", name="Try again")
    expect(again).to_be_visible()
    _, _, view = server.api("GET", f"/v1/agents/codex/{DATA_HELPER}")
    assert view["wake"]["state"] == "failed"
    # Only GetSession's answer was faulted: the session the Resume started comes up Ready
    # 300 ms later, and a listing then shows the agent awake after all (no notice; the view keeps
    # the failed wake). Make the simulator's world what the fault said: that sandbox stopped.
    if view.get("session"):
        server.sim_post(f"/_sim/sessions/{view['session']['session_id']}/status",
                        {"status": "Stopped"})
    # Listed again, the view's failed wake and the page's problem are one notice, not two.
    page.get_by_role("button", name="Refresh").click()
    expect(page.locator("#status")).to_have_text("4 agents listed.")
    expect(helper.get_by_role("alert")).to_have_count(1)
    expect(helper.locator(".wake-error")).to_have_count(0)
    w.shot("07-wake-failed")
    again.click()
    expect(helper.locator(".badge")).to_have_text("Awake", timeout=30_000)
    expect(helper.get_by_role("alert")).to_have_count(0)


def test_a_throttled_wake_is_retried_after_retry_after(watched, server):
    # AgentKit throttles the Resume through snapwake's own retries: 429, retryable.
    w, helper = wake_data_helper_under_fault(
        watched, server, 429, "ResumeSessionFromSnapshot",
        {"code": "Throttling", "status": 429}, 3)
    page = w.page
    expect(page.locator("#status")).to_contain_text("trying again in", timeout=20_000)
    expect(helper.locator(".badge")).to_have_text("Awake", timeout=30_000)
    assert len(w.sent("POST", f"{DATA_HELPER}/resume")) >= 2


def test_a_gone_agent_says_so(watched, server):
    w = open_as_alice(watched, server)
    w.allowed.append("status of 410")
    page = w.page
    assert server.api("DELETE", f"/v1/agents/codex/{DATA_HELPER}")[0] == 204
    card(page, "Data helper").get_by_role("button", name="Wake Data helper").click()
    problem = page.locator("#problem")
    expect(problem).to_contain_text("Agent deleted")
    expect(problem).to_contain_text("Data helper: the agent was deleted")
    expect(card(page, "Data helper")).to_have_count(0)


def test_phone_width_and_keyboard(watched, server):
    w = open_as_alice(watched, server, width=390, height=844)
    page = w.page
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    w.shot("08-phone")
    # Keyboard only: Tab to "Wake Data helper" and press Enter.
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('aria-label')") == "Wake Data helper":
            break
    else:
        raise AssertionError("Wake Data helper is not reachable with Tab")
    page.keyboard.press("Enter")
    expect(card(page, "Data helper").locator(".badge")).to_have_text("Awake", timeout=30_000)
    page.get_by_role("button", name="New agent").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Name")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog", name="New agent")).to_be_hidden()


def test_a_wake_waiting_for_the_last_snapshot_says_so(watched, server):
    # Data helper's last session just ended: its snapshot is still being made (and stays so).
    server.sim_post("/_sim/snapshots", {
        "tool_id": "t-codex-recoverable", "user_session_id": DATA_HELPER,
        "session_id": "s-just-ended", "status": "Creating"})
    w = open_as_alice(watched, server)
    helper = card(w.page, "Data helper")
    helper.get_by_role("button", name="Wake Data helper").click()
    expect(helper).to_contain_text("AgentKit is still saving the last session", timeout=30_000)
    w.shot("09-waiting-for-snapshot")
    _, _, view = server.api("GET", f"/v1/agents/codex/{DATA_HELPER}")
    assert view["wake"]["reason"] == "SNAPSHOT_IN_PROGRESS"
    assert server.received("ResumeSessionFromSnapshot") == 0


def test_a_session_in_an_unknown_status_says_so(watched, server):
    # AgentKit reports a session of Data helper in a status nobody documented.
    server.sim_post("/_sim/sessions", {
        "tool_id": "t-codex-recoverable", "user_session_id": DATA_HELPER,
        "status": "Paused",
        "metadata": [{"Key": "Username", "Type": "String", "Value": "alice"},
                     {"Key": "veadk_display_name", "Type": "String", "Value": "Data helper"}]})
    w = open_as_alice(watched, server)
    helper = card(w.page, "Data helper")
    expect(helper.locator(".badge")).to_have_text("Status unknown")
    expect(helper).to_contain_text("AgentKit reports an unexpected status")
    expect(helper).to_contain_text("Paused")
    expect(w.page.get_by_role("heading", name="Needs a look 1")).to_be_visible()
    w.shot("10-unknown-status")


def test_idle_sleep_is_set_per_agent_and_off_for_a_temporary_one(watched, server):
    w = open_as_alice(watched, server)
    page = w.page
    claw = card(page, "Research claw")
    idle = claw.get_by_label("Put to sleep when unused for")
    expect(idle).to_have_value("")
    idle.select_option("0")
    expect(claw.get_by_label("Put to sleep when unused for")).to_have_value("0")
    puts = w.sent("PUT", "/idle")
    assert [json.loads(p["body"]) for p in puts] == [{"minutes": 0}]
    expect(page.locator("#status")).to_contain_text("never put to sleep")
    # A time of its own: the awake agent says when it goes to sleep unless it is used.
    claw.get_by_label("Put to sleep when unused for").select_option("15")
    expect(claw).to_contain_text("unless it is used")
    when = claw.locator(".idle time")
    expect(when).to_have_count(1)
    assert json.loads(w.sent("PUT", "/idle")[-1]["body"]) == {"minutes": 15}
    # The keyboard reaches it, and it is named for a screen reader.
    claw.get_by_label("Put to sleep when unused for").focus()
    expect(claw.get_by_label("Put to sleep when unused for")).to_be_focused()
    # A temporary agent keeps no snapshot: off, and the card says why; nothing to change.
    scratch = card(page, "Scratch hermes")
    expect(scratch).to_contain_text("Idle sleep: off")
    expect(scratch.get_by_label("Put to sleep when unused for")).to_have_count(0)
    w.shot("12-idle-sleep")
    # Back to the deployment's time.
    claw.get_by_label("Put to sleep when unused for").select_option("")
    expect(claw.get_by_label("Put to sleep when unused for")).to_have_value("")
    assert json.loads(w.sent("PUT", "/idle")[-1]["body"]) == {"minutes": None}
