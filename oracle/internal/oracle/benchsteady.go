package oracle

// createPods with steadyState (upstream's createPodsSteadily, the dra suite's steady-state
// workloads): the op's count of Pods created, then every Pod of the namespace seen bound by
// the scheduler's Pod informer deleted (grace 0) and one new Pod created in its place (the
// template's Pod 0 of 1, as upstream's strategy(..., 1)), until the op's duration has passed;
// a run in which no Pod bound is the workload's error.

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func (w *benchWorld) createPodsSteadily(ctx context.Context, op *BenchOp, ns string, tmpl *objectTemplate) error {
	steady, cancel := context.WithTimeout(ctx, op.duration)
	defer cancel()
	scheduled := make(chan *v1.Pod, op.count)
	changed := func(oldObj, newObj any) {
		newPod, ok := newObj.(*v1.Pod)
		if !ok || newPod.Namespace != ns || newPod.Spec.NodeName == "" {
			return
		}
		if oldPod, ok := oldObj.(*v1.Pod); ok && oldPod.Spec.NodeName != "" {
			return
		}
		select {
		case <-steady.Done():
		case scheduled <- newPod:
		}
	}
	informer := w.factory.Core().V1().Pods().Informer()
	handle, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
	})
	if err != nil {
		return fmt.Errorf("register event handler: %w", err)
	}
	defer func() { _ = informer.RemoveEventHandler(handle) }()
	create := func(first, count, total int) error {
		pods, err := w.makePods(op, tmpl, ns, first, count, total)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if _, err := w.client.CoreV1().Pods(ns).Create(steady, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := create(0, op.count, op.count); err != nil {
		return fmt.Errorf("create initial %d pods: %w", op.count, err)
	}
	zero, background := int64(0), metav1.DeletePropagationBackground
	count := 0
	for {
		select {
		case <-steady.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("%s in steady state: %d Pods bound", stopped(ctx), count)
			}
			if count == 0 {
				return errors.New("no pod at all got scheduled, either because of a problem or because the test interval was too small")
			}
			return nil
		case pod := <-scheduled:
			count++
			err := w.client.CoreV1().Pods(ns).Delete(steady, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &background})
			if steady.Err() != nil {
				continue
			}
			if err != nil {
				return fmt.Errorf("delete scheduled pod: %w", err)
			}
			if err := create(0, 1, 1); err != nil && steady.Err() == nil {
				return fmt.Errorf("create next batch of pods: %w", err)
			}
		}
	}
}
