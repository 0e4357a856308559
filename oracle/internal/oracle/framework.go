package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/resource"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

func init() {
	metrics.Register()
}

// newScheduler is scheduler.New over client with cfg's profiles and its top-level
// settings (parallelism, percentageOfNodesToScore, backoff), as kube-scheduler builds it.
func newScheduler(ctx context.Context, client clientset.Interface, factory informers.SharedInformerFactory,
	recorder func(string) eventRecorder, cfg *config.KubeSchedulerConfiguration, opts ...scheduler.Option) (*scheduler.Scheduler, error) {
	return scheduler.New(ctx, client, factory, nil, recorder, append([]scheduler.Option{
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithParallelism(cfg.Parallelism),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
	}, opts...)...,
	)
}

// LoadConfig decodes a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) with
// upstream's scheme (defaults applied) and validates it; nil or null gives the defaults.
func LoadConfig(raw json.RawMessage) (*config.KubeSchedulerConfiguration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return latest.Default()
	}
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("config: got %v, want KubeSchedulerConfiguration", gvk)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// Env is upstream's framework for every profile, over a fake clientset holding the
// snapshot's objects (the listers plugins use: Services, ReplicaSets, Namespaces, PDBs,
// ResourceSlices, ...), and the scheduling queue that is their nominator.
type Env struct {
	Client     *fake.Clientset
	Frameworks profile.Map
	Queue      *internalqueue.PriorityQueue
}

// NewEnv builds the frameworks of cfg as scheduler.New does, with lister as the
// snapshot every plugin reads nodes from (and DefaultPreemption's random choices steered by
// steer, when not nil).
func NewEnv(ctx context.Context, cfg *config.KubeSchedulerConfiguration, objs []runtime.Object,
	lister sharedLister, steer *preemptionSteer) (*Env, error) {
	client := fake.NewClientset(objs...)
	watches := recordWatches(client)
	factory := &handlerFactory{SharedInformerFactory: informers.NewSharedInformerFactory(client, 0)}
	dra, claims, err := draManager(ctx, client, factory)
	if err != nil {
		return nil, err
	}
	recorders := func(string) eventRecorder { return &events.FakeRecorder{} }
	stop := ctx.Done()
	opts := append(frameworkOptions(factory, lister), groupOptions(ctx, objs)...)
	opts = append(opts,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSharedDRAManager(dra),
		frameworkruntime.WithParallelism(int(cfg.Parallelism)),
		frameworkruntime.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, time.Second, stop)),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
	)
	registry := frameworkplugins.NewInTreeRegistry()
	if steer != nil {
		registry[defaultpreemption.Name] = steerPreemption(registry[defaultpreemption.Name], steer)
	}
	fws, err := profile.NewMap(ctx, cfg.Profiles, registry, recorders, opts...)
	if err != nil {
		return nil, err
	}
	// The queue is the frameworks' nominator, as in scheduler.New: with each profile's
	// PreEnqueue plugins, so that a gated Pod it is given never enters activeQ (and so is
	// never nominated).
	first := fws[cfg.Profiles[0].SchedulerName]
	preEnqueue := map[string]map[string]preEnqueuePlugin{}
	for name, f := range fws {
		preEnqueue[name] = map[string]preEnqueuePlugin{}
		for _, pl := range f.PreEnqueuePlugins() {
			preEnqueue[name][pl.Name()] = pl
		}
	}
	queue := internalqueue.NewPriorityQueue(first.QueueSortFunc(), factory,
		internalqueue.WithPreEnqueuePluginMap(preEnqueue),
		queueMetrics(metrics.NewMetricsAsyncRecorder(1000, time.Second, stop)))
	for _, f := range fws {
		f.SetPodNominator(queue)
		f.SetPodActivator(queue)
	}
	factory.Start(stop)
	waitForSync(ctx, factory, watches)
	factory.waitForHandlers(ctx)
	waitForClaims(ctx, claims, objs)
	return &Env{Client: client, Frameworks: fws, Queue: queue}, nil
}

// handlerFactory is the informer factory the frameworks get: the shared one, except that
// every event handler registered on a core or resource.k8s.io informer is noted, so that
// waitForHandlers can wait until each has been given the initial list, as kube-scheduler
// waits for its own handlers (WaitForHandlersSync).  A synced store says nothing about its
// handlers: VolumeBinding's PV and PVC assume caches and DynamicResources' claim cache and
// slice tracker are fed by handlers, each on its own goroutine (without this, VolumeBinding
// failed with `could not find v1.PersistentVolumeClaim` on some storage cases).
type handlerFactory struct {
	informers.SharedInformerFactory
	mu   sync.Mutex
	regs []cache.ResourceEventHandlerRegistration
}

// Core builds the core informers over f, so that their InformerFor is f's.
func (f *handlerFactory) Core() core.Interface { return core.New(f, metav1.NamespaceAll, nil) }

// Resource builds the resource.k8s.io informers over f, so that their InformerFor is f's.
func (f *handlerFactory) Resource() resource.Interface {
	return resource.New(f, metav1.NamespaceAll, nil)
}

// InformerFor is the shared informer for obj, noting the handlers added to it.
func (f *handlerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return &handlerInformer{SharedIndexInformer: f.SharedInformerFactory.InformerFor(obj, newFunc), f: f}
}

func (f *handlerFactory) note(reg cache.ResourceEventHandlerRegistration, err error) (cache.ResourceEventHandlerRegistration, error) {
	if err == nil {
		f.mu.Lock()
		f.regs = append(f.regs, reg)
		f.mu.Unlock()
	}
	return reg, err
}

// waitForHandlers polls every millisecond until every noted handler has synced.
func (f *handlerFactory) waitForHandlers(ctx context.Context) {
	f.mu.Lock()
	regs := append([]cache.ResourceEventHandlerRegistration(nil), f.regs...)
	f.mu.Unlock()
	for _, reg := range regs {
		for ctx.Err() == nil && !reg.HasSynced() {
			time.Sleep(time.Millisecond)
		}
	}
}

// handlerInformer is a shared informer whose added handlers its factory notes.
type handlerInformer struct {
	cache.SharedIndexInformer
	f *handlerFactory
}

func (i *handlerInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.f.note(i.SharedIndexInformer.AddEventHandler(h))
}

func (i *handlerInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.f.note(i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resync))
}

func (i *handlerInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.f.note(i.SharedIndexInformer.AddEventHandlerWithOptions(h, opts))
}

// watchRecorder notes each resource an informer of the fake clientset has started to watch.
// The fake's tracker has no resource versions: an object created after an informer's LIST
// but before its WATCH is never delivered (the Pod never reaches the queue), so nothing is
// created before every informer watches.  Recording without handling is enough: the Fake
// holds its lock while the default reactor opens the watch, and every create takes it too.
type watchRecorder struct {
	mu       sync.Mutex
	watching map[string]bool
}

func recordWatches(client *fake.Clientset) *watchRecorder {
	r := &watchRecorder{watching: map[string]bool{}}
	client.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		r.mu.Lock()
		r.watching[action.GetResource().String()] = true
		r.mu.Unlock()
		return false, nil, nil
	})
	return r
}

func (r *watchRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watching)
}

// waitForSync waits for the informers to list the fake clientset and to watch it (see
// watchRecorder): polling every millisecond, not every 100 ms as WaitForCacheSync does
// (requests are small and many).
func waitForSync(ctx context.Context, factory informers.SharedInformerFactory, watches *watchRecorder) {
	now := make(chan struct{})
	close(now)
	for ctx.Err() == nil {
		listed := factory.WaitForCacheSync(now)
		synced := true
		for _, ok := range listed {
			synced = synced && ok
		}
		if synced && watches.count() >= len(listed) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// waitForClaims waits until the ResourceClaim assume cache, fed by informer handlers after
// the stores synced, holds every claim of objs (DynamicResources reads claims from it).
func waitForClaims(ctx context.Context, claims *assumecache.AssumeCache, objs []runtime.Object) {
	want := 0
	for _, o := range objs {
		if _, ok := o.(*resourceapi.ResourceClaim); ok {
			want++
		}
	}
	for claims != nil && want > 0 && ctx.Err() == nil && len(claims.List(nil)) < want {
		time.Sleep(time.Millisecond)
	}
}

func draManager(ctx context.Context, client clientset.Interface, factory informers.SharedInformerFactory) (sharedDRAManager, *assumecache.AssumeCache, error) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		return nil, nil, nil
	}
	logger := klog.FromContext(ctx)
	claims := assumecache.NewAssumeCache(logger, factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	slices, err := resourceslicetracker.StartTracker(ctx, trackerOptions(client, factory))
	if err != nil {
		return nil, nil, fmt.Errorf("resource slice tracker: %w", err)
	}
	m := dynamicresources.NewDRAManager(ctx, claims, slices, factory)
	if err := wireExtendedResources(m, factory); err != nil {
		return nil, nil, fmt.Errorf("extended resource cache: %w", err)
	}
	return m, claims, nil
}

// objectsOf lists a cluster's objects for the fake clientset.
func objectsOf(c *Cluster, extra ...*v1.Pod) []runtime.Object {
	objs := make([]runtime.Object, 0, len(c.Nodes)+len(c.Pods)+len(c.Others)+len(extra))
	for _, n := range c.Nodes {
		objs = append(objs, n)
	}
	for _, p := range c.Pods {
		objs = append(objs, p)
	}
	for _, p := range extra {
		objs = append(objs, p)
	}
	return append(objs, c.Others...)
}
