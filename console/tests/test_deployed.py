"""The page deployed as static files (docs/console.md): config.json in `oidc` mode, sign-in by
authorization code with PKCE at an OpenID provider, the bearer token on every API request and
no local identity header, ever."""

import pytest
from playwright.sync_api import expect

from fakes import Provider, Site
from test_my_agents import card


@pytest.fixture
def deployed(server):
    provider = Provider()
    site = Site(server.url, provider)
    yield site, provider
    site.stop()
    provider.stop()


def test_before_sign_in_the_page_offers_sign_in_and_calls_nothing(watched, deployed):
    site, _ = deployed
    w = watched()
    w.page.goto(site.url)
    expect(w.page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(w.page.get_by_role("heading", name="Sign in to see your agents")).to_be_visible()
    expect(w.page.locator("#local-identity")).to_be_hidden()
    expect(w.page.get_by_role("button", name="New agent")).to_be_hidden()
    w.page.wait_for_timeout(300)
    assert w.requests == [], "no API request before sign-in"
    assert site.identity_headers == [] and site.bearers == []
    w.shot("09-deployed-signed-out")


def test_sign_in_with_pkce_then_every_request_carries_the_token(watched, deployed):
    site, provider = deployed
    w = watched()
    w.allowed.append("status of 401")
    page = w.page
    page.goto(site.url)
    page.get_by_role("button", name="Sign in").click()
    # To the provider and back: the code is exchanged (the provider checks the verifier).
    expect(page.get_by_text("Signed in as alice")).to_be_visible()
    expect(card(page, "Data helper")).to_be_visible()
    assert page.url == site.url, "the code and state are gone from the address"
    asked = provider.seen[0]
    assert asked["code_challenge_method"] == "S256" and asked["redirect_uri"] == site.url
    assert asked["scope"] == "openid profile"
    token = next(iter(provider.tokens))
    assert site.bearers and all(b == f"Bearer {token}" for b in site.bearers)
    assert site.identity_headers == []
    assert all("x-snapwake-user" not in r["headers"] for r in w.requests)

    # Acting works through the gateway too: wake Data helper.
    card(page, "Data helper").get_by_role("button", name="Wake Data helper").click()
    expect(card(page, "Data helper").locator(".badge")).to_have_text("Awake", timeout=30_000)

    # A token the API no longer accepts (API Gateway's own 401): signed out, with the reason.
    provider.tokens.clear()
    page.get_by_role("button", name="Refresh").click()
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
    expect(page.locator("#problem")).to_contain_text("Your sign-in has expired")

    # Signing in again, then out.
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_text("Signed in as alice")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('snapwake.oidc.token')") is None


def test_a_sign_in_answer_not_started_here_is_refused(watched, deployed):
    site, _ = deployed
    w = watched()
    w.page.goto(site.url + "?code=stolen&state=forged")
    expect(w.page.locator("#problem")).to_contain_text("Sign-in failed")
    expect(w.page.locator("#problem")).to_contain_text("does not match a sign-in started from this page")
    expect(w.page.get_by_role("button", name="Sign in")).to_be_visible()
    assert "code=" not in w.page.url
    assert site.bearers == []
