"""A batch split among machines (results.merge joins their folders).

Shard K of N (K from 1 to N) holds the runs whose place among the batch's
run ids, sorted, is K - 1 modulo N. Every machine computes its own share
from the experiment file alone; the shares differ by at most one run, and
the replications of a cell, which take about as long as each other, are
dealt out among the shards rather than given to one.
"""

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..model.fields import shown


@dataclass(frozen=True)
class Shard:
    index: int   # K, from 1
    count: int   # N

    @classmethod
    def parse(cls, text):
        match = re.fullmatch(r"(\d+)/(\d+)", text)
        if match is None:
            raise ValueError(f"{shown(text)}: expected K/N, shard K of N, e.g. 1/4")
        index, count = int(match[1]), int(match[2])
        if count < 1:
            raise ValueError(f"{text}: N must be at least 1")
        if not 1 <= index <= count:
            raise ValueError(f"{text}: K must be from 1 to {count} (shards count from 1)")
        return cls(index, count)

    def __str__(self):
        return f"{self.index}/{self.count}"

    def select(self, runs):
        """This shard's runs among `runs`, in their order."""
        ids = sorted(run.run_id for run in runs)
        mine = set(ids[self.index - 1::self.count])
        return [run for run in runs if run.run_id in mine]


def share(experiment, shard):
    """The experiment reduced to `shard`'s runs. Its expectations are left to
    the merge: a share of a cell's replications says nothing against them."""
    return replace(experiment, shard=shard, expectations=())


def folder(out_dir, index, count):
    """Where shard `index` of `count` puts its results when the batch's go
    to `out_dir`."""
    return Path(out_dir) / "shards" / f"{index}-of-{count}"
