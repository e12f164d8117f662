// Package approvaltest holds the small fakes the approval packages' tests
// share: a scripted reviewer's terminal, a ledger in a test's directory, a
// sample request, a clock whose readings never repeat.
package approvaltest

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/change"
)

// Hash is a made-up object id, different for every s.
func Hash(s string) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, []byte(s)) }

// SampleRequest is a two-file push to a local target's reports branch.
func SampleRequest() *approval.Request {
	return &approval.Request{
		Worker: "report-writer", Target: "local:/srv/project", Describe: "local:/srv/project (branch: reports)",
		Ref: "refs/heads/reports", Old: Hash("old"), New: Hash("new"), Tree: Hash("tree"),
		Commits: []approval.CommitInfo{{ID: Hash("new"), Message: "Add report\n"}},
		Files: []approval.FileChange{
			{Path: "report.md", Op: change.Create, Size: 1200},
			{Path: "data.json", Op: change.Update, Size: 800},
		},
		Diff: "diff --git a/report.md b/report.md\n", Pickable: true,
	}
}

// NewLedger opens a ledger in the test's temporary directory, closed when
// the test ends.
func NewLedger(t testing.TB) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "state", "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Script is a reviewer's terminal that plays back keys and lines and
// records what was written to it (lines read are echoed, as a terminal
// would) and what was paged.
type Script struct {
	Keys    []rune
	Lines   []string
	Out     strings.Builder
	Paged   []string
	TTY     bool
	ColorOn bool
}

func (s *Script) Write(p []byte) (int, error) { return s.Out.Write(p) }

// ReadKey returns the next key, or io.EOF when none is left.
func (s *Script) ReadKey() (rune, error) {
	if len(s.Keys) == 0 {
		return 0, io.EOF
	}
	k := s.Keys[0]
	s.Keys = s.Keys[1:]
	return k, nil
}

// ReadLine returns the next line, or io.EOF when none is left.
func (s *Script) ReadLine(prompt string) (string, error) {
	s.Out.WriteString(prompt)
	if len(s.Lines) == 0 {
		return "", io.EOF
	}
	l := s.Lines[0]
	s.Lines = s.Lines[1:]
	s.Out.WriteString(l + "\n")
	return l, nil
}

func (s *Script) Page(text string) error { s.Paged = append(s.Paged, text); return nil }
func (s *Script) IsTerminal() bool       { return s.TTY }
func (s *Script) Color() bool            { return s.ColorOn }

// ReviewerKey is the reviewer's key of the tests (a fixed seed), and
// ReviewerKeys the trust that accepts it: a gate made with
// approval.Policy{ReviewerKeys: ReviewerKeys} accepts decisions a
// Reviewer signs after SetKey(ReviewerKey()).
func ReviewerKey() nkeys.KeyPair {
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, []byte("airlock tests' reviewer key 0001"))
	if err != nil {
		panic(err)
	}
	return kp
}

// ReviewerKeys trusts ReviewerKey.
var ReviewerKeys = func() []string {
	pub, err := ReviewerKey().PublicKey()
	if err != nil {
		panic(err)
	}
	return []string{pub}
}()
