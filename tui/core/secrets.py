"""Secret masking for everything Watchtower shows, logs or stores.

A launch command and its environment often carry credentials (``HF_TOKEN``,
``--api-key …``). Their values must never reach the screen, the history database,
hook environments or any file Watchtower writes. Names decide what is secret;
once a value is known to be secret, every later occurrence of it in any text is
masked too (``Masker``), so a token echoed back by the server is hidden as well.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

MASK = "****"

# Environment-style names (upper case, "_" separated) whose values are secret.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|APIKEY|PASSWD|PASS|PWD|AUTH|CREDENTIALS?)(?:_|$)"
    r"|PASSWORD|SECRET|ACCESS_KEY|PRIVATE_KEY"
)
# Names that match the pattern above but are not secrets.
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "KEYTIMEOUT", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK"})
_NOT_SECRET_SUFFIX = ("_PATH", "_FILE", "_DIR", "_LEN", "_SIZE", "_ID", "_NUM", "_MODE", "_TYPE")
# Values shorter than this are not hunted down in free text (masking every "1"
# would wreck the display); they are still masked where they appear as a value.
_MIN_FREE_TEXT = 4


def _env_name(name: str) -> str:
    return name.strip().lstrip("-").upper().replace("-", "_")


def is_secret_name(name: str) -> bool:
    """True for ``HF_TOKEN``, ``OPENAI_API_KEY``, ``DB_PASSWORD``, ``--api-key``, ``--hf-token`` …"""
    key = _env_name(name)
    if not key or key in _NOT_SECRET:
        return False
    if key.endswith(_NOT_SECRET_SUFFIX) and "PASSWORD" not in key and "SECRET" not in key:
        return False
    return bool(_SECRET_NAME.search(key))


# ---------------------------------------------------------------- secrets in free text

# Tokens recognisable by their shape alone, wherever they appear.
_SHAPES = (
    r"\bhf_[A-Za-z0-9]{16,}"  # Hugging Face
    r"|\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}"  # OpenAI-style (sk-…, sk-proj-…, sk-ant-…)
    r"|\b(?:ghp|gho|ghs|ghu|github_pat|glpat|xox[abposr])[-_][A-Za-z0-9_-]{16,}"  # GitHub, GitLab, Slack
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # a JWT
)
# A value after a word that names a secret: api_key='…', "hf_token": "…", HF_TOKEN=…, ?token=…,
# api_key="two words", 'api_key': ['k1', 'k2'], 'hf_token': b'…', and --api-key … / --hf-token=… /
# --api-key 'quoted value' (as `set -x` prints it) / '--api-key', '…' (an argument list's repr or
# JSON). The name is judged by is_secret_name; the value is masked, whatever its quoting or container.
_WORD = r"[\w.-]{0,40}?(?i:key|token|secret|passw|passwd|pwd|auth|credential)[\w.-]{0,40}"
# A quoted string (Python's b'', r'', u'' prefixes too), escapes inside; bounded, alternatives disjoint.
_QUOTED = r"""[bBrRuU]{0,2}(?:'(?:[^'\\\n]|\\.){0,4000}'|"(?:[^"\\\n]|\\.){0,4000}")"""
_ITEM = rf"""(?:{_QUOTED}|[^\s'",\[\]()]+)"""
_LIST = rf"[\[(]\s*{_ITEM}(?:\s*,\s*{_ITEM}){{0,64}}\s*,?\s*[\])]"  # a list or tuple of values
_NAMED = (
    rf"\b(?P<name>{_WORD})(?P<sep>['\"]?\s*[=:]\s*)"
    rf"(?:(?P<list>{_LIST})|(?P<quoted>{_QUOTED})"
    rf"|(?P<q>[\[(]?\s*['\"]?)(?P<value>(?:(?:Bearer|Basic)\s+)?[^\s'\",;)}}\]&]+))"
    rf"|(?P<flag>--?{_WORD})(?P<space>['\"],\s*|\s+)(?P<arg>{_QUOTED}|[^\s'\",;)}}\]&-][^\s'\",;)}}\]&]*)"
)
_AUTH = r"(?P<scheme>\b(?:Bearer|Basic))\s+(?P<cred>[A-Za-z0-9._~+/=-]{8,})"
_URL_CREDENTIALS = r"(?P<userinfo>\b[a-z][a-z0-9+.-]*://[^\s/:@]*:)(?P<password>[^\s/@]+)(?=@)"
_FREE = re.compile(f"{_SHAPES}|{_AUTH}|{_URL_CREDENTIALS}|{_NAMED}")
#: The cheap first test, on raw bytes (a whole chunk at once): can this hold a secret? It is looser
#: than the masks (any token prefix, a secret's name before a separator and a value that is not a
#: number — a hex token's leading digits are no number —, ESC since an escape sequence can sit inside
#: a name) and never misses what they mask.
SECRET_HINT = (
    rb"hf_|sk-|://|Bearer|Basic|ghp_|gho_|ghs_|ghu_|github_pat|glpat|xox|AKIA|eyJ|\x1b"
    rb"|(?i:key|token|secret|passw|pwd|auth|credential)[\w.-]*['\"]?[ \t]*[=:][ \t]*(?:['\"\[(][ \t]*['\"]?[^\s'\"]|[^0-9\s'\"]|[0-9]+[A-Za-z_])"
    rb"|-(?i:[\w-]*(?:key|token|secret|passw|pwd|auth|credential))[\w-]*(?:['\"],[ \t]*|[ \t]+)[^\s-]"
)
_HINT = re.compile(SECRET_HINT.decode("latin-1"))
_bytes_hint = re.compile(SECRET_HINT).search
_NOT_A_VALUE = frozenset({"none", "null", "true", "false", "''", '""', "[]", "{}", "0", "-", "****"})


def _masked(match: re.Match[str], fill: Callable[[str], str]) -> str:
    """The match with its secret part replaced by ``fill(secret)``."""
    groups = match.groupdict()
    name = groups["flag"] or groups["name"]
    part = next((g for g in ("password", "cred", "arg", "list", "quoted", "value") if groups[g] is not None), None)
    if part is None:  # a token by its shape
        return fill(match.group(0))
    value = groups[part]
    start, end = match.start(part) - match.start(), match.end(part) - match.start()
    whole = match.group(0)
    if name is None:  # a credential after Bearer / Basic, a URL's password
        return whole[:start] + fill(value) + whole[end:]
    masked = _ITEMS.sub(lambda item: _fill_item(item.group(), fill), value) if part == "list" else _fill_item(value, fill)
    if not is_secret_name(name) or masked == value:
        # not a secret's name (or not a value): what the value holds (a URL, a token by its shape) is still looked at
        return whole[:start] + _FREE.sub(functools.partial(_masked, fill=fill), value) + whole[end:]
    return whole[:start] + masked + whole[end:]


_ITEMS = re.compile(_ITEM)


def _fill_item(item: str, fill: Callable[[str], str]) -> str:
    """One value, quoted or not, its content masked (quotes and a b'' prefix kept); a value that
    is no secret (None, true, a number, already stars) as it is."""
    quote = next((i for i, c in enumerate(item[:3]) if c in "'\""), -1)
    if quote >= 0 and len(item) > quote + 1 and item[-1] == item[quote]:
        head, body, tail = item[: quote + 1], item[quote + 1 : -1], item[-1]
    else:
        head, body, tail = "", item, ""
    if not body or body.lower() in _NOT_A_VALUE or body.isdigit() or body[0] == "*":
        return item
    return head + fill(body) + tail


def _stars(value: str) -> str:
    return "*" * len(value)


def mask_secrets(text: str) -> str:
    """``text`` with every secret it shows masked, known or not: tokens by their shape (``hf_…``,
    ``sk-…``, JWTs, …), values after a secret's name (``api_key='…'`` in a ``server_args=`` dump,
    ``"hf_token": "…"`` in JSON, ``--api-key …``, ``HF_TOKEN=…``), bearer and basic credentials,
    and the password of a URL (``https://user:…@host``)."""
    if not text or _HINT.search(text) is None:
        return text
    return _FREE.sub(functools.partial(_masked, fill=lambda _value: MASK), text)


def mask_secret_bytes(data: bytes) -> bytes:
    """``mask_secrets`` for raw log bytes, each masked byte a ``*``: offsets and line numbers stay
    true (what a recording stores). Give it whole lines: a secret cut in two is not recognised."""
    if _bytes_hint(data) is None:
        return data
    return _FREE.sub(functools.partial(_masked, fill=_stars), data.decode("latin-1")).encode("latin-1")


class LogMasker:
    """``mask_secret_bytes`` over a stream of chunks: what follows the last line or segment end
    (``\\n``, ``\\r``) waits for the next chunk, so no secret is split between two calls."""

    def __init__(self, hold: int = 1 << 20) -> None:
        self._held = b""
        self._hold = hold

    def feed(self, data: bytes) -> bytes:
        data = self._held + data
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        if cut == 0 and len(data) < self._hold:
            self._held = data
            return b""
        cut = cut or len(data)
        self._held = data[cut:]
        return mask_secret_bytes(data[:cut])

    def flush(self) -> bytes:
        data, self._held = self._held, b""
        return mask_secret_bytes(data)


def mask_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with secret values replaced by ``MASK``."""
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def secret_values(env: Mapping[str, str] = {}, argv: Sequence[str] = ()) -> set[str]:
    """Every secret value found in an environment and a command line."""
    values = {v for k, v in env.items() if v and is_secret_name(k)}
    for i, arg in enumerate(argv):
        if arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            if value and is_secret_name(flag):
                values.add(value)
        elif arg.startswith("--") and is_secret_name(arg) and i + 1 < len(argv):
            nxt = argv[i + 1]
            if nxt and not nxt.startswith("--"):
                values.add(nxt)
        elif "=" in arg and not arg.startswith("-"):
            name, _, value = arg.partition("=")
            if value and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and is_secret_name(name):
                values.add(value)  # an env assignment in front of the command: HF_TOKEN=… python …
    return values


class Masker:
    """Masks known secret values in any text; built from the env and argv of a launch."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        self._held = b""  # a chunk's tail that may be the start of a secret
        self.add(values)

    @classmethod
    def for_launch(cls, env: Mapping[str, str] = {}, argv: Sequence[str] = ()) -> Masker:
        return cls(secret_values(env, argv))

    def add(self, values: Iterable[str]) -> None:
        new = {v for v in values if v and len(v) >= _MIN_FREE_TEXT} - self._values
        if not new:
            return
        self._values |= new
        # Longest first, so a token that contains another is masked whole.
        alternatives = sorted(self._values, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in alternatives))
        self._bytes = re.compile(b"|".join(re.escape(v.encode()) for v in alternatives))

    @property
    def values(self) -> frozenset[str]:
        return frozenset(self._values)

    def new_stream(self) -> None:
        """Forget a held-back tail: the next chunk starts another file."""
        self._held = b""

    def chunk(self, data: bytes) -> tuple[bytes, int]:
        """Mask secrets in a stream of log bytes, ``(bytes to pass on, bytes held back before them)``.

        Each secret becomes as many ``*`` as it has bytes, so every byte offset stays
        true. A chunk that ends in what could be the start of a secret keeps that tail
        back until the next chunk, so a secret split between two reads is masked too.
        The second figure says how many held bytes of the previous call lead the output.
        """
        if self._bytes is None:
            return data, 0
        held = len(self._held)
        data = self._held + data
        self._held = b""
        data = self._bytes.sub(lambda m: b"*" * len(m.group()), data)
        longest = max(len(v.encode()) for v in self._values)
        for cut in range(max(0, len(data) - longest + 1), len(data)):
            tail = data[cut:]
            if any(v.encode().startswith(tail) for v in self._values):
                self._held = tail
                return data[:cut], held
        return data, held

    def __bool__(self) -> bool:
        return bool(self._values)

    def text(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def argv(self, argv: Sequence[str]) -> list[str]:
        return mask_argv(argv, self)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {k: self.text(v) for k, v in mask_env(env).items()}


def mask_argv(argv: Sequence[str], masker: Masker | None = None) -> list[str]:
    """The command line with secret flag values and env assignments masked."""
    masker = masker or Masker()
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            out.append(f"{flag}={MASK}" if value and is_secret_name(flag) else masker.text(arg))
        elif arg.startswith("--") and is_secret_name(arg):
            out.append(arg)
            hide_next = True
        elif "=" in arg and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", arg):
            name, _, value = arg.partition("=")
            out.append(f"{name}={MASK}" if value and is_secret_name(name) else masker.text(arg))
        else:
            out.append(masker.text(arg))
    return out


def env_diff(old: Mapping[str, str] | None, new: Mapping[str, str]) -> list[str]:
    """What changed from one attempt's environment overrides to the next, masked.

    ``["+SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", "-FOO", "~TP=8 (was 4)"]``.
    Callers pass masked environments; this masks again so a slip cannot leak.
    """
    old = mask_env(old or {})
    new = mask_env(new)
    changes: list[str] = []
    for key in sorted(new.keys() - old.keys()):
        changes.append(f"+{key}={new[key]}")
    for key in sorted(old.keys() - new.keys()):
        changes.append(f"-{key}")
    for key in sorted(old.keys() & new.keys()):
        if old[key] != new[key]:
            changes.append(f"~{key}={new[key]} (was {old[key]})")
    return changes
