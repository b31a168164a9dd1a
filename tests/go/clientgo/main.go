// Command clientgo drives kemu's exec and port-forward subresources with the
// real k8s.io/client-go streaming clients (SPDY, WebSocket and their fallback
// wrappers), so the Rust integration tests can check wire compatibility with
// the library kubectl itself uses.
//
// The Rust test builds it and runs it against an already-running kemu cluster:
//
//	clientgo --kubeconfig PATH --namespace NS --pod POD [--container C] [--port 80] SCENARIO...
//
// Each scenario gets a 30 s timeout and prints exactly one line to stdout,
// "ok <name>" or "FAIL <name>: <reason>". The exit status is 1 if any scenario
// failed and 2 for usage or configuration errors.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const scenarioTimeout = 30 * time.Second

// env is what every scenario needs to reach the target pod.
type env struct {
	config    *rest.Config
	client    kubernetes.Interface
	namespace string
	pod       string
	container string
	port      int
}

type scenario func(ctx context.Context, e *env) error

var scenarios = map[string]scenario{
	"spdy-exec":            func(ctx context.Context, e *env) error { return execExitStatus(ctx, e, spdyExecutor) },
	"spdy-exec-ok":         execOK,
	"spdy-exec-tty":        execTTY,
	"ws-exec":              func(ctx context.Context, e *env) error { return execExitStatus(ctx, e, wsExecutor) },
	"fallback-exec":        func(ctx context.Context, e *env) error { return execExitStatus(ctx, e, fallbackExecutor) },
	"spdy-portforward":     func(ctx context.Context, e *env) error { return portForwardHTTP(ctx, e, spdyDialer) },
	"ws-portforward":       func(ctx context.Context, e *env) error { return portForwardHTTP(ctx, e, wsDialer) },
	"fallback-portforward": func(ctx context.Context, e *env) error { return portForwardHTTP(ctx, e, fallbackDialer) },
	"portforward-refused":  portForwardRefused,
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to the kubeconfig of the running cluster")
	namespace := flag.String("namespace", "", "namespace of the target pod")
	pod := flag.String("pod", "", "name of the target pod")
	container := flag.String("container", "", "container to exec into (default: the pod's default container)")
	port := flag.Int("port", 80, "pod port serving nginx, for the port-forward scenarios")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s --kubeconfig PATH --namespace NS --pod POD [--container C] [--port 80] SCENARIO...\n", os.Args[0])
		flag.PrintDefaults()
		names := make([]string, 0, len(scenarios))
		for name := range scenarios {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "scenarios: %s\n", strings.Join(names, " "))
	}
	flag.Parse()
	if *kubeconfig == "" || *namespace == "" || *pod == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loading kubeconfig: %v\n", err)
		os.Exit(2)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating clientset: %v\n", err)
		os.Exit(2)
	}
	e := &env{config: config, client: client, namespace: *namespace, pod: *pod, container: *container, port: *port}

	failed := false
	for _, name := range flag.Args() {
		if err := runScenario(name, e); err != nil {
			// The Rust side parses one line per scenario.
			fmt.Printf("FAIL %s: %s\n", name, strings.ReplaceAll(err.Error(), "\n", `\n`))
			failed = true
		} else {
			fmt.Printf("ok %s\n", name)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func runScenario(name string, e *env) error {
	run, ok := scenarios[name]
	if !ok {
		return fmt.Errorf("unknown scenario")
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()

	// Scenarios honour ctx, but a client-go call that ignores it must still not
	// hang the whole run; the stuck goroutine dies with the process.
	done := make(chan error, 1)
	go func() { done <- run(ctx, e) }()
	select {
	case err := <-done:
		return err
	case <-time.After(scenarioTimeout + 5*time.Second):
		return fmt.Errorf("scenario did not return within %s", scenarioTimeout)
	}
}
