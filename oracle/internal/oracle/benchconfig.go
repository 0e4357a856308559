package oracle

// This file reads scheduler_perf-format configs (test/integration/scheduler_perf's
// performance-config.yaml: a list of test cases, each a workloadTemplate of ops and its
// workloads' params) for `kube-oracle bench`: the subset of ops that upstream's
// SchedulingBasic, SchedulingPodAntiAffinity, TopologySpreading, SchedulingNodeAffinity and
// PreemptionBasic cases use, v1.37's misc and affinity suites' (deletePods, churn in both
// modes, barrier's stageRequirement Attempted, createPodSets unrolled as upstream's
// unrollWorkloadTemplate, createNamespaces' namespaceTemplatePath; benchdelete.go), the dra
// suites' allocResourceClaims (v1.37 only: benchalloc_1_37.go) and createPods' steadyState
// (benchsteady.go), the event_handling and starvation suites' updateAny (benchupdate.go),
// startCollectingMetrics / stopCollectingMetrics and barrier's labelSelector (bench.go), and
// the volumes suite's (SchedulingInTreePVs,
// SchedulingMigratedInTreePVs, SchedulingCSIPVs, PreemptionPVs: createPods with
// persistentVolumeTemplatePath and persistentVolumeClaimTemplatePath, createNodes with
// nodeAllocatableStrategy; benchvolumes.go).  scheduler_perf itself is a test package of k8s.io/kubernetes
// (its op types and parser are unexported and it starts a real API server), so the subset
// is reimplemented here; templates are rendered and decoded as upstream does (text/template
// with Index and Count, sigs.k8s.io/yaml), then defaulted as the API server would.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// BenchCase is one test case of a config.
type BenchCase struct {
	Name                   string            `json:"name"`
	DefaultPodTemplatePath *string           `json:"defaultPodTemplatePath"`
	WorkloadTemplate       []json.RawMessage `json:"workloadTemplate"`
	Workloads              []BenchWorkload   `json:"workloads"`
	Labels                 []string          `json:"labels"`
	FeatureGates           map[string]bool   `json:"featureGates"`
	SchedulerConfigPath    string            `json:"schedulerConfigPath"`
}

// BenchWorkload is one workload: the params its ops refer to by `$name`.
type BenchWorkload struct {
	Name         string          `json:"name"`
	Labels       []string        `json:"labels"`
	Params       map[string]any  `json:"params"`
	Threshold    BenchThreshold  `json:"threshold"`
	FeatureGates map[string]bool `json:"featureGates"`
}

// BenchThreshold is a workload's threshold as upstream's `thresholds`: one number, or a map
// from topic (the suite name a Go test passes to RunBenchmarkPerfScheduling, "dra" ...) to
// number.  kube-oracle bench has no topic, so a map counts as its "" entry (0: unchecked),
// as `kubesched bench` reads it.
type BenchThreshold struct {
	Value   float64
	ByTopic map[string]float64
}

// UnmarshalJSON reads a number or a topic map, as upstream's thresholds.UnmarshalJSON.
func (t *BenchThreshold) UnmarshalJSON(text []byte) error {
	if errFloat := json.Unmarshal(text, &t.Value); errFloat != nil {
		if errMap := json.Unmarshal(text, &t.ByTopic); errMap != nil {
			return fmt.Errorf("expected either float64 or topic name -> float64 map: %w, %w", errFloat, errMap)
		}
		t.Value = t.ByTopic[""]
	}
	return nil
}

// Gates are the feature gates a workload runs under: its case's, overridden by its own
// (upstream's featureGatesMerge).
func (c *BenchCase) Gates(w *BenchWorkload) map[string]bool {
	gates := map[string]bool{}
	maps.Copy(gates, c.FeatureGates)
	maps.Copy(gates, w.FeatureGates)
	return gates
}

// BenchOp is every op field kube-oracle understands; others are rejected by name.
type BenchOp struct {
	Opcode               string   `json:"opcode"`
	Count                *int     `json:"count"`
	CountParam           string   `json:"countParam"`
	NodeTemplatePath     *string  `json:"nodeTemplatePath"`
	PodTemplatePath      *string  `json:"podTemplatePath"`
	Namespace            *string  `json:"namespace"`
	Prefix               string   `json:"prefix"`
	CollectMetrics       bool     `json:"collectMetrics"`
	SkipWaitToCompletion bool     `json:"skipWaitToCompletion"`
	Namespaces           []string `json:"namespaces"`
	StageRequirement     string   `json:"stageRequirement"` // barrier: "" or Scheduled, Attempted
	Duration             string   `json:"duration"`
	LabelNodePrepare     *struct {
		LabelKey    string   `json:"labelKey"`
		LabelValues []string `json:"labelValues"`
	} `json:"labelNodePrepareStrategy"`
	NodeAllocatable *NodeAllocatableStrategy `json:"nodeAllocatableStrategy"`
	PVTemplatePath  *string                  `json:"persistentVolumeTemplatePath"`
	PVCTemplatePath *string                  `json:"persistentVolumeClaimTemplatePath"`
	// createPods with a podTemplatePath: every SignatureBatchSize (default 1) Pods share a
	// "signature" label, as upstream's podTemplateWithParams
	CountMultiplierParam    string `json:"countMultiplierParam"` // createPods: count times this parameter
	SignatureBatchSize      int    `json:"signatureBatchSize"`
	SignatureBatchSizeParam string `json:"signatureBatchSizeParam"`
	// createAny: one object per Count (default 1) from TemplatePath, with TemplateParams
	// (also createPods' and createNodes') beside .Index and .Count in the template
	TemplatePath   string         `json:"templatePath"`
	TemplateParams map[string]any `json:"templateParams"`
	// churn: every IntervalMilliseconds (default 500) one object of each of TemplatePaths
	// (any kind, plain YAML), until Number (0: no limit) rounds (mode create), or created
	// and deleted in turn in Number slots for as long as the workload runs (mode recreate)
	Mode                 string   `json:"mode"`
	Number               int      `json:"number"`
	IntervalMilliseconds int64    `json:"intervalMilliseconds"`
	TemplatePaths        []string `json:"templatePaths"`
	// barrier and deletePods: only the Pods with these labels (empty: every Pod)
	LabelSelector map[string]string `json:"labelSelector"`
	// deletePods: one Pod per 1/DeletePodsPerSecond seconds (0: all at once)
	DeletePodsPerSecond int `json:"deletePodsPerSecond"`
	// createNamespaces: each Namespace a copy of this file's, named <prefix>-<i>
	NamespaceTemplatePath *string `json:"namespaceTemplatePath"`
	// createPodSets: Count copies of CreatePodsOp, the i-th in namespace <NamespacePrefix>-<i>
	NamespacePrefix string          `json:"namespacePrefix"`
	CreatePodsOp    json.RawMessage `json:"createPodsOp"`
	// createPods' steadyState (or its parameter): Count Pods created, then each Pod seen
	// bound deleted and a new one created, until Duration (sleep's field; or its parameter)
	// has passed (benchsteady.go)
	SteadyState      bool   `json:"steadyState"`
	SteadyStateParam string `json:"steadyStateParam"`
	DurationParam    string `json:"durationParam"`
	// startCollectingMetrics: the phase's name (Namespaces and LabelSelector: the Pods whose
	// binds it counts); stopCollectingMetrics ends it
	Name string `json:"name"`
	// updateAny (benchupdate.go): Count (default 1) objects of TemplatePath rewritten,
	// UpdatePerSecond a second (0: all at once), through Subresources (Pod "resize")
	UpdatePerSecond int      `json:"updatePerSecond"`
	Subresources    []string `json:"subresources"`

	count    int           // resolved from Count or CountParam
	steady   bool          // createPods: steadyState, resolved from SteadyStateParam
	duration time.Duration // createPods in steady state: Duration or DurationParam
}

// benchOpcodes are the ops kube-oracle bench runs.
var benchOpcodes = []string{"createNodes", "createNamespaces", "createPods", "createPodSets", "deletePods", "allocResourceClaims", "createAny", "updateAny", "createPodGroups", "barrier", "sleep", "churn", "startCollectingMetrics", "stopCollectingMetrics"}

// LoadBenchConfig reads a config file (YAML or JSON).
func LoadBenchConfig(path string) ([]BenchCase, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []BenchCase
	if err := yaml.Unmarshal(raw, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	for i := range cases {
		if p := cases[i].DefaultPodTemplatePath; p != nil {
			abs := resolvePath(dir, *p)
			cases[i].DefaultPodTemplatePath = &abs
		}
		if p := cases[i].SchedulerConfigPath; p != "" {
			cases[i].SchedulerConfigPath = resolvePath(dir, p)
		}
	}
	return cases, nil
}

func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// Selected reports whether a workload passes --case, --workload (NAME or CASE/NAME) and
// the label filter (L must be among the case's and workload's labels, -L must not).
func Selected(c *BenchCase, w *BenchWorkload, caseName, workloadName string, labels []string) bool {
	if caseName != "" && c.Name != caseName {
		return false
	}
	if workloadName != "" && w.Name != workloadName && c.Name+"/"+w.Name != workloadName {
		return false
	}
	have := map[string]bool{}
	for _, l := range append(append([]string{}, c.Labels...), w.Labels...) {
		have[l] = true
	}
	for _, l := range labels {
		if neg, ok := strings.CutPrefix(l, "-"); ok {
			if have[neg] {
				return false
			}
		} else if !have[l] {
			return false
		}
	}
	return true
}

// Ops decodes and checks a workload's ops, resolving counts and template paths.
func (c *BenchCase) Ops(w *BenchWorkload, dir string) ([]*BenchOp, error) {
	if err := checkGates(c.Gates(w)); err != nil {
		return nil, err
	}
	if c.SchedulerConfigPath != "" { // a bad one is an input error (exit 2), found before any run
		raw, err := os.ReadFile(c.SchedulerConfigPath)
		if err == nil {
			_, err = LoadConfig(raw)
		}
		if err != nil {
			return nil, fmt.Errorf("schedulerConfigPath: %w", err)
		}
	}
	var ops []*BenchOp
	for i, raw := range c.WorkloadTemplate {
		op, err := c.decodeOp(i, raw, w, dir)
		if err != nil {
			return nil, err
		}
		if op.Opcode != "createPodSets" {
			ops = append(ops, op)
			continue
		}
		// upstream's unrollWorkloadTemplate: the sets take the op's place (and op indices)
		for set := 0; set < op.count; set++ {
			pods, err := c.decodeOp(i, op.CreatePodsOp, w, dir)
			if err != nil {
				return nil, fmt.Errorf("%w (in createPodSets' createPodsOp)", err)
			}
			if pods.Opcode != "createPods" {
				return nil, fmt.Errorf("workloadTemplate[%d].createPodsOp.opcode: %q, want createPods", i, pods.Opcode)
			}
			ns := fmt.Sprintf("%s-%d", op.NamespacePrefix, set)
			pods.Namespace = &ns
			ops = append(ops, pods)
		}
	}
	return ops, nil
}

// decodeOp decodes and checks op i of the template, resolving counts and template paths.
func (c *BenchCase) decodeOp(i int, raw json.RawMessage, w *BenchWorkload, dir string) (*BenchOp, error) {
	op := &BenchOp{}
	if err := json.Unmarshal(raw, op); err != nil {
		return nil, fmt.Errorf("workloadTemplate[%d]: %w", i, err)
	}
	if !slices.Contains(benchOpcodes, op.Opcode) {
		return nil, fmt.Errorf("workloadTemplate[%d].opcode: %q is not supported by kube-oracle bench (only %s)", i, op.Opcode, opcodeList())
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(op); err != nil {
		return nil, fmt.Errorf("workloadTemplate[%d]: %s: %w (not supported by kube-oracle bench)", i, op.Opcode, err)
	}
	if op.StageRequirement != "" && op.StageRequirement != "Scheduled" && op.StageRequirement != "Attempted" {
		return nil, fmt.Errorf("workloadTemplate[%d]: invalid StageRequirement %s", i, op.StageRequirement)
	}
	if (op.Opcode == "createAny" || op.Opcode == "createPodGroups" || op.Opcode == "updateAny") && op.TemplatePath == "" {
		return nil, fmt.Errorf("workloadTemplate[%d]: %s needs a templatePath", i, op.Opcode)
	}
	if op.Opcode == "createPodGroups" && (op.Namespace == nil || *op.Namespace == "") {
		return nil, fmt.Errorf("workloadTemplate[%d]: createPodGroups needs a namespace", i)
	}
	var err error
	if op.TemplateParams, err = resolveTemplateParams(op.TemplateParams, w); err != nil {
		return nil, fmt.Errorf("workloadTemplate[%d].templateParams: %w", i, err)
	}
	switch {
	case op.Count != nil:
		op.count = *op.Count
	case op.CountParam != "":
		name, ok := strings.CutPrefix(op.CountParam, "$")
		if !ok {
			return nil, fmt.Errorf("workloadTemplate[%d].countParam: must start with \"$\"", i)
		}
		v, ok := w.Params[name].(float64)
		if !ok {
			return nil, fmt.Errorf("workloadTemplate[%d].countParam: parameter %s is undefined or not a number", i, name)
		}
		op.count = int(v)
	}
	if name, ok := strings.CutPrefix(op.CountMultiplierParam, "$"); ok {
		v, ok := w.Params[name].(float64)
		if !ok {
			return nil, fmt.Errorf("workloadTemplate[%d].countMultiplierParam: parameter %s is undefined or not a number", i, name)
		}
		op.count *= int(v)
	}
	if name, ok := strings.CutPrefix(op.SignatureBatchSizeParam, "$"); ok {
		v, ok := w.Params[name].(float64)
		if !ok {
			return nil, fmt.Errorf("workloadTemplate[%d].signatureBatchSizeParam: parameter %s is undefined or not a number", i, name)
		}
		op.SignatureBatchSize = int(v)
	}
	if op.SignatureBatchSize <= 0 {
		op.SignatureBatchSize = 1
	}
	for _, p := range []**string{&op.NodeTemplatePath, &op.PodTemplatePath, &op.PVTemplatePath, &op.PVCTemplatePath, &op.NamespaceTemplatePath} {
		if *p != nil {
			abs := resolvePath(dir, **p)
			*p = &abs
		}
	}
	if op.TemplatePath != "" {
		op.TemplatePath = resolvePath(dir, op.TemplatePath)
	}
	for j, path := range op.TemplatePaths {
		op.TemplatePaths[j] = resolvePath(dir, path)
	}
	if op.Opcode == "churn" { // upstream's churnOp.isValid
		if op.Mode != "create" && op.Mode != "recreate" {
			return nil, fmt.Errorf("workloadTemplate[%d]: invalid mode: %v. must be one of [recreate create]", i, op.Mode)
		}
		if op.Number < 0 {
			return nil, fmt.Errorf("workloadTemplate[%d]: number (%v) cannot be negative", i, op.Number)
		}
		if op.Mode == "recreate" && op.Number == 0 {
			return nil, fmt.Errorf("workloadTemplate[%d]: number cannot be 0 when mode is recreate", i)
		}
		if len(op.TemplatePaths) == 0 {
			return nil, fmt.Errorf("workloadTemplate[%d]: at least one template spec file needs to be specified", i)
		}
	}
	if op.Opcode == "createPods" && op.PodTemplatePath == nil {
		op.PodTemplatePath = c.DefaultPodTemplatePath // nil: scheduler_perf's base Pod
	}
	if (op.PVTemplatePath == nil) != (op.PVCTemplatePath == nil) && op.Opcode == "createPods" {
		return nil, fmt.Errorf("workloadTemplate[%d]: persistentVolumeTemplatePath and persistentVolumeClaimTemplatePath go together", i)
	}
	if op.Opcode == "createPods" {
		if err := op.resolveSteadyState(w); err != nil {
			return nil, fmt.Errorf("workloadTemplate[%d]: %w", i, err)
		}
	}
	if op.Opcode == "startCollectingMetrics" && len(op.Namespaces) == 0 {
		return nil, fmt.Errorf("workloadTemplate[%d]: namespaces cannot be empty", i)
	}
	if op.Opcode == "updateAny" {
		if op.UpdatePerSecond < 0 {
			return nil, fmt.Errorf("workloadTemplate[%d]: invalid UpdatePerSecond=%d; should be non-negative", i, op.UpdatePerSecond)
		}
		if op.Count == nil && op.CountParam == "" {
			op.count = 1
		}
		for _, sub := range op.Subresources {
			if sub != "resize" {
				return nil, fmt.Errorf("workloadTemplate[%d]: updateAny's subresource %q is not supported by kube-oracle bench (only resize)", i, sub)
			}
		}
	}
	if op.Opcode == "deletePods" && op.DeletePodsPerSecond < 0 {
		return nil, fmt.Errorf("workloadTemplate[%d]: invalid DeletePodsPerSecond=%d; should be non-negative", i, op.DeletePodsPerSecond)
	}
	if op.Opcode == "createPodSets" && len(op.CreatePodsOp) == 0 {
		return nil, fmt.Errorf("workloadTemplate[%d]: createPodSets needs a createPodsOp", i)
	}
	return op, nil
}

// resolveSteadyState resolves createPods' steadyStateParam and durationParam and checks the
// op as upstream's createPodsOp.isValid.
func (op *BenchOp) resolveSteadyState(w *BenchWorkload) error {
	op.steady = op.SteadyState
	if name, ok := strings.CutPrefix(op.SteadyStateParam, "$"); ok {
		v, ok := w.Params[name].(bool)
		if !ok {
			return fmt.Errorf("steadyStateParam: parameter %s is undefined or not a boolean", name)
		}
		op.steady = v
	}
	duration := op.Duration
	if name, ok := strings.CutPrefix(op.DurationParam, "$"); ok {
		v, ok := w.Params[name].(string)
		if !ok {
			return fmt.Errorf("durationParam: parameter %s is undefined or not a string", name)
		}
		duration = v
	}
	if duration != "" {
		d, err := time.ParseDuration(duration)
		if err != nil {
			return fmt.Errorf("parsing duration parameter %s: %w", op.DurationParam, err)
		}
		op.duration = d
	}
	switch {
	case op.CollectMetrics && op.SkipWaitToCompletion:
		return fmt.Errorf("collectMetrics and skipWaitToCompletion cannot be true at the same time")
	case op.SkipWaitToCompletion && op.steady:
		return fmt.Errorf("skipWaitToCompletion and steadyState cannot be true at the same time")
	case op.steady && op.duration <= 0:
		return fmt.Errorf("when creating pods in a steady state, the test duration must be > 0")
	case op.steady && op.PVCTemplatePath != nil:
		return fmt.Errorf("steadyState with persistentVolumeClaimTemplatePath is not supported by kube-oracle bench")
	}
	return nil
}

// resolveTemplateParams replaces each "$name" (or "$name|default", the default read as
// YAML) among params by the workload's parameter, as upstream's resolveTemplateParams.
func resolveTemplateParams(params map[string]any, w *BenchWorkload) (map[string]any, error) {
	if len(params) == 0 {
		return params, nil
	}
	resolved := maps.Clone(params)
	for k, v := range resolved {
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "$") {
			continue
		}
		key, def, hasDefault := strings.Cut(s[1:], "|")
		if val, found := w.Params[key]; found {
			resolved[k] = val
			continue
		}
		if !hasDefault {
			return nil, fmt.Errorf("parameter %q not found", key)
		}
		var val any
		if err := yaml.Unmarshal([]byte(def), &val); err != nil {
			return nil, fmt.Errorf("decoding parameter %q default %q as YAML: %w", key, def, err)
		}
		resolved[k] = val
	}
	return resolved, nil
}

func opcodeList() string {
	return strings.Join(benchOpcodes, ", ")
}

// objectTemplate renders one file per object as upstream's getSpecFromTextTemplateFile
// does (text/template with .Index and .Count, funcs div and mod); a file without actions
// is decoded once.
type objectTemplate struct {
	path    string
	params  map[string]any // an op's templateParams, beside .Index and .Count
	noCount bool           // .Count left out (createPodGroups' templates get .Index only)
	tmpl    *template.Template
	static  []byte // JSON, when the file has no template actions
	pod0    *v1.Pod
	node0   *v1.Node
}

// basePodJSON is scheduler_perf's Pod when createPods and its case name no template
// (makeBasePod: testutils.MakePodSpec's pause container).
const basePodJSON = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
  "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
    "ports": [{"containerPort": 80}],
    "resources": {"limits": {"cpu": "100m", "memory": "500Mi"},
                  "requests": {"cpu": "100m", "memory": "500Mi"}}}]}}`

// podTemplate is the template at path (rendered with params), or scheduler_perf's base Pod
// when path is nil.
func podTemplate(path *string, params map[string]any) (*objectTemplate, error) {
	if path == nil {
		return &objectTemplate{path: "scheduler_perf's base Pod", static: []byte(basePodJSON)}, nil
	}
	return newObjectTemplate(*path, params)
}

func newObjectTemplate(path string, params map[string]any) (*objectTemplate, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := &objectTemplate{path: path, params: params}
	if !bytes.Contains(content, []byte("{{")) {
		t.static, err = yaml.YAMLToJSON(content)
		return t, err
	}
	t.tmpl, err = template.New(filepath.Base(path)).Funcs(templateFuncs()).Parse(string(content))
	return t, err
}

// render gives object number index of count as JSON.
func (t *objectTemplate) render(index, count int) ([]byte, error) {
	if t.tmpl == nil {
		return t.static, nil
	}
	var buf bytes.Buffer
	env := maps.Clone(t.params)
	if env == nil {
		env = map[string]any{}
	}
	env["Index"] = index
	if !t.noCount {
		env["Count"] = count
	}
	if err := t.tmpl.Execute(&buf, env); err != nil {
		return nil, fmt.Errorf("%s: %w", t.path, err)
	}
	return yaml.YAMLToJSON(buf.Bytes())
}

// pod decodes object index as the API server would store it (a static template once).
func (t *objectTemplate) pod(index, count int) (*v1.Pod, error) {
	if t.pod0 != nil {
		return t.pod0.DeepCopy(), nil
	}
	raw, err := t.render(index, count)
	if err != nil {
		return nil, err
	}
	p, err := DecodePod(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.path, err)
	}
	if t.tmpl == nil {
		t.pod0 = p.DeepCopy()
	}
	return p, nil
}

func (t *objectTemplate) node(index, count int) (*v1.Node, error) {
	if t.node0 != nil {
		return t.node0.DeepCopy(), nil
	}
	raw, err := t.render(index, count)
	if err != nil {
		return nil, err
	}
	obj, err := DecodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.path, err)
	}
	n, ok := obj.(*v1.Node)
	if !ok {
		return nil, fmt.Errorf("%s: not a Node", t.path)
	}
	if t.tmpl == nil {
		t.node0 = n.DeepCopy()
	}
	return n, nil
}
