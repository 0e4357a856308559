"""mypy checks every in-tree plugin class against the Protocols of the plugin contract it
implements (:mod:`kubesched.framework.contract`): a signature drifting from its extension
point or capability is a type error here.  Nothing imports this module but
``tests/framework/test_contract.py``, which checks that the lists are what the plugins
implement.
"""

from __future__ import annotations

from kubesched.framework import contract as c
from kubesched.plugins.capacityscheduling.plugin import CapacityScheduling
from kubesched.plugins.coscheduling.plugin import Coscheduling
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.defaultpreemption.plugin import DefaultPreemption
from kubesched.plugins.deferredpodscheduling import DeferredPodScheduling
from kubesched.plugins.devicefragmentation import DeviceFragmentation
from kubesched.plugins.dynamicresources.plugin import DynamicResources
from kubesched.plugins.gangscheduling.plugin import GangScheduling
from kubesched.plugins.gpu_bestfit import GpuBestFit
from kubesched.plugins.gpu_clustering import GpuClustering
from kubesched.plugins.gpu_devices import GpuDevices
from kubesched.plugins.gpu_dotproduct import GpuDotProduct
from kubesched.plugins.gpu_fgd import GpuFGD
from kubesched.plugins.gpu_kubesched import GpuKubesched
from kubesched.plugins.gpu_packing import GpuPacking
from kubesched.plugins.gpu_random import GpuRandom
from kubesched.plugins.imagelocality import ImageLocality
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.plugins.nodeaffinity.plugin import NodeAffinity
from kubesched.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.noderesources_balanced import NodeResourcesBalancedAllocation
from kubesched.plugins.noderesources_fit.plugin import NodeResourcesFit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.plugins.podgrouppodscount.plugin import PodGroupPodsCount
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.plugins.topologyaware.plugin import TopologyPlacementGenerator
from kubesched.plugins.volumebinding.plugin import VolumeBinding
from kubesched.plugins.volumerestrictions import VolumeRestrictions
from kubesched.plugins.volumezone import VolumeZone

PRE_ENQUEUE_PLUGIN: tuple[type[c.PreEnqueuePlugin], ...] = (
    DynamicResources,
    GangScheduling,
    SchedulingGates,
)
QUEUE_SORT_PLUGIN: tuple[type[c.QueueSortPlugin], ...] = (
    Coscheduling,
    PrioritySort,
)
PRE_FILTER_PLUGIN: tuple[type[c.PreFilterPlugin], ...] = (
    CapacityScheduling,
    Coscheduling,
    DeferredPodScheduling,
    DynamicResources,
    GpuDevices,
    InterPodAffinity,
    NodeAffinity,
    NodeDeclaredFeatures,
    NodePorts,
    NodeResourcesFit,
    NodeVolumeLimits,
    PodTopologySpread,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)
PRE_FILTER_EXTENSIONS: tuple[type[c.PreFilterExtensions], ...] = (
    InterPodAffinity,
    NodeVolumeLimits,
    PodTopologySpread,
    VolumeRestrictions,
)
FILTER_PLUGIN: tuple[type[c.FilterPlugin], ...] = (
    DeferredPodScheduling,
    DynamicResources,
    GpuDevices,
    InterPodAffinity,
    NodeAffinity,
    NodeDeclaredFeatures,
    NodeName,
    NodePorts,
    NodeResourcesFit,
    NodeUnschedulable,
    NodeVolumeLimits,
    PodTopologySpread,
    TaintToleration,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)
POST_FILTER_PLUGIN: tuple[type[c.PostFilterPlugin], ...] = (
    CapacityScheduling,
    Coscheduling,
    DefaultPreemption,
    DynamicResources,
)
PRE_SCORE_PLUGIN: tuple[type[c.PreScorePlugin], ...] = (
    DeviceFragmentation,
    DynamicResources,
    GpuBestFit,
    GpuClustering,
    GpuDevices,
    GpuDotProduct,
    GpuFGD,
    GpuKubesched,
    GpuPacking,
    GpuRandom,
    InterPodAffinity,
    NodeAffinity,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    PodTopologySpread,
    TaintToleration,
    VolumeBinding,
)
SCORE_PLUGIN: tuple[type[c.ScorePlugin], ...] = (
    DeviceFragmentation,
    DynamicResources,
    GpuBestFit,
    GpuClustering,
    GpuDevices,
    GpuDotProduct,
    GpuFGD,
    GpuKubesched,
    GpuPacking,
    GpuRandom,
    ImageLocality,
    InterPodAffinity,
    NodeAffinity,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    PodTopologySpread,
    TaintToleration,
    VolumeBinding,
)
SCORE_EXTENSIONS: tuple[type[c.ScoreExtensions], ...] = (
    DeviceFragmentation,
    DynamicResources,
    GpuBestFit,
    GpuKubesched,
    InterPodAffinity,
    NodeAffinity,
    PodTopologySpread,
    TaintToleration,
)
SCORE_NEEDS_PRE_SCORE: tuple[type[c.ScoreNeedsPreScore], ...] = (
    InterPodAffinity,
    PodTopologySpread,
    TaintToleration,
)
RESERVE_PLUGIN: tuple[type[c.ReservePlugin], ...] = (
    CapacityScheduling,
    Coscheduling,
    DynamicResources,
    GpuDevices,
    VolumeBinding,
)
UNRESERVE_PLUGIN: tuple[type[c.UnreservePlugin], ...] = (
    CapacityScheduling,
    Coscheduling,
    DynamicResources,
    GpuDevices,
    VolumeBinding,
)
PERMIT_PLUGIN: tuple[type[c.PermitPlugin], ...] = (
    Coscheduling,
    DeferredPodScheduling,
    GangScheduling,
)
PLACEMENT_FEASIBLE_PLUGIN: tuple[type[c.PlacementFeasiblePlugin], ...] = (GangScheduling,)
POD_GROUP_POST_FILTER_PLUGIN: tuple[type[c.PodGroupPostFilterPlugin], ...] = (DefaultPreemption,)
POD_GROUP_CLAIMS_POST_FILTER_PLUGIN: tuple[type[c.PodGroupClaimsPostFilterPlugin], ...] = (
    DynamicResources,
)
PLACEMENT_GENERATE_PLUGIN: tuple[type[c.PlacementGeneratePlugin], ...] = (
    TopologyPlacementGenerator,
)
PLACEMENT_SCORE_PLUGIN: tuple[type[c.PlacementScorePlugin], ...] = (
    NodeResourcesFit,
    PodGroupPodsCount,
)
PRE_BIND_PLUGIN: tuple[type[c.PreBindPlugin], ...] = (
    DynamicResources,
    GpuDevices,
    VolumeBinding,
)
PRE_BIND_PREVIEW: tuple[type[c.PreBindPreview], ...] = (
    DynamicResources,
    GpuDevices,
    VolumeBinding,
)
BIND_PLUGIN: tuple[type[c.BindPlugin], ...] = (DefaultBinder,)
ENQUEUE_EXTENSIONS: tuple[type[c.EnqueueExtensions], ...] = (
    CapacityScheduling,
    Coscheduling,
    DeferredPodScheduling,
    DynamicResources,
    GangScheduling,
    GpuDevices,
    InterPodAffinity,
    NodeAffinity,
    NodeDeclaredFeatures,
    NodeName,
    NodePorts,
    NodeResourcesFit,
    NodeUnschedulable,
    NodeVolumeLimits,
    PodTopologySpread,
    SchedulingGates,
    TaintToleration,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)
SIGNER: tuple[type[c.Signer], ...] = (
    CapacityScheduling,
    Coscheduling,
    DeferredPodScheduling,
    DeviceFragmentation,
    DynamicResources,
    ImageLocality,
    InterPodAffinity,
    NodeAffinity,
    NodeDeclaredFeatures,
    NodeName,
    NodePorts,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    NodeUnschedulable,
    NodeVolumeLimits,
    PodTopologySpread,
    TaintToleration,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)
REFRESHING_FILTER: tuple[type[c.RefreshingFilter], ...] = (
    DynamicResources,
    PodTopologySpread,
)
STATIC_REJECTIONS: tuple[type[c.StaticRejections], ...] = (NodeResourcesFit,)
FILTER_ONE: tuple[type[c.FilterOne], ...] = (NodeResourcesFit,)
SCORE_ONE: tuple[type[c.ScoreOne], ...] = (
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
)
CANDIDATE_ROWS: tuple[type[c.CandidateRows], ...] = (InterPodAffinity, NodeResourcesFit)
FRAMEWORK_AWARE: tuple[type[c.FrameworkAware], ...] = (DefaultPreemption,)
METRICS_SYNCER: tuple[type[c.MetricsSyncer], ...] = (
    CapacityScheduling,
    GpuDevices,
)
REPORTER: tuple[type[c.Reporter], ...] = (CapacityScheduling,)
