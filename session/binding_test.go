package session_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

func testWorker(t *testing.T, dir, text string) *worker.Worker {
	t.Helper()
	path := filepath.Join(dir, "worker.md")
	must(t, os.WriteFile(path, []byte(text), 0o600))
	w, err := worker.Load(path)
	must(t, err)
	return w
}

const bindingWorker = "---\nname: locked\ngit:\n  default_target: {type: local, path: ./repoA, branch: main}\n  targets:\n    other: {type: local-bare, path: ./other.git}\n---\nDo the work.\n"

// A session resumes only under the worker file as it was, its targets
// and the operator's policy: each difference is refused, says what
// differs and names the command that resumes the session. Secrets in
// --run-env are compared by hash, never shown.
func TestCheckOwner(t *testing.T) {
	dir := t.TempDir()
	w := testWorker(t, dir, bindingWorker)
	edited := testWorker(t, t.TempDir(), strings.Replace(bindingWorker, "Do the work.", "Do other work.", 1))
	moved := testWorker(t, t.TempDir(), bindingWorker) // same text, elsewhere: its targets resolve elsewhere
	never := session.NewPolicy(true, nil, session.RunReadOnly, nil, nil)
	key := "file:" + w.File
	made := session.Meta{ID: "20260101-000000-abcd", WorkerKey: key, Binding: ptr(session.BindingOf(w, never))}
	cases := []struct {
		name  string
		key   string
		b     session.Binding
		want  []string // in the error; none: it opens
		never string   // never in the error
	}{
		{name: "same", key: key, b: session.BindingOf(w, never)},
		{name: "same, lists in another order", key: key, b: session.BindingOf(w, session.NewPolicy(true, nil, session.RunReadOnly, nil, nil))},
		{name: "auto-approve", key: key, b: session.BindingOf(w, session.NewPolicy(false, []string{"local:" + filepath.Join(dir, "repoA")}, session.RunReadOnly, nil, nil)),
			want: []string{"never approved (--never-approve); this server's asked of a reviewer", "--auto-approve none; this server's local:", "airlock serve --worker " + w.File + " --never-approve --run read-only --session 20260101-000000-abcd"}},
		{name: "run mode", key: key, b: session.BindingOf(w, session.NewPolicy(true, nil, session.RunDanger, nil, nil)),
			want: []string{"--run read-only; this server's --run danger"}},
		{name: "host paths", key: key, b: session.BindingOf(w, session.NewPolicy(true, nil, session.RunReadOnly, []string{"/opt/cache"}, nil)),
			want: []string{"--run-ro none; this server's /opt/cache"}},
		{name: "secrets", key: key, b: session.BindingOf(w, session.NewPolicy(true, nil, session.RunReadOnly, nil, []string{"TOKEN=s3cret"})),
			want: []string{"--run-env none; this server's TOKEN"}, never: "s3cret"},
		{name: "edited worker file", key: key, b: session.BindingOf(edited, never),
			want: []string{"the worker file has changed since the session was made"}},
		{name: "other worker", key: "file:" + moved.File, b: session.BindingOf(moved, never),
			want: []string{"worker file " + w.File + "; this server's is file " + moved.File}},
		{name: "same file, targets resolved elsewhere", key: key, b: session.BindingOf(moved, never),
			want: []string{"targets default=local:" + filepath.Join(dir, "repoA")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := session.CheckOwner(made, c.key, c.b)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var be *session.BindingError
			if !errors.As(err, &be) || !errors.Is(err, session.ErrOtherServer) {
				t.Fatalf("opened, or refused for another reason: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal does not say %q:\n%v", w, err)
				}
			}
			if c.never != "" && strings.Contains(err.Error(), c.never) {
				t.Errorf("the refusal shows %q:\n%v", c.never, err)
			}
		})
	}
	var sec session.Meta
	data, _ := json.Marshal(session.Meta{Binding: ptr(session.BindingOf(w, session.NewPolicy(false, nil, "", nil, []string{"TOKEN=s3cret"})))})
	must(t, json.Unmarshal(data, &sec))
	if strings.Contains(string(data), "s3cret") || sec.Binding.Policy.Run != "off" {
		t.Errorf("meta.json of a session with --run-env: %s", data)
	}
}

func ptr[T any](v T) *T { return &v }

// unfinished makes a saved session that holds a changed file, as its
// server left it when it closed.
func unfinished(t *testing.T, root string, m session.Meta) *session.StateDir {
	t.Helper()
	d, err := session.CreateStateDir(root, m)
	must(t, err)
	data, _ := json.Marshal(session.Summary{Changed: 1, Closed: true})
	must(t, os.WriteFile(filepath.Join(d.Path, "summary.json"), data, 0o600))
	d.Unlock()
	return d
}

// A server resumes the newest unfinished session of its worker made
// under its own binding: a newer one of other flags is passed over (and
// said to the operator, with the command that resumes it); one saved
// before sessions recorded a binding is the worker's, and is bound when
// it resumes.
func TestLatestUnfinishedOfTheSameBinding(t *testing.T) {
	root := t.TempDir()
	w := testWorker(t, t.TempDir(), bindingWorker)
	ask := session.BindingOf(w, session.NewPolicy(false, nil, session.RunWorkspaceWrite, nil, nil))
	never := session.BindingOf(w, session.NewPolicy(true, nil, session.RunWorkspaceWrite, nil, nil))
	legacy := unfinished(t, root, session.Meta{Worker: "locked", WorkerKey: "test"})
	mine := unfinished(t, root, session.Meta{Worker: "locked", WorkerKey: "test", Binding: &ask})
	theirs := unfinished(t, root, session.Meta{Worker: "locked", WorkerKey: "test", Binding: &never})
	bumpCreated(t, legacy, 1)
	bumpCreated(t, mine, 2)
	bumpCreated(t, theirs, 3)

	d, others, err := session.LatestUnfinished(session.Local(root), "test", ask)
	must(t, err)
	if d == nil || d.SessionID() != mine.ID {
		t.Fatalf("resumed %+v, want %s", d, mine.ID)
	}
	d.Unlock()
	if len(others) != 1 || !strings.Contains(others[0].Error(), theirs.ID) || !strings.Contains(others[0].Error(), "--never-approve --session "+theirs.ID) {
		t.Fatalf("passed over: %v", others)
	}
	// The legacy one, once the bound one is gone: claimed for this binding.
	must(t, session.Local(root).Remove(mine.ID))
	d, _, err = session.LatestUnfinished(session.Local(root), "test", ask)
	must(t, err)
	if d == nil || d.SessionID() != legacy.ID || d.Info().Binding == nil {
		t.Fatalf("resumed %+v, want %s bound", d, legacy.ID)
	}
	d.Unlock()
	again, err := session.OpenStateDir(root, legacy.ID)
	must(t, err)
	defer again.Unlock()
	if err := again.Claim("test", never); !errors.Is(err, session.ErrOtherServer) {
		t.Fatalf("a legacy session, once bound, opened under other flags: %v", err)
	}
}

// bumpCreated sets a session's creation time to n seconds after the
// epoch of the test, so that the order of sessions is the test's.
func bumpCreated(t *testing.T, d *session.StateDir, n int) {
	t.Helper()
	m := d.Meta
	m.Created = m.Created.Add(-1000 * time.Second).Add(time.Duration(n) * time.Second)
	data, err := json.Marshal(m)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(d.Path, "meta.json"), data, 0o600))
}
