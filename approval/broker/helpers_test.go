package broker_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
)

func hash(s string) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, []byte(s)) }

func sampleRequest() *approval.Request {
	return &approval.Request{
		Worker: "report-writer", Target: "local:/srv/project", Describe: "local:/srv/project (branch: reports)",
		Ref: "refs/heads/reports", Old: hash("old"), New: hash("new"), Tree: hash("tree"),
		Commits: []approval.CommitInfo{{ID: hash("new"), Message: "Add report\n"}},
		Files: []approval.FileChange{
			{Path: "report.md", Op: approval.OpCreate, Size: 1200},
			{Path: "data.json", Op: approval.OpUpdate, Size: 800},
		},
		Diff: "diff --git a/report.md b/report.md\n", Pickable: true,
	}
}

func newLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "state", "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// script is a review.Terminal that plays back keys and lines.
type script struct {
	keys  []rune
	lines []string
	out   strings.Builder
	tty   bool
}

func (s *script) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s *script) ReadKey() (rune, error) {
	if len(s.keys) == 0 {
		return 0, io.EOF
	}
	k := s.keys[0]
	s.keys = s.keys[1:]
	return k, nil
}
func (s *script) ReadLine(prompt string) (string, error) {
	s.out.WriteString(prompt)
	if len(s.lines) == 0 {
		return "", io.EOF
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	return l, nil
}
func (s *script) Page(string) error { return nil }
func (s *script) IsTerminal() bool  { return s.tty }
func (s *script) Color() bool       { return false }

func wait(t *testing.T, tk *approval.Ticket) (approval.Decision, approval.Grant, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return tk.Wait(ctx)
}
