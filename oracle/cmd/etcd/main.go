// Command etcd is a single-member etcd for kubesched's test control plane
// (oracle/controlplane.sh): go.etcd.io/etcd/server/v3/embed at the version
// k8s.io/kubernetes v1.34.4 itself requires (v3.6.4), serving plain HTTP on
// loopback only. It is not a production etcd: no TLS, no peers, fsync off.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func mustURL(raw string) url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: bad URL %q: %v\n", raw, err)
		os.Exit(2)
	}
	return *u
}

func main() {
	dataDir := flag.String("data-dir", "", "directory for etcd's data (required)")
	clientPort := flag.Int("client-port", 2379, "loopback port for clients")
	peerPort := flag.Int("peer-port", 2380, "loopback port for the (single) peer")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		os.Exit(2)
	}
	cfg := embed.NewConfig()
	cfg.Name = "kubesched-test"
	cfg.Dir = *dataDir
	cfg.LogLevel = *logLevel
	cfg.UnsafeNoFsync = true // a throwaway test store: speed over durability
	client := mustURL(fmt.Sprintf("http://127.0.0.1:%d", *clientPort))
	peer := mustURL(fmt.Sprintf("http://127.0.0.1:%d", *peerPort))
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: start: %v\n", err)
		os.Exit(1)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		fmt.Printf("etcd: ready on %s\n", client.String())
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		os.Exit(1)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		os.Exit(1)
	case <-stop:
	}
}
