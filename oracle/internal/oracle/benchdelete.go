package oracle

// The ops of v1.37's scheduler_perf suites (misc, affinity) that delete objects or wait for
// attempts, as upstream's executor.go runs them against kube-apiserver:
//   - deletePods (runDeletePodsOp): the namespace's Pods listed from the scheduler's informer
//     (matching labelSelector), deleted one per 1/deletePodsPerSecond seconds or all at once,
//     in the background with skipWaitToCompletion; each delete with default options.
//   - churn (runChurnOp): one object of each template (plain YAML, any kind: upstream's
//     dynamic client) every intervalMilliseconds; mode create until `number` rounds, mode
//     recreate alternately creating and deleting the object of each of `number` slots until
//     the workload ends.  A failed create or delete is ignored, as upstream does.
//   - barrier with stageRequirement Attempted (waitUntilPodsAttempted): as many Pods of each
//     namespace bound or given a PodScheduled condition as the barrier waits for (bench.go's
//     barrier); unlike a Scheduled barrier it does not forget the namespaces.
//   - createNamespaces with namespaceTemplatePath: each a copy of that Namespace.
// And what kube-apiserver's Pod strategy does that these ops make visible (the fake
// clientset does none of it): a Pod created with schedulingGates gets PodScheduled=False
// (SchedulingGated), which is what an Attempted barrier waits for on gated Pods; a delete
// is graceful (CheckGracefulDelete: the options' grace period, else the Pod's
// terminationGracePeriodSeconds; 0 for an unbound or finished Pod) and a Pod deleted with
// a grace period or with finalizers only gets deletionTimestamp: with no kubelet and no
// finalizer-removing controller in scheduler_perf's cluster, it stays so (and keeps its
// node's resources) for the rest of the workload.

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

var podsResource = v1.SchemeGroupVersion.WithResource("pods")

// gateCondition is the registry's applySchedulingGatedCondition on a Pod's creation.
func gateCondition(action clienttesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(clienttesting.CreateAction)
	if !ok || create.GetSubresource() != "" {
		return false, nil, nil
	}
	pod, ok := create.GetObject().(*v1.Pod)
	if !ok || len(pod.Spec.SchedulingGates) == 0 {
		return false, nil, nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return false, nil, nil
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulingGated,
		Message: "Scheduling is blocked due to non-empty scheduling gates",
		// LastTransitionTime as podutil.UpdatePodCondition sets it
		LastTransitionTime: metav1.Now(),
	})
	return false, nil, nil // stored by the next reactor
}

// gracefulDelete deletes a Pod as kube-apiserver does (see the file comment): at once
// (the next reactor) when its grace period is 0 and it has no finalizers, else by setting
// deletionTimestamp (now + grace) and deletionGracePeriodSeconds.
func gracefulDelete(tracker *versionedTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		del, ok := action.(clienttesting.DeleteAction)
		if !ok || del.GetSubresource() != "" {
			return false, nil, nil
		}
		obj, err := tracker.Get(podsResource, del.GetNamespace(), del.GetName())
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		period := gracePeriod(pod, del.GetDeleteOptions())
		if period == 0 && len(pod.Finalizers) == 0 {
			return false, nil, nil
		}
		if pod.DeletionTimestamp != nil { // terminating already: a longer grace changes nothing
			return true, pod, nil
		}
		at := metav1.NewTime(time.Now().Add(time.Duration(period) * time.Second))
		pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &at, &period
		return true, pod, tracker.Update(podsResource, pod, pod.Namespace)
	}
}

// gracePeriod is the registry's podStrategy.CheckGracefulDelete.
func gracePeriod(pod *v1.Pod, options metav1.DeleteOptions) int64 {
	period := int64(0)
	if options.GracePeriodSeconds != nil {
		period = *options.GracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	return period
}

// noteAttempted counts pod as attempted once it is bound or has a PodScheduled condition.
func (w *benchWorld) noteAttempted(pod *v1.Pod) {
	if pod.Spec.NodeName == "" && !hasPodScheduled(pod) {
		return
	}
	key := pod.Namespace + "/" + pod.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.attempted[key] {
		w.attempted[key] = true
		w.attemptedIn[pod.Namespace]++
	}
}

func hasPodScheduled(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return true
		}
	}
	return false
}

// podDeleted forgets a deleted Pod's bind and attempt (upstream's barrier lists the Pods
// there are).
func (w *benchWorld) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if w.claims != nil {
		w.claims.podGone(pod)
	}
	key := pod.Namespace + "/" + pod.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	w.podChanges++
	if pod.Spec.NodeName != "" {
		w.boundNow[pod.Namespace]--
	}
	if w.attempted[key] {
		delete(w.attempted, key)
		w.attemptedIn[pod.Namespace]--
	}
}

// createNamespaces creates <prefix>-0 ... as copies of the op's Namespace template (read
// strictly, as upstream's getSpecFromFile), or bare ones.
func (w *benchWorld) createNamespaces(ctx context.Context, op *BenchOp) error {
	base := &v1.Namespace{}
	if op.NamespaceTemplatePath != nil {
		raw, err := os.ReadFile(*op.NamespaceTemplatePath)
		if err != nil {
			return err
		}
		if err := yaml.UnmarshalStrict(raw, base); err != nil {
			return fmt.Errorf("parsing NamespaceTemplate: %w", err)
		}
	}
	for i := 0; i < op.count; i++ {
		ns := base.DeepCopy()
		ns.Name, ns.UID = fmt.Sprintf("%s-%d", op.Prefix, i), uuid.NewUUID()
		if _, err := w.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		w.mu.Lock()
		if _, ok := w.known[ns.Name]; !ok {
			w.known[ns.Name] = 0
		}
		w.mu.Unlock()
	}
	return nil
}

// deletePods is upstream's runDeletePodsOp (see the file comment).
func (w *benchWorld) deletePods(ctx context.Context, op *BenchOp) error {
	ns := ""
	if op.Namespace != nil {
		ns = *op.Namespace
	}
	selector := labels.SelectorFromValidatedSet(op.LabelSelector)
	victims, err := w.factory.Core().V1().Pods().Lister().Pods(ns).List(selector)
	if err != nil {
		return fmt.Errorf("listing pods in namespace %s: %w", ns, err)
	}
	remove := func(p *v1.Pod) error {
		err := w.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return fmt.Errorf("unable to delete pod %v: %w", p.Name, err)
		}
		return nil
	}
	run := func() error {
		if op.DeletePodsPerSecond <= 0 { // upstream's DeleteCollection: each Pod deleted as one
			for _, p := range victims {
				if err := remove(p); err != nil {
					return err
				}
			}
			return nil
		}
		ticker := time.NewTicker(time.Second / time.Duration(op.DeletePodsPerSecond))
		defer ticker.Stop()
		for _, p := range victims {
			select {
			case <-ticker.C:
				if err := remove(p); err != nil {
					return err
				}
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	}
	if op.SkipWaitToCompletion {
		go func() { _ = run() }() // upstream reports such an error and runs on
		return nil
	}
	return run()
}

// churnTemplate is one of a churn op's objects and where it is written.
type churnTemplate struct {
	obj runtime.Object
	gvr schema.GroupVersionResource
	ns  string // "" for a cluster-scoped kind
}

// clusterScoped are the kinds a churn template may name that have no namespace.
var clusterScoped = map[string]bool{
	"Node": true, "Namespace": true, "PersistentVolume": true, "StorageClass": true, "CSINode": true,
	"CSIDriver": true, "PriorityClass": true, "DeviceClass": true, "ResourceSlice": true, "DeviceTaintRule": true,
}

// churn starts upstream's runChurnOp (see the file comment) in ns.
func (w *benchWorld) churn(ctx context.Context, op *BenchOp, ns string) error {
	// upstream creates the namespace (without making it known to barriers)
	nsObj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: uuid.NewUUID()}}
	if _, err := w.client.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("unable to create namespace %v: %w", ns, err)
	}
	tmpls := make([]churnTemplate, len(op.TemplatePaths))
	for i, path := range op.TemplatePaths {
		t, err := newObjectTemplate(path, nil)
		if err != nil {
			return err
		}
		obj, err := t.object(0, 1)
		if err != nil {
			return fmt.Errorf("unable to parse the %v-th template path: %w", i, err)
		}
		gvk := obj.GetObjectKind().GroupVersionKind()
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		tmpls[i] = churnTemplate{obj: obj, gvr: gvr}
		if !clusterScoped[gvk.Kind] {
			tmpls[i].ns = ns
		}
	}
	interval := time.Duration(op.IntervalMilliseconds) * time.Millisecond
	if interval == 0 {
		interval = 500 * time.Millisecond
	}
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		limit := op.Number
		if limit == 0 {
			limit = math.MaxInt32
		}
		slots := make([][]string, len(tmpls)) // recreate: the live object of each slot
		for i := range slots {
			slots[i] = make([]string, max(op.Number, 1))
		}
		for count := 0; op.Mode == "recreate" || count < limit; count++ {
			select {
			case <-ticker.C:
			case <-ctx.Done():
				return
			}
			for i := range tmpls {
				if op.Mode == "create" {
					w.churnOne(ctx, &tmpls[i], "")
					continue
				}
				slot := count % op.Number
				slots[i][slot] = w.churnOne(ctx, &tmpls[i], slots[i][slot])
			}
		}
	}()
	return nil
}

// churnOne deletes object name when it is set, else creates one (its name, "" on failure),
// through the clientset's reactors (a Pod's as any Pod's), named as the API server names
// an object with generateName.
func (w *benchWorld) churnOne(ctx context.Context, t *churnTemplate, name string) string {
	if name != "" {
		_, _ = w.client.Invokes(clienttesting.NewDeleteAction(t.gvr, t.ns, name), nil)
		return ""
	}
	obj := t.obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil || ctx.Err() != nil {
		return ""
	}
	m.SetNamespace(t.ns)
	if m.GetName() == "" {
		m.SetName(w.generateName(t.ns + "/" + m.GetGenerateName())[len(t.ns)+1:])
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.Now())
	if _, err := w.client.Invokes(clienttesting.NewCreateAction(t.gvr, t.ns, obj), nil); err != nil {
		return ""
	}
	return m.GetName()
}
