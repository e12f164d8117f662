//go:build linux

package main

import (
	"testing"

	"github.com/airlock-dev/airlock/sandbox"
)

// With --danger every run has the network, and run says so.
func TestRunAnnotationsWithDanger(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	w, _, _ := startWorker(t, "--danger")
	checkAnnotations(t, w, true)
	w2, _, _ := startWorker(t)
	checkAnnotations(t, w2, false)
}

// run_output answers after airlock serve was killed and started again
// (the run wrote a file, so the session has work to resume).
func TestRunOutputAfterRestart(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	ctx, _, env, repo := project(t, map[string]string{"README.md": "# p\n"})
	bin := airlockBinary(t)
	d := startDurable(t, ctx, bin, env, repo)
	mustContain(t, "run", d.w.call("run", map[string]any{"command": "echo built | tee built.txt; echo warned >&2"}), "run-1", "created: built.txt")
	d.cmd.Process.Kill()
	d.wait(t)
	d = startDurable(t, ctx, bin, env, repo)
	if got := d.w.call("run_output", map[string]any{"id": "run-1"}); got != "built\n" {
		t.Errorf("run_output run-1 after a restart: %q", got)
	}
	if got := d.w.call("run_output", map[string]any{"id": "run-1", "stream": "stderr"}); got != "warned\n" {
		t.Errorf("run_output run-1 stderr after a restart: %q", got)
	}
	mustContain(t, "the next run", d.w.call("run", map[string]any{"command": "true"}), "run-2")
}
