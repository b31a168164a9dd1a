//go:build tools

// Package upstream pins the upstream programs scripts/upstream builds.
package upstream

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/test/e2e"
)
