"""Serving an MCP server: over stdio (a client starts ``universalrag mcp`` as a subprocess) or streamable HTTP.

HTTP binds to 127.0.0.1 unless told otherwise, with the SDK's DNS-rebinding protection on. Bound to any other
address, the server refuses to start without a bearer token: the corpora would otherwise be open to the network.
With a token, every HTTP request must carry ``Authorization: Bearer <token>`` (compared in constant time); the
token is never logged.
"""

from __future__ import annotations

import hmac
import ipaddress
import sys
from typing import Any

from ..errors import ConfigError

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MCP_PATH",
    "BearerTokenApp",
    "http_app",
    "is_loopback",
    "run_http",
    "run_stdio",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
#: Shortest token accepted: a guessable one protects nothing.
MIN_TOKEN_LENGTH = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_token(host: str, token: str | None) -> str | None:
    """The token to require, or :class:`ConfigError` when ``host`` is reachable from other machines and no usable
    token is given."""
    token = (token or "").strip() or None
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"The MCP bearer token is too short ({len(token)} characters): use at least {MIN_TOKEN_LENGTH}, for "
            "example the output of: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"Refusing to serve MCP on {host}: other machines could read every corpus. Pass --token (or set "
            "UNIVERSALRAG_MCP_TOKEN) to require a bearer token, or bind to 127.0.0.1."
        )
    return token


class BearerTokenApp:
    """An ASGI wrapper that answers 401 to every HTTP request without ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = b""
            for key, value in scope.get("headers", ()):
                if key.lower() == b"authorization":
                    given = value
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error": "unauthorized", "error_description": "a bearer token is required"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="universalrag"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _security(host: str) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    if is_loopback(host):  # a web page the user visits must not reach a local server through a rebound name
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)  # the bearer token guards it


def http_app(server: Any, *, host: str = DEFAULT_HOST, token: str | None = None) -> Any:
    """The ASGI app serving ``server`` over streamable HTTP at :data:`MCP_PATH`, behind :class:`BearerTokenApp`
    when ``token`` is given (:class:`ConfigError` when ``host`` is not loopback and there is no token)."""
    token = check_token(host, token)
    from .server import sdk_major

    if sdk_major() >= 2:
        app = server.streamable_http_app(host=host, transport_security=_security(host))
    else:  # SDK 1.x reads the transport settings from the server
        server.settings.host = host
        server.settings.transport_security = _security(host)
        app = server.streamable_http_app()
    return BearerTokenApp(app, token) if token else app


def run_http(server: Any, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None) -> None:
    """Serve ``server`` over streamable HTTP on ``host:port`` until interrupted (see :func:`http_app`)."""
    import anyio
    import uvicorn

    app = http_app(server, host=host, token=token)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"universalrag mcp: streamable HTTP on http://{shown}:{port}{MCP_PATH}"
        + (" (bearer token required)" if token else ""),
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve)


def run_stdio(server: Any) -> None:
    """Serve ``server`` over stdin/stdout until the client closes them."""
    import anyio

    anyio.run(server.run_stdio_async)
