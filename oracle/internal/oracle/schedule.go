package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/utils/clock"
)

// ScheduleRequest is what `kubesched.schedule` takes: a cluster, the Pods to submit, a
// configuration.  Pods may hold other objects too (a scheduling.k8s.io Workload or PodGroup
// created between a gang's members): each is created in its place in the order below.
type ScheduleRequest struct {
	Cluster json.RawMessage   `json:"cluster"`
	Pods    []json.RawMessage `json:"pods"`
	Config  json.RawMessage   `json:"config"`
	// VolumeFaults: what the API server, the PV controller or a provisioner does wrong with
	// VolumeBinding's PreBind writes, per object (pvcontroller.go, "Faults").
	VolumeFaults map[string]string `json:"volumeFaults,omitempty"`
	// ClaimFaults: what the API server or another writer does to DynamicResources' writes of
	// a ResourceClaim, per claim (claimfaults.go).
	ClaimFaults map[string]string `json:"claimFaults,omitempty"`
	// BindFaults: what the API server does to the binding subresource's writes, per Pod
	// ("Pod/<namespace>/<name>"): refuseBinding answers every binding of that Pod Forbidden
	// (DefaultBinder's Bind fails, through the clientset or the API dispatcher).
	BindFaults map[string]string `json:"bindFaults,omitempty"`
}

// PodOutcome is one submitted Pod's fate, in `kubesched.schedule`'s keys.
type PodOutcome struct {
	Result        string   `json:"result"`
	Node          *string  `json:"node"`
	Message       string   `json:"message"`
	Attempts      int      `json:"attempts"`
	NominatedNode *string  `json:"nominatedNode,omitempty"`
	Victims       []string `json:"victims,omitempty"`
	PreemptedBy   string   `json:"preemptedBy,omitempty"`
}

// ScheduleResult maps ns/name to the Pod's outcome.
type ScheduleResult struct {
	Pods map[string]*PodOutcome `json:"pods"`
}

// QuietFor is how long nothing may change before a run counts as settled.
const QuietFor = 300 * time.Millisecond

// Schedule runs upstream's whole scheduler (scheduler.New over a fake clientset and its
// informers, binding through the binding subresource) on the cluster, creates the Pods (and
// the other objects among them) in creationTimestamp order (input order for ties) and waits
// until it is quiet: nothing in activeQ or backoffQ but Pods failing with errors
// (waitQuiet), every Pod bound, rejected at least once, gated (its scheduling gates or a
// PreEnqueue plugin: a gang short of members) or waiting at Permit, nothing changed for
// QuietFor.  A Pod still waiting at Permit then can only be released by its wait's end (a
// gang's is five minutes): the wait is ended at once with the message its timer gives
// (expireWaiting), and the run waits to be quiet again, at most permitRounds times.  A Pod
// whose last attempt failed with an error (not a rejection) is an Error, as in
// kubesched.schedule.  Deletions take effect at once (the fake clientset has no grace
// period).
func Schedule(ctx context.Context, req *ScheduleRequest, timeout time.Duration) (*ScheduleResult, error) {
	cluster, err := DecodeCluster(req.Cluster)
	if err != nil {
		return nil, err
	}
	cfg, err := LoadConfig(req.Config)
	if err != nil {
		return nil, err
	}
	var submitted []runtime.Object
	for i, raw := range req.Pods {
		obj, err := decodeSubmitted(raw)
		if err != nil {
			return nil, fmt.Errorf("pods[%d]: %w", i, err)
		}
		if obj != nil {
			submitted = append(submitted, obj)
		}
	}
	sort.SliceStable(submitted, func(i, j int) bool {
		a, b := creationOf(submitted[i]), creationOf(submitted[j])
		return a.Before(&b)
	})
	var pods []*v1.Pod
	for _, obj := range submitted {
		if p, ok := obj.(*v1.Pod); ok {
			pods = append(pods, p)
		}
	}
	// kube-scheduler's Pod informer never lists finished Pods (a field selector the fake
	// clientset does not apply, so they are left out here).
	var live []*v1.Pod
	for _, p := range cluster.Pods {
		if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			live = append(live, p)
		}
	}
	// Every object is stored with a resourceVersion and every write gives a new one, as the
	// API server does: VolumeBinding's assume caches parse them and take only newer ones.
	objs := objectsOf(&Cluster{Nodes: cluster.Nodes, Pods: live, Others: cluster.Others})
	top := stampVersions(objs)
	client := fake.NewClientset(objs...)
	tracker := &versionedTracker{ObjectTracker: client.Tracker()}
	tracker.version.Store(top)
	client.PrependReactor("*", "*", clienttesting.ObjectReaction(tracker))
	client.PrependReactor("create", "pods", bindReactor(tracker))
	client.PrependReactor("create", "pods", refuseBindings(req.BindFaults))
	// The PV controller's and a provisioner's part in VolumeBinding's PreBind (pvcontroller.go).
	volumes := &pvController{tracker: tracker, faults: req.VolumeFaults}
	client.PrependReactor("update", "persistentvolumes", volumes.react)
	client.PrependReactor("update", "persistentvolumeclaims", volumes.react)
	// The resourceclaim controller's part: a Pod's claims from templates (claimcontroller.go).
	claims := &claimController{tracker: tracker}
	client.PrependReactor("create", "pods", claims.react)
	// The API server's name for a claim created with generateName, and its UID
	// (DynamicResources' claim for a Pod's extended resources, DRAExtendedResource).
	client.PrependReactor("create", "resourceclaims", nameClaim)
	// The API server's part in DynamicResources' claim writes: declared faults, the size of
	// status.reservedFor (claimfaults.go).
	watches := recordWatches(client)
	rec := newRecorder()
	// Before the faulter (reactors run last-prepended first): a refused write changes nothing.
	client.PrependReactor("update", "resourceclaims", rec.deallocationReactor(tracker))
	faulter := &claimFaulter{tracker: tracker, faults: req.ClaimFaults}
	client.PrependReactor("update", "resourceclaims", faulter.react)
	client.PrependReactor("delete", "pods", rec.releaseReactor)
	client.PrependReactor("patch", "pods", rec.nominationReactor(tracker))
	factory := informers.NewSharedInformerFactory(client, 0)
	queueClock := &jumpClock{}
	sched, err := newScheduler(ctx, client, factory, func(string) eventRecorder { return rec }, cfg,
		scheduler.WithClock(queueClock))
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	waitForSync(ctx, factory, watches)
	// Every Pod is queued before the first cycle (all are submitted at once, as in
	// kubesched.schedule): the queue then orders them by priority, then arrival.
	queued := 0
	for _, obj := range submitted {
		if err := create(ctx, client, obj); err != nil {
			return nil, err
		}
		// A Pod submitted bound (spec.nodeName: a running Pod that arrives in order, e.g. a
		// preemption's victim to be) is never queued.
		if p, ok := obj.(*v1.Pod); ok && profileKnown(sched, p) && p.Spec.NodeName == "" {
			queued++
		}
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(time.Millisecond) {
		if pending, _ := sched.SchedulingQueue.PendingPods(); len(pending) >= queued {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pods not queued after %v", timeout)
		}
	}
	// A PodGroup created after its first member (the last object of a request, at times)
	// must reach the scheduler before its first cycle, as kubesched observes every object
	// before its virtual time starts: else a lower group's cycle may come first (v1.37 seed
	// 19002 case 8).  The add handler then queues the group right after caching it.
	for deadline := time.Now().Add(timeout); !groupsHeld(sched, factory, submitted); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pod groups not in the scheduler's informers after %v", timeout)
		}
	}
	time.Sleep(groupSettle)
	go sched.Run(ctx)
	deadline := time.Now().Add(timeout)
	var watch *waitWatch            // from the first round on: when Pods begin to wait at Permit
	ended := map[string]time.Time{} // each gang's last wait ended, as scheduled
	defer func() { watch.close() }()
	for round := 0; ; round++ {
		if err := waitQuiet(ctx, sched, rec, tracker, pods, time.Until(deadline)); err != nil {
			return nil, err
		}
		if round == permitRounds {
			break
		}
		var n int
		watch, n, err = expireWaiting(sched, queueClock, rec, pods, watch, ended, deadline)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	return outcomes(ctx, client, sched, rec, pods), nil
}

// groupSettle is how long a run waits, once the scheduler holds every submitted PodGroup,
// for the add handlers that cached them to queue them too (the next statements of the same
// handler: microseconds).
const groupSettle = 5 * time.Millisecond

// permitRounds is how many times a run ends the Permit waits of Pods left waiting when it
// is quiet (expireWaiting) before it answers: a gang rejected at its timeout is retried only
// when something changes, so one round is the rule; more are a bound.
const permitRounds = 3

// gangPermitTimeout is how long GangScheduling's Permit makes a member wait for its gang
// (v1.35's DefaultSchedulingTimeoutDuration, later releases' permitTimeoutDuration).  In
// v1.35 a later member waits for what is left of the group's deadline (expireWaiting ends
// the waits in the groups' deadlines' order; its message says the whole five minutes).
const gangPermitTimeout = 5 * time.Minute

// jumpClock is the scheduling queue's clock: the wall clock moved forward by every Permit
// wait kube-oracle ends early (expireWaiting).  Upstream ends a gang's wait after five real
// minutes, long after every Pod that failed before it finished backing off (at most
// podMaxBackoffSeconds, 10 s): the failure's move sends them to activeQ, where they are
// tried before the members the timeout rejected.  Ended after QuietFor instead, the wait
// would leave them backing off, in backoffQ behind those members.  Timers and tickers stay
// the wall clock's (the queue's periodic flushes).
type jumpClock struct {
	clock.RealClock
	offset atomic.Int64
}

// Now is the wall clock plus every jump so far.
func (c *jumpClock) Now() time.Time { return c.RealClock.Now().Add(time.Duration(c.offset.Load())) }

// Since is the time elapsed since t on this clock.
func (c *jumpClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// jump moves the clock forward by d.
func (c *jumpClock) jump(d time.Duration) { c.offset.Add(int64(d)) }

// expireWaiting ends the wait of every Pod of pods waiting at Permit as its timer would (the
// framework's waitingPod: "rejected due to timeout after waiting %v at plugin %v"), the
// queue's clock first moved on by the wait (jumpClock), and says how many there were.  The
// waits end in their deadlines' order, as far apart in wall time as the deadlines are: in
// v1.35 a gang's deadline is set when its first member begins to wait (permitDeadline), so
// a gang that began to wait a few cycles after another times out those few cycles after it,
// and the retries the first timeout sets off race the second as they do upstream (ended at
// once, the second gang's members were back in the queue before any retry).  A member that
// begins to wait before its gang's deadline, in those cycles, is rejected with the others
// (upstream's timer waits what is left of the deadline).  Each ending is a release (rec).
// Returns once every wait it ends has ended, with the watch (watchWaits, started by the
// first call, for the v1.35 gangs only) that tells when Pods began to wait.
//
// A gang that waits again after its wait was ended keeps, in wall time, the deadline of its
// first wait (v1.35's SchedulingTimeout sets a new one only once the old one has passed, on
// the wall clock: here seconds ago, upstream five minutes); upstream's had passed, so its
// new deadline is five minutes after the gang began to wait again (ended: when its last
// wait ended): the waits of one round end as far apart as the gangs began to wait, a few
// cycles (before session 25 a gang waiting again counted five minutes more, past the
// deadlines of the gangs that first waited in that round and past the run's timeout: v1.35
// seeds 24352 cases 132 and 134 were refused).  A round whose ends are still further apart
// than the run's timeout leaves fails with an error rather than outliving it.
func expireWaiting(sched *scheduler.Scheduler, queueClock *jumpClock, rec *recorder, pods []*v1.Pod, watch *waitWatch, ended map[string]time.Time, deadline time.Time) (*waitWatch, int, error) {
	due := map[string]time.Time{}  // each gang's deadline, read once
	waiting := map[types.UID]any{} // the waits ended now, by Pod
	n := 0
	for _, p := range pods {
		f, ok := sched.Profiles[p.Spec.SchedulerName]
		if !ok {
			continue
		}
		wp := f.GetWaitingPod(p.UID)
		if wp == nil {
			continue
		}
		waiting[p.UID] = wp
		gang, left := permitDeadline(f, wp.GetPod())
		if _, ok := due[gang]; !ok {
			due[gang] = time.Now().Add(left)
			if since, seen := watch.began(gang, ended[gang]); seen {
				due[gang] = since.Add(gangPermitTimeout)
			}
		}
		n++
	}
	if n == 0 {
		return watch, 0, nil
	}
	var first, last time.Time
	for _, at := range due {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if spread := last.Sub(first); time.Now().Add(spread).After(deadline) {
		return watch, 0, fmt.Errorf("the Permit waits end %v apart, past the run's timeout (%v left)", spread, time.Until(deadline).Round(time.Millisecond))
	}
	gangs := len(due)
	if _, ok := due[""]; ok {
		gangs-- // waits of no v1.35 gang: ended at once
	}
	if watch == nil && gangs > 0 {
		watch = watchWaits(sched, pods, waiting)
	}
	queueClock.jump(gangPermitTimeout)
	start := time.Now()
	var done sync.WaitGroup
	for gang, at := range due {
		after := at.Sub(first)
		ended[gang] = start.Add(after)
		done.Add(1)
		time.AfterFunc(after, func() {
			defer done.Done()
			rec.release()
		})
		// One timer per member, as upstream's: each ends the member's wait if it is waiting
		// then (one it began since this round began too).
		for _, p := range pods {
			f, ok := sched.Profiles[p.Spec.SchedulerName]
			if !ok {
				continue
			}
			done.Add(1)
			time.AfterFunc(after, func() {
				defer done.Done()
				wp := f.GetWaitingPod(p.UID)
				if wp == nil {
					return
				}
				if g, _ := permitDeadline(f, wp.GetPod()); g != gang {
					return
				}
				waited := gangPermitTimeout
				if waiting[p.UID] != any(wp) {
					if since, ok := watch.startOf(p.UID, wp); ok {
						waited = time.Since(since)
					}
				}
				watch.end(wp)
				for _, plugin := range wp.GetPendingPlugins() {
					wp.Reject(plugin, fmt.Sprintf("rejected due to timeout after waiting %v at plugin %v", waited, plugin))
				}
			})
		}
	}
	done.Wait()
	return watch, n, nil
}

// waitWatch notes when Pods begin to wait at Permit: a wait the framework lists that it had
// not seen (watchWaits looks every waitPoll; no hook of the framework tells when a wait
// begins).  A nil watch knows of no wait.
type waitWatch struct {
	mu     sync.Mutex
	known  map[types.UID]any // the wait last seen of each Pod
	ended  map[any]bool      // the waits expireWaiting ended (listed until their cycle ends)
	starts []waitStart
	stop   chan struct{}
	done   chan struct{}
}

// waitStart is a wait seen beginning: whose, its gang (permitDeadline's key), and when.
type waitStart struct {
	uid  types.UID
	wait any
	gang string
	at   time.Time
}

// waitPoll is how often watchWaits looks for Pods waiting at Permit: gangs that begin to
// wait less apart (a few scheduling cycles, 0.1 to 1 ms each in kube-oracle's logs) may be
// seen at the same look, and their waits then end together.  Looking every 50 µs cost the
// scheduler's own pace on a loaded machine (seed 24352 case 126's saved answer, a race of
// a few ms, 1 of 6 asks, 3 of 6 without the watch: session 25).
const waitPoll = time.Millisecond

// watchWaits starts a watch of the waits of pods, those in known (by Pod) begun already.
func watchWaits(sched *scheduler.Scheduler, pods []*v1.Pod, known map[types.UID]any) *waitWatch {
	w := &waitWatch{known: map[types.UID]any{}, ended: map[any]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	for uid, wp := range known {
		w.known[uid] = wp
	}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(waitPoll)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			now := time.Now()
			for _, p := range pods {
				f, ok := sched.Profiles[p.Spec.SchedulerName]
				if !ok {
					continue
				}
				wp := f.GetWaitingPod(p.UID)
				if wp == nil {
					continue
				}
				w.mu.Lock()
				if w.known[p.UID] != any(wp) && !w.ended[wp] {
					w.known[p.UID] = wp
					// The gang has a deadline already (the member's Permit read it), so
					// permitDeadline sets none.
					gang, _ := permitDeadline(f, wp.GetPod())
					w.starts = append(w.starts, waitStart{uid: p.UID, wait: wp, gang: gang, at: now})
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// began says when gang first began a wait after its last one ended (after) that was not
// ended by expireWaiting: what upstream's new deadline counts from.
func (w *waitWatch) began(gang string, after time.Time) (time.Time, bool) {
	if w == nil || gang == "" {
		return time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.starts {
		if s.gang == gang && s.at.After(after) && !w.ended[s.wait] {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// startOf says when the wait wp of the Pod uid was seen beginning.
func (w *waitWatch) startOf(uid types.UID, wp any) (time.Time, bool) {
	if w == nil {
		return time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.starts {
		if s.uid == uid && s.wait == wp {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// end notes that expireWaiting ends the wait wp.
func (w *waitWatch) end(wp any) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended[wp] = true
}

// close stops the watch.
func (w *waitWatch) close() {
	if w == nil {
		return
	}
	close(w.stop)
	<-w.done
}

// decodeSubmitted decodes one entry of the request's pods: a Pod (its apiVersion and kind
// defaulted), or another object with its own (nil: a kind client-go does not know).
func decodeSubmitted(raw json.RawMessage) (runtime.Object, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if head.Kind == "" || head.Kind == "Pod" {
		return DecodePod(raw)
	}
	return DecodeObject(raw)
}

func creationOf(obj runtime.Object) metav1.Time {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetCreationTimestamp()
	}
	return metav1.Time{}
}

// create creates a submitted object through the fake clientset (its reactors: a Pod's
// claims, resource versions), as a client's POST would.
func create(ctx context.Context, client *fake.Clientset, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if p, ok := obj.(*v1.Pod); ok {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	}
	kinds, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	asCreated(obj)
	if m.GetNamespace() == "" {
		m.SetNamespace(metav1.NamespaceDefault)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(kinds[0])
	if _, err := client.Invokes(clienttesting.NewCreateAction(gvr, m.GetNamespace(), obj), nil); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", kinds[0].Kind, m.GetNamespace(), m.GetName(), err)
	}
	return nil
}

// nameClaim gives a created ResourceClaim a name from its generateName and a UID, as the
// API server does (the fake clientset does neither); the create goes on to the tracker.
func nameClaim(action clienttesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(clienttesting.CreateAction)
	if !ok || create.GetSubresource() != "" {
		return false, nil, nil
	}
	obj, err := meta.Accessor(create.GetObject())
	if err != nil {
		return false, nil, nil
	}
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		obj.SetName(names.SimpleNameGenerator.GenerateName(obj.GetGenerateName()))
	}
	if obj.GetUID() == "" {
		obj.SetUID(uuid.NewUUID())
	}
	return false, nil, nil
}

// bindReactor makes the binding subresource set spec.nodeName, as the API server does.
func bindReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateAction)
		if !ok || create.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := create.GetObject().(*v1.Binding)
		gvr := v1.SchemeGroupVersion.WithResource("pods")
		obj, err := tracker.Get(gvr, b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, fmt.Errorf("pod %s/%s is already assigned to node %q", b.Namespace, b.Name, pod.Spec.NodeName)
		}
		pod.Spec.NodeName = b.Target.Name
		return true, b, tracker.Update(gvr, pod, b.Namespace)
	}
}

// refuseBindings is the API server refusing the bindings the request's bindFaults name
// (refuseBinding: Forbidden, every time), before bindReactor sees them.
func refuseBindings(faults map[string]string) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateAction)
		if !ok || create.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := create.GetObject().(*v1.Binding)
		if faults["Pod/"+b.Namespace+"/"+b.Name] != "refuseBinding" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(v1.Resource("pods/binding"), b.Name,
			fmt.Errorf("refused (the case's bindFaults)"))
	}
}

// recorder keeps the scheduler's Events per Pod: Scheduled and FailedScheduling, in order.
type recorder struct {
	mu     sync.Mutex
	events map[string][]string  // ns/name -> reasons
	notes  map[string]string    // ns/name -> last note
	last   map[string]time.Time // ns/name -> when its last Event came
	prev   map[string]time.Time // ns/name -> when the Event before its last came
	// deleted is when a Pod was last deleted (a preemption's victim).
	deleted time.Time
	// deallocating: a ResourceClaim was deallocated (deallocationReactor) and no rejection
	// has come since; retryDue: the Pods whose last rejection came after one (in the same
	// attempt), their retry still to come.
	deallocating bool
	retryDue     map[string]bool
	// changed is when the last Event came; released when the run last gave something back
	// (a Pod deleted, a Permit wait ended): a retry after it may answer differently.
	changed, released time.Time
}

func newRecorder() *recorder {
	now := time.Now()
	return &recorder{events: map[string][]string{}, notes: map[string]string{},
		last: map[string]time.Time{}, prev: map[string]time.Time{}, changed: now, released: now,
		retryDue: map[string]bool{}}
}

// release notes that something was given back (see released).
func (r *recorder) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released, r.changed = time.Now(), time.Now()
}

// releaseReactor notes every Pod deletion (preemption's victims) as a release.
func (r *recorder) releaseReactor(clienttesting.Action) (bool, runtime.Object, error) {
	r.release()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = r.released
	return false, nil, nil
}

// deallocationReactor notes a ResourceClaim's status written without the allocation its
// stored copy has (DynamicResources' PostFilter, or from v1.37 its PodGroupPostFilter,
// deallocating a claim to make room) as a release, like a deletion: it comes in the attempt
// the member's next Event reports, and v1.37 sends the failed PodGroup to backoffQ with no
// unschedulable plugin, so only its retry after the backoff, with the devices now free,
// answers differently (it may schedule): waitQuiet waits for it (deallocatedInLastAttempt).
func (r *recorder) deallocationReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		u, ok := a.(clienttesting.UpdateAction)
		if !ok || u.GetSubresource() != "status" {
			return false, nil, nil
		}
		claim, ok := u.GetObject().(*resourceapi.ResourceClaim)
		if !ok || claim.Status.Allocation != nil {
			return false, nil, nil
		}
		obj, err := tracker.Get(claimsGVR, claim.Namespace, claim.Name)
		if err != nil || obj.(*resourceapi.ResourceClaim).Status.Allocation == nil {
			return false, nil, nil
		}
		r.release()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.deallocating = true
		return false, nil, nil
	}
}

// deallocatedInLastAttempt tells whether a ResourceClaim was deallocated in the attempt
// key's last Event reports (the PostFilter that rejected it freed the claim's devices).
// Such a Pod is retried (v1.37: its PodGroup from backoffQ, the member itself parked beside
// the queues meanwhile) and may then schedule.
func (r *recorder) deallocatedInLastAttempt(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retryDue[key]
}

// nominationReactor notes a group member newly nominated (its status patched with another
// nominatedNodeName: its group's preemption found room) as a release.  The patch follows
// the member's FailedScheduling Event, and with synchronous preemption the victims were
// deleted before it: the member's retry will answer differently.
func (r *recorder) nominationReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || p.GetSubresource() != "status" {
			return false, nil, nil
		}
		var body struct {
			Status struct {
				NominatedNodeName *string `json:"nominatedNodeName"`
			} `json:"status"`
		}
		if json.Unmarshal(p.GetPatch(), &body) != nil || body.Status.NominatedNodeName == nil || *body.Status.NominatedNodeName == "" {
			return false, nil, nil
		}
		obj, err := tracker.Get(podsGVR, p.GetNamespace(), p.GetName())
		if err != nil {
			return false, nil, nil
		}
		if pod := obj.(*v1.Pod); groupMember(pod) && pod.Status.NominatedNodeName != *body.Status.NominatedNodeName {
			r.release()
		}
		return false, nil, nil
	}
}

// rejectedSinceRelease tells whether key's last Event came after the last release, and no
// Pod was deleted between its last two Events: a retry of it with nothing changed since
// then gives the same answer.  A deletion there may be the member's own group preempting
// in the attempt its last Event reports (synchronous preemption deletes the victims before
// the rejection), keeping its nomination: the retry after its backoff then binds it.
func (r *recorder) rejectedSinceRelease(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ownPreemption := r.deleted.After(r.prev[key]) && r.deleted.Before(r.last[key])
	return len(r.events[key]) > 0 && r.last[key].After(r.released) && !ownPreemption
}

func (r *recorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...interface{}) {
	pod, ok := regarding.(*v1.Pod)
	if !ok {
		return
	}
	key := pod.Namespace + "/" + pod.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[key] = append(r.events[key], reason)
	r.notes[key] = fmt.Sprintf(note, args...)
	r.changed = time.Now()
	r.prev[key] = r.last[key]
	r.last[key] = r.changed
	// A deallocation is the PostFilter's of the attempt the next rejection reports (cycles
	// are serial); any later Event of that Pod is its retry's.
	delete(r.retryDue, key)
	if r.deallocating && reason == "FailedScheduling" {
		r.retryDue[key], r.deallocating = true, false
	}
}

// WithLogger is the recorder itself (events.EventRecorderLogger).
func (r *recorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

func (r *recorder) seen(key string) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events[key]), r.changed
}

// lastChange is when the last Event of a Pod other than spinning ones came, or the last
// release if later.
func (r *recorder) lastChange(spinning map[string]bool) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.released
	for key, t := range r.last {
		if !spinning[key] && t.After(last) {
			last = t
		}
	}
	return last
}

// spinAttempts is how many attempts make a Pod count as spinning: v1.36 retries a PodGroup
// whose quorum is met but some member does not fit at once, without backoff, for ever (one
// cycle every few microseconds, each giving that member the same answer); such a member
// neither keeps the run from settling nor counts as a change.
const spinAttempts = 200

// errorAttempts is how many attempts a Pod whose last one failed with an error (not a
// rejection: its PodScheduled condition says SchedulerError) must have had before the run
// may settle with it still retrying: upstream retries such a Pod with backoff for ever
// (kubesched's schedule answers Error), and one error may be transient (a Conflict in
// PreBind) and followed by a success.
const errorAttempts = 3

// waitQuiet waits until every Pod in activeQ or backoffQ is there for good (failing with
// errors, each attempted errorAttempts times; spinning; or, in backoffQ, a group member
// rejected again since the last release: a PodGroup's cycle that fails goes to backoffQ
// and is retried for ever, with the same answer while nothing is given back), every Pod attempted at least once, gated or waiting
// at Permit, none rejected in an attempt that deallocated a claim and not retried since,
// and nothing changed for QuietFor.
func waitQuiet(ctx context.Context, sched *scheduler.Scheduler, rec *recorder, tracker clienttesting.ObjectTracker, pods []*v1.Pod, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		pending, summary := sched.SchedulingQueue.PendingPods()
		counts := queueCounts(summary)
		if len(counts) < 3 || counts[0]+counts[1]+counts[2] > len(pending) {
			continue
		}
		active, backoff, unschedulable := counts[0], counts[1], counts[2]
		spinning := map[string]bool{}
		for _, p := range pods {
			key := p.Namespace + "/" + p.Name
			if n, _ := rec.seen(key); n >= spinAttempts {
				spinning[key] = true
			}
		}
		settled := true
		for i, p := range pending[:active+backoff] {
			key := p.Namespace + "/" + p.Name
			n, _ := rec.seen(key)
			failing := n >= errorAttempts && schedulerError(tracker, p)
			retried := i >= active && groupMember(p) && !schedulerError(tracker, p) && rec.rejectedSinceRelease(key)
			if !failing && !retried && !spinning[key] {
				settled = false
			}
		}
		// v1.37 lists, after the three queues, the members waiting for their PodGroup or
		// for their group's requeue: parked.
		uids := map[types.UID]bool{}
		for _, p := range pending[active+backoff+unschedulable:] {
			uids[p.UID] = true
		}
		for _, p := range pods {
			n, _ := rec.seen(p.Namespace + "/" + p.Name)
			if n == 0 && p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) == 0 && profileKnown(sched, p) && !parked(sched, p, uids) {
				settled = false
			}
			if n > 0 && rec.deallocatedInLastAttempt(p.Namespace+"/"+p.Name) {
				settled = false // its retry (after a PodGroup's backoff) is still to come
			}
		}
		if settled && inFlight(sched, tracker, rec, pods, pending) {
			settled = false
		}
		if settled && time.Since(rec.lastChange(spinning)) >= QuietFor {
			return nil
		}
	}
	return fmt.Errorf("not quiet after %v", timeout)
}

// parked tells whether p waits for something the run will not bring about by itself: a
// PreEnqueue plugin keeps it out of activeQ (GangScheduling: its gang short of members, or
// its group missing), it waits at Permit (for its gang), or it is pending outside the
// queues (v1.37 keeps a member whose PodGroup is not there yet, or whose group is in
// flight, beside them: pending holds those).
func parked(sched *scheduler.Scheduler, p *v1.Pod, pending map[types.UID]bool) bool {
	if f, ok := sched.Profiles[p.Spec.SchedulerName]; ok && f.GetWaitingPod(p.UID) != nil {
		return true
	}
	if pending[p.UID] {
		return true
	}
	qp, ok := queuedPod(sched.SchedulingQueue, p)
	return ok && qp.Gated()
}

// queueCounts are the numbers of PendingPods' summary, in order ("activeQ:1; backoffQ:0;
// unschedulablePods:2", v1.37 naming its third unschedulableEntities and adding the group
// members' two stores).
func queueCounts(summary string) []int {
	var out []int
	for _, part := range strings.Split(summary, ";") {
		_, num, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil {
			return nil
		}
		out = append(out, n)
	}
	return out
}

// schedulerError tells whether p's stored PodScheduled condition says its last attempt
// failed with an error (handleSchedulingFailure's reason SchedulerError).
func schedulerError(tracker clienttesting.ObjectTracker, p *v1.Pod) bool {
	obj, err := tracker.Get(podsGVR, p.Namespace, p.Name)
	if err != nil {
		return false
	}
	return errorCondition(obj.(*v1.Pod))
}

func errorCondition(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonSchedulerError
		}
	}
	return false
}

// inFlight tells whether a Pod attempted before is in none of the queues and neither bound,
// deleted nor waiting at Permit: popped for its next attempt (from backoffQ at once when
// activeQ is empty, SchedulerPopFromBackoffQ) and not yet through it.  Without this the
// run could settle on the previous attempt's answer (a Pod whose PreBind write was refused,
// retried right after the other Pod bound: tests/oracle/test_bind_faults.py).  Members of a
// PodGroup are left to the checks above (a release may hold them outside the queues).
func inFlight(sched *scheduler.Scheduler, tracker clienttesting.ObjectTracker, rec *recorder, pods []*v1.Pod, pending []*v1.Pod) bool {
	queued := make(map[types.UID]bool, len(pending))
	for _, p := range pending {
		queued[p.UID] = true
	}
	for _, p := range pods {
		if n, _ := rec.seen(p.Namespace + "/" + p.Name); n == 0 || queued[p.UID] || groupMember(p) {
			continue
		}
		obj, err := tracker.Get(podsGVR, p.Namespace, p.Name)
		if err != nil || obj.(*v1.Pod).Spec.NodeName != "" {
			continue
		}
		if f, ok := sched.Profiles[p.Spec.SchedulerName]; !ok || f.GetWaitingPod(p.UID) != nil {
			continue
		}
		return true
	}
	return false
}

func profileKnown(sched *scheduler.Scheduler, p *v1.Pod) bool {
	_, ok := sched.Profiles[p.Spec.SchedulerName]
	return ok
}

func outcomes(ctx context.Context, client *fake.Clientset, sched *scheduler.Scheduler, rec *recorder, pods []*v1.Pod) *ScheduleResult {
	deleted := map[string]bool{}
	for _, a := range client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
			deleted[d.GetNamespace()+"/"+d.GetName()] = true
		}
	}
	// Every Pod is read before the recorder is locked: the scheduler may still be deleting
	// a victim, and the fake clientset calls the recorder's reactor under its own lock.
	current := make([]*v1.Pod, len(pods))
	missing := make([]error, len(pods))
	for i, p := range pods {
		current[i], missing[i] = client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	}
	res := &ScheduleResult{Pods: map[string]*PodOutcome{}}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, p := range pods {
		key := p.Namespace + "/" + p.Name
		out := &PodOutcome{Message: rec.notes[key]}
		for _, reason := range rec.events[key] {
			if reason == "Scheduled" || reason == "FailedScheduling" {
				out.Attempts++
			}
		}
		cur, err := current[i], missing[i]
		switch {
		case err != nil && deleted[key]:
			out.Result = "Preempted"
		case err != nil:
			out.Result = "Error"
		case cur.Spec.NodeName != "":
			node := cur.Spec.NodeName
			out.Result, out.Node = "Scheduled", &node
		case len(cur.Spec.SchedulingGates) > 0:
			out.Result = "Gated"
			out.Message = fmt.Sprintf("waiting for scheduling gates: %v", gateNames(cur))
		case out.Attempts == 0 && gatedBy(ctx, sched, cur) != "":
			out.Result, out.Message = "Gated", gatedBy(ctx, sched, cur)
		case errorCondition(cur):
			out.Result = "Error"
		default:
			out.Result = "Unschedulable"
			if nn := cur.Status.NominatedNodeName; nn != "" {
				out.NominatedNode = &nn
			}
		}
		res.Pods[key] = out
	}
	return res
}

// gatedBy is the message of the PreEnqueue plugin keeping p out of activeQ, if one does
// (upstream writes it to no Event: it is the plugin's status, as explain reports it): a
// Pod the queue holds as gated, or one pending outside the queues (parked).
func gatedBy(ctx context.Context, sched *scheduler.Scheduler, p *v1.Pod) string {
	f, known := sched.Profiles[p.Spec.SchedulerName]
	if !known {
		return ""
	}
	if qp, ok := queuedPod(sched.SchedulingQueue, p); ok && !qp.Gated() && !groupMember(p) {
		return ""
	}
	if st := preEnqueue(ctx, f, p); !st.IsSuccess() {
		return st.Message()
	}
	return ""
}

func gateNames(p *v1.Pod) []string {
	names := make([]string, 0, len(p.Spec.SchedulingGates))
	for _, g := range p.Spec.SchedulingGates {
		names = append(names, g.Name)
	}
	return names
}
