package targets_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/targets"
	// The github kind registers itself: these tests list every kind.
	_ "github.com/airlock-dev/airlock/targets/github"
)

// Every kind is named once, in the registry: ids are parsed, compared
// and opened through it, and messages list the kinds from it.
func TestKindRegistry(t *testing.T) {
	if got := targets.KindNames(); got != "local, local-bare or github" {
		t.Errorf("KindNames() = %q", got)
	}
	for _, k := range targets.Kinds() {
		if targets.KindNamed(k.Name) != k || k.Open == nil || k.OpenSource == nil || k.OpenLedger == nil {
			t.Errorf("kind %q is not whole in the registry", k.Name)
		}
	}
	if !targets.LocalKind(true).Bare || targets.LocalKind(false).Bare || targets.LocalKind(true).Name != "local-bare" {
		t.Error("LocalKind names the wrong kinds")
	}
	notID := `is not a target id: use local:/abs/path, local-bare:/abs/path or github:owner/repo`
	for _, c := range []struct{ in, want, err string }{
		{"local:/a/b/../c", "local:/a/c", ""},
		{"local-bare:/srv/x.git/", "local-bare:/srv/x.git", ""},
		{"github:octo/site", "github:octo/site", ""},
		{"github:octo", "", notID},
		{"github:/abs", "", notID},
		{"local:relative/path", "", notID},
		{"local:", "", notID},
		{"svn:/repo", "", notID},
	} {
		got, err := targets.ParseID(c.in)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("ParseID(%q) = %q, %v; want %q, %q", c.in, got, err, c.want, c.err)
		}
	}
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"local:" + dir, "local:" + link, true},
		{"local:" + dir, "local-bare:" + link, false},
		{"github:o/r", "github:o/r", true},
		{"github:o/r", "github:o/R", false},
	} {
		if got := targets.SameID(c.a, c.b); got != c.same {
			t.Errorf("SameID(%q, %q) = %v", c.a, c.b, got)
		}
	}
	if _, err := targets.Open(context.Background(), "svn", "/x", targets.Env{}); err == nil || err.Error() != `unknown target type "svn"` {
		t.Errorf("opening an unknown kind: %v", err)
	}
	if _, err := targets.OpenForLedger(context.Background(), "svn:/x", targets.GitHubOptions{}); err == nil ||
		!strings.Contains(err.Error(), "write local:PATH, local-bare:PATH or github:OWNER/REPO") {
		t.Errorf("reading the ledger head of an unknown kind: %v", err)
	}
	if _, err := targets.OpenSource(context.Background(), "local:relative"); err == nil || !strings.Contains(err.Error(), "the path is not absolute") {
		t.Errorf("a source of a relative path: %v", err)
	}
}

// Environ reads where GitHub is from airlock's environment.
func TestEnviron(t *testing.T) {
	t.Setenv("AIRLOCK_GITHUB_API_URL", "http://127.0.0.1:1/api/")
	t.Setenv("AIRLOCK_GITHUB_GIT_URL", "http://127.0.0.1:1/")
	if env := targets.Environ(); env.GitHub.APIURL != "http://127.0.0.1:1/api/" || env.GitHub.GitURL != "http://127.0.0.1:1/" {
		t.Errorf("Environ() = %+v", env)
	}
}
