//go:build kube_ge_1_37

// What upstream v1.37 (oracle/versions/v1.37/go.mod) and later names differently from the other
// releases this package builds against: oracle/build.sh sets the tags kube_ge_1_35 ...
// kube_ge_1_V for release 1.V, so exactly one version_*.go file builds; the rest of the
// package uses these names only.

package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
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

// hookNext makes the scheduler tell t each Pod it pops (Scheduler.NextEntity: a Pod or a
// PodGroup, which counts as no Pod).
func hookNext(s *scheduler.Scheduler, t *attemptTimer) {
	next := s.NextEntity
	s.NextEntity = func(l klog.Logger) (framework.QueuedEntityInfo, error) {
		e, err := next(l)
		pi, _ := e.(*framework.QueuedPodInfo)
		t.pop(pi)
		return e, err
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
		opts.TaintInformer = factory.Resource().V1().DeviceTaintRules()
	}
	return opts
}

// frameworkOptions are the options scheduler.New gives every framework that depend on the
// release: the snapshot lister, the CSI manager, the Pods-in-PreBind map, the mutable snapshot (the workload and PodGroup managers, for gates off by default, are not set).
func frameworkOptions(factory informers.SharedInformerFactory, lister sharedLister) []frameworkruntime.Option {
	opts := []frameworkruntime.Option{frameworkruntime.WithSnapshotSharedLister(lister)}
	opts = append(opts, frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())))
	opts = append(opts, frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap()))
	if mutable, ok := lister.(fwk.MutableSnapshotSharedLister); ok {
		opts = append(opts, frameworkruntime.WithMutableSnapshotLister(mutable))
	}
	return opts
}

// queuedPod is p's entry in the scheduling queue (activeQ, backoffQ or the unschedulable
// Pods, gated ones among them), if it has one.
func queuedPod(q internalqueue.SchedulingQueue, p *v1.Pod) (*framework.QueuedPodInfo, bool) {
	return q.GetPod(p.Name, p.Namespace, p.Spec.SchedulingGroup)
}

// groupOptions are the framework options that give GangScheduling its view of the groups
// when GenericWorkload is on (v1.37: the scheduler cache as PodGroupManager: the PodGroups and CompositePodGroups, assigned Pods added, pending ones as group members), fed with the Pods of objs as
// kube-scheduler's Pod informer feeds it: explain's plugins then see every member the
// snapshot holds, the Pod being explained among them.
func groupOptions(ctx context.Context, objs []runtime.Object) []frameworkruntime.Option {
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil
	}
	c := internalcache.New(ctx, nil, true, utilfeature.DefaultFeatureGate.Enabled(features.CompositePodGroup))
	for _, o := range objs {
		switch g := o.(type) {
		case *schedulingv1beta1.PodGroup:
			c.AddPodGroup(g)
		case *schedulingv1alpha3.CompositePodGroup: // taken only with CompositePodGroup on
			c.AddCompositePodGroup(klog.FromContext(ctx), g)
		}
	}
	addGroupPods(ctx, c, objs)
	return []frameworkruntime.Option{frameworkruntime.WithPodGroupManager(c)}
}

// groupMember tells whether p names a pod group (its release's field).
func groupMember(p *v1.Pod) bool {
	return p.Spec.SchedulingGroup != nil
}

// benchEmulationVersion is the emulation version v1.37's scheduler_perf sets for a
// workload's gates: v1.36 when NodeDeclaredFeatures (locked on at v1.37) is turned off.
func benchEmulationVersion(gates map[featuregate.Feature]bool) *version.Version {
	if on, set := gates[features.NodeDeclaredFeatures]; set && !on {
		return version.MustParse("1.36")
	}
	return nil
}

// benchPodGroupResource is the resource createPodGroups stores PodGroups as (v1.37's
// scheduler_perf creates them through the scheduling.k8s.io/v1beta1 client).
var benchPodGroupResource = schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")

// benchPodGroup decodes a rendered createPodGroups template (JSON) strictly into a v1beta1
// PodGroup whatever apiVersion it names, as upstream's runCreatePodGroupsOp, and defaults
// it as the API server would.
func benchPodGroup(raw []byte) (runtime.Object, schema.GroupVersionResource, error) {
	pg := &schedulingv1beta1.PodGroup{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(pg); err != nil {
		return nil, benchPodGroupResource, err
	}
	pg.APIVersion, pg.Kind = schedulingv1beta1.SchemeGroupVersion.String(), "PodGroup"
	legacyscheme.Scheme.Default(pg)
	if pg.UID == "" {
		pg.UID = uuid.NewUUID()
	}
	return pg, benchPodGroupResource, nil
}

// permitDeadline: this release's gangs are not told apart (its members' waits end at once).
func permitDeadline(any, *v1.Pod) (string, time.Duration) { return "", 0 }

// asCreated drops from a PodGroup created during a run the spec fields the API server drops
// on create while their gate is off (v1.37's dropDisabledPodGroupSpecFields; the fake
// clientset stores what it is given).  The cluster's objects are stored as given: created
// while their gates were on.
func asCreated(obj runtime.Object) {
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
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
	if !on(features.PodGroupPreemptionPolicy) {
		pg.Spec.PreemptionPolicy = nil
	}
	if !on(features.CompositePodGroup) {
		pg.Spec.ParentCompositePodGroupName = nil
	}
}

// groupsHeld tells whether the scheduler's cache holds every PodGroup (GenericWorkload on)
// and CompositePodGroup (CompositePodGroup on) among objs: their informers' add handlers
// put them there first, then into the queue, which releases the members it held.
func groupsHeld(sched *scheduler.Scheduler, _ informers.SharedInformerFactory, objs []runtime.Object) bool {
	on := utilfeature.DefaultFeatureGate.Enabled
	for _, o := range objs {
		switch g := o.(type) {
		case *schedulingv1beta1.PodGroup:
			if _, err := sched.Cache.PodGroups().Get(g.Namespace, g.Name); on(features.GenericWorkload) && err != nil {
				return false
			}
		case *schedulingv1alpha3.CompositePodGroup:
			if _, err := sched.Cache.CompositePodGroups().Get(g.Namespace, g.Name); on(features.CompositePodGroup) && err != nil {
				return false
			}
		}
	}
	return true
}
