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

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
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
	update := func(i int) error {
		obj, err := tmpl.object(i, op.count)
		if err != nil {
			return fmt.Errorf("%s: parsing failed: %w", op.TemplatePath, err)
		}
		return w.updateObject(obj, ns, slices.Contains(op.Subresources, "resize"))
	}
	if op.UpdatePerSecond == 0 {
		for i := 0; i < op.count; i++ {
			if err := update(i); err != nil {
				return err
			}
		}
		return nil
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
	return nil
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
