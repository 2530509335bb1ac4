"""System tests: they drive BMv2 through PTF and Mininet.

A test says what it needs with the marker `environment(check)`: `check()`
is None, or why the test cannot run here (a missing tool, root, Mininet or
the compiled program). It then skips with that reason; under CI (CI=true)
it fails with it instead, so that CI cannot pass having run none of them.
A test of something `make setup` does not make (the project's container
image, a build of about 20 minutes) is marked `optional(check)`: it skips
everywhere, CI included, where it cannot run."""

import functools
import os
import sys
from pathlib import Path

import pytest

from linkemu.testbed.bmv2 import SWITCH_TOOLS, missing_tools

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
UNDER_CI = os.environ.get("CI") == "true"
# mininet/ has no __init__.py: its modules are imported by name, and the
# folder never shadows the real Mininet package.
for folder in ("mininet", "ptf_tests"):
    path = str(ROOT / folder)
    if path not in sys.path:
        sys.path.append(path)


def environment(check):
    """The marker of a test that needs what `check` checks (with_args: a bare
    function as the marker's one argument would be taken as the test)."""
    return pytest.mark.environment.with_args(check)


def optional(check):
    """The marker of a test that needs what `check` checks, beyond what
    `make setup` makes."""
    return pytest.mark.optional.with_args(check)


def pytest_collection_modifyitems(items):
    for item in items:
        reasons = [] if UNDER_CI else _missing(item)
        reasons += _missing(item, "optional")
        for reason in reasons:
            # A skip marker: pytest reports it at the test's own place.
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before any fixture of the test sets up.
    if UNDER_CI:
        for reason in _missing(item):
            pytest.fail(f"CI runs every test; this one cannot run: {reason}", pytrace=False)


def _missing(item, marker_name="environment"):
    """Why `item` cannot run here, by its markers of that name."""
    reasons = (_reason(marker.args[0]) for marker in item.iter_markers(marker_name))
    return [reason for reason in reasons if reason is not None]


@functools.cache
def _reason(check):
    return check()


def compiled(*paths):
    """Check: the compiled program files `paths` exist."""
    def check():
        missing = [p.name for p in paths if not p.exists()]
        if missing:
            return f"{', '.join(missing)} missing: run 'make build' (needs p4c)"
        return None
    return check


compiled_program = compiled(BUILD / "linkemu.json", BUILD / "linkemu.p4info.txtpb")


def mininet_installed():
    try:
        import mininet.net  # noqa: F401
    except ImportError as error:
        return f"Mininet is not installed ({error}; 'make setup' installs Debian's)"
    return None


def switch_as_root(*tools):
    """Check: the switch and `tools` installed, run as root (veth pairs)."""
    def check():
        missing = missing_tools(*SWITCH_TOOLS, "ethtool", *tools)
        if missing:
            return f"missing {', '.join(missing)}"
        if os.geteuid() != 0:
            return "needs root"
        return None
    return check


def mininet(*tools):
    """Check: Mininet, run as root, with the switch, the compiled program and `tools`."""
    def check():
        return switch_as_root(*tools)() or compiled_program() or mininet_installed()
    return check
