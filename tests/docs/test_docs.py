"""test_docs.py: the documentation in docs/ says what the library and the tools do, its links
lead somewhere, and the repository names nothing outside itself."""
import functools
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
DOCS = os.path.join(SOURCE, "docs")
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
import tracecheck as tc  # noqa: E402

CLI = os.environ.get("DFTRACE_CLI", "")
PYTHONPATH = os.environ.get("DFTRACE_TEST_PYTHONPATH", "")


def read(*parts):
    with open(os.path.join(SOURCE, *parts), encoding="utf-8") as f:
        return f.read()


def cli(*args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    env.update(env_extra or {})
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60)


def config_keys():
    """(key, default, variable, DFTracer name) of every key, from `dftrace config --keys`."""
    p = cli("config", "--keys")
    assert p.returncode == 0, p.stderr
    rows = []
    for line in p.stdout.splitlines()[1:]:
        key, rest = line.split(None, 1)
        variable = re.search(r"\bDFTRACE_[A-Z_]+", rest).group(0)
        default = rest[:rest.index(variable)].strip()
        dftracer = rest[rest.index(variable) + len(variable):].strip()
        rows.append((key, default, variable, dftracer))
    assert len(rows) > 20
    return rows


def doc_config_rows():
    rows = {}
    for line in read("docs", "configuration.md").splitlines():
        m = re.match(r"^\| `([a-z_.]+)` \| (.*?) \| (.*?) \| (.*?) \|", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return rows


def test_configuration_doc_lists_every_key_with_its_default_and_variables():
    rows = doc_config_rows()
    keys = config_keys()
    assert sorted(rows) == sorted(k for k, _, _, _ in keys)
    for key, default, variable, dftracer in keys:
        doc_default, doc_var, doc_dftracer = rows[key]
        assert doc_var == f"`{variable}`", key
        if dftracer == "-":
            assert doc_dftracer == "-", key
        else:
            assert doc_dftracer.startswith(f"`{dftracer}`"), key
        if default not in ('""', ""):
            assert doc_default == f"`{default}`", (key, default, doc_default)


def test_reference_yaml_names_every_key_and_variable_and_loads_cleanly():
    yaml_text = read("conf", "dftrace.yaml")
    for key, _, variable, dftracer in config_keys():
        assert key.split(".")[-1] in yaml_text, key
        if key != "config":
            assert variable in yaml_text, variable
        if dftracer != "-":
            assert dftracer in yaml_text, dftracer
    p = cli("config", env_extra={"DFTRACE_CONFIG": os.path.join(SOURCE, "conf", "dftrace.yaml")})
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "(yaml " in p.stdout


def test_an_empty_configuration_file_changes_nothing(tmp_path):
    empty = tmp_path / "empty.yaml"  # not /dev/null: a real, empty file
    empty.write_text("")
    with_file = cli("config", env_extra={"DFTRACE_CONFIG": str(empty)})
    without = cli("config")
    assert with_file.returncode == 0 and with_file.stderr == "", with_file.stderr
    strip = lambda out: [l for l in out.splitlines() if not l.startswith("config =")]  # noqa: E731
    assert strip(with_file.stdout) == strip(without.stdout)
    assert "(yaml" not in with_file.stdout


def test_format_doc_key_orders_are_the_ones_the_readers_check():
    text = read("docs", "format.md")
    assert "`id, name, cat, pid, tid, ts, dur, ph, args`" in text
    assert ", ".join(tc.X_KEYS) == "id, name, cat, pid, tid, ts, dur, ph, args"
    assert "`id, name, cat, pid, tid, ph, args`" in text
    assert ", ".join(tc.M_KEYS) == "id, name, cat, pid, tid, ph, args"
    # The DT field: the table's sizes add up to the 29 bytes the text announces.
    sizes = {"u8": 1, "u32": 4, "u64": 8}
    rows = re.findall(r"^\s*\| (\d+) \| (u\d+) \|", text, re.M)
    offset = 0
    for off, ty in rows:
        assert int(off) == offset, (off, offset)
        offset += sizes[ty]
    assert offset == 29 and "of length 29" in text


def test_ai_tree_doc_names_every_built_in_node_as_the_library_does():
    table = [l for l in read("docs", "ai-tree.md").split("## 2.")[0].splitlines()
             if l.startswith("| `")]
    paths = []
    for row in table:
        cells = [c.strip() for c in row.strip("|").split("|")]
        paths += [p for p in re.findall(r"`([a-z_.]+)`", cells[0]) if p != "ai"]
    assert len(paths) == 7 + 24, paths  # 7 categories and their 24 children
    script = ("import functools, json, sys\nfrom dftrace import ai\n"
              "out = {}\nfor p in sys.argv[1:]:\n"
              "    n = functools.reduce(getattr, p.split('.'), ai)\n"
              "    out[p] = [n.name, n.cat, n.path]\nprint(json.dumps(out))\n")
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    env.pop("DFTRACE_ENABLE", None)
    p = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    import json
    got = json.loads(p.stdout)
    for path in paths:
        name, cat, real_path = got[path]
        assert real_path == path
        assert cat == path.split(".")[0], path
        assert name == path.split(".")[-1], path  # never prefixed with the category


def io_calls():
    """dftrace._reader.io_calls(): the table of interposed calls, as the built extension has it."""
    script = "import json\nfrom dftrace import _reader\nprint(json.dumps(_reader.io_calls()))\n"
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    env.pop("DFTRACE_ENABLE", None)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    import json
    return json.loads(p.stdout)


def test_io_doc_lists_every_interposed_call_as_the_table_has_it():
    doc = read("docs", "io.md").split("### The calls")[1].split("\n## ")[0]
    classes = {"READ": "read", "WRITE": "write", "COPY": "copy", "META": "metadata",
               "OTHER": "other"}
    places = {"RET": "`ret`", "ITEMS": "`ret` × `size`", "SIZE": "`size`", "FOLDED": "`bytes`",
              "NONE": "-"}
    documented = set()
    for row in doc.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("category", "---"):
            continue
        event = cells[1].strip("`") if cells[1] != "(none)" else ""
        for fn in re.findall(r"`([A-Za-z0-9_]+)`", cells[2]):
            documented.add((cells[0], fn, event, cells[3], cells[4]))
    table = {(cat, fn, event, classes[cls], places[nbytes])
             for cat, fn, event, cls, nbytes in io_calls()}
    assert len(table) > 100  # every POSIX, STDIO and H5 function
    assert not table - documented, "missing from docs/io.md: %s" % sorted(table - documented)
    assert not documented - table, "not interposed: %s" % sorted(documented - table)


def markdown_files():
    for root, dirs, files in os.walk(SOURCE):
        dirs[:] = [d for d in dirs if d != ".git"
                   and not os.path.exists(os.path.join(root, d, "CMakeCache.txt"))]
        for f in files:
            if f.endswith(".md"):
                yield os.path.join(root, f)


def test_relative_links_in_markdown_lead_to_files():
    bad = []
    for md in markdown_files():
        text = open(md, encoding="utf-8").read()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(md), target.split("#")[0]))
            if not os.path.exists(path):
                bad.append(f"{os.path.relpath(md, SOURCE)}: {target}")
    assert not bad, bad


def test_the_repository_names_nothing_outside_itself():
    """No file cites the material that the documentation was written from, or a path of the
    machine it was written on: docs/ is the reference."""
    patterns = re.compile(r"\.\./shared|shared/spec|shared/reference|/work/")
    bad = []
    for root, dirs, files in os.walk(SOURCE):
        dirs[:] = [d for d in dirs if d != ".git"
                   and not os.path.exists(os.path.join(root, d, "CMakeCache.txt"))]
        for f in files:
            path = os.path.join(root, f)
            if f == ".git" or os.path.getsize(path) > 2_000_000 or f.endswith((".gz", ".pfw")):
                continue
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if patterns.search(line) and path != os.path.abspath(__file__):
                    bad.append(f"{os.path.relpath(path, SOURCE)}:{n}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)
