"""The rank bookkeeping of ``StartupTracker``: which rank a line is from, and the server's ranks.

A rank tag's tokens are one rank in any order ("TP3 DP0" is "DP0 TP3"), named in the profile's
order and cached; until ready every tag counts as one of the server's ranks; and a process whose
tag changed (same pid, new name) is the same rank under its new name, phases and all.
A mixin: the tracker owns the state, the profile and the tables.
"""

from __future__ import annotations

from tui.core.phases import MAIN
from tui.core.profiles import Profile
from tui.core.state import StartupState


class RankBook:
    """Names and registers the ranks of the tracker's lines (a mixin of ``StartupTracker``,
    which sets these attributes)."""

    state: StartupState
    profile: Profile | None
    _rank_cache: dict[str, str]
    _tagged: set[str]
    _pid_rank: dict[str, str]
    _implicit: dict[tuple[str, str], tuple[int, float | None]]
    _placeholders: dict[str, str]

    def _rank(self, ranks: str | None, proc: str | None) -> str:
        if ranks:
            rank = self._rank_cache.get(ranks)
            if rank is None:
                rank = self._rank_cache[ranks] = self._rank_name(ranks)
            return rank
        return proc or MAIN

    def _register(self, groups: dict[str, str | None]) -> None:
        """A line's rank tag (or process name) is one of the server's ranks; a process whose
        name changed (its ``pid`` group) is the same rank under its new name."""
        ranks, proc, pid = groups.get("ranks"), groups.get("proc"), groups.get("pid")
        if proc and pid:
            known = self._pid_rank.get(pid)
            if known != proc:
                self._pid_rank[pid] = proc
                if known is not None:
                    self._rename(known, proc)
        if ranks:
            rank = self._rank(ranks, None)
            if rank != MAIN and rank not in self._tagged:
                self._tagged.add(rank)
                self.state.ranks.add(rank)
        elif proc:
            self.state.ranks.add(proc)

    def _rename(self, old: str, new: str) -> None:
        """One process's tag changed ("Worker pid=N" before device init, "Worker_TP1" after):
        what it did under the old name is the new name's."""
        state = self.state
        state.ranks.discard(old)
        state.ranks.add(new)
        for phase in state.phases:
            entry = phase.ranks.pop(old, None)
            if entry is not None and new not in phase.ranks:
                entry.rank = new
                phase.ranks[new] = entry
        for (name, rank) in [k for k in self._implicit if k[1] == old]:
            self._implicit.setdefault((name, new), self._implicit.pop((name, rank)))
        for name, rank in list(self._placeholders.items()):
            if rank == old:
                self._placeholders[name] = new

    def _rank_name(self, ranks: str) -> str:
        """Rank tokens as a set in the profile's order: "TP3 DP0" and "DP0 TP3" are one rank."""
        profile = self.profile
        if profile is None or profile.rank_token is None:
            return ranks.strip() or MAIN
        order = profile.rank_order
        tokens = profile.rank_token.findall(ranks)
        if not tokens:
            return ranks.strip() or MAIN
        tokens.sort(key=lambda t: (order.index(t[0]) if t[0] in order else len(order), t[0]))
        return " ".join(kind + index for kind, index in tokens)
