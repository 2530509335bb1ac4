"""System tests: they drive BMv2 through PTF and Mininet, and skip with the
reason when a tool, root or the compiled program is missing."""

import os
import sys
from pathlib import Path

import pytest

from linkemu.testbed.bmv2 import SWITCH_TOOLS, missing_tools

ROOT = Path(__file__).resolve().parent.parent
# mininet/ has no __init__.py: its modules are imported by name, and the
# folder never shadows the real Mininet package.
for folder in ("mininet", "ptf_tests"):
    path = str(ROOT / folder)
    if path not in sys.path:
        sys.path.append(path)


def needs_mininet(*tools):
    """Skip marker for tests that run Mininet with the switch and `tools`."""
    missing = missing_tools(*SWITCH_TOOLS, "ethtool", *tools)
    reason = None
    if missing:
        reason = f"missing {', '.join(missing)}"
    elif os.geteuid() != 0:
        reason = "Mininet needs root"
    elif not (ROOT / "build" / "linkemu.json").exists():
        reason = "build/linkemu.json is missing (needs p4c)"
    else:
        try:
            import mininet.net  # noqa: F401
        except ImportError:
            reason = "Mininet is not installed"
    return pytest.mark.skipif(reason is not None, reason=str(reason))
