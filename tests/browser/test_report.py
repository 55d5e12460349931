# test_report.py: `dftrace report`: one self-contained HTML file, rendered in headless
# Debian chromium with the network cut off: every section present with its plots or tables, no
# request leaves the file, no script error, and the page's screenshot is not blank.
import gzip
import hashlib
import html.parser
import json
import os
import subprocess

import pytest

from conftest import CHROMIUM, CLI, HERE, NODE

TRAIN_LOOP = os.environ.get("DFTRACE_TRAIN_LOOP", "")
GEN = os.environ.get("DFTRACE_GEN_TRACE", "")
DFTRACER = os.path.join(HERE, "..", "data", "dftracer")


def render(modules, page, png):
    p = subprocess.run([NODE, os.path.join(HERE, "page_check.mjs"), modules, CHROMIUM, str(page),
                        str(png)], capture_output=True, text=True, timeout=300, check=True)
    print("screenshot:", png)
    return json.loads(p.stdout)


def not_blank(png):
    from PIL import Image
    im = Image.open(png).convert("RGB")
    small = im.resize((200, max(1, im.height * 200 // im.width)))
    px = list(small.getdata())
    inked = sum(1 for r, g, b in px if r + g + b < 600)
    return len(set(px)) > 20 and inked > len(px) // 100


def report(tmp_path, name, *traces):
    out = tmp_path / (name + ".html")
    p = subprocess.run([CLI, "report", *map(str, traces), "-o", str(out)], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    # self-contained: nothing is loaded from elsewhere (svg's xmlns is a name, not a request)
    assert "<script src" not in text and "<link" not in text and "url(http" not in text
    return out


def sections(result):
    return {s["id"]: s for s in result["sections"]}


def test_io_traces_of_eight_ranks(modules, tmp_path):
    ranks = sorted(os.path.join(DFTRACER, f) for f in os.listdir(DFTRACER) if f.startswith("cm1-"))
    assert len(ranks) == 8
    page = report(tmp_path, "cm1", *ranks)
    r = render(modules, page, tmp_path / "cm1.png")
    assert r["requests"] == [] and r["errors"] == []
    s = sections(r)
    for sid in ("overview", "timeline", "categories", "io", "names", "metadata"):
        assert sid in s, sid
    for sid in ("timeline", "categories", "io"):
        assert s[sid]["svgs"] >= 1, sid
    for sid in ("overview", "names", "metadata"):
        assert s[sid]["tables"] >= 1, sid
    assert "mpi" not in s  # no MPI events in these traces: no empty section
    html = page.read_text()
    assert html.count("rank ") >= 8  # a timeline row per rank
    assert not_blank(tmp_path / "cm1.png")


def test_steps_and_communication(modules, tmp_path):
    env = dict(os.environ, DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "t"))
    subprocess.run([TRAIN_LOOP], env=env, check=True, timeout=120, capture_output=True)
    gen = tmp_path / "g.pfw.gz"
    subprocess.run([GEN, str(gen), "--events", "20000", "--threads", "2"], check=True, timeout=120)
    traces = sorted(tmp_path.glob("t-*.pfw.gz")) + [gen]
    page = report(tmp_path, "train", *traces)
    r = render(modules, page, tmp_path / "train.png")
    assert r["requests"] == [] and r["errors"] == []
    s = sections(r)
    assert s["steps"]["svgs"] >= 1 and s["steps"]["tables"] >= 1
    if any('"cat":"comm"' in l for l in subprocess.run(
            [CLI, "cat", str(gen)], capture_output=True, text=True).stdout.splitlines()[:5000]):
        assert s["mpi"]["svgs"] >= 1
    assert not_blank(tmp_path / "train.png")


def test_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "bad.pfw.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    p = subprocess.run([CLI, "report", str(tmp_path / "none*.pfw.gz"), "-o", str(tmp_path / "x.html")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "no trace matches" in p.stderr


def long_names_trace(path, long_chars=5 << 20, distinct=100000):
    """A trace with one name of long_chars characters (a step, an MPI call and, with "read" in
    front, a POSIX call, each the longest event) and `distinct` other names."""
    long = "L" * (long_chars - 6) + ".block"
    t, pid, lines = 1795262848000000, 4242, ["["]

    def ev(name, cat, ts, dur, args):
        lines.append(json.dumps({"id": len(lines), "name": name, "cat": cat, "pid": pid,
                                 "tid": pid, "ts": ts, "dur": dur, "ph": "X",
                                 "args": dict(level=1, **args)}, separators=(",", ":")))

    for i in range(distinct):
        cat = ("compute", "POSIX", "MPI")[i % 3]
        name = "n%06d" % i + (".block" if i % 7 == 0 else "") + ("_read" if cat == "POSIX" else "")
        ev(name, cat, t + i * 10, 5, {"ret": 4096} if cat == "POSIX" else {})
    ev(long, "compute", t + 5, 10 ** 6, {})
    ev(long, "MPI", t + 5, 10 ** 6, {})
    ev("read" + long, "POSIX", t + 5, 10 ** 6, {"ret": 1})
    lines.append("]")
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write("\n".join(lines) + "\n")
    return long


class Balance(html.parser.HTMLParser):
    """Checks that every element opened is closed, in order (void elements aside)."""
    VOID = {"meta", "br", "img", "hr", "input", "link"}

    def __init__(self):
        super().__init__()
        self.stack, self.bad = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.bad.append((tag, self.stack[-3:]))
        else:
            self.stack.pop()


def test_a_5_mb_name_and_100000_names(modules, tmp_path):
    # Labels and tables are bounded: the long name is cut in plots and cells (a hash keeps
    # distinct names apart, the cell's title holds its first 4 KiB), the names' plots and tables
    # hold the biggest only. The subprocess timeout in report() only guards against a hang.
    src = tmp_path / "long.pfw.gz"
    long = long_names_trace(src)
    page = report(tmp_path, "long", src)
    text = page.read_text()
    assert len(text) < 8 << 20
    assert long[:5000] not in text and long[:4000] in text  # a cell's title: the first 4 KiB
    digest = hashlib.sha1(long.encode()).hexdigest()[:8]
    assert "#" + digest in text
    b = Balance()
    b.feed(text)
    b.close()
    assert b.bad == [] and b.stack == [], (b.bad[:3], b.stack)
    r = render(modules, page, tmp_path / "long.png")
    assert r["requests"] == [] and r["errors"] == []
    s = sections(r)
    for sid in ("overview", "timeline", "steps", "categories", "io", "mpi", "names"):
        assert sid in s and s[sid]["svgs"] + s[sid]["tables"] >= 1, sid
    assert not_blank(tmp_path / "long.png")
