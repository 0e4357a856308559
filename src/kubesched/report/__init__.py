"""The report room: what a run says to a person.

Text summaries (:mod:`~kubesched.report.text`), plots (:mod:`~kubesched.report.plots`,
:mod:`~kubesched.report.startupplot`, :mod:`~kubesched.report.gpuplot`,
:mod:`~kubesched.report.sweepplot`) and the HTML report (:mod:`~kubesched.report.html`) of a
simulation, a benchmark (:mod:`~kubesched.report.bench`) or a sweep
(:mod:`~kubesched.report.sweep`).  The only room that imports matplotlib.

Imports every room below ``cli``.
"""
