# conftest.py: the browser tests' shared set-up: speedscope and puppeteer-core from npm
# (setup.sh, into the build tree), Debian's chromium, the programs ctest names.
import os
import subprocess

import pytest

CLI = os.environ.get("DFTRACE_CLI", "")
CHROMIUM = os.environ.get("DFTRACE_CHROMIUM", "")
NODE = os.environ.get("DFTRACE_NODE", "")
WORK = os.environ.get("DFTRACE_BROWSER_DIR", "")
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="session")
def modules():
    """node_modules with speedscope and puppeteer-core; the tests skip, saying why, only when the
    npm registry can not be reached."""
    if not (CLI and CHROMIUM and NODE and WORK):
        pytest.fail("run through ctest (the environment names the programs)")
    p = subprocess.run([os.path.join(HERE, "setup.sh"), os.path.join(WORK, "node")],
                       capture_output=True, text=True, timeout=900)
    if p.returncode == 3:
        pytest.skip("the viewer can not be installed from npm: " + p.stdout.strip())
    assert p.returncode == 0, p.stdout + p.stderr
    return os.path.join(WORK, "node", "node_modules")
