// Package oracle runs upstream kube-scheduler v1.34 code over kubesched's inputs.
//
// This file turns the JSON kubesched takes (a Kubernetes List of Nodes, Pods and other
// objects, as `kubectl get -o json` prints it) into typed client-go objects, defaulted as
// the API server would store them.
package oracle

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	registrypod "k8s.io/kubernetes/pkg/registry/core/pod"

	// API defaulting (requests from limits, protocol TCP, ...) as the API server applies it.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
)

var decoder = serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()

// Cluster is a decoded snapshot.
type Cluster struct {
	Nodes []*v1.Node
	// Pods are every Pod of the snapshot, bound or not, in input order.
	Pods []*v1.Pod
	// Others are the remaining objects client-go knows (Services, ReplicaSets, PDBs, ...).
	Others []runtime.Object
}

// DecodeCluster reads a List (or a bare array of objects).
func DecodeCluster(raw json.RawMessage) (*Cluster, error) {
	var items []json.RawMessage
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	} else {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		items = list.Items
	}
	c := &Cluster{}
	for i, item := range items {
		obj, err := DecodeObject(item)
		if err != nil {
			return nil, fmt.Errorf("cluster.items[%d]: %w", i, err)
		}
		switch o := obj.(type) {
		case nil:
		case *v1.Node:
			c.Nodes = append(c.Nodes, o)
		case *v1.Pod:
			if o.Namespace == "" {
				o.Namespace = "default"
			}
			c.Pods = append(c.Pods, o)
		default:
			c.Others = append(c.Others, o)
		}
	}
	return c, nil
}

// DecodeObject decodes one object and applies the API server's defaults; an object of a
// kind client-go does not know (PodGroup, ElasticQuota, ...) is skipped (nil, nil).
func DecodeObject(raw json.RawMessage) (runtime.Object, error) {
	obj, _, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		if runtime.IsNotRegisteredError(err) {
			return nil, nil
		}
		return nil, err
	}
	legacyscheme.Scheme.Default(obj)
	if pod, ok := obj.(*v1.Pod); ok && pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetUID() == "" {
		// The API server gives every object a UID; the scheduler's cache keys Pods by it.
		m.SetUID(types.UID(fmt.Sprintf("uid-%s-%s", m.GetNamespace(), m.GetName())))
	}
	if pod, ok := obj.(*v1.Pod); ok {
		if err := prepareForCreate(pod); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// prepareForCreate mutates a Pod as the API server does when it is created (the
// registry's PrepareForCreate: matchLabelKeys merged into affinity and spreading
// selectors, fields of disabled features dropped), keeping the status it was given.
func prepareForCreate(p *v1.Pod) error {
	internal := &api.Pod{}
	if err := legacyscheme.Scheme.Convert(p, internal, nil); err != nil {
		return err
	}
	registrypod.Strategy.PrepareForCreate(context.Background(), internal)
	status := p.Status
	if err := legacyscheme.Scheme.Convert(internal, p, nil); err != nil {
		return err
	}
	p.Status = status
	return nil
}

// DecodePod decodes a Pod, defaulting its apiVersion and kind when absent.
func DecodePod(raw json.RawMessage) (*v1.Pod, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = "v1"
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = "Pod"
	}
	b, _ := json.Marshal(m)
	obj, err := DecodeObject(b)
	if err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod: not a Pod")
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	return pod, nil
}
