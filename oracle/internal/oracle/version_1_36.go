//go:build kube_ge_1_36 && !kube_ge_1_37

// What upstream v1.36 (oracle/versions/v1.36/go.mod) names differently from the other
// releases this package builds against: oracle/build.sh sets the tags kube_ge_1_35 ...
// kube_ge_1_V for release 1.V, so exactly one version_*.go file builds; the rest of the
// package uses these names only.

package oracle

import (
	"context"
	"errors"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

type (
	sharedLister     = fwk.SharedLister
	sharedDRAManager = fwk.SharedDRAManager
	preEnqueuePlugin = fwk.PreEnqueuePlugin
	nominatingInfo   = fwk.NominatingInfo
	// eventRecorder is what profile.RecorderFactory returns.
	eventRecorder = events.EventRecorderLogger
	// scheduledPod is the Pod argument of Scheduler.SchedulePod.
	scheduledPod = *framework.QueuedPodInfo
)

// queueAdd adds pod to the scheduling queue as its Pod informer does.
func queueAdd(ctx context.Context, q *internalqueue.PriorityQueue, pod *v1.Pod) {
	q.Add(ctx, pod)
}

// queueMetrics is the queue's metrics recorder (internalqueue.WithMetricsRecorder).
func queueMetrics(r *metrics.MetricAsyncRecorder) internalqueue.Option {
	return internalqueue.WithMetricsRecorder(r)
}

// hookNext makes the scheduler tell t each Pod it pops (Scheduler.NextPod).
func hookNext(s *scheduler.Scheduler, t *attemptTimer) {
	next := s.NextPod
	s.NextPod = func(l klog.Logger) (*framework.QueuedPodInfo, error) {
		pi, err := next(l)
		t.pop(pi)
		return pi, err
	}
}

// trackerOptions are the ResourceSlice tracker's options as scheduler.New sets them.
func trackerOptions(client clientset.Interface, factory informers.SharedInformerFactory) resourceslicetracker.Options {
	opts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = factory.Resource().V1beta2().DeviceTaintRules()
		opts.ClassInformer = factory.Resource().V1().DeviceClasses()
	}
	return opts
}

// frameworkOptions are the options scheduler.New gives every framework that depend on the
// release: the snapshot lister, the CSI manager, the Pods-in-PreBind map (the workload and PodGroup managers, for gates off by default, are not set).
func frameworkOptions(factory informers.SharedInformerFactory, lister sharedLister) []frameworkruntime.Option {
	opts := []frameworkruntime.Option{frameworkruntime.WithSnapshotSharedLister(lister)}
	opts = append(opts, frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())))
	opts = append(opts, frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap()))
	return opts
}

// queuedPod is p's entry in the scheduling queue (activeQ, backoffQ or the unschedulable
// Pods, gated ones among them), if it has one.
func queuedPod(q internalqueue.SchedulingQueue, p *v1.Pod) (*framework.QueuedPodInfo, bool) {
	return q.GetPod(p.Name, p.Namespace)
}

// groupOptions are the framework options that give GangScheduling its view of the groups
// when GenericWorkload is on (v1.36: the scheduler cache as PodGroupManager: assigned Pods added, pending ones as group members), fed with the Pods of objs as
// kube-scheduler's Pod informer feeds it: explain's plugins then see every member the
// snapshot holds, the Pod being explained among them.
func groupOptions(ctx context.Context, objs []runtime.Object) []frameworkruntime.Option {
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil
	}
	c := internalcache.New(ctx, nil, true)
	addGroupPods(ctx, c, objs)
	return []frameworkruntime.Option{frameworkruntime.WithPodGroupManager(c)}
}

// groupMember tells whether p names a pod group (its release's field).
func groupMember(p *v1.Pod) bool {
	return p.Spec.SchedulingGroup != nil
}

// benchEmulationVersion is the emulation version scheduler_perf sets for a workload's gates
// (none before v1.37).
func benchEmulationVersion(map[featuregate.Feature]bool) *version.Version { return nil }

// benchPodGroupResource: no createPodGroups before v1.37's scheduler_perf.
var benchPodGroupResource schema.GroupVersionResource

// benchPodGroup refuses: createPodGroups is an op of v1.37's scheduler_perf.
func benchPodGroup([]byte) (runtime.Object, schema.GroupVersionResource, error) {
	return nil, benchPodGroupResource, errors.New("createPodGroups: not an op of this release's scheduler_perf (v1.37 on)")
}

// permitDeadline: this release's gangs are not told apart (its members' waits end at once).
func permitDeadline(any, *v1.Pod) (string, time.Duration) { return "", 0 }

// asCreated drops from a PodGroup created during a run the spec fields the API server drops
// on create while their gate is off (v1.36's dropDisabledPodGroupSpecFields; the fake
// clientset stores what it is given).  The cluster's objects are stored as given: created
// while their gates were on.  v1.36's workload-aware preemption reads
// schedulingConstraints whatever TopologyAwareWorkloadScheduling says (seed 20361 case 137).
func asCreated(obj runtime.Object) {
	pg, ok := obj.(*schedulingv1alpha2.PodGroup)
	if !ok {
		return
	}
	on := utilfeature.DefaultFeatureGate.Enabled
	if !on(features.TopologyAwareWorkloadScheduling) {
		pg.Spec.SchedulingConstraints = nil
	}
	if !on(features.DRAWorkloadResourceClaims) {
		pg.Spec.ResourceClaims = nil
	}
	if !on(features.WorkloadAwarePreemption) {
		pg.Spec.DisruptionMode = nil
		pg.Spec.PriorityClassName = ""
		pg.Spec.Priority = nil
	}
}

// groupsHeld tells whether the scheduler's PodGroup informer (GenericWorkload on) holds
// every PodGroup among objs: GangScheduling's PreEnqueue reads it, and its add event moves
// the members it held.
func groupsHeld(_ *scheduler.Scheduler, factory informers.SharedInformerFactory, objs []runtime.Object) bool {
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return true
	}
	lister := factory.Scheduling().V1alpha2().PodGroups().Lister()
	for _, o := range objs {
		if pg, ok := o.(*schedulingv1alpha2.PodGroup); ok {
			if _, err := lister.PodGroups(pg.Namespace).Get(pg.Name); err != nil {
				return false
			}
		}
	}
	return true
}
