"""Every file the user writes is read bounded, as UTF-8, and as YAML
without a key given twice or an alias bomb."""

import os

import pytest

from linkemu.experiments.experiment import ExperimentError, load_experiment
from linkemu.model import files
from linkemu.model.files import MAX_YAML_BYTES, load_yaml
from linkemu.model.profile import ProfileError, load_profile


def problem(path):
    with pytest.raises(ValueError) as info:
        load_yaml(path)
    return str(info.value)


def write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_key_given_twice_is_an_error_with_both_lines(tmp_path):
    path = write(tmp_path, "downlink: {delay: 10ms}\nuplink: {}\ndownlink: {delay: 20ms}\n")
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    text = str(info.value)
    assert "'downlink' is given twice (first on line 1); give each key once" in text
    assert f'in "{path}", line 3, column 1' in text
    nested = problem(write(tmp_path, "a: {x: 1, y: 2, x: 3}\n"))
    assert "'x' is given twice" in nested and "line 1, column 17" in nested


def test_merge_keys_and_a_few_aliases_still_work(tmp_path):
    path = write(tmp_path, "base: &b {x: 1, y: 2}\nc: {<<: *b, x: 5}\nd: [*b, *b]\n")
    assert load_yaml(path) == {"base": {"x": 1, "y": 2}, "c": {"x": 5, "y": 2},
                               "d": [{"x": 1, "y": 2}] * 2}


def test_an_alias_bomb_is_refused_before_any_value_is_made(tmp_path, monkeypatch):
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for name, previous in zip("bcdefghi", "abcdefgh"):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    path = write(tmp_path, "\n".join(lines) + "\n")
    assert os.path.getsize(path) < 1000
    made = []
    monkeypatch.setattr(files._Loader, "construct_object",
                        lambda loader, node, deep=False: made.append(node.tag))
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    # Refused while its nodes are read: 9^9 strings never made nor walked.
    assert made == []
    assert "expands to more than 100000 values" in str(info.value)
    assert "alias inside its own anchor" in problem(write(tmp_path, "a: &a [*a]\n"))


def test_values_python_cannot_hold_are_yaml_errors(tmp_path):
    long_int = problem(write(tmp_path, f"downlink: {{queue: 1{'0' * 5000}}}\n"))
    assert "not a valid int: Exceeds the limit (4300 digits)" in long_int
    assert "line 1, column 19" in long_int and len(long_int) < 300
    assert "not a valid timestamp: month must be in 1..12" in problem(
        write(tmp_path, "name: 2001-13-45\n"))


def test_files_that_are_not_small_regular_utf8_files_are_named(tmp_path):
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ProfileError, match=f"{latin}: invalid profile\n  not UTF-8 text: "
                                           "byte 9 is 0xe9"):
        load_profile(latin)
    assert problem("/dev/zero") == "cannot read: not a regular file"
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert problem(fifo) == "cannot read: not a regular file"   # not waiting for a writer
    big = write(tmp_path, "#" * MAX_YAML_BYTES + "\n")
    assert problem(big) == f"too large; allowed at most {MAX_YAML_BYTES} bytes"
    with pytest.raises(ExperimentError, match="x.yaml: invalid experiment\n  not UTF-8"):
        load_experiment(latin.rename(tmp_path / "x.yaml"))


def test_a_grid_base_is_read_the_same_way(tmp_path):
    write(tmp_path, "downlink: {}\nuplink: {}\nuplink: {}\n", "base.yaml")
    path = write(tmp_path, """
name: x
profiles: [{grid: {base: base.yaml, name: "g-{rate}", set: {rate: [1Mbit]}}}]
tcp: {t: {}}
workloads: {w: [{app: bulk, bytes: 1000}]}
""", "x.yaml")
    with pytest.raises(ExperimentError, match="(?s)profiles\\[0\\].grid.base: 'base.yaml': .*"
                                              "base.yaml: not valid YAML.*'uplink' is given "
                                              "twice"):
        load_experiment(path)
