"""The token endpoint a registry in ``auth: token`` mode sends its clients to.

It stands in for Docker Hub's or ECR Public's: a client that met a ``Bearer``
challenge asks it for ``?service=…&scope=repository:<name>:<actions>`` with basic
credentials, and gets a JWT (RS256) granting those actions. The registry trusts the
token because its header carries the signing certificate (``x5c``), which chains to
the one certificate of the registry's ``rootcertbundle``.
"""

from __future__ import annotations

import base64
import datetime
import functools
import secrets
import time
from dataclasses import dataclass, field

import jwt
from aiohttp import hdrs, web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

KEY_BITS = 2048
CERTIFICATE_NAME = "followup-bot sandbox token issuer"
# A registry allows its own leeway too; this keeps a token valid across small clock steps.
NOT_BEFORE_SLACK = 5
BAD_CREDENTIALS = "bad credentials"
# Actions a registry knows; anything else asked for is not granted.
KNOWN_ACTIONS = ("pull", "push", "delete")


@dataclass(frozen=True)
class SigningKey:
    key: rsa.RSAPrivateKey
    certificate: x509.Certificate

    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def x5c(self) -> list[str]:
        """The chain for a JWT header: the certificate alone, DER in standard base64."""
        der = self.certificate.public_bytes(serialization.Encoding.DER)
        return [base64.b64encode(der).decode()]


@functools.cache
def signing_key() -> SigningKey:
    """One self-signed key per process: generating RSA keys is the slow part of a start."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CERTIFICATE_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return SigningKey(key, certificate)


def basic_authorization(username: str, password: str) -> str:
    """An ``Authorization: Basic`` value; compared whole, since a stand-in knows one user."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def granted(scope: str) -> dict[str, object] | None:
    """The ``access`` entry for ``repository:<name>:<actions>``, or None for another scope."""
    kind, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    if kind != "repository" or not name:
        return None
    wanted = [action for action in actions.split(",") if action in KNOWN_ACTIONS]
    return {"type": "repository", "name": name, "actions": wanted}


@dataclass
class TokenServer:
    """Issues tokens to ``username``/``password``; counts what it was asked (``requests``)."""

    service: str
    issuer: str
    username: str
    password: str
    expires_in: int = 300
    requests: list[str] = field(default_factory=list)  # the scopes asked, one entry a request
    realm: str = ""
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/token", self._token)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.realm = f"http://127.0.0.1:{self._runner.addresses[0][1]}/token"
        return self.realm

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get(hdrs.AUTHORIZATION, "")
        expected = basic_authorization(self.username, self.password)
        return secrets.compare_digest(header.encode(), expected.encode())

    async def _token(self, request: web.Request) -> web.StreamResponse:
        scopes = request.query.getall("scope", [])
        self.requests.append(" ".join(scopes))
        if not self._authorized(request):
            return web.json_response({"details": BAD_CREDENTIALS}, status=401)
        access = [entry for entry in map(granted, scopes) if entry is not None]
        return web.json_response({"token": self.issue(access), "expires_in": self.expires_in})

    def issue(self, access: list[dict[str, object]]) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": self.username,
            "aud": self.service,
            "exp": now + self.expires_in,
            "nbf": now - NOT_BEFORE_SLACK,
            "iat": now,
            "jti": secrets.token_hex(16),
            "access": access,
        }
        key = signing_key()
        return jwt.encode(claims, key.key, algorithm="RS256", headers={"x5c": key.x5c()})
