package session_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/worker"
)

func pngBytes(t *testing.T, shade uint8) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for x := range 8 {
		for y := range 8 {
			img.Set(x, y, color.RGBA{uint8(x * 30), uint8(y * 30), shade, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// askedFlags pushes what is staged and returns the request's flags as
// "severity code path", rejecting it afterwards.
func askedFlags(t *testing.T, e *env) (*approval.Request, []string) {
	t.Helper()
	go e.s.Push(context.Background(), "", "", nil)
	req := waitPending(t, e.gate, 1)[0]
	var out []string
	for _, f := range req.Flags {
		out = append(out, f.Severity.String()+" "+f.Code+" "+f.Path)
	}
	if _, err := e.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, By: "reviewer"}); err != nil {
		t.Fatal(err)
	}
	return req, out
}

// The default worker pushes to the branch checked out in the user's own
// repository: its expected target, no high risk, so no yes to type. A
// byte-identical copy of the repository's logo raises nothing; a new
// picture is low (binary), never "deceptive content" for its 0x89.
func TestDefaultWorkerPushAsksNoYes(t *testing.T) {
	logo := pngBytes(t, 0)
	r := repo(t, false, map[string]string{"README.md": "# p\n", "docs/logo.png": logo})
	e := newEnvWorker(t, worker.Default(r), config{})
	e.write(t, "site/logo.png", logo)
	e.write(t, "site/new.png", pngBytes(t, 200))
	e.write(t, "site/index.md", "# site\n")
	if _, err := e.s.Stage(nil, "Add the site"); err != nil {
		t.Fatal(err)
	}
	req, flags := askedFlags(t, e)
	if want := []string{"low binary site/new.png"}; !reflect.DeepEqual(flags, want) {
		t.Errorf("flags %q, want %q: %+v", flags, want, req.Flags)
	}
	if req.RefRole != approval.BranchCheckedOut || approval.ShortRef(req.Ref) != "main" {
		t.Errorf("ref %s is %q to the target, want %q", req.Ref, req.RefRole, approval.BranchCheckedOut)
	}
	for _, f := range req.Files {
		if want := map[string]string{"site/logo.png": "docs/logo.png"}[f.Path]; f.CopyOf != want {
			t.Errorf("%s: a copy of %q, want %q", f.Path, f.CopyOf, want)
		}
	}
}

// Branch risk comes from the target: a bare repository's HEAD branch is
// what every clone checks out (high); the operator's protect list (the
// worker file's, serve --protect's) names others, even the checked-out
// branch; another branch of a bare repository is not high for its name.
func TestBranchRiskFromTheTarget(t *testing.T) {
	t.Run("bare HEAD", func(t *testing.T) {
		e := newEnv(t, repo(t, true, map[string]string{"README.md": "# p\n"}), config{})
		e.write(t, "a.txt", "a\n")
		must(t, errOnly(e.s.Stage(nil, "A")))
		req, flags := askedFlags(t, e)
		if want := []string{"high protected-ref "}; !reflect.DeepEqual(flags, want) || !strings.Contains(req.Flags[0].Message, "the default branch of") {
			t.Errorf("flags %q, want %q: %+v", flags, want, req.Flags)
		}
	})
	t.Run("bare, another branch", func(t *testing.T) {
		b := repo(t, true, map[string]string{"README.md": "# p\n"})
		git(t, b, "branch", "work", "main")
		w := &worker.Worker{Name: "tester", Author: worker.Person{Name: "T", Email: "t@example.com"},
			DefaultTarget: &worker.TargetSpec{Type: "local-bare", Path: b, Branch: "work"}, Targets: map[string]*worker.TargetSpec{},
			AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local-bare", Path: b, Branch: "work"}}}}
		e := newEnvWorker(t, w, config{})
		e.write(t, "a.txt", "a\n")
		must(t, errOnly(e.s.Stage(nil, "A")))
		if _, flags := askedFlags(t, e); len(flags) != 0 {
			t.Errorf("flags %q, want none", flags)
		}
	})
	t.Run("protected by the worker file", func(t *testing.T) {
		w := worker.Default(repo(t, false, map[string]string{"README.md": "# p\n"}))
		w.Protect = []string{"ma*"}
		e := newEnvWorker(t, w, config{})
		e.write(t, "a.txt", "a\n")
		must(t, errOnly(e.s.Stage(nil, "A")))
		req, flags := askedFlags(t, e)
		if want := []string{"high protected-ref "}; !reflect.DeepEqual(flags, want) || !strings.Contains(req.Flags[0].Message, "pushes to protected branch main") {
			t.Errorf("flags %q, want %q: %+v", flags, want, req.Flags)
		}
	})
}

func errOnly[T any](_ T, err error) error { return err }
