// kube-oracle answers kubesched's questions with upstream kube-scheduler v1.34's own code.
//
//	kube-oracle explain [--stream] [--feature-gates=A=true,B=false]
//	                                 {cluster, pod, config} on stdin -> kubesched.explain's JSON
//	kube-oracle schedule [--stream] [--feature-gates=...]
//	                                 {cluster, pods, config} -> kubesched.schedule's per-Pod JSON
//	kube-oracle hints [--stream] [--feature-gates=...]
//	                                 {cluster, pod, config, event} -> every plugin's queueing
//	                                 hint for the cluster events a Node or Pod change raises
//	kube-oracle bench CONFIG.yaml [--case C] [--workload W] [--label L] [-o FILE] [--timeout S]
//	                                 upstream's scheduler on scheduler_perf workloads, `kubesched
//	                                 bench`'s arguments, summary lines and perf-dash JSON
//	kube-oracle burst nodes|pods|wait|delete --kubeconfig K [flags]
//	                                 load for a scheduler behind a real API server (burst.go)
//	kube-oracle version              the upstream version it was built against
//
// --feature-gates sets upstream's gates as kube-scheduler's flag does (an unknown or locked
// gate is refused the same way), for every request the process answers.
// With --stream, every line of stdin is one request and every line of stdout its answer
// ({"error": "..."} when a request cannot be answered), so one process serves many cases.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	"github.com/kubesched/kubesched/oracle/internal/oracle"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube-oracle explain|schedule|hints [--stream] | bench CONFIG [flags] | burst nodes|pods|wait|delete [flags] | version")
		os.Exit(2)
	}
	quietLogs()
	stream := len(os.Args) > 2 && os.Args[2] == "--stream"
	if os.Args[1] == "explain" || os.Args[1] == "schedule" || os.Args[1] == "hints" {
		stream = answerFlags(os.Args[2:])
	}
	switch os.Args[1] {
	case "explain":
		// Preemption's API calls are made synchronously, so the victims are known when
		// PostFilter returns (the choice of victims is the same either way).
		if err := utilfeature.DefaultMutableFeatureGate.Set("SchedulerAsyncPreemption=false"); err != nil {
			fail(err)
		}
		serve(stream, func(ctx context.Context, raw []byte) (any, error) {
			var req oracle.ExplainRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, fmt.Errorf("request: %w", err)
			}
			return oracle.Explain(ctx, &req)
		})
	case "schedule":
		serve(stream, func(ctx context.Context, raw []byte) (any, error) {
			var req oracle.ScheduleRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, fmt.Errorf("request: %w", err)
			}
			return oracle.Schedule(ctx, &req, 60*time.Second)
		})
	case "hints":
		serve(stream, func(ctx context.Context, raw []byte) (any, error) {
			var req oracle.HintsRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, fmt.Errorf("request: %w", err)
			}
			return oracle.Hints(ctx, &req)
		})
	case "bench":
		os.Exit(bench(os.Args[2:]))
	case "burst":
		os.Exit(burst(os.Args[2:]))
	case "version":
		fmt.Println(upstreamVersion())
	default:
		fmt.Fprintf(os.Stderr, "kube-oracle: unknown verb %q\n", os.Args[1])
		os.Exit(2)
	}
}

// answerFlags reads the flags of explain, schedule and hints: whether --stream is given, and
// --feature-gates=SPEC, set on upstream's default feature gate.
func answerFlags(args []string) bool {
	stream := false
	for _, a := range args {
		switch {
		case a == "--stream":
			stream = true
		case strings.HasPrefix(a, "--feature-gates="):
			if err := utilfeature.DefaultMutableFeatureGate.Set(strings.TrimPrefix(a, "--feature-gates=")); err != nil {
				fail(err)
			}
		default:
			fmt.Fprintf(os.Stderr, "kube-oracle: unknown flag %q\n", a)
			os.Exit(2)
		}
	}
	return stream
}

// serve answers one request read whole from stdin, or one per line with stream.
func serve(stream bool, answer func(context.Context, []byte) (any, error)) {
	out := json.NewEncoder(os.Stdout)
	if !stream {
		raw, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail(err)
		}
		res, err := call(answer, raw)
		if err != nil {
			fail(err)
		}
		_ = out.Encode(res)
		return
	}
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 1 {
			res, aerr := call(answer, line)
			if aerr != nil {
				res = map[string]string{"error": aerr.Error()}
			}
			if eerr := out.Encode(res); eerr != nil {
				fail(eerr)
			}
		}
		if err != nil {
			return
		}
	}
}

// call answers one request on its own context, turning a panic into an error.
func call(answer func(context.Context, []byte) (any, error), raw []byte) (res any, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return answer(ctx, raw)
}

// quietLogs keeps upstream's logs off stderr (KUBE_ORACLE_V=N shows them at level N).
func quietLogs() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if v := os.Getenv("KUBE_ORACLE_V"); v != "" {
		_ = fs.Set("v", v)
		return
	}
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

func upstreamVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/kubernetes" {
				return d.Path + " " + d.Version
			}
		}
	}
	return "unknown"
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kube-oracle:", err)
	os.Exit(1)
}
