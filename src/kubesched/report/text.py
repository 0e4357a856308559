"""Plain-text renderings of results for a terminal: explain, schedule and simulate."""

from __future__ import annotations

from typing import Any


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def explain_table(result: dict[str, Any]) -> str:
    """One line per node: verdict, rejecting plugin and reasons, or scores."""
    head = [
        f"Pod:      {result['pod']}",
        f"Profile:  {result['profile']}",
        f"Result:   {result['result']}",
        f"Node:     {result['selectedNode'] or '-'}",
        f"Message:  {result['message']}",
        "",
    ]
    plugins: list[str] = []
    for info in result["nodes"].values():
        for name in info["scores"]:
            if name not in plugins:
                plugins.append(name)
    rows = []
    nodes = sorted(
        result["nodes"].items(), key=lambda kv: (not kv[1]["feasible"], -kv[1]["score"], kv[0])
    )
    for name, info in nodes:
        mark = "*" if name == result["selectedNode"] else ""
        verdict = "feasible" if info["feasible"] else f"rejected by {info['plugin']}"
        scores = " ".join(f"{p}={info['scores'][p]}" for p in plugins if p in info["scores"])
        detail = scores if info["feasible"] else "; ".join(info["reasons"])
        rows.append([mark + name, verdict, str(info["score"]) if info["feasible"] else "-", detail])
    return "\n".join(head) + _table(["NODE", "VERDICT", "SCORE", "DETAIL"], rows)


def schedule_table(result: dict[str, Any]) -> str:
    """One line per Pod, then the summary."""
    rows = [
        [key, p["result"], p["node"] or "-", str(p["attempts"]), p["message"]]
        for key, p in result["pods"].items()
    ]
    s = result["summary"]
    tail = (
        f"\n\n{s['pods']} pods: {s['scheduled']} scheduled, {s['unschedulable']} unschedulable, "
        f"{s['gated']} gated, {s['error']} error; {s['ignored']} ignored (other schedulers)"
    )
    return _table(["POD", "RESULT", "NODE", "ATTEMPTS", "MESSAGE"], rows) + tail


def simulate_summary(s: dict[str, Any]) -> str:
    """The dashboard numbers of a simulation run."""
    a = s["attempts"]
    q = s["queueingSeconds"]
    inv = s["invariants"]
    broken = {k: v for k, v in inv.items() if v}
    util = ", ".join(f"{k} {v}%" for k, v in s["utilization"].items())
    pending = ", ".join(f"{k} {v}" for k, v in s["pendingPods"].items())
    lines = [
        f"scenario {s['scenario']} (seed {s['seed']}): {s['nodes']} nodes, "
        f"{s['podsSubmitted']} pods submitted",
        f"  pods scheduled        {s['podsScheduled']}  (pending {s['podsPending']})",
        f"  attempts              scheduled {a['scheduled']}, unschedulable "
        f"{a['unschedulable']}, error {a['error']}  (success ratio {s['successRatio']})",
        f"  successful pods/s     {s['scheduledPodsPerVirtualSecond']} per simulated second",
        f"  scheduler throughput  {s['attemptsPerWallSecond']} attempts per wall-clock second",
        f"  queueing time         p50 {q['p50']} s, p99 {q['p99']} s",
        f"  pending pods by queue {pending}",
        f"  utilisation           {util}",
        f"  wall time             {s['wallSeconds']} s ({s['virtualSeconds']} simulated s)",
        "  invariants            "
        + ("all hold" if not broken else "VIOLATED: " + ", ".join(sorted(broken))),
    ]
    return "\n".join(lines)
