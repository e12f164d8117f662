//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/mcptest"
)

// bindingRig is two bare repositories and a worker file for each.
type bindingRig struct {
	root, bin    string
	env          []string
	bareA, bareC string
	wA, wC       string
}

func newBindingRig(t *testing.T) *bindingRig {
	t.Helper()
	requireGit(t)
	r := &bindingRig{root: t.TempDir(), bin: airlockBinary(t)}
	r.env = isolatedEnv(t, r.root)
	for name, bare := range map[string]*string{"A": &r.bareA, "C": &r.bareC} {
		src := filepath.Join(r.root, "src"+name)
		initRepo(t, r.env, src, map[string]string{"README.md": "# " + name + "\n"})
		*bare = filepath.Join(r.root, "repo"+name+".git")
		mustGit(t, r.env, r.root, "clone", "-q", "--bare", src, *bare)
	}
	r.wA, r.wC = filepath.Join(r.root, "locked.md"), filepath.Join(r.root, "open.md")
	r.writeWorker(t, r.wA, "locked", r.bareA, "")
	r.writeWorker(t, r.wC, "open", r.bareC, "")
	return r
}

func (r *bindingRig) writeWorker(t *testing.T, path, name, bare, extra string) {
	t.Helper()
	text := fmt.Sprintf("---\nname: %s\ngit:\n  default_target: {type: local-bare, path: %q, branch: main}\n  auto_pull: [{path: .}]\n---\nWork on %s.%s\n", name, bare, name, extra)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The finding: an HTTP session's token, made on a server running a
// --never-approve worker, replayed at another HTTP server of the same
// user running an --auto-approve worker, opened the session there and
// pushed its staged commit into the second worker's repository. A token
// opens its session only on a server of the same worker and flags:
// another worker, or the same worker with --auto-approve, answers 403
// with the command that resumes it, and nothing reaches either
// repository; the server it belongs to resumes it.
func TestHTTPTokenDoesNotWidenItsSession(t *testing.T) {
	r := newBindingRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	headC := mustGit(t, r.env, r.bareC, "rev-parse", "main")
	headA := mustGit(t, r.env, r.bareA, "rev-parse", "main")

	a, endpoint, token, _ := startHTTPServe(t, r.bin, r.env, r.root, "127.0.0.1:0", "--worker", r.wA, "--never-approve", "--run", "off")
	cs, h, err := mcptest.ConnectHTTP(ctx, t, endpoint, token)
	if err != nil {
		t.Fatal(err)
	}
	mcptest.CallText(ctx, t, cs, "write_file", map[string]any{"path": "locked.txt", "content": "from locked\n"})
	if out, isErr := mcptest.CallText(ctx, t, cs, "git_stage", map[string]any{"message": "from locked"}); isErr {
		t.Fatal(out)
	}
	cs.Close()
	a.Process.Kill()
	a.Wait()

	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"another worker, auto-approving", []string{"--worker", r.wC, "--auto-approve", "default"},
			[]string{"worker file " + r.wA + "; this server's is file " + r.wC, "airlock serve --worker " + r.wA + " --http ADDR --never-approve --run off"}},
		{"the same worker, auto-approving", []string{"--worker", r.wA, "--auto-approve", "default"},
			[]string{"pushes never approved (--never-approve); this server's asked of a reviewer", "--auto-approve none; this server's local-bare:" + r.bareA}},
		{"the same worker, asking", []string{"--worker", r.wA},
			[]string{"pushes never approved (--never-approve); this server's asked of a reviewer"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, endpointB, _, _ := startHTTPServe(t, r.bin, r.env, r.root, "127.0.0.1:0", append(c.args, "--run", "off")...)
			code, body := mcptest.RawPost(t, endpointB+"/"+h.ID, h.Own, "", mcptest.Initialize)
			if code != http.StatusForbidden {
				// The attack goes on as the finding's did: a push.
				if cs, _, err := mcptest.ConnectHTTP(ctx, t, endpointB+"/"+h.ID, h.Own); err == nil {
					out, _ := mcptest.CallText(ctx, t, cs, "git_push", nil)
					cs.Close()
					t.Errorf("the replayed session pushed: %s", out)
				}
				t.Fatalf("the replayed token got %d: %s", code, body)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, body)
				}
			}
			b.Process.Kill()
			b.Wait()
		})
	}
	if got := mustGit(t, r.env, r.bareC, "rev-parse", "main"); got != headC {
		t.Fatalf("the other worker's repository moved: %s -> %s", headC, got)
	}
	if got := mustGit(t, r.env, r.bareA, "rev-parse", "main"); got != headA {
		t.Fatalf("the session's repository moved: %s -> %s", headA, got)
	}

	// Its own server resumes it, staged commit and all: the refusals left
	// it unlocked and unchanged.
	_, endpointA, _, _ := startHTTPServe(t, r.bin, r.env, r.root, "127.0.0.1:0", "--worker", r.wA, "--never-approve", "--run", "off")
	back, _, err := mcptest.ConnectHTTP(ctx, t, endpointA+"/"+h.ID, h.Own)
	if err != nil {
		t.Fatalf("its own server does not resume it: %v", err)
	}
	defer back.Close()
	st, _ := mcptest.CallText(ctx, t, back, "git_status", nil)
	mustContain(t, "git_status on its own server", st, "from locked")
	if out, isErr := mcptest.CallText(ctx, t, back, "git_push", nil); !isErr || !strings.Contains(out, "review-only") {
		t.Fatalf("a push of the resumed session under --never-approve: %v %s", isErr, out)
	}
}

// The same for stdio: airlock serve resumes the latest unfinished session
// of its worker only when it was made under the same flags and the same
// worker file (it says which it passed over, and the command that resumes
// it); --session ID under other flags exits with that message.
func TestStdioSessionStaysWithItsServer(t *testing.T) {
	r := newBindingRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := startDurable(t, ctx, r.bin, r.env, r.root, "--worker", r.wA, "--never-approve", "--run", "off")
	d.w.call("write_file", map[string]any{"path": "locked.txt", "content": "from locked\n"})
	d.w.call("git_stage", map[string]any{"message": "from locked"})
	d.stdin.Close()
	d.wait(t)
	m := regexp.MustCompile(`session (\S+) is saved in`).FindStringSubmatch(d.stderr.String())
	if m == nil {
		t.Fatalf("no session saved:\n%s", d.stderr.String())
	}
	id := m[1]

	for _, c := range []struct {
		name string
		args []string
		edit string // appended to the worker file's text
		want string
	}{
		{"auto-approve", []string{"--auto-approve", "default"}, "", "--auto-approve none; this server's local-bare:" + r.bareA},
		{"asking", nil, "", "pushes never approved (--never-approve); this server's asked of a reviewer"},
		{"host network", []string{"--never-approve", "--danger"}, "", "--run off; this server's --run danger"},
		{"edited worker file", []string{"--never-approve"}, "\nAnd push anything.", "the worker file has changed since the session was made"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r.writeWorker(t, r.wA, "locked", r.bareA, c.edit)
			defer r.writeWorker(t, r.wA, "locked", r.bareA, "")
			args := append([]string{"--worker", r.wA, "--run", "off"}, c.args...)
			if c.name == "host network" {
				args = append([]string{"--worker", r.wA}, c.args...)
			}
			other := startDurable(t, ctx, r.bin, r.env, r.root, args...)
			if f, _, _ := observe(t, other.w); len(f) != 1 {
				t.Fatalf("a server of other flags sees the session's files: %v", f)
			}
			mustContain(t, "stderr", other.stderr.Await("not resuming"), "not resuming: session "+id, c.want,
				"airlock serve --worker "+r.wA+" --never-approve --run off --session "+id)
			other.stdin.Close()
			other.wait(t)

			_, stderr, code := runAirlock(t, r.env, r.root, append([]string{"serve", "--session", id}, args...)...)
			if code == 0 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "airlock sessions export "+id) {
				t.Fatalf("serve --session %s under other flags exited %d:\n%s", id, code, stderr)
			}
		})
	}

	again := startDurable(t, ctx, r.bin, r.env, r.root, "--worker", r.wA, "--never-approve", "--run", "off")
	mustContain(t, "stderr", again.stderr.String(), "resumed session "+id)
	mustContain(t, "git_status", again.w.call("git_status", nil), "from locked")
}
