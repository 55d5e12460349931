"""test_history.py: the design text states rules, not history: no issue numbers in src/,
bindings/, tools/, docs/, conf/ or any README.md (the story of a change goes in its commit
message).

What counts as an issue number (ISSUE_RE): "issue 14", "issues 16", "issue #14", "issue-14"
(any case), and "#14" standing alone as a reference: one to five digits after a '#' that follows
no letter, digit, '&', '#', '%', '/', quote, '=', ':' or '-' (so HTML entities, URL fragments,
format flags and "key: #222" colours do not count) and that no letter, digit, '-' or ';' follows
(so "#4-title" anchors and "#222;" colours do not count either).

Files listed in scripts/size_exceptions.txt (other work is rewriting them at the moment) are
reported but do not fail the test.
"""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
ROOTS = ("src", "bindings", "tools", "docs", "conf")
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
ISSUE_RE = re.compile(
    r"\bissues?[ -]#?\d+\b"
    r"|(?<![\w&#%/'\"=:-])(?<!: )#\d{1,5}\b(?![\w;-])",
    re.IGNORECASE)


def exceptions():
    path = os.path.join(SOURCE, "scripts", "size_exceptions.txt")
    if not os.path.isfile(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()}


def checked_files():
    """Every text file under ROOTS and every README.md of the repository (not build trees, not
    tests/data)."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(SOURCE):
        rel_dir = os.path.relpath(dirpath, SOURCE)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not (
            rel_dir == "." and (d.startswith("build") or d.startswith("."))) and
            os.path.join(rel_dir, d) != os.path.join("tests", "data"))
        top = rel_dir.split(os.sep)[0]
        for fn in filenames:
            if top in ROOTS or fn == "README.md":
                found.add(os.path.normpath(os.path.join(rel_dir, fn)))
    return sorted(found)


def issue_numbers(text):
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1)
            for m in ISSUE_RE.finditer(line)]


def test_pattern_finds_issue_numbers_and_nothing_else():
    hits = ["see issue 14", "(issues 16 and 14)", "Issue #3", "issue-18", "fixed in #14.",
            "(#7)", "since #123,"]
    misses = ["color: #222;", "color: #222 }", "&#39;", "url/#12", "%#08x", "[a](#4-title)",
              "an issue of the trace", "tissue 3", "issues: 4 findings", "0x#1", "x#12"]
    for h in hits:
        assert issue_numbers(h), h
    for m in misses:
        assert not issue_numbers(m), m


def test_no_issue_numbers_in_the_design_text():
    files = checked_files()
    assert any(f.startswith("src" + os.sep) for f in files) and "README.md" in files
    allowed = exceptions()
    failing, tolerated = [], []
    for rel in files:
        try:
            with open(os.path.join(SOURCE, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue  # not text
        for line, what in issue_numbers(text):
            (tolerated if rel in allowed else failing).append(f"{rel}:{line}: {what}")
    for t in tolerated:
        print("tolerated (scripts/size_exceptions.txt):", t)
    assert not failing, "issue numbers in the design text (state the rule; the story goes " \
        "in the commit message):\n" + "\n".join(failing)
