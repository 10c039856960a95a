// Package clustertest holds the cluster test of the example server: real
// server processes on one Postgres database beside a three-node NATS
// JetStream cluster, all on loopback, with hundreds of event streams
// checked frame by frame while a NATS node and a server process are
// killed. It has no code of its own beyond the test; see cluster_test.go.
package clustertest
