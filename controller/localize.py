"""Which link loses packets, from per-path probe counts (pure: no sockets, no clock).

Clustermapper's reasoning (the MRC paper's monitoring): a link is suspect when the paths that lose
cross it and the paths that do not lose avoid it. Two kinds of evidence, per path, with the
links each path crosses:
  - probes: how many were settled and lost (traffic/core/path_prober.py; host-to-host paths and
    each host's per-hop self-probes, which test a NIC-T0 link alone or with one T0-T1 link);
  - EV events: how many of the NIC's EV state changes on that path went to ASSUMED_BAD
    (traffic/core/ev_events.py): the data itself lost a packet there. The data crosses the
    paths far more often than the probes, so a few events come long before a few probe
    losses; the probes, which also cross the paths that lose nothing, say which links are
    clean.
The two add up:

* a path is LOSSY when its lost probes plus its ASSUMED_BAD events reach `min_lost`, and
  they are at least `min_loss_rate` of its settled probes (a single late answer on a busy host
  is not a lossy link);
* a path is CLEAN when it lost none of at least `clean_min_sent` probes and no EV event put
  it ASSUMED_BAD; every link of a clean path is exonerated;
* a link is judged only when every probed path that crosses it has settled `judged_min_sent`
  probes: before that a path over it that will prove clean has not had the probes to show it,
  and the broadest link (a host's own NIC-T0 link, crossed by all its paths) would explain the
  first few lossy paths best; a link named that early is a healthy link denied;
* the faulty links are then found greedily: the not-exonerated link that the most unexplained
  lossy paths share is named, the paths it explains are set aside, and so on. One lossy link
  crossed by several lossy paths is exactly the link common to all of them. Two links that
  explain the very same lossy paths (no probe tells them apart) are not named but reported as
  ambiguous: denying a healthy link costs more than waiting for more probes.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Localization:
    links: list[str] = field(default_factory=list)          # named faulty links, most evidence first
    explained: dict[str, list[str]] = field(default_factory=dict)   # link -> lossy paths it explains
    lossy_paths: list[str] = field(default_factory=list)
    clean_paths: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)       # tied candidates, none named
    unexplained: list[str] = field(default_factory=list)     # lossy paths no candidate covers


def classify(stats: dict[str, dict], *, min_lost: int = 3, min_loss_rate: float = 0.005,
             clean_min_sent: int = 50, ev_losses: dict[str, int] | None = None
             ) -> tuple[list[str], list[str]]:
    """(lossy paths, clean paths) of {path: {"sent", "lost"}} and {path: ASSUMED_BAD events}."""
    ev_losses = ev_losses or {}
    lossy, clean = [], []
    for path in sorted(set(stats) | set(ev_losses)):
        c = stats.get(path, {"sent": 0, "lost": 0})
        sent, lost, events = int(c["sent"]), int(c["lost"]), int(ev_losses.get(path, 0))
        if sent <= 0 and events <= 0:
            continue
        if lost + events >= min_lost and lost + events >= min_loss_rate * sent:
            lossy.append(path)
        elif lost == 0 and events == 0 and sent >= clean_min_sent:
            clean.append(path)
    return lossy, clean


def locate(stats: dict[str, dict], path_links: dict[str, frozenset | set | list], *,
           min_lost: int = 3, min_loss_rate: float = 0.005, clean_min_sent: int = 50,
           min_paths: int = 1, ev_losses: dict[str, int] | None = None,
           judged_min_sent: int = 0) -> Localization:
    """Name the lossy link(s). `path_links[path]` lists the links (any hashable names) the path
    crosses; every path in `stats` and `ev_losses` must be in it. A named link explains >=
    `min_paths` paths; a link crossed by a probed path (one in `stats`) with fewer than
    `judged_min_sent` settled probes is not judged yet."""
    missing = [p for p in (*stats, *(ev_losses or {})) if p not in path_links]
    if missing:
        raise KeyError(f"no links known for path(s) {', '.join(missing[:5])}")
    lossy, clean = classify(stats, min_lost=min_lost, min_loss_rate=min_loss_rate,
                            clean_min_sent=clean_min_sent, ev_losses=ev_losses)
    result = Localization(lossy_paths=lossy, clean_paths=clean)
    exonerated = set()
    for path in clean:
        exonerated.update(path_links[path])
    unjudged = set()
    for path, counts in stats.items():
        if int(counts["sent"]) < judged_min_sent:
            unjudged.update(path_links[path])
    uncovered = set(lossy)
    while uncovered:
        covers: dict = {}
        for path in uncovered:
            for link in set(path_links[path]) - exonerated - unjudged:
                covers.setdefault(link, set()).add(path)
        if not covers:
            break
        best = max(len(c) for c in covers.values())
        if best < min_paths:
            break
        tied = sorted(link for link, c in covers.items() if len(c) == best)
        # tied links that explain different paths are separate faults; two that explain the
        # very same paths cannot be told apart by these probes
        told_apart = [link for link in tied
                      if sum(covers[other] == covers[link] for other in tied) == 1]
        if not told_apart:
            result.ambiguous = tied
            break
        link = told_apart[0]
        covered = sorted(covers[link])
        result.links.append(link)
        result.explained[link] = covered
        uncovered -= set(covered)
    result.unexplained = sorted(uncovered)
    return result


__all__ = ["Localization", "classify", "locate"]
