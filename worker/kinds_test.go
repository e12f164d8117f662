package worker_test

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/worker"
)

// TestEveryKindRegistered: a program that parses worker files knows the
// github kind, which registers itself from targets/github (targets cannot
// import it). This test imports only worker: it fails when worker stops
// linking the kind in, and worker files naming github fail to parse.
func TestEveryKindRegistered(t *testing.T) {
	w, err := worker.Parse("/w/worker.md", []byte("---\nname: w\ngit:\n  default_target: { type: github, repo: acme/site, branch: main }\n---\n"))
	if err != nil {
		t.Fatalf("a worker file naming a github target: %v", err)
	}
	if got := w.DefaultTarget.Type; got != "github" {
		t.Fatalf("default target's type = %q, want github", got)
	}
	_, err = worker.Parse("/w/worker.md", []byte("---\nname: w\ngit:\n  default_target: { type: svn, repo: acme/site }\n---\n"))
	if err == nil || !strings.Contains(err.Error(), "local, local-bare or github") {
		t.Fatalf("an unknown type's message should list every kind: %v", err)
	}
}
