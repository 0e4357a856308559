"""sweep room: one-variable parameter sweeps over seeds, locally or on Ray.

- :mod:`~kubesched.sweep.spec`: the sweep file (a base, a grid of variants, seeds) and its
  tasks; :mod:`~kubesched.sweep.paths`: variables, their classes and how they are set;
- :mod:`~kubesched.sweep.tasks`: one task run by a worker, measured into one row;
- :mod:`~kubesched.sweep.run`: the local process pool, or
  :mod:`~kubesched.sweep.ray_backend` (the only module that imports Ray);
- :mod:`~kubesched.sweep.aggregate`: spread over seeds, the baseline, flags and ranking.

``kubesched sweep`` (:mod:`kubesched.cli.sweep`) prints the table and writes the HTML report
(:mod:`kubesched.report.sweep`).  See ``docs/tuning.md``.
"""
