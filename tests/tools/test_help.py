# test_help.py: the help of the dftrace command and of each subcommand comes from one table of
# commands (tools/commands.cpp), from which the option parser is made too: every option a
# command's help lists is accepted by its parser, every option its synopsis shows is listed, and
# an option not listed is refused with one line and exit status 2.
import re

from conftest import run

# Python's argparse parses these (dftrace report/watch hand their arguments on as they are).
HANDED_ON = {"report", "watch"}
OPTION = re.compile(r"(?:^|[\s\[|(])(--?[a-zA-Z][\w-]*)")


def commands():
    """The commands `dftrace --help` lists: {name: [synopsis lines]}."""
    out = run("--help").stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"^  ([a-z]+)( .*)?$", line)
        if m:
            found.setdefault(m.group(1), []).append(line)
        elif re.match(r"^ {5,}\[", line) and found:
            found[list(found)[-1]].append(line)  # a synopsis continued on the next line
    return found


def listed_options(help_text):
    """{option: takes a value} from the "options:" section of `dftrace CMD --help`."""
    opts = {}
    section = help_text.split("\noptions:\n", 1)
    if len(section) < 2:
        return opts
    for line in section[1].splitlines():
        m = re.match(r"^  (--?[\w-]+)(?:, (--?[\w-]+))?(?: ([A-Z][A-Z]*))?(?:\s|$)", line)
        if m:
            for name in filter(None, m.group(1, 2)):
                opts[name] = m.group(3) is not None
    return opts


def test_overview_lists_every_command():
    cmds = commands()
    for name in ("cat", "merge", "split", "stat", "analyze", "diff", "validate", "convert",
                 "report", "watch", "run", "trigger", "config"):
        assert name in cmds, name
    p = run(check=False)
    assert p.returncode == 2 and p.stderr.startswith("usage: dftrace")


def test_each_command_help_comes_from_the_table():
    for name, synopsis in commands().items():
        if name in HANDED_ON:
            continue
        p = run(name, "--help", check=False)
        assert p.returncode == 0 and p.stdout.startswith(f"usage: dftrace {name}"), (name, p)
        listed = listed_options(p.stdout)
        shown = {m for line in synopsis for m in OPTION.findall(line)}
        # The synopsis in `dftrace --help` and the options listed by `dftrace CMD --help` are
        # the same set, and so is the synopsis in `dftrace CMD --help`.
        assert shown == set(listed) - {"--output"}, (name, shown, listed)
        usage = []  # the synopsis lines, up to the description (indented by two)
        for line in p.stdout.splitlines():
            if re.match(r"^  \S", line):
                break
            usage.append(line)
        assert {m for line in usage for m in OPTION.findall(line)} == shown, (name, usage)
        for opt, takes_value in listed.items():
            # The parser accepts each option the help lists (parsing stops at --help, before
            # the command would run).
            args = [opt, "1"] if takes_value else [opt]
            q = run(name, *args, "--help", check=False)
            assert q.returncode == 0 and "unknown option" not in q.stderr, (name, opt, q.stderr)
            if takes_value:  # and says so when its value is missing
                q = run(name, opt, check=False)
                assert q.returncode == 2 and q.stderr == f"dftrace: option {opt} needs a value\n"
        # An option the help does not list is refused, in one line.
        q = run(name, "--no-such-option", "--help", check=False)
        assert q.returncode == 2 and q.stdout == "", (name, q)
        assert q.stderr == f"dftrace: unknown option --no-such-option (see dftrace {name} --help)\n"


def test_run_command_after_dashdash_is_not_parsed():
    # run's options end at its command: what follows is the command's own.
    p = run("run", "--no-io", "--", "sh", "-c", "exit 3", check=False)
    assert p.returncode == 3, p.stderr
    p = run("run", "ls", check=False)
    assert p.returncode == 2 and "the command comes after --" in p.stderr
