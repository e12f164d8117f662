package gittools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

// A base file whose content its repository lost: search_files searches
// every other file and names it, git_diff shows the rest of the changes
// and says which file it cannot show, read_file's error says what to do.
func TestOneUnreadableFileNeverStopsTheRest(t *testing.T) {
	h := newHarness(t, approval.Policy{}, time.Second)
	id := strings.TrimSpace(git(t, h.repo, "rev-parse", "HEAD:templates/report.md"))
	h.call("move_file", map[string]any{"source": "templates/report.md", "destination": "report.md"})
	h.call("write_file", map[string]any{"path": "notes.md", "content": "TODO: more\n"})
	// Lost: its object, and its checked-out copy a read would take.
	for _, p := range []string{filepath.Join(".git", "objects", id[:2], id[2:]), filepath.Join("templates", "report.md")} {
		if err := os.Remove(filepath.Join(h.repo, p)); err != nil {
			t.Fatal(err)
		}
	}
	out := h.call("search_files", map[string]any{"pattern": "TODO|Project"})
	mustContain(t, "search_files", out, "notes.md:1:", "README.md:1:", "1 file(s) could not be read", "git_pull with no arguments")
	out = h.call("git_diff", map[string]any{})
	mustContain(t, "git_diff", out, "notes.md", "+TODO: more", "report.md", "Content unavailable: ")
	_, err := h.try("read_file", map[string]any{"path": "report.md"})
	mustContain(t, "read_file", errString(err), "content unavailable", "write it anew (write_file)")
}
