package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/sandbox/mirror"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

// jail is a mirror of a workspace holding files, ready to run in.
type jail struct {
	t  *testing.T
	ws *memfs.Workspace
	m  *mirror.Mirror
}

func newJail(t *testing.T, files map[string]string) *jail {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	ws, err := memfs.New()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := ws.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent := filepath.Join(traversable(t), "mirrors")
	uid, gid := sandbox.HostUser()
	m, err := mirror.New(parent, uid, gid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if _, _, err := m.Sync(context.Background(), ws.Snapshot()); err != nil {
		t.Fatal(err)
	}
	return &jail{t, ws, m}
}

func (j *jail) run(script string) (int, string, string) {
	j.t.Helper()
	lower, upper, work, root := j.m.Dirs()
	spec := sandbox.Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sandbox.Home},
		Lower: lower, Upper: upper, Work: work, Root: root}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := sandbox.Run(ctx, spec, nil, &stdout, &stderr)
	if err != nil {
		j.t.Fatalf("run %q: %v\nstderr: %s", script, err, stderr.String())
	}
	return code, stdout.String(), stderr.String()
}

func TestRunSeesTheWorkspaceAndWritesIntoTheUpperLayer(t *testing.T) {
	j := newJail(t, map[string]string{"a.txt": "hello\n", "d/b.txt": "b\n", "gone.txt": "x\n"})
	code, out, errOut := j.run("cat a.txt && pwd && echo new > d/c.txt && rm gone.txt && mkdir e && ln -s a.txt e/link")
	if code != 0 || out != "hello\n/workspace\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	changes, err := j.m.Changes(1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Path+":"+string(rune('0'+c.Kind)))
	}
	want := "d:3 d/c.txt:0 e:3 e/link:1 gone.txt:2"
	if strings.Join(got, " ") != want {
		t.Errorf("changes %v, want %s", got, want)
	}
}

// traversable is a temporary directory every user can pass through, as a
// root server's mirrors need (their jails run as nobody).
func traversable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	return dir
}
