"""System tests: they drive BMv2 through PTF and Mininet, and skip with the
reason when a tool, root or the compiled program is missing."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# mininet/ has no __init__.py: its modules are imported by name, and the
# folder never shadows the real Mininet package.
for folder in ("mininet", "ptf_tests"):
    path = str(ROOT / folder)
    if path not in sys.path:
        sys.path.append(path)
