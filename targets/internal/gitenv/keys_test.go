package gitenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, key string
		want         bool
	}{
		{"filter.*.clean", "filter.x.clean", true},
		{"filter.*.clean", "FILTER.A.B=c.CLEAN", true},
		{"filter.*.clean", "filter.clean", false},
		{"filter.*.clean", "filter.x.smudge", false},
		{"pager.*", "pager.log", true},
		{"pager.*", "pager.x.log", false},
		{"core.fsmonitor", "core.FSMonitor", true},
		{"url.*.insteadOf", "url.ext::sh -c x .insteadof", true},
		{"protocol.*.allow", "protocol.allow", false},
	} {
		if got := Match(c.pattern, c.key); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.pattern, c.key, got)
		}
	}
}

// TestCommandOverridesWhatTheRepositoryNames: git run through Command
// sees each key of Keys at airlock's value, whatever the repository's
// config (and a file it includes) says, sub-names with "=" and spaces
// included; multi-valued credential helpers are emptied.
func TestCommandOverridesWhatTheRepositoryNames(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(Clean(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(dir, ".git", "more.conf"), []byte("[filter \"in=cluded x\"]\n\tsmudge = evil\n"), 0o644)
	set := [][2]string{
		{"include.path", "more.conf"}, {"core.hooksPath", "evil"}, {"core.fsmonitor", "evil"},
		{"filter.a=b.clean", "evil"}, {"remote.origin.uploadpack", "evil"}, {"credential.helper", "evil"},
		{"credential.https://x.helper", "evil"}, {"protocol.evil.allow", "always"}, {"pager.log", "evil"},
	}
	for _, kv := range set {
		git("config", "--add", kv[0], kv[1])
	}
	cmd, err := Command(context.Background(), dir, "config", "--list", "-z")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// The last value of each key is the one git uses.
	last := map[string]string{}
	for _, e := range strings.Split(string(out), "\x00") {
		k, v, _ := strings.Cut(e, "\n")
		last[strings.ToLower(k)] = v
	}
	for k, want := range map[string]string{
		"core.hookspath": hooksPath, "core.fsmonitor": "false", "filter.a=b.clean": "",
		`filter.in=cluded x.smudge`: "", "remote.origin.uploadpack": "git-upload-pack", "credential.helper": "",
		"credential.https://x.helper": "", "protocol.evil.allow": "never", "pager.log": "false",
	} {
		if got, ok := last[k]; !ok || got != want {
			t.Errorf("%s is %q to git run by Command; want %q", k, got, want)
		}
	}
}

func TestTransport(t *testing.T) {
	for _, ok := range []string{"/abs/path", "../rel", "file:///x", "https://h/r", "ssh://h/r", "git+ssh://h/r", "host:path", "git://h/r"} {
		if err := Transport(ok); err != nil {
			t.Errorf("Transport(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"ext::sh -c evil", "fd::3", "canary::x", "evil://h/r", "persistent-https://h"} {
		if err := Transport(bad); !errors.Is(err, ErrTransport) {
			t.Errorf("Transport(%q): %v; want %v", bad, err, ErrTransport)
		}
	}
}
