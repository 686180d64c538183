"""SIGKILL the driver at random moments while it replicates: nothing is lost, ever.

The driver runs as `mirrorline driver` in a child process, on a stream of
120,000 numbered records into 4 partitions; it is killed 3 times (with its Spark
JVM and Python workers, as a lost host would be) and started again each time.
The second time it is not killed but stopped as a service manager stops a
service, by SIGTERM to its whole process group: it must exit with code 0, print
no traceback, and write again at most the one batch it had in flight.
Afterwards the target must hold every source record with the same key, value,
headers and timestamp, in source order per partition:

- at-least-once (the default): the only extra records are re-read runs, each
  starting at a restart, going back to an earlier source record and continuing
  in order; one kill re-writes at most two micro-batches
  (`micro-batch.max.records` records each: the driver saves one batch's
  progress while the next one is written);
- exactly-once (`exactly.once.source.support = enabled`, read back with
  `isolation.level=read_committed`): every record exactly once.

Broker restarts and kills are the chaos run's (`test_chaos.py`; `make chaos` adds
driver kills beside them).

The kill moments are random: set `MIRRORLINE_CRASH_SEED` to replay a run's
choices (the seed is printed; run pytest with `-s` to see it and the counts).
"""

from __future__ import annotations

import os
import random

import pytest

from support.crash_harness import AT_LEAST_ONCE, EXACTLY_ONCE, Scenario, run_crash_scenario


def _seed() -> int:
    chosen = os.environ.get("MIRRORLINE_CRASH_SEED")
    return int(chosen) if chosen else random.SystemRandom().randrange(2**31)


# A driver start takes 10-15 s on a quiet machine and up to a minute on a busy one.
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(
    "mode", [AT_LEAST_ONCE, EXACTLY_ONCE], ids=lambda m: m.name.replace("-", "_")
)
def test_killed_or_stopped_driver_loses_nothing(two_clusters, tmp_path, mode):
    east, west = two_clusters
    scenario = Scenario(
        records=120_000,
        partitions=4,
        kills=3,
        # Within the slice released at each start (`SteadyProducer`): about 11 s of
        # stream per start, as long as a start takes on a quiet machine.
        rate=2_500,
        # 4,000 records per micro-batch: small enough to make the bound per kill tell.
        batch_records=4_000,
        seed=_seed(),
        terminations=(2,),
    )
    print(f"\n{mode.name}: seed {scenario.seed} (MIRRORLINE_CRASH_SEED={scenario.seed} replays it)")

    report = run_crash_scenario(east, west, tmp_path, mode, scenario)

    print(f"duplicates ({mode.name}): {report.duplicates} {report.duplicates_per_kill}")
    assert len(report.kills) == 3
    assert [k.terminated for k in report.kills] == [False, True, False]
    assert report.records == 120_000
    assert report.violations() == [], "\n".join([report.summary(), *report.violations()])
    if mode.exactly_once:
        assert report.replicated == report.records
