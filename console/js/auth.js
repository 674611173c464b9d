// Deployed sign-in (config.json `oidc`): OpenID Connect authorization code flow with PKCE, in
// the browser, for a public client (no client secret). The issuer's discovery document names
// the endpoints; the token is kept in sessionStorage (this tab only, gone when it closes) and
// sent as `Authorization: Bearer` to the API, whose JWT authorizer verifies it. docs/console.md.

const PENDING = "snapwake.oidc.pending";
const TOKEN = "snapwake.oidc.token";

export class SignInError extends Error {
  constructor(detail) {
    super(detail);
    this.title = "Sign-in failed";
    this.detail = detail;
    this.retryable = false;
  }
}

function base64url(bytes) {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(n = 32) {
  return base64url(crypto.getRandomValues(new Uint8Array(n)));
}

async function s256(text) {
  return base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** A JWT's claims, unverified: for showing who is signed in and checking the nonce only. */
export function claimsOf(jwt) {
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const text = atob(part + "=".repeat((4 - (part.length % 4)) % 4));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(text, (c) => c.charCodeAt(0))));
  } catch {
    return {};
  }
}

async function discover(issuer) {
  const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  let res;
  try {
    res = await fetch(url, { headers: { Accept: "application/json" } });
  } catch (e) {
    throw new SignInError(`The identity provider did not answer (${e.message}).`);
  }
  if (!res.ok) throw new SignInError(`The identity provider's discovery answered ${res.status}.`);
  return res.json();
}

function redirectUri(oidc) {
  return oidc.redirect_uri || `${window.location.origin}${window.location.pathname}`;
}

function readToken() {
  try {
    const t = JSON.parse(sessionStorage.getItem(TOKEN) || "null");
    return t && t.token && t.expires_at > Date.now() + 15_000 ? t : null;
  } catch {
    return null;
  }
}

/** Finish a sign-in the provider sent the browser back from (`?code=&state=`). */
async function finish(oidc, params) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  const clean = new URL(window.location.href);
  for (const k of ["code", "state", "error", "error_description", "session_state", "iss"]) {
    clean.searchParams.delete(k);
  }
  window.history.replaceState(null, "", clean.href);
  if (params.get("error")) {
    throw new SignInError(params.get("error_description") || params.get("error"));
  }
  if (!pending || pending.state !== params.get("state")) {
    throw new SignInError("The answer does not match a sign-in started from this page.");
  }
  const meta = await discover(oidc.issuer);
  const body = new URLSearchParams({
    grant_type: "authorization_code",
    code: params.get("code"),
    redirect_uri: pending.redirect_uri,
    client_id: oidc.client_id,
    code_verifier: pending.verifier,
  });
  let res;
  try {
    res = await fetch(meta.token_endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
      body,
    });
  } catch (e) {
    throw new SignInError(`The token endpoint did not answer (${e.message}).`);
  }
  const tokens = await res.json().catch(() => ({}));
  if (!res.ok) throw new SignInError(tokens.error_description || tokens.error || `token endpoint: ${res.status}`);
  const idClaims = tokens.id_token ? claimsOf(tokens.id_token) : {};
  if (tokens.id_token && idClaims.nonce !== pending.nonce) {
    throw new SignInError("The identity token was not issued for this sign-in (nonce).");
  }
  const which = oidc.token === "id_token" ? "id_token" : "access_token";
  const token = tokens[which];
  if (!token) throw new SignInError(`The provider sent no ${which}.`);
  const expiresIn = Number(tokens.expires_in) || 3600;
  const claims = { ...claimsOf(token), ...idClaims };
  sessionStorage.setItem(TOKEN, JSON.stringify({
    token,
    id_token: tokens.id_token || null,
    expires_at: Date.now() + expiresIn * 1000,
    name: claims.preferred_username || claims.email || claims.name || claims.username || claims.sub || "",
    ids: {
      sub: claims.sub,
      email: claims.email,
      email_verified: claims.email_verified,
      preferred_username: claims.preferred_username,
      username: claims.username,
    },
    groups: [].concat(claims["cognito:groups"] || claims.groups || []),
  }));
}

/**
 * Whether one `Admins` entry names this person, by the API's rule (docs/identity.md, "Admins"):
 * `claim:value` looks in that claim, a bare value in `sub` only; `email` counts only when
 * verified; ASCII case only is ignored.
 */
function matchesAdmin(entry, ids) {
  const asciiLower = (x) => String(x).replace(/[A-Z]/g, (c) => c.toLowerCase());
  const at = entry.indexOf(":");
  const named = at > 0 && ["sub", "email", "preferred_username", "username"].includes(entry.slice(0, at));
  const claim = named ? entry.slice(0, at) : "sub";
  const value = named ? entry.slice(at + 1).trim() : entry.trim();
  if (claim === "email" && !(ids.email_verified === true || ids.email_verified === "true")) return false;
  return ids[claim] != null && asciiLower(ids[claim]) === asciiLower(value);
}

/**
 * The deployed session. `start()` finishes a sign-in in progress (throws a SignInError when it
 * failed); `signedIn`, `label()` and `headers()` then say who is calling.
 */
export function oidcSession(config) {
  const oidc = config.oidc;
  let token = readToken();
  return {
    async start() {
      const params = new URLSearchParams(window.location.search);
      if (params.has("code") || params.has("error")) await finish(oidc, params);
      token = readToken();
    },
    get signedIn() {
      return Boolean(token);
    },
    label: () => token?.name ?? "",
    /**
     * Whether to offer the admin controls: the token names a group of `oidc.admin_groups` or
     * an id of `oidc.admins` (the stack's AdminGroups and Admins). Only a hint for the page:
     * the API decides, and answers a non-admin's `owner=` with 404.
     */
    get admin() {
      if (!token) return false;
      const groups = oidc.admin_groups || [];
      return (oidc.admins || []).some((entry) => matchesAdmin(entry, token.ids || {}))
        || (token.groups || []).some((g) => groups.includes(g));
    },
    headers: () => (token ? { Authorization: `Bearer ${token.token}` } : {}),
    async signIn() {
      const meta = await discover(oidc.issuer);
      const pending = {
        state: random(),
        nonce: random(),
        verifier: random(48),
        redirect_uri: redirectUri(oidc),
      };
      sessionStorage.setItem(PENDING, JSON.stringify(pending));
      const url = new URL(meta.authorization_endpoint);
      url.search = new URLSearchParams({
        response_type: "code",
        client_id: oidc.client_id,
        redirect_uri: pending.redirect_uri,
        scope: oidc.scopes || "openid profile email",
        state: pending.state,
        nonce: pending.nonce,
        code_challenge: await s256(pending.verifier),
        code_challenge_method: "S256",
      }).toString();
      window.location.assign(url.href);
    },
    /** Forget the token (also when the API says it is no longer good). */
    forget() {
      sessionStorage.removeItem(TOKEN);
      token = null;
    },
    async signOut() {
      const idToken = token?.id_token;
      this.forget();
      let meta = null;
      try {
        meta = await discover(oidc.issuer);
      } catch {
        meta = null;
      }
      if (meta?.end_session_endpoint) {
        const url = new URL(meta.end_session_endpoint);
        url.searchParams.set("client_id", oidc.client_id);
        url.searchParams.set("post_logout_redirect_uri", redirectUri(oidc));
        if (idToken) url.searchParams.set("id_token_hint", idToken);
        window.location.assign(url.href);
      } else {
        window.location.reload();
      }
    },
  };
}
