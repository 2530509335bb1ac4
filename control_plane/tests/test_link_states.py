import itertools
import random

import pytest
from scipy import stats

from linkemu.model.link_states import TimelineError, read_timeline, walk, write_timeline
from linkemu.model.profile import ProfileError, parse_profile

SWWW = {
    "seed": 7,
    "start": {"good": 0.5, "bad": 0.5},
    "states": {
        "good": {"error": 0, "next": {"bad": 1},
                 "duration": {"distribution": "exponential", "mean": "6s",
                              "min": "0s", "max": "9s"}},
        "bad": {"error": 0.63, "next": {"good": 1},
                "duration": {"distribution": "uniform", "min": "200ms", "max": "1900ms"}},
    },
}


def chain(states=SWWW):
    return parse_profile({"downlink": {}, "uplink": {}, "link_states": states}).states


def durations(segments, state, count):
    return [s.end_us - s.start_us for s in itertools.islice(
        (s for s in segments if s.state == state), count)]


# SWWW's durations as scipy gives them, in microseconds: truncexpon(b, loc,
# scale) is an exponential of mean `scale` conditioned on [loc, loc + b scale].
SWWW_DURATIONS = {"good": stats.truncexpon(b=9 / 6, loc=0, scale=6_000_000),
                  "bad": stats.uniform(200_000, 1_700_000)}


@pytest.mark.parametrize("state", ["good", "bad"])
def test_durations_fit_their_distribution(state):
    sample = durations(walk(chain(), seed=1), state, 4000)
    result = stats.kstest(sample, SWWW_DURATIONS[state].cdf)
    assert result.pvalue > 0.001, result


def test_a_wrong_distribution_is_caught():
    """The KS check has teeth: clamped (not redrawn) exponentials fail it."""
    rng = random.Random(3)
    clamped = [min(rng.expovariate(1 / 6_000_000), 9_000_000) for _ in range(4000)]
    assert stats.kstest(clamped, SWWW_DURATIONS["good"].cdf).pvalue < 0.001


def test_an_exponential_truncated_far_in_its_tail_is_drawn_at_once():
    """Mean 1 s on [59 s, 60 s]: redrawing until a value falls inside would
    take e^59 draws; the inverse CDF takes one each."""
    c = chain({"start": {"a": 1}, "states": {"a": {
        "error": 0, "next": {"a": 1}, "duration": {
            "distribution": "exponential", "mean": "1s", "min": "59s", "max": "60s"}}}})
    sample = durations(walk(c, seed=1), "a", 4000)
    assert all(59_000_000 <= d <= 60_000_000 for d in sample)
    reference = stats.truncexpon(b=1, loc=59_000_000, scale=1_000_000)
    assert stats.kstest(sample, reference.cdf).pvalue > 0.001


def test_transitions_and_start_follow_the_vectors():
    c = chain({"start": {"a": 0.3, "b": 0.7},
               "states": {"a": {"error": 0, "duration": {"distribution": "static", "value": "1s"},
                                "next": {"a": 0.2, "b": 0.8}},
                          "b": {"error": 1, "duration": {"distribution": "static", "value": "1s"},
                                "next": {"a": 1}}}})
    firsts = [next(walk(c, seed=s)).state for s in range(3000)]
    # Binomial 99.9 % bound around 0.3 * 3000 = 900: +-3.3 sigma = +-83.
    assert abs(firsts.count("a") - 900) < 83
    segments = list(itertools.islice(walk(c, seed=5), 20001))
    after_a = [b.state for a, b in zip(segments, segments[1:]) if a.state == "a"]
    assert abs(after_a.count("a") / len(after_a) - 0.2) < 3.3 * (0.16 / len(after_a)) ** 0.5
    assert all(b.state == "a" for a, b in zip(segments, segments[1:]) if a.state == "b")


def test_seeded_walks_replay_identically_and_seeds_differ():
    c = chain()
    first = list(itertools.islice(walk(c), 200))   # the profile's seed, 7
    assert first == list(itertools.islice(walk(c), 200))
    assert first != list(itertools.islice(walk(c, seed=8), 200))
    assert all(a.end_us == b.start_us for a, b in zip(first, first[1:]))


def test_timeline_round_trip(tmp_path):
    c = chain()
    segments = list(itertools.islice(walk(c), 50))
    path = tmp_path / "timeline.csv"
    write_timeline(segments, path)
    assert read_timeline(path, c) == segments


@pytest.mark.parametrize("text, message", [
    ("state,start_s,end_s\nugly,0,1\n", "unknown state 'ugly'"),
    ("state,start_s,end_s\n" + "u" * 100_000 + ",0,1\n", "unknown state 'uuuu"),
    ("state,start_s,end_s\ngood,0,x" + "1" * 100_000 + "\n", "expected columns"),
    ("state,start_s,end_s\ngood,0,inf\n", "expected columns"),
    ("state,start_s,end_s\ngood,0," + "1" * 200_000 + "\n", "not CSV after line 1: field larger"),
    ("state,start_s,end_s\ngood,0,1\nbad,2,3\n", "without gaps"),
    ("state,start_s,end_s\ngood,0,0\n", "more than 0 s"),
    ("state,begin\ngood,0\n", "expected columns"),
    ("state,start_s,end_s\n", "no segments"),
])
def test_bad_timelines(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(TimelineError, match=message) as info:
        read_timeline(path, chain())
    assert len(str(info.value)) < 300


def test_a_device_is_no_timeline():
    with pytest.raises(TimelineError, match="/dev/zero: cannot read: not a regular file"):
        read_timeline("/dev/zero", chain())


def problems(states):
    with pytest.raises(ProfileError) as info:
        parse_profile({"downlink": {}, "uplink": {}, "link_states": states})
    return info.value.problems


def variant(path, value):
    import copy
    data = copy.deepcopy(SWWW)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize("path, value, fragment", [
    (("states", "bad", "error"), 1.5, "link_states.states.bad.error: 1.5: out of range"),
    (("states", "bad", "error"), -0.1, "link_states.states.bad.error: -0.1: out of range"),
    (("states", "bad", "error"), {"downlink": 0.5, "uplink": 2}, "bad.error.uplink: 2"),
    (("states", "good", "next"), {"bad": 0.5}, "good.next: probabilities sum to 0.5"),
    (("start",), {"good": 0.5, "bad": 0.6}, "link_states.start: probabilities sum to 1.1"),
    (("states", "good", "next"), {"ugly": 1}, "good.next.ugly: 1: unknown state"),
    (("start",), {"nowhere": 1}, "start.nowhere: 1: unknown state"),
    (("states", "bad", "duration", "min"), "2s", "min 2s must be less than max 1.9s"),
    (("states", "bad", "duration", "max"), "0ms", "must be longer than 0s"),
    (("states", "good", "duration"), {"distribution": "static", "value": "0s"},
     "must be longer than 0s"),
    (("states", "good", "duration"), {"distribution": "static", "value": "-1s"}, "duration"),
    (("states", "good", "duration", "distribution"), "normal", "expected one of static"),
    (("states", "good", "duration", "mean"), None, "good.duration.mean: missing"),
    (("states", "good", "next"), None, "good.next: missing"),
    (("states", "good", "colour"), "red", "good.colour: 'red': unknown field"),
])
def test_bad_chains_name_the_field(path, value, fragment):
    data = variant(path, value)
    found = problems(data)
    assert any(fragment in p for p in found), found


def test_shipped_state_values():
    c = chain()
    assert c.states["bad"].error == {"downlink": 0.63, "uplink": 0.63}
    assert c.states["good"].duration.max_us == 9_000_000
    assert c.seed == 7
