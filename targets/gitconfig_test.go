package targets_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/internal/gitenv"
	"github.com/airlock-dev/airlock/targets/internal/gitread"
)

// hookNames are the hooks a canary is put in for, in the repository's own
// hooks directory and in a core.hooksPath it names: every hook a command
// airlock runs (receive-pack, update-ref, gc, fetch) could start.
var hookNames = []string{"pre-receive", "update", "post-receive", "post-update", "reference-transaction",
	"push-to-checkout", "proc-receive", "pre-auto-gc", "post-checkout", "post-index-change",
	"fsmonitor-watchman", "post-merge", "pre-commit"}

// canaries makes the programs a test arms keys with: each appends its
// name to the group's marker file, which must stay empty.
type canaries struct {
	dir    string
	marker string
}

// script returns a canary for name; with pass, it then runs git's own
// program of that name (upload-pack, receive-pack), so that what it
// stands for still works.
func (c *canaries) script(t *testing.T, name, pass string) string {
	t.Helper()
	p := filepath.Join(c.dir, fmt.Sprintf("c%03d", len(mustReadDir(t, c.dir))))
	body := fmt.Sprintf("#!/bin/sh\necho '%s' >>'%s'\n", name, c.marker)
	if pass != "" {
		body += "exec " + pass + " \"$@\"\n"
	} else {
		body += "exit 1\n"
	}
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// arming is how a test sets one key so that git, were it to honour the
// key, would run a canary; group names the repositories it is set in
// (keys that would stand in each other's way get their own).
type arming struct {
	group string
	kv    [][2]string
}

// arm arms key k. Every key of gitenv.Keys has one: by default the key
// itself (a sub-name "x", and "origin" where a remote is meant) set to a
// canary.
func arm(t *testing.T, k gitenv.Key, c *canaries, upstream string) arming {
	sub := func(name string) string { return strings.Replace(k.Name, "*", name, 1) }
	canary := c.script(t, k.Name, "")
	switch k.Name {
	case "core.hooksPath":
		dir := filepath.Join(c.dir, "hookspath")
		os.MkdirAll(dir, 0o755)
		for _, h := range hookNames {
			os.Symlink(c.script(t, "core.hooksPath "+h, ""), filepath.Join(dir, h))
		}
		return arming{"", [][2]string{{k.Name, dir}}}
	case "hook.*.command", "hook.*.event", "hook.*.enabled":
		// A hook named in config (git 2.54 and later) for every event.
		name := strings.TrimPrefix(k.Name, "hook.*.")
		kv := [][2]string{{"hook." + name + ".command", canary}, {"hook." + name + ".enabled", "true"}}
		for _, h := range hookNames {
			kv = append(kv, [2]string{"hook." + name + ".event", h})
		}
		return arming{"", kv}
	case "remote.*.uploadpack":
		return arming{"", [][2]string{{sub("origin"), c.script(t, k.Name, "git-upload-pack")}, {sub("x"), canary}}}
	case "remote.*.receivepack":
		return arming{"", [][2]string{{sub("origin"), c.script(t, k.Name, "git-receive-pack")}, {sub("x"), canary}}}
	case "remote.*.vcs":
		// git-remote-canary, a helper on PATH (see TestNoProgramARepositoryNames).
		return arming{"vcs", [][2]string{{sub("origin"), "canary"}}}
	case "url.*.insteadOf", "url.*.pushInsteadOf", "protocol.allow", "protocol.ext.allow", "protocol.*.allow":
		// The promisor remote's URL rewritten to an ext:: command, allowed.
		return arming{"ext", [][2]string{
			{"url.ext::" + canary + " .insteadOf", "file://" + upstream},
			{"url.ext::" + canary + " .pushInsteadOf", "file://" + upstream},
			{"protocol.allow", "always"}, {"protocol.ext.allow", "always"}, {"protocol.canary.allow", "always"}}}
	case "core.sshCommand":
		return arming{"ssh", [][2]string{{k.Name, canary}, {"remote.origin.url", "ssh://127.0.0.1:1/up"}}}
	case "core.gitProxy":
		return arming{"proxy", [][2]string{{k.Name, canary}, {"remote.origin.url", "git://127.0.0.1:1/up"}}}
	case "receive.procReceiveRefs":
		// The proc-receive hook is a canary in the repository's hooks.
		return arming{"procreceive", [][2]string{{k.Name, "refs/heads"}}}
	case "receive.autogc", "maintenance.auto":
		// gc and maintenance run the repository's pre-auto-gc hook, a canary.
		return arming{"", [][2]string{{k.Name, "true"}, {"gc.auto", "1"}, {"gc.autoDetach", "false"}}}
	case "gc.auto":
		return arming{"", [][2]string{{k.Name, "1"}}}
	case "submodule.recurse", "fetch.recurseSubmodules":
		return arming{"", [][2]string{{k.Name, "true"}}}
	case "submodule.*.update":
		return arming{"", [][2]string{{sub("x"), "!" + canary}}}
	case "alias.*", "pager.*":
		var kv [][2]string
		for _, cmd := range []string{"cat-file", "ls-tree", "rev-list", "fetch", "config", "update-ref", "receive-pack", "worktree", "ls-files", "rev-parse"} {
			v := canary
			if k.Name == "alias.*" {
				v = "!" + canary
			}
			kv = append(kv, [2]string{sub(cmd), v})
		}
		return arming{"", kv}
	case "credential.*.helper":
		return arming{"", [][2]string{{sub("file://" + upstream), canary}}}
	case "core.editor", "sequence.editor", "core.pager":
		return arming{"", [][2]string{{k.Name, canary}}}
	}
	if strings.Contains(k.Name, "*") {
		return arming{"", [][2]string{{sub("x"), canary}}}
	}
	return arming{"", [][2]string{{k.Name, canary}}}
}

// configText writes kv as git config file text.
func configText(kv [][2]string) string {
	q := func(s string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	}
	var b strings.Builder
	for _, p := range kv {
		section, rest, _ := strings.Cut(p[0], ".")
		name, sub := rest, ""
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			sub, name = rest[:i], rest[i+1:]
		}
		if sub != "" {
			fmt.Fprintf(&b, "[%s %s]\n", section, q(sub))
		} else {
			fmt.Fprintf(&b, "[%s]\n", section)
		}
		fmt.Fprintf(&b, "\t%s = %s\n", name, q(p[1]))
	}
	return b.String()
}

// appendFile appends text to the file at p.
func appendFile(t *testing.T, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestNoProgramARepositoryNames: every key of gitenv.Keys is set to a
// canary program in the config of each kind of repository airlock reads
// or writes (a working tree, a bare one, two partial clones missing every
// blob whose promisor is the upstream, bare and not), directly, through include.path
// and through includeIf, with a canary in each hook of the repository's
// own hooks directory too; then airlock pulls from each, reads a file
// lazily (the partial clone's blob fetched), pushes through the gate with
// an approval to the working tree's checked-out branch and to the bare
// one, and recovers an interrupted push. Everything works, and no canary
// ever runs. Keys that would stand in each other's way are armed in
// repositories of their own (arm's groups).
func TestNoProgramARepositoryNames(t *testing.T) {
	c := &canaries{dir: t.TempDir()}
	c.marker = filepath.Join(t.TempDir(), "ran")
	// A remote helper on PATH, which a remote's vcs would run.
	bin := t.TempDir()
	os.Symlink(c.script(t, "remote.*.vcs", ""), filepath.Join(bin, "git-remote-canary"))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	upstream := t.TempDir()
	run(t, upstream, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, upstream, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d/c.txt": "c\n"})
	run(t, upstream, nil, nil, "add", "-A")
	run(t, upstream, nil, nil, "commit", "-qm", "base")
	run(t, upstream, nil, nil, "checkout", "-qb", "next")
	writeFiles(t, upstream, map[string]string{"a.txt": "a, next\n", "n.txt": "n\n"})
	run(t, upstream, nil, nil, "add", "-A")
	run(t, upstream, nil, nil, "commit", "-qm", "next")
	run(t, upstream, nil, nil, "checkout", "-q", "main")
	run(t, upstream, nil, nil, "config", "uploadpack.allowFilter", "true")
	run(t, upstream, nil, nil, "config", "uploadpack.allowAnySHA1InWant", "true")

	groups := map[string][][2]string{}
	for _, k := range gitenv.Keys {
		a := arm(t, k, c, upstream)
		if len(a.kv) == 0 {
			t.Fatalf("no arming for %s", k.Name)
		}
		groups[a.group] = append(groups[a.group], a.kv...)
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		armedOps(t, c, upstream, g, groups[g])
	}
	ran, _ := os.ReadFile(c.marker)
	lines := strings.Split(strings.TrimSpace(string(ran)), "\n")
	for _, k := range append(gitenv.Keys, gitenv.Key{Name: "hooks"}) {
		t.Run(k.Name, func(t *testing.T) {
			for _, l := range lines {
				if l == k.Name || strings.HasPrefix(l, k.Name+" ") {
					t.Errorf("git ran the program %s names (%s)", k.Name, l)
				}
			}
		})
	}
}

// armedOps makes the three repositories of group g, arms kv in each and
// a canary in each of their hooks, and runs airlock's operations on them.
func armedOps(t *testing.T, c *canaries, upstream, g string, kv [][2]string) {
	ctx := context.Background()
	tmp := t.TempDir()
	wt, bare, partial := filepath.Join(tmp, "wt"), filepath.Join(tmp, "bare.git"), filepath.Join(tmp, "partial.git")
	partialWT := filepath.Join(tmp, "partialwt") // a partial clone with a working tree, nothing checked out
	url := "file://" + upstream
	run(t, tmp, nil, nil, "clone", "-q", url, wt)
	run(t, tmp, nil, nil, "clone", "-q", "--bare", url, bare)
	run(t, tmp, nil, nil, "clone", "-q", "--bare", "--filter=blob:none", url, partial)
	run(t, tmp, nil, nil, "clone", "-q", "--no-checkout", "--filter=blob:none", url, partialWT)
	next := plumbing.NewHash(strings.TrimSpace(run(t, wt, nil, nil, "rev-parse", "origin/next")))
	// A remote's URL is replaced, not added to (a fetch uses the first).
	var armed [][2]string
	for _, p := range kv {
		if p[0] == "remote.origin.url" {
			for _, d := range []string{wt, bare, partial, partialWT} {
				run(t, d, nil, nil, "config", p[0], p[1])
			}
			continue
		}
		armed = append(armed, p)
	}
	text := configText(armed)
	for _, r := range []struct{ gitDir, how string }{{filepath.Join(wt, ".git"), "direct"}, {bare, "include"}, {partial, "includeIf"}, {filepath.Join(partialWT, ".git"), "include"}} {
		for _, h := range hookNames {
			os.WriteFile(filepath.Join(r.gitDir, "hooks", h), []byte("#!/bin/sh\necho 'hooks "+h+"' >>'"+c.marker+"'\nexit 1\n"), 0o755)
		}
		os.MkdirAll(filepath.Join(r.gitDir, "info"), 0o755)
		appendFile(t, filepath.Join(r.gitDir, "info", "attributes"), "* filter=x diff=x merge=x\n")
		cfg := filepath.Join(r.gitDir, "config")
		switch r.how {
		case "direct":
			appendFile(t, cfg, text)
		case "include":
			appendFile(t, filepath.Join(r.gitDir, "armed.conf"), text)
			appendFile(t, cfg, "[include]\n\tpath = armed.conf\n")
		case "includeIf":
			appendFile(t, filepath.Join(r.gitDir, "armed.conf"), text)
			appendFile(t, cfg, "[includeIf \"gitdir:/\"]\n\tpath = armed.conf\n")
		}
	}
	// ssh and git:// to a closed port on loopback fail (after the
	// repository's sshCommand or gitProxy would have run).
	fetches := g != "ssh" && g != "proxy"

	// The partial clones: a pull fetches their missing blobs, a read gets one.
	for _, r := range []struct {
		dir  string
		open func(context.Context, string) (*targets.Local, error)
	}{{partial, targets.OpenLocalBare}, {partialWT, targets.OpenLocal}} {
		src, err := r.open(ctx, r.dir)
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		t.Cleanup(func() { src.Close() })
		sb := newSandbox(t, src)
		head, err := src.Fetch(ctx, "refs/heads/main", nil, sb.store)
		switch {
		case !fetches && !errors.Is(err, gitread.ErrPromisor):
			t.Errorf("%s: the pull from %s, whose remote is out of reach: %v; want %v", g, r.dir, err, gitread.ErrPromisor)
		case fetches && err != nil:
			t.Errorf("%s: the pull from %s: %v", g, r.dir, err)
		case fetches:
			if _, err := sb.area.SeedFrom(head, nil); err != nil {
				t.Errorf("%s: seeding from %s: %v", g, r.dir, err)
			} else if got, err := sb.ws.ReadFile("d/c.txt"); err != nil || string(got) != "c\n" {
				t.Errorf("%s: reading a file of %s: %q %v", g, r.dir, got, err)
			}
		}
	}

	// The working tree and the bare repository: a pull, a lazy read, a
	// push through the gate.
	pushed := map[string]plumbing.Hash{}
	for _, r := range []struct {
		dir  string
		open func(context.Context, string) (*targets.Local, error)
	}{{wt, targets.OpenLocal}, {bare, targets.OpenLocalBare}} {
		tgt, err := r.open(ctx, r.dir)
		if err != nil {
			t.Fatalf("%s: opening %s: %v", g, r.dir, err)
		}
		t.Cleanup(func() { tgt.Close() })
		sb := newSandbox(t, tgt)
		head, err := tgt.Fetch(ctx, "refs/heads/main", nil, sb.store)
		if err == nil {
			_, err = sb.area.SeedFrom(head, nil)
		}
		if err != nil {
			t.Errorf("%s: the pull from %s: %v", g, r.dir, err)
			continue
		}
		if got, err := sb.ws.ReadFile("b.txt"); err != nil || string(got) != "b\n" {
			t.Errorf("%s: reading b.txt of %s: %q %v", g, r.dir, got, err)
		}
		sb.ws.WriteFile("new.txt", []byte("from the worker\n"), 0o644)
		id, err := sb.push(t, tgt, "refs/heads/main", head)
		now, _ := tgt.Head(ctx, "refs/heads/main")
		pushed[r.dir] = now
		switch {
		case g == "procreceive" && r.dir == bare:
			// (A checked-out branch moves by update-ref, after its
			// objects went in under a ref of airlock's.)
			if err == nil || !strings.Contains(err.Error(), "git config --unset-all receive.procReceiveRefs") || now != head {
				t.Errorf("%s: a push to %s, whose refs need the proc-receive hook: %v (main at %s); want a refusal naming the hook", g, r.dir, err, now)
			}
		case err != nil || now != id:
			t.Errorf("%s: the push to %s: %v (main at %s, pushed %s)", g, r.dir, err, now, id)
		}
	}

	// An interrupted push to the working tree, rolled forward at the
	// next open.
	if err := targets.InterruptPush(ctx, wt, "refs/heads/main", pushed[wt], next); err != nil {
		t.Errorf("%s: interrupting a push: %v", g, err)
		return
	}
	tgt, err := targets.OpenLocal(ctx, wt)
	if err != nil {
		t.Errorf("%s: recovering: %v", g, err)
		return
	}
	tgt.Close()
	if data, err := os.ReadFile(filepath.Join(wt, "a.txt")); err != nil || string(data) != "a, next\n" {
		t.Errorf("%s: after the roll-forward a.txt holds %q (%v)", g, data, err)
	}
}

// TestLazyReadOfAPartialClone: a blob a partial clone lacks, read from a
// resumed session's source (no pull fetched it first), is fetched by
// airlock from the promisor remote's URL: git's own lazy fetch, which
// runs the repository's remote.origin.uploadpack, does not. With the
// remote gone, the read says the blob is missing, and nothing runs.
func TestLazyReadOfAPartialClone(t *testing.T) {
	c := &canaries{dir: t.TempDir()}
	c.marker = filepath.Join(t.TempDir(), "ran")
	upstream := t.TempDir()
	run(t, upstream, nil, nil, "init", "-q", "-b", "main", ".")
	writeFiles(t, upstream, map[string]string{"a.txt": "a\n"})
	run(t, upstream, nil, nil, "add", "-A")
	run(t, upstream, nil, nil, "commit", "-qm", "base")
	run(t, upstream, nil, nil, "config", "uploadpack.allowFilter", "true")
	run(t, upstream, nil, nil, "config", "uploadpack.allowAnySHA1InWant", "true")
	blob := plumbing.NewHash(strings.TrimSpace(run(t, upstream, nil, nil, "rev-parse", "main:a.txt")))
	partial := filepath.Join(t.TempDir(), "partial.git")
	run(t, upstream, nil, nil, "clone", "-q", "--bare", "--filter=blob:none", "file://"+upstream, partial)
	run(t, partial, nil, nil, "config", "remote.origin.uploadpack", c.script(t, "remote.origin.uploadpack", "git-upload-pack"))
	src, err := targets.OpenSource(context.Background(), "local-bare:"+partial)
	if err != nil {
		t.Fatal(err)
	}
	defer src.(interface{ Close() error }).Close()
	if data, err := src.ReadBlob(blob, 1<<20); err != nil || string(data) != "a\n" {
		t.Errorf("reading a blob the partial clone lacks: %q %v", data, err)
	}

	// A second clone, its remote gone: the read fails, as missing.
	gone := filepath.Join(t.TempDir(), "gone.git")
	run(t, upstream, nil, nil, "clone", "-q", "--bare", "--filter=blob:none", "file://"+upstream, gone)
	run(t, gone, nil, nil, "config", "remote.origin.url", "file://"+filepath.Join(t.TempDir(), "nothing"))
	run(t, gone, nil, nil, "config", "remote.origin.uploadpack", c.script(t, "remote.origin.uploadpack", "git-upload-pack"))
	src2, err := targets.OpenSource(context.Background(), "local-bare:"+gone)
	if err != nil {
		t.Fatal(err)
	}
	defer src2.(interface{ Close() error }).Close()
	if _, err := src2.ReadBlob(blob, 1<<20); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("reading a blob a partial clone cannot fetch: %v; want %v", err, plumbing.ErrObjectNotFound)
	}
	if ran, _ := os.ReadFile(c.marker); len(ran) > 0 {
		t.Errorf("git ran what the repository's config names:\n%s", ran)
	}
}
