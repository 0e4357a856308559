package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kubesched/kubesched/oracle/internal/oracle"
)

// burst runs `kube-oracle burst nodes|pods|wait|delete`: nodes prints how many Nodes it
// created, pods and wait one JSON line (oracle.BurstResult), delete nothing; the exit code
// is 1 on any failure, 2 on bad arguments.
func burst(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: kube-oracle burst nodes|pods|wait|delete --kubeconfig K [--template T] [--count N] [--namespace NS] [--scheduler-name S] [--workers W] [--timeout S]")
		return 2
	}
	fs := flag.NewFlagSet("kube-oracle burst "+args[0], flag.ContinueOnError)
	o := &oracle.BurstOptions{}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the API server (required)")
	fs.StringVar(&o.Template, "template", "", "Node or Pod template (YAML)")
	fs.IntVar(&o.Count, "count", 0, "how many objects to create")
	fs.StringVar(&o.Namespace, "namespace", "burst", "the Pods' namespace")
	fs.StringVar(&o.SchedulerName, "scheduler-name", "", "spec.schedulerName of the Pods (default: the template's)")
	fs.IntVar(&o.Workers, "workers", 64, "parallel creators")
	fs.BoolVar(&o.NoWait, "no-wait", false, "pods: create only, do not wait for binds")
	timeout := fs.Float64("timeout", 600, "seconds to wait")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	o.Timeout = time.Duration(*timeout * float64(time.Second))
	creates := args[0] == "nodes" || args[0] == "pods"
	if o.Kubeconfig == "" || (args[0] != "delete" && o.Count <= 0) || (creates && o.Template == "") {
		fmt.Fprintln(os.Stderr, "kube-oracle burst: --kubeconfig is required, --count > 0 but to delete, --template to create")
		return 2
	}
	ctx := context.Background()
	var err error
	switch args[0] {
	case "nodes":
		var names []string
		if names, err = oracle.BurstNodes(ctx, o); err == nil {
			fmt.Printf("created %d Nodes\n", len(names))
		}
	case "pods":
		var res *oracle.BurstResult
		if res, err = oracle.BurstPods(ctx, o); err == nil {
			err = json.NewEncoder(os.Stdout).Encode(res)
		}
	case "wait":
		var res *oracle.BurstResult
		if res, err = oracle.BurstWait(ctx, o); err == nil {
			err = json.NewEncoder(os.Stdout).Encode(res)
		}
	case "delete":
		err = oracle.DeletePods(ctx, o)
	default:
		fmt.Fprintf(os.Stderr, "kube-oracle burst: unknown mode %q\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-oracle burst:", err)
		return 1
	}
	return 0
}
