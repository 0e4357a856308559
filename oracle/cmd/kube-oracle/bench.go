package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/kubesched/kubesched/oracle/internal/oracle"
)

// labelList is a repeatable, comma-separated --label.
type labelList []string

func (l *labelList) String() string { return strings.Join(*l, ",") }

func (l *labelList) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}

// bench runs `kube-oracle bench` and returns its exit code, as `kubesched bench`: 0 when
// every selected workload finished above its threshold, 1 when one failed or none matched
// the filters, 2 for bad arguments or a bad config.
func bench(args []string) int {
	fs := flag.NewFlagSet("kube-oracle bench", flag.ContinueOnError)
	caseName := fs.String("case", "", "run only this test case")
	workload := fs.String("workload", "", "run only this workload (NAME or CASE/NAME)")
	var labels labelList
	fs.Var(&labels, "label", "label filter, repeatable or comma-separated: L must be set, -L must not")
	var output string
	fs.StringVar(&output, "o", "", "write perf-dash JSON here")
	fs.StringVar(&output, "output", "", "write perf-dash JSON here")
	timeout := fs.Float64("timeout", 600, "seconds an op may wait")
	deadline := fs.Float64("deadline", 1800, "seconds a workload may take in all (then it fails, saying what it waited for)")
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional, args = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintln(os.Stderr, "usage: kube-oracle bench CONFIG.yaml [--case C] [--workload W] [--label L] [-o FILE] [--timeout S] [--deadline S]")
		return 2
	}
	path := positional[0]
	cases, err := oracle.LoadBenchConfig(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-oracle:", err)
		return 2
	}
	type job struct {
		c   *oracle.BenchCase
		w   *oracle.BenchWorkload
		ops []*oracle.BenchOp
	}
	var jobs []job
	for i := range cases {
		c := &cases[i]
		for j := range c.Workloads {
			w := &c.Workloads[j]
			if !oracle.Selected(c, w, *caseName, *workload, labels) {
				continue
			}
			ops, err := c.Ops(w, filepath.Dir(path))
			if err != nil {
				fmt.Fprintf(os.Stderr, "kube-oracle: %s: %s/%s: %v\n", path, c.Name, w.Name, err)
				return 2
			}
			jobs = append(jobs, job{c, w, ops})
		}
	}
	if len(jobs) == 0 {
		fmt.Fprintf(os.Stderr, "kube-oracle: %s: no workload matches the filters\n", path)
		return 1 // as kubesched bench
	}
	if prof := os.Getenv("KUBE_ORACLE_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	code := 0
	var results []*oracle.BenchResult
	for _, j := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*deadline*float64(time.Second)))
		r := oracle.RunWorkload(ctx, j.c, j.w, j.ops, time.Duration(*timeout*float64(time.Second)))
		cancel()
		results = append(results, r)
		fmt.Println(r.SummaryLine())
		if !r.OK() {
			code = 1
		}
	}
	if output != "" {
		doc := map[string]any{"version": "v1", "dataItems": oracle.PerfDashItems(results)}
		raw, _ := json.MarshalIndent(doc, "", "  ")
		if err := os.WriteFile(output, append(raw, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "kube-oracle:", err)
			return 1
		}
	}
	return code
}
