"""``python -m plcore leaderboard list [--protocol P] [--results DIR]``: the protocol and its hash,
every installed component by track and section, and each cell's state (issue 56, item 4; the
other commands follow)."""

from __future__ import annotations

import argparse
import sys

from plcore.exceptions import ConfigError

__all__ = ["main", "listing"]


def listing(protocol, rows, states) -> str:
    """The text of ``leaderboard list``: a header, then one table per track and section."""
    lines = [f"protocol {protocol.key} ({protocol.hash}); data sets: {', '.join(protocol.datasets)}"]
    datasets = list(protocol.datasets)
    for track in protocol.data["tracks"]:
        for section in ("ranked", "reference"):
            mine = [e for e in rows if e.track == track and e.section == section]
            if not mine:
                continue
            title = f"{track} track" + (" (reference: trained on true labels, unranked)" if section == "reference"
                                        else "")
            lines += ["", f"{title}: {len(mine)} components"]
            table = [["component", "kind", "distribution", *datasets]]
            for e in mine:
                name = e.key if len(e.pipeline) == 1 else f"{e.key} + {e.pipeline[1]}"
                table.append([name, e.kind, f"{e.distribution} {e.version}",
                              *(states[(e.key, d)] for d in datasets)])
            widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    return "\n".join(lines)


def main(argv=None) -> int:
    """Entry point of ``python -m plcore leaderboard``."""
    from plcore.leaderboard.jobs import cell_states, entries
    from plcore.leaderboard.protocol import load_protocol
    from plcore.registry import get_registry

    ap = argparse.ArgumentParser(prog="python -m plcore leaderboard", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    ls = sub.add_parser("list", help="every eligible component by track and each cell's state")
    ls.add_argument("--protocol", default="field-quick/1", help="the protocol, <id>/<version> (default field-quick/1)")
    ls.add_argument("--results", default="leaderboard", help="the folder of run files (default ./leaderboard)")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command != "list":
        raise ConfigError("usage: python -m plcore leaderboard list [--protocol <id>/<version>] [--results DIR] "
                          "(run, merge, page and verify are not there yet)")
    protocol = load_protocol(args.protocol)
    rows = entries(protocol, get_registry())
    print(listing(protocol, rows, cell_states(protocol, rows, args.results)))
    return 0
