package memfs_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs"
)

func TestDenyMatching(t *testing.T) {
	w := newWorkspace(t, memfs.WithDeny("*.sqlite", "/build/secrets/", "**/private/**", "caf\u00e9.txt", "[Tt]emp*"))
	cases := []struct {
		path   string
		denied bool
	}{
		{".env", true}, {"a/b/.env", true}, {".ENV", true}, {".env.production", true},
		{".env.", true}, {".env ", true}, {".env::$DATA", true},
		{".envrc", false}, {"env", false}, {"x.env", false},
		{".ssh", true}, {".ssh/config", true}, {"home/u/.SSH/known_hosts", true}, {"ssh/config", false},
		{".docker/config.json", true}, {"a/.docker/config.json", true}, {".docker/other.json", false},
		{"x/.docker/y/.docker/config.json", true}, // "**" backtracks
		{".config/gcloud/adc.json", true}, {"p/.config/gh/hosts.yml", true}, {".config/other", false},
		{"server.pem", true}, {"certs/CA.PEM", true}, {"pem", false}, {"pem.txt", false},
		{"id_rsa", true}, {"id_rsa.pub", true}, {"my_id_rsa", false}, {"keys/id_ed25519_sk", true},
		{"data.sqlite", true}, {"deep/db.SQLITE", true},
		{"build/secrets/x", true}, {"build/secrets", true}, {"src/build/secrets/x", false}, // anchored
		{"a/private/b", true}, {"private", true},
		{"cafe\u0301.txt", true}, {"CAF\u00c9.TXT", true}, // NFC and case folding
		{"temp.log", true}, {"Temp/x", true}, {"attempt", false},
	}
	for _, c := range cases {
		err := w.WriteFile(c.path, []byte("x"), 0o644)
		if got := errors.Is(err, memfs.ErrDenied); got != c.denied {
			t.Errorf("write %q: denied=%v, want %v (err %v)", c.path, got, c.denied, err)
		}
		if c.denied {
			if _, err := w.ReadFile(c.path); !errors.Is(err, memfs.ErrDenied) {
				t.Errorf("read %q: %v, want ErrDenied", c.path, err)
			}
		}
	}
}

func TestDenyPatternsValidated(t *testing.T) {
	for _, p := range []string{"", "  ", "!.env", "#x", "a/**b", "[", "a/../b", "a\x00b", strings.Repeat("x", 2000)} {
		if _, err := memfs.New(memfs.WithDeny(p)); err == nil {
			t.Errorf("pattern %q accepted", p)
		}
	}
	d, err := pathguard.NewDenyList("*.db")
	if err != nil {
		t.Fatal(err)
	}
	ps := d.Patterns()
	if ps[len(ps)-1] != "*.db" || len(ps) != len(pathguard.DefaultDenyPatterns)+1 {
		t.Errorf("patterns = %q", ps)
	}
}

// Renames may not put anything where the deny list covers it, nor take a
// denied file out from under it.
func TestDenyHoldsAgainstRename(t *testing.T) {
	w := newWorkspace(t, memfs.WithDeny("*.sqlite"))
	mustWrite(t, w, "notes.txt", "n")
	mustWrite(t, w, "keys/a", "secret-ish")
	mustWrite(t, w, "cfg/config.json", "{}")
	mustWrite(t, w, "box/inner/db.txt", "d")
	cases := []struct{ from, to string }{
		{"notes.txt", ".env"},
		{"notes.txt", "sub/.ENV."},
		{"notes.txt", "id_rsa"},
		{"keys", ".ssh"},      // a directory moved into a denied name
		{"keys", "home/.ssh"}, // at depth
		{"cfg", ".docker"},    // something inside would match .docker/config.json
		{"cfg", "x/.docker"},  // at depth
		{"box/inner/db.txt", "x.sqlite"},
	}
	for _, c := range cases {
		if err := w.Rename(c.from, c.to); !errors.Is(err, memfs.ErrDenied) {
			t.Errorf("rename %q -> %q: %v, want ErrDenied", c.from, c.to, err)
		}
	}
	if _, err := w.Stat("cfg/config.json"); err != nil {
		t.Errorf("a refused rename moved something: %v", err)
	}
	// A directory whose new name is fine but where an entry inside would
	// be denied: the message names the entry.
	mustWrite(t, w, "tree/.docker/config.txt", "x")
	err := w.Rename("tree/.docker/config.txt", "tree/.docker/config.json")
	if !errors.Is(err, memfs.ErrDenied) {
		t.Errorf("rename into .docker/config.json: %v", err)
	}
	mustWrite(t, w, "d1/config.json", "{}")
	err = w.Rename("d1", "deep/.docker")
	if !errors.Is(err, memfs.ErrDenied) || !strings.Contains(err.Error(), "deep/.docker/config.json") {
		t.Errorf("moving a directory under .docker: %v", err)
	}
}

func TestDenyHoldsInBillyView(t *testing.T) {
	w := newWorkspace(t)
	b := w.Billy()
	for _, p := range []string{".env", "/a/.ssh/id_rsa", "x.pem", ".git/config", "a/../.git/HEAD", "GIT~1/x"} {
		if f, err := b.Create(p); err == nil {
			f.Close()
			t.Errorf("billy Create(%q) succeeded", p)
		}
	}
	if err := b.Symlink(".env", "link"); !errors.Is(err, memfs.ErrDenied) {
		t.Errorf("billy Symlink to .env: %v, want ErrDenied", err)
	}
	if err := b.Symlink("cfg", "cfglink"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"cfglink/.env", "cfglink/../.ssh/x"} {
		if _, err := b.Create(p); !errors.Is(err, memfs.ErrDenied) {
			t.Errorf("billy Create(%q): %v, want ErrDenied", p, err)
		}
	}
}

func TestSymlinkPolicy(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "docs/readme.md", "hello")
	mustWrite(t, w, "src/main.go", "package main")
	ok := []struct{ target, link string }{
		{"docs/readme.md", "readme"},
		{"../docs/readme.md", "src/readme"},
		{"readme.md", "docs/alias"},
		{"missing.txt", "dangling"},
		{"src", "srcdir"},
		{".", "here"},
	}
	for _, c := range ok {
		if err := w.Symlink(c.target, c.link); err != nil {
			t.Errorf("Symlink(%q, %q): %v", c.target, c.link, err)
		}
	}
	bad := []struct {
		target, link string
		rule         pathguard.Rule
	}{
		{"/etc/passwd", "l1", pathguard.RuleSymlinkTarget},
		{"C:/x", "l2", pathguard.RuleSymlinkTarget},
		{"../outside", "l3", pathguard.RuleSymlinkEscape},
		{"../../x", "src/l4", pathguard.RuleSymlinkEscape},
		{".git/config", "l5", pathguard.RuleGitDir},
		{"a/.GIT/x", "l6", pathguard.RuleGitDir},
		{".env", "l7", pathguard.RuleDenied},
		{"../.ssh/id_rsa", "src/l8", pathguard.RuleDenied},
		{"here/../x", "l9", pathguard.RuleSymlinkEscape},       // "." then "..": escapes when followed
		{"srcdir/../../x", "l10", pathguard.RuleSymlinkEscape}, // lexically outside
		{"docs\\readme.md", "l11", pathguard.RuleBackslash},
		{"", "l12", pathguard.RuleSymlinkTarget},
		{"x\ny", "l13", pathguard.RuleControl},
		{"docs/readme.md", ".gitmodules", pathguard.RuleGitSpecialLink},
		{"docs/readme.md", "sub/.GITATTRIBUTES", pathguard.RuleGitSpecialLink},
		{"docs/readme.md", "l14/../x", pathguard.RuleDotDot},
	}
	for _, c := range bad {
		err := w.Symlink(c.target, c.link)
		if got := pathguard.RuleOf(err); got != c.rule {
			t.Errorf("Symlink(%q, %q): rule %q, want %q (%v)", c.target, c.link, got, c.rule, err)
		}
	}
	// A link to itself is a loop.
	if err := w.Symlink("loop", "loop"); err == nil {
		t.Error("a self-referencing link was created")
	}
	if got, err := w.ReadFile("src/readme"); err != nil || string(got) != "hello" {
		t.Errorf("read through link: %q, %v", got, err)
	}
	if got, err := w.ReadFile("srcdir/main.go"); err != nil || string(got) != "package main" {
		t.Errorf("read through dir link: %q, %v", got, err)
	}
	if err := w.WriteFile("srcdir/new.go", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stat("src/new.go"); err != nil {
		t.Errorf("write through dir link did not land in src: %v", err)
	}
}

// Links made through the trusted view (where go-billy's rules allow
// absolute targets) are still judged by the worker's rules when a worker
// follows them.
func TestWorkerNeverFollowsLinksOut(t *testing.T) {
	w := newWorkspace(t)
	b := w.Billy()
	mustWrite(t, w, "secret-dir/x", "x")
	links := map[string]string{
		"abs":      "/secret-dir/x",
		"up":       "../../../etc/passwd",
		"root":     ".",
		"via-root": "root/../etc/passwd",
	}
	for link, target := range links {
		if err := b.Symlink(target, link); err != nil {
			t.Fatalf("billy Symlink(%q, %q): %v", target, link, err)
		}
	}
	for _, name := range []string{"abs", "up", "via-root", "root/../x"} {
		_, err := w.ReadFile(name)
		if !errors.Is(err, memfs.ErrOutsideSandbox) {
			t.Errorf("worker read %q: %v, want ErrOutsideSandbox", name, err)
		}
		if err := w.WriteFile(name, []byte("pwned"), 0); !errors.Is(err, memfs.ErrOutsideSandbox) {
			t.Errorf("worker write %q: %v, want ErrOutsideSandbox", name, err)
		}
	}
	// In the billy view ".." stops at the root, so "up" is a dangling link
	// inside the workspace, never the host's /etc/passwd.
	if _, err := b.Stat("up"); !os.IsNotExist(err) {
		t.Errorf("billy Stat(up): %v", err)
	}
}

// A symlink keeps its target text when moved, so a rename is judged like
// making the link at its new place.
func TestRenameJudgesMovedLinks(t *testing.T) {
	w := newWorkspace(t)
	mustWrite(t, w, "x", "x")
	must(t, w.Symlink("../x", "a/l"))
	must(t, w.Symlink("../../x", "d/b/l2"))
	must(t, w.Symlink("x", "plain"))
	cases := []struct {
		from, to string
		rule     pathguard.Rule
	}{
		{"a/l", "l", pathguard.RuleSymlinkEscape},              // "../x" from the root escapes
		{"d/b", "b", pathguard.RuleSymlinkEscape},              // a link inside a moved directory
		{"plain", ".gitmodules", pathguard.RuleGitSpecialLink}, // git refuses such trees
		{"plain", "sub/.GITIGNORE", pathguard.RuleGitSpecialLink},
	}
	for _, c := range cases {
		err := w.Rename(c.from, c.to)
		if got := pathguard.RuleOf(err); got != c.rule {
			t.Errorf("Rename(%q, %q): rule %q, want %q (%v)", c.from, c.to, got, c.rule, err)
		}
	}
	if got, _ := w.Readlink("a/l"); got != "../x" {
		t.Errorf("a refused rename moved the link: %q", got)
	}
	must(t, w.Rename("d", "q")) // q/b/l2 -> ../../x is still x
	if got, err := w.ReadFile("q/b/l2"); err != nil || string(got) != "x" {
		t.Errorf("read through the moved link: %q, %v", got, err)
	}
	must(t, w.Rename("a/l", "e/f/l")) // now e/x: dangling, but inside
}
