package oracle

// The volume parts of scheduler_perf's ops for `kube-oracle bench`, as upstream's runner
// does them (test/utils/runners.go): createNodes' nodeAllocatableStrategy (the listed
// allocatable set on every Node, and a CSINode per Node with the drivers' allocatable and
// the migrated-plugins annotation), and createPods with volume templates
// (CreatePodWithPersistentVolume with bindVolume: per Pod i a claim pvc-i from the claim
// template and a volume <namespace>-vol-i from the volume template — its CSI volumeHandle
// or AWS volumeID set to its name — bound to each other, claim first, each with its status
// Bound, then the Pod with that claim as its only volume).

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// NodeAllocatableStrategy is scheduler_perf's nodeAllocatableStrategy.
type NodeAllocatableStrategy struct {
	NodeAllocatable    map[v1.ResourceName]string                `json:"nodeAllocatable"`
	CSINodeAllocatable map[string]*storagev1.VolumeNodeResources `json:"csiNodeAllocatable"`
	MigratedPlugins    []string                                  `json:"migratedPlugins"`
}

// prepare sets the strategy's allocatable on n (upstream patches it right after creating
// the Node; here it is created with it).
func (s *NodeAllocatableStrategy) prepare(n *v1.Node) error {
	if n.Status.Allocatable == nil {
		n.Status.Allocatable = v1.ResourceList{}
	}
	for name, value := range s.NodeAllocatable {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("nodeAllocatableStrategy.nodeAllocatable[%s]: %w", name, err)
		}
		n.Status.Allocatable[name] = q
	}
	return nil
}

// csiNode is the CSINode upstream's strategy creates for a Node.
func (s *NodeAllocatableStrategy) csiNode(node string) *storagev1.CSINode {
	c := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:        node,
			Annotations: map[string]string{v1.MigratedPluginsAnnotationKey: strings.Join(s.MigratedPlugins, ",")},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	for driver, alloc := range s.CSINodeAllocatable {
		c.Spec.Drivers = append(c.Spec.Drivers, storagev1.CSINodeDriver{Name: driver, NodeID: node, Allocatable: alloc.DeepCopy()})
	}
	return c
}

// volumeTemplates are a createPods op's volume and claim templates, decoded once.
type volumeTemplates struct {
	pv  *v1.PersistentVolume
	pvc *v1.PersistentVolumeClaim
}

func loadVolumeTemplates(op *BenchOp) (*volumeTemplates, error) {
	if op.PVCTemplatePath == nil {
		return nil, nil
	}
	t := &volumeTemplates{}
	for _, x := range []struct {
		path *string
		into any
	}{{op.PVTemplatePath, &t.pv}, {op.PVCTemplatePath, &t.pvc}} {
		tmpl, err := newObjectTemplate(*x.path, nil)
		if err != nil {
			return nil, err
		}
		raw, err := tmpl.render(0, 1)
		if err != nil {
			return nil, err
		}
		obj, err := DecodeObject(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", *x.path, err)
		}
		switch into := x.into.(type) {
		case **v1.PersistentVolume:
			pv, ok := obj.(*v1.PersistentVolume)
			if !ok {
				return nil, fmt.Errorf("%s: not a PersistentVolume", *x.path)
			}
			*into = pv
		case **v1.PersistentVolumeClaim:
			pvc, ok := obj.(*v1.PersistentVolumeClaim)
			if !ok {
				return nil, fmt.Errorf("%s: not a PersistentVolumeClaim", *x.path)
			}
			*into = pvc
		}
	}
	return t, nil
}

// create makes Pod i's claim and volume in ns, bound to each other, and gives pod that claim
// as its only volume.
func (t *volumeTemplates) create(ctx context.Context, w *benchWorld, ns string, i int, pod *v1.Pod) error {
	pvc := t.pvc.DeepCopy()
	pvc.Name, pvc.Namespace, pvc.UID = fmt.Sprintf("pvc-%d", i), ns, uuid.NewUUID()
	pv := t.pv.DeepCopy()
	pv.Name, pv.UID = fmt.Sprintf("%s-vol-%d", ns, i), uuid.NewUUID()
	if src := pv.Spec.CSI; src != nil {
		src.VolumeHandle = pv.Name
	} else if src := pv.Spec.AWSElasticBlockStore; src != nil {
		src.VolumeID = fmt.Sprintf("vol-%d", i)
	}
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: pvc.Name, APIVersion: "v1"}
	pv.Status.Phase = v1.VolumeBound
	pvc.Spec.VolumeName = pv.Name
	pvc.Status.Phase = v1.ClaimBound
	if _, err := w.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PVC: %w", err)
	}
	if _, err := w.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PV: %w", err)
	}
	for _, key := range []string{"PersistentVolumeClaim " + ns + "/" + pvc.Name, "PersistentVolume " + pv.Name} {
		if err := w.delivered.wait(ctx, key, w.timeout); err != nil {
			return err
		}
	}
	pod.Spec.Volumes = []v1.Volume{{Name: "vol", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}
	return nil
}

// deliveries records the PVs and PVCs the scheduler's informers have handed to their event
// handlers, so that a Pod is created only once its claim and volume have been (see create).
//
// Why: VolumeBinding reads bound claims' PVs from its assume cache, which an event handler
// of the PV informer fills, while the scheduling queue hears of the same PV through another
// handler of that informer; each handler runs on its own goroutine.  A Pod created right
// after its PV could be scheduled after the queue's handler had taken the PV's Add (so no
// event is left to wake the Pod) but before the assume cache's had: VolumeBinding's Filter
// then finds no PV on any node (“node(s) unavailable due to one or more pvc(s) bound to
// non-existent pv(s)“), and the Pod waits in the unschedulable pool for the 5-minute
// flush.  On a loaded machine that happened (a 5Nodes run past 300 s).  Waiting for the
// delivery before creating the Pod leaves the assume cache's handler the time the Pod takes
// to be created, watched and queued, as an API server round trip does in upstream's runner.
type deliveries struct {
	mu      sync.Mutex
	seen    map[string]bool
	waiters map[string]chan struct{}
}

// watch adds handlers to the factory's PV and PVC informers (before it starts).
func (d *deliveries) watch(factory informers.SharedInformerFactory) error {
	d.seen, d.waiters = map[string]bool{}, map[string]chan struct{}{}
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"PersistentVolume":      factory.Core().V1().PersistentVolumes().Informer(),
		"PersistentVolumeClaim": factory.Core().V1().PersistentVolumeClaims().Informer(),
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
					d.add(kind + " " + key)
				}
			},
		}); err != nil {
			return err
		}
	}
	return nil
}

func (d *deliveries) add(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen[key] = true
	if ch, ok := d.waiters[key]; ok {
		close(ch)
		delete(d.waiters, key)
	}
}

// wait returns once key ("Kind namespace/name") has been delivered, or an error after
// timeout or when ctx ends.
func (d *deliveries) wait(ctx context.Context, key string, timeout time.Duration) error {
	d.mu.Lock()
	if d.seen[key] {
		d.mu.Unlock()
		return nil
	}
	ch, ok := d.waiters[key]
	if !ok {
		ch = make(chan struct{})
		d.waiters[key] = ch
	}
	d.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ch:
		return nil
	case <-timer.C:
		return fmt.Errorf("timed out after %v waiting for the scheduler's informers to deliver %s", timeout, key)
	case <-ctx.Done():
		return fmt.Errorf("%s waiting for the scheduler's informers to deliver %s", stopped(ctx), key)
	}
}
