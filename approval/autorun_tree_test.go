package approval_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
)

// envRows are the table's rows for the tools that act on entering a
// directory (direnv, nix-direnv, devenv, devbox, mise, asdf): a flag of
// theirs on a file those tools never read would teach the reviewer to skip
// the flag.
var envRows = []string{".envrc", ".direnv", "flake.", "shell.nix", "default.nix", "devshell", "devenv", "devbox", ".tool-versions", "mise", ".rtx"}

// The false-alarm check: the table run over every path of a real tree, the
// Go toolchain's own sources (which use none of those tools), flags no file
// by the rows of the tools that act on entering a directory. What the other
// rows flag there is logged, as the figure of what a reviewer would see
// were the whole tree pushed at once.
func TestRunsTableOverARealTree(t *testing.T) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "src")
	paths, flagged := 0, 0
	byRow := map[string]int{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		paths++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rows := approval.RunsRowsForPath(rel, data)
		if len(rows) > 0 {
			flagged++
		}
		for _, r := range rows {
			byRow[r]++
			for _, e := range envRows {
				if strings.Contains(strings.Fields(r)[0], e) {
					t.Errorf("%s flagged by %s: none of those tools reads it", rel, r)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if paths < 1000 {
		t.Fatalf("only %d files under %s: not the Go toolchain's sources", paths, root)
	}
	var rows []string
	for r, n := range byRow {
		rows = append(rows, r+": "+strconv.Itoa(n))
	}
	sort.Strings(rows)
	t.Logf("%d of %d paths under %s flagged; by row:\n%s", flagged, paths, root, strings.Join(rows, "\n"))
}
