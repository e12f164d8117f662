package worker_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/worker"
)

var update = flag.Bool("update", false, "rewrite golden files")

const exampleWorker = `---
name: report-writer
description: Writes analysis reports
author: { name: Report Writer, email: reports@example.com }
git:
  default_target: { type: local, path: ., branch: reports }   # or github / local-bare
  targets:                                                     # further named targets
    backup: { type: local-bare, path: /srv/backup.git }
    site: { type: github, repo: acme/site, branch: main }
  auto_pull:
    - path: templates/
      source: { type: local, path: . }
    - path: data/
      source: backup
sandbox:
  deny: ["*.sqlite"]            # added to the defaults, never replacing them
  max_file_bytes: 10MiB
  max_total_bytes: 256MiB
  max_files: 5000
---
# Report writer

Write the quarterly report from templates/.
`

func TestParseWorkerExample(t *testing.T) {
	w, err := worker.Parse("/work/proj/workers/report.md", []byte(exampleWorker))
	if err != nil {
		t.Fatal(err)
	}
	want := &worker.Worker{
		Name: "report-writer", Description: "Writes analysis reports",
		Author:        worker.Person{Name: "Report Writer", Email: "reports@example.com"},
		Instructions:  "# Report writer\n\nWrite the quarterly report from templates/.",
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: "/work/proj/workers", Branch: "reports"},
		Targets: map[string]*worker.TargetSpec{
			"backup": {Type: "local-bare", Path: "/srv/backup.git"},
			"site":   {Type: "github", Repo: "acme/site", Branch: "main"},
		},
		Deny: []string{"*.sqlite"},
		File: "/work/proj/workers/report.md",
	}
	want.AutoPull = []worker.PullSpec{
		{Path: "templates/", Source: &worker.TargetSpec{Type: "local", Path: "/work/proj/workers"}},
		{Path: "data/", Source: want.Targets["backup"]},
	}
	want.Limits.MaxFileBytes, want.Limits.MaxTotalBytes, want.Limits.MaxFiles = 10<<20, 256<<20, 5000
	// Every repository the file names, in its order, with where: what
	// Check's errors point at.
	var refs []string
	for _, r := range w.Refs {
		refs = append(refs, fmt.Sprintf("%s %s pull=%v at %v type %v path %v branch %v", r.Key, r.Spec, r.Pull, r.At, r.TypeAt, r.PathAt, r.BranchAt))
	}
	wantRefs := []string{
		"git.default_target local:/work/proj/workers (branch reports) pull=false at {6 19} type {6 27} path {6 40} branch {6 51}",
		"git.targets.backup local-bare:/srv/backup.git pull=false at {8 13} type {8 21} path {8 39} branch {0 0}",
		"git.targets.site github:acme/site (branch main) pull=false at {9 11} type {9 19} path {0 0} branch {9 52}",
		"git.auto_pull[0].source local:/work/proj/workers pull=true at {12 15} type {12 23} path {12 36} branch {0 0}",
		"git.auto_pull[1].source local-bare:/srv/backup.git pull=true at {14 15} type {0 0} path {0 0} branch {0 0}",
	}
	if strings.Join(refs, "\n") != strings.Join(wantRefs, "\n") {
		t.Errorf("refs:\n%s\nwant\n%s", strings.Join(refs, "\n"), strings.Join(wantRefs, "\n"))
	}
	w.Refs = nil
	if len(w.Digest) != 64 {
		t.Errorf("digest %q: want the file's SHA-256", w.Digest)
	}
	w.Digest = ""
	if !reflect.DeepEqual(w, want) {
		t.Errorf("parsed\n%#v\nwant\n%#v", w, want)
	}
}

// Every kind of mistake is refused with the file, line and column, the key,
// and a plain explanation (golden messages).
func TestParseWorkerMistakes(t *testing.T) {
	head := "---\nname: w\ngit:\n  default_target: { type: local, path: . }\n"
	cases := []struct{ name, doc string }{
		{"no frontmatter", "# just markdown\n"},
		{"unclosed frontmatter", "---\nname: w\n"},
		{"empty frontmatter", "---\n---\nbody\n"},
		{"yaml syntax", "---\nname: [w\ngit: {}\n---\n"},
		{"unknown top-level key", head + "colour: blue\n---\n"},
		{"name missing", "---\ngit:\n  default_target: { type: local, path: . }\n---\n"},
		{"name is a list", "---\nname: [a, b]\ngit: {default_target: {type: local, path: .}}\n---\n"},
		{"name with spaces", "---\nname: Report Writer\ngit: {default_target: {type: local, path: .}}\n---\n"},
		{"git missing", "---\nname: w\n---\n"},
		{"git not a mapping", "---\nname: w\ngit: yes\n---\n"},
		{"default target missing", "---\nname: w\ngit:\n  targets: {}\n---\n"},
		{"unknown target type", "---\nname: w\ngit:\n  default_target: { type: ftp, path: . }\n---\n"},
		{"target type missing", "---\nname: w\ngit:\n  default_target: { path: . }\n---\n"},
		{"local target without path", "---\nname: w\ngit:\n  default_target: { type: local }\n---\n"},
		{"github target with path", "---\nname: w\ngit:\n  default_target: { type: github, path: . }\n---\n"},
		{"github repo malformed", "---\nname: w\ngit:\n  default_target: { type: github, repo: \"not a repo\" }\n---\n"},
		{"unknown key in a target", "---\nname: w\ngit:\n  default_target: { type: local, path: ., brnch: main }\n---\n"},
		{"relative path escapes", "---\nname: w\ngit:\n  default_target: { type: local, path: ../../etc }\n---\n"},
		{"branch invalid", "---\nname: w\ngit:\n  default_target: { type: local, path: ., branch: \"a..b\" }\n---\n"},
		{"branch is a number list", "---\nname: w\ngit:\n  default_target: { type: local, path: ., branch: [1] }\n---\n"},
		{"targets not a mapping", head + "  targets: [backup]\n---\n"},
		{"target named default", head + "  targets:\n    default: { type: local-bare, path: /srv/b.git }\n---\n"},
		{"auto_pull not a list", head + "  auto_pull: templates/\n---\n"},
		{"auto_pull entry without path", head + "  auto_pull:\n    - source: { type: local, path: . }\n---\n"},
		{"auto_pull path into .git", head + "  auto_pull:\n    - path: .git/hooks\n---\n"},
		{"auto_pull unknown source name", head + "  auto_pull:\n    - path: templates/\n      source: elsewhere\n---\n"},
		{"auto_pull unknown key", head + "  auto_pull:\n    - path: templates/\n      from: x\n---\n"},
		{"sandbox unknown key", head + "sandbox:\n  allow: [\"*\"]\n---\n"},
		{"deny not a list", head + "sandbox:\n  deny: \"*.db\"\n---\n"},
		{"deny negation", head + "sandbox:\n  deny: [\"!.env\"]\n---\n"},
		{"size malformed", head + "sandbox:\n  max_file_bytes: ten megabytes\n---\n"},
		{"size zero", head + "sandbox:\n  max_file_bytes: 0\n---\n"},
		{"count not a number", head + "sandbox:\n  max_files: lots\n---\n"},
		{"file larger than total", head + "sandbox:\n  max_file_bytes: 2MiB\n  max_total_bytes: 1MiB\n---\n"},
		{"protect not a list", head + "protect: main\n---\n"},
		{"protect a ref", head + "protect: [refs/heads/main]\n---\n"},
		{"protect a bad pattern", head + "protect: [\"release/[\"]\n---\n"},
		{"protect an empty name", head + "protect: [\"\"]\n---\n"},
		{"protect a map", head + "protect: [{branch: main}]\n---\n"},
		{"author without email", "---\nname: w\nauthor: { name: W }\ngit: {default_target: {type: local, path: .}}\n---\n"},
		{"author with angle brackets", "---\nname: w\nauthor: { name: W, email: \"a<b>@c\" }\ngit: {default_target: {type: local, path: .}}\n---\n"},
		{"duplicate key", "---\nname: w\nname: v\ngit: {default_target: {type: local, path: .}}\n---\n"},
		{"git and repos", head + "repos:\n  api: {default_target: {type: local, path: ./api}}\n---\n"},
		{"repos not a mapping", "---\nname: w\nrepos: [api, web]\n---\n"},
		{"repos empty", "---\nname: w\nrepos: {}\n---\n"},
		{"repo name with a slash", "---\nname: w\nrepos:\n  a/b: {default_target: {type: local, path: ./api}}\n---\n"},
		{"repo named twice", "---\nname: w\nrepos:\n  api: {default_target: {type: local, path: ./api}}\n  api: {default_target: {type: local, path: ./web}}\n---\n"},
		{"repo without default target", "---\nname: w\nrepos:\n  api: {targets: {}}\n---\n"},
		{"repo auto_pull unknown source", "---\nname: w\nrepos:\n  api:\n    default_target: {type: local, path: ./api}\n    auto_pull: [{path: ., source: web}]\n---\n"},
		{"repo unknown key", "---\nname: w\nrepos:\n  api: {default_target: {type: local, path: ./api}, branch: main}\n---\n"},
	}
	var got strings.Builder
	for _, c := range cases {
		_, err := worker.Parse("/proj/worker.md", []byte(c.doc))
		var ce *worker.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a ConfigError", c.name, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "/proj/worker.md") {
			t.Errorf("%s: %v does not name the file", c.name, err)
		}
		fmt.Fprintf(&got, "%s:\n  %v\n", c.name, err)
	}
	checkGolden(t, "worker-errors.golden", got.String())
}

// checkGolden compares got with testdata/name (written anew with -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("messages differ from %s:\n%s", golden, got)
	}
}

func TestLoadWorkerTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.md")
	os.WriteFile(p, []byte("---\nname: w\n---\n"+strings.Repeat("x", 2<<20)), 0o644)
	if _, err := worker.Load(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 2 MB worker file: %v", err)
	}
}

// --auto-approve must name one of the worker's targets: an id that
// matches none is an error listing them, and a symlinked path to a
// target's repository resolves to that target's own id.
func TestResolveTargetID(t *testing.T) {
	repo := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	w := &worker.Worker{
		DefaultTarget: &worker.TargetSpec{Type: "local", Path: link, Branch: "main"},
		Targets:       map[string]*worker.TargetSpec{"backup": {Type: "local-bare", Path: "/srv/backup.git"}},
	}
	for _, tc := range []struct{ in, want, err string }{
		{"default", "local:" + link, ""},
		{"backup", "local-bare:/srv/backup.git", ""},
		{"local:" + repo, "local:" + link, ""},
		{"local:" + link, "local:" + link, ""},
		{"local:/somewhere/else", "", "none of this worker's targets"},
		{"github:octo/other", "", "none of this worker's targets"},
		{"bakup", "", `no target is named "bakup"`},
	} {
		got, err := w.ResolveTargetID(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ResolveTargetID(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// A repos mapping names each repository with the keys git has; the
// repositories come sorted by name, and a single-repository worker's list
// is its one repository, named "".
func TestParseWorkerRepos(t *testing.T) {
	doc := `---
name: fullstack
repos:
  web:
    default_target: { type: local, path: ./web }
    auto_pull: [{ path: ., source: { type: local, path: ./web } }]
  api:
    default_target: { type: local-bare, path: /srv/api.git, branch: work }
    targets:
      mirror: { type: github, repo: acme/api }
    auto_pull: [{ path: src/, source: mirror }]
---
Work on both.
`
	w, err := worker.Parse("/work/proj/worker.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if w.DefaultTarget != nil || w.Targets != nil || w.AutoPull != nil {
		t.Errorf("a multi-repository worker has a single repository's keys set: %+v", w)
	}
	if got := w.RepoNames(); !reflect.DeepEqual(got, []string{"api", "web"}) {
		t.Fatalf("repositories %v, want [api web]", got)
	}
	api, web := w.Repos[0], w.Repos[1]
	mirror := &worker.TargetSpec{Type: "github", Repo: "acme/api"}
	wantAPI := &worker.RepoConfig{Name: "api",
		DefaultTarget: &worker.TargetSpec{Type: "local-bare", Path: "/srv/api.git", Branch: "work"},
		Targets:       map[string]*worker.TargetSpec{"mirror": mirror},
		AutoPull:      []worker.PullSpec{{Path: "src/", Source: mirror}}}
	if !reflect.DeepEqual(api, wantAPI) {
		t.Errorf("api = %+v, want %+v", api, wantAPI)
	}
	if web.DefaultTarget.Path != "/work/proj/web" || len(web.AutoPull) != 1 || web.AutoPull[0].Path != "." {
		t.Errorf("web = %+v", web)
	}
	if got := w.RepoList(); len(got) != 2 || got[0] != api {
		t.Errorf("RepoList = %v", got)
	}
	single := worker.Default("/work/proj")
	if l := single.RepoList(); len(l) != 1 || l[0].Name != "" || l[0].DefaultTarget != single.DefaultTarget {
		t.Errorf("a single-repository worker's RepoList = %+v", l)
	}
}

// The protect list names branches a push to asks for an explicit yes.
func TestParseProtect(t *testing.T) {
	w, err := worker.Parse("/proj/worker.md", []byte("---\nname: w\ngit: {default_target: {type: local, path: .}}\nprotect: [main, \"release/*\"]\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"main", "release/*"}; !reflect.DeepEqual(w.Protect, want) {
		t.Errorf("protect %q, want %q", w.Protect, want)
	}
}
