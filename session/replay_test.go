package session_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/worker"
)

// TestReplayHistoryRisk replays consecutive commits of a real repository
// as the default worker's pushes to the user's own working tree: each
// commit's change (against its first parent) is written into the sandbox,
// staged with the commit's message, asked through the real request
// builder and risk code, approved, and landed, before the next. It
// reports the share of pushes that need a typed yes, the flags per push,
// and the high flags by kind (the false alarms of the risk model: a real
// project's own history pushed to its own checked-out branch), and it
// fails on the two false alarms issue 33 found: a push to the checked-out
// branch flagged as a protected branch, a file git calls binary flagged
// as deceptive text.
//
// It runs with AIRLOCK_REPLAY_REPO=PATH (a repository, bare or not), or
// with AIRLOCK_LONG_TESTS on the repository this test is in, when it is
// one. AIRLOCK_REPLAY_FROM is the newest commit replayed (default HEAD),
// AIRLOCK_REPLAY_COMMITS how many (default 25); AIRLOCK_REPLAY_MEASURE_ONLY
// reports without failing (to measure another version of the risk code).
func TestReplayHistoryRisk(t *testing.T) {
	src := os.Getenv("AIRLOCK_REPLAY_REPO")
	if src == "" && longTests {
		out, err := exec.Command("git", "rev-parse", "--show-toplevel", "--is-shallow-repository").Output()
		if f := strings.Fields(string(out)); err == nil && len(f) == 2 && f[1] == "false" {
			src = f[0]
		} else if err == nil {
			t.Skip("this checkout is shallow: set AIRLOCK_REPLAY_REPO=PATH to a repository with history")
		}
	}
	if src == "" {
		t.Skip("set AIRLOCK_REPLAY_REPO=PATH (or AIRLOCK_LONG_TESTS=1 in a checkout) to replay a real history")
	}
	from := envOr("AIRLOCK_REPLAY_FROM", "HEAD")
	n, err := strconv.Atoi(envOr("AIRLOCK_REPLAY_COMMITS", "25"))
	if err != nil || n < 1 {
		t.Fatalf("AIRLOCK_REPLAY_COMMITS: %q is not a count", os.Getenv("AIRLOCK_REPLAY_COMMITS"))
	}
	list := strings.Fields(git(t, src, "rev-list", "--first-parent", "-n", strconv.Itoa(n+1), "--reverse", from))
	if len(list) < 2 {
		t.Fatalf("%s has no history before %s", src, from)
	}
	commits := list[1:]
	dir := t.TempDir()
	git(t, dir, "clone", "-q", "--no-checkout", src, ".")
	git(t, dir, "checkout", "-q", "-B", "main", list[0])
	git(t, dir, "config", "user.email", "replay@example.com")
	git(t, dir, "config", "user.name", "replay")
	e := newEnvWorker(t, worker.Default(dir), config{timeout: time.Minute})
	rep := &replayReport{high: map[string][]string{}}
	measureOnly := os.Getenv("AIRLOCK_REPLAY_MEASURE_ONLY") != ""
	for i, c := range commits {
		binaries, skipped := replayCommit(t, e, src, c)
		if _, err := e.s.Stage(nil, git(t, src, "log", "-1", "--format=%B", c)); err != nil {
			t.Logf("%d/%d %s: nothing to push (%v; %d paths skipped)", i+1, len(commits), c[:8], err, skipped)
			continue
		}
		done := make(chan error, 1)
		go func() {
			_, err := e.s.Push(context.Background(), "", "", nil)
			done <- err
		}()
		req := waitPending(t, e.gate, 1)[0]
		rep.add(c, req)
		if _, err := e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve, By: "reviewer"}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: the push failed: %v", c[:8], err)
		}
		if measureOnly {
			continue
		}
		for _, f := range req.Flags {
			switch {
			case f.Code == approval.FlagProtectedRef:
				t.Errorf("%s: a push to the branch checked out in the user's own repository is flagged: %s", c[:8], f.Message)
			case f.Code == approval.FlagTerminal && binaries[f.Path]:
				t.Errorf("%s: %s, binary to git, is flagged as deceptive text: %s", c[:8], f.Path, f.Message)
			}
		}
	}
	rep.log(t, src, from)
}

// replayCommit writes commit c's change against its first parent into
// the sandbox; it returns the paths git calls binary and how many paths
// it could not write (symlinks, submodules, paths the sandbox denies).
func replayCommit(t *testing.T, e *env, src, c string) (binaries map[string]bool, skipped int) {
	t.Helper()
	binaries = map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(git(t, src, "diff", "--numstat", "--no-renames", "-z", c+"^1", c)), "\x00") {
		if f := strings.SplitN(l, "\t", 3); len(f) == 3 && f[0] == "-" {
			binaries[f[2]] = true
		}
	}
	raw := strings.Split(strings.TrimSuffix(git(t, src, "diff", "--raw", "--no-renames", "-z", c+"^1", c), "\x00"), "\x00")
	for i := 0; i+1 < len(raw); i += 2 {
		meta, p := strings.Fields(strings.TrimPrefix(raw[i], ":")), raw[i+1]
		if len(meta) < 5 {
			continue
		}
		mode, status := meta[1], meta[4]
		var err error
		switch {
		case status == "D":
			err = e.s.Workspace().Remove(p)
		case mode == "100644" || mode == "100755":
			perm := os.FileMode(0o644)
			if mode == "100755" {
				perm = 0o755
			}
			data := git(t, src, "cat-file", "blob", meta[3])
			if err = e.s.Workspace().MkdirAll(filepath.Dir(p), 0o755); err == nil {
				if err = e.s.Workspace().WriteFile(p, []byte(data), perm); err == nil {
					err = e.s.Workspace().Chmod(p, perm)
				}
			}
		default:
			err = fmt.Errorf("mode %s", mode)
		}
		if err != nil {
			skipped++
		}
	}
	return binaries, skipped
}

// replayReport gathers the figures of a replay.
type replayReport struct {
	pushes, yes, flags, highs int
	bySeverity                [4]int
	high                      map[string][]string // code -> "commit: message"
	lines                     []string
}

func (r *replayReport) add(c string, req *approval.Request) {
	r.pushes++
	r.flags += len(req.Flags)
	var high, others []string
	for _, f := range req.Flags {
		if f.Severity != approval.High {
			others = append(others, f.Code)
		}
		if int(f.Severity) < len(r.bySeverity) {
			r.bySeverity[f.Severity]++
		}
		if f.Severity == approval.High {
			high = append(high, f.Code)
			r.high[f.Code] = append(r.high[f.Code], c[:8]+": "+f.Message)
		}
	}
	if len(high) > 0 {
		r.yes++
		r.highs += len(high)
	}
	r.lines = append(r.lines, fmt.Sprintf("%s  %3d files  %2d flags  high: %s  others: %s", c[:8], len(req.Files), len(req.Flags),
		strings.Join(high, ","), strings.Join(others, ",")))
}

func (r *replayReport) log(t *testing.T, src, from string) {
	var b strings.Builder
	fmt.Fprintf(&b, "replay of %d pushes of %s up to %s:\n", r.pushes, src, from)
	for _, l := range r.lines {
		b.WriteString("  " + l + "\n")
	}
	if r.pushes > 0 {
		fmt.Fprintf(&b, "REPLAY pushes %d, needing yes %d (%.0f%%), flags %d (%.2f a push: high %d, medium %d, low %d)\n",
			r.pushes, r.yes, 100*float64(r.yes)/float64(r.pushes), r.flags, float64(r.flags)/float64(r.pushes),
			r.bySeverity[approval.High], r.bySeverity[approval.Medium], r.bySeverity[approval.Low])
	}
	codes := make([]string, 0, len(r.high))
	for c := range r.high {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(&b, "REPLAY high %s: %d, e.g. %s\n", c, len(r.high[c]), clipTo(r.high[c][0], 160))
	}
	t.Log(b.String())
}

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
