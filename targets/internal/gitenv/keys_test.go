package gitenv

import (
	"context"
	"errors"
	"fmt"
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
// sees every Set key of Keys at airlock's value, whatever the
// repository's config, or a file it includes, says: a table made from
// Keys, each sub-named key under a plain name and one with "=" and a
// space in it.
func TestCommandOverridesWhatTheRepositoryNames(t *testing.T) {
	dir := t.TempDir()
	noUser := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]string{}
	var direct, included strings.Builder
	for i, k := range Keys {
		if k.How != Set {
			continue
		}
		w := &direct
		if i%2 == 1 {
			w = &included // every other key from an included file
		}
		section, rest, _ := strings.Cut(k.Name, ".")
		v := k.Value
		if k.Name == "core.hooksPath" {
			v = hooksPath
		}
		switch {
		case strings.Count(k.Name, ".") == 1 && strings.HasSuffix(k.Name, ".*"):
			fmt.Fprintf(w, "[%s]\n\tevil = /bin/evil\n", section)
			want[section+".evil"] = v
		case strings.Contains(k.Name, ".*."):
			name := strings.TrimPrefix(rest, "*.")
			for _, sub := range []string{"x", "a=b c"} {
				fmt.Fprintf(w, "[%s %q]\n\t%s = /bin/evil\n", section, sub, name)
				want[strings.ToLower(section)+"."+sub+"."+strings.ToLower(name)] = v
			}
		default:
			name := rest
			if i := strings.LastIndexByte(rest, '.'); i >= 0 {
				fmt.Fprintf(w, "[%s %q]\n\t%s = /bin/evil\n", section, rest[:i], rest[i+1:])
			} else {
				fmt.Fprintf(w, "[%s]\n\t%s = /bin/evil\n", section, name)
			}
			want[strings.ToLower(k.Name)] = v
		}
	}
	os.WriteFile(filepath.Join(dir, ".git", "more.conf"), []byte(included.String()), 0o644)
	f, _ := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(direct.String() + "[include]\n\tpath = more.conf\n")
	f.Close()
	cmd, err := Command(context.Background(), dir, "config", "--list", "-z")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, noUser...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// The last value of each key is the one git uses (and "" empties a
	// list of credential helpers).
	last := map[string]string{}
	for _, e := range strings.Split(string(out), "\x00") {
		k, v, _ := strings.Cut(e, "\n")
		section, rest, _ := strings.Cut(k, ".")
		name, sub := rest, ""
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			sub, name = rest[:i]+".", rest[i+1:]
		}
		last[strings.ToLower(section)+"."+sub+strings.ToLower(name)] = v
	}
	for k, w := range want {
		if got, ok := last[k]; !ok || got != w {
			t.Errorf("%s is %q to git run by Command; want %q", k, got, w)
		}
	}
	if len(want) < 60 {
		t.Errorf("only %d keys armed", len(want))
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

// TestCredentialHelpersAndAskPassNeverRun: `git credential fill` in a
// repository whose config names credential helpers (multi-valued: the
// command line's empty value empties the list) and an askpass program,
// one of them in an included file, runs none of them through Command; the
// same git run plainly runs them (the control: the arming works).
func TestCredentialHelpersAndAskPassNeverRun(t *testing.T) {
	for _, v := range []string{"GIT_ASKPASS", "SSH_ASKPASS"} {
		if old, ok := os.LookupEnv(v); ok {
			os.Unsetenv(v)
			t.Cleanup(func() { os.Setenv(v, old) })
		}
	}
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	canary := filepath.Join(t.TempDir(), "canary")
	os.WriteFile(canary, []byte("#!/bin/sh\necho ran >>'"+marker+"'\nexit 0\n"), 0o755)
	noUser := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	os.WriteFile(filepath.Join(dir, ".git", "creds.conf"), []byte("[credential \"https://x\"]\n\thelper = "+canary+"\n"), 0o644)
	f, _ := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[credential]\n\thelper = " + canary + "\n[core]\n\taskPass = " + canary + "\n[include]\n\tpath = creds.conf\n")
	f.Close()
	fill := func(cmd *exec.Cmd) {
		cmd.Env = append(cmd.Env, noUser...)
		cmd.Stdin = strings.NewReader("protocol=https\nhost=x\n\n")
		cmd.Run() // fails without a helper or a prompt: what matters is what ran
	}
	cmd, err := Command(context.Background(), dir, "credential", "fill")
	if err != nil {
		t.Fatal(err)
	}
	fill(cmd)
	if ran, _ := os.ReadFile(marker); len(ran) > 0 {
		t.Errorf("git run by Command ran a credential helper or askpass the repository names (%d times)", strings.Count(string(ran), "\n"))
	}
	plain := exec.Command("git", "-C", dir, "credential", "fill")
	plain.Env = os.Environ()
	fill(plain)
	if ran, _ := os.ReadFile(marker); len(ran) == 0 {
		t.Errorf("the control: plain git ran none of the repository's helpers; the test arms nothing")
	}
}

// TestOverridesCoverSiblings: a sub-named key the repository sets brings
// every key of Keys under its section and sub-name, so that a filter with
// only a smudge command, or a hook with only events here and its command
// in another file, is off whole.
func TestOverridesCoverSiblings(t *testing.T) {
	got := map[string]string{}
	for _, kv := range overrides([]string{"filter.Lfs.smudge", "hook.h.event", "pager.log", "remote.origin.url"}) {
		got[kv[0]] = kv[1]
	}
	want := map[string]string{
		"filter.Lfs.clean": "", "filter.Lfs.smudge": "", "filter.Lfs.process": "",
		"hook.h.command": "", "hook.h.event": "", "hook.h.enabled": "false", "pager.log": "false",
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %q, %v; want %q", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("overrides: %v; want %v", got, want)
	}
}

// TestNeutralReadsNothingOfTheRepository: git through a Neutral reads the
// repository's objects, and neither its config (an fsmonitor, a hook, a
// promisor remote that would be fetched from) nor its refs.
func TestNeutralReadsNothingOfTheRepository(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(Clean(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "--bare")
	blob := git("hash-object", "-w", "--stdin")
	git("config", "core.repositoryformatversion", "1")
	git("config", "extensions.partialClone", "origin")
	git("config", "remote.origin.url", "ext::sh -c evil")
	git("config", "remote.origin.promisor", "true")
	git("config", "protocol.ext.allow", "always")
	n, err := NewNeutral(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd := n.Command(context.Background(), "cat-file", "--batch-check")
	missing := strings.Repeat("1", 40)
	cmd.Stdin = strings.NewReader(blob + "\n" + missing + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cat-file: %v: %s", err, stderr.String())
	}
	if want := blob + " blob 0\n" + missing + " missing\n"; string(out) != want || stderr.Len() > 0 {
		t.Errorf("cat-file through a Neutral: %q (stderr %q); want %q", out, stderr.String(), want)
	}
	for _, k := range []string{"remote.origin.url", "extensions.partialclone"} {
		c := n.Command(context.Background(), "config", "--get", k)
		if out, err := c.Output(); err == nil {
			t.Errorf("%s is %q through a Neutral", k, out)
		}
	}
}
