//go:build !kube_ge_1_35

// What upstream v1.34 (the default build, oracle/go.mod) names differently from the other
// releases this package builds against: oracle/build.sh sets the tags kube_ge_1_35 ...
// kube_ge_1_V for release 1.V, so exactly one version_*.go file builds; the rest of the
// package uses these names only.

package oracle

import (
	"context"
	"errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

type (
	sharedLister     = framework.SharedLister
	sharedDRAManager = framework.SharedDRAManager
	preEnqueuePlugin = framework.PreEnqueuePlugin
	nominatingInfo   = framework.NominatingInfo
	// eventRecorder is what profile.RecorderFactory returns.
	eventRecorder = events.EventRecorder
	// scheduledPod is the Pod argument of Scheduler.SchedulePod.
	scheduledPod = *v1.Pod
)

// queueAdd adds pod to the scheduling queue as its Pod informer does.
func queueAdd(ctx context.Context, q *internalqueue.PriorityQueue, pod *v1.Pod) {
	q.Add(klog.FromContext(ctx), pod)
}

// queueMetrics is the queue's metrics recorder (internalqueue.WithMetricsRecorder).
func queueMetrics(r *metrics.MetricAsyncRecorder) internalqueue.Option {
	return internalqueue.WithMetricsRecorder(*r)
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
		EnableDeviceTaints:       utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaints),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaints {
		opts.TaintInformer = factory.Resource().V1alpha3().DeviceTaintRules()
		opts.ClassInformer = factory.Resource().V1().DeviceClasses()
	}
	return opts
}

// frameworkOptions are the options scheduler.New gives every framework that depend on the
// release: the snapshot lister (the workload and PodGroup managers, for gates off by default, are not set).
func frameworkOptions(_ informers.SharedInformerFactory, lister sharedLister) []frameworkruntime.Option {
	opts := []frameworkruntime.Option{frameworkruntime.WithSnapshotSharedLister(lister)}
	return opts
}

// queuedPod is p's entry in the scheduling queue (activeQ, backoffQ or the unschedulable
// Pods, gated ones among them), if it has one.
func queuedPod(q internalqueue.SchedulingQueue, p *v1.Pod) (*framework.QueuedPodInfo, bool) {
	return q.GetPod(p.Name, p.Namespace)
}

// groupOptions are the framework options that give GangScheduling its view of the groups
// when GenericWorkload is on (nothing in v1.34), fed with the Pods of objs as
// kube-scheduler's Pod informer feeds it: explain's plugins then see every member the
// snapshot holds, the Pod being explained among them.
func groupOptions(context.Context, []runtime.Object) []frameworkruntime.Option { return nil }

// groupMember tells whether p names a pod group (its release's field).
func groupMember(*v1.Pod) bool {
	return false
}

// benchPodGroupResource: no createPodGroups before v1.37's scheduler_perf.
var benchPodGroupResource schema.GroupVersionResource

// benchPodGroup refuses: createPodGroups is an op of v1.37's scheduler_perf.
func benchPodGroup([]byte) (runtime.Object, schema.GroupVersionResource, error) {
	return nil, benchPodGroupResource, errors.New("createPodGroups: not an op of this release's scheduler_perf (v1.37 on)")
}

// permitDeadline: this release's gangs are not told apart (its members' waits end at once).
func permitDeadline(any, *v1.Pod) (string, time.Duration) { return "", 0 }

// asCreated: no PodGroup objects of this release (kube-oracle stores what it is given).
func asCreated(runtime.Object) {}

// groupsHeld: no PodGroup informer of this release to wait for.
func groupsHeld(*scheduler.Scheduler, informers.SharedInformerFactory, []runtime.Object) bool {
	return true
}
