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

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
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
		tmpl, err := newObjectTemplate(*x.path)
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
	pod.Spec.Volumes = []v1.Volume{{Name: "vol", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}
	return nil
}
