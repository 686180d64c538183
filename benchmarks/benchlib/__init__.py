"""What the scripts under benchmarks/ share: process sampling, local clusters and
their data, the replicators' start, the machine's description and report helpers.

Importing the package puts this checkout's `src/` first on the module path, so
every script measures the Mirrorline it lives next to, whatever else the
environment has installed; and, unless `MIRRORLINE_JVM_LIB` names another, it
points that Mirrorline (and every process a script starts) at the jar cache that
`make` fills, the checkout's `.cache/jvm`, which holds MirrorMaker 2's jars.

- `common`: progress lines, polling with deadlines, the benchmark's error;
- `procs`: a process and its descendants sampled from /proc (CPU, RSS, PSS), the
  load of other processes on the machine, a sampled child process and its stop;
- `kafka_data`: local clusters, topics, end offsets, pre-loading and paced producing;
- `replicators`: Mirrorline and MirrorMaker 2 on one shared MM2-format file (the
  failover drill and the restart benchmark);
- `environment`: machine, versions and commit, for every results file;
- `markers`: rewriting the generated block of a markdown file.

The replication benchmark's own parts (`contenders`, `client_check`, `workloads`,
`target`, `backlog`, `steady`, `report`, `chart`) live here too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO = BENCH_DIR.parent

if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("MIRRORLINE_JVM_LIB", str(REPO / ".cache" / "jvm"))
