"""Plain-text renderings of results for a terminal: explain, schedule and simulate."""

from __future__ import annotations

from typing import Any

from kubesched.sim import gangpaths, governance


def _table(headers: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> str:
    """Columns padded to their widest cell; columns in ``right`` are right-aligned."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: list[str]) -> str:
        out = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    lines = [line(headers), line(["-" * w for w in widths])]
    lines += [line(row) for row in rows]
    return "\n".join(lines)


def _pod_group_lines(group: dict[str, Any]) -> list[str]:
    """``explain``'s PodGroup verdict: the group's result and message, how many members fit
    on which node, what is missing, and each member that fits nowhere."""
    policy = group.get("policy") or "missing"
    if group.get("minCount"):
        policy += f" minCount {group['minCount']}"
    lines = [
        f"PodGroup: {group['name']} ({policy}; {group['members']} pending, "
        f"{group['scheduled']} scheduled): {group['result']}, {group['message']}"
    ]
    fit = group.get("fitPerNode")
    if fit:
        lines.append("  fit:    " + ", ".join(f"{n} x{c}" for n, c in fit.items()))
    if group.get("missing"):
        lines.append(f"  needs:  {group['missing']}")
    for key, why in (group.get("unplaced") or {}).items():
        lines.append(f"  {key}: {why}")
    return lines


def explain_table(result: dict[str, Any]) -> str:
    """The verdict, then one line per node: feasible ones by total score with each score
    plugin's normalized score in its own column, then rejected ones with the plugin and
    reasons; the selected node is marked ``*``."""
    nodes = result["nodes"]
    feasible = sum(1 for info in nodes.values() if info["feasible"])
    head = [
        f"Pod:      {result['pod']}",
        f"Profile:  {result['profile']}",
        f"Result:   {result['result']}",
        f"Node:     {result['selectedNode'] or '-'}",
        f"Feasible: {feasible}/{len(nodes)} nodes",
        f"Message:  {result['message']}",
        "",
        "",
    ]
    pre = result.get("preemption")
    if pre:  # explain --preemption: the message as kubectl describe shows it, and the dry run
        head[5] = f"Message:  {result['message']} {pre['message']}".rstrip()
        if pre.get("nominatedNode"):
            victims = ", ".join(pre.get("victims") or []) or "-"
            head[6:6] = [f"Preempt:  would nominate {pre['nominatedNode']}, evicting {victims}"]
    cap = result.get("capacity")
    if cap:  # an Unschedulable Pod: short of capacity, or fragmented, or neither
        head[-2:-2] = [f"Capacity: {cap['message']}"]
    group = result.get("podGroup")
    if group:  # a Workload API PodGroup member: its whole group's verdict
        head[-2:-2] = _pod_group_lines(group)
    if result["result"] == "Gated":  # no cycle runs for it; explain evaluated the nodes anyway
        head[-1:-1] = ["The nodes are what a cycle would find if the gates were removed.", ""]
    plugins: list[str] = []
    for info in nodes.values():
        for name in info["scores"]:
            if name not in plugins:
                plugins.append(name)
    ordered = sorted(nodes.items(), key=lambda kv: (not kv[1]["feasible"], -kv[1]["score"], kv[0]))
    rows = []
    for name, info in ordered:
        mark = "*" if name == result["selectedNode"] else " "
        if info["feasible"]:
            scores = [str(info["scores"].get(p, "-")) for p in plugins]
            rows.append([mark + name, "feasible", str(info["score"]), *scores, ""])
        else:
            why = "; ".join(info["reasons"]) + _device_problems(info.get("devices") or [])
            verdict = f"rejected by {info['plugin']}"
            if info.get("extender"):  # an extender's rejection: name it (its urlPrefix)
                verdict += f" {info['extender']}"
            rows.append([mark + name, verdict, "", *([""] * len(plugins)), why])
    headers = ["NODE", "VERDICT", "TOTAL", *plugins, "REASONS"]
    right = tuple(range(2, 3 + len(plugins)))
    legend = (
        "\n\nTOTAL is the weighted sum of the plugins' normalized scores (0-100) shown beside it."
        if plugins
        else ""
    )
    return "\n".join(head) + _table(headers, rows, right) + legend


def _device_problems(devices: list[dict[str, Any]]) -> str:
    """A DRA-rejected node's failing requests: `` (claim ns/c request gpu: too few free, 1
    of 2 matching free, needs 2)``."""
    parts = [
        f"claim {d['claim']} request {d['request']}: {d['problem']}, {d['free']} of "
        f"{d['matching']} matching free, needs {d['needed']}"
        for d in devices
        if d["problem"]
    ]
    return f" ({'; '.join(parts)})" if parts else ""


def schedule_table(result: dict[str, Any]) -> str:
    """One line per Pod, then the summary.  When the snapshot had Pending Pods of its own
    (scheduled too), a FROM column says which file each Pod came from."""
    pods = result["pods"]
    s = result["summary"]
    from_cluster = any(p.get("source") == "cluster" for p in pods.values())
    rows = [
        [
            key,
            p["result"],
            p["node"] or "-",
            str(p["attempts"]),
            *([p.get("source", "pods")] if from_cluster else []),
            p["message"],
        ]
        for key, p in pods.items()
    ]
    tail = (
        f"\n\n{s['pods']} pods: {s['scheduled']} scheduled, {s['unschedulable']} unschedulable, "
        f"{s['gated']} gated, {s['error']} error; {s['ignored']} ignored (other schedulers)"
    )
    if s.get("fromCluster") or s.get("overlap"):
        tail += (
            f"\n{s.get('fromCluster', 0)} of them from the cluster snapshot (its own Pending "
            f"Pods); {s.get('overlap', 0)} in both files, submitted once"
        )
        if s.get("alreadyBound"):
            tail += f" ({s['alreadyBound']} already bound in the snapshot, not submitted)"
    lines = _preemption_lines(s.get("preemptionLatencySeconds") or {})
    tail += ("\n" + lines[0].strip()) if lines else ""
    headers = ["POD", "RESULT", "NODE", "ATTEMPTS", *(["FROM"] if from_cluster else []), "MESSAGE"]
    return _table(headers, rows, right=(3,)) + tail


def simulate_summary(s: dict[str, Any]) -> str:
    """The dashboard numbers of a simulation run."""
    a = s["attempts"]
    q = s["queueingSeconds"]
    inv = s["invariants"]
    broken = {k: v for k, v in inv.items() if v}
    util = ", ".join(f"{k} {v}%" for k, v in s["utilization"].items())
    pending = ", ".join(f"{k} {v}" for k, v in s["pendingPods"].items())
    lines = [
        f"scenario {s['scenario']} (seed {s['seed']}"
        + (f", Kubernetes {s['kubernetesVersion']}" if s.get("kubernetesVersion") else "")
        + f"): {s['nodes']} nodes, "
        f"{s['podsSubmitted']} pods submitted"
        + (
            f" ({s['podsForOtherSchedulers']} more for other schedulers, ignored)"
            if s.get("podsForOtherSchedulers")
            else ""
        ),
        f"  pods scheduled        {s['podsScheduled']}  (pending {s['podsPending']})",
        f"  attempts              scheduled {a['scheduled']}, unschedulable "
        f"{a['unschedulable']}, error {a['error']}  (success ratio {s['successRatio']})",
        *_retried_lines(s),
        f"  successful pods/s     {s['scheduledPodsPerVirtualSecond']} per simulated second",
        f"  scheduler throughput  {s['attemptsPerWallSecond']} attempts per wall-clock second",
        f"  queueing time         p50 {q['p50']} s, p99 {q['p99']} s",
        *_preemption_lines(s.get("preemptionLatencySeconds") or {}),
        *_startup_lines(s.get("podStartupSeconds") or {}),
        f"  pending pods by queue {pending}",
        *_volume_lines(s),
        f"  utilisation           {util}",
        *_job_lines(s),
        *_fault_lines(s),
        f"  wall time             {s['wallSeconds']} s ({s['virtualSeconds']} simulated s)",
        "  invariants            "
        + ("all hold" if not broken else "VIOLATED: " + ", ".join(sorted(broken))),
        *_governance_lines(s.get("retryGovernanceComparison")),
        *_gang_path_lines(s.get("gangPathComparison")),
    ]
    return "\n".join(lines)


def _gang_path_lines(c: dict[str, Any] | None) -> list[str]:
    """``--compare-gangs``: the same jobs as Coscheduling and as Workload API gangs (the
    lines above are the run as written)."""
    if not c:
        return []
    table = gangpaths.rows(c)
    lines = ["gang paths, same jobs and seed:"]
    for row in table:
        lines.append(f"  {row[0]:<50}" + "".join(f" {cell:>22}" for cell in row[1:]))
    return lines


def _volume_lines(s: dict[str, Any]) -> list[str]:
    """Why Pending, for Pods whose claims are not bound yet (the simulator's PV controller
    runs): the claims they wait on, the oldest Pods first."""
    rows = (s.get("waiting") or {}).get("volumes") or []
    if not rows:
        return []
    shown = []
    for row in rows[:3]:
        claims = ", ".join(
            f"{c['claim']} {c['phase']}"
            + (f" on {c['selectedNode']}" if c.get("selectedNode") else "")
            for c in row["claims"]
        )
        shown.append(f"{row['pod']} (claim {claims})")
    more = f", {len(rows) - 3} more" if len(rows) > 3 else ""
    return [f"  waiting on volumes    {len(rows)} Pods: " + "; ".join(shown) + more]


def _governance_lines(c: dict[str, Any] | None) -> list[str]:
    """``--compare-governance``: both runs side by side (the lines above are the run with
    retryGovernance on)."""
    if not c:
        return []
    lines = [
        f"retry governance, same seed: off vs on (attempts saved {c['attemptsSaved']})",
    ]
    for label, off, on in governance.rows(c):
        lines.append(f"  {label:<50} {off!s:>18} {on!s:>18}")
    return lines


def _retried_lines(s: dict[str, Any]) -> list[str]:
    """Who the unschedulable attempts were, when a few Pods make most of them."""
    top = s.get("mostRetried") or []
    failed = (s.get("attempts") or {}).get("unschedulable", 0)
    share = sum(p["failedAttempts"] for p in top)
    if not top or not failed or share * 2 < failed:
        return []
    names = ", ".join(f"{p['pod']} ({p['failedAttempts']})" for p in top)
    return [
        f"  most retried          {len(top)} Pods made {share} of {failed} unschedulable "
        f"attempts: {names}",
        "                        NodeResourcesFit's retryGovernance wakes such Pods only when a "
        "node has room for them (simulate --compare-governance)",
    ]


def _preemption_lines(p: dict[str, Any]) -> list[str]:
    """Preemption latency (nominated to bound, victims' grace periods included), if any."""
    if not p.get("preemptors"):
        return []
    return [
        f"  preemption latency    p50 {p['p50']} s, p99 {p['p99']} s nominated to bound "
        f"({p['bound']}/{p['preemptors']} preemptors bound)"
    ]


STARTUP_SEGMENTS = ("admission", "scheduling", "binding", "node")


def _startup_lines(p: dict[str, Any]) -> list[str]:
    """Startup split into its segments (p50 / p99 s each), then created to Ready."""
    if not p:
        return []
    total = p.get("total") or {}
    cells = ", ".join(
        f"{name} {(p.get(name) or {}).get('p50')}/{(p.get(name) or {}).get('p99')}"
        for name in STARTUP_SEGMENTS
    )
    return [
        f"  startup p50/p99 s     {cells}",
        f"  created to Ready      p50 {total.get('p50')} s, p99 {total.get('p99')} s "
        f"({total.get('pods', 0)} pods Ready)",
    ]


def _job_lines(s: dict[str, Any]) -> list[str]:
    """Job-layer lines (gangs, Kueue workloads, elastic quotas) when the run had any."""
    out: list[str] = []
    gangs = s.get("gangs") or {}
    for kind, c in (s.get("gangCompletion") or {}).items():
        bound, ready = c["allBoundSeconds"], c["allReadySeconds"]
        out.append(
            f"  {kind + ' gangs':<22}{c['allBound']}/{c['gangs']} every member bound "
            f"(p50 {bound['p50']} s, p99 {bound['p99']} s), {c['allReady']} every member Ready "
            f"(p50 {ready['p50']} s, p99 {ready['p99']} s)"
        )
    if gangs:
        whole = sum(1 for g in gangs.values() if g.get("completeAt") is not None)
        hold = max((g.get("longestIncompleteHoldSeconds", 0.0) for g in gangs.values()), default=0)
        out.append(
            f"  gangs                 {whole}/{len(gangs)} reached minMember bound, longest "
            f"incomplete hold {hold} s"
        )
    workloads = s.get("workloads") or {}
    if workloads:
        admitted = [w for w in workloads.values() if w.get("admittedAt") is not None]
        waits = sorted(w["admissionWaitSeconds"] for w in admitted)
        freed = [w["freedToBoundSeconds"] for w in admitted if w.get("freedToBoundSeconds")]
        median = waits[len(waits) // 2] if waits else None
        out.append(
            f"  workloads             {len(admitted)}/{len(workloads)} admitted, admission wait "
            f"p50 {median} s, freed-to-bound max {max(freed, default=None)} s"
        )
        evictions = sum(int(w.get("evictions") or 0) for w in workloads.values())
        if evictions:
            requeued = sum(1 for w in workloads.values() if w.get("evictions"))
            out.append(
                f"  evictions             {evictions} ({requeued} workloads evicted and "
                f"requeued, {sum(1 for w in workloads.values() if w.get('deactivated'))} "
                "deactivated)"
            )
    for name, q in (s.get("quotas") or {}).items():
        cells = ", ".join(
            f"{res} used {c['used']} min {c['min']} max {c['max']} runtime {c['runtime']}"
            for res, c in q["resources"].items()
        )
        out.append(f"  quota {name:<15} {cells}; reclaimed {q.get('reclaimedPods', 0)} pods")
    return out


def _fault_lines(s: dict[str, Any]) -> list[str]:
    """One line per fault drill (``spec.faults``): Pods affected and recovery."""
    out: list[str] = []
    for d in s.get("faults") or []:
        if d.get("skipped"):
            out.append(f"  fault {d['name']:<15} skipped: {d['skipped']}")
            continue
        rec = f"recovered in {d['recoverySeconds']} s" if d.get("recovered") else "NOT recovered"
        out.append(
            f"  fault {d['name']:<15} {d['kind']} at {d['atSeconds']} s: "
            f"{d['podsAffected']} pods affected, {rec} (pending peak {d.get('peakPending')})"
        )
    return out
