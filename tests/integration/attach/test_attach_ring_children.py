"""test_attach_ring_children.py: the channel's files left by a process killed with SIGKILL,
removed by the next process that waits and by `dftrace attach`."""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
from test_attach import PROG, Program, attach, clean_env  # noqa: E402


# ---- the channel's files of processes that are gone

def channel_files(channel):
    return sorted(os.listdir(channel)) if os.path.isdir(channel) else []


def killed_waiter(tmp_path, channel):
    """A waiting process killed by SIGKILL: its PID.page and PID.ready stay in the channel."""
    env = clean_env(tmp_path, channel, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000"], env)
    prog.expect("ready")
    pid = prog.p.pid
    assert {"%d.page" % pid, "%d.ready" % pid} <= set(channel_files(channel)), \
        channel_files(channel)
    prog.p.send_signal(signal.SIGKILL)
    prog.p.wait()
    prog.p.stdout.close()
    prog.p.stderr.close()
    assert {"%d.page" % pid, "%d.ready" % pid} <= set(channel_files(channel))
    return pid


def reused_pid_files(channel, dead):
    """The killed process's files under the name of a live process (this test's pid): what a
    pid reused by another process looks like (the start time they hold is not its)."""
    me = os.getpid()
    with open(os.path.join(channel, "%d.page" % dead), "rb") as f:
        page = bytearray(f.read())
    page[8:16] = me.to_bytes(8, sys.byteorder)  # its owner's pid (channel_page_head)
    with open(os.path.join(channel, "%d.page" % me), "wb") as f:
        f.write(page)
    with open(os.path.join(channel, "%d.ready" % dead)) as f:
        text = f.read().replace("pid %d\n" % dead, "pid %d\n" % me)
    with open(os.path.join(channel, "%d.ready" % me), "w") as f:
        f.write(text)
    os.chmod(os.path.join(channel, "%d.page" % me), 0o600)
    os.chmod(os.path.join(channel, "%d.ready" % me), 0o600)
    return me


def test_the_next_waiting_process_removes_the_files_of_a_killed_one(tmp_path):
    channel = str(tmp_path / "channel")
    dead = killed_waiter(tmp_path, channel)
    me = reused_pid_files(channel, dead)
    keep = os.path.join(channel, "notes.txt")  # not a process's: left alone
    open(keep, "w").close()
    os.chmod(keep, 0o600)
    env = clean_env(tmp_path, channel, DFTRACE_ENABLE="0", DFTRACE_ATTACH="1",
                    DFTRACE_LOG_FILE=str(tmp_path / "traces" / "t"))
    prog = Program([PROG, "1000000"], env)
    try:
        prog.expect("ready")
        files = channel_files(channel)
        assert not [f for f in files if f.startswith(("%d." % dead, "%d." % me))], files
        assert {"%d.page" % prog.p.pid, "%d.ready" % prog.p.pid, "notes.txt"} <= set(files)
    finally:
        prog.kill()


def test_dftrace_attach_removes_the_files_of_a_killed_process(tmp_path):
    channel = str(tmp_path / "channel")
    dead = killed_waiter(tmp_path, channel)
    r = attach(tmp_path, "--all", tmp_path / "traces", channel=channel)
    assert r.returncode == 1 and "no process that waits" in r.stderr, r.stdout + r.stderr
    assert not [f for f in channel_files(channel) if f.startswith("%d." % dead)], \
        channel_files(channel)
