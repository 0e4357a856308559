package oracle

// `kube-oracle burst`: load for a scheduler running against a real API server
// (benchmarks/upstream_side_by_side.py).  `burst nodes` creates Nodes from a template;
// `burst pods` watches a namespace, creates Pods from a template with many parallel
// workers and an unthrottled client, waits until every one is bound and reports, as one
// JSON line, the creation rate, Pods/s from the first create to the last bind, and each
// Pod's creation->bound latency (from the moment its create was sent until the watch
// showed spec.nodeName).  When the API server cannot create Pods faster than the scheduler
// binds them, that rate is the creation rate: `burst pods --no-wait` creates a backlog
// (no scheduler running) and `burst wait` measures Pods/s from the first bind to the last
// once a scheduler is started.

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

// BurstOptions says what to create.
type BurstOptions struct {
	Kubeconfig    string
	Template      string
	Count         int
	Namespace     string
	SchedulerName string
	Workers       int
	Timeout       time.Duration
	NoWait        bool
}

// BurstResult is `burst pods`' answer (times in seconds, latencies in ms).
type BurstResult struct {
	Pods          int                `json:"pods"`
	CreateSeconds float64            `json:"createSeconds"`
	CreatePerSec  float64            `json:"createPodsPerSecond"`
	BoundSeconds  float64            `json:"allBoundSeconds"`
	PodsPerSecond float64            `json:"podsPerSecond"`
	LatencyMs     map[string]float64 `json:"creationToBoundMs,omitempty"`
}

func burstClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit
	return kubernetes.NewForConfig(cfg)
}

// BurstNodes creates o.Count Nodes from o.Template (named generateName plus 5 random
// characters, with kubernetes.io/hostname) and returns their names.
func BurstNodes(ctx context.Context, o *BurstOptions) ([]string, error) {
	client, err := burstClient(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	tmpl, err := newObjectTemplate(o.Template, nil)
	if err != nil {
		return nil, err
	}
	nodes := make([]*v1.Node, o.Count)
	names := make([]string, o.Count)
	// 5 random characters give 27^5 names: 5,000 Nodes collide more often than not, and the
	// API server refuses the second with AlreadyExists, so a drawn name is drawn again.
	taken := make(map[string]bool, o.Count)
	for i := range nodes {
		n, err := tmpl.node(i, o.Count)
		if err != nil {
			return nil, err
		}
		n.UID, n.ResourceVersion = "", ""
		if n.Name == "" {
			for n.Name == "" || taken[n.Name] {
				n.Name = n.GenerateName + rand.String(5)
			}
			taken[n.Name] = true
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[v1.LabelHostname] = n.Name
		nodes[i], names[i] = n, n.Name
	}
	errs := make([]error, len(nodes))
	workqueue.ParallelizeUntil(ctx, o.Workers, len(nodes), func(i int) {
		_, errs[i] = client.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{})
	})
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("creating Node %s: %w", names[i], err)
		}
	}
	return names, nil
}

// boundWatch records when each Pod of a namespace was first seen bound.
type boundWatch struct {
	mu    sync.Mutex
	want  int
	bound map[string]time.Time
	all   chan struct{}
}

// watchBound starts watching o.Namespace until o.Count of its Pods are bound.
func watchBound(ctx context.Context, client kubernetes.Interface, o *BurstOptions) (*boundWatch, error) {
	b := &boundWatch{want: o.Count, bound: map[string]time.Time{}, all: make(chan struct{})}
	onPod := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, seen := b.bound[p.Name]; !seen {
			b.bound[p.Name] = now
			if len(b.bound) == b.want {
				close(b.all)
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(o.Namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, UpdateFunc: func(_, obj any) { onPod(obj) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return b, nil
}

// wait blocks until every Pod is bound; the bind times, or an error after the timeout.
func (b *boundWatch) wait(ctx context.Context, timeout time.Duration) (map[string]time.Time, error) {
	select {
	case <-b.all:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.bound) < b.want {
		return nil, fmt.Errorf("%d of %d Pods bound after %v", len(b.bound), b.want, timeout)
	}
	return b.bound, nil
}

func createNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// BurstPods creates the Pods and, unless o.NoWait, waits until all are bound and measures
// (see the file comment).
func BurstPods(ctx context.Context, o *BurstOptions) (*BurstResult, error) {
	client, err := burstClient(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := createNamespace(ctx, client, o.Namespace); err != nil {
		return nil, err
	}
	tmpl, err := newObjectTemplate(o.Template, nil)
	if err != nil {
		return nil, err
	}
	pods := make([]*v1.Pod, o.Count)
	for i := range pods {
		p, err := tmpl.pod(i, o.Count)
		if err != nil {
			return nil, err
		}
		p.UID, p.Namespace = "", o.Namespace
		if p.Name == "" {
			p.Name = fmt.Sprintf("%s%06d", p.GenerateName, i)
		}
		if o.SchedulerName != "" {
			p.Spec.SchedulerName = o.SchedulerName
		}
		pods[i] = p
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var watch *boundWatch
	if !o.NoWait {
		if watch, err = watchBound(ctx, client, o); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	sent := make([]time.Time, len(pods))
	errs := make([]error, len(pods))
	workqueue.ParallelizeUntil(ctx, o.Workers, len(pods), func(i int) {
		sent[i] = time.Now()
		_, errs[i] = client.CoreV1().Pods(o.Namespace).Create(ctx, pods[i], metav1.CreateOptions{})
	})
	created := time.Since(start)
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("creating Pod %s: %w", pods[i].Name, err)
		}
	}
	res := &BurstResult{Pods: o.Count, CreateSeconds: created.Seconds(), CreatePerSec: float64(o.Count) / created.Seconds()}
	if watch == nil {
		return res, nil
	}
	bound, err := watch.wait(ctx, o.Timeout)
	if err != nil {
		return nil, err
	}
	var last time.Time
	lat := make([]float64, 0, len(bound))
	for i, p := range pods {
		t := bound[p.Name]
		if t.After(last) {
			last = t
		}
		lat = append(lat, float64(t.Sub(sent[i]).Microseconds())/1000)
	}
	res.LatencyMs = latencies(lat)
	res.BoundSeconds = last.Sub(start).Seconds()
	res.PodsPerSecond = float64(o.Count) / res.BoundSeconds
	return res, nil
}

func latencies(ms []float64) map[string]float64 {
	out := percentiles(ms, 1)
	out["Max"] = ms[0]
	for _, x := range ms {
		out["Max"] = math.Max(out["Max"], x)
	}
	return out
}

// BurstWait waits until o.Count Pods of o.Namespace are bound, printing "watching" on
// stdout once its informer has synced (start the scheduler then): Pods/s is measured from
// the first bind it saw to the last (Pods bound before it synced count as bound then).
func BurstWait(ctx context.Context, o *BurstOptions) (*BurstResult, error) {
	client, err := burstClient(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	watch, err := watchBound(ctx, client, o)
	if err != nil {
		return nil, err
	}
	fmt.Println("watching")
	bound, err := watch.wait(ctx, o.Timeout)
	if err != nil {
		return nil, err
	}
	var first, last time.Time
	for _, t := range bound {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	res := &BurstResult{Pods: o.Count, BoundSeconds: last.Sub(first).Seconds()}
	res.PodsPerSecond = float64(o.Count-1) / res.BoundSeconds
	return res, nil
}

// DeletePods force-deletes every Pod of the namespace (no kubelet confirms a graceful
// deletion) and waits until none is left.
func DeletePods(ctx context.Context, o *BurstOptions) error {
	client, err := burstClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	zero := int64(0)
	pods := client.CoreV1().Pods(o.Namespace)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return err
	}
	for deadline := time.Now().Add(o.Timeout); ; time.Sleep(200 * time.Millisecond) {
		list, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil && len(list.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods of %s still present after %v", o.Namespace, o.Timeout)
		}
	}
}
