"""The package's layers (linkemu/__init__.py): a module imports only from its
own layer and the layers below it."""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "linkemu"
LAYERS = ("program", "model", "switch", "drivers", "testbed", "experiments", "cli")


def layer_of(dotted):
    """The layer of a module given as "linkemu.a.b" parts after linkemu."""
    return dotted[0] if dotted and dotted[0] in LAYERS else None


def imported(path):
    """(line, dotted name after "linkemu.") of every import of linkemu."""
    here = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level]
                target = base + (node.module.split(".") if node.module else [])
                names = [target + [a.name] for a in node.names] if not node.module else [target]
            elif node.module and node.module.split(".")[0] == "linkemu":
                names = [node.module.split(".")]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name.split(".") for a in node.names if a.name.split(".")[0] == "linkemu"]
        else:
            continue
        for name in names:
            yield node.lineno, name[1:]


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def test_every_module_is_in_a_layer():
    flat = [p.name for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "cli")]
    assert flat == [], "modules outside the layers"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_only(path):
    own = layer_of(list(path.relative_to(PACKAGE).with_suffix("").parts))
    own_rank = LAYERS.index(own) if own else len(LAYERS)
    for line, name in imported(path):
        target = layer_of(name)
        assert target is not None or not name, (
            f"{path.name}:{line} imports linkemu.{'.'.join(name)}, in no layer")
        if target is not None:
            assert LAYERS.index(target) <= own_rank, (
                f"{path.relative_to(PACKAGE)}:{line} imports linkemu.{'.'.join(name)}, "
                f"a layer above {own}")


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    module = tmp_path / "linkemu" / "drivers" / "clock.py"
    module.parent.mkdir(parents=True)
    module.write_text("from ..testbed.bmv2 import CPU_PORT\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "linkemu")
    with pytest.raises(AssertionError, match="a layer above drivers"):
        test_imports_go_down_only(module)
