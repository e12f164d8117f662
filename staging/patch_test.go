package staging_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/staging"
)

var update = flag.Bool("update", false, "rewrite the golden diffs from the git CLI")

// A tree for a diff scenario: path -> content. A "*" after the path makes
// the file executable; content "->target" makes a symlink.
type tree map[string]string

func goFile(body string) string {
	return "package main\n\nimport \"fmt\"\n\n// greet says hello.\nfunc greet(name string) {\n\tfmt.Println(\"hello\", name)\n}\n\nfunc main() {\n" + body + "}\n"
}

var many = func() string {
	var b strings.Builder
	for i := 0; i < 60; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n")
	}
	return b.String()
}()

var diffScenarios = []struct {
	name          string
	before, after tree
}{
	{"create", tree{}, tree{"new.txt": "one\ntwo\n"}},
	{"delete", tree{"old.txt": "one\ntwo\n"}, tree{}},
	{"modify-middle", tree{"a.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n"}, tree{"a.txt": "1\n2\n3\n4\nfive\n6\n7\n8\n9\n"}},
	{"two-hunks", tree{"m.txt": many}, tree{"m.txt": strings.Replace(strings.Replace(many, "line x\n", "LINE X\n", 1), "line xxxxxx\n", "", -1)}},
	{"funcname", tree{"main.go": goFile("\tgreet(\"a\")\n\tgreet(\"b\")\n\tgreet(\"c\")\n\tgreet(\"d\")\n")}, tree{"main.go": goFile("\tgreet(\"a\")\n\tgreet(\"b\")\n\tgreet(\"c\")\n\tgreet(\"e\")\n")}},
	{"mode-only", tree{"run.sh": "#!/bin/sh\n"}, tree{"run.sh*": "#!/bin/sh\n"}},
	{"mode-and-content", tree{"run.sh": "#!/bin/sh\n"}, tree{"run.sh*": "#!/bin/sh\necho hi\n"}},
	{"binary", tree{"img.bin": "\x00\x01\x02"}, tree{"img.bin": "\x00\x01\x03", "new.bin": "a\x00b"}},
	{"binary-delete", tree{"img.bin": "\x00\x01\x02"}, tree{}},
	{"symlink", tree{"t1": "x\n", "t2": "y\n", "l": "->t1"}, tree{"t1": "x\n", "t2": "y\n", "l": "->t2", "l2": "->t1"}},
	{"type-change", tree{"x": "file\n", "t": "t\n"}, tree{"x": "->t", "t": "t\n"}},
	{"empty-files", tree{"gone-empty": ""}, tree{"new-empty": ""}},
	{"newline-at-eof", tree{"a": "no newline", "b": "has newline\n"}, tree{"a": "no newline\n", "b": "has newline"}},
	{"quoted-paths", tree{}, tree{"caf\u00e9.md": "x\n", "quo\"te.txt": "y\n", "sp ace.txt": "z\n"}},
	{"crlf", tree{"w.txt": "a\r\nb\r\nc\r\n"}, tree{"w.txt": "a\r\nB\r\nc\r\n"}},
	{"nested", tree{"src/a/b.txt": "b\n", "src/c.txt": "c\n"}, tree{"src/a/b.txt": "B\n", "src/d/e.txt": "e\n"}},
}

// applyTree makes the workspace hold exactly t (starting from prev).
func applyTree(t *testing.T, e *env, prev, next tree) {
	t.Helper()
	clean := func(p string) string { return strings.TrimSuffix(p, "*") }
	nextPaths := map[string]bool{}
	for p := range next {
		nextPaths[clean(p)] = true
	}
	for p := range prev {
		if !nextPaths[clean(p)] {
			must(t, e.ws.Remove(clean(p)))
		}
	}
	for p, content := range next {
		exe, name := strings.HasSuffix(p, "*"), clean(p)
		if fi, err := e.ws.Lstat(name); err == nil && (fi.Mode()&os.ModeSymlink != 0) != strings.HasPrefix(content, "->") {
			must(t, e.ws.Remove(name))
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if old, err := e.ws.Readlink(name); err == nil && old != target {
				must(t, e.ws.Remove(name))
			}
			if _, err := e.ws.Lstat(name); err != nil {
				must(t, e.ws.Symlink(target, name))
			}
			continue
		}
		must(t, e.ws.WriteFile(name, []byte(content), 0o644))
		mode := os.FileMode(0o644)
		if exe {
			mode = 0o755
		}
		must(t, e.ws.Chmod(name, mode))
	}
}

// gitDiff is what the git CLI prints for the same change on disk.
func gitDiff(t *testing.T, before, after tree, color bool) string {
	t.Helper()
	args := []string{"diff", "--cached", "--no-renames", "--no-ext-diff"}
	if color {
		args = append(args, "--color=always")
	}
	return gitOnDisk(t, before, after, args...)
}

// gitOnDisk commits before in a fresh repository, stages after, and runs
// git with args there.
func gitOnDisk(t *testing.T, before, after tree, args ...string) string {
	t.Helper()
	dir := newRepo(t)
	writeDisk(t, dir, before)
	run(t, dir, "add", "-A")
	gitWith(t, dir, []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"},
		"commit", "-q", "--allow-empty", "-m", "before")
	for p := range before {
		os.Remove(filepath.Join(dir, strings.TrimSuffix(p, "*")))
	}
	writeDisk(t, dir, after)
	run(t, dir, "add", "-A")
	return run(t, dir, args...)
}

func TestDiffMatchesGit(t *testing.T) {
	for _, sc := range diffScenarios {
		for _, color := range []bool{false, true} {
			name := sc.name
			if color {
				name += ".color"
			}
			t.Run(name, func(t *testing.T) {
				golden := filepath.Join("testdata", "diff", name+".diff")
				if *update {
					must(t, os.MkdirAll(filepath.Dir(golden), 0o755))
					must(t, os.WriteFile(golden, []byte(gitDiff(t, sc.before, sc.after, color)), 0o644))
				}
				wantBytes, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -run TestDiffMatchesGit -update with git installed)", err)
				}
				want := string(wantBytes)

				e := newEnv(t)
				applyTree(t, e, tree{}, sc.before)
				if len(sc.before) > 0 {
					_, err := e.area.Stage(nil, "before")
					must(t, err)
				}
				applyTree(t, e, sc.before, sc.after)
				unstaged, err := e.area.DiffUnstaged()
				must(t, err)
				c, err := e.area.Stage(nil, "after")
				must(t, err)
				staged, err := e.area.DiffCommit(c.ID)
				must(t, err)
				for what, p := range map[string]*staging.Patch{"unstaged": unstaged, "staged": staged} {
					var b strings.Builder
					must(t, p.Format(&b, color))
					if got := b.String(); got != want {
						t.Errorf("%s diff differs from git's:\n--- got\n%s\n--- git\n%s", what, got, want)
					}
				}
				if _, err := exec.LookPath("git"); err != nil || *update {
					return
				}
				if got := gitDiff(t, sc.before, sc.after, color); got != want {
					t.Errorf("the golden file no longer matches this git's output:\n%s", got)
				}
				// The stats are git's --numstat, summed.
				var added, deleted int
				for _, line := range strings.Split(strings.TrimSpace(gitOnDisk(t, sc.before, sc.after, "diff", "--cached", "--no-renames", "--numstat")), "\n") {
					f := strings.Fields(line)
					if len(f) < 3 || f[0] == "-" {
						continue
					}
					a, _ := strconv.Atoi(f[0])
					d, _ := strconv.Atoi(f[1])
					added, deleted = added+a, deleted+d
				}
				if st := staged.Stats(); st.Added != added || st.Deleted != deleted {
					t.Errorf("stats %v, git --numstat +%d -%d", st, added, deleted)
				}
			})
		}
	}
}
