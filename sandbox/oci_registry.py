"""A real OCI registry on loopback: the CNCF distribution registry, run as a process.

The registry client is tested against the registry itself rather than a stand-in,
because what it must get right is the registry's behaviour: which media types it
answers for, its challenges, its token checks. ``running_registry`` starts
``docker-registry serve`` (Debian's package of distribution 2.8) on a free port with
filesystem storage under a test's directory, in one of three auth modes:

- ``none``: anyone may pull and push;
- ``basic``: an htpasswd file (bcrypt, made by ``htpasswd``) with ``USERNAME``/``PASSWORD``;
- ``token``: bearer tokens from a ``TokenServer`` on loopback (``sandbox.oci_token_server``),
  which issues them to the same credentials.

``RegistryServer.push_image`` pushes a tiny valid image over the distribution API.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
import io
import json
import os
import secrets
import socket
import tarfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import aiohttp
import yaml

from sandbox.oci_token_server import TokenServer, basic_authorization, signing_key

AuthMode = Literal["none", "basic", "token"]

REGISTRY_BINARY = "docker-registry"
USERNAME = "sandbox-user"
PASSWORD = "sandbox-password"
SERVICE = "followup-bot-sandbox-registry"
ISSUER = "followup-bot-sandbox-issuer"
START_TIMEOUT = 20.0
POLL_TIMEOUT = aiohttp.ClientTimeout(total=2.0)
STOP_TIMEOUT = 5.0
POLL_INTERVAL = 0.05
PORT_ATTEMPTS = 5
# The fastest cost htpasswd allows: the registry checks the hash on every request.
BCRYPT_COST = "4"

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

NOT_INSTALLED = (
    "docker-registry is not installed (Debian: apt-get install docker-registry apache2-utils)"
)
DID_NOT_START = "docker-registry did not answer GET /v2/ within {seconds:.0f} s; stderr:\n{stderr}"
EXITED = "docker-registry exited with {code}; stderr:\n{stderr}"
PUSH_FAILED = "push of {image}: {step} answered {status}: {body}"
DIGEST_MISMATCH = "the registry stored manifest {stored}, not {sent}"
ADDRESS_IN_USE = "address already in use"


class RegistryStartError(RuntimeError):
    """The registry process would not start (or is not installed)."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(content: bytes) -> tuple[bytes, bytes]:
    """A gzipped tar with one file, and the tar itself (the config names its digest)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("image.txt")
        info.size = len(content)
        tar.addfile(info, io.BytesIO(content))
    tar_bytes = buffer.getvalue()
    return gzip.compress(tar_bytes, mtime=0), tar_bytes


@dataclass
class RegistryServer:
    """A running registry: where it is, how to authenticate, and what its token server saw."""

    url: str
    host: str
    auth: AuthMode
    session: aiohttp.ClientSession
    token_server: TokenServer | None = None
    username: str = USERNAME
    password: str = PASSWORD
    pushed: list[str] = field(default_factory=list)

    @property
    def token_requests(self) -> int:
        """Requests the token server answered (pushes included); 0 unless ``auth="token"``."""
        return len(self.token_server.requests) if self.token_server is not None else 0

    async def _authorization(self, repository: str) -> dict[str, str]:
        """The header a client sends once challenged, for pulling and pushing ``repository``."""
        if self.auth == "basic":
            return {"Authorization": basic_authorization(self.username, self.password)}
        if self.auth == "token" and self.token_server is not None:
            params = {"service": SERVICE, "scope": f"repository:{repository}:pull,push"}
            basic = {"Authorization": basic_authorization(self.username, self.password)}
            realm = self.token_server.realm
            async with self.session.get(realm, params=params, headers=basic) as got:
                got.raise_for_status()
                body = await got.json()
            return {"Authorization": f"Bearer {body['token']}"}
        return {}

    async def _put_blob(self, repository: str, data: bytes, headers: dict[str, str]) -> str:
        digest = _digest(data)
        url = f"{self.url}/v2/{repository}/blobs/uploads/"
        async with self.session.post(url, headers=headers) as started:
            await self._expect(started, 202, repository, "blob upload start")
            location = started.headers["Location"]
        target = location if "://" in location else self.url + location
        target += ("&" if "?" in target else "?") + f"digest={digest}"
        upload = {**headers, "Content-Type": "application/octet-stream"}
        async with self.session.put(target, data=data, headers=upload) as finished:
            await self._expect(finished, 201, repository, "blob upload")
        return digest

    async def _expect(
        self, response: aiohttp.ClientResponse, status: int, image: str, step: str
    ) -> None:
        if response.status != status:
            body = await response.text()
            message = PUSH_FAILED.format(image=image, step=step, status=response.status, body=body)
            raise RuntimeError(message)

    async def push_image(self, repository: str, tag: str) -> str:
        """Push a one-layer OCI image as ``repository:tag``; its manifest's digest."""
        headers = await self._authorization(repository)
        layer, tar_bytes = _layer(f"{repository}:{tag}\n".encode())
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": {},
                "rootfs": {"type": "layers", "diff_ids": [_digest(tar_bytes)]},
            }
        ).encode()
        config_digest = await self._put_blob(repository, config, headers)
        layer_digest = await self._put_blob(repository, layer, headers)
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config)},
                "layers": [{"mediaType": OCI_LAYER, "digest": layer_digest, "size": len(layer)}],
            }
        ).encode()
        url = f"{self.url}/v2/{repository}/manifests/{tag}"
        put = {**headers, "Content-Type": OCI_MANIFEST}
        async with self.session.put(url, data=manifest, headers=put) as response:
            await self._expect(response, 201, f"{repository}:{tag}", "manifest upload")
            stored = response.headers.get("Docker-Content-Digest")
        sent = _digest(manifest)
        if stored != sent:
            raise RuntimeError(DIGEST_MISMATCH.format(stored=stored, sent=sent))
        self.pushed.append(f"{repository}:{tag}")
        return sent


async def _htpasswd_entry() -> bytes:
    """A bcrypt htpasswd line: the only hash the registry accepts."""
    process = await asyncio.create_subprocess_exec(
        "htpasswd",
        "-nbB",
        "-C",
        BCRYPT_COST,
        USERNAME,
        PASSWORD,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RegistryStartError(err.decode(errors="replace"))
    return out


def _auth_config(
    workdir: Path, auth: AuthMode, *, realm: str, htpasswd: bytes
) -> dict[str, object]:
    """The config's ``auth`` section, with the files it names written under ``workdir``."""
    if auth == "basic":
        path = workdir / "htpasswd"
        path.write_bytes(htpasswd)
        return {"htpasswd": {"realm": SERVICE, "path": str(path)}}
    if auth == "token":
        bundle = workdir / "token-root.pem"
        bundle.write_bytes(signing_key().certificate_pem())
        token = {"realm": realm, "service": SERVICE, "issuer": ISSUER}
        return {"token": {**token, "rootcertbundle": str(bundle)}}
    return {}


def _write_config(workdir: Path, port: int, auth: dict[str, object]) -> Path:
    path = workdir / "config.yml"
    path.write_text(yaml.safe_dump(_config(workdir, port, auth)))
    return path


def _read(path: Path) -> str:
    return path.read_text(errors="replace")


def _config(workdir: Path, port: int, auth: dict[str, object]) -> dict[str, object]:
    config: dict[str, object] = {
        "version": "0.1",
        "log": {"level": "error", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(workdir / "storage")},
            "delete": {"enabled": True},
            "maintenance": {"uploadpurging": {"enabled": False}},
        },
        "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
    }
    if auth:
        config["auth"] = auth
    return config


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    process.terminate()
    try:
        await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()


async def _answers(session: aiohttp.ClientSession, url: str) -> bool:
    """Whether ``GET /v2/`` answers as a registry does: 200, or 401 when auth is on."""
    # A poll that times out (a busy machine, or a listener that never answers) is no
    # answer; the next poll, or the process's exit, decides.
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        async with session.get(f"{url}/v2/", timeout=POLL_TIMEOUT) as response:
            return response.status in (200, 401)
    return False


async def _wait_ready(
    process: asyncio.subprocess.Process, url: str, session: aiohttp.ClientSession, stderr: Path
) -> None:
    """Until ``GET /v2/`` answers 200 or 401; ``RegistryStartError`` if it exits or never does.

    Each poll races the process's exit: on a port taken meanwhile, the other listener may
    never answer, and the registry's exit (it could not listen) must end the wait at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT
    exited = asyncio.ensure_future(process.wait())
    try:
        while (remaining := deadline - loop.time()) > 0:
            poll = asyncio.ensure_future(_answers(session, url))
            done, _ = await asyncio.wait(
                {poll, exited}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            if exited in done:
                poll.cancel()
                text = _read(stderr)
                raise RegistryStartError(EXITED.format(code=process.returncode, stderr=text))
            if poll not in done:
                poll.cancel()
                break
            if poll.result():
                return
            await asyncio.sleep(POLL_INTERVAL)
    finally:
        exited.cancel()
    text = _read(stderr)
    raise RegistryStartError(DID_NOT_START.format(seconds=START_TIMEOUT, stderr=text))


async def _start(
    workdir: Path, auth: dict[str, object], session: aiohttp.ClientSession
) -> tuple[asyncio.subprocess.Process, int]:
    """The registry process on a free port, ready; another port when one was taken meanwhile."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    for attempt in range(PORT_ATTEMPTS):
        port = _free_port()
        config_path = _write_config(workdir, port, auth)
        stderr = workdir / "registry.stderr"
        with stderr.open("wb") as errors:
            try:
                process = await asyncio.create_subprocess_exec(
                    REGISTRY_BINARY,
                    "serve",
                    str(config_path),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=errors,
                    stderr=errors,
                    env=environment,
                )
            except FileNotFoundError as exc:
                raise RegistryStartError(NOT_INSTALLED) from exc
        try:
            await _wait_ready(process, f"http://127.0.0.1:{port}", session, stderr)
        except RegistryStartError as exc:
            await _stop(process)
            if ADDRESS_IN_USE in str(exc) and attempt + 1 < PORT_ATTEMPTS:
                continue
            raise
        return process, port
    raise AssertionError("unreachable")  # pragma: no cover


@contextlib.asynccontextmanager
async def running_registry(
    workdir: Path, *, auth: AuthMode = "none"
) -> AsyncIterator[RegistryServer]:
    """A registry serving from ``workdir`` until the block ends (then terminated, or killed)."""
    os.makedirs(workdir, exist_ok=True)
    async with contextlib.AsyncExitStack() as stack:
        session = await stack.enter_async_context(aiohttp.ClientSession())
        token_server = None
        realm = ""
        if auth == "token":
            token_server = TokenServer(
                service=SERVICE, issuer=ISSUER, username=USERNAME, password=PASSWORD
            )
            stack.push_async_callback(token_server.close)
            realm = await token_server.start()
        htpasswd = await _htpasswd_entry() if auth == "basic" else b""
        auth_section = _auth_config(workdir, auth, realm=realm, htpasswd=htpasswd)
        process, port = await _start(workdir, auth_section, session)
        stack.push_async_callback(_stop, process)
        host = f"127.0.0.1:{port}"
        yield RegistryServer(f"http://{host}", host, auth, session, token_server)
