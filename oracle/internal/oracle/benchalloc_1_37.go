//go:build kube_ge_1_37

package oracle

// allocResourceClaims (v1.37's scheduler_perf dra.go, allocResourceClaimsOp.run): every
// unallocated ResourceClaim of the op's namespace (all, when none) is allocated without a
// Pod, one at a time, by upstream's structured allocator on a node picked at random (the
// first of a shuffled list where the claim fits), its allocation written to the claim's
// status and assumed in the op's own claim cache before the next claim is allocated.  The
// op runs its own informers, ResourceSlice tracker and DRA manager over the clientset, as
// upstream's does over the API server; the scheduler sees the allocations through its
// informers.  A claim that fits no node fails the op.

import (
	"context"
	"fmt"
	"math/rand/v2"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/cel"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// allocResourceClaimsSupported: this release's kube-oracle runs allocResourceClaims.
const allocResourceClaimsSupported = true

func (w *benchWorld) allocResourceClaims(ctx context.Context, op *BenchOp) error {
	ns := ""
	if op.Namespace != nil {
		ns = *op.Namespace
	}
	claims, err := w.client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list claims: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory := informers.NewSharedInformerFactory(w.client, 0)
	claimInformer := factory.Resource().V1().ResourceClaims().Informer()
	nodeLister := factory.Core().V1().Nodes().Lister()
	tracker, err := resourceslicetracker.StartTracker(ctx, trackerOptions(w.client, factory))
	if err != nil {
		return fmt.Errorf("start resource slice tracker: %w", err)
	}
	assumeCache := assumecache.NewAssumeCache(klog.FromContext(ctx), claimInformer, "ResourceClaim", "", nil)
	manager := dynamicresources.NewDRAManager(ctx, assumeCache, tracker, factory)
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.WaitForCacheSync(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), tracker.HasSynced) {
		return fmt.Errorf("resource slice tracker failed to sync: %s", stopped(ctx))
	}
	handle := assumeCache.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if !cache.WaitForCacheSync(ctx.Done(), handle.HasSynced) {
		return fmt.Errorf("assume cache failed to sync: %s", stopped(ctx))
	}
	gate := utilfeature.DefaultFeatureGate.Enabled
	celCache := cel.NewCache(10, cel.Features{
		EnableConsumableCapacity: gate(features.DRAConsumableCapacity),
		EnableListTypeAttributes: gate(features.DRAListTypeAttributes),
	})
	nodes, err := nodeLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	slices, err := manager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return fmt.Errorf("list slices: %w", err)
	}
claims:
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Status.Allocation != nil {
			continue
		}
		state, err := allocatedState(manager)
		if err != nil {
			return err
		}
		allocator, err := structured.NewAllocator(ctx, structured.Features{
			PrioritizedList:      gate(features.DRAPrioritizedList),
			AdminAccess:          gate(features.DRAAdminAccess),
			DeviceTaints:         gate(features.DRADeviceTaints),
			PartitionableDevices: gate(features.DRAPartitionableDevices),
			ConsumableCapacity:   gate(features.DRAConsumableCapacity),
			CompatibilityGroups:  gate(features.DRADeviceCompatibilityGroups),
		}, state, manager.DeviceClasses(), slices, celCache)
		if err != nil {
			return fmt.Errorf("create allocator: %w", err)
		}
		rand.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		for _, node := range nodes {
			result, err := allocator.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil {
				return fmt.Errorf("allocate claim: %w", err)
			}
			if result == nil {
				continue
			}
			claim = claim.DeepCopy()
			claim.Status.Allocation = &result[0]
			updated, err := w.client.ResourceV1().ResourceClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("update claim status with allocation: %w", err)
			}
			if err := manager.ResourceClaims().AssumeClaimAfterAPICall(updated); err != nil {
				return fmt.Errorf("assume claim: %w", err)
			}
			continue claims
		}
		return fmt.Errorf("could not allocate claim %d out of %d", i, len(claims.Items))
	}
	return nil
}

// allocatedState is what the claims allocated so far hold (devices, shared devices and
// their consumed capacity), as upstream's op gathers it before each claim.
func allocatedState(manager *dynamicresources.DefaultDRAManager) (structured.AllocatedState, error) {
	claims, err := manager.ResourceClaims().List()
	if err != nil {
		return structured.AllocatedState{}, fmt.Errorf("list claims: %w", err)
	}
	devices := sets.New[structured.DeviceID]()
	shared := sets.New[structured.SharedDeviceID]()
	capacity := structured.NewConsumedCapacityCollection()
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, result := range claim.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			devices.Insert(id)
			if result.ShareID == nil {
				continue
			}
			shared.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
			if result.ConsumedCapacity != nil {
				capacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
			}
		}
	}
	return structured.AllocatedState{AllocatedDevices: devices, AllocatedSharedDeviceIDs: shared, AggregatedCapacity: capacity}, nil
}
