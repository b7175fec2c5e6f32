"""What the page must never show: the recipe's server ``env`` and ``headers`` values, the environment's
values of the ``${VAR}``s it names, secret-looking environment variables, and URL passwords."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mcp_rl.tools.server_config import redact

# Names of environment variables whose values are credentials wherever they appear (HF_TOKEN, OPENAI_API_KEY).
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|AUTH", re.IGNORECASE)
_MIN_ENV_SECRET_CHARS = 8  # shorter values of such variables (a flag, "true") would garble everything


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables named like credentials."""
    environ = os.environ if environ is None else environ
    return [
        value
        for name, value in environ.items()
        if _SECRET_NAME.search(name) and len(value) >= _MIN_ENV_SECRET_CHARS
    ]


class Redactor:
    """Replaces each secret, and any URL password, by ``***`` in what is shown.

    ``may_leak`` looks at a raw JSON line first (a substring test, in C), so the hundred thousand lines
    that hold no secret are not walked string by string.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        # As the secret appears in a JSON line: escaped (json.dumps' default) or as UTF-8.
        needles = {json.dumps(s)[1:-1].encode() for s in self.secrets} | {s.encode() for s in self.secrets}
        self._needles = sorted(needles)

    def may_leak(self, raw: bytes) -> bool:
        return any(n in raw for n in self._needles) or (b"://" in raw and b"@" in raw)

    def text(self, text: str) -> str:
        return redact(text, self.secrets)

    def value(self, value: Any) -> Any:
        """``value`` with every string in it (keys included) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def line(self, raw: bytes, value: Any) -> Any:
        """A parsed JSON line, redacted only when its raw text could hold something to hide."""
        return self.value(value) if self.may_leak(raw) else value
