// Package natstest starts real NATS servers with JetStream for tests: one
// in-process server, or a cluster of several on loopback whose nodes can
// be stopped and started again on the same files. The servers are the
// nats-server module itself, not a fake, so what a test proves holds for
// the server a fleet runs.
package natstest
