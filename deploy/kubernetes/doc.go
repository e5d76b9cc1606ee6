// Package kubernetes holds the Kubernetes manifests of a sharded idemcheck
// run (a prepare Job, an Indexed Job of load shards and a judge Job sharing
// a PersistentVolumeClaim) and the test that decodes them strictly into the
// Kubernetes API types and checks that the idemcheck commands in them are
// valid and agree with each other. It has no Go code of its own; see
// docs/distributed.md (On Kubernetes).
package kubernetes
