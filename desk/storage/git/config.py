"""git's config as desk reads it: the few values a commit needs, asked of `git config` once per Git."""

from __future__ import annotations

from typing import TYPE_CHECKING

from desk.storage.git.run import Started

if TYPE_CHECKING:
    from desk.storage.git.repo import Git

FALLBACK_NAME = "desk"
FALLBACK_EMAIL = "desk@localhost"
# the keys `Config.values` reads
_QUERY = (r"^((user|author|committer)\.(name|email)|core\.hookspath|i18n\.commitencoding"
          r"|commit\.gpgsign|core\.fsync|gc\.auto|gc\.autopacklimit)$")


def parse_config(out: bytes) -> dict[str, str]:
    """`{key: value}` from `git config -z --get-regexp` (a key without a value is "", true to git; the
    last value of a key wins)."""
    records = (record.partition("\n") for record in out.decode("utf-8", "replace").split("\0") if record)
    return {key: value for key, _, value in records}


class Config:
    """The config of one repository (`git.config`). A Git made by `with_env` shares this object."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._values: dict[str, str] | None = None
        self._started: Started | None = None
        self._identity: list[str] | None = None

    def values(self) -> dict[str, str]:
        """The config values desk needs, read once per Git; keys lower-cased as git prints them."""
        if self._values is None:
            self.start()
            assert self._started is not None
            self._values = parse_config(self._started.wait(check=False)[0])
        return self._values

    def start(self) -> None:
        """Have `values()` answered by a `git config` started now, running while the caller works."""
        if self._values is None and self._started is None:
            self._started = self._git.start(("config", "-z", "--get-regexp", _QUERY))

    def identity_args(self) -> list[str]:
        """`-c user.name=… -c user.email=…` when no identity is configured, so desk works anywhere."""
        if self._identity is None:
            keys = set(self.values())
            env = self._git.env
            args: list[str] = []
            if "user.name" not in keys and not ("GIT_AUTHOR_NAME" in env and "GIT_COMMITTER_NAME" in env):
                args += ["-c", f"user.name={FALLBACK_NAME}"]
            if "user.email" not in keys and not ("GIT_AUTHOR_EMAIL" in env and "GIT_COMMITTER_EMAIL" in env):
                args += ["-c", f"user.email={FALLBACK_EMAIL}"]
            self._identity = args
        return self._identity

    def fallback_identity(self) -> str | None:
        """`name <email>` desk commits as because git has no identity configured, else None."""
        args = self.identity_args()
        if not args:
            return None
        given = {**self.values(), **dict(a.split("=", 1) for a in args if a != "-c")}
        name = given.get("user.name") or self._git.env.get("GIT_AUTHOR_NAME", "")
        email = given.get("user.email") or self._git.env.get("GIT_AUTHOR_EMAIL", "")
        return f"{name} <{email}>"

    def durable_args(self) -> list[str]:
        """`-c core.fsync=committed` unless the person set core.fsync: a desk commit's objects must survive
        a power loss once HEAD names them."""
        return [] if "core.fsync" in self.values() else ["-c", "core.fsync=committed"]

    def signs_commits(self) -> bool:
        """Whether `commit.gpgSign` asks for signed commits (`commit-tree` ignores it, so desk passes `-S`)."""
        value = self.values().get("commit.gpgsign", "false").strip().lower()
        # `gpgsign` with no value ("") is true, as git reads it
        return value in ("", "true", "yes", "on") or value.lstrip("-").isdigit() and int(value) != 0

    def set(self, key: str, value: str) -> None:
        """`git config KEY VALUE` in the repository's own config file."""
        self._git.run("config", key, value)
        self._values = None
        self._started = None
        self._identity = None

    def get(self, key: str) -> str | None:
        """The value of `key` as git reads it now (None when unset or empty)."""
        out = self._git.run("config", "--get", key, check=False, read_only=True).decode("utf-8", "replace")
        return out.strip() or None

    def remote_url(self, remote: str) -> str | None:
        """The address `remote` fetches from, None when there is none; never cached (it may hold a credential)."""
        return self.get(f"remote.{remote}.url")
