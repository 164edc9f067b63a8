"""Which rank a line is from, and which ranks the server has, for ``StartupTracker``.

A rank tag's tokens are one rank in any order ("TP3 DP0" is "DP0 TP3"), named in the profile's
order and cached; until ready every tag counts as one of the server's ranks; and a process whose
tag changed (same pid, new name) is the same rank under its new name.
"""

from __future__ import annotations

from collections.abc import Mapping

from tui.core.profiles import Profile

MAIN = "main"  # the rank of lines whose prefix names none


class Ranks:
    """Names the ranks of one log's lines by ``profile``'s rank tags (None: a tag is its own text)."""

    def __init__(self, profile: Profile | None = None) -> None:
        self._profile = profile
        self._names: dict[str, str] = {}  # a tag's text -> its rank's name
        self._pids: dict[str, str] = {}  # process id -> the rank its tag last named
        #: ranks named by a rank tag (not a process name) in this startup
        self.tagged: set[str] = set()

    @property
    def pids(self) -> Mapping[str, str]:
        """Process id -> the name its prefix last gave it (``Worker_TP1``), for every pid a line named."""
        return self._pids

    def new_startup(self) -> None:
        """The server started again: its ranks are counted anew (names and processes stay known)."""
        self.tagged.clear()

    def name(self, ranks: str | None, proc: str | None) -> str:
        """The rank of a line whose prefix has the rank tag ``ranks`` or the process name ``proc``."""
        if ranks:
            rank = self._names.get(ranks)
            if rank is None:
                rank = self._names[ranks] = self._name(ranks)
            return rank
        return proc or MAIN

    def counted(self, ranks: str | None) -> bool:
        """Whether a line tagged ``ranks`` (and no process) adds nothing to ``register``'s count:
        it has no tag, or its rank was counted this startup — a flood's lines, checked cheaply."""
        if not ranks:
            return True
        rank = self._names.get(ranks)
        return rank is not None and (rank == MAIN or rank in self.tagged)

    def register(self, groups: dict[str, str | None], known: set[str]) -> tuple[str, str] | None:
        """A line's rank tag (or process name) is one of the server's ranks: add it to ``known``.
        A process whose name changed (its ``pid`` group) is the same rank under its new name:
        then the old name and the new one, for what was done under the old one to move."""
        ranks, proc, pid = groups.get("ranks"), groups.get("proc"), groups.get("pid")
        renamed = None
        if proc and pid:
            before = self._pids.get(pid)
            if before != proc:
                self._pids[pid] = proc
                if before is not None:
                    known.discard(before)
                    known.add(proc)
                    renamed = (before, proc)
        if ranks:
            rank = self.name(ranks, None)
            if rank != MAIN and rank not in self.tagged:
                self.tagged.add(rank)
                known.add(rank)
        elif proc:
            known.add(proc)
        return renamed

    def _name(self, ranks: str) -> str:
        """Rank tokens as a set in the profile's order: "TP3 DP0" and "DP0 TP3" are one rank."""
        profile = self._profile
        if profile is None or profile.rank_token is None:
            return ranks.strip() or MAIN
        order = profile.rank_order
        tokens = profile.rank_token.findall(ranks)
        if not tokens:
            return ranks.strip() or MAIN
        tokens.sort(key=lambda t: (order.index(t[0]) if t[0] in order else len(order), t[0]))
        return " ".join(kind + index for kind, index in tokens)
