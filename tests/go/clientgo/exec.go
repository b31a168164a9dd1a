package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

type executorFactory func(config *rest.Config, u *url.URL) (remotecommand.Executor, error)

func spdyExecutor(config *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	return remotecommand.NewSPDYExecutor(config, "POST", u)
}

func wsExecutor(config *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	return remotecommand.NewWebSocketExecutor(config, "GET", u.String())
}

// fallbackExecutor mirrors kubectl: WebSocket first, SPDY if the upgrade fails.
func fallbackExecutor(config *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	ws, err := wsExecutor(config, u)
	if err != nil {
		return nil, err
	}
	spdy, err := spdyExecutor(config, u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
}

// execURL builds the pods/exec subresource URL for opts.
func (e *env) execURL(opts *corev1.PodExecOptions) *url.URL {
	opts.Container = e.container
	return e.client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(e.namespace).Name(e.pod).
		SubResource("exec").
		VersionedParams(opts, scheme.ParameterCodec).
		URL()
}

// execExitStatus checks stdin, stdout, stderr and a non-zero exit status.
func execExitStatus(ctx context.Context, e *env, newExecutor executorFactory) error {
	u := e.execURL(&corev1.PodExecOptions{
		Command: []string{"sh", "-c", "cat; echo err >&2; exit 3"},
		Stdin:   true,
		Stdout:  true,
		Stderr:  true,
	})
	ex, err := newExecutor(e.config, u)
	if err != nil {
		return fmt.Errorf("creating executor: %w", err)
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin:  strings.NewReader("hello\n"),
		Stdout: &stdout,
		Stderr: &stderr,
	})
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) {
		// Not reading the buffers here: after a timeout the stream goroutines may still write to them.
		return fmt.Errorf("want exit error with status 3, got %T: %v", err, err)
	}
	if got := exitErr.ExitStatus(); got != 3 {
		return fmt.Errorf("exit status = %d, want 3 (%v)", got, err)
	}
	if got := stdout.String(); got != "hello\n" {
		return fmt.Errorf("stdout = %q, want %q", got, "hello\n")
	}
	if got := stderr.String(); got != "err\n" {
		return fmt.Errorf("stderr = %q, want %q", got, "err\n")
	}
	return nil
}

func execOK(ctx context.Context, e *env) error {
	u := e.execURL(&corev1.PodExecOptions{
		Command: []string{"sh", "-c", "echo fine"},
		Stdout:  true,
		Stderr:  true,
	})
	ex, err := spdyExecutor(e.config, u)
	if err != nil {
		return fmt.Errorf("creating executor: %w", err)
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	if got := stdout.String(); got != "fine\n" {
		return fmt.Errorf("stdout = %q, want %q (stderr %q)", got, "fine\n", stderr.String())
	}
	return nil
}

func execTTY(ctx context.Context, e *env) error {
	// A tty merges stderr into stdout, so no stderr stream is requested.
	u := e.execURL(&corev1.PodExecOptions{
		Command: []string{"sh", "-c", "read x; echo got:$x"},
		Stdin:   true,
		Stdout:  true,
		TTY:     true,
	})
	ex, err := spdyExecutor(e.config, u)
	if err != nil {
		return fmt.Errorf("creating executor: %w", err)
	}
	var stdout bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin:  strings.NewReader("abc\n"),
		Stdout: &stdout,
		Tty:    true,
	})
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	if got := stdout.String(); !strings.Contains(got, "got:abc") {
		return fmt.Errorf("stdout = %q, want it to contain %q", got, "got:abc")
	}
	return nil
}
