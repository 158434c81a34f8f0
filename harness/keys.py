"""API keys of hosted endpoints: each read from an environment variable the user names, the
moment a client is built, sent as the wire shape requires, and never written anywhere.

What a run keeps of a key is the name of its variable (:class:`KeyFrom`), never its value: the
value lives in the HTTP client's headers and nowhere else, and any text a server sends back
is scrubbed of it before it can reach an error, a record or a trace.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from harness.errors import HarnessError, KeyRefused

# The variable each wire shape's own clients read when none is named.
USUAL = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# The Messages shape's version header, as Anthropic's own client sends it.
ANTHROPIC_VERSION = "2023-06-01"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class KeySettingError(HarnessError):
    """A key given where its variable's name belongs, or a named variable that is not set."""


@dataclass(frozen=True)
class KeyFrom:
    """Where an endpoint's key comes from: the environment variable it is read from (None:
    no key is sent)."""

    env: str | None = None

    def read(self) -> str | None:
        return os.environ.get(self.env) or None if self.env else None

    def said(self) -> str:
        """How a message names the key: ``$VAR``, or that none was sent."""
        return f"${self.env}" if self.env else "no key"


def key_from(
    api: str, named: str | None, flag: str = "--api-key-env", base_url: str | None = None
) -> KeyFrom:
    """The key of an endpoint of wire shape ``api`` at ``base_url``: from the variable
    ``named``; or, when none is named, from the shape's usual one (``OPENAI_API_KEY``,
    ``ANTHROPIC_API_KEY``) when it is set and the endpoint is reached over HTTPS (a local
    server needs none, and a key is never sent in clear text unasked); else none."""
    if named is not None:
        if not _NAME.match(named):
            raise KeySettingError(
                f"{flag} takes the name of an environment variable that holds the key, not the "
                "key itself (a key on the command line lands in your shell history): "
                f"export MY_KEY=... and give {flag} MY_KEY"
            )
        if not os.environ.get(named):
            # A long name may be a key given by mistake: it is not repeated.
            shown = named if len(named) <= 40 else "the variable it names"
            raise KeySettingError(f"{flag}: {shown} is not set, or empty")
        return KeyFrom(named)
    usual = USUAL.get(api)
    over_https = base_url is None or base_url.lower().startswith("https://")
    return KeyFrom(usual if usual and os.environ.get(usual) and over_https else None)


def auth_headers(api: str, key: str | None) -> dict[str, str]:
    """The headers that carry ``key`` in the wire shape ``api``."""
    if api == "anthropic":
        version = {"anthropic-version": ANTHROPIC_VERSION}
        return {**version, "x-api-key": key} if key else version
    return {"Authorization": f"Bearer {key}"} if key else {}


def scrubbed(text: str, key: str | None) -> str:
    """``text`` with ``key`` (a server may echo it in an error) written as ``***``."""
    return text.replace(key, "***") if key else text


def refused_on_command_line(flag: str, variable_flag: str) -> KeySettingError:
    """The error for a key given as a flag's value (``--api-key``): never taken."""
    return KeySettingError(
        f"{flag} is not taken: a key on the command line lands in your shell history and "
        f"could reach a record. Put it in an environment variable and name it with "
        f"{variable_flag} VAR"
    )


def refuses_key(status: int, secret: str | None) -> bool:
    """Whether an answer's status refuses the request's key: a 401, or a 403 to a request
    that carried one (a 403 to one that carried none is about something else: a Host, a
    path)."""
    return status == 401 or (status == 403 and secret is not None)


def key_refused(base_url: str, key: KeyFrom, status: int, said: str) -> KeyRefused:
    """What a 401 or 403 from ``base_url`` says: the endpoint, the variable the key came from
    (or that none was sent) and the server's own words (``said``), the key scrubbed from
    them."""
    said = scrubbed(said, key.read())
    if key.env is None:
        fix = (
            "no key was sent: put it in an environment variable and name it with "
            "--api-key-env VAR (the user's endpoint: --user-api-key-env VAR)"
        )
    elif status == 403:
        fix = f"the key came from ${key.env}: check that it may use this model"
    else:
        fix = f"the key came from ${key.env}: check it, or name another with --api-key-env"
    return KeyRefused(
        f"the server at {base_url} refused the request ({status}: {said}); {fix}",
        status=status,
        unavailable=True,
    )
