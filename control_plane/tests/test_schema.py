"""The schemas of profiles and experiment files: the shipped JSON Schemas
and the docs' references are what the readers' schemas give, and the JSON
Schemas accept the shipped files and refuse what does not fit any."""

import json
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "util"))
import gen_schemas  # noqa: E402


@pytest.mark.parametrize("schema_path, schema, doc_path, text", gen_schemas.OUTPUTS,
                         ids=lambda value: getattr(value, "name", ""))
def test_the_shipped_schemas_and_references_are_generated(schema_path, schema, doc_path, text):
    assert schema_path.read_text() == gen_schemas.schema_text(schema), \
        "run make schemas and commit what it writes"
    doc = doc_path.read_text()
    assert gen_schemas.with_reference(doc, text) == doc, "run make schemas"


def validator(name):
    schema = json.loads((ROOT / "schema" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name, folder", [("profile", "profiles"),
                                          ("experiment", "experiments")])
def test_every_shipped_file_meets_its_json_schema(name, folder):
    check = validator(name)
    files = sorted((ROOT / folder).glob("*.yaml"))
    assert files
    for path in files:
        errors = [e.message for e in check.iter_errors(yaml.safe_load(path.read_text()))]
        assert errors == [], (path.name, errors)


def profile(**downlink):
    return {"name": "t", "downlink": {"rate": "10Mbit", **downlink}, "uplink": {}}


@pytest.mark.parametrize("data", [
    profile(rate="10 Mbyte"),
    profile(queue=0),
    profile(delay=20),
    profile(cobalt={"target": "5ms", "quantum": 1}),
    profile(loss={"model": "gilbert"}),
    profile(loss={"p": 0.1}),
    profile(jitter={"distribution": "normal", "jitter": "1ms", "reorder": "yes"}),
    {"name": "t", "downlink": {}},
    {"name": "t b", "downlink": {}, "uplink": {}},
    {**profile(), "link_states": {"start": {"a": 1}, "states": {"a": {"error": 2}}}},
], ids=str)
def test_the_profile_schema_refuses_what_fits_no_profile(data):
    assert list(validator("profile").iter_errors(data))


def test_the_profile_schema_takes_every_form_of_a_field():
    data = profile(rate="unlimited", priority={"match": [{"protocol": "udp", "port": 53},
                                                         {"protocol": 17}]},
                   red={"mode": "bytes", "min": "2000B", "max": 9000, "max_p": 1,
                        "weight": 0.5})
    data["link_states"] = {"start": {"good": 1}, "states": {
        "good": {"error": {"downlink": 0.1, "uplink": 0},
                 "duration": {"distribution": "static", "value": "1s"}, "next": {"good": 1}}}}
    assert list(validator("profile").iter_errors(data)) == []


def experiment(**fields):
    return {"name": "e", "profiles": ["p"], "tcp": {"reno": {"congestion_control": "reno"}},
            "workloads": {"w": [{"app": "bulk", "bytes": "10kB"}]}, **fields}


@pytest.mark.parametrize("data", [
    experiment(profiles=[]),
    experiment(tcp={"x": {"congestion_control": "fast"}}),
    experiment(tcp={"x": {"h0": {"sack": True}}}),
    experiment(workloads={"w": [{"app": "ftp"}]}),
    experiment(matrix={"profiles": ["p"]}),
    experiment(expect=[{"profile": "p", "metric": "m", "study": 0, "within": "10%"}]),
    experiment(replications=0),
], ids=str)
def test_the_experiment_schema_refuses_what_fits_no_experiment(data):
    assert list(validator("experiment").iter_errors(data))


def test_the_experiment_schema_takes_every_form_of_a_field():
    data = experiment(
        profiles=["p", "../x.yaml", {"grid": {"base": "p", "name": "g-{rate}",
                                              "set": {"rate": ["1Mbit", "2Mbit"]}}}],
        tcp={"x": {"sack": False, "mobile": {"ecn": True}, "h3": {"initcwnd": 10}}},
        matrix=[{"profile": ["g-*"]}, {"tcp": ["x"]}],
        expect=[{"profile": "p", "metric": "flow0.bulk.elapsed_s", "study": 1.5,
                 "within": "10%"}])
    assert list(validator("experiment").iter_errors(data)) == []
