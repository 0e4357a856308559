package oracle

// updateAny (upstream's update.go, the v1.37 event_handling suite): count objects (default
// 1) rendered from the template with .Index and .Count, each written as upstream writes it
// through kube-apiserver: an Update (of the subresources named, e.g. Pod "resize") and then
// an UpdateStatus, updatePerSecond of them a second (one per tick of a ticker) or all at
// once; the op returns when every object is written, and a write that fails (the object
// does not exist, a namespace given for a cluster-scoped kind or none for a namespaced one)
// is the workload's error.  What the two writes leave, as the API server's strategies do:
//   - Update: the template's object with the stored status (podStrategy and nodeStrategy's
//     PrepareForUpdate), the stored uid and creation time (a Node's kubernetes.io/hostname
//     label, given at creation, is gone unless the template has it); through "resize", the
//     stored Pod with only its containers' resources and resize policies from the template
//     (dropNonResizeUpdates);
//   - UpdateStatus: the stored object with the template's status (a Pod keeps its QoS class
//     and its claims' statuses when the template has none, podStatusStrategy).
// Each write is one event for the scheduler's informers, as upstream's two are two.
// Kinds other than Pod and Node are replaced by the template in one write.
//
// The op returns once the scheduler's cache holds every Node it wrote (cachedNodes): the
// scheduler hears of a Node's update through the Node informer's handler and of the Pod a
// next op creates through the Pod informer's, each on its own goroutine.  On a loaded
// machine the Pod's scheduling cycle could take its snapshot before the Node handler ran,
// and bind a Pod to a Node whose label the update had removed (a flaky
// test_update_any_of_a_node_drops_labels_the_template_lacks: 2 Pods bound, not 1).
// Upstream's runner writes through kube-apiserver and the next op's Pod takes a round trip
// to it and back through the watch, time in which the scheduler takes the Node's event; the
// wait gives kube-oracle that order always, as deliveries does for PVs (benchvolumes.go).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

func (w *benchWorld) updateAny(ctx context.Context, op *BenchOp) error {
	ns := ""
	if op.Namespace != nil {
		ns = *op.Namespace
	}
	if ns != "" {
		if err := w.createNamespaceIfNotPresent(ctx, ns); err != nil {
			return err
		}
	}
	tmpl, err := newObjectTemplate(op.TemplatePath, nil)
	if err != nil {
		return err
	}
	nodes := map[string]uint64{} // Node name -> resourceVersion of its last write
	update := func(i int) error {
		obj, err := tmpl.object(i, op.count)
		if err != nil {
			return fmt.Errorf("%s: parsing failed: %w", op.TemplatePath, err)
		}
		if err := w.updateObject(obj, ns, slices.Contains(op.Subresources, "resize")); err != nil {
			return err
		}
		if n, ok := obj.(*v1.Node); ok {
			rv, _ := w.tracker.Get(nodesResource, "", n.Name)
			if m, err := meta.Accessor(rv); err == nil {
				nodes[n.Name], _ = strconv.ParseUint(m.GetResourceVersion(), 10, 64)
			}
		}
		return nil
	}
	if op.UpdatePerSecond == 0 {
		for i := 0; i < op.count; i++ {
			if err := update(i); err != nil {
				return err
			}
		}
		return w.cachedNodes(ctx, nodes)
	}
	ticker := time.NewTicker(time.Second / time.Duration(op.UpdatePerSecond))
	defer ticker.Stop()
	for i := 0; i < op.count; i++ {
		select {
		case <-ticker.C:
			if err := update(i); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
	return w.cachedNodes(ctx, nodes)
}

var nodesResource = v1.SchemeGroupVersion.WithResource("nodes")

// cachedNodes waits until the scheduler's cache holds each Node of want at its
// resourceVersion or a later one (see the file comment), read through a snapshot of the
// cache's own (UpdateSnapshot: after the first, only the Nodes changed since are copied).
func (w *benchWorld) cachedNodes(ctx context.Context, want map[string]uint64) error {
	if len(want) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	snap := internalcache.NewEmptySnapshot()
	return w.poll(ctx, "updated Nodes in the scheduler's cache", func() (bool, string) {
		if err := w.sched.Cache.UpdateSnapshot(logger, snap); err != nil {
			return false, err.Error()
		}
		have := 0
		for name, rv := range want {
			ni, err := snap.NodeInfos().Get(name)
			if err != nil || ni.Node() == nil {
				continue
			}
			if got, _ := strconv.ParseUint(ni.Node().ResourceVersion, 10, 64); got >= rv {
				have++
			}
		}
		return have == len(want), fmt.Sprintf("%d of %d", have, len(want))
	})
}

// updateObject writes obj over the stored object of its name in ns (see the file comment).
func (w *benchWorld) updateObject(obj runtime.Object, ns string, resize bool) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	switch {
	case ns != "" && clusterScoped[gvk.Kind]:
		return fmt.Errorf("namespace %q set, but %q has scope root", ns, gvk)
	case ns == "" && !clusterScoped[gvk.Kind]:
		return fmt.Errorf("namespace not set, but %q has scope namespace", gvk)
	}
	m.SetNamespace(ns)
	where := "failed to update object"
	if ns != "" {
		where = fmt.Sprintf("failed to update object in namespace %q", ns)
	}
	stored, err := w.tracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if sm, err := meta.Accessor(stored); err == nil {
		m.SetUID(sm.GetUID())
		m.SetCreationTimestamp(sm.GetCreationTimestamp())
	}
	var spec, status runtime.Object // the Update's object, then the UpdateStatus's
	switch t := obj.(type) {
	case *v1.Pod:
		old := stored.(*v1.Pod)
		if resize {
			p := old.DeepCopy()
			for i := range p.Spec.Containers {
				for _, c := range t.Spec.Containers {
					if c.Name == p.Spec.Containers[i].Name {
						p.Spec.Containers[i].Resources = c.Resources
						p.Spec.Containers[i].ResizePolicy = c.ResizePolicy
					}
				}
			}
			spec = p
		} else {
			p := t.DeepCopy()
			p.Status = old.Status
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = old.DeletionTimestamp, old.DeletionGracePeriodSeconds
			if p.Spec.NodeName == "" { // immutable once set (the API server refuses the write)
				p.Spec.NodeName = old.Spec.NodeName
			}
			spec = p
		}
		st := spec.(*v1.Pod).DeepCopy()
		st.Status = t.Status
		if st.Status.QOSClass == "" {
			st.Status.QOSClass = old.Status.QOSClass
		}
		if st.Status.ResourceClaimStatuses == nil {
			st.Status.ResourceClaimStatuses = old.Status.ResourceClaimStatuses
		}
		status = st
	case *v1.Node:
		n := t.DeepCopy()
		n.Status = stored.(*v1.Node).Status
		spec = n
		st := n.DeepCopy()
		st.Status = t.Status
		status = st
	default:
		spec = obj
	}
	if err := w.tracker.Update(gvr, spec, ns); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if status != nil {
		if err := w.tracker.Update(gvr, status, ns); err != nil {
			return fmt.Errorf("%s status: %w", where, err)
		}
	}
	return nil
}
