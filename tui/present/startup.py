"""The startup profile after READY, as text rows and as JSON (scan, the report ``w``, history,
``watch --plain``): where the time went, and the speed hints whose evidence it has."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tui.core.profiles import ProfileError
from tui.core.loading import LoadFacts
from tui.core.startup_profile import StartupProfile, across_nodes, evidence, for_state, from_seconds, with_load
from tui.core.state import StartupState


def advice(profile: StartupProfile) -> list[tuple[str, str]]:
    """The speed hints whose evidence the profile has (none where the hints file cannot be read:
    that is said where errors' hints are shown)."""
    found = evidence(profile)
    if not found:  # nothing to advise: the hints need not be read, nor their module imported
        return []
    from tui.core.hints import knowledge

    try:
        return knowledge().speed_advice(found)
    except ProfileError:
        return []


def profile_json(state: StartupState, load: LoadFacts | None = None) -> dict[str, Any] | None:
    """Where the time went, once ready (and what would make the next start faster); ``load``:
    what was watched of the weight load (a Hugging Face download, what its processes read)."""
    profile = for_state(state)
    if profile is None:
        return None
    return as_json(with_load(profile, load))


def as_json(profile: StartupProfile) -> dict[str, Any]:
    """The profile's figures and its speed advice, for ``--json`` and ``scan --json``."""
    out = profile.to_json()
    out["speed"] = [{"why": why, "link": link} for why, link in advice(profile)]
    return out


def nodes_profile(states: Mapping[str, StartupState], serving: str) -> tuple[list[str], dict[str, Any]] | None:
    """Several nodes, once ready: the profile with each phase's slowest node, as text rows and
    JSON (None before ready)."""
    profile = across_nodes(states, serving)
    return None if profile is None else (with_advice(profile), {**as_json(profile), "serving": serving})


def profile_lines(state: StartupState, load: LoadFacts | None = None) -> list[str]:
    """The startup profile and its speed advice as text rows (none before ready)."""
    profile = for_state(state)
    if profile is None:
        return []
    return with_advice(with_load(profile, load))


def with_advice(profile: StartupProfile) -> list[str]:
    out = profile.lines()
    for why, link in advice(profile):
        out.append(f"  faster next time: {why}" + (f" ({link})" if link else ""))
    return out


def history_lines(attempts: list[Any]) -> list[str]:
    """The latest ready attempt's profile from its recorded phase times, the ready one before beside."""
    ready = [a for a in attempts if a.outcome == "ready" and a.phases]
    if not ready:
        return []
    latest = ready[-1]
    before = next((a for a in reversed(ready[:-1]) if a.name == latest.name), None)
    profile = from_seconds(latest.phases, latest.duration, before.phases if before else None,
                           before.duration if before else None)
    profile = dataclasses.replace(profile, page_cache=latest.page_cache,
                                  previous_page_cache=before.page_cache if before else None)
    which = f"{latest.name} {latest.label}" + (f", beside {before.label}" if before else "")
    rows = with_advice(profile)
    return [f"{rows[0]} of {which}", *rows[1:]]
