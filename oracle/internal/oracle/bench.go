package oracle

// `kube-oracle bench`: upstream's whole scheduler (scheduler.New over a fake clientset and
// its informers, binding through the binding subresource as in schedule.go) running one
// scheduler_perf workload in wall-clock time, in one process, as `kubesched bench` does with
// in-memory binds.  The ops follow scheduler_perf's executor: Nodes named generateName plus
// 5 random characters with the kubernetes.io/hostname label, labelNodePrepareStrategy's
// values round-robin in name order, Pods in namespace-<op index> unless the op names one,
// created by parallel workers while the scheduler runs, and each createPods waits until as
// many Pods of its namespace are bound as it created (unless skipWaitToCompletion); barriers
// count as upstream's runBarrierOp (the namespaces known to the workload, each's Pods created
// with skipWaitToCompletion, a labelSelector); measured phases are a createPods' with
// collectMetrics or one from startCollectingMetrics to stopCollectingMetrics.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
)

// watchBuffer is the fake tracker's channel per watch: it panics when one is full (100
// events by default), which Pods created faster than an informer reads them would do.
const watchBuffer = 1 << 16

// podCreators is how many goroutines create a createPods op's Pods (the fake clientset
// serialises them on one lock; more would only contend).
const podCreators = 4

// versionedTracker gives every object it stores a new resourceVersion, as the API server
// does.  The fake tracker keeps none, and upstream's scheduler drops an update of a pending
// Pod whose resourceVersion did not change (updatePodInSchedulingQueue): the status patch
// that sets a preemptor's nominatedNodeName would never reach its queue, so its next
// attempt would search every node instead of trying the nominated one first.
type versionedTracker struct {
	clienttesting.ObjectTracker
	version atomic.Uint64
}

func (t *versionedTracker) bump(obj runtime.Object) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatUint(t.version.Add(1), 10))
	}
}

func (t *versionedTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	t.bump(obj)
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *versionedTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.bump(obj)
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *versionedTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.bump(obj)
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

// benchWorld is one workload's cluster and scheduler.
type benchWorld struct {
	client  *fake.Clientset
	tracker *versionedTracker
	factory informers.SharedInformerFactory
	sched   *scheduler.Scheduler
	nodes   cache.SharedIndexInformer
	timer   *attemptTimer
	timeout time.Duration
	claims  *claimController // the resourceclaim controller under DynamicResourceAllocation (nil: none)

	mu        sync.Mutex
	boundNow  map[string]int // namespace -> Pods bound there now (bound, not yet deleted)
	totalBind int
	delivered deliveries
	// Pods of the informer that went through a scheduling cycle (bound or with a
	// PodScheduled condition: scheduler_perf's isAttempted), per namespace
	attempted   map[string]bool
	attemptedIn map[string]int
	podChanges  uint64 // every Pod event of the informer (a barrier with a labelSelector recounts after one)
	// upstream's numPodsScheduledPerNamespace: the namespaces known to the workload and the
	// Pods a barrier waits for in each (createPods with skipWaitToCompletion adds them, a
	// Scheduled barrier forgets the namespace)
	known      map[string]int
	collectors []*throughputCollector // the measured phases' collectors, counting binds
	phase      *throughputCollector   // the phase of startCollectingMetrics, until stopCollectingMetrics
	measured   int                    // measured phases of the workload (more than one: each named)
	label      string                 // CASE/WORKLOAD

	namesMu sync.Mutex // churn names objects beside the ops
	names   map[string]bool
}

// RunWorkload runs one workload of c (ops already checked by c.Ops) and measures it; past
// parent's deadline it stops, with an error naming the op and what it waited for.
func RunWorkload(parent context.Context, c *BenchCase, w *BenchWorkload, ops []*BenchOp, timeout time.Duration) *BenchResult {
	res := &BenchResult{Case: c.Name, Workload: w.Name, Threshold: w.Threshold.Value}
	began := time.Now()
	defer func() {
		res.WallSeconds = time.Since(began).Seconds()
		res.PeakRSSMiB = peakRSSMiB()
	}()
	restore, err := setGates(c.Gates(w))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer restore()
	ctx, cancel := context.WithCancel(parent)
	world, err := newBenchWorld(ctx, timeout, c.SchedulerConfigPath)
	if err != nil {
		cancel()
		res.Error = err.Error()
		return res
	}
	world.label = c.Name + "/" + w.Name
	for _, op := range ops {
		if op.Opcode == "stopCollectingMetrics" || (op.Opcode == "createPods" && op.CollectMetrics) {
			world.measured++
		}
	}
	stop := world.start(ctx)
	defer func() {
		if world.phase != nil { // as kubesched bench: a phase never stopped ends with the workload
			res.addPhase(world.phase.stop(), world.phase.name)
			world.phase = nil
		}
		cancel()
		stop()
		world.mu.Lock()
		res.PodsBound = world.totalBind
		world.mu.Unlock()
	}()
	for i, op := range ops {
		if err := world.run(ctx, i, op, c, res); err != nil {
			res.Error = fmt.Sprintf("op %d: %v", i, err)
			return res
		}
	}
	return res
}

// stopped says why ctx ended: its deadline (kube-oracle bench --deadline) or a cancel.
func stopped(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "deadline passed (kube-oracle bench --deadline)"
	}
	return "cancelled"
}

// newBenchWorld starts upstream's scheduler with the case's schedulerConfigPath (a
// KubeSchedulerConfiguration decoded and defaulted as scheduler_perf's loadSchedulerConfig
// does, then validated) or upstream's defaults.
func newBenchWorld(ctx context.Context, timeout time.Duration, configPath string) (*benchWorld, error) {
	var raw []byte
	if configPath != "" {
		var err error
		if raw, err = os.ReadFile(configPath); err != nil {
			return nil, err
		}
	}
	cfg, err := LoadConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configPath, err)
	}
	watch.DefaultChanSize = watchBuffer
	// The plain object tracker (not NewClientset's field-managed one): no managed fields
	// to compute on every write, as a benchmark of the scheduler wants.
	client := fake.NewSimpleClientset() //nolint:staticcheck
	tracker := &versionedTracker{ObjectTracker: client.Tracker()}
	client.PrependReactor("*", "*", clienttesting.ObjectReaction(tracker))
	client.PrependReactor("create", "pods", bindReactor(tracker))
	// The resourceclaim controller scheduler_perf runs under DynamicResourceAllocation:
	// a Pod's claims from templates (claimcontroller.go); and the API server's name for a
	// claim created with generateName (DynamicResources' claim for extended resources).
	var claims *claimController
	if draEnabled() {
		claims = &claimController{tracker: tracker}
		client.PrependReactor("create", "pods", claims.react)
	}
	client.PrependReactor("create", "resourceclaims", nameClaim)
	// kube-apiserver's Pod strategy: PodScheduled=False (SchedulingGated) on a gated Pod's
	// creation, graceful deletion and finalizers (benchdelete.go)
	client.PrependReactor("create", "pods", gateCondition)
	client.PrependReactor("delete", "pods", gracefulDelete(tracker))
	watches := recordWatches(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	noEvents := func(string) eventRecorder { return &events.FakeRecorder{} }
	sched, err := newScheduler(ctx, client, factory, noEvents, cfg)
	if err != nil {
		return nil, err
	}
	w := &benchWorld{client: client, tracker: tracker, factory: factory, sched: sched, timer: &attemptTimer{}, timeout: timeout,
		nodes: factory.Core().V1().Nodes().Informer(), boundNow: map[string]int{}, names: map[string]bool{},
		attempted: map[string]bool{}, attemptedIn: map[string]int{}, known: map[string]int{}, claims: claims}
	if err := w.delivered.watch(factory); err != nil {
		return nil, err
	}
	// Counted from the scheduler's own Pod informer, as scheduler_perf's collector does.
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.podChanged(nil, obj) },
		UpdateFunc: w.podChanged,
		DeleteFunc: w.podDeleted,
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	waitForSync(ctx, factory, watches)
	return w, nil
}

func (w *benchWorld) podChanged(oldObj, newObj any) {
	newPod, ok := newObj.(*v1.Pod)
	if !ok {
		return
	}
	w.noteAttempted(newPod)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.podChanges++
	if newPod.Spec.NodeName == "" {
		return
	}
	if oldPod, ok := oldObj.(*v1.Pod); ok && oldPod.Spec.NodeName != "" {
		return
	}
	w.boundNow[newPod.Namespace]++
	w.totalBind++
	now := time.Now()
	for _, c := range w.collectors {
		c.count(newPod, now)
	}
}

// start runs the scheduler as Scheduler.Run does, with each ScheduleOne timed from the
// moment its Pod left the queue; the returned func stops it and waits.
func (w *benchWorld) start(ctx context.Context) func() {
	logger := klog.FromContext(ctx)
	w.sched.SchedulingQueue.Run(logger)
	if w.sched.APIDispatcher != nil {
		w.sched.APIDispatcher.Run(logger)
	}
	hookNext(w.sched, w.timer)
	w.sched.SchedulePod = w.timer.wrapSchedule(w.sched.SchedulePod)
	w.sched.FailureHandler = w.timer.wrapFailure(w.sched.FailureHandler)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w.sched.ScheduleOne(ctx)
			w.timer.cycleDone()
		}
	}()
	// The fake clientset records every call with its object; nothing reads them here, and
	// keeping them would make the garbage collector (not the scheduler) the cost measured.
	go func() {
		for t := time.NewTicker(time.Second); ; {
			select {
			case <-t.C:
				w.client.ClearActions()
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}()
	return func() {
		if w.sched.APIDispatcher != nil {
			w.sched.APIDispatcher.Close()
		}
		w.sched.SchedulingQueue.Close()
		<-done
	}
}

func (w *benchWorld) run(ctx context.Context, index int, op *BenchOp, c *BenchCase, res *BenchResult) error {
	switch op.Opcode {
	case "createNodes":
		return w.createNodes(ctx, index, op)
	case "createNamespaces":
		return w.createNamespaces(ctx, op)
	case "createPods":
		ns := fmt.Sprintf("namespace-%d", index)
		if op.Namespace != nil {
			ns = *op.Namespace
		}
		return w.runCreatePods(ctx, op, ns, res)
	case "createAny":
		if op.Namespace != nil && *op.Namespace != "" {
			if err := w.createNamespaceIfNotPresent(ctx, *op.Namespace); err != nil {
				return err
			}
		}
		return w.createAny(ctx, op)
	case "updateAny":
		return w.updateAny(ctx, op)
	case "startCollectingMetrics":
		if w.phase != nil {
			return errors.New("metrics collection is overlapping. Probably second collector was started before stopping a previous one")
		}
		w.phase = startCollector(w, w.phaseName(op.Name), op.Namespaces, op.LabelSelector)
		return nil
	case "stopCollectingMetrics":
		if w.phase == nil {
			return errors.New("missing startCollectingMetrics operation before stopping")
		}
		res.addPhase(w.phase.stop(), w.phase.name)
		w.phase = nil
		return nil
	case "createPodGroups":
		if err := w.createNamespaceIfNotPresent(ctx, *op.Namespace); err != nil {
			return err
		}
		return w.createPodGroups(ctx, op)
	case "churn":
		ns := fmt.Sprintf("namespace-%d", index)
		if op.Namespace != nil {
			ns = *op.Namespace
		}
		return w.churn(ctx, op, ns)
	case "deletePods":
		return w.deletePods(ctx, op)
	case "allocResourceClaims":
		if op.Namespace != nil && *op.Namespace != "" {
			if err := w.createNamespaceIfNotPresent(ctx, *op.Namespace); err != nil {
				return err
			}
		}
		return w.allocResourceClaims(ctx, op)
	case "barrier":
		return w.barrier(ctx, op)
	case "sleep":
		d, err := time.ParseDuration(op.Duration)
		if err != nil {
			return fmt.Errorf("duration: %w", err)
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return nil
	}
	return fmt.Errorf("opcode %q not supported", op.Opcode)
}

func (w *benchWorld) createNodes(ctx context.Context, index int, op *BenchOp) error {
	var tmpl *objectTemplate
	if op.NodeTemplatePath != nil {
		var err error
		if tmpl, err = newObjectTemplate(*op.NodeTemplatePath, op.TemplateParams); err != nil {
			return err
		}
	}
	nodes := make([]*v1.Node, 0, op.count)
	for i := 0; i < op.count; i++ {
		n := baseNode(fmt.Sprintf("node-%d-", index))
		if tmpl != nil {
			var err error
			if n, err = tmpl.node(i, op.count); err != nil {
				return err
			}
		}
		if n.Name == "" {
			n.Name = w.generateName(n.GenerateName)
		}
		n.UID = uuid.NewUUID()
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[v1.LabelHostname] = n.Name
		if op.NodeAllocatable != nil {
			if err := op.NodeAllocatable.prepare(n); err != nil {
				return err
			}
		}
		nodes = append(nodes, n)
	}
	// upstream's createNodes takes one strategy: nodeAllocatableStrategy before the label one
	if s := op.LabelNodePrepare; s != nil && len(s.LabelValues) > 0 && op.NodeAllocatable == nil {
		// upstream patches the listed (name-ordered) Nodes round-robin after creating them
		sorted := append([]*v1.Node{}, nodes...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		for i, n := range sorted {
			n.Labels[s.LabelKey] = s.LabelValues[i%len(s.LabelValues)]
		}
	}
	want := len(w.nodes.GetStore().ListKeys()) + len(nodes)
	for _, n := range nodes {
		if _, err := w.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
		if op.NodeAllocatable != nil {
			if _, err := w.client.StorageV1().CSINodes().Create(ctx, op.NodeAllocatable.csiNode(n.Name), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	return w.poll(ctx, "Nodes in the scheduler's informer", func() (bool, string) {
		have := len(w.nodes.GetStore().ListKeys())
		return have >= want, fmt.Sprintf("%d of %d", have, want)
	})
}

// runCreatePods is upstream's runCreatePodsOp: the namespace made known, the Pods created
// (at once, or kept at op.count in steady state), then with skipWaitToCompletion their
// number noted for a later barrier, else a wait until as many Pods of the namespace are
// bound as the op creates; with collectMetrics a measured phase around it all.
func (w *benchWorld) runCreatePods(ctx context.Context, op *BenchOp, ns string, res *BenchResult) error {
	if err := w.createNamespaceIfNotPresent(ctx, ns); err != nil {
		return err
	}
	tmpl, err := podTemplate(op.PodTemplatePath, op.TemplateParams)
	if err != nil {
		return err
	}
	var col *throughputCollector
	if op.CollectMetrics {
		if w.phase != nil {
			return errors.New("metrics collection is overlapping. Probably second collector was started before stopping a previous one")
		}
		col = startCollector(w, w.phaseName(ns), []string{ns}, nil)
	}
	switch {
	case op.steady:
		err = w.createPodsSteadily(ctx, op, ns, tmpl)
	default:
		err = w.createPods(ctx, op, ns, tmpl)
		if err == nil && op.SkipWaitToCompletion {
			w.mu.Lock()
			w.known[ns] += op.count
			w.mu.Unlock()
		} else if err == nil {
			err = w.waitInNamespace(ctx, ns, op.count, nil, false)
		}
	}
	if col != nil {
		res.addPhase(col.stop(), col.name)
	}
	return err
}

// createNamespaceIfNotPresent creates the Namespace ns (without labels) unless the workload
// knows it already, and makes it known, as upstream's createNamespaceIfNotPresent.
func (w *benchWorld) createNamespaceIfNotPresent(ctx context.Context, ns string) error {
	w.mu.Lock()
	_, ok := w.known[ns]
	w.mu.Unlock()
	if ok {
		return nil
	}
	obj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: uuid.NewUUID()}}
	if _, err := w.client.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace for Pod: %v", ns)
	}
	w.mu.Lock()
	w.known[ns] = 0
	w.mu.Unlock()
	return nil
}

// phaseName is a measured phase's Name label, as kubesched bench gives it: CASE/WORKLOAD,
// and /name after it when the workload measures more than one phase.
func (w *benchWorld) phaseName(name string) string {
	if w.measured > 1 {
		return w.label + "/" + name
	}
	return w.label
}

// makePods renders count Pods of tmpl for ns, the i-th as template index first+i of total.
func (w *benchWorld) makePods(op *BenchOp, tmpl *objectTemplate, ns string, first, count, total int) ([]*v1.Pod, error) {
	pods := make([]*v1.Pod, count)
	for i := range pods {
		p, err := tmpl.pod(first+i, total)
		if err != nil {
			return nil, err
		}
		if p.Name == "" {
			p.Name = w.generateName(ns + "/" + p.GenerateName)[len(ns)+1:]
		}
		p.Namespace, p.UID = ns, types.UID(uuid.NewUUID())
		p.CreationTimestamp = metav1.Now()
		if op.PodTemplatePath != nil {
			if p.Labels == nil {
				p.Labels = map[string]string{}
			}
			p.Labels["signature"] = fmt.Sprintf("signature-label-%d", (first+i)/op.SignatureBatchSize)
		}
		pods[i] = p
	}
	return pods, nil
}

func (w *benchWorld) createPods(ctx context.Context, op *BenchOp, ns string, tmpl *objectTemplate) error {
	volumes, err := loadVolumeTemplates(op)
	if err != nil {
		return err
	}
	pods, err := w.makePods(op, tmpl, ns, 0, op.count, op.count)
	if err != nil {
		return err
	}
	errs := make([]error, len(pods))
	workqueue.ParallelizeUntil(ctx, podCreators, len(pods), func(i int) {
		if volumes != nil {
			if errs[i] = volumes.create(ctx, w, ns, i, pods[i]); errs[i] != nil {
				return
			}
		}
		_, errs[i] = w.client.CoreV1().Pods(ns).Create(ctx, pods[i], metav1.CreateOptions{})
	})
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("creating Pod %d: %w", i, err)
		}
	}
	return nil
}

// baseNode is scheduler_perf's Node when createNodes names no template (makeBaseNode).
func baseNode(prefix string) *v1.Node {
	res := v1.ResourceList{
		v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("32Gi"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix},
		Status: v1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy(), Phase: v1.NodeRunning,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
	}
}

// generateName is prefix plus 5 random characters, as the API server's generateName,
// unique in this world (the API server retries a taken name).
func (w *benchWorld) generateName(prefix string) string {
	w.namesMu.Lock()
	defer w.namesMu.Unlock()
	for {
		name := prefix + rand.String(5)
		if !w.names[name] {
			w.names[name] = true
			return name
		}
	}
}

// barrier is upstream's runBarrierOp: for each of its namespaces (every known one, when it
// names none) a wait until as many of the namespace's Pods (those matching labelSelector)
// are bound, or attempted (stageRequirement Attempted), as createPods ops with
// skipWaitToCompletion created there since the last Scheduled barrier on it; a Scheduled
// barrier then forgets its namespaces (all, when it names none).
func (w *benchWorld) barrier(ctx context.Context, op *BenchOp) error {
	w.mu.Lock()
	namespaces := slices.Clone(op.Namespaces)
	for _, ns := range namespaces {
		if _, ok := w.known[ns]; !ok {
			w.mu.Unlock()
			return fmt.Errorf("unknown namespace %s", ns)
		}
	}
	if len(namespaces) == 0 {
		for ns := range w.known {
			namespaces = append(namespaces, ns)
		}
		sort.Strings(namespaces)
	}
	wants := make([]int, len(namespaces))
	for i, ns := range namespaces {
		wants[i] = w.known[ns]
	}
	w.mu.Unlock()
	attempted := op.StageRequirement == "Attempted"
	for i, ns := range namespaces {
		if err := w.waitInNamespace(ctx, ns, wants[i], op.LabelSelector, attempted); err != nil {
			return fmt.Errorf("error waiting for pods in namespace %q: %w", ns, err)
		}
	}
	if !attempted {
		w.mu.Lock()
		if len(op.Namespaces) == 0 {
			w.known = map[string]int{}
		}
		for _, ns := range op.Namespaces {
			delete(w.known, ns)
		}
		w.mu.Unlock()
	}
	return nil
}

// waitInNamespace waits until want Pods of ns (those matching selector, when set) are bound
// now, or attempted, as upstream's waitUntilPodsScheduledInNamespace and
// waitUntilPodsAttemptedInNamespace count them from the scheduler's Pod informer: without a
// selector from the counts the informer's handlers keep, with one by listing the namespace
// after each change.
func (w *benchWorld) waitInNamespace(ctx context.Context, ns string, want int, selector map[string]string, attempted bool) error {
	what := fmt.Sprintf("Pods of namespace %s bound", ns)
	if attempted {
		what = fmt.Sprintf("Pods of namespace %s attempted", ns)
	}
	if len(selector) > 0 {
		what += fmt.Sprintf(" (labels %v)", selector)
	}
	lister := w.factory.Core().V1().Pods().Lister().Pods(ns)
	match := labels.SelectorFromValidatedSet(selector)
	have, seen := 0, uint64(0)
	return w.poll(ctx, what, func() (bool, string) {
		w.mu.Lock()
		changes := w.podChanges
		switch {
		case len(selector) == 0 && attempted:
			have = w.attemptedIn[ns]
		case len(selector) == 0:
			have = w.boundNow[ns]
		}
		w.mu.Unlock()
		if len(selector) > 0 && (seen == 0 || changes != seen) {
			seen, have = changes, 0
			pods, _ := lister.List(match)
			for _, p := range pods {
				if p.Spec.NodeName != "" || (attempted && hasPodScheduled(p)) {
					have++
				}
			}
		}
		return have >= want, fmt.Sprintf("%d of %d", have, want)
	})
}

// poll checks cond every millisecond until it holds or the op's timeout passes.
func (w *benchWorld) poll(ctx context.Context, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(w.timeout)
	for {
		ok, progress := cond()
		if ok {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s waiting for %s: %s", stopped(ctx), what, progress)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s: %s", w.timeout, what, progress)
		}
		time.Sleep(time.Millisecond)
	}
}
