"""Stand-ins for a deployment of the page: the static files served from `console/` as any web
server would (with a config.json in `oidc` mode and the Content-Security-Policy docs/console.md
recommends), a gateway in front of `snapwake serve` that takes a bearer token where API
Gateway's JWT authorizer would, and an OpenID provider that checks PKCE for real."""

import base64
import hashlib
import json
import pathlib
import secrets
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONSOLE = pathlib.Path(__file__).resolve().parents[1]
TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript",
         ".svg": "image/svg+xml", ".json": "application/json"}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Quiet(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Provider:
    """An OpenID provider: discovery, /authorize (signs the user in at once as `user`) and
    /token (refuses a code_verifier that does not hash to the code's challenge)."""

    def __init__(self, client_id="console", user="alice"):
        self.client_id, self.user = client_id, user
        self.codes, self.tokens, self.seen = {}, {}, []
        provider = self

        class Handler(Quiet):
            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                cors = {"Access-Control-Allow-Origin": "*", "Content-Type": "application/json"}
                if url.path == "/.well-known/openid-configuration":
                    doc = {"issuer": provider.issuer,
                           "authorization_endpoint": provider.issuer + "/authorize",
                           "token_endpoint": provider.issuer + "/token"}
                    return self.answer(200, json.dumps(doc).encode(), cors)
                if url.path == "/authorize":
                    provider.seen.append(q)
                    if q.get("client_id") != provider.client_id or q.get("code_challenge_method") != "S256":
                        return self.answer(400, b"bad authorization request")
                    code = secrets.token_urlsafe(16)
                    provider.codes[code] = q
                    back = q["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": q["state"]})
                    return self.answer(302, b"", {"Location": back})
                return self.answer(404)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                form = dict(urllib.parse.parse_qsl(body))
                cors = {"Access-Control-Allow-Origin": "*", "Content-Type": "application/json"}
                asked = provider.codes.pop(form.get("code"), None)
                challenge = b64url(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
                if (not asked or form.get("grant_type") != "authorization_code"
                        or form.get("redirect_uri") != asked["redirect_uri"]
                        or form.get("client_id") != provider.client_id
                        or challenge != asked["code_challenge"]):
                    return self.answer(400, json.dumps({"error": "invalid_grant"}).encode(), cors)
                access = "at-" + secrets.token_urlsafe(16)
                provider.tokens[access] = provider.user
                claims = {"iss": provider.issuer, "sub": provider.user, "aud": provider.client_id,
                          "nonce": asked["nonce"], "preferred_username": provider.user}
                id_token = ".".join([b64url(b'{"alg":"none"}'), b64url(json.dumps(claims).encode()), ""])
                tokens = {"access_token": access, "id_token": id_token, "token_type": "Bearer",
                          "expires_in": 3600}
                return self.answer(200, json.dumps(tokens).encode(), cors)

        self.server = start(Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_port}"

    def stop(self):
        self.server.shutdown()


class Site:
    """The page as static files plus, on the same origin, a gateway to `api` (the snapwake
    serve URL): a request with a token `provider` issued is passed on as its user; anything
    else is API Gateway's own 401 `{"message":"Unauthorized"}` (`refused` counts them). `identity_headers` records any X-Snapwake-* header a
    browser sent (a deployed page must send none)."""

    def __init__(self, api, provider):
        self.api, self.provider = api, provider
        self.identity_headers, self.bearers = [], []
        self.refused = 0
        site = self

        class Handler(Quiet):
            def gateway(self, method):
                for k in self.headers.keys():
                    if k.lower().startswith("x-snapwake-"):
                        site.identity_headers.append(k)
                auth = self.headers.get("Authorization", "")
                site.bearers.append(auth)
                user = provider.tokens.get(auth.removeprefix("Bearer "))
                if not auth.startswith("Bearer ") or not user:
                    # What an HTTP API's JWT authorizer answers itself (docs/http-api.md,
                    # "Errors API Gateway answers itself"): no problem+json, no Lambda.
                    site.refused += 1
                    why = "the token has expired" if auth.startswith("Bearer ") else "missing token"
                    return self.answer(401, b'{"message":"Unauthorized"}', {
                        "Content-Type": "application/json",
                        "www-authenticate": f'Bearer scope="" error="invalid_token" error_description="{why}"',
                        "apigw-requestid": "Mc7UVioPPHcEKPA=",
                    })
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))) or None
                headers = {"X-Snapwake-User": user}
                for k in ("Content-Type", "Idempotency-Key", "If-Match"):
                    if self.headers.get(k):
                        headers[k] = self.headers[k]
                req = urllib.request.Request(site.api + self.path, data=body, method=method, headers=headers)
                try:
                    res = urllib.request.urlopen(req, timeout=30)
                except urllib.error.HTTPError as e:
                    res = e
                data = res.read()
                keep = {k: res.headers[k] for k in ("Content-Type", "Location", "Retry-After", "ETag")
                        if res.headers.get(k)}
                return self.answer(res.status, data, keep)

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path).path
                if path.startswith("/v1/"):
                    return self.gateway("GET")
                if path == "/config.json":
                    return self.answer(200, json.dumps(site.config()).encode(),
                                       {"Content-Type": "application/json", "Cache-Control": "no-cache"})
                file = (CONSOLE / (path.lstrip("/") or "index.html")).resolve()
                if CONSOLE not in file.parents or not file.is_file() or "tests" in file.parts:
                    return self.answer(404)
                return self.answer(200, file.read_bytes(), {
                    "Content-Type": TYPES.get(file.suffix, "application/octet-stream"),
                    "Content-Security-Policy": site.csp(),
                })

            def do_POST(self):
                return self.gateway("POST")

            def do_DELETE(self):
                return self.gateway("DELETE")

        self.server = start(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"

    def config(self):
        return {"api_base": self.url.rstrip("/"),
                "oidc": {"issuer": self.provider.issuer, "client_id": self.provider.client_id,
                         "scopes": "openid profile"}}

    def csp(self):
        return ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                f"connect-src 'self' {self.provider.issuer}; base-uri 'none'; form-action 'self'; "
                "frame-ancestors 'none'")

    def stop(self):
        self.server.shutdown()
