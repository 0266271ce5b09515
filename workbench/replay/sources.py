"""How a device profile names a trace's sources (below the jobs: replay, native and jobs share it).

Traces name sources by role (``producer``, ``chunk``); a phone profile prices the paper's sources
(``qwen``, ``parakeet``) and the host profile the measured model (``whisper-tiny.en``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import cast

from .multi_source import SEPARATOR
from .profile import DeviceProfile
from .trajectory import Window

ROLE_KINDS = {"producer": "autoregressive", "chunk": "chunk"}


def profile_source(profile: DeviceProfile, source: str | None, roles: Mapping[str, Sequence[str]]) -> str | None:
    """The profile's name for a trace source.

    Order: the same name; the names ``roles`` lists for it (the pair's producer model first, then
    ``source_roles``); else the profile's only source of the role's kind (autoregressive for
    ``producer``, chunk for ``chunk``). Never a guess among several.
    """
    if source is None or source in profile.sources:
        return source
    if SEPARATOR in source:  # several resident sources: name each one
        return SEPARATOR.join(str(profile_source(profile, s, roles)) for s in source.split(SEPARATOR))
    for name in roles.get(source, []):
        if name in profile.sources:
            return name
    same = [n for n, c in profile.sources.items() if c.kind == ROLE_KINDS.get(source)]
    return same[0] if len(same) == 1 else (list(roles.get(source) or []) or [source])[-1]


def priced_as(windows: Sequence[Window], profile: DeviceProfile, roles: Mapping[str, Sequence[str]]) -> list[Window]:
    """Windows whose sources carry the profile's names (see ``profile_source``)."""
    out = []
    for w in windows:
        if all(s in profile.sources for s in w.sources):
            out.append(w)
            continue
        renamed = {}
        for s, track in w.sources.items():
            name = cast(str, profile_source(profile, s, roles))  # a named source has a name
            renamed[name] = replace(track, source=name)
        out.append(replace(w, sources=renamed))
    return out


__all__ = ["priced_as", "profile_source"]
