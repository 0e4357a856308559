"""GPU policy kernels on hand-computed cases (formulas of the FGD paper's reference plugins)."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.devices import policies as gp
from kubesched.devices.fragmentation import FragModel, Shape, target_workload

INT = np.int64


def arr(*rows: list[int]) -> np.ndarray:
    return np.array(rows, dtype=INT)


def test_fits_and_gpu_choice() -> None:
    free = arr([1000, 300, 600, 0], [200, 100, 0, 0], [1000, 1000, 0, 0])
    assert gp.fits(free, 250, 1).tolist() == [True, False, True]
    assert gp.fits(free, 1000, 2).tolist() == [False, False, True]
    assert gp.fits(free, 0, 0).tolist() == [True, True, True]
    assert gp.best_fit_gpu(free, 250).tolist() == [1, -1, 0]
    assert gp.idle_gpus(free[2], 2).tolist() == [0, 1]
    assert gp.idle_gpus(free[0], 2).tolist() == [0]


def test_dotproduct_scores() -> None:
    # dot = (64000/128000)(16000/128000) + (4000/8000)(1000/8000) = 0.0625 + 0.0625 = 0.125
    got = gp.dotproduct_scores(arr([64000, 0])[0], arr([4000, 8000])[0], 16000, 1000)
    assert got.tolist() == [93, 93]  # 100 * (1 - 0.125 / 2) = 93.75; (0 + 0.125) likewise


def test_bestfit_scores() -> None:
    # left = 0.5 * (96000 - 32000) / 128000 + 0.5 * (8000 - 1000) / 8000 = 0.25 + 0.4375
    got = gp.bestfit_scores(arr([96000, 33000])[0], arr([8000, 1000])[0], 32000, 1000)
    assert got.tolist() == [31, 99]  # (1 - 0.6875) * 100 = 31.25; (1 - 0.0039) * 100 = 99.6


@pytest.mark.parametrize(
    ("free", "count", "milli", "num", "want"),
    [
        ([1000] * 8, 8, 500, 1, 25),  # idle 8-GPU node: max(33 - 8, 8)
        ([1000, 1000, 0, 0], 2, 1000, 1, 31),  # idle 2-GPU node: max(33 - 2, 2)
        ([1000, 400, 1000, 1000], 4, 1000, 2, 48),  # used node, 2 idle GPUs: 50 - 2
        ([1000, 400, 1000, 1000], 4, 300, 1, 96),  # shared GPU with 400 free: 100 - 40 / 10
        ([1000, 900, 1000, 1000], 4, 300, 1, 91),  # 100 - 90 / 10
        ([1000, 200, 1000, 1000], 4, 300, 1, 49),  # needs an idle GPU of a used node: 50 - 1
        ([1000, 200, 1000, 1000], 4, 0, 0, 0),  # CPU-only
    ],
)
def test_packing_scores(free: list[int], count: int, milli: int, num: int, want: int) -> None:
    f = np.array([free + [0] * (8 - len(free))], dtype=INT)
    assert gp.packing_scores(f, np.array([count]), milli, num).tolist() == [want]


def test_clustering_scores() -> None:
    # classes: 0 shared, k whole GPUs; nodes: only shared Pods, shared + 1-GPU, idle, 2-GPU only
    tags = np.zeros((4, 9), dtype=INT)
    tags[0, 0] = 3
    tags[1, 0], tags[1, 1] = 1, 1
    tags[3, 2] = 1
    gpu_left = arr([4000, 8000, 8000, 0])[0]
    got = gp.clustering_scores(tags, gpu_left, gp.affinity_tag(500, 1))
    # 25 * (8000 - left) // 8000 + band: 12 + 75, 0 + 50, 0 + 25, 25 + 0
    assert got.tolist() == [87, 50, 25, 25]
    assert gp.clustering_scores(tags, gpu_left, gp.affinity_tag(0, 0)).tolist() == [0] * 4
    assert gp.affinity_tag(1000, 4) == 4


TW = target_workload({Shape(0, 0, 0): 1.0, Shape(1000, 500, 1): 1.0, Shape(1000, 1000, 1): 2.0})


def test_fgd_prefers_the_gpu_that_completes_a_pair() -> None:
    fm = FragModel(TW, ("G",), 4)
    free = arr([1000, 500, 0, 0], [1000, 1000, 0, 0])
    cpu = arr([64000, 64000])[0]
    model = arr([0, 0])[0]
    frag = fm.frag(free, cpu, model)
    # node 0: the 500-GPU is fragment for the 1-GPU shape (half the weight):
    # 0.25 * 1500 + 0.5 * 500 = 625; node 1: 0.25 * 2000 = 500
    np.testing.assert_allclose(frag, [625.0, 500.0])
    scores, gpu = gp.fgd_scores(fm, free, cpu, model, frag, 1000, 500, 1)
    # node 0 GPU 1: frag 0.25 * 1000 = 250, delta -375 -> sigmoid(0.375) = 0.5927 -> 59
    # node 1: 0.25 * 1500 + 0.5 * 500 = 625, delta +125 -> sigmoid(-0.125) = 0.4688 -> 46
    assert scores.tolist() == [59, 46] and gpu.tolist() == [1, 0]


def test_hole_values() -> None:
    tw = target_workload({Shape(1000, 500, 1): 3.0, Shape(1000, 300, 1): 1.0, Shape(0, 0, 0): 4})
    hv = gp.hole_values(tw)
    assert hv.v[0] == 0 and hv.v[1000] == 0
    assert hv.v[299] == 299  # nothing fits: all waste
    # 400: only 300 fits (p = 1/4): 3/4 * 400 + 1/4 * v[100] = 300 + 25
    assert hv.v[400] == pytest.approx(325.0)
    # 500: both fit: 1/4 * v[200] + 3/4 * v[0] = 50
    assert hv.v[500] == pytest.approx(50.0)
    assert hv.cpu_min == 1000
    assert hv.weight == 0.0  # no whole-GPU shapes


def test_kubesched_fills_the_hole_a_share_completes() -> None:
    tw = target_workload({Shape(1000, 500, 1): 2.0, Shape(1000, 1000, 1): 2.0})
    fm = FragModel(tw, ("G",), 2)
    hv = gp.hole_values(tw)
    free = arr([1000, 1000], [500, 1000])
    cpu, model, count = arr([8000, 8000])[0], arr([0, 0])[0], arr([2, 2])[0]
    frag = fm.frag(free, cpu, model)
    scores, gpu = gp.kubesched_scores(fm, hv, free, count, cpu, model, frag, 1000, 500, 1)
    assert scores[1] > scores[0] and gpu[1] == 0
    # a whole GPU prefers... the node whose FGD score is best, then a used node
    scores_w, gpu_w = gp.kubesched_scores(fm, hv, free, count, cpu, model, frag, 1000, 1000, 1)
    assert gpu_w.tolist() == [-1, -1] and scores_w[1] >= scores_w[0]


def test_kubesched_cpu_starved_node_strands_its_gpu() -> None:
    tw = target_workload({Shape(4000, 500, 1): 1.0, Shape(4000, 1000, 1): 1.0})
    fm = FragModel(tw, ("G",), 1)
    hv = gp.hole_values(tw)
    assert hv.cpu_min == 4000
    # both nodes one idle GPU; node 0 has too little CPU for anything else: using its GPU
    # for a small-CPU share saves a stranded GPU
    free = arr([1000], [1000])
    cpu, model, count = arr([3000, 64000])[0], arr([0, 0])[0], arr([1, 1])[0]
    frag = fm.frag(free, cpu, model)
    scores, _ = gp.kubesched_scores(fm, hv, free, count, cpu, model, frag, 1000, 500, 1)
    assert scores[0] > scores[1]


def test_hole_weight_is_the_whole_gpu_share_of_demand_unless_small() -> None:
    # whole: 1 task x 1000; shared: 1 x 500 -> whole share 2/3
    tw = target_workload({Shape(1000, 500, 1): 1.0, Shape(1000, 1000, 1): 1.0})
    assert gp.hole_values(tw).weight == pytest.approx(2 / 3)
    # whole share 1000 / (1000 + 8 * 500) = 0.2 < MIN_WHOLE_SHARE: FGD leads, holes break ties
    tw = target_workload({Shape(1000, 500, 1): 8.0, Shape(1000, 1000, 1): 1.0})
    assert gp.hole_values(tw).weight == 0.0


def test_model_pressure_spreads_restricted_demand_by_capacity() -> None:
    # demand per task: 0.5 * 1 (any) + 0.25 * 1 (T4 only) + 0.25 * 2 (T4 or V100) = 1.25
    tw = target_workload(
        {
            Shape(1000, 1000, 1): 2.0,
            Shape(1000, 1000, 1, ("T4",)): 1.0,
            Shape(1000, 1000, 2, ("T4", "V100")): 1.0,
        }
    )
    models = ("T4", "V100", "A100")
    cap = np.array([2.0, 6.0, 8.0])  # 16 GPUs
    p = gp.model_pressure(tw, models, cap)
    # T4 needs 0.25 + 0.5 * 2/8 = 0.375, V100 0.5 * 6/8 = 0.375 (per 1.25 of demand);
    # scaled to 16 GPUs of demand: T4 0.375 * 16 / 1.25 = 4.8 over 2 GPUs, V100 4.8 over 6
    np.testing.assert_allclose(p, [2.4, 0.8, 0.0, 0.0])
    assert gp.model_pressure(target_workload({Shape(1000, 0, 0): 1.0}), models, cap).sum() == 0


def test_kubesched_keeps_gpu_tasks_off_a_model_restricted_tasks_need() -> None:
    tw = target_workload({Shape(1000, 1000, 1): 1.0, Shape(1000, 1000, 1, ("T4",)): 1.0})
    fm = FragModel(tw, ("T4", "A100"), 2)
    hv = gp.hole_values(tw)
    free = arr([1000, 1000], [1000, 1000])
    cpu, model, count = arr([8000, 8000])[0], arr([0, 1])[0], arr([2, 2])[0]
    frag = fm.frag(free, cpu, model)
    pressure = gp.model_pressure(tw, fm.models, np.array([2.0, 2.0]))[model]
    assert pressure.tolist() == [1.0, 0.0]  # the T4-only half of the demand fills T4
    plain, _ = gp.kubesched_scores(fm, hv, free, count, cpu, model, frag, 1000, 1000, 1)
    scores, _ = gp.kubesched_scores(
        fm, hv, free, count, cpu, model, frag, 1000, 1000, 1, pressure=pressure
    )
    # FGD alone already leans to A100 (the T4 shape cannot use it); the pressure widens it by
    # PRESSURE_POINTS score points
    assert scores[1] > scores[0]
    assert (scores[1] - scores[0]) > (plain[1] - plain[0])
    # a CPU-only task ignores the pressure
    cpu_only, _ = gp.kubesched_scores(
        fm, hv, free, count, cpu, model, frag, 1000, 0, 0, pressure=pressure
    )
    same, _ = gp.kubesched_scores(fm, hv, free, count, cpu, model, frag, 1000, 0, 0)
    assert cpu_only.tolist() == same.tolist()
