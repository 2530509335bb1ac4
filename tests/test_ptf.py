"""Runs the PTF suite once and reports each PTF test as a pytest test."""

import ast
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import harness as ptf_harness

PTF_DIR = Path(__file__).resolve().parent.parent / "ptf_tests"


def ptf_test_names():
    """Classes with a runTest method in ptf_tests/*.py, as PTF finds them."""
    names = []
    for path in sorted(PTF_DIR.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(f, ast.FunctionDef) and f.name == "runTest" for f in node.body):
                names.append(f"{path.stem}.{node.name}")
    return names


@pytest.fixture(scope="session")
def ptf_results(tmp_path_factory):
    reason = ptf_harness.preconditions()
    if reason:
        pytest.skip(f"PTF tests need BMv2: {reason}")
    xunit = tmp_path_factory.mktemp("ptf-xunit")
    ptf_harness.main(["--xunit-dir", str(xunit)])
    results = {}
    for report in xunit.glob("*.xml"):
        for case in ET.parse(report).getroot().iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            results[case.get("classname")] = (
                None if problem is None else f"{problem.get('message')}\n{problem.text}")
    return results


@pytest.mark.parametrize("name", ptf_test_names())
def test_ptf(name, ptf_results):
    assert name in ptf_results, f"PTF did not run {name}; see build/ptf.log"
    problem = ptf_results[name]
    assert problem is None, problem


def test_every_ptf_wait_has_an_explicit_timeout():
    """PTF's default negative wait (0.1 s) is shorter than the delays under test."""
    for path in PTF_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "").startswith("verify_"):
                keywords = {k.arg for k in node.keywords}
                assert "timeout" in keywords, f"{path.name}:{node.lineno} waits with PTF's default"
