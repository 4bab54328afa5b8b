"""The MCP servers Riacho connects to (the TOML's ``[[mcp]]`` tables, SPEC §12).

Each is a stdio ``command`` the server starts and stops with itself, or a Streamable HTTP
``url`` whose header values are read from environment variables (``headers_env``), so a token
is never written in the file. ``read_only`` names tools treated as read-only beyond the MCP
``readOnlyHint`` annotations: those run without asking the user.
"""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_APPROVAL_TIMEOUT_S = 600.0
DEFAULT_CLIENT_TOOL_TIMEOUT_S = 300.0  # the wait for a page to run the model's python (§13)
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_RESULT_MAX_CHARS = 16_000
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class McpSettings(BaseModel):
    """One ``[[mcp]]`` table: an MCP server and how to reach it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=32)
    command: tuple[str, ...] | None = Field(default=None, min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers_env: dict[str, str] = Field(default_factory=dict)
    read_only: tuple[str, ...] = ()
    call_timeout_s: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)
    result_max_chars: int = Field(default=DEFAULT_RESULT_MAX_CHARS, gt=100)

    @model_validator(mode="after")
    def _one_transport(self) -> McpSettings:
        if not _NAME.match(self.name):
            raise ValueError("name: letters, digits, '_' or '-' only (it prefixes tool names)")
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (stdio) or url (Streamable HTTP)")
        if self.env and self.command is None:
            raise ValueError("env applies to a command only")
        if self.headers_env and self.url is None:
            raise ValueError("headers_env applies to a url only")
        return self

    def headers(self) -> dict[str, str]:
        """The HTTP headers, their values read from the environment (unset ones left out)."""
        return {
            header: value
            for header, name in self.headers_env.items()
            if (value := os.environ.get(name))
        }


def check_unique_names(servers: tuple[McpSettings, ...]) -> None:
    """Each MCP server's name is shown with its tools: it must name one server."""
    names = [server.name for server in servers]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"the MCP server name {name!r} is used twice")
