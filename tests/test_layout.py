"""The repository's mininet/ folder must never shadow the real Mininet."""

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
