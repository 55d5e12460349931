"""dftrace.read_calls: the arguments and return values that decorators with capture= recorded,
by stage, for a notebook or a terminal."""
from __future__ import annotations

import gzip
import json
from typing import Any, Dict, List


class Stage(list):
    """The captured calls of one stage (`<category>.<event name>`), in time order: each a dict
    with pid, ts, dur and the captured values under their parameter names (`return` for the
    result). Printable as a table; `to_frame()` gives a pandas DataFrame."""

    def __init__(self, name: str, calls: List[Dict[str, Any]]) -> None:
        super().__init__(calls)
        self.name = name

    def columns(self) -> List[str]:
        seen: Dict[str, None] = {}
        for c in self:
            for k in c:
                if k not in ("pid", "ts", "dur"):
                    seen[k] = None
        return ["pid", "ts", "dur"] + list(seen)

    def to_frame(self):
        import pandas as pd
        return pd.DataFrame(list(self), columns=self.columns())

    def __repr__(self) -> str:
        cols = self.columns()
        rows = [[str(c.get(k, "")) for k in cols] for c in self]
        width = [min(60, max([len(k)] + [len(r[i]) for r in rows])) for i, k in enumerate(cols)]
        line = lambda cells: "  ".join(x[:w].ljust(w) for x, w in zip(cells, width)).rstrip()
        out = ["%s: %d call%s captured" % (self.name, len(self), "" if len(self) == 1 else "s"),
               line(cols)]
        out += [line(r) for r in rows]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        return "<b>%s</b>%s" % (self.name, self.to_frame().to_html(index=False))


class Calls(dict):
    """Stage name -> Stage. A stage is named `<category>.<event name>` (`dataloader.fetch`);
    its bare event name works too when no other category uses it."""

    def __missing__(self, key: str) -> Stage:
        found = [s for name, s in self.items() if name.split(".", 1)[-1] == key]
        if len(found) == 1:
            return found[0]
        raise KeyError("%s (stages with captured calls: %s)" % (key, ", ".join(self) or "none"))

    def __repr__(self) -> str:
        if not self:
            return "no captured calls"
        return "\n\n".join(repr(s) for s in self.values())

    def _repr_html_(self) -> str:
        return "".join(s._repr_html_() for s in self.values())


def read_calls(paths) -> Calls:
    """The calls captured in the traces named by paths (a file, a directory, a glob, or a
    list of these): Calls, keyed by stage. Reads each file once, parsing only the lines that
    hold captured values (their arguments are named `arg.<parameter>`)."""
    from ._read import trace_files
    stages: Dict[str, List[Dict[str, Any]]] = {}
    for path in trace_files(paths):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                if '"arg.' not in line:
                    continue
                try:
                    r = json.loads(line.rstrip().rstrip(","))
                except ValueError:
                    continue
                if not isinstance(r, dict) or r.get("ph") != "X":
                    continue
                args = r.get("args") or {}
                values = {k[4:]: v for k, v in args.items() if k.startswith("arg.")}
                if not values:
                    continue
                call = {"pid": r.get("pid"), "ts": r.get("ts"), "dur": r.get("dur")}
                call.update(values)
                stages.setdefault("%s.%s" % (r.get("cat"), r.get("name")), []).append(call)
    return Calls({name: Stage(name, sorted(calls, key=lambda c: (c["ts"] or 0, c["pid"] or 0)))
                  for name, calls in sorted(stages.items())})
