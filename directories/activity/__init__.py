"""SCIM activity of a directory (contract §4.1): the request log and the health of its connection.

- `state`: the counters every SCIM request adds to, in a form that adds up across processes, and the
  rule that turns them into a health state (no database);
- `recorder`: each web process's counters and log entries in memory, written in batches by a background
  thread, so a SCIM request never waits on them;
- `services`: the writes (a batch into the health row, state changes and their dsync.health_changed,
  the periodic sweep, the request log and its purge);
- `selectors`: the reads; `rendering`: the JSON shapes (the Directory's `health`, a log entry).
"""
