package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// HintsRequest asks every plugin's queueing hints about one cluster event, as the
// scheduling queue would for a Pod it holds as unschedulable: the cluster (the listers some
// hints read), the rejected Pod, the configuration and the event.
type HintsRequest struct {
	ExplainRequest
	Event HintEvent `json:"event"`
}

// HintEvent is one change of a Node, a Pod, a storage object (PersistentVolume,
// PersistentVolumeClaim, StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
// VolumeAttachment), a DRA object (ResourceClaim, ResourceSlice, DeviceClass of
// resource.k8s.io/v1) or, from v1.35, a Workload API object in the release's served version
// (v1.35: scheduling.k8s.io/v1alpha1 Workload; v1.36: v1alpha2 PodGroup; v1.37: v1beta1
// PodGroup, v1alpha3 CompositePodGroup): Op is add, update or delete; Old and New the object
// before and after (absent for an add's Old and a delete's New).  An update of an unbound Pod
// is the rejected Pod's own update (the queue's Update): New is then the Pod.
type HintEvent struct {
	Op  string          `json:"op"`
	Old json.RawMessage `json:"old,omitempty"`
	New json.RawMessage `json:"new,omitempty"`
}

// HintAnswer is one plugin's answer to one cluster event its registered events match.
type HintAnswer struct {
	Event  string `json:"event"`
	Plugin string `json:"plugin"`
	Hint   string `json:"hint"` // Queue or QueueSkip (an error counts as Queue, as the queue does)
}

// HintsResult lists the cluster events the change amounts to (the informer handlers' and
// the queue's derivation, by label) and every plugin's hint for each event it registered.
type HintsResult struct {
	Events []string     `json:"events"`
	Hints  []HintAnswer `json:"hints"`
}

// Hints derives the cluster events of req.Event as upstream's event handlers do
// (eventhandlers.go: Node add, update, delete; assigned Pod add, update, delete; the
// unbound Pod's own update through the queue's Update, another unbound Pod's add (from
// v1.35, under the Workload API's gate, unscheduledPodAddMoves) and deletion; a storage or DRA object's add, update or delete, buildEvtResHandler's one event
// of the object's resource: the claims' assume cache and the slices' and classes' informers
// raise theirs through it too) and asks each plugin's QueueingHintFn whose registered event matches
// (framework.MatchClusterEvents; no hint function means Queue).  Every plugin is asked,
// not only those that rejected the Pod: the answer compares the hint functions.
func Hints(ctx context.Context, req *HintsRequest) (*HintsResult, error) {
	cluster, pod, cfg, err := req.decode()
	if err != nil {
		return nil, err
	}
	oldObj, err := hintObject(req.Event.Old)
	if err != nil {
		return nil, fmt.Errorf("event.old: %w", err)
	}
	newObj, err := hintObject(req.Event.New)
	if err != nil {
		return nil, fmt.Errorf("event.new: %w", err)
	}
	events, err := clusterEvents(req.Event.Op, oldObj, newObj)
	if err != nil {
		return nil, err
	}
	running := runningPods(cluster, pod)
	snapshot := internalcache.NewSnapshot(running, cluster.Nodes)
	env, err := NewEnv(ctx, cfg, objectsOf(cluster, pod), snapshot, nil)
	if err != nil {
		return nil, err
	}
	out := &HintsResult{Events: []string{}, Hints: []HintAnswer{}}
	for _, evt := range events {
		out.Events = append(out.Events, evt.Label())
	}
	f, ok := env.Frameworks[pod.Spec.SchedulerName]
	if !ok {
		return out, nil
	}
	logger := klog.FromContext(ctx)
	for _, ext := range f.EnqueueExtensions() {
		registered, err := ext.EventsToRegister(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: EventsToRegister: %w", ext.Name(), err)
		}
		for _, evt := range events {
			for _, reg := range registered {
				if !framework.MatchClusterEvents(reg.Event, evt) {
					continue
				}
				hint := fwk.Queue
				if reg.QueueingHintFn != nil {
					h, herr := reg.QueueingHintFn(logger, pod, untyped(oldObj), untyped(newObj))
					if herr == nil {
						hint = h
					}
				}
				name := "QueueSkip"
				if hint == fwk.Queue {
					name = "Queue"
				}
				out.Hints = append(out.Hints, HintAnswer{Event: evt.Label(), Plugin: ext.Name(), Hint: name})
			}
		}
	}
	sort.SliceStable(out.Hints, func(i, j int) bool {
		a, b := out.Hints[i], out.Hints[j]
		if a.Event != b.Event {
			return a.Event < b.Event
		}
		return a.Plugin < b.Plugin
	})
	return out, nil
}

// hintObject decodes a Node, a Pod, a storage, a DRA or a Workload API object (nil when
// absent), with the API server's defaults.
func hintObject(raw json.RawMessage) (runtime.Object, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	obj, err := DecodeObject(raw)
	if err != nil {
		return nil, err
	}
	switch obj.(type) {
	case *v1.Node, *v1.Pod:
		return obj, nil
	}
	if _, ok := objectResource(obj); ok {
		return obj, nil
	}
	return nil, fmt.Errorf("want a Node, a Pod, a storage, a DRA or a Workload API object, got %T", obj)
}

// objectResource is the event resource of a storage, DRA or (from v1.35) Workload API
// object's informer (false for any other object).
func objectResource(obj runtime.Object) (fwk.EventResource, bool) {
	switch obj.(type) {
	case *v1.PersistentVolume:
		return fwk.PersistentVolume, true
	case *v1.PersistentVolumeClaim:
		return fwk.PersistentVolumeClaim, true
	case *storagev1.StorageClass:
		return fwk.StorageClass, true
	case *storagev1.CSINode:
		return fwk.CSINode, true
	case *storagev1.CSIDriver:
		return fwk.CSIDriver, true
	case *storagev1.CSIStorageCapacity:
		return fwk.CSIStorageCapacity, true
	case *storagev1.VolumeAttachment:
		return fwk.VolumeAttachment, true
	case *resourceapi.ResourceClaim:
		return fwk.ResourceClaim, true
	case *resourceapi.ResourceSlice:
		return fwk.ResourceSlice, true
	case *resourceapi.DeviceClass:
		return fwk.DeviceClass, true
	}
	return workloadResource(obj)
}

// objectEvents is buildEvtResHandler's event for a storage or DRA object's add, update or
// delete: the object's resource with the one action (an update's old object must be of
// the same kind).
func objectEvents(op string, resource fwk.EventResource, oldObj runtime.Object) ([]fwk.ClusterEvent, error) {
	switch op {
	case "add":
		return []fwk.ClusterEvent{{Resource: resource, ActionType: fwk.Add}}, nil
	case "delete":
		return []fwk.ClusterEvent{{Resource: resource, ActionType: fwk.Delete}}, nil
	case "update":
		if old, ok := objectResource(oldObj); !ok || old != resource {
			return nil, fmt.Errorf("event: an update needs the old %s", resource)
		}
		return []fwk.ClusterEvent{{Resource: resource, ActionType: fwk.Update}}, nil
	}
	return nil, fmt.Errorf("event: op %q: want add, update or delete", op)
}

// untyped is obj as the event handlers pass it: a nil interface when absent.
func untyped(obj runtime.Object) any {
	if obj == nil {
		return nil
	}
	return obj
}

// clusterEvents are the events upstream's handlers raise for the change.
func clusterEvents(op string, oldObj, newObj runtime.Object) ([]fwk.ClusterEvent, error) {
	obj := newObj
	if op == "delete" {
		obj = oldObj
	}
	switch o := obj.(type) {
	case *v1.Node:
		switch op {
		case "add":
			return []fwk.ClusterEvent{{Resource: fwk.Node, ActionType: fwk.Add}}, nil
		case "delete":
			return []fwk.ClusterEvent{{Resource: fwk.Node, ActionType: fwk.Delete}}, nil
		case "update":
			old, ok := oldObj.(*v1.Node)
			if !ok {
				return nil, fmt.Errorf("event: an update needs the old Node")
			}
			return framework.NodeSchedulingPropertiesChange(o, old), nil
		}
	case *v1.Pod:
		assigned := o.Spec.NodeName != ""
		switch op {
		case "add":
			if assigned {
				return []fwk.ClusterEvent{framework.EventAssignedPodAdd}, nil
			}
			// addPodToSchedulingQueue moves the unschedulable Pods on an unbound Pod's add
			// only under the release's Workload API gate; else it raises no event.
			if unscheduledPodAddMoves() {
				return []fwk.ClusterEvent{framework.EventUnscheduledPodAdd}, nil
			}
			return []fwk.ClusterEvent{}, nil
		case "delete":
			if assigned {
				return []fwk.ClusterEvent{framework.EventAssignedPodDelete}, nil
			}
			return []fwk.ClusterEvent{framework.EventUnscheduledPodDelete}, nil
		case "update":
			old, ok := oldObj.(*v1.Pod)
			if !ok {
				return nil, fmt.Errorf("event: an update needs the old Pod")
			}
			return podSchedulingPropertiesChange(o, old, !assigned), nil
		}
	case nil:
		return nil, fmt.Errorf("event: no object")
	}
	if resource, ok := objectResource(obj); ok {
		return objectEvents(op, resource, oldObj)
	}
	return nil, fmt.Errorf("event: op %q: want add, update or delete", op)
}
