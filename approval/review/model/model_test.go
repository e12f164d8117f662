package model_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
	"github.com/airlock-dev/airlock/internal/change"
)

const (
	hunkA1 = "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	hunkA2 = "@@ -10,4 +10,3 @@ func f() {\n ten\n-eleven\n-twelve\n+eleven and twelve\n thirteen\n"
	hunkB1 = "@@ -0,0 +1,2 @@\n+key\n+more\n"
	hunkA3 = "@@ -20,2 +19,3 @@\n twenty\n+added\n twenty-one\n"
)

var c1, c2 = plumbing.NewHash("1111111111111111111111111111111111111111"), plumbing.NewHash("2222222222222222222222222222222222222222")

// request is a push of two commits: a.go's two hunks and a new secret
// file (flagged high) in the first, a third hunk of a.go and a binary in
// the second.
func request() *approval.Request {
	return &approval.Request{
		ID: "req-1", Target: "local:/srv/app", Pickable: true,
		Commits: []approval.CommitInfo{
			{ID: c1, Message: "one\n", Files: []approval.FileDiff{
				{Path: "a.go", Op: change.Update, Header: "diff --git a/a.go b/a.go\nindex 1..2 100644\n", Hunks: []string{hunkA1, hunkA2}},
				{Path: "id_rsa", Op: change.Create, Header: "diff --git a/id_rsa b/id_rsa\nnew file mode 100644\n", Hunks: []string{hunkB1}},
			}},
			{ID: c2, Message: "two\n", Files: []approval.FileDiff{
				{Path: "a.go", Op: change.Update, Header: "diff --git a/a.go b/a.go\nindex 2..3 100644\n", Hunks: []string{hunkA3}},
				{Path: "logo.png", Op: change.Create, Header: "diff --git a/logo.png b/logo.png\nBinary files differ\n", Binary: true},
			}},
		},
		Flags: []approval.Flag{
			{Code: approval.FlagBinary, Severity: approval.Medium, Path: "logo.png"},
			{Code: approval.FlagSecret, Severity: approval.High, Path: "id_rsa"},
		},
	}
}

func TestLineNumbers(t *testing.T) {
	m := model.New(request())
	h := m.Hunk(model.Ref{Commit: 0, File: 0, Hunk: 1})
	want := []model.Line{
		{Kind: ' ', Text: "ten", Old: 10, New: 10, Changed: -1},
		{Kind: '-', Text: "eleven", Old: 11, Changed: 0},
		{Kind: '-', Text: "twelve", Old: 12, Changed: 1},
		{Kind: '+', Text: "eleven and twelve", New: 11, Changed: 2},
		{Kind: ' ', Text: "thirteen", Old: 13, New: 12, Changed: -1},
	}
	if !reflect.DeepEqual(h.Lines(), want) {
		t.Errorf("lines\n%+v\nwant\n%+v", h.Lines(), want)
	}
	if h.ID() != approval.HunkID(hunkA2) || h.Header != "@@ -10,4 +10,3 @@ func f() {" {
		t.Errorf("id %s header %q", h.ID(), h.Header)
	}
}

func TestOrderRiskFirst(t *testing.T) {
	m := model.New(request())
	got := m.HunkOrder()
	want := []model.Ref{{0, 1, 0}, {1, 1, -1}, {0, 0, 0}, {0, 0, 1}, {1, 0, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hunk order %v, want %v (the secret's hunk, the binary, then the push's order)", got, want)
	}
}

func TestDecide(t *testing.T) {
	r := request()
	hunk := func(c, f, i int, lines ...int) approval.AcceptedHunk {
		return approval.AcceptedHunk{Index: i, ID: approval.HunkID(r.Commits[c].Files[f].Hunks[i]), Lines: lines}
	}
	type op struct {
		ref    model.Ref
		line   int // -1: the whole hunk
		accept bool
	}
	cases := []struct {
		name    string
		ops     []op
		verdict approval.Verdict
		want    approval.Decision
		err     error
	}{
		{name: "nothing left out approves whole", verdict: approval.Approve,
			want: approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
		{name: "one hunk left out picks", verdict: approval.Approve, ops: []op{{model.Ref{0, 0, 1}, -1, false}},
			want: approval.Decision{Request: "req-1", Verdict: approval.Pick, By: "reviewer", Accept: []approval.Accepted{
				{Commit: c1, Files: []approval.AcceptedFile{{Path: "a.go", Hunks: []approval.AcceptedHunk{hunk(0, 0, 0)}}, {Path: "id_rsa", Hunks: []approval.AcceptedHunk{hunk(0, 1, 0)}}}},
				{Commit: c2, Files: []approval.AcceptedFile{{Path: "a.go", Hunks: []approval.AcceptedHunk{hunk(1, 0, 0)}}, {Path: "logo.png", Whole: true}}}}}},
		{name: "a line left out, a binary and a commit's file", verdict: approval.Approve,
			ops: []op{{model.Ref{0, 0, 1}, 1, false}, {model.Ref{1, 1, -1}, -1, false}, {model.Ref{0, 1, 0}, -1, false}, {model.Ref{1, 0, 0}, -1, false}},
			want: approval.Decision{Request: "req-1", Verdict: approval.Pick, By: "reviewer", Accept: []approval.Accepted{
				{Commit: c1, Files: []approval.AcceptedFile{{Path: "a.go", Hunks: []approval.AcceptedHunk{hunk(0, 0, 0), hunk(0, 0, 1, 0, 2)}}}}}}},
		{name: "a hunk left out then a line back", verdict: approval.Approve,
			ops: []op{{model.Ref{0, 0, 1}, -1, false}, {model.Ref{0, 0, 1}, 2, true}, {model.Ref{0, 1, 0}, -1, false}, {model.Ref{1, 0, 0}, -1, false}, {model.Ref{1, 1, -1}, -1, false}, {model.Ref{0, 0, 0}, -1, false}},
			want: approval.Decision{Request: "req-1", Verdict: approval.Pick, By: "reviewer", Accept: []approval.Accepted{
				{Commit: c1, Files: []approval.AcceptedFile{{Path: "a.go", Hunks: []approval.AcceptedHunk{hunk(0, 0, 1, 2)}}}}}}},
		{name: "left out then accepted again approves", verdict: approval.Approve,
			ops:  []op{{model.Ref{0, 0, 1}, -1, false}, {model.Ref{0, 0, 1}, -1, true}},
			want: approval.Decision{Request: "req-1", Verdict: approval.Approve, By: "reviewer"}},
		{name: "every line left out is the hunk left out", verdict: approval.Approve,
			ops: []op{{model.Ref{0, 0, 0}, 0, false}, {model.Ref{0, 0, 0}, 1, false}, {model.Ref{0, 1, 0}, -1, false}, {model.Ref{1, 0, 0}, -1, false}, {model.Ref{1, 1, -1}, -1, false}},
			want: approval.Decision{Request: "req-1", Verdict: approval.Pick, By: "reviewer", Accept: []approval.Accepted{
				{Commit: c1, Files: []approval.AcceptedFile{{Path: "a.go", Hunks: []approval.AcceptedHunk{hunk(0, 0, 1)}}}}}}},
		{name: "everything left out", verdict: approval.Approve,
			ops: []op{{model.Ref{0, 0, 0}, -1, false}, {model.Ref{0, 0, 1}, -1, false}, {model.Ref{0, 1, 0}, -1, false}, {model.Ref{1, 0, 0}, -1, false}, {model.Ref{1, 1, -1}, -1, false}},
			err: model.ErrNothingAccepted},
		{name: "reject keeps nothing of the selection", verdict: approval.Reject, ops: []op{{model.Ref{0, 0, 1}, -1, false}},
			want: approval.Decision{Request: "req-1", Verdict: approval.Reject, By: "reviewer", Reason: "why"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := model.New(r)
			for _, o := range c.ops {
				var err error
				if o.line < 0 {
					err = m.SetHunk(o.ref, o.accept)
				} else {
					err = m.SetLine(o.ref, o.line, o.accept)
				}
				if err != nil {
					t.Fatalf("%+v: %v", o, err)
				}
			}
			got, err := m.Decide(c.verdict, "why")
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decision\n%+v\nwant\n%+v", got, c.want)
			}
			if got.Accept != nil {
				if err := approval.CheckAccept(r, got.Accept); err != nil {
					t.Errorf("the gate would refuse it: %v", err)
				}
			}
		})
	}
}

func TestPickRefused(t *testing.T) {
	whole := request()
	whole.Pickable = false
	whole.Diff = "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n" + hunkA1
	files := request()
	files.Diff = whole.Diff + "diff --git a/b.go b/b.go\n--- a/b.go\n+++ b/b.go\n" + hunkA3
	files.Commits = nil
	inter := request()
	inter.Since = &approval.Since{Request: "req-0", Interdiff: whole.Diff}
	cases := []struct {
		name string
		m    *model.Review
		ref  model.Ref
		line int
		err  error
	}{
		{"not pickable", model.New(whole), model.Ref{0, 0, 0}, -1, model.ErrNotPickable},
		{"interdiff", model.NewInterdiff(inter, inter.Since.Interdiff), model.Ref{0, 0, 0}, -1, model.ErrReadOnly},
		{"a line of a push picked by file", model.New(files), model.Ref{0, 0, 0}, 0, model.ErrWholeFiles},
		{"no such hunk", model.New(request()), model.Ref{0, 0, 7}, -1, model.ErrNoSuchHunk},
		{"no such line", model.New(request()), model.Ref{0, 0, 0}, 2, model.ErrNoSuchLine},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.line < 0 {
				err = c.m.SetHunk(c.ref, false)
			} else {
				err = c.m.SetLine(c.ref, c.line, false)
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if c.m.LeftOut() {
				t.Error("a refused change changed the selection")
			}
		})
	}
	// A push picked file by file sends Paths.
	m := model.New(files)
	if err := m.SetHunk(model.Ref{0, 1, 0}, false); err != nil {
		t.Fatal(err)
	}
	d, err := m.Decide(approval.Approve, "")
	if err != nil || d.Verdict != approval.Pick || !reflect.DeepEqual(d.Paths, []string{"a.go"}) {
		t.Errorf("file pick: %+v, %v", d, err)
	}
}

func TestComments(t *testing.T) {
	cases := []struct {
		name     string
		ref      model.Ref
		from, to int
		want     approval.Comment
		place    string
		err      error
	}{
		{name: "an added line", ref: model.Ref{0, 0, 0}, from: 2, to: 2, want: approval.Comment{Path: "a.go", Line: 2, Commit: c1.String()}, place: "a.go:2 in commit 1111111"},
		{name: "a deleted line is on the old side", ref: model.Ref{0, 0, 1}, from: 1, to: 1,
			want: approval.Comment{Path: "a.go", Line: 11, Side: approval.SideOld, Commit: c1.String()}, place: "a.go:11 (old side) in commit 1111111"},
		{name: "deleted lines, a range on the old side", ref: model.Ref{0, 0, 1}, from: 2, to: 1,
			want: approval.Comment{Path: "a.go", Line: 11, EndLine: 12, Side: approval.SideOld, Commit: c1.String()}, place: "a.go:11-12 (old side) in commit 1111111"},
		{name: "a range with new lines is on the new side", ref: model.Ref{0, 0, 1}, from: 0, to: 4,
			want: approval.Comment{Path: "a.go", Line: 10, EndLine: 12, Commit: c1.String()}, place: "a.go:10-12 in commit 1111111"},
		{name: "the last commit to change a file names none", ref: model.Ref{1, 0, 0}, from: 1, to: 1, want: approval.Comment{Path: "a.go", Line: 20}, place: "a.go:20"},
		{name: "a file", ref: model.Ref{0, 1, -1}, want: approval.Comment{Path: "id_rsa"}, place: "id_rsa"},
		{name: "past the hunk", ref: model.Ref{0, 0, 0}, from: 1, to: 9, err: model.ErrBadRange},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := model.New(request())
			got, err := m.CommentOn(c.ref, c.from, c.to)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("comment %+v, want %+v", got, c.want)
			}
			if p := model.Place(got); p != c.place {
				t.Errorf("place %q, want %q", p, c.place)
			}
		})
	}
}

func TestCommentEditDelete(t *testing.T) {
	m := model.New(request())
	c, _ := m.CommentOn(model.Ref{0, 0, 1}, 1, 1)
	c.Text = "  why delete this?  "
	if _, err := m.AddComment(c); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddComment(approval.Comment{Text: "   "}); !errors.Is(err, model.ErrEmptyComment) {
		t.Errorf("an empty comment: %v", err)
	}
	if _, err := m.AddComment(approval.Comment{Path: "a.go", Line: 5, EndLine: 3, Text: "x"}); err == nil {
		t.Error("a backward range was taken")
	}
	if err := m.EditComment(0, ""); !errors.Is(err, model.ErrEmptyComment) || m.Comments()[0].Text != "why delete this?" {
		t.Errorf("an edit to nothing: %v, %+v", err, m.Comments())
	}
	if err := m.EditComment(0, "keep eleven"); err != nil || m.Comments()[0].Text != "keep eleven" {
		t.Errorf("edit: %v %+v", err, m.Comments())
	}
	h := m.Hunk(model.Ref{0, 0, 1})
	if !m.Covers(m.Comments()[0], model.FileRef{0, 0}, h.Lines()[1]) || m.Covers(m.Comments()[0], model.FileRef{0, 0}, h.Lines()[0]) {
		t.Error("the old-side comment covers the wrong lines")
	}
	d, _ := m.Decide(approval.Reject, "")
	if len(d.Comments) != 1 || d.Comments[0].Side != approval.SideOld {
		t.Errorf("the decision's comments: %+v", d.Comments)
	}
	if err := m.DeleteComment(3); !errors.Is(err, model.ErrNoComment) {
		t.Errorf("deleting comment 4 of 1: %v", err)
	}
	if err := m.DeleteComment(0); err != nil || len(m.Comments()) != 0 {
		t.Errorf("delete: %v %+v", err, m.Comments())
	}
}

func TestViewedKeys(t *testing.T) {
	first := model.New(request())
	first.SetViewed(model.FileRef{0, 0}, true)
	first.SetViewed(model.FileRef{0, 1}, true)
	keys := map[string]bool{}
	for _, k := range first.ViewedKeys() {
		keys[k] = true
	}
	// A later request of the same change: a.go of commit 1 changed, the
	// secret did not.
	r := request()
	r.ID = "req-2"
	r.Commits[0].Files[0].Hunks[0] = "@@ -1,3 +1,3 @@\n one\n-two\n+Two\n three\n"
	again := model.New(r)
	again.LoadViewed(keys)
	if again.Viewed(model.FileRef{0, 0}) || !again.Viewed(model.FileRef{0, 1}) {
		t.Errorf("viewed after the re-review: a.go %v (changed: want false), id_rsa %v (want true)", again.Viewed(model.FileRef{0, 0}), again.Viewed(model.FileRef{0, 1}))
	}
	other := request()
	other.Target = "local:/srv/other"
	o := model.New(other)
	o.LoadViewed(keys)
	if o.Viewed(model.FileRef{0, 1}) {
		t.Error("a mark of one target's file marked another target's")
	}
}

func TestParseDiff(t *testing.T) {
	diff := "diff --git a/x y b/x y\nindex 1..2 100644\n--- a/x y\n+++ b/x y\n" + hunkA1 + hunkA3 +
		"diff --git a/gone b/gone\ndeleted file mode 100644\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
	files := model.ParseDiff(diff, 0)
	if len(files) != 2 || files[0].Path != "x y" || len(files[0].Hunks) != 2 || files[1].Op != change.Delete {
		t.Fatalf("%+v", files)
	}
	if files[0].Hunks[1].Text != hunkA3 || files[1].Hunks[0].Lines()[0].Old != 1 {
		t.Errorf("%q %+v", files[0].Hunks[1].Text, files[1].Hunks[0].Lines())
	}
}

// The path of a file's section: its new side, whatever spaces or " b/"
// the name holds; a name git quoted is unquoted.
func TestParseDiffPaths(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"diff --git a/src/a.go b/src/a.go", "src/a.go"},
		{"diff --git a/a b/c b/a b/c", "a b/c"},
		{`diff --git "a/evil\033[2J.txt" "b/evil\033[2J.txt"`, "evil\x1b[2J.txt"},
		{`diff --git "a/new\nline" "b/new\nline"`, "new\nline"},
		{`diff --git "a/deploy\342\200\256txt.sh" "b/deploy\342\200\256txt.sh"`, "deploy\u202etxt.sh"},
	} {
		files := model.ParseDiff(tc.line+"\nindex 1..2\n", 0)
		if len(files) != 1 || files[0].Path != tc.want {
			t.Errorf("%q: %+v, want the path %q", tc.line, files, tc.want)
		}
	}
}

// The files that land from the base are shown with the commits' files,
// and cannot be left out: they land whatever is picked.
func TestBaseFilesShownNotPicked(t *testing.T) {
	r := request()
	r.Files = []approval.FileChange{{Path: "a.go"}, {Path: "vendor/x.go", FromBase: true}}
	r.Diff = "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n" + hunkA1 + "diff --git a/vendor/x.go b/vendor/x.go\nnew file mode 100644\n--- /dev/null\n+++ b/vendor/x.go\n" + hunkB1
	m := model.New(r)
	last := len(m.Commits) - 1
	if !m.Commits[last].Base || len(m.Commits[last].Files) != 1 || m.Commits[last].Files[0].Path != "vendor/x.go" {
		t.Fatalf("the base's files: %+v", m.Commits[last])
	}
	if err := m.SetHunk(model.Ref{Commit: last, File: 0, Hunk: 0}, false); !errors.Is(err, model.ErrFromBase) {
		t.Errorf("leaving out a base file: %v", err)
	}
	if err := m.SetHunk(model.Ref{Commit: 0, File: 0, Hunk: 0}, false); err != nil {
		t.Fatal(err)
	}
	d, err := m.Decide(approval.Approve, "")
	if err != nil || approval.CheckAccept(r, d.Accept) != nil {
		t.Errorf("a pick beside the base's files: %v, %v", err, approval.CheckAccept(r, d.Accept))
	}
}

// A file whose line endings change with its edits is shown as difftext
// shows it and picked whole; a rename's path is its new one, From the
// old; with whitespace ignored, nothing is picked.
func TestLineEndingsRenamesAndSpace(t *testing.T) {
	r := request()
	crlf := "@@ -1,2 +1,2 @@\n-one\n-two\n+one\r\n+TWO\r\n"
	r.Commits[1].Files = append(r.Commits[1].Files, approval.FileDiff{Path: "notes.txt", Op: change.Update, Header: "diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n", Hunks: []string{crlf}})
	m := model.New(r)
	f := m.File(model.FileRef{Commit: 1, File: 2})
	if !f.Whole || !strings.Contains(f.Header, "line endings") {
		t.Fatalf("the CRLF file: whole %v, header %q", f.Whole, f.Header)
	}
	if err := m.SetLine(model.Ref{Commit: 1, File: 2, Hunk: 0}, 0, false); !errors.Is(err, model.ErrWholeFile) {
		t.Errorf("a line of a whole file: %v", err)
	}
	for _, ref := range []model.Ref{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {1, 0, 0}, {1, 1, -1}} {
		if err := m.SetHunk(ref, false); err != nil {
			t.Fatal(err)
		}
	}
	d, err := m.Decide(approval.Approve, "")
	want := []approval.Accepted{{Commit: c2, Files: []approval.AcceptedFile{{Path: "notes.txt", Whole: true}}}}
	if err != nil || !reflect.DeepEqual(d.Accept, want) || approval.CheckAccept(r, d.Accept) != nil {
		t.Errorf("the CRLF file alone: %+v, %v", d.Accept, err)
	}

	renamed := model.ParseDiff("diff --git a/ab b/abcd\nsimilarity index 90%\nrename from ab\nrename to abcd\n--- a/ab\n+++ b/abcd\n"+hunkA1, 0)
	if len(renamed) != 1 || renamed[0].Path != "abcd" || renamed[0].From != "ab" {
		t.Errorf("a rename: %+v", renamed)
	}

	r.Diff = "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,2 +1,2 @@\n-x  y\n+x y\n z\n"
	sp := model.NewIgnoringSpace(r, r.Diff)
	if err := sp.SetHunk(model.Ref{Commit: 0, File: 0, Hunk: -1}, false); !errors.Is(err, model.ErrSpaceShown) {
		t.Errorf("a pick with whitespace ignored: %v", err)
	}
}

// TestHunkPickable: one rule for how a push is picked, the line prompt's p
// and the view's y/x alike: by hunk only when the request can be picked
// and carries its commits' own files; else by file (ByFile).
func TestHunkPickable(t *testing.T) {
	withFiles := []approval.CommitInfo{{Files: []approval.FileDiff{{Path: "a.go"}}}}
	for _, c := range []struct {
		name string
		r    approval.Request
		want bool
	}{
		{"pickable with files", approval.Request{Pickable: true, Commits: withFiles}, true},
		{"not pickable", approval.Request{Commits: withFiles}, false},
		{"no commit files", approval.Request{Pickable: true, Commits: []approval.CommitInfo{{}}}, false},
	} {
		if got := model.HunkPickable(&c.r); got != c.want {
			t.Errorf("%s: HunkPickable = %v, want %v", c.name, got, c.want)
		}
		if c.r.Pickable && model.New(&c.r).ByFile() == c.want {
			t.Errorf("%s: the model picks by file = %v, HunkPickable %v", c.name, !c.want, c.want)
		}
	}
}
