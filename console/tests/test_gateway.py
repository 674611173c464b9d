"""API Gateway's own answers, the bare `{"message": ...}` it sends before or instead of
snapwake's functions (docs/http-api.md, "Errors API Gateway answers itself"), put in front of
`snapwake serve --demo` with Playwright's `page.route`: what the page says for each (never the
raw JSON), which it asks again on its own, and which it must not repeat."""

import json
import re

from playwright.sync_api import expect

from conftest import DATA_HELPER
from fakes import Provider, Site
from test_my_agents import card, open_as_alice

LIST = re.compile(r".*/v1/agents(\?.*)?$")
RESUME = re.compile(rf".*/v1/agents/codex/{DATA_HELPER}/resume$")
REQUEST_ID = "Mc7UVioPPHcEKPA="


def gateway(route, status, message, headers=None):
    """Answer as API Gateway itself does: `{"message"}`, application/json, its request id."""
    route.fulfill(status=status, body=json.dumps({"message": message}),
                  headers={"Content-Type": "application/json", "apigw-requestid": REQUEST_ID,
                           **(headers or {})})


def shows_no_raw_answer(page):
    shown = page.locator("body").inner_text()
    for raw in ('{"message"', "[object Object]", "Too Many Requests", "Service Unavailable",
                "Internal Server Error", '"Not Found"'):
        assert raw not in shown, f"{raw!r} is shown:\n{shown}"


def listings(w):
    return [r for r in w.requests if r["method"] == "GET" and LIST.match(r["url"])]


def test_a_throttled_list_is_asked_again_and_then_shown(watched, server):
    w = watched()
    w.allowed.append("status of 429")
    page = w.page
    throttled = []

    def throttle_twice(route):
        if len(throttled) < 2:
            # The first names a time (honoured); the second none (back-off).
            throttled.append(route.request.url)
            return gateway(route, 429, "Too Many Requests", {"Retry-After": "2"} if len(throttled) == 1 else None)
        return route.continue_()

    page.route(LIST, throttle_twice)
    page.goto(server.url + "/")
    expect(page.locator("#status")).to_have_text("snapwake is busy: trying again in 2 s…")
    shows_no_raw_answer(page)
    w.shot("11-busy-trying-again")
    expect(card(page, "Data helper")).to_be_visible(timeout=20_000)
    expect(page.locator("#problem")).to_be_hidden()
    assert len(listings(w)) == 3, "two throttled answers, then the listing"


def test_throttling_that_does_not_stop_says_so_after_four_tries(watched, server):
    w = watched()
    w.allowed.append("status of 429")
    page = w.page
    page.route(LIST, lambda route: gateway(route, 429, "Too Many Requests", {"Retry-After": "1"}))
    page.goto(server.url + "/")
    problem = page.locator("#problem")
    expect(problem).to_contain_text("snapwake is busy", timeout=20_000)
    expect(problem).to_contain_text("It was still too busy after 4 tries. Wait a minute, then try again.")
    # Nothing was listed, so nothing claims there are no agents.
    expect(page.get_by_text("No agents yet")).to_have_count(0)
    expect(page.locator("#status")).to_have_text("")
    shows_no_raw_answer(page)
    w.shot("12-busy-gave-up")
    assert len(listings(w)) == 4, "a bounded number of attempts"
    # Once the API answers again, "Try again" lists the agents.
    page.unroute(LIST)
    problem.get_by_role("button", name="Try again").click()
    expect(card(page, "Data helper")).to_be_visible()
    expect(problem).to_be_hidden()


def test_a_gateway_timeout_on_wake_is_asked_again(watched, server):
    w = open_as_alice(watched, server)
    w.allowed.append("status of 503")
    page = w.page
    timed_out = []

    def time_out_once(route):
        if not timed_out:
            timed_out.append(route.request.url)
            return gateway(route, 503, "Service Unavailable", {"Retry-After": "2"})
        return route.continue_()

    page.route(RESUME, time_out_once)
    helper = card(page, "Data helper")
    helper.get_by_role("button", name="Wake Data helper").click()
    expect(helper).to_contain_text("snapwake is busy: trying again in 2 s…")
    shows_no_raw_answer(page)
    w.shot("13-wake-busy-trying-again")
    expect(helper.locator(".badge")).to_have_text("Awake", timeout=30_000)
    assert len(w.sent("POST", f"{DATA_HELPER}/resume")) >= 2
    # The wake is safe to ask again: still one Resume sent to AgentKit.
    assert server.received("ResumeSessionFromSnapshot") == 1


def test_a_delete_the_gateway_stopped_waiting_for_is_not_repeated(watched, server):
    w = open_as_alice(watched, server)
    w.allowed.append("status of 503")
    page = w.page
    page.route(re.compile(rf".*/v1/agents/codex/{DATA_HELPER}$"),
               lambda route: gateway(route, 503, "Service Unavailable")
               if route.request.method == "DELETE" else route.continue_())
    helper = card(page, "Data helper")
    helper.get_by_role("button", name="Delete agent Data helper").click()
    page.get_by_role("dialog", name="Delete Data helper?").get_by_role("button", name="Delete agent").click()
    alert = helper.get_by_role("alert")
    expect(alert).to_contain_text("snapwake is busy")
    expect(alert).to_contain_text("may still have done it: refresh to see before trying again")
    shows_no_raw_answer(page)
    assert len(w.sent("DELETE", DATA_HELPER)) == 1, "a delete is not repeated on its own"


def test_a_failed_function_is_an_error_to_report_not_json(watched, server):
    w = open_as_alice(watched, server)
    w.allowed.append("status of 500")
    page = w.page
    page.route(RESUME, lambda route: gateway(route, 500, "Internal Server Error"))
    helper = card(page, "Data helper")
    helper.get_by_role("button", name="Wake Data helper").click()
    alert = helper.get_by_role("alert")
    expect(alert).to_contain_text("Something went wrong in snapwake")
    expect(alert).to_contain_text(f"tell the people who run snapwake and give them the request id {REQUEST_ID}")
    expect(alert.get_by_role("button", name="Try again")).to_have_count(0)
    expect(page.locator("#status")).to_contain_text("Data helper did not wake: Something went wrong in snapwake.")
    shows_no_raw_answer(page)
    w.shot("14-function-failed")
    assert len(w.sent("POST", f"{DATA_HELPER}/resume")) == 1, "a failure is reported, not retried"
    assert server.received("ResumeSessionFromSnapshot") == 0


def test_an_unknown_route_says_the_address_is_wrong(watched, server):
    w = watched()
    w.allowed.append("status of 404")
    page = w.page
    page.route(LIST, lambda route: gateway(route, 404, "Not Found"))
    page.goto(server.url + "/")
    problem = page.locator("#problem")
    expect(problem).to_contain_text("The page cannot find snapwake")
    expect(problem).to_contain_text("api_base (config.json) may be wrong")
    shows_no_raw_answer(page)
    assert len(listings(w)) == 1


def test_an_expired_token_asks_to_sign_in_again_once(watched, server):
    provider = Provider()
    site = Site(server.url, provider)
    try:
        w = watched()
        w.allowed.append("status of 401")
        page = w.page
        page.goto(site.url)
        page.get_by_role("button", name="Sign in", exact=True).click()
        expect(card(page, "Data helper")).to_be_visible()
        # The token expires at the provider's end: API Gateway's authorizer refuses it.
        provider.tokens.clear()
        page.get_by_role("button", name="Refresh").click()
        problem = page.locator("#problem")
        expect(problem.locator("strong")).to_have_text("Your sign-in has expired")
        expect(problem).to_contain_text("Sign in again to carry on.")
        again = problem.get_by_role("button", name="Sign in again")
        expect(again).to_be_visible()
        expect(card(page, "Data helper")).to_have_count(0)
        expect(page.get_by_text("No agents yet")).to_have_count(0)
        expect(page.locator("#status")).to_have_text("")
        shows_no_raw_answer(page)
        w.shot("15-sign-in-expired")
        page.wait_for_timeout(500)
        assert site.refused == 1, "one refused request: no loop, no retry"
        # Sign in again: back with a fresh token, the agents listed.
        again.click()
        expect(page.get_by_text("Signed in as alice")).to_be_visible()
        expect(card(page, "Data helper")).to_be_visible()
        expect(problem).to_be_hidden()
        assert site.refused == 1
    finally:
        site.stop()
        provider.stop()
