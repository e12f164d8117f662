package review

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// TestViewedFileNotMarksAdviceWorks: a viewed.json that is not one is
// refused by name with what to do (move it away), nothing is written over
// it, and once it is moved away the marks are kept again.
func TestViewedFileNotMarksAdviceWorks(t *testing.T) {
	r := &approval.Request{Target: "local:/srv/app", Pickable: true, Commits: []approval.CommitInfo{{Files: []approval.FileDiff{{
		Path: "a.go", Header: "diff --git a/a.go b/a.go\n", Hunks: []string{"@@ -1 +1 @@\n-a\n+b\n"},
	}}}}}
	m := model.New(r)
	m.SetViewed(m.Order()[0], true)
	path := filepath.Join(t.TempDir(), viewedFileName)
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := saveViewed(path, m, time.Now())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("saving over a file that is not marks: %v, want its name and what to do", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "not json" {
		t.Fatalf("the file was written over: %q", b)
	}
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if err := saveViewed(path, m, time.Now()); err != nil {
		t.Fatalf("after moving it away, as advised: %v", err)
	}
	again := model.New(r)
	loadViewed(path, again)
	if !again.Viewed(again.Order()[0]) {
		t.Errorf("the mark was not kept after the advice was followed")
	}
}
