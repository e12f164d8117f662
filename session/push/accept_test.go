package push

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
)

// TestCommitDiffs: each commit's own diff is carried file by file, as git
// prints it, hunk by hunk; a type change is one file with no hunks; past
// the limit nothing is carried (the push is then picked by file).
func TestCommitDiffs(t *testing.T) {
	ws, err := memfs.New()
	if err != nil {
		t.Fatal(err)
	}
	area, err := staging.New(ws, staging.NewStore(0), staging.Config{Author: staging.Signature{Name: "T", Email: "t@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := ws.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", strings.Repeat("a\n", 20))
	write("link", "target")
	c1, err := area.Stage(nil, "One")
	if err != nil {
		t.Fatal(err)
	}
	write("a.txt", "A\n"+strings.Repeat("a\n", 18)+"Z\n")
	if err := ws.Remove("link"); err != nil {
		t.Fatal(err)
	}
	if err := ws.Symlink("a.txt", "link"); err != nil {
		t.Fatal(err)
	}
	c2, err := area.Stage(nil, "Two")
	if err != nil {
		t.Fatal(err)
	}
	req := &approval.Request{Commits: []approval.CommitInfo{{ID: c1.ID}, {ID: c2.ID}}}
	ok, err := commitDiffs(area, req, maxCommitDiffs)
	if err != nil || !ok {
		t.Fatalf("commitDiffs: %v, %v", ok, err)
	}
	two := req.Commits[1].Files
	if len(two) != 2 || two[0].Path != "a.txt" || len(two[0].Hunks) != 2 || two[1].Path != "link" || two[1].Hunks != nil ||
		!strings.Contains(two[1].Header, "deleted file mode 100644") || !strings.Contains(two[1].Header, "new file mode 120000") {
		t.Fatalf("the second commit's files: %+v", two)
	}
	if _, hunks, _ := hunk.Split(two[0].Header + strings.Join(two[0].Hunks, "")); len(hunks) != 2 {
		t.Errorf("a.txt's header and hunks do not make its diff again")
	}
	if !hunkPickable(req) {
		t.Error("two commits are not pickable by hunk")
	}
	ok, err = commitDiffs(area, req, 100)
	if err != nil || ok {
		t.Fatalf("commitDiffs past the limit: %v, %v", ok, err)
	}
	for _, c := range req.Commits {
		if c.Files != nil {
			t.Errorf("past the limit, %s still carries %d files", c.ID, len(c.Files))
		}
	}
}
