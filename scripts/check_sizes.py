#!/usr/bin/env python3
"""check_sizes.py: fails when a source file or a function in src/, bindings/, tools/ or include/
grows past its size.

The limits: a C, C++ or Python source file holds at most 700 lines (the Fortran interface
module bindings/fortran/dftrace.f90 is not a C, C++ or Python file and is not read); a function
holds at most 80 lines, counted from the line of its name to the line of its closing brace (C,
C++) or from its `def` to its last line (Python), unless the README.md of its folder (or, where
the folder has none, of the nearest folder above it) states the reason under a heading
`Long functions`, one list item a function:

    ## Long functions
    - `NAME` in `FILE`: the reason

NAME is the function as this checker prints it (C, C++: the name before the parameter list,
with its qualification as written, e.g. `runtime::init`; Python: `Class.method`, or
`outer.inner` for a nested function); FILE is relative to the README's folder. An item that
names no long function is reported too, so the READMEs do not keep stale reasons.

C and C++ are scanned, not compiled: comments, string and character literals (raw strings too)
and preprocessor lines are blanked, then braces are matched; a `{` at file, namespace, class or
`extern "C"` scope that follows a parameter list (with its qualifiers or a constructor's
initialiser list) opens a function. Python is read with `ast`.

scripts/size_exceptions.txt lists files (one repository path a line, `#` comments) whose size
problems are printed but do not fail the run: files that other work is splitting at the moment.

Usage: check_sizes.py [ROOT]   (ROOT: the repository, default: this script's parent folder).
Before the repository, the checker runs itself on a small generated tree and fails unless it
finds exactly the problems planted there, so a passing run is never a checker that sees nothing.
Exit status: 0 when every file and function is within its size, 1 otherwise.
"""
import ast
import os
import re
import sys
import tempfile

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 80
CHECKED_ROOTS = ("src", "bindings", "tools", "include")
C_EXT = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".inc")
PY_EXT = (".py",)
EXCEPTIONS = os.path.join("scripts", "size_exceptions.txt")
README_HEADING = re.compile(r"^#+\s*Long functions\s*$", re.IGNORECASE)
README_ITEM = re.compile(r"^\s*[-*]\s+`([^`]+)`\s+in\s+`([^`]+)`\s*:\s*(\S.*)$")

# ---- C and C++ -----------------------------------------------------------------------------


def blank_c(text):
    """`text` with comments, literals and preprocessor lines turned into spaces (newlines kept,
    the quotes of a literal kept), so that only code braces remain."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                if text.startswith("/*", j):  # a block comment may run past the line
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
            continue
        m = re.match(r'(?:u8|[uUL])?R"([^()\\ ]{0,16})\(', text[i:i + 40])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            blank(i + m.end() - 1, j - 1)
            i = j
            continue
        if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
            if re.match(r"[0-9A-Fa-f]", text[i - 1]) and _in_number(text, i):
                i += 1  # a digit separator: 1'000'000
                continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
            continue
        i += 1
    return "".join(out)


def _in_number(text, i):
    """Whether the ' at i stands inside a numeric literal."""
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] in "'."):
        j -= 1
    return text[j + 1].isdigit()


CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype",
           "defined", "static_assert", "requires", "new", "delete", "throw"}
NAME_BEFORE_PAREN = re.compile(
    r"(operator\s*(?:\(\s*\)|\[\s*\]|[^\s\w(]+|\w[\w\s:<>*&]*?)|"
    r"~?[A-Za-z_]\w*(?:\s*<[^()]*?>)?(?:\s*::\s*~?[A-Za-z_]\w*(?:\s*<[^()]*?>)?)*)\s*$")
QUALIFIERS = re.compile(
    r"^(?:\s|const\b|volatile\b|noexcept\b(?:\s*\([^()]*\))?|override\b|final\b|mutable\b|"
    r"&&?|throw\s*\(\s*\)|try\b|->[^{};=]*?(?=\s*(?:$|\b(?:override|final|noexcept)\b))|"
    r"__attribute__\s*\(\([^()]*\)\)|[A-Z_][A-Z0-9_]*)*")


def _top_level_paren(header):
    """(start, end) of the first parenthesised group at depth 0 of `header`, or None."""
    depth = 0
    start = None
    for k, ch in enumerate(header):
        if ch == "(":
            if depth == 0 and start is None:
                start = k
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and start is not None:
                return start, k
    return None


def function_name(header):
    """The name of the function `header` (the text before a `{`) declares, or None when the
    `{` opens something else (a class, a namespace, an initialiser, a lambda)."""
    h = header.strip()
    if not h or re.search(r"\bnamespace\b", h.split("(")[0]) or \
            re.search(r'\bextern\s*"[^"]*"\s*$', h):
        return None
    # the parameter list: the group after the declarator's name (skip `__attribute__((..))`,
    # macro calls before the name, e.g. `DFTRACE_EXPORT int f(...)` has no parens before f)
    pos = 0
    while True:
        grp = _top_level_paren(h[pos:])
        if grp is None:
            return None
        start, end = grp[0] + pos, grp[1] + pos
        before = h[:start]
        m = NAME_BEFORE_PAREN.search(before)
        if m is None:
            return None
        name = re.sub(r"\s+", "", m.group(1))
        if name.startswith("__attribute__") or name in ("alignas",):
            pos = end + 1
            continue
        break
    if name in CONTROL or "=" in before.replace("operator=", "").replace("operator==", ""):
        return None
    rest = h[end + 1:]
    q = QUALIFIERS.match(rest)
    rest = rest[q.end():]
    if rest and not re.match(r"^:(?!:)", rest):  # only a constructor's initialiser list follows
        return None
    return name


def c_functions(text):
    """[(name, first line, last line)] of the functions of C or C++ source `text`, and a list of
    scan problems (braces that do not match)."""
    code = blank_c(text)
    line_of = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_of[k] = line
        if ch == "\n":
            line += 1
    line_of[len(code)] = line
    functions, problems = [], []
    stack = []  # (kind, name, first line) with kind in scope|function|block|init
    header_start = 0
    for k, ch in enumerate(code):
        in_function = any(kind == "function" for kind, _, _ in stack)
        if ch in ";" and not in_function and not (stack and stack[-1][0] in ("block", "init")):
            header_start = k + 1
        elif ch == "{":
            if in_function or (stack and stack[-1][0] in ("block", "init")):
                stack.append(("block", None, 0))
                continue
            header = code[header_start:k]
            stripped = header.rstrip()
            if re.search(r"\)\s*:(?!:)", stripped) and re.search(r"[\w>]$", stripped) and \
                    function_name(header) is not None:
                stack.append(("init", None, 0))  # a member's braced initialiser: a_{x}
                continue
            name = function_name(header)
            if name is not None:
                first = header_start + (len(header) - len(header.lstrip()))
                m = re.search(re.escape(name.split("::")[-1].lstrip("~"))
                              if not name.startswith("operator") else r"operator", header)
                first_line = line_of[header_start + m.start()] if m else line_of[first]
                stack.append(("function", name, first_line))
            elif re.search(r"\b(namespace|class|struct|union|enum)\b", header) or \
                    re.search(r'\bextern\s*"', header):
                stack.append(("scope", None, 0))
                header_start = k + 1
            else:
                stack.append(("block", None, 0))
        elif ch == "}":
            if not stack:
                problems.append(f"line {line_of[k]}: a closing brace without its opening one")
                continue
            kind, name, first_line = stack.pop()
            if kind == "function":
                functions.append((name, first_line, line_of[k]))
            if kind in ("scope", "function"):
                header_start = k + 1
            elif kind == "block" and not any(s[0] in ("function", "block", "init") for s in stack):
                header_start = k + 1
    if stack:
        problems.append(f"{len(stack)} brace(s) left open at the end of the file")
    return functions, problems


# ---- Python --------------------------------------------------------------------------------


def py_functions(text, filename):
    """[(name, first line, last line)] of every function and method of Python `text`."""
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as e:
        return [], [f"not valid Python: {e}"]
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append((name, child.lineno, child.end_lineno))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found, []


# ---- the READMEs' reasons and the exceptions -----------------------------------------------


def readme_reasons(readme):
    """{(file relative to the README's folder, function name): reason} under `Long functions`."""
    reasons = {}
    inside = False
    with open(readme, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                inside = bool(README_HEADING.match(line.strip()))
                continue
            m = README_ITEM.match(line) if inside else None
            if m:
                reasons[(m.group(2), m.group(1))] = m.group(3)
    return reasons


def nearest_readme(root, rel_dir):
    d = rel_dir
    while True:
        p = os.path.join(root, d, "README.md")
        if os.path.isfile(p):
            return os.path.relpath(p, root)
        if d in ("", ".") or d in CHECKED_ROOTS:
            return None
        d = os.path.dirname(d)


def read_exceptions(root):
    path = os.path.join(root, EXCEPTIONS)
    if not os.path.isfile(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()}


# ---- the check -----------------------------------------------------------------------------


def check(root):
    """{file: [message]} of every file or function over its size, and of every stale reason."""
    problems = {}
    readmes = {}  # README -> its reasons
    used = set()  # (README, file, function) that excused a long function

    def add(rel, msg):
        problems.setdefault(rel, []).append(msg)

    for top in CHECKED_ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fn in sorted(filenames):
                if not fn.endswith(C_EXT + PY_EXT):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fn), root)
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                if lines > MAX_FILE_LINES:
                    add(rel, f"{rel}: {lines} lines (at most {MAX_FILE_LINES})")
                if fn.endswith(PY_EXT):
                    funcs, scan = py_functions(text, rel)
                else:
                    funcs, scan = c_functions(text)
                for s in scan:
                    add(rel, f"{rel}: {s}")
                readme = nearest_readme(root, os.path.dirname(rel))
                if readme is not None and readme not in readmes:
                    readmes[readme] = readme_reasons(os.path.join(root, readme))
                for name, first, last in funcs:
                    length = last - first + 1
                    if length <= MAX_FUNCTION_LINES:
                        continue
                    key = None
                    if readme is not None:
                        key = (os.path.relpath(rel, os.path.dirname(readme)), name)
                    if key is not None and key in readmes[readme]:
                        used.add((readme,) + key)
                        continue
                    add(rel, f"{rel}:{first}: function `{name}` is {length} lines (at most "
                        f"{MAX_FUNCTION_LINES} unless {readme or 'its folder README'} states "
                        f"the reason under `Long functions`)")
    for readme, reasons in sorted(readmes.items()):
        for (file, name) in sorted(reasons):
            if (readme, file, name) not in used:
                add(readme, f"{readme}: `{name}` in `{file}` is listed under `Long functions` "
                    f"but is no function over {MAX_FUNCTION_LINES} lines")
    return problems


# ---- the self-check ------------------------------------------------------------------------

SELF_CPP = r'''// a file of the self-check
#include <cstdio>
#define OPEN {
namespace a {
namespace {
int small(int x) { return x + 1; }
}  // namespace
struct widget {
  widget(int v) : v_{v}, w_{v + 1} {
%BODY%
  }
  int inline_method() const noexcept {
%BODY%
    return 0;
  }
  int v_, w_;
};
static const int table[] = {1, 2, 3};
int long_function(const char *s) {
  const char *text = "}}} not a brace {";
  char c = '}';
  const char *raw = R"x(})x";
  /* } */ // }
%BODY%
  if (c == '{') { return text[0] + raw[0]; }
  return 0;
}
auto lambda = [](int x) {
%BODY%
  return x;
};
}  // namespace a
extern "C" int excused(void) {
%BODY%
  return 0;
}
'''
SELF_PY = '''"""a file of the self-check"""


def short():
    return 1


class Box:
    def long_method(self):
%BODY%
        return 0
'''


def self_check():
    """The checker must find exactly the problems planted in a small tree; an error message
    otherwise."""
    body_c = "\n".join(f"    std::printf(\"{{%d}}\\n\", {i});" for i in range(85))
    body_py = "\n".join(f"        x = {i}" for i in range(85))
    cpp = SELF_CPP.replace("%BODY%", body_c)
    tree = {
        "src/a/long.cpp": cpp,
        "src/a/README.md": "# a\n\n## Long functions\n- `excused` in `long.cpp`: planted\n"
                           "- `gone` in `long.cpp`: stale\n\n## Other\n"
                           "- `widget::widget` in `long.cpp`: no\n",
        "src/a/big.h": "int x;\n" * (MAX_FILE_LINES + 1),
        "src/a/ok.h": "int y;\n" * MAX_FILE_LINES,
        "bindings/p/mod.py": SELF_PY.replace("%BODY%", body_py),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        found = sorted(m for msgs in check(tmp).values() for m in msgs)

    def at(needle):
        return cpp[:cpp.index(needle)].count("\n") + 1

    want = [
        "bindings/p/mod.py:9: function `Box.long_method` is 87 lines",
        "src/a/README.md: `gone` in `long.cpp` is listed",
        f"src/a/big.h: {MAX_FILE_LINES + 1} lines",
        f"src/a/long.cpp:{at('widget(int')}: function `widget` is 87 lines",
        f"src/a/long.cpp:{at('int inline_method')}: function `inline_method` is 88 lines",
        f"src/a/long.cpp:{at('int long_function')}: function `long_function` is 93 lines",
    ]
    ok = len(found) == len(want) and all(any(f.startswith(w) for f in found) for w in want)
    if not ok:
        return "self-check: expected problems starting with\n  " + "\n  ".join(want) + \
            "\ngot\n  " + "\n  ".join(found)
    return None


def report(root):
    """Prints every problem of the tree at root; the exit status (0: none that fails)."""
    problems = check(root)
    allowed = read_exceptions(root)
    failing = tolerated = 0
    for rel in sorted(problems):
        for msg in problems[rel]:
            if rel in allowed:
                tolerated += 1
                print(f"tolerated ({EXCEPTIONS}): {msg}")
            else:
                failing += 1
                print(msg)
    for rel in sorted(r for r in allowed - set(problems) if r.endswith(C_EXT + PY_EXT)):
        print(f"note: {rel} is listed in {EXCEPTIONS} but has no size problem: remove it")
    if failing:
        print(f"{failing} size problem(s) (limits: {MAX_FILE_LINES} lines a file, "
              f"{MAX_FUNCTION_LINES} a function; scripts/check_sizes.py)")
        return 1
    print(f"every file and function is within its size ({tolerated} tolerated by {EXCEPTIONS})")
    return 0


if __name__ == "__main__":
    failure = self_check()
    if failure:
        print(failure)
        sys.exit(1)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(report(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(here)))
