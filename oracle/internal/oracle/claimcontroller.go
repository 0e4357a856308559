package oracle

// This file stands in for kube-controller-manager's resourceclaim controller
// (pkg/controller/resourceclaim) for `kube-oracle schedule`, as pvcontroller.go does for the
// PV controller: a Pod that names a resourceClaimTemplateName waits at DynamicResources'
// PreEnqueue until the controller has created its ResourceClaim from the template and
// recorded it in the Pod's status.resourceClaimStatuses; without it such a Pod never
// reaches a scheduling cycle (and the run never settles).
//
// What it does, at once and synchronously (inside the Pod's create, so that the scheduler
// sees the Pod, then its claims, then the Pod's status update, deterministically), for each
// of the Pod's claims from a template that its status does not name yet and whose template
// exists in the Pod's namespace (upstream retries until it appears):
//   - creates a ResourceClaim with the template's labels, annotations (plus
//     resource.kubernetes.io/pod-claim-name) and spec, owned by the Pod (controller
//     reference, blockOwnerDeletion), named as the controller's generateName
//     `<pod>-<claim>-` (both parts cut in proportion past 57 characters) and the API
//     server's 5-character suffix, which is drawn here not at random but from a hash of the
//     Pod's UID and the claim's name, as kubesched's simulator does
//     (kubesched/sim/resourceclaims.py), so that both name the claim alike;
//   - then sets the Pod's status.resourceClaimStatuses to name them.
//
// And, for `kube-oracle bench` (whose steady-state createPods deletes every Pod it sees
// bound), when a Pod is deleted: the claims it owns (named in its status, the Pod their
// controller: generated from its templates, or DynamicResources' claim for its extended
// resources) are deleted, as the controller deletes them once their Pod is gone, which
// frees their devices for the scheduler (podGone).
//
// What it does not: deallocate claims of finished Pods, release a deleted Pod's
// reservation of a claim it does not own, or check the AdminAccess and PrioritizedList
// feature gates against the template.

import (
	"crypto/sha256"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
)

var (
	claimsGVR         = resourceapi.SchemeGroupVersion.WithResource("resourceclaims")
	claimTemplatesGVR = resourceapi.SchemeGroupVersion.WithResource("resourceclaimtemplates")
)

const (
	// podClaimAnnotation ties a generated claim to the Pod's claim (the controller's
	// podResourceClaimAnnotation).
	podClaimAnnotation = "resource.kubernetes.io/pod-claim-name"
	// generatedNameAlphabet is k8s.io/apimachinery/pkg/util/rand's alphabet.
	generatedNameAlphabet = "bcdfghjklmnpqrstvwxz2456789"
	// maxClaimBaseLen leaves room for a hyphen and the suffix in 63 characters (the
	// controller's maxBaseLen); maxGeneratedNameLength is names.SimpleNameGenerator's cut.
	maxClaimBaseLen        = 57
	maxGeneratedNameLength = 58
)

// claimController creates the claims of new Pods from their templates through tracker.
type claimController struct {
	tracker clienttesting.ObjectTracker
}

// react is a reactor for Pod creates (not the binding subresource): it stores the Pod, then
// creates its template claims and records them in its status; the caller gets the Pod as
// its create stored it.
func (c *claimController) react(action clienttesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(clienttesting.CreateAction)
	if !ok || create.GetSubresource() != "" {
		return false, nil, nil
	}
	obj, ok := create.GetObject().(*v1.Pod)
	if !ok || !hasTemplateClaim(obj) {
		return false, nil, nil
	}
	pod := obj.DeepCopy()
	if err := c.tracker.Create(podsGVR, pod, pod.Namespace); err != nil {
		return true, nil, err
	}
	stored := pod.DeepCopy()
	c.sync(pod)
	return true, stored, nil
}

var podsGVR = v1.SchemeGroupVersion.WithResource("pods")

func hasTemplateClaim(pod *v1.Pod) bool {
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName != nil {
			return true
		}
	}
	return false
}

// sync creates pod's missing template claims and names them in its status (syncPod).
func (c *claimController) sync(pod *v1.Pod) {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return
	}
	have := map[string]bool{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		have[s.Name] = true
	}
	var added []v1.PodResourceClaimStatus
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil || have[pc.Name] {
			continue
		}
		obj, err := c.tracker.Get(claimTemplatesGVR, pod.Namespace, *pc.ResourceClaimTemplateName)
		if err != nil {
			klog.V(2).InfoS("claim controller: no template", "pod", klog.KObj(pod), "template", *pc.ResourceClaimTemplateName)
			continue
		}
		claim := claimFromTemplate(obj.(*resourceapi.ResourceClaimTemplate), pod, pc.Name)
		if err := c.tracker.Create(claimsGVR, claim, pod.Namespace); err != nil {
			klog.V(2).InfoS("claim controller: creating the claim failed", "pod", klog.KObj(pod), "err", err)
			continue
		}
		name := claim.Name
		added = append(added, v1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: &name})
	}
	if len(added) == 0 {
		return
	}
	updated := pod.DeepCopy()
	updated.Status.ResourceClaimStatuses = append(updated.Status.ResourceClaimStatuses, added...)
	err := c.tracker.Update(podsGVR, updated, pod.Namespace)
	klog.V(2).InfoS("claim controller: created claims", "pod", klog.KObj(pod), "claims", len(added), "err", err)
}

// podGone deletes the claims a deleted pod owns (see the file comment).
func (c *claimController) podGone(pod *v1.Pod) {
	var names []string
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			names = append(names, *s.ResourceClaimName)
		}
	}
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		names = append(names, s.ResourceClaimName)
	}
	for _, name := range names {
		obj, err := c.tracker.Get(claimsGVR, pod.Namespace, name)
		if err != nil {
			continue
		}
		if claim, ok := obj.(*resourceapi.ResourceClaim); ok && metav1.IsControlledBy(claim, pod) {
			err := c.tracker.Delete(claimsGVR, pod.Namespace, name)
			klog.V(2).InfoS("claim controller: deleted the claim of a deleted Pod", "pod", klog.KObj(pod), "claim", name, "err", err)
		}
	}
}

// claimFromTemplate is the claim the controller creates for pod's claim podClaim.
func claimFromTemplate(tmpl *resourceapi.ResourceClaimTemplate, pod *v1.Pod, podClaim string) *resourceapi.ResourceClaim {
	annotations := map[string]string{}
	for k, v := range tmpl.Spec.ObjectMeta.Annotations {
		annotations[k] = v
	}
	annotations[podClaimAnnotation] = podClaim
	isTrue := true
	name := generatedClaimName(pod, podClaim)
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: pod.Namespace,
			UID:       types.UID(fmt.Sprintf("uid-ResourceClaim-%s-%s", pod.Namespace, name)),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: &isTrue, BlockOwnerDeletion: &isTrue,
			}},
			Annotations: annotations,
			Labels:      tmpl.Spec.ObjectMeta.Labels,
		},
		Spec: *tmpl.Spec.Spec.DeepCopy(),
	}
}

// generatedClaimName is the controller's generateName for pod's claim podClaim with the
// API server's suffix, drawn from a hash of the Pod's UID and the claim (kubesched's
// generated_claim_name).
func generatedClaimName(pod *v1.Pod, podClaim string) string {
	base := pod.Name + "-" + podClaim + "-"
	if n := len(base); n > maxClaimBaseLen {
		base = pod.Name[:len(pod.Name)*maxClaimBaseLen/n] + "-" + podClaim[:len(podClaim)*maxClaimBaseLen/n]
	}
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	digest := sha256.Sum256([]byte(string(pod.UID) + "/" + podClaim))
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = generatedNameAlphabet[int(digest[i])%len(generatedNameAlphabet)]
	}
	return base + string(suffix)
}
