package scenario

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/gittest"
)

// Setup is the world a scenario runs in.
type Setup struct {
	Dir         string   // holds the repositories, the worker file and airlock's state (Dir/state/airlock)
	Env         []string // the environment of git and of airlock's processes (see Env)
	WorkerFile  string
	AutoApprove []string // as airlock serve --auto-approve takes them
	Ephemeral   bool     // sessions in memory only (--ephemeral)
}

// Ledger is the ledger file of airlock's state under s.Dir.
func (s Setup) Ledger() string { return filepath.Join(s.Dir, "state", "airlock", "ledger.jsonl") }

// Sessions is the directory of saved sessions under s.Dir.
func (s Setup) Sessions() string { return filepath.Join(s.Dir, "state", "airlock", "sessions") }

// Driver serves a Setup through one front-end.
type Driver interface {
	// Start serves s and connects a client of a new session.
	Start(t *testing.T, s Setup) Client
}

// Client is a worker's connection to its session.
type Client interface {
	// Call calls a tool: its text, and whether it is a tool error.
	// A protocol failure fails the test.
	Call(tool string, args map[string]any) (string, bool)
	// Instructions are the server's instructions at initialize.
	Instructions() string
	// Restart ends the server as its operator does (the client leaves,
	// a signal) and starts it again on the same state; the client comes
	// back to its session as that front-end's clients do.
	Restart(t *testing.T) Client
}

// ServerLog is a Client whose server's log (airlock serve's stderr) the
// driver reads: Await waits until it holds every line of want, or gives
// up, and returns it.
type ServerLog interface {
	Await(want ...string) string
}

// Run runs every scenario through d.
func Run(t *testing.T, d Driver) {
	for _, ephemeral := range []bool{false, true} {
		kind := "durable"
		if ephemeral {
			kind = "ephemeral"
		}
		t.Run("push/"+kind, func(t *testing.T) { pushLands(t, d, ephemeral) })
		t.Run("multirepo/"+kind, func(t *testing.T) { multiRepo(t, d, ephemeral) })
		t.Run("restart/"+kind, func(t *testing.T) { restart(t, d, ephemeral) })
	}
}

// call calls a tool that must succeed.
func call(t *testing.T, c Client, tool string, args map[string]any) string {
	t.Helper()
	out, isErr := c.Call(tool, args)
	if isErr {
		t.Fatalf("%s %v: tool error: %s", tool, args, out)
	}
	return out
}

// refused calls a tool that must fail with a tool error.
func refused(t *testing.T, c Client, tool string, args map[string]any) string {
	t.Helper()
	out, isErr := c.Call(tool, args)
	if !isErr {
		t.Fatalf("%s %v succeeded (%q); it must be refused", tool, args, out)
	}
	return out
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q is missing from:\n%s", what, w, got)
		}
	}
}

// Git runs git in dir with env and returns its output; a failure fails
// the test.
func Git(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	return gittest.Run(t, env, dir, nil, args...)
}

// newRepo makes a repository at dir whose main branch has one commit of
// files.
func newRepo(t *testing.T, env []string, dir string, files map[string]string) {
	t.Helper()
	gittest.InitRepo(t, env, dir, "init", files)
}

// setup makes a Setup in a new directory with the worker file doc.
func setup(t *testing.T, ephemeral bool, doc string, autoApprove ...string) Setup {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the scenarios need it")
	}
	root := t.TempDir()
	s := Setup{Dir: root, Env: Env(t, root), WorkerFile: filepath.Join(root, "worker.md"), AutoApprove: autoApprove, Ephemeral: ephemeral}
	if err := os.WriteFile(s.WorkerFile, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// Env is the environment every process of a scenario runs with: its own
// home, state, runtime and temporary directories under root, and a git
// that reads no configuration of the machine's; extra is added.
func Env(t testing.TB, root string, extra ...string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "GIT_"), strings.HasPrefix(k, "AIRLOCK_"),
			k == "HOME", k == "TMPDIR", k == "PAGER", k == "NO_COLOR", k == "TERM", k == "LESS":
			continue
		}
		env = append(env, kv)
	}
	dirs := map[string]string{"HOME": "home", "AIRLOCK_RUNTIME_DIR": "run", "AIRLOCK_STATE_DIR": "state/airlock", "TMPDIR": "tmp"}
	for k, d := range dirs {
		p := filepath.Join(root, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+p)
	}
	env = append(env,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test Person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=Test Person", "GIT_COMMITTER_EMAIL=person@example.com",
		"PAGER=cat", "TERM=xterm", "LC_ALL=C")
	return append(env, extra...)
}

// ledgerHas reports whether one record of the ledger holds every
// "key":value of pairs (key, value, key, value...).
func ledgerHas(t *testing.T, s Setup, pairs ...string) bool {
	t.Helper()
	data, err := os.ReadFile(s.Ledger())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		all := true
		for i := 0; i+1 < len(pairs); i += 2 {
			all = all && strings.Contains(line, fmt.Sprintf("%q:%q", pairs[i], pairs[i+1]))
		}
		if all && line != "" {
			return true
		}
	}
	return false
}

var stagedID = regexp.MustCompile(`staged ([0-9a-f]{7})`)
