package session_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/worker"
)

// ignoreScenario is a repository's base (committed with git add -f, so a
// file its own .gitignore names can be tracked), its info/exclude, and the
// working tree's changes on top: the same files written to disk for git
// and into the session's workspace for airlock.
type ignoreScenario struct {
	name    string
	base    map[string]string
	exclude string
	work    map[string]string
	// forced are ignored files named to git add -f and to git_stage.
	forced []string
}

var ignoreScenarios = []ignoreScenario{
	{
		name: "python project",
		base: map[string]string{
			".gitignore":        "__pycache__/\n*.py[cod]\n.pytest_cache/\n/build\n!build/keep\n*.log\n!important.log\n",
			"src/app.py":        "def f(): return 1\n",
			"tracked.log":       "tracked although *.log\n",
			"docs/.gitignore":   "*.tmp\n!keep.tmp\n",
			"docs/a.md":         "# a\n",
			"vendor/.gitignore": "*\n!.gitignore\n",
			"lib/build/x.py":    "not the top build\n",
		},
		work: map[string]string{
			"src/__pycache__/app.cpython-311.pyc": "\x00\x9bpyc",
			"src/stray.pyc":                       "\x00pyc",
			".pytest_cache/v/cache/nodeids":       "[]",
			".pytest_cache/README.md":             "cache",
			"build/out.bin":                       "o",
			"build/keep":                          "cannot be re-included",
			"tracked.log":                         "tracked, modified: shown\n",
			"new.log":                             "ignored",
			"important.log":                       "re-included",
			"docs/t.tmp":                          "ignored below docs",
			"docs/keep.tmp":                       "re-included below docs",
			"docs/sub/x.tmp":                      "ignored deeper",
			"vendor/lib/a.go":                     "package lib",
			"src/new.py":                          "new\n",
			"lib/build/y.py":                      "not the top build either",
			"newdir/.gitignore":                   "*.x\n",
			"newdir/a.x":                          "ignored by an untracked .gitignore",
			"newdir/b.y":                          "shown",
		},
		forced: []string{"src/stray.pyc", "build"},
	},
	{
		name: "negations, anchors, directories and a tracked file in an ignored one",
		base: map[string]string{
			".gitignore":           "/*\n!/src/\n!/README\n!/.gitignore\nsrc/**/gen/\n!src/**/gen/keep\nout/\n",
			"README":               "r\n",
			"src/.gitignore":       "*.bak\n!important.bak\n/local\n",
			"src/main.c":           "int main;\n",
			"src/out/tracked.txt":  "tracked in an ignored directory\n",
			"src/a/gen/tracked.go": "tracked in an ignored directory\n",
		},
		work: map[string]string{
			"top.txt":               "ignored by /*",
			"README":                "modified\n",
			"src/x.bak":             "ignored",
			"src/important.bak":     "shown",
			"src/sub/y.bak":         "ignored",
			"src/local":             "ignored, anchored to src",
			"src/sub/local":         "shown",
			"src/a/gen/z.go":        "ignored",
			"src/a/gen/keep":        "cannot be re-included",
			"src/a/b/gen/deep.go":   "ignored",
			"src/out/new.txt":       "ignored, beside a tracked file",
			"src/out/more/deep.txt": "ignored in an untracked directory",
			"src/genx/a.go":         "shown",
			"src/new.c":             "shown",
		},
		forced: []string{"src/out/new.txt", "top.txt"},
	},
	{
		name: "info/exclude and its precedence",
		base: map[string]string{
			".gitignore":     "!override.secret\nlocal2/\n",
			"app/main.go":    "package main\n",
			"app/.gitignore": "!keep.secret\n",
		},
		exclude: "# my own\n*.secret\nlocal/\n!local2/\n",
		work: map[string]string{
			"a.secret":        "ignored by info/exclude",
			"override.secret": "re-included by .gitignore",
			"app/keep.secret": "re-included by app/.gitignore",
			"app/b.secret":    "ignored",
			"local/notes.md":  "ignored directory",
			"local2/notes.md": ".gitignore wins over info/exclude",
			"app/new.go":      "shown",
		},
		forced: []string{"local"},
	},
	{
		name: "escapes, spaces, classes and **",
		base: map[string]string{
			".gitignore": "\\#hash\n\\!bang\nsp\\ \ntrail   \n[Bb]uild*/\n**/deep/**\n!**/deep/**/\n*.[oa]\nlogs/**/*.txt\n?.tmp\n# comment\n",
			"x.c":        "c\n",
		},
		work: map[string]string{
			"#hash":          "ignored",
			"!bang":          "ignored",
			"sp ":            "ignored",
			"sp":             "shown",
			"trail":          "ignored",
			"Build-x/a":      "ignored",
			"build2/b":       "ignored",
			"rebuild/c":      "shown",
			"a/deep/b/c.txt": "ignored",
			"deep/x":         "ignored",
			"m.o":            "ignored",
			"m.so":           "shown",
			"logs/a.txt":     "ignored",
			"logs/x/y/b.txt": "ignored",
			"logs/c.md":      "shown",
			"a.tmp":          "ignored",
			"ab.tmp":         "shown",
			"comment":        "shown",
		},
		forced: []string{"m.o"},
	},
}

// gitStatusOf returns git status of dir: the untracked, modified and
// ignored files, and the ignored entries as --ignored=matching shows them.
func gitStatusOf(t *testing.T, dir string) (untracked, modified, ignored, matching []string) {
	t.Helper()
	status := func(ignoredMode string) []string {
		return strings.Split(git(t, dir, "-c", "core.excludesFile=/dev/null", "status", "--porcelain", "-z",
			"--untracked-files=all", "--ignored="+ignoredMode), "\x00")
	}
	for _, e := range status("traditional") {
		switch {
		case strings.HasPrefix(e, "?? "):
			untracked = append(untracked, e[3:])
		case strings.HasPrefix(e, " M "):
			modified = append(modified, e[3:])
		case strings.HasPrefix(e, "!! "):
			ignored = append(ignored, e[3:])
		}
	}
	for _, e := range status("matching") {
		if strings.HasPrefix(e, "!! ") {
			matching = append(matching, e[3:])
		}
	}
	return untracked, modified, ignored, matching
}

// airlockStatusOf is the same four lists from a session's status.
func airlockStatusOf(st session.Status) (untracked, modified, ignored, matching []string) {
	for _, c := range st.Unstaged {
		switch c.Kind {
		case change.Create:
			untracked = append(untracked, c.Path)
		case change.Update:
			modified = append(modified, c.Path)
		}
	}
	seen := map[string]bool{}
	for _, g := range st.Ignored {
		ignored = append(ignored, g.Path)
		shown := g.Path
		if g.Dir != "" {
			shown = g.Dir + "/"
		}
		if !seen[shown] {
			seen[shown] = true
			matching = append(matching, shown)
		}
	}
	return untracked, modified, ignored, matching
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

func sameList(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n  airlock %q\n  git     %q", what, got, want)
	}
}

// TestIgnoreRulesAgainstGit: on the same trees, git_status and git_stage
// say what git status --ignored and git add -A (-f, for named files) say:
// the base's .gitignore files (read lazily), the workspace's own, and the
// local source's info/exclude.
func TestIgnoreRulesAgainstGit(t *testing.T) {
	for _, sc := range ignoreScenarios {
		t.Run(sc.name, func(t *testing.T) {
			dir := t.TempDir()
			git(t, dir, "init", "-q", "-b", "main", ".")
			writeTree(t, dir, sc.base)
			git(t, dir, "add", "-A", "-f")
			git(t, dir, "commit", "-qm", "base")
			if sc.exclude != "" {
				writeTree(t, dir, map[string]string{".git/info/exclude": sc.exclude})
			}
			e := newEnv(t, dir, config{})
			writeTree(t, dir, sc.work)
			for p, c := range sc.work {
				must(t, e.s.Workspace().MkdirAll(filepath.Dir(p), 0o755))
				e.write(t, p, c)
			}

			gu, gm, gi, gmatch := gitStatusOf(t, dir)
			if len(gi) == 0 || len(gu) == 0 {
				t.Fatalf("the scenario has nothing ignored (%v) or nothing untracked (%v)", gi, gu)
			}
			au, am, ai, amatch := airlockStatusOf(e.s.Status())
			sameList(t, "untracked", au, gu)
			sameList(t, "modified", am, gm)
			sameList(t, "ignored", ai, gi)
			sameList(t, "ignored, as --ignored=matching shows them", amatch, gmatch)

			// git add -A takes what git_stage without files takes.
			git(t, dir, "add", "-A")
			staged := strings.Fields(git(t, dir, "diff", "--cached", "--name-only"))
			rep, err := e.s.Repo("")
			must(t, err)
			r, err := rep.StageReport(nil, "all but the ignored")
			must(t, err)
			sameList(t, "staged by git_stage without files", filesOf(r.Commit), staged)
			sameList(t, "left out", r.LeftOut, gi)

			// Named, an ignored file (or a directory the rules exclude)
			// is staged, as git add -f stages it.
			git(t, dir, "add", "-f", "--", sc.forced[0])
			for _, p := range sc.forced[1:] {
				git(t, dir, "add", "-f", "--", p)
			}
			all := strings.Fields(git(t, dir, "diff", "--cached", "--name-only"))
			var forced []string
			for _, p := range all {
				if !slices.Contains(staged, p) {
					forced = append(forced, p)
				}
			}
			r, err = rep.StageReport(sc.forced, "named")
			must(t, err)
			sameList(t, "staged because named", filesOf(r.Commit), forced)
			sameList(t, "reported as forced", r.Forced, forced)
			_, _, gi, _ = gitStatusOf(t, dir)
			_, _, ai, _ = airlockStatusOf(e.s.Status())
			sameList(t, "ignored after both", ai, gi)
		})
	}
}

func filesOf(c *staging.Commit) []string {
	var out []string
	for _, f := range c.Files {
		out = append(out, f.Path)
	}
	return out
}

// A directory named that the rules do not exclude stages its changes and
// leaves its ignored files out, as git add DIR does; one holding only
// ignored files is refused with advice that works.
func TestStageNamedDirectoryLeavesIgnoredOut(t *testing.T) {
	r := repo(t, false, map[string]string{".gitignore": "*.pyc\n", "src/app.py": "x\n"})
	e := newEnv(t, r, config{})
	must(t, e.s.Workspace().MkdirAll("src/__pycache__", 0o755))
	e.write(t, "src/app.py", "y\n")
	e.write(t, "src/__pycache__/app.pyc", "\x00")
	e.write(t, "src/b.pyc", "\x00")
	h, err := e.s.Repo("")
	must(t, err)
	rep, err := h.StageReport([]string{"src"}, "src")
	must(t, err)
	if got := filesOf(rep.Commit); !slices.Equal(got, []string{"src/app.py"}) {
		t.Errorf("staged %v, want only src/app.py", got)
	}
	if len(rep.Forced) != 0 || len(rep.LeftOut) != 2 {
		t.Errorf("forced %v, left out %v", rep.Forced, rep.LeftOut)
	}
	_, err = h.StageReport([]string{"src/__pycache__"}, "pyc")
	if err == nil || !strings.Contains(err.Error(), "name a file itself") {
		t.Fatalf("staging a directory of ignored files: %v", err)
	}
	rep, err = h.StageReport([]string{"src/__pycache__/app.pyc"}, "pyc")
	must(t, err)
	if !slices.Equal(rep.Forced, []string{"src/__pycache__/app.pyc"}) {
		t.Errorf("forced %v", rep.Forced)
	}
	if _, err := h.StageReport(nil, "rest"); err == nil || !strings.Contains(err.Error(), "1 untracked files are ignored") {
		t.Errorf("staging with only an ignored file left: %v", err)
	}
}

// The local source's info/exclude is read as git reads it: an edit to it
// applies at the next status, without a pull.
func TestExcludeEditedAppliesAtOnce(t *testing.T) {
	r := repo(t, false, map[string]string{"README.md": "r\n"})
	e := newEnv(t, r, config{})
	e.write(t, "notes.local", "mine")
	if st := e.s.Status(); len(st.Unstaged) != 1 || len(st.Ignored) != 0 {
		t.Fatalf("before: unstaged %v ignored %v", st.Unstaged, st.Ignored)
	}
	writeTree(t, r, map[string]string{".git/info/exclude": "*.local\n"})
	if st := e.s.Status(); len(st.Unstaged) != 0 || len(st.Ignored) != 1 {
		t.Fatalf("after the edit: unstaged %v ignored %v", st.Unstaged, st.Ignored)
	}
	must(t, os.Remove(filepath.Join(r, ".git", "info", "exclude")))
	if st := e.s.Status(); len(st.Unstaged) != 1 {
		t.Fatalf("after removing it: unstaged %v ignored %v", st.Unstaged, st.Ignored)
	}
}

// In a session of several repositories, each one's .gitignore files and
// info/exclude apply inside it and nowhere else; a run's answer leaves out
// what each repository's rules exclude.
func TestMultiRepoIgnoreRules(t *testing.T) {
	api := repo(t, true, map[string]string{".gitignore": "*.o\n/build\n", "main.go": "package api\n"})
	web := repo(t, false, map[string]string{".gitignore": "node_modules/\n", "index.html": "<p>web</p>\n"})
	writeTree(t, web, map[string]string{".git/info/exclude": "*.local\n"})
	spec := func(typ, path string) *worker.TargetSpec {
		return &worker.TargetSpec{Type: typ, Path: path, Branch: "main"}
	}
	w := &worker.Worker{Name: "fullstack", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		Repos: []*worker.RepoConfig{
			{Name: "api", DefaultTarget: spec("local-bare", api), Targets: map[string]*worker.TargetSpec{},
				AutoPull: []worker.PullSpec{{Path: ".", Source: spec("local-bare", api)}}},
			{Name: "web", DefaultTarget: spec("local", web), Targets: map[string]*worker.TargetSpec{},
				AutoPull: []worker.PullSpec{{Path: ".", Source: spec("local", web)}}},
		}}
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.jsonl"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	s, err := session.New(context.Background(), w, session.Options{Gate: approval.NewGate(l, approval.Policy{}),
		Run: &session.RunOptions{MirrorDir: filepath.Join(dir, "mirrors")}})
	must(t, err)
	t.Cleanup(s.Close)
	ws := s.Workspace()
	for _, p := range []string{"api/x.o", "api/build/y", "api/node_modules/z.js", "api/n.local",
		"web/node_modules/pkg/i.js", "web/a.o", "web/n.local", "web/build/y"} {
		must(t, ws.MkdirAll(filepath.Dir(p), 0o755))
		must(t, ws.WriteFile(p, []byte("x"), 0o644))
	}
	ignoredOf := func(h *session.Repo) []string {
		var out []string
		for _, g := range h.Status().Ignored {
			out = append(out, g.Path)
		}
		return out
	}
	apiRepo, webRepo := mustRepo(t, s, "api"), mustRepo(t, s, "web")
	sameList(t, "api's changes", unstaged(apiRepo), []string{"n.local", "node_modules/z.js"})
	sameList(t, "api's ignored", ignoredOf(apiRepo), []string{"build/y", "x.o"})
	sameList(t, "web's changes", unstaged(webRepo), []string{"a.o", "build/y"})
	sameList(t, "web's ignored", ignoredOf(webRepo), []string{"n.local", "node_modules/pkg/i.js"})

	if sandbox.Available() != nil {
		return
	}
	res, err := s.Run(context.Background(), session.RunArgs{Command: "echo > api/gen.o; echo > api/gen.go; echo > web/gen.o; mkdir -p web/node_modules/q; echo > web/node_modules/q/i.js"}, nil)
	must(t, err)
	sameList(t, "the run's created", res.Created, []string{"api/gen.go", "web/gen.o"})
	if res.Ignored != 2 {
		t.Errorf("the run counts %d ignored paths, want 2 (api/gen.o, web/node_modules/q/i.js)", res.Ignored)
	}
}
