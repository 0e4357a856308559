package oracle

// Upstream's preemption may answer in more than one way for the same request. Its dry run
// walks the potential nodes in a map's order (NodeToStatus.NodesForStatusCode) from a random
// offset (GetOffsetAndNumCandidates) and stops once it has DefaultPreemptionArgs' number of
// candidates with one not violating a PodDisruptionBudget; pickOneNodeForPreemption breaks a
// tie left after its five criteria by a map's order; and victims on a node are taken in the
// order of MoreImportantPod (priority, then start time), Pods equal in both in the order of
// the node's Pods in the scheduler's cache, which depends on its history. explain answers
// once as upstream does and, when one of these choices could change that answer, lists every
// answer upstream can give (Preemption.Choices), each from upstream's own PostFilter:
//
//   - a survey run looks for every candidate (the number of candidates steered to all the
//     potential nodes) and records each one's victims;
//   - a candidate N can be chosen when it is the best of all (ties included), or when it
//     violates no budget and at least k-1 other candidates are not strictly better than it
//     (k the candidates upstream looks for: the dry run may meet N and those first and stop);
//     a candidate that violates a budget loses to any that does not, and the dry run goes
//     on until it has one;
//   - one run per such N, the pick steered to N, gives upstream's answer for it;
//   - with two Pods on a node equal in priority and start time, the same again with the
//     Pods in the order a freshly started scheduler lists them (namespace, then name).

import (
	"context"
	"math"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// preemptionSteer steers DefaultPreemption's choices and records what they were among.
type preemptionSteer struct {
	survey bool   // look for a candidate on every potential node
	pick   string // the candidate SelectCandidate takes (when there are several)
	listed bool   // the nodes' Pods in the API server's list order, not the request's
	// Seen in the run: the potential nodes and the candidates the dry run looks for; the
	// candidates SelectCandidate chose among and those upstream's criteria leave tied; and
	// whether a node holds Pods MoreImportantPod cannot order (equallyImportant).
	numNodes, numCandidates int32
	candidates              map[string]*extenderv1.Victims
	tied                    []string
	tiedVictims             bool
}

// varied says whether a choice of upstream's could have changed the run's answer.
func (s *preemptionSteer) varied() bool {
	return s.numCandidates < s.numNodes || len(s.tied) > 1 || s.tiedVictims
}

// steered is DefaultPreemption's preemption.Interface with its choices steered.
type steered struct {
	preemption.Interface
	s *preemptionSteer
}

func (p *steered) GetOffsetAndNumCandidates(n int32) (int32, int32) {
	offset, num := p.Interface.GetOffsetAndNumCandidates(n)
	p.s.numNodes, p.s.numCandidates = n, num
	if p.s.survey {
		return 0, n
	}
	return offset, num
}

// OrderedScoreFuncs records the candidates and those upstream's criteria leave tied and,
// with a pick, returns a criterion that only the picked candidate satisfies.
func (p *steered) OrderedScoreFuncs(ctx context.Context, m map[string]*extenderv1.Victims) []func(string) int64 {
	funcs := p.Interface.OrderedScoreFuncs(ctx, m)
	criteria := funcs
	if len(criteria) == 0 {
		criteria = defaultScoreFuncs(m)
	}
	p.s.candidates = m
	p.s.tied = tiedAfter(m, criteria)
	if p.s.pick == "" {
		return funcs
	}
	pick := p.s.pick
	return []func(string) int64{func(node string) int64 {
		if node == pick {
			return 1
		}
		return 0
	}}
}

// tiedAfter are the candidates of m (sorted) that every criterion leaves among its best, as
// pickOneNodeForPreemption narrows them.
func tiedAfter(m map[string]*extenderv1.Victims, criteria []func(string) int64) []string {
	alive := make([]string, 0, len(m))
	for node := range m {
		alive = append(alive, node)
	}
	sort.Strings(alive)
	for _, f := range criteria {
		if len(alive) <= 1 {
			break
		}
		best, kept := int64(math.MinInt64), []string{}
		for _, node := range alive {
			switch score := f(node); {
			case score > best:
				best, kept = score, []string{node}
			case score == best:
				kept = append(kept, node)
			}
		}
		alive = kept
	}
	return alive
}

// choosable are the candidates of m (sorted) upstream may pick when its dry run looks for k
// candidates: see the file's comment.
func choosable(m map[string]*extenderv1.Victims, k int) []string {
	criteria := defaultScoreFuncs(m)
	better := func(a, b string) bool {
		for _, f := range criteria {
			if fa, fb := f(a), f(b); fa != fb {
				return fa > fb
			}
		}
		return false
	}
	var out []string
	for n, v := range m {
		best, notBetter := true, 0
		for o := range m {
			switch {
			case o == n:
			case better(o, n):
				best = false
			default:
				notBetter++
			}
		}
		if best || (v.NumPDBViolations == 0 && notBetter >= k-1) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// defaultScoreFuncs are pickOneNodeForPreemption's criteria when the plugin names none
// (upstream's own, v1.34 to v1.37): fewest PDB violations, lowest highest victim priority,
// smallest sum of priorities, fewest victims, latest start of the highest-priority victims.
func defaultScoreFuncs(m map[string]*extenderv1.Victims) []func(string) int64 {
	return []func(string) int64{
		func(node string) int64 { return -m[node].NumPDBViolations },
		func(node string) int64 { return -int64(corev1helpers.PodPriority(m[node].Pods[0])) },
		func(node string) int64 {
			var sum int64
			for _, pod := range m[node].Pods {
				sum += int64(corev1helpers.PodPriority(pod)) + int64(math.MaxInt32+1)
			}
			return -sum
		},
		func(node string) int64 { return -int64(len(m[node].Pods)) },
		func(node string) int64 {
			if t := util.GetEarliestPodStartTime(m[node]); t != nil {
				return t.UnixNano()
			}
			return math.MinInt64
		},
	}
}

// steerPreemption makes the registry's DefaultPreemption steered by s.
func steerPreemption[H, P any](factory func(context.Context, runtime.Object, H) (P, error),
	s *preemptionSteer) func(context.Context, runtime.Object, H) (P, error) {
	return func(ctx context.Context, args runtime.Object, h H) (P, error) {
		pl, err := factory(ctx, args, h)
		if dp, ok := any(pl).(*defaultpreemption.DefaultPreemption); ok && err == nil {
			dp.Evaluator.Interface = &steered{Interface: dp.Evaluator.Interface, s: s}
		}
		return pl, err
	}
}

// preemptionChoices are the distinct answers upstream's preemption can give the request
// (seen: what the first run saw).
func preemptionChoices(ctx context.Context, req *ExplainRequest, seen *preemptionSteer) ([]Preemption, error) {
	var out []Preemption
	add := func(p *Preemption) {
		if p == nil {
			return
		}
		for i := range out {
			if samePreemption(p, &out[i]) {
				return
			}
		}
		c := *p
		c.Choices = nil
		out = append(out, c)
	}
	orders := []bool{false}
	if seen.tiedVictims {
		orders = append(orders, true)
	}
	for _, listed := range orders {
		survey := &preemptionSteer{survey: true, listed: listed}
		res, err := explainSteered(ctx, req, survey)
		if err != nil {
			return nil, err
		}
		if survey.candidates == nil { // one candidate: the only answer
			add(res.Preemption)
			continue
		}
		for _, node := range choosable(survey.candidates, int(seen.numCandidates)) {
			s := &preemptionSteer{survey: true, pick: node, listed: listed}
			res, err := explainSteered(ctx, req, s)
			if err != nil {
				return nil, err
			}
			add(res.Preemption)
		}
	}
	return out, nil
}

// equallyImportant says whether a node holds two Pods upstream's MoreImportantPod cannot
// order (the same priority and start time), whose order as victims is then the cache's.
func equallyImportant(running []*v1.Pod) bool {
	type key struct {
		node     string
		priority int32
		start    string
	}
	seen := sets.New[key]()
	for _, p := range running {
		start := ""
		if p.Status.StartTime != nil {
			start = p.Status.StartTime.UTC().String()
		}
		k := key{p.Spec.NodeName, corev1helpers.PodPriority(p), start}
		if seen.Has(k) {
			return true
		}
		seen.Insert(k)
	}
	return false
}

// listOrder sorts pods as the API server lists them (by namespace, then name).
func listOrder(pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}

func samePreemption(a, b *Preemption) bool {
	node := func(p *Preemption) string {
		if p.NominatedNode == nil {
			return ""
		}
		return *p.NominatedNode
	}
	return a.Message == b.Message && node(a) == node(b) && slices.Equal(a.Victims, b.Victims)
}
