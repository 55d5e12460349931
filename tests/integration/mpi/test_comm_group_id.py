"""test_comm_group_id.py: libdftrace_mpi and the torch.distributed face name a group of world
ranks with the same comm_group text, so that dftrace analyze matches both alike: the C++
(src/plugins/mpi/group_id.cpp, through group_id_print) against dftrace.torch.distributed's
_ranks_id, over runs, singletons, gaps, unsorted members and lengths around the 64-character
threshold past which both write "h" and 16 hex digits of the SHA-1."""
import os
import random
import subprocess

import pytest

PROG = os.environ.get("DFTRACE_GROUP_ID_PROG")
pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup-debian.sh test)")
dist = pytest.importorskip("dftrace.torch.distributed",
                           reason="the dftrace package (build/bindings/python) is not importable")


def member_lists():
    lists = [[0], [0, 1], [0, 1, 2, 3], [0, 2], [4, 5, 6, 7, 12], [3, 0], [2, 1],
             [4, 5, 6, 0, 1, 2], [1, 0, 2, 3], list(range(1000)), list(range(0, 64, 2))]
    # exactly 64 and 65 characters
    lists.append([1000] + list(range(100, 130, 2)))
    lists.append([5] + list(range(100, 132, 2)))
    rnd = random.Random(20261127)
    for _ in range(300):
        world = rnd.randint(1, 200)
        members = rnd.sample(range(world), rnd.randint(1, world))
        if rnd.random() < 0.5:
            members.sort()
        lists.append(members)
    return lists


@pytest.mark.skipif(not PROG, reason="DFTRACE_GROUP_ID_PROG (set by CTest) is not set")
def test_cpp_and_torch_ids_agree():
    lists = member_lists()
    out = subprocess.run([PROG], input="".join(" ".join(map(str, m)) + "\n" for m in lists),
                         stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines()
    assert len(out) == len(lists)
    for members, got in zip(lists, out):
        want = dist._ranks_id(list(members))
        assert got == want, "members %s: C++ %r, torch side %r" % (members, got, want)
    hashed = [got for got in out if got.startswith("h")]
    assert hashed and len(hashed) < len(out), "the lists should cross the 64-character threshold"
    assert out[lists.index([1000] + list(range(100, 130, 2)))] == \
        "1000,100,102,104,106,108,110,112,114,116,118,120,122,124,126,128"
    assert out[lists.index([5] + list(range(100, 132, 2)))].startswith("h")
