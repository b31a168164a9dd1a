package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

type dialerFactory func(config *rest.Config, u *url.URL) (httpstream.Dialer, error)

func spdyDialer(config *rest.Config, u *url.URL) (httpstream.Dialer, error) {
	rt, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return nil, err
	}
	return spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u), nil
}

func wsDialer(config *rest.Config, u *url.URL) (httpstream.Dialer, error) {
	return portforward.NewSPDYOverWebsocketDialer(u, config)
}

// fallbackDialer mirrors kubectl: SPDY tunnelled over WebSocket first, plain SPDY
// if the upgrade fails or an HTTPS proxy is in the way.
func fallbackDialer(config *rest.Config, u *url.URL) (httpstream.Dialer, error) {
	ws, err := wsDialer(config, u)
	if err != nil {
		return nil, err
	}
	sp, err := spdyDialer(config, u)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialer(ws, sp, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// forwarding is a running PortForwarder listening on 127.0.0.1:local.
type forwarding struct {
	local  uint16
	stopCh chan struct{}
	done   chan error
}

// startForward forwards an ephemeral local port to remotePort and waits until it listens.
func startForward(ctx context.Context, e *env, newDialer dialerFactory, remotePort int) (*forwarding, error) {
	u := e.client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(e.namespace).Name(e.pod).
		SubResource("portforward").
		URL()
	dialer, err := newDialer(e.config, u)
	if err != nil {
		return nil, fmt.Errorf("creating dialer: %w", err)
	}
	f := &forwarding{stopCh: make(chan struct{}), done: make(chan error, 1)}
	ready := make(chan struct{})
	// 127.0.0.1 only: "localhost" would also bind ::1, which may be missing in CI sandboxes.
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(remotePort)},
		f.stopCh, ready, io.Discard, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("creating port forwarder: %w", err)
	}
	go func() { f.done <- fw.ForwardPorts() }()

	select {
	case <-ready:
	case err := <-f.done:
		return nil, fmt.Errorf("port forward ended before ready: %v", err)
	case <-ctx.Done():
		close(f.stopCh)
		return nil, fmt.Errorf("waiting for port forward to be ready: %w", ctx.Err())
	}
	ports, err := fw.GetPorts()
	if err != nil {
		f.stop(ctx)
		return nil, fmt.Errorf("getting forwarded ports: %w", err)
	}
	if len(ports) != 1 || ports[0].Local == 0 {
		f.stop(ctx)
		return nil, fmt.Errorf("unexpected forwarded ports %+v", ports)
	}
	f.local = ports[0].Local
	return f, nil
}

func (f *forwarding) addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(f.local)))
}

// stop closes the stop channel and returns ForwardPorts' result.
func (f *forwarding) stop(ctx context.Context) error {
	close(f.stopCh)
	select {
	case err := <-f.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("port forwarder did not stop: %w", ctx.Err())
	}
}

func portForwardHTTP(ctx context.Context, e *env, newDialer dialerFactory) error {
	f, err := startForward(ctx, e, newDialer, e.port)
	if err != nil {
		return err
	}
	// No keep-alives, so each GET is a separate forwarded connection (and stream pair).
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 1; i <= 2; i++ {
		if err := getWelcome(ctx, client, "http://"+f.addr()+"/"); err != nil {
			f.stop(ctx)
			return fmt.Errorf("connection %d: %w", i, err)
		}
	}
	if err := f.stop(ctx); err != nil {
		return fmt.Errorf("port forwarder: %w", err)
	}
	return nil
}

func getWelcome(ctx context.Context, client *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d, want 200", resp.StatusCode)
	}
	if !strings.Contains(string(body), "Welcome to nginx!") {
		return fmt.Errorf("body does not contain %q: %.200q", "Welcome to nginx!", body)
	}
	return nil
}

// portForwardRefused forwards to a port nothing listens on: the local
// connection must be closed or reset without any response bytes.
func portForwardRefused(ctx context.Context, e *env) error {
	const refusedPort = 9
	f, err := startForward(ctx, e, spdyDialer, refusedPort)
	if err != nil {
		return err
	}
	// The forwarder tears its connection down after a remote error, so
	// ForwardPorts may already have returned ErrLostConnectionToPod; only a hang counts.
	defer f.stop(ctx)

	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", f.addr())
	if err != nil {
		return fmt.Errorf("dialing forwarded port: %w", err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"); err != nil {
		return nil // already reset
	}
	data, err := io.ReadAll(conn)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return fmt.Errorf("connection to refused port was not closed before the timeout")
	}
	if len(data) > 0 {
		return fmt.Errorf("got %d bytes from a port nothing listens on: %.200q", len(data), data)
	}
	return nil
}
