"""Run an ``MCPServer`` over stdio or streamable HTTP with safe defaults.

Shared by every server in ``tool_servers``: loopback by default, a bearer token read from an environment
variable, and a refusal to listen on a non-loopback address without one. DNS-rebinding protection (the
MCP spec's recommendation for local servers) is on for loopback hosts.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
import sys
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

TOKEN_ENV = "MCP_RL_SERVER_TOKEN"
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    """True when ``host`` can only be reached from this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def add_transport_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line flags every tool server shares."""
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio", help="How to serve MCP.")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (loopback by default).")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (0 picks a free one).")
    parser.add_argument(
        "--token-env",
        default=TOKEN_ENV,
        help="Environment variable holding the bearer token HTTP clients must send (unset: no auth).",
    )


class BearerTokenMiddleware:
    """ASGI middleware: reject requests whose ``Authorization`` header lacks the expected bearer token."""

    def __init__(self, app: Callable[..., Any], token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer, host: str, token: str | None) -> Callable[..., Any]:
    """The server's streamable-HTTP ASGI app, with DNS-rebinding protection and optional bearer auth."""
    security = None
    if is_loopback(host):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    app: Callable[..., Any] = server.streamable_http_app(transport_security=security, host=host)
    return BearerTokenMiddleware(app, token) if token else app


def serve(server: MCPServer, args: argparse.Namespace) -> None:
    """Serve ``server`` as the parsed ``args`` say; exits with a one-line message on unsafe settings."""
    if args.transport == "stdio":
        server.run("stdio")
        return
    token = os.environ.get(args.token_env) or None
    if not is_loopback(args.host) and token is None:
        # A configuration error: exit status 2, as everywhere in mcp-rl (sys.exit(message) would give 1).
        print(
            f"refusing to listen on {args.host} without authentication: set {args.token_env} to a secret "
            "token (clients send it as 'Authorization: Bearer <token>'), or bind 127.0.0.1",
            file=sys.stderr,
        )
        sys.exit(2)
    import uvicorn

    print(f"serving MCP on http://{args.host}:{args.port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(http_app(server, args.host, token), host=args.host, port=args.port, log_level="warning")
