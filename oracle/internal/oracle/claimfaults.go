package oracle

// This file plays, for `kube-oracle schedule`, what the API server (and the other writers of
// a ResourceClaim) may do to DynamicResources' writes of a claim in its binding cycle, as
// pvcontroller.go does for VolumeBinding's: faults a request declares per claim
// (claimFaults), and the one check of kube-apiserver's validation those writes can fail.
//
// Faults (the request's claimFaults, keyed "ResourceClaim/<namespace>/<name>"; a claim the
// API server names from a generateName, DRAExtendedResource's claim, by that generateName),
// so that kubesched's schedule (which takes the same map) faces the same:
//   - refuseStatus: every update of the claim's status is refused (Forbidden, as an
//     admission webhook may): PreBind's allocation and reservation (bindClaim), PostFilter's
//     deallocation;
//   - refuseUpdate: every update of the claim itself is refused (Forbidden): PreBind's
//     adding of the delete-protection finalizer before it writes an allocation;
//   - conflict: the first update of the claim answers Conflict, the stored claim written
//     again as another writer would (a new resourceVersion): bindClaim reads it again and
//     retries, with the same end;
//   - allocatedElsewhere: the first status update carrying an allocation while the stored
//     claim has none stores that allocation without the Pod's reservation (another
//     scheduler allocated the claim alike in the meantime) and answers Conflict: bindClaim's
//     retry finds it allocated and fails; the Pod's next attempt reserves it.
//   - deleted: the claim is deleted (by its owner, without a finalizer holding it) just
//     before DynamicResources first writes it, between Reserve and PreBind: the write
//     answers NotFound, PreBind fails, and the Pod's next attempt finds the claim missing
//     (PreEnqueue holds it).
//
// Validation: a status update whose status.reservedFor holds more than
// ResourceClaimReservedForMaxSize (256) consumers is refused (Invalid), as kube-apiserver's
// validation refuses it (v1.34's scheduler tries it: resourceclaim.CanBeReserved is always
// true).

import (
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
)

// claimFaulter refuses or disturbs writes of the claims faults names, through tracker.
type claimFaulter struct {
	tracker clienttesting.ObjectTracker
	faults  map[string]string
	mu      sync.Mutex
	fired   map[string]bool // a once-only fault that has happened, by key
}

// key is the fault's key of claim: its generateName when it has one, else its name.
func claimKey(claim *resourceapi.ResourceClaim) string {
	name := claim.Name
	if claim.GenerateName != "" {
		name = claim.GenerateName
	}
	return "ResourceClaim/" + claim.Namespace + "/" + name
}

// once tells whether the once-only fault of key is yet to happen, marking it happened.
func (c *claimFaulter) once(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired[key] {
		return false
	}
	if c.fired == nil {
		c.fired = map[string]bool{}
	}
	c.fired[key] = true
	return true
}

// react is a reactor for updates of ResourceClaims (the object and its status).
func (c *claimFaulter) react(action clienttesting.Action) (bool, runtime.Object, error) {
	update, ok := action.(clienttesting.UpdateAction)
	if !ok {
		return false, nil, nil
	}
	claim, ok := update.GetObject().(*resourceapi.ResourceClaim)
	if !ok {
		return false, nil, nil
	}
	status := update.GetSubresource() == "status"
	if key := claimKey(claim); c.faults[key] == "deleted" {
		// gone before the write arrives: NotFound, whatever the write holds
		_ = c.tracker.Delete(claimsGVR, claim.Namespace, claim.Name)
		return true, nil, apierrors.NewNotFound(claimsGVR.GroupResource(), claim.Name)
	}
	if status && len(claim.Status.ReservedFor) > resourceapi.ResourceClaimReservedForMaxSize {
		errs := field.ErrorList{field.TooMany(field.NewPath("status", "reservedFor"),
			len(claim.Status.ReservedFor), resourceapi.ResourceClaimReservedForMaxSize)}
		return true, nil, apierrors.NewInvalid(resourceapi.SchemeGroupVersion.WithKind("ResourceClaim").GroupKind(), claim.Name, errs)
	}
	key := claimKey(claim)
	switch fault := c.faults[key]; {
	case fault == "refuseStatus" && status, fault == "refuseUpdate" && !status:
		return true, nil, apierrors.NewForbidden(claimsGVR.GroupResource(), claim.Name,
			fmt.Errorf("refused (the case's claimFaults)"))
	case fault == "conflict" && c.once(key):
		c.rewrite(claim, nil)
		return true, nil, conflict(claim.Name)
	case fault == "allocatedElsewhere" && status && claim.Status.Allocation != nil:
		stored, err := c.tracker.Get(claimsGVR, claim.Namespace, claim.Name)
		if err != nil || stored.(*resourceapi.ResourceClaim).Status.Allocation != nil || !c.once(key) {
			return false, nil, nil
		}
		c.rewrite(stored.(*resourceapi.ResourceClaim), claim.Status.Allocation)
		return true, nil, conflict(claim.Name)
	}
	return false, nil, nil
}

// rewrite stores the claim as it is stored again (a new resourceVersion), with allocation
// when not nil, as another writer would.
func (c *claimFaulter) rewrite(claim *resourceapi.ResourceClaim, allocation *resourceapi.AllocationResult) {
	obj, err := c.tracker.Get(claimsGVR, claim.Namespace, claim.Name)
	if err != nil {
		return
	}
	stored := obj.(*resourceapi.ResourceClaim).DeepCopy()
	if allocation != nil {
		stored.Status.Allocation = allocation.DeepCopy()
	}
	_ = c.tracker.Update(claimsGVR, stored, stored.Namespace)
}

// conflict is the API server's answer to a write made from an older version.
func conflict(name string) error {
	return apierrors.NewConflict(claimsGVR.GroupResource(), name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}
