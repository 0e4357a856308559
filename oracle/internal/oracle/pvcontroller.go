package oracle

// This file stands in for the controllers that complete VolumeBinding's PreBind in a real
// cluster, for `kube-oracle schedule`: kube-controller-manager's PV controller (binding a
// claim to the volume the scheduler pre-bound, or to the volume provisioned for it) and a
// CSI external-provisioner (creating the volume for a claim the scheduler gave a selected
// node).  Upstream's PreBind writes the PV's claimRef or the PVC's selected-node annotation
// and then polls, every second, until the claim is fully bound; without these it would wait
// out its bindTimeout (600 s).
//
// What it does, at once and synchronously (inside the API call that triggers it, so that a
// sequence of Pods sees every earlier binding deterministically):
//   - a PersistentVolume updated with a claimRef to an existing claim not bound elsewhere:
//     the PV's status.phase becomes Bound; the claim gets spec.volumeName, the annotations
//     pv.kubernetes.io/bind-completed and pv.kubernetes.io/bound-by-controller, and a status
//     Bound with the PV's capacity and access modes (the controller's bind());
//   - a PersistentVolumeClaim updated with volume.kubernetes.io/selected-node, not bound, of
//     a StorageClass whose provisioner is not kubernetes.io/no-provisioner: a PV named
//     pvc-<claim UID> is created as an external provisioner would (the claim's request and
//     access modes and volume mode, the class's reclaim policy and mount options, a CSI
//     source of the class's provisioner — an in-tree provisioner name translated to its CSI
//     driver — and, when the selected node's CSINode lists topology keys for that driver,
//     node affinity to the node's values of them), then bound as above.
//
// As the API server, it refuses (Conflict) a PV or PVC update made from an older version than
// the stored one (fresh).
//
// Faults (the request's volumeFaults, keyed "PersistentVolume/<name>" or
// "PersistentVolumeClaim/<namespace>/<name>"): what goes wrong with one object's PreBind write,
// every time, so that kubesched's schedule (which takes the same map) faces the same:
//   - refuseUpdate: the API server refuses the write (Forbidden, as an admission webhook may);
//   - failProvisioning (a claim): the provisioner gives up and removes the selected-node
//     annotation, as an external provisioner does to send the claim back to the scheduler
//     (the annotations dropped when none is left: the API server stores no empty map);
//   - resetClaimRef (a PV): the PV controller unbinds the volume (claimRef removed, phase
//     Available), as its unbindVolume does when the claim cannot be bound to it;
//   - bindLater: the controller binds (or the provisioner provisions) bindDelay after the
//     write, so PreBind's first check (after a second) finds the claim not bound yet.
//
// What it does not: bind or provision Immediate claims on its own (a snapshot's unbound
// Immediate claim stays unbound: the scheduler answers `pod has unbound immediate
// PersistentVolumeClaims` as upstream would until a controller acts), reclaim released
// volumes, or honour a provisioning latency.

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/storage/volume"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
)

var (
	pvsGVR      = v1.SchemeGroupVersion.WithResource("persistentvolumes")
	pvcsGVR     = v1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	nodesGVR    = v1.SchemeGroupVersion.WithResource("nodes")
	classesGVR  = storagev1.SchemeGroupVersion.WithResource("storageclasses")
	csiNodesGVR = storagev1.SchemeGroupVersion.WithResource("csinodes")
)

// noProvisioner is the provisioner of classes for static volumes only.
const noProvisioner = "kubernetes.io/no-provisioner"

// pvController binds and provisions through tracker (a versionedTracker, so that
// VolumeBinding's assume caches take each update as newer).
type pvController struct {
	tracker clienttesting.ObjectTracker
	faults  map[string]string
}

// bindDelay is how long bindLater's controller takes (PreBind polls every second).
const bindDelay = 1500 * time.Millisecond

// fault is the fault the request declares for the object (key as in the file's comment).
func (c *pvController) fault(kind, namespace, name string) string {
	if namespace != "" {
		return c.faults[kind+"/"+namespace+"/"+name]
	}
	return c.faults[kind+"/"+name]
}

// react is a reactor for updates of PVs and PVCs: it stores the update, then does what the
// controllers would do about it; the caller gets the object as its own update stored it.
func (c *pvController) react(action clienttesting.Action) (bool, runtime.Object, error) {
	update, ok := action.(clienttesting.UpdateAction)
	if !ok || update.GetSubresource() != "" {
		return false, nil, nil
	}
	switch obj := update.GetObject().(type) {
	case *v1.PersistentVolume:
		pv := obj.DeepCopy()
		fault := c.fault("PersistentVolume", "", pv.Name)
		if fault == "refuseUpdate" {
			return true, nil, refused(pvsGVR, pv.Name)
		}
		if err := c.fresh(pvsGVR, pv); err != nil {
			return true, nil, err
		}
		if err := c.tracker.Update(pvsGVR, pv, ""); err != nil {
			return true, nil, err
		}
		stored := pv.DeepCopy()
		switch fault {
		case "resetClaimRef":
			c.unbind(pv)
		case "bindLater":
			time.AfterFunc(bindDelay, func() {
				if obj, err := c.tracker.Get(pvsGVR, "", pv.Name); err == nil {
					c.bind(obj.(*v1.PersistentVolume).DeepCopy())
				}
			})
		default:
			c.bind(pv)
		}
		return true, stored, nil
	case *v1.PersistentVolumeClaim:
		pvc := obj.DeepCopy()
		fault := c.fault("PersistentVolumeClaim", pvc.Namespace, pvc.Name)
		if fault == "refuseUpdate" {
			return true, nil, refused(pvcsGVR, pvc.Name)
		}
		if err := c.fresh(pvcsGVR, pvc); err != nil {
			return true, nil, err
		}
		if err := c.tracker.Update(pvcsGVR, pvc, pvc.Namespace); err != nil {
			return true, nil, err
		}
		stored := pvc.DeepCopy()
		switch fault {
		case "failProvisioning":
			c.giveUp(pvc)
		case "bindLater":
			time.AfterFunc(bindDelay, func() {
				if obj, err := c.tracker.Get(pvcsGVR, pvc.Namespace, pvc.Name); err == nil {
					c.provision(obj.(*v1.PersistentVolumeClaim).DeepCopy())
				}
			})
		default:
			c.provision(pvc)
		}
		return true, stored, nil
	}
	return false, nil, nil
}

// fresh refuses an update of obj made from an older version than the stored one, as the API
// server does (a Conflict): two Pods assuming the same unbound claim both write it in PreBind,
// and the second write must not undo the binding that followed the first.
func (c *pvController) fresh(gvr schema.GroupVersionResource, obj metav1.Object) error {
	if obj.GetResourceVersion() == "" {
		return nil
	}
	stored, err := c.tracker.Get(gvr, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return err
	}
	if m, err := meta.Accessor(stored); err == nil && m.GetResourceVersion() != obj.GetResourceVersion() {
		return apierrors.NewConflict(gvr.GroupResource(), obj.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return nil
}

// refused is the API server's answer to a write the request's refuseUpdate fault refuses.
func refused(gvr schema.GroupVersionResource, name string) error {
	return apierrors.NewForbidden(gvr.GroupResource(), name, fmt.Errorf("refused (the case's volumeFaults)"))
}

// unbind is the PV controller undoing the scheduler's pre-binding of pv (resetClaimRef).
func (c *pvController) unbind(pv *v1.PersistentVolume) {
	pv.Spec.ClaimRef = nil
	pv.Status.Phase = v1.VolumeAvailable
	err := c.tracker.Update(pvsGVR, pv, "")
	klog.V(2).InfoS("PV controller: claimRef reset", "pv", pv.Name, "err", err)
}

// giveUp is a provisioner failing to provision claim (failProvisioning): it removes the
// selected-node annotation, the signal VolumeBinding's PreBind reads as a failure.
func (c *pvController) giveUp(claim *v1.PersistentVolumeClaim) {
	if claim.Annotations[volume.AnnSelectedNode] == "" || claim.Spec.VolumeName != "" {
		return
	}
	delete(claim.Annotations, volume.AnnSelectedNode)
	if len(claim.Annotations) == 0 {
		claim.Annotations = nil
	}
	err := c.tracker.Update(pvcsGVR, claim, claim.Namespace)
	klog.V(2).InfoS("provisioner: gave up", "pvc", klog.KObj(claim), "err", err)
}

// bind completes the binding of pv to the claim its claimRef names, when that claim exists
// (with the same UID, if the claimRef has one) and is not bound to another volume.
func (c *pvController) bind(pv *v1.PersistentVolume) {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return
	}
	obj, err := c.tracker.Get(pvcsGVR, ref.Namespace, ref.Name)
	if err != nil {
		return
	}
	claim := obj.(*v1.PersistentVolumeClaim).DeepCopy()
	if (ref.UID != "" && ref.UID != claim.UID) || (claim.Spec.VolumeName != "" && claim.Spec.VolumeName != pv.Name) {
		return
	}
	if pv.Status.Phase != v1.VolumeBound {
		bound := pv.DeepCopy()
		bound.Status.Phase = v1.VolumeBound
		bound.Status.Message, bound.Status.Reason = "", ""
		if err := c.tracker.Update(pvsGVR, bound, ""); err != nil {
			klog.V(2).InfoS("PV controller: binding failed", "pv", pv.Name, "err", err)
			return
		}
	}
	if claim.Spec.VolumeName == "" {
		claim.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volume.AnnBoundByController, "yes")
	}
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volume.AnnBindCompleted, "yes")
	claim.Status.Phase = v1.ClaimBound
	claim.Status.AccessModes = append([]v1.PersistentVolumeAccessMode(nil), pv.Spec.AccessModes...)
	claim.Status.Capacity = pv.Spec.Capacity.DeepCopy()
	err = c.tracker.Update(pvcsGVR, claim, claim.Namespace)
	klog.V(2).InfoS("PV controller: bound", "pv", pv.Name, "pvc", klog.KObj(claim), "err", err)
}

// provision creates and binds a volume for claim when the scheduler selected a node for it.
func (c *pvController) provision(claim *v1.PersistentVolumeClaim) {
	node := claim.Annotations[volume.AnnSelectedNode]
	if node == "" || claim.Spec.VolumeName != "" {
		return
	}
	obj, err := c.tracker.Get(classesGVR, "", volume.GetPersistentVolumeClaimClass(claim))
	if err != nil {
		return
	}
	class := obj.(*storagev1.StorageClass)
	if class.Provisioner == noProvisioner {
		return
	}
	driver := class.Provisioner
	if name, err := csitrans.New().GetCSINameFromInTreeName(driver); err == nil {
		driver = name
	}
	name := "pvc-" + string(claim.UID)
	if _, err := c.tracker.Get(pvsGVR, "", name); err == nil {
		return
	}
	policy := v1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("uid-pv-" + string(claim.UID)),
			Annotations: map[string]string{volume.AnnDynamicallyProvisioned: class.Provisioner},
		},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: claim.Spec.Resources.Requests[v1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: name},
			},
			NodeAffinity: c.topology(node, driver),
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumePending},
	}
	if err := c.tracker.Create(pvsGVR, pv, ""); err != nil {
		klog.V(2).InfoS("PV controller: provisioning failed", "pvc", klog.KObj(claim), "err", err)
		return
	}
	klog.V(2).InfoS("PV controller: provisioned", "pvc", klog.KObj(claim), "pv", name)
	c.bind(pv)
}

// topology is the node affinity a CSI driver's volume provisioned for node gets: the node's
// values of the topology keys its CSINode lists for the driver (none when it lists none or
// the node lacks one of them).
func (c *pvController) topology(nodeName, driver string) *v1.VolumeNodeAffinity {
	obj, err := c.tracker.Get(csiNodesGVR, "", nodeName)
	if err != nil {
		return nil
	}
	nobj, err := c.tracker.Get(nodesGVR, "", nodeName)
	if err != nil {
		return nil
	}
	labels := nobj.(*v1.Node).Labels
	var exprs []v1.NodeSelectorRequirement
	for _, d := range obj.(*storagev1.CSINode).Spec.Drivers {
		if d.Name != driver {
			continue
		}
		for _, key := range d.TopologyKeys {
			value, ok := labels[key]
			if !ok {
				return nil
			}
			exprs = append(exprs, v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: []string{value}})
		}
	}
	if len(exprs) == 0 {
		return nil
	}
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: exprs}}}}
}

// stampVersions gives every object without a resourceVersion one, as the API server stores
// every object with one (VolumeBinding's assume caches parse it), and returns a version
// above all of them for the tracker's next write.
func stampVersions(objs []runtime.Object) uint64 {
	var top uint64
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil {
			if v, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64); err == nil && v > top {
				top = v
			}
		}
	}
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil && m.GetResourceVersion() == "" {
			top++
			m.SetResourceVersion(fmt.Sprint(top))
		}
	}
	return top
}
