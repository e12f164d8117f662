package gittools_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/heapwatch"
)

// git_diff and the push request of a big change hold a page of the diff,
// not the whole of it several times over.
func TestBigDiffMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocates hundreds of MiB; .ci/run runs it without the race detector")
	}
	h := newHarness(t, approval.Policy{Mode: approval.ModeNever}, time.Second)
	const files, size = 48, 1 << 20
	line := strings.Repeat("x", 63) + "\n"
	content := strings.Repeat(line, size/len(line))
	for i := 0; i < files; i++ {
		h.call("write_file", map[string]any{"path": fmt.Sprintf("big/%02d.txt", i), "content": content})
	}
	total := uint64(files * size)
	var out string
	peak := heapwatch.Peak(func() { out = h.call("git_diff", nil) })
	t.Logf("git_diff of %d MiB: heap peak +%d MiB", total>>20, peak>>20)
	if peak > 2*total {
		t.Errorf("git_diff of %d MiB rose the heap by %d MiB", total>>20, peak>>20)
	}
	mustContain(t, "git_diff", out, "[cut:")
	h.call("git_stage", map[string]any{"message": "big"})
	// The request keeps up to 32 MiB of diff text for the reviewer, which
	// a builder grows to by doubling.
	peak = heapwatch.Peak(func() { h.try("git_push", nil) })
	t.Logf("push request of %d MiB: heap peak +%d MiB", total>>20, peak>>20)
	if peak > 2*total+96<<20 {
		t.Errorf("a push request of %d MiB rose the heap by %d MiB", total>>20, peak>>20)
	}
}
