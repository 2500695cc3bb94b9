//go:build tools

// Package tools pins the etcd server that tests/cluster/build-k8s.sh builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
