"""The API-server half of ``upstream_side_by_side.py``, and what both halves share.

A control plane (``oracle/controlplane.sh``: etcd + kube-apiserver v1.34) with ``--nodes``
Nodes (``kube-oracle burst nodes``); then, per ``clientConnection`` qps/burst, repeat and
scheduler (upstream's ``oracle/bin/kube-scheduler``, then ``kubesched run``, each with the same
configuration but its profile's name): a backlog of Pods created before the scheduler starts
(``kube-oracle burst pods --no-wait``, then ``burst wait`` measures first bind -> last bind),
then a burst created while it runs (``burst pods``: first create -> last bind, and each Pod's
creation->bound latency), then the scheduler stops and the Pods are force-deleted.  Optionally
py-spy records ``kubesched run`` during one burst.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("ORACLE_BIN") or ROOT / "oracle" / "bin")
"""The binaries (``oracle/build.sh``); ``ORACLE_BIN=DIR`` names another folder, as for
``oracle/controlplane.sh``, which reads the same variable."""
UPSTREAM, OURS = "kube-scheduler", "kubesched"
RELEASE = "1.34"
"""The release of the binaries in :data:`BIN` (``oracle/bin``'s top level is the default
release's); kubesched decides as that release so both sides schedule the same way."""


class BenchError(Exception):
    """A step failed; the message says which and why."""


def run(cmd: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; a timeout is a BenchError naming the command."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        raise BenchError(f"{' '.join(cmd[:4])} ...: no answer after {timeout:g} s") from e


def kubesched_cmd() -> list[str]:
    """``kubesched`` of this checkout (PYTHONPATH=src), with the running interpreter."""
    return [sys.executable, "-c", "import sys; from kubesched.cli import main; sys.exit(main())"]


def env() -> dict[str, str]:
    src = str(ROOT / "src")
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{src}:{path}" if path else src}


def summarise(runs: list[dict[str, Any]], *keys: str) -> dict[str, Any]:
    """Medians of ``keys`` over ``runs``, and the runs."""
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in keys}
    out["runs"] = runs
    return out


# ---- against the API server -----------------------------------------------------------------


@contextmanager
def control_plane(keep: Path | None) -> Iterator[Path]:
    """etcd + kube-apiserver in a fresh directory; stopped (and removed unless kept) at exit."""
    directory = keep or Path(tempfile.mkdtemp(prefix="upbench-"))
    script = ROOT / "oracle" / "controlplane.sh"
    proc = run(["bash", str(script), "start", str(directory)], 300)
    if proc.returncode != 0:
        run(["bash", str(script), "stop", str(directory)], 60)
        raise BenchError(f"controlplane.sh start failed:\n{proc.stderr[-1500:]}")
    try:
        yield directory
    finally:
        run(["bash", str(script), "stop", str(directory)], 60)
        if keep is None:
            shutil.rmtree(directory, ignore_errors=True)


def scheduler_config(directory: Path, who: str, qps: float, burst: int) -> tuple[Path, str]:
    """A KubeSchedulerConfiguration: this qps/burst, no leader election, one profile."""
    name = "default-scheduler" if who == UPSTREAM else "kubesched"
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(directory / "admin.kubeconfig"),
            "qps": qps,
            "burst": burst,
        },
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name}],
    }
    path = directory / f"{who}-{qps:g}.json"
    path.write_text(json.dumps(cfg))
    return path, name


def start_scheduler(directory: Path, who: str, config: Path) -> subprocess.Popen[bytes]:
    log = open(directory / f"{who}.log", "ab")  # noqa: SIM115 (closed with the process)
    if who == UPSTREAM:
        cmd = [str(BIN / "kube-scheduler"), "--config", str(config), "--secure-port=0", "--v=1"]
    else:
        cmd = [*kubesched_cmd(), "run", "--config", str(config), "--metrics-port", "0"]
    return subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env=env(), start_new_session=True
    )


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def burst(directory: Path, mode: str, *args: str, timeout: float) -> str:
    kubeconfig = str(directory / "admin.kubeconfig")
    cmd = [
        str(BIN / "kube-oracle"),
        "burst",
        mode,
        "--kubeconfig",
        kubeconfig,
        "--timeout",
        f"{timeout:g}",
        *args,
    ]
    proc = run(cmd, timeout + 60)
    if proc.returncode != 0:
        raise BenchError(f"kube-oracle burst {mode} {' '.join(args)}: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def api_once(
    directory: Path,
    who: str,
    qps: float,
    burst_: int,
    pods: int,
    tag: str,
    timeout: float,
    spy: Path | None,
    templates: Path,
) -> dict[str, Any]:
    """One scheduler started fresh: first the backlog (Pods created before it started), then
    the burst (Pods created while it runs); returns the burst's numbers plus
    ``backlogPodsPerSecond``, ``backlogCpuMsPerPod`` (the process's CPU from its start to the
    backlog's last bind, start-up included, per Pod), ``cpuMsPerPod`` (its CPU during the
    burst, per Pod) and ``apiCpuMsPerPod`` (kube-apiserver's and etcd's CPU from the
    scheduler's start to the backlog's last bind, per Pod: what serving this scheduler's
    lists, watches, binds and Events cost the control plane it shares the cores with, plus
    the control plane's own background work over that time, so a slower backlog is charged
    more of it), ``burstApiCpuMsPerPod`` (theirs over the burst: creating the Pods and
    serving the scheduler), ``burstDriverCpuMsPerPod`` (the creator's own CPU over the burst,
    ``kube-oracle burst pods``: it runs on the same cores for either scheduler),
    ``burstCreateShare`` (the creation's share of the burst's window, first create -> last
    create over first create -> last bind: near 1 when the scheduler keeps up, so the figure
    is then the creator's rate while both share the cores), ``backlogCreatePodsPerSecond``
    (the creator's rate with no scheduler running), ``backlogEvents`` / ``burstEvents``: the
    Events the scheduler wrote in each namespace, counted after it stopped (each bound Pod's ``Scheduled``; a
    scheduler that drops Events does less work per Pod, so compare CPU at equal counts) and
    ``backlogEventsAtLastBind`` / ``burstEventsAtLastBind``: those counted (a LIST) right
    after each phase's last bind; Events written later have their cost outside that phase's
    window and figures (a backlog's late ones fall into the burst's)."""
    config, name = scheduler_config(directory, who, qps, burst_)
    pod_args = ("--template", str(templates / "pod-default.yaml"), "--scheduler-name", name)
    backlog, burst_ns = f"backlog-{tag}", f"burst-{tag}"
    created = burst(
        directory,
        "pods",
        *pod_args,
        "--count",
        str(pods),
        "--namespace",
        backlog,
        "--no-wait",
        timeout=timeout,
    )
    kubeconfig = str(directory / "admin.kubeconfig")
    wait = ["--kubeconfig", kubeconfig, "--namespace", backlog, "--count", str(pods)]
    waiter = subprocess.Popen(
        [str(BIN / "kube-oracle"), "burst", "wait", *wait, "--timeout", f"{timeout:g}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc = recorder = None
    events: dict[str, int] = {}
    try:
        assert waiter.stdout is not None
        if waiter.stdout.readline().strip() != "watching":
            raise BenchError(f"kube-oracle burst wait: {waiter.communicate(timeout=10)[1].strip()}")
        api_before = control_plane_cpu(directory)
        proc = start_scheduler(directory, who, config)
        out, err = waiter.communicate(timeout=timeout + 60)
        api_cpu = (control_plane_cpu(directory) - api_before) / pods
        if waiter.returncode != 0:
            raise BenchError(f"backlog of {pods} Pods: {err.strip()}")
        backlog_rate = json.loads(out)["podsPerSecond"]
        # from the process's start: its start-up (imports, first lists) is in this figure
        backlog_cpu = cpu_seconds(proc.pid) / pods
        backlog_events_at_end = count_events(directory, backlog)
        if spy is not None:
            # --gil: only the thread holding the GIL, i.e. where Python spends its CPU
            record = ["record", "--format", "raw", "--gil", "-o", str(spy), "-p", str(proc.pid)]
            recorder = subprocess.Popen(
                [py_spy(), *record],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1)
        cpu_before = cpu_seconds(proc.pid)
        api_before = control_plane_cpu(directory)
        driver_before = children_cpu_seconds()
        out = burst(
            directory,
            "pods",
            *pod_args,
            "--count",
            str(pods),
            "--namespace",
            burst_ns,
            timeout=timeout,
        )
        cpu_per_pod = (cpu_seconds(proc.pid) - cpu_before) / pods
        burst_api_cpu = (control_plane_cpu(directory) - api_before) / pods
        driver_cpu = (children_cpu_seconds() - driver_before) / pods
        burst_events_at_end = count_events(directory, burst_ns)
        if recorder is not None:  # py-spy first, while its target still runs
            stop(recorder, signal.SIGINT)
            recorder = None
        stop(proc)  # its queued Events flushed before they are counted
        events = {ns: count_events(directory, ns) for ns in (backlog, burst_ns)}
        result = json.loads(out)
        return {
            **result,
            "backlogPodsPerSecond": backlog_rate,
            "backlogCreatePodsPerSecond": json.loads(created)["createPodsPerSecond"],
            "backlogCpuMsPerPod": backlog_cpu * 1000,
            "cpuMsPerPod": cpu_per_pod * 1000,
            "apiCpuMsPerPod": api_cpu * 1000,
            "burstApiCpuMsPerPod": burst_api_cpu * 1000,
            "burstDriverCpuMsPerPod": driver_cpu * 1000,
            "burstCreateShare": result["createSeconds"] / result["allBoundSeconds"],
            "backlogEvents": events[backlog],
            "burstEvents": events[burst_ns],
            "backlogEventsAtLastBind": backlog_events_at_end,
            "burstEventsAtLastBind": burst_events_at_end,
        }
    except (BenchError, subprocess.TimeoutExpired) as e:
        tail = (directory / f"{who}.log").read_text(errors="replace")[-1500:] if proc else ""
        raise BenchError(f"{who} at qps {qps:g}: {e}\n--- last lines of {who}.log:\n{tail}") from e
    finally:
        if waiter.poll() is None:
            waiter.kill()
        if recorder is not None:
            stop(recorder, signal.SIGINT)
        if proc is not None:
            stop(proc)
        for ns in (backlog, burst_ns):
            burst(directory, "delete", "--namespace", ns, timeout=300)


def count_events(directory: Path, namespace: str) -> int:
    """How many ``events.k8s.io/v1`` Events ``namespace`` holds (LIST pages of 1,000)."""
    from kubesched.live.client import connect  # src/ is on the path (env())

    client = connect(kubeconfig=str(directory / "admin.kubeconfig"), qps=0, burst=1)
    try:
        count, cont = 0, ""
        while True:
            query: dict[str, Any] = {"limit": 1000, **({"continue": cont} if cont else {})}
            page = client.request(
                "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", query=query
            )
            count += len(page.get("items") or [])
            cont = str((page.get("metadata") or {}).get("continue") or "")
            if not cont:
                return count
    finally:
        client.close()


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used so far: every thread, and
    the children it has waited for (``/proc/PID/stat`` utime, stime, cutime, cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    return ticks / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process's children that have been waited for:
    around one ``burst`` call, the ``kube-oracle`` it ran (the scheduler is waited for only
    when it stops)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def control_plane_cpu(directory: Path) -> float:
    """CPU seconds kube-apiserver and etcd of ``directory`` (their pid files) have used."""
    return sum(
        cpu_seconds(int((directory / f"{name}.pid").read_text())) for name in ("apiserver", "etcd")
    )


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise BenchError("--py-spy: py-spy not found (pip install py-spy into the venv)")
    return found


def api(
    nodes: int,
    pods: int,
    settings: list[tuple[float, int]],
    repeats: int,
    timeout: float,
    spy: Path | None,
    keep: Path | None,
    templates: Path,
) -> dict[str, Any]:
    """The burst for every (qps, burst) setting and scheduler, ``repeats`` times interleaved;
    ``templates`` holds node-default.yaml and pod-default.yaml."""
    table: dict[str, Any] = {}
    with control_plane(keep) as directory:
        template = str(templates / "node-default.yaml")
        print(
            burst(
                directory, "nodes", "--template", template, "--count", str(nodes), timeout=600
            ).strip(),
            file=sys.stderr,
        )
        for qps, b in settings:
            runs: dict[str, list[dict[str, Any]]] = {UPSTREAM: [], OURS: []}
            for r in range(repeats):
                for who in (UPSTREAM, OURS):
                    profile = (
                        spy
                        if (spy is not None and who == OURS and r == 0 and (qps, b) == settings[-1])
                        else None
                    )
                    res = api_once(
                        directory,
                        who,
                        qps,
                        b,
                        pods,
                        f"{who}-{qps:g}-{r}",
                        timeout,
                        profile,
                        templates,
                    )
                    runs[who].append(res)
                    lat = res["creationToBoundMs"]
                    print(
                        f"[api {qps:g}/{b} {r + 1}/{repeats}] {who}: "
                        f"{res['podsPerSecond']:.1f} pods/s, p99 creation->bound "
                        f"{lat['Perc99']:.0f} ms, created at {res['createPodsPerSecond']:.0f}/s; "
                        f"backlog {res['backlogPodsPerSecond']:.1f} pods/s, "
                        f"{res['backlogCpuMsPerPod']:.2f} ms CPU per Pod; "
                        f"burst {res['cpuMsPerPod']:.2f} ms CPU per Pod; "
                        f"API server + etcd {res['apiCpuMsPerPod']:.2f} ms CPU per backlog Pod, "
                        f"{res['burstApiCpuMsPerPod']:.2f} per burst Pod; the creator "
                        f"{res['burstDriverCpuMsPerPod']:.2f} ms CPU per burst Pod, creating "
                        f"{100 * res['burstCreateShare']:.0f} % of the burst's window; "
                        "backlog created at "
                        f"{res['backlogCreatePodsPerSecond']:.0f}/s; Events written "
                        f"{res['backlogEvents']} backlog, {res['burstEvents']} burst "
                        f"({res['backlogEventsAtLastBind']}, {res['burstEventsAtLastBind']} "
                        "at each phase's last bind)",
                        file=sys.stderr,
                    )
            for who, rs in runs.items():
                for res in rs:
                    res["p99Ms"] = res["creationToBoundMs"]["Perc99"]
                keys = (
                    "podsPerSecond",
                    "p99Ms",
                    "createPodsPerSecond",
                    "backlogPodsPerSecond",
                    "backlogCpuMsPerPod",
                    "cpuMsPerPod",
                    "apiCpuMsPerPod",
                    "burstApiCpuMsPerPod",
                    "burstDriverCpuMsPerPod",
                    "burstCreateShare",
                    "backlogCreatePodsPerSecond",
                )
                table[f"{qps:g}/{b}/{who}"] = summarise(rs, *keys)
    return table


# ---- py-spy and the tables ------------------------------------------------------------------


def top_frames(raw: Path, n: int = 12) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """From py-spy's raw (collapsed) output: the top ``n`` functions by share of samples on
    top of the stack (self) and anywhere on it (inclusive), line numbers dropped."""
    self_: dict[str, int] = {}
    incl: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [
            f.rsplit(":", 1)[0] + ")" if f.endswith(")") and ":" in f else f
            for f in stack.split(";")
        ]
        total += int(count)
        self_[frames[-1]] = self_.get(frames[-1], 0) + int(count)
        for f in set(frames):
            incl[f] = incl.get(f, 0) + int(count)

    def top(d: dict[str, int]) -> list[tuple[str, float]]:
        return [(f, 100.0 * c / total) for f, c in sorted(d.items(), key=lambda kv: -kv[1])[:n]]

    return (top(self_), top(incl)) if total else ([], [])
