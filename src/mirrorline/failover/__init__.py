"""Failover and failback as commands: `mirrorline failover` and `mirrorline failback`.

One concept per module:

- `state`: the state file that makes every step resumable and tells failback
  where the delta starts;
- `lag`: a flow's lag per partition (source high watermark minus progress);
- `preflight`: the checks before a planned failover;
- `groups`: translating and committing consumer group offsets on the target;
- `loss`: the loss window of an unplanned failover;
- `delta`: whether failback can copy only what was written after failover;
- `steps`: stopping a flow and recording its offsets, shared by both modes;
- `planned`, `unplanned`, `failback`: the three procedures;
- `handover`: the groups step of a planned failover (final checkpoints);
- `context`: the flow, its clusters (`mirrorline.cluster_access`), control and
  status that they work with.
"""
