"""The core (profiles, pushes, drivers, the CLI but for experiments) works
without the analysis extra (dpkt, matplotlib) or scipy."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# Fails every import of the analysis packages, then checks a profile and
# builds its entries as `linkemu check` and `linkemu push` do.
PROBE = """
import sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dpkt", "matplotlib", "scipy"):
            raise ImportError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
from linkemu import cli
from linkemu.model.profile import load_profile
from linkemu.switch.push import profile_entries
for path in sys.argv[1:]:
    profile_entries(load_profile(path))
sys.exit(cli.main(["check", *sys.argv[1:]]))
"""


def test_the_core_needs_no_analysis_packages():
    profiles = sorted(str(p) for p in (ROOT / "profiles").glob("*.yaml"))
    result = subprocess.run([sys.executable, "-c", PROBE, *profiles],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_the_probe_does_block_them():
    result = subprocess.run([sys.executable, "-c", PROBE.replace(
        "from linkemu import cli", "import dpkt")], capture_output=True, text=True, cwd=ROOT)
    assert "No module named 'dpkt'" in result.stderr
