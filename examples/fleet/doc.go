// Package fleet holds the fleet example (compose.yaml, the NATS servers'
// configuration files, nginx.conf, the Dockerfile; see docs/fleet.md) and
// the tests that keep it working where docker does not run: the NATS
// files are parsed by nats-server's own parser and started as a real
// three-node cluster on loopback. It has no code of its own.
package fleet
