package oracle

// What a measured phase of `kube-oracle bench` reports, in `kubesched bench`'s perf-dash
// shape (docs/design.md section 5):
//   - SchedulingThroughput: scheduler_perf's throughputCollector (util.go): Pods of the
//     measured namespace seen bound, sampled every second of wall time from the first tick
//     after the first bind, the first interval dropped, an interval with no bind stretched
//     into the next sample; Average and nearest-rank PercN.  As kubesched does (and upstream
//     does not), a phase too short for two samples reports Pods bound / time to the last
//     bind, marked short (one sample is the tail after the dropped first interval).  That
//     time opens at the later of the phase's start and the last bind of an uncounted Pod
//     before the first counted one, as upstream's samples begin only once a measured Pod
//     is bound (misc's SchedulingDeletedPodsWithFinalizers queues 5,000 other Pods ahead).
//   - SchedulingAttemptDuration: every ScheduleOne of the phase timed from the moment its Pod
//     left the queue until the binding goroutine was started (or the failure handled): the
//     scheduling cycle, exact.
//   - SchedulingAttemptDurationByResult, EvaluatedNodes, FeasibleNodes per result (scheduled,
//     unschedulable, error): the same exact times split by the attempt's outcome (Count
//     attempts, Nominated the fraction popped with a nominated node, Perc10 the tenth
//     percentile), and the nodes upstream's
//     search evaluated and found feasible (ScheduleResult's counts; after a FitError, the
//     nodes given a status), for kubesched calibrate.
//   - scheduler_scheduling_attempt_duration_seconds per result: upstream's histogram over the
//     phase, quantiles interpolated in its buckets as PromQL does (coarse below 1 ms).  Its
//     "scheduled" series runs to the end of the binding cycle (bindingCycle observes it), so
//     it also counts the wait of the binding goroutine behind the next attempts.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

type schedulePodFn = func(context.Context, framework.Framework, fwk.CycleState, scheduledPod) (scheduler.ScheduleResult, error)

const attemptMetric = "scheduler_scheduling_attempt_duration_seconds"

// DataItem is one perf-dash item.
type DataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

// BenchResult is one workload's outcome.
type BenchResult struct {
	Case, Workload string
	Items          []DataItem
	Threshold      float64
	Failures       []string
	Error          string
	ShortRun       bool
	PodsBound      int
	WallSeconds    float64
	PeakRSSMiB     float64
}

// attemptTimer times scheduling cycles while on (one goroutine runs ScheduleOne), and
// records what each did: its result, the nodes upstream's search evaluated and found
// feasible (ScheduleResult's counts; on a FitError the nodes given a status), and whether
// the Pod came out of the queue with a nominated node (the fast path of preemption).
type attemptTimer struct {
	popped    time.Time
	got       bool
	nominated bool
	evaluated int
	feasible  int
	mu        sync.Mutex
	failed    string // result of a failure handled in this cycle ("" when scheduled)
	on        bool
	times     []float64 // seconds
	byResult  map[string]*resultAttempts
}

// resultAttempts is every timed attempt of one result.
type resultAttempts struct {
	times, evaluated, feasible []float64
	nominated                  int
}

// pop starts the cycle of pi, the Pod the scheduler popped (nil: none; hookNext).
func (t *attemptTimer) pop(pi *framework.QueuedPodInfo) {
	t.got = pi != nil && pi.Pod != nil
	t.nominated = t.got && pi.Pod.Status.NominatedNodeName != ""
	t.evaluated, t.feasible = 0, 0
	t.mu.Lock()
	t.popped, t.failed = time.Now(), ""
	t.mu.Unlock()
}

// wrapSchedule records the search's node counts.
func (t *attemptTimer) wrapSchedule(f schedulePodFn) schedulePodFn {
	return func(ctx context.Context, fw framework.Framework, state fwk.CycleState, pod scheduledPod) (scheduler.ScheduleResult, error) {
		r, err := f(ctx, fw, state, pod)
		t.evaluated, t.feasible = r.EvaluatedNodes, r.FeasibleNodes
		var fit *framework.FitError
		if errors.As(err, &fit) {
			t.evaluated = fit.Diagnosis.NodeToStatus.Len()
		}
		return r, err
	}
}

// wrapFailure notes a failure of the current cycle (a binding cycle's failure, handled on
// its own goroutine, started before the cycle's Pod was popped and is not counted).
func (t *attemptTimer) wrapFailure(f scheduler.FailureHandlerFn) scheduler.FailureHandlerFn {
	return func(ctx context.Context, fw framework.Framework, pi *framework.QueuedPodInfo, status *fwk.Status, ni *nominatingInfo, start time.Time) {
		t.mu.Lock()
		if !start.Before(t.popped) {
			t.failed = "error"
			if status.IsRejected() {
				t.failed = "unschedulable"
			}
		}
		t.mu.Unlock()
		f(ctx, fw, pi, status, ni, start)
	}
}

func (t *attemptTimer) cycleDone() {
	if !t.got {
		return
	}
	d := time.Since(t.popped).Seconds()
	t.got = false
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return
	}
	t.times = append(t.times, d)
	result := t.failed
	if result == "" {
		result = "scheduled"
	}
	r := t.byResult[result]
	if r == nil {
		r = &resultAttempts{}
		t.byResult[result] = r
	}
	r.times = append(r.times, d)
	r.evaluated = append(r.evaluated, float64(t.evaluated))
	r.feasible = append(r.feasible, float64(t.feasible))
	if t.nominated {
		r.nominated++
	}
}

// throughputCollector samples one measured phase (see the file comment): the binds of
// the Pods of its namespaces that match its labelSelector, counted from its start, as
// upstream's throughputCollector counts them from the scheduler's Pod informer.
type throughputCollector struct {
	world      *benchWorld
	name       string
	namespaces map[string]bool
	selector   map[string]string
	begin      time.Time
	hist0      map[string]*histogram
	quit       chan struct{}
	done       chan struct{}
	samples    []float64
	boundLast  time.Time
	openedAt   time.Time
	scheduled  int       // guarded by world.mu
	lastBind   time.Time // guarded by world.mu
	opened     time.Time // guarded by world.mu: the last uncounted bind before a counted one
}

func startCollector(w *benchWorld, name string, namespaces []string, selector map[string]string) *throughputCollector {
	c := &throughputCollector{world: w, name: name, namespaces: map[string]bool{}, selector: selector,
		begin: time.Now(), hist0: gatherAttempts(), quit: make(chan struct{}), done: make(chan struct{})}
	c.opened = c.begin
	for _, ns := range namespaces {
		c.namespaces[ns] = true
	}
	w.timer.mu.Lock()
	w.timer.on, w.timer.times, w.timer.byResult = true, nil, map[string]*resultAttempts{}
	w.timer.mu.Unlock()
	w.mu.Lock()
	w.collectors = append(w.collectors, c)
	w.mu.Unlock()
	go c.run()
	return c
}

// count notes pod's bind at now when the phase counts it (called with world.mu held).
func (c *throughputCollector) count(pod *v1.Pod, now time.Time) {
	if !c.counts(pod) {
		if c.scheduled == 0 {
			c.opened = now
		}
		return
	}
	c.scheduled++
	c.lastBind = now
}

// counts says whether the phase counts pod's bind.
func (c *throughputCollector) counts(pod *v1.Pod) bool {
	if !c.namespaces[pod.Namespace] {
		return false
	}
	for k, v := range c.selector {
		if got, ok := pod.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (c *throughputCollector) bound() int {
	c.world.mu.Lock()
	defer c.world.mu.Unlock()
	c.boundLast, c.openedAt = c.lastBind, c.opened
	return c.scheduled
}

func (c *throughputCollector) run() {
	defer close(c.done)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	last, lastTime, started, skipped := c.bound(), time.Now(), false, 0
	for {
		select {
		case <-c.quit:
			return
		case <-ticker.C:
			now := time.Now()
			n := c.bound()
			switch {
			case n == 0:
			case !started:
				started, last, lastTime = true, n, now
			case n == last:
				skipped++
			default:
				tp := float64(n-last) / now.Sub(lastTime).Seconds()
				for i := 0; i <= skipped; i++ {
					c.samples = append(c.samples, tp)
				}
				last, lastTime, skipped = n, now, 0
			}
		}
	}
}

// phase is what stop measured.
type phase struct {
	throughput map[string]float64
	short      bool
	attempts   []float64
	histograms map[string]*histogram
	byResult   map[string]*resultAttempts
}

func (c *throughputCollector) stop() *phase {
	close(c.quit)
	<-c.done
	c.world.mu.Lock()
	c.world.collectors = slices.DeleteFunc(c.world.collectors, func(x *throughputCollector) bool { return x == c })
	c.world.mu.Unlock()
	p := &phase{histograms: map[string]*histogram{}}
	t := c.world.timer
	t.mu.Lock()
	t.on, p.attempts, p.byResult = false, t.times, t.byResult
	t.mu.Unlock()
	for result, h := range gatherAttempts() {
		p.histograms[result] = h.minus(c.hist0[result])
	}
	if len(c.samples) > 1 {
		p.throughput = percentiles(c.samples, 1)
		return p
	}
	if n := c.bound(); n > 0 && c.boundLast.After(c.openedAt) {
		rate := float64(n) / c.boundLast.Sub(c.openedAt).Seconds()
		p.throughput, p.short = percentiles([]float64{rate}, 1), true
	}
	return p
}

// addPhase appends a phase's items and checks the threshold as upstream does (Average of
// SchedulingThroughput above it).
func (r *BenchResult) addPhase(p *phase, name string) {
	if p.throughput != nil {
		if r.Threshold > 0 {
			p.throughput["AverageThreshold"] = r.Threshold
			if avg := p.throughput["Average"]; avg <= r.Threshold {
				r.Failures = append(r.Failures, fmt.Sprintf("%s: expected SchedulingThroughput Average to be higher: got %.2f, want %g", name, avg, r.Threshold))
			}
		}
		r.ShortRun = p.short
		r.Items = append(r.Items, DataItem{p.throughput, "pods/s", map[string]string{"Metric": "SchedulingThroughput", "Name": name}})
	} else if r.Threshold > 0 {
		r.Failures = append(r.Failures, name+": no data present for SchedulingThroughput Average")
	}
	if len(p.attempts) > 0 {
		r.Items = append(r.Items, DataItem{percentiles(p.attempts, 1000), "ms", map[string]string{"Metric": "SchedulingAttemptDuration", "Name": name}})
	}
	for _, result := range []string{"scheduled", "unschedulable", "error"} {
		if h := p.histograms[result]; h != nil && h.count > 0 {
			r.Items = append(r.Items, DataItem{h.quantiles(), "ms", map[string]string{"Metric": attemptMetric, "Name": name, "result": result}})
		}
	}
	for _, result := range []string{"scheduled", "unschedulable", "error"} {
		a := p.byResult[result]
		if a == nil {
			continue
		}
		labels := func(metric string) map[string]string {
			return map[string]string{"Metric": metric, "Name": name, "result": result}
		}
		times := percentiles(a.times, 1000)
		times["Count"] = float64(len(a.times))
		sorted := append([]float64{}, a.times...)
		sort.Float64s(sorted)
		times["Perc10"] = sorted[len(sorted)/10] * 1000
		times["Nominated"] = float64(a.nominated) / float64(len(a.times))
		r.Items = append(r.Items,
			DataItem{times, "ms", labels("SchedulingAttemptDurationByResult")},
			DataItem{percentiles(a.evaluated, 1), "nodes", labels("EvaluatedNodes")},
			DataItem{percentiles(a.feasible, 1), "nodes", labels("FeasibleNodes")})
	}
}

// percentiles gives Average and upstream's nearest-rank Perc50..99 of values, times scale.
func percentiles(values []float64, scale float64) map[string]float64 {
	v := append([]float64{}, values...)
	sort.Float64s(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	out := map[string]float64{"Average": sum / float64(len(v)) * scale}
	for _, p := range []int{50, 90, 95, 99} {
		out[fmt.Sprintf("Perc%d", p)] = v[int(math.Ceil(float64(len(v)*p)/100))-1] * scale
	}
	return out
}

// histogram is one series of the attempt-duration histogram: cumulative bucket counts.
type histogram struct {
	bounds     []float64
	cumulative []float64
	sum        float64
	count      float64
}

// gatherAttempts reads scheduler_scheduling_attempt_duration_seconds by result label.
func gatherAttempts() map[string]*histogram {
	out := map[string]*histogram{}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != attemptMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			out[labelValue(m, "result")] = fromDTO(m.GetHistogram())
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func fromDTO(h *dto.Histogram) *histogram {
	out := &histogram{sum: h.GetSampleSum(), count: float64(h.GetSampleCount())}
	for _, b := range h.GetBucket() {
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.cumulative = append(out.cumulative, float64(b.GetCumulativeCount()))
	}
	return out
}

func (h *histogram) minus(before *histogram) *histogram {
	if before == nil {
		return h
	}
	out := &histogram{bounds: h.bounds, sum: h.sum - before.sum, count: h.count - before.count}
	for i, c := range h.cumulative {
		out.cumulative = append(out.cumulative, c-before.cumulative[i])
	}
	return out
}

// quantiles in ms, as PromQL's histogram_quantile (the +Inf bucket is implicit in count).
func (h *histogram) quantiles() map[string]float64 {
	out := map[string]float64{"Average": h.sum / h.count * 1000}
	for _, p := range []int{50, 90, 95, 99} {
		rank := float64(p) / 100 * h.count
		q := h.bounds[len(h.bounds)-1]
		for b, c := range h.cumulative {
			if c >= rank {
				start, prev := 0.0, 0.0
				if b > 0 {
					start, prev = h.bounds[b-1], h.cumulative[b-1]
				}
				q = start + (h.bounds[b]-start)*(rank-prev)/(c-prev)
				break
			}
		}
		out[fmt.Sprintf("Perc%d", p)] = q * 1000
	}
	return out
}

// SummaryLine is `kubesched bench`'s one line per workload.
func (r *BenchResult) SummaryLine() string {
	parts := []string{r.Case + "/" + r.Workload}
	if tp := r.metric("SchedulingThroughput"); tp != nil {
		short := ""
		if r.ShortRun {
			short = "; short run: total/elapsed"
		}
		parts = append(parts, fmt.Sprintf("%.1f pods/s (p50 %.1f, p90 %.1f, p99 %.1f%s)", tp["Average"], tp["Perc50"], tp["Perc90"], tp["Perc99"], short))
	} else {
		parts = append(parts, "no throughput measured")
	}
	if at := r.metric("SchedulingAttemptDuration"); at != nil {
		parts = append(parts, fmt.Sprintf("attempt p50 %.3f ms, p99 %.3f ms", at["Perc50"], at["Perc99"]))
	}
	parts = append(parts, fmt.Sprintf("%d pods bound in %.1f s, peak RSS %.0f MiB", r.PodsBound, r.WallSeconds, r.PeakRSSMiB))
	switch {
	case r.Error != "":
		parts = append(parts, "ERROR: "+r.Error)
	case len(r.Failures) > 0:
		parts = append(parts, "FAIL: "+strings.Join(r.Failures, "; "))
	case r.Threshold > 0:
		parts = append(parts, fmt.Sprintf("threshold %g: ok", r.Threshold))
	}
	return strings.Join(parts, ", ")
}

// OK is finished and above the threshold.
func (r *BenchResult) OK() bool { return r.Error == "" && len(r.Failures) == 0 }

func (r *BenchResult) metric(name string) map[string]float64 {
	for _, it := range r.Items {
		if it.Labels["Metric"] == name {
			return it.Data
		}
	}
	return nil
}

// peakRSSMiB is the process's peak resident memory (VmHWM).
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// PerfDashItems lists every result's items, in order.
func PerfDashItems(results []*BenchResult) []DataItem {
	items := []DataItem{}
	for _, r := range results {
		items = append(items, r.Items...)
	}
	return items
}
