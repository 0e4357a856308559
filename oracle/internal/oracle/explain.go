package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// ExplainRequest is what `kubesched.explain` takes: a cluster, a Pod, a configuration.
type ExplainRequest struct {
	Cluster json.RawMessage `json:"cluster"`
	Pod     json.RawMessage `json:"pod"`
	Config  json.RawMessage `json:"config"`
}

// decode reads the request's cluster, Pod and configuration.
func (r *ExplainRequest) decode() (*Cluster, *v1.Pod, *config.KubeSchedulerConfiguration, error) {
	cluster, err := DecodeCluster(r.Cluster)
	if err != nil {
		return nil, nil, nil, err
	}
	pod, err := DecodePod(r.Pod)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := LoadConfig(r.Config)
	if err != nil {
		return nil, nil, nil, err
	}
	return cluster, pod, cfg, nil
}

// NodeVerdict is one node of the answer (docs/design.md section 5 of kubesched).
type NodeVerdict struct {
	Feasible bool             `json:"feasible"`
	Plugin   *string          `json:"plugin"`
	Reasons  []string         `json:"reasons"`
	Score    int64            `json:"score"`
	Scores   map[string]int64 `json:"scores"`
}

// Preemption is what PostFilter did for an unschedulable Pod.
type Preemption struct {
	Message       string   `json:"message"`
	NominatedNode *string  `json:"nominatedNode"`
	Victims       []string `json:"victims"`
	// Choices, when a choice of upstream's (which candidates the dry run meets first, the
	// tie-break between candidates, the order of equally important victims) could change
	// the answer: every answer it can give (preemptchoices.go).
	Choices []Preemption `json:"choices,omitempty"`
}

// ExplainResult has the keys of `kubesched.explain`'s answer, plus upstream-only detail:
// topNodes (every node with the highest score: upstream picks one at random),
// fullMessage (the FailedScheduling text, PostFilter's message included) and preemption.
type ExplainResult struct {
	Pod          string                  `json:"pod"`
	Profile      string                  `json:"profile"`
	Result       string                  `json:"result"`
	SelectedNode *string                 `json:"selectedNode"`
	Message      string                  `json:"message"`
	Nodes        map[string]*NodeVerdict `json:"nodes"`
	TopNodes     []string                `json:"topNodes"`
	FullMessage  string                  `json:"fullMessage,omitempty"`
	Preemption   *Preemption             `json:"preemption,omitempty"`
}

// Explain runs upstream's PreEnqueue, PreFilter, Filter, PostFilter, PreScore, Score and
// NormalizeScore for the Pod over every node of the snapshot.
func Explain(ctx context.Context, req *ExplainRequest) (*ExplainResult, error) {
	seen := &preemptionSteer{}
	out, err := explainSteered(ctx, req, seen)
	if err != nil || out.Preemption == nil || out.Preemption.NominatedNode == nil {
		return out, err
	}
	if !seen.varied() {
		return out, nil
	}
	if out.Preemption.Choices, err = preemptionChoices(ctx, req, seen); err != nil {
		return nil, err
	}
	return out, nil
}

// explainSteered is Explain with DefaultPreemption's choices steered by s (and recorded in
// s: preemptchoices.go).
func explainSteered(ctx context.Context, req *ExplainRequest, s *preemptionSteer) (*ExplainResult, error) {
	cluster, pod, cfg, err := req.decode()
	if err != nil {
		return nil, err
	}
	pod.Spec.NodeName = ""
	out := &ExplainResult{
		Pod: pod.Namespace + "/" + pod.Name, Profile: pod.Spec.SchedulerName,
		Result: "Error", Nodes: map[string]*NodeVerdict{}, TopNodes: []string{},
	}
	running := runningPods(cluster, pod)
	s.tiedVictims = equallyImportant(running)
	if s.listed {
		listOrder(running)
	}
	pending := pendingPods(cluster, pod)
	snapshot := internalcache.NewSnapshot(running, cluster.Nodes)
	others := &Cluster{Nodes: cluster.Nodes, Pods: append(running, pending...), Others: cluster.Others}
	env, err := NewEnv(ctx, cfg, objectsOf(others, pod), snapshot, s)
	if err != nil {
		return nil, err
	}
	queueNominated(ctx, env, pending)
	f, ok := env.Frameworks[pod.Spec.SchedulerName]
	if !ok {
		out.Message = fmt.Sprintf("profile not found for scheduler name %q", pod.Spec.SchedulerName)
		return out, nil
	}
	if len(cluster.Nodes) == 0 {
		out.Message = "no nodes available to schedule pods"
		return out, nil
	}
	gate := preEnqueue(ctx, f, pod)
	evaluate(ctx, f, profileOf(cfg, pod.Spec.SchedulerName), env, snapshot, pod, out)
	if !gate.IsSuccess() {
		out.Result, out.Message, out.SelectedNode = "Gated", gate.Message(), nil
		out.FullMessage, out.Preemption = "", nil
	}
	return out, nil
}

func evaluate(ctx context.Context, f framework.Framework, prof *config.KubeSchedulerProfile,
	env *Env, snapshot *internalcache.Snapshot, pod *v1.Pod, out *ExplainResult) {
	all, _ := snapshot.NodeInfos().List()
	state := framework.NewCycleState()
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	preRes, s, narrowing := f.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = narrowing
	if !s.IsSuccess() {
		if !s.IsRejected() {
			out.Message = s.AsError().Error()
			return
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
		diagnosis.PreFilterMsg = s.Message()
		for _, n := range all {
			out.Nodes[n.Node().Name] = rejected(s, narrowing)
		}
		unschedulable(ctx, f, env, state, pod, len(all), diagnosis, out)
		return
	}
	// Upstream's findNodesThatFitPod: a Pod nominated by an earlier preemption tries its
	// nominated node first (whatever PreFilter narrowed to) and takes it if it passes every
	// Filter, without scoring; a rejection there stays in the diagnosis.  The verdicts of
	// every node are still worked out below, for the answer.
	var nominated fwk.NodeInfo
	var first *NodeVerdict
	nnn := pod.Status.NominatedNodeName
	if nnn != "" {
		if n, err := snapshot.Get(nnn); err == nil {
			st := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, n)
			if st.IsSuccess() {
				nominated = n
				first = &NodeVerdict{Feasible: true, Reasons: []string{}, Scores: map[string]int64{}}
			} else if st.IsRejected() {
				diagnosis.NodeToStatus.Set(nnn, st)
				first = rejected(st, nil)
			}
		}
	}
	nodes := all
	if !preRes.AllNodes() {
		absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(narrowing)))
		diagnosis.NodeToStatus.SetAbsentNodesStatus(absent)
		nodes = nil
		for _, n := range all {
			if preRes.NodeNames.Has(n.Node().Name) {
				nodes = append(nodes, n)
			} else {
				out.Nodes[n.Node().Name] = rejected(absent, narrowing)
			}
		}
		if first != nil && !preRes.NodeNames.Has(nnn) {
			// Left out by PreFilter, the nominated node was still filtered: its verdict
			// is that one (the diagnosis keeps its status).
			out.Nodes[nnn] = first
		}
	}
	var feasible []fwk.NodeInfo
	for _, n := range nodes {
		st := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, n)
		switch {
		case st.IsSuccess():
			feasible = append(feasible, n)
			out.Nodes[n.Node().Name] = &NodeVerdict{Feasible: true, Reasons: []string{}, Scores: map[string]int64{}}
		case st.IsRejected():
			diagnosis.NodeToStatus.Set(n.Node().Name, st)
			out.Nodes[n.Node().Name] = rejected(st, nil)
		default:
			out.Message = st.AsError().Error()
			return
		}
	}
	if len(feasible) == 0 && nominated == nil {
		unschedulable(ctx, f, env, state, pod, len(all), diagnosis, out)
		return
	}
	if err := score(ctx, f, prof, state, pod, feasible, out); err != nil && nominated == nil {
		out.Message = err.Error()
		return
	}
	out.Result = "Scheduled"
	if nominated != nil {
		name := nominated.Node().Name
		out.TopNodes, out.SelectedNode = []string{name}, &name
		out.Message = fmt.Sprintf("%d/%d nodes are feasible; selected %s, the Pod's nominated node: "+
			"the scheduler tries it first and it passes every filter", len(feasible), len(all), name)
		return
	}
	out.SelectedNode = &out.TopNodes[0]
	out.Message = fmt.Sprintf("%d/%d nodes are feasible; selected %s with score %d",
		len(feasible), len(all), out.TopNodes[0], out.Nodes[out.TopNodes[0]].Score)
}

func score(ctx context.Context, f framework.Framework, prof *config.KubeSchedulerProfile,
	state fwk.CycleState, pod *v1.Pod, feasible []fwk.NodeInfo, out *ExplainResult) error {
	best := int64(-1 << 62)
	if f.HasScorePlugins() {
		if st := f.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
			return st.AsError()
		}
		scores, st := f.RunScorePlugins(ctx, state, pod, feasible)
		if !st.IsSuccess() {
			return st.AsError()
		}
		weights := scoreWeights(prof)
		for _, ns := range scores {
			v := out.Nodes[ns.Name]
			v.Score = ns.TotalScore
			for _, ps := range ns.Scores {
				v.Scores[ps.Name] = ps.Score / max(weights[ps.Name], 1)
			}
		}
	}
	for _, n := range feasible {
		name := n.Node().Name
		switch s := out.Nodes[name].Score; {
		case s > best:
			best, out.TopNodes = s, []string{name}
		case s == best:
			out.TopNodes = append(out.TopNodes, name)
		}
	}
	sort.Strings(out.TopNodes)
	return nil
}

// unschedulable records the FitError message (without and with PostFilter's) and what
// preemption would do: the nominated node and the victims it deletes.
func unschedulable(ctx context.Context, f framework.Framework, env *Env, state fwk.CycleState,
	pod *v1.Pod, numNodes int, diagnosis framework.Diagnosis, out *ExplainResult) {
	out.Result = "Unschedulable"
	fit := &framework.FitError{Pod: pod, NumAllNodes: numNodes, Diagnosis: diagnosis}
	out.Message = fit.Error()
	if !f.HasPostFilterPlugins() {
		out.FullMessage = out.Message
		return
	}
	before := len(env.Client.Actions())
	res, st := f.RunPostFilterPlugins(ctx, state, pod, diagnosis.NodeToStatus)
	fit.Diagnosis.PostFilterMsg = st.Message()
	out.FullMessage = fit.Error()
	p := &Preemption{Message: st.Message(), Victims: []string{}}
	if res != nil && res.NominatingInfo != nil && res.NominatedNodeName != "" {
		name := res.NominatedNodeName
		p.NominatedNode = &name
	}
	for _, a := range env.Client.Actions()[before:] {
		if d, ok := a.(testing.DeleteAction); ok && d.GetResource().Resource == "pods" {
			p.Victims = append(p.Victims, d.GetNamespace()+"/"+d.GetName())
		}
	}
	sort.Strings(p.Victims)
	out.Preemption = p
}

// preEnqueue runs the PreEnqueue plugins as the scheduling queue does before a Pod may
// enter activeQ: the first one that does not succeed keeps it out.
func preEnqueue(ctx context.Context, f framework.Framework, pod *v1.Pod) *fwk.Status {
	for _, pl := range f.PreEnqueuePlugins() {
		if st := pl.PreEnqueue(ctx, pod); !st.IsSuccess() {
			return st.WithPlugin(pl.Name())
		}
	}
	return nil
}

func rejected(s *fwk.Status, narrowing sets.Set[string]) *NodeVerdict {
	v := &NodeVerdict{Reasons: s.Reasons(), Scores: map[string]int64{}}
	if v.Reasons == nil {
		v.Reasons = []string{}
	}
	plugin := s.Plugin()
	if plugin == "" && narrowing.Len() > 0 {
		plugin = sets.List(narrowing)[0]
	}
	if plugin != "" {
		v.Plugin = &plugin
	}
	return v
}

// runningPods are the snapshot's Pods bound to a listed node and not finished; the Pod
// being explained is taken out (it is placed anew).
func runningPods(c *Cluster, pod *v1.Pod) []*v1.Pod {
	nodes := sets.New[string]()
	for _, n := range c.Nodes {
		nodes.Insert(n.Name)
	}
	var out []*v1.Pod
	for _, p := range c.Pods {
		if p.Namespace == pod.Namespace && p.Name == pod.Name {
			continue
		}
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if nodes.Has(p.Spec.NodeName) {
			out = append(out, p)
		}
	}
	return out
}

// pendingPods are the snapshot's Pods not bound to a node and not finished, other than the
// one being explained: those the scheduler's informer hands to its queue.
func pendingPods(c *Cluster, pod *v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range c.Pods {
		if p.Namespace == pod.Namespace && p.Name == pod.Name {
			continue
		}
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

// queueNominated adds the pending Pods with a nominated node that a profile is responsible
// for to the queue, as kube-scheduler's Pod informer does: the queue runs their PreEnqueue
// plugins and nominates those that enter activeQ, so Filter counts them on their node
// (addGENominatedPods: priority at least the incoming Pod's) and preemption sees them.
func queueNominated(ctx context.Context, env *Env, pending []*v1.Pod) {
	for _, p := range pending {
		if _, ok := env.Frameworks[p.Spec.SchedulerName]; ok && p.Status.NominatedNodeName != "" {
			queueAdd(ctx, env.Queue, p)
		}
	}
}

func profileOf(cfg *config.KubeSchedulerConfiguration, name string) *config.KubeSchedulerProfile {
	for i := range cfg.Profiles {
		if cfg.Profiles[i].SchedulerName == name {
			return &cfg.Profiles[i]
		}
	}
	return nil
}

// scoreWeights are the profile's Score weights as the framework uses them: a MultiPoint
// plugin's weight unless the Score list names the plugin again; 0 means 1.
func scoreWeights(prof *config.KubeSchedulerProfile) map[string]int64 {
	w := map[string]int64{}
	if prof.Plugins == nil {
		return w
	}
	for _, set := range []config.PluginSet{prof.Plugins.MultiPoint, prof.Plugins.Score} {
		for _, p := range set.Enabled {
			w[p.Name] = max(int64(p.Weight), 1)
		}
	}
	return w
}
