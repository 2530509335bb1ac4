"""The repository's layout: mininet/ never shadows the real Mininet, and
p4src/include stays architecture-neutral."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import environment, mininet_installed

ROOT = Path(__file__).resolve().parent.parent


def test_mininet_folder_is_not_a_package():
    assert not (ROOT / "mininet" / "__init__.py").exists()


@environment(mininet_installed)
@pytest.mark.parametrize("cwd", [ROOT, ROOT / "mininet"])
def test_import_mininet_finds_the_real_package(cwd):
    probe = "import mininet, mininet.net; print(mininet.__file__)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=cwd,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert not Path(result.stdout.strip()).is_relative_to(ROOT)


# What p4src/include must not name: an architecture's include files, v1model's
# types and externs, and the v1model glue's headers (p4src/v1model/include).
ARCHITECTURE_NAMES = re.compile(
    r"v1model\.p4|t2?na\.p4|\bstandard_metadata_t\b|\bheaders_t\b|\bmetadata_t\b"
    r"|\b(pass|feature_pass|fq_pass|ring_pass|clock_stamp)_h\b"
    r"|\b(register|counter|direct_counter|meter)\s*<|\bcounter\s*\("
    r"|\b(mark_to_drop|random|recirculate\w*|clone\w*|digest|resubmit\w*)\s*\("
    r"|\bINSTANCE_TYPE_\w+")


def test_the_link_model_names_no_architecture():
    # p4src/include is the link model both targets build on (docs/targets.md).
    found = []
    for path in sorted((ROOT / "p4src" / "include").rglob("*.p4")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//", 1)[0]
            found += [f"{path.relative_to(ROOT)}:{number}: {m.group(0)}"
                      for m in ARCHITECTURE_NAMES.finditer(code)]
    assert found == []
