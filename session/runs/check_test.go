package runs

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
)

// A run's arguments are checked before anything runs: one way to name the
// command, a cwd that is a directory of the workspace, a timeout within
// the operator's cap; each refusal says what to give instead.
func TestRunArgumentsChecked(t *testing.T) {
	ws, err := memfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.MkdirAll("src/pkg", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteFile("README.md", []byte("# p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := New(Config{Options: Options{MaxTimeout: time.Minute}, Workspace: ws})
	for _, tc := range []struct {
		name    string
		a       Args
		argv    []string
		dir     string
		timeout time.Duration
		err     string // a part of the error; "" for none
	}{
		{name: "a shell line", a: Args{Command: "go test ./..."}, argv: []string{"/bin/sh", "-c", "go test ./..."}, timeout: time.Minute},
		{name: "argv", a: Args{Argv: []string{"make", "test"}}, argv: []string{"make", "test"}, timeout: time.Minute},
		{name: "both", a: Args{Command: "x", Argv: []string{"x"}}, err: "not both"},
		{name: "neither", a: Args{}, err: "nothing to run"},
		{name: "an empty program", a: Args{Argv: []string{""}}, err: "argv[0] is empty"},
		{name: "a line too long", a: Args{Command: strings.Repeat("x", 64<<10+1)}, err: "put a script in the workspace"},
		{name: "cwd", a: Args{Command: "ls", Cwd: "/src/pkg/"}, argv: []string{"/bin/sh", "-c", "ls"}, dir: "src/pkg", timeout: time.Minute},
		{name: "cwd the root", a: Args{Command: "ls", Cwd: "."}, argv: []string{"/bin/sh", "-c", "ls"}, timeout: time.Minute},
		{name: "cwd out of the workspace", a: Args{Command: "ls", Cwd: "../etc"}, err: ".."},
		{name: "cwd missing", a: Args{Command: "ls", Cwd: "nope"}, err: `cwd "nope" is not a directory of the workspace`},
		{name: "cwd a file", a: Args{Command: "ls", Cwd: "README.md"}, err: "omit cwd for the root"},
		{name: "a timeout", a: Args{Command: "ls", Timeout: 30 * time.Second}, argv: []string{"/bin/sh", "-c", "ls"}, timeout: 30 * time.Second},
		{name: "a negative timeout", a: Args{Command: "ls", Timeout: -time.Second}, err: "timeout must be positive"},
		{name: "over the cap", a: Args{Command: "ls", Timeout: 2 * time.Minute}, err: "give at most 60 seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, dir, timeout, err := r.check(tc.a)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(argv, "\x00") != strings.Join(tc.argv, "\x00") || dir != tc.dir || timeout != tc.timeout {
				t.Errorf("argv %q dir %q timeout %s, want %q %q %s", argv, dir, timeout, tc.argv, tc.dir, tc.timeout)
			}
		})
	}
	// Without the operator's cap, the default is DefaultTimeout.
	r = New(Config{Workspace: ws})
	if _, _, timeout, err := r.check(Args{Command: "ls"}); err != nil || timeout != DefaultTimeout {
		t.Errorf("timeout %s, %v; want %s", timeout, err, DefaultTimeout)
	}
}
