"""record room: record a real cluster's workload, and replay it offline through kubesched.

- :mod:`~kubesched.record.format`: the recording's versioned format (a directory of
  ``recording.json``, ``snapshot.json`` and ``events.jsonl``; the JSON Schema shipped in
  ``schema/``), what is stripped from every object before it is written (secrets, env values,
  ``last-applied-configuration``), and the checks a recording is read with;
- :mod:`~kubesched.record.recorder`: ``kubesched record``, a read-only watcher of a real
  cluster built on live mode's informers (:mod:`kubesched.live.informer`) that streams
  events to disk;
- :mod:`~kubesched.record.reader`: a recording read back and checked, every problem naming
  the file and the line or field;
- :mod:`~kubesched.record.replay`: ``kubesched replay DIR``, the recording run twice through
  the simulator in virtual time (as the real scheduler placed it, and as kubesched with the
  given configuration places it), and the comparison of the two.

See ``docs/recording.md``.
"""
