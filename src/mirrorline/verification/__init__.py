"""`mirrorline verify`: proving that a flow's copy of its source topics is complete.

A flow keeps, in its target cluster, the exact offset mapping of everything it
copied (its runs, `control.offset_runs`) and how far it has read each source
partition (its progress, `engine.progress`). Verification reads the source
and the remote topic and checks, through that mapping, that every source
record in the range has exactly one copy with equal key, value, headers and
timestamp, and that every target record in the mapped range is such a copy.

- `ranges`: which source offsets are checked per partition, and why the others
  are not (not yet copied, before the flow's first run, outside --since/--until);
- `reading`: streaming reads of a partition in large batches;
- `compare`: the streaming merge of the two sides through the runs (pure logic);
- `report`: the findings per partition and topic, and their JSON document;
- `run`: the whole verification of one flow.
"""
