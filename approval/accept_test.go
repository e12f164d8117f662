package approval_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/change"
)

const (
	hunkA = "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
	hunkB = "@@ -10,3 +10,4 @@\n j\n k\n+k2\n l\n"
	hunkC = "@@ -0,0 +1,2 @@\n+new\n+file\n"
)

// hunkRequest is a push of two commits whose own diffs the reviewer picks
// from.
func hunkRequest() *approval.Request {
	req := approvaltest.SampleRequest()
	req.Commits = []approval.CommitInfo{
		{ID: approvaltest.Hash("c1"), Message: "First\n", Files: []approval.FileDiff{
			{Path: "report.md", Op: change.Update, Header: "diff --git a/report.md b/report.md\n", Hunks: []string{hunkA, hunkB}},
			{Path: "logo.png", Op: change.Create, Header: "diff --git a/logo.png b/logo.png\nBinary files differ\n", Binary: true},
		}},
		{ID: approvaltest.Hash("new"), Message: "Second\n", Files: []approval.FileDiff{
			{Path: "data.json", Op: change.Create, Header: "diff --git a/data.json b/data.json\n", Hunks: []string{hunkC}},
		}},
	}
	return req
}

// TestPickHunks: a hunk-by-hunk pick is checked against the request
// (nothing is asked of the push, nothing decided, when it names anything
// the reviewer was not shown), then the push makes the commits, and the
// ledger's decision holds the hunks' content ids and the commits made.
func TestPickHunks(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	made := []plumbing.Hash{approvaltest.Hash("m1"), approvaltest.Hash("m2")}
	var asked []*approval.PickAsk
	ch, stop := make(chan *approval.PickAsk), make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case p := <-ch:
				asked = append(asked, p)
				p.MadeCommits(made, nil)
			case <-stop:
				return
			}
		}
	}()
	tk, err := g.Submit(hunkRequest(), ch)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Request().ID
	c1, c2 := approvaltest.Hash("c1"), approvaltest.Hash("new")
	hunk := func(i int, text string, lines ...int) approval.AcceptedHunk {
		return approval.AcceptedHunk{Index: i, ID: approval.HunkID(text), Lines: lines}
	}
	file := func(path string, hs ...approval.AcceptedHunk) approval.AcceptedFile {
		return approval.AcceptedFile{Path: path, Hunks: hs}
	}
	bad := []struct {
		name   string
		accept []approval.Accepted
		paths  []string
		err    string
	}{
		{"unknown commit", []approval.Accepted{{Commit: approvaltest.Hash("x"), Files: []approval.AcceptedFile{file("report.md", hunk(0, hunkA))}}}, nil, "is not one of this push's"},
		{"commit twice", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(0, hunkA))}}, {Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(1, hunkB))}}}, nil, "accepted twice"},
		{"no files", []approval.Accepted{{Commit: c1}}, nil, "no file accepted"},
		{"path of another commit", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("data.json", hunk(0, hunkC))}}}, nil, `does not change "data.json"`},
		{"hunk out of range", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(2, hunkA))}}}, nil, "there is no hunk 2"},
		{"wrong content id", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(0, hunkB))}}}, nil, "is not the hunk the request shows there"},
		{"hunk twice", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(0, hunkA), hunk(0, hunkA))}}}, nil, "accepted twice"},
		{"line out of range", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(0, hunkA, 2))}}}, nil, "there is no line 2"},
		{"line twice", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(0, hunkA, 1, 1))}}}, nil, "accepted twice"},
		{"hunks of a binary", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("logo.png", hunk(0, hunkA))}}}, nil, "no hunks"},
		{"no hunk", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md")}}}, nil, "with no hunk"},
		{"whole and hunks", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{{Path: "report.md", Whole: true, Hunks: []approval.AcceptedHunk{hunk(0, hunkA)}}}}}, nil, "whole and by hunks"},
		{"paths and hunks", []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{file("report.md", hunk(0, hunkA))}}}, []string{"report.md"}, "not both"},
	}
	for _, b := range bad {
		_, err := g.Resolve(approval.Decision{Request: id, Verdict: approval.Pick, Accept: b.accept, Paths: b.paths})
		if err == nil || !strings.Contains(err.Error(), b.err) {
			t.Errorf("%s: err %v, want %q", b.name, err, b.err)
		}
	}
	if len(asked) != 0 || len(g.Pending()) != 1 {
		t.Fatalf("a refused selection reached the push (%d asks) or decided the request", len(asked))
	}
	accept := []approval.Accepted{
		{Commit: c1, Message: "First, edited", Files: []approval.AcceptedFile{file("report.md", hunk(1, hunkB)), {Path: "logo.png", Whole: true}}},
		{Commit: c2, Files: []approval.AcceptedFile{file("data.json", hunk(0, hunkC, 1))}},
	}
	if _, err := g.Resolve(approval.Decision{Request: id, Verdict: approval.Pick, Accept: accept,
		Commits: []plumbing.Hash{approvaltest.Hash("forged")}}); err != nil {
		t.Fatal(err)
	}
	d, gr, err := wait(t, tk)
	if err != nil || gr.New() != made[1] || d.New != made[1] || !reflect.DeepEqual(d.Commits, made) {
		t.Fatalf("decision %+v, grant %s, %v", d, gr.New(), err)
	}
	if len(asked) != 1 || !reflect.DeepEqual(asked[0].Accept, accept) || asked[0].Paths != nil {
		t.Fatalf("the push was asked %+v", asked)
	}
	recs, err := ledger.Records(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	var dec approval.Decision
	for _, r := range recs {
		if r.Kind == ledger.KindDecision {
			must(t, json.Unmarshal(r.Data, &dec))
		}
		if r.Kind == ledger.KindRequest && strings.Contains(string(r.Data), "+k2") {
			t.Error("the ledger's request holds the diff's text")
		}
	}
	if !reflect.DeepEqual(dec.Accept, accept) || !reflect.DeepEqual(dec.Commits, made) || dec.Accept[0].Files[0].Hunks[0].ID != approval.HunkID(hunkB) {
		t.Errorf("the ledger's decision: accept %+v commits %v", dec.Accept, dec.Commits)
	}
}

// TestPickHunksRefusedByThePush: when the push cannot make the commits (a
// hunk needs a left-out one), nothing is decided and the reviewer is told.
func TestPickHunksRefusedByThePush(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	ch, stop := make(chan *approval.PickAsk), make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case p := <-ch:
				p.MadeCommits(nil, errors.New("hunk 0 of data.json needs a change that was left out"))
			case <-stop:
				return
			}
		}
	}()
	tk, _ := g.Submit(hunkRequest(), ch)
	_, err := g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Pick, Accept: []approval.Accepted{
		{Commit: approvaltest.Hash("new"), Files: []approval.AcceptedFile{{Path: "data.json", Whole: true}}}}})
	if err == nil || !strings.Contains(err.Error(), "needs a change that was left out") || len(g.Pending()) != 1 {
		t.Fatalf("err %v, pending %d", err, len(g.Pending()))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAcceptWhereNothingCanBePicked: a selection of hunks on a request
// that cannot be picked from (its submitter makes no commits of a part,
// or it is a network request) is refused with what to do instead, and
// the request stays pending.
func TestAcceptWhereNothingCanBePicked(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	sel := []approval.Accepted{{Commit: approvaltest.Hash("c1"), Files: []approval.AcceptedFile{
		{Path: "report.md", Hunks: []approval.AcceptedHunk{{Index: 0, ID: approval.HunkID(hunkA)}}}}}}
	push, err := g.Submit(hunkRequest(), nil) // no one to make the commits: not pickable
	must(t, err)
	network, err := g.Submit(&approval.Request{Kind: approval.KindNetwork, Worker: "w", Command: "npm install", Reason: "deps"}, nil)
	must(t, err)
	for _, c := range []struct {
		name string
		d    approval.Decision
		want string
	}{
		{"hunks of a push that cannot be picked", approval.Decision{Request: push.Request().ID, Verdict: approval.Pick, Accept: sel}, "approve or reject it whole"},
		{"hunks of a network request", approval.Decision{Request: network.Request().ID, Verdict: approval.Pick, Accept: sel}, "allow or deny it"},
		{"an allowed network request naming hunks", approval.Decision{Request: network.Request().ID, Verdict: approval.Approve, Accept: sel}, "names no files or hunks"},
	} {
		if _, err := g.Resolve(c.d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	if len(g.Pending()) != 2 {
		t.Fatal("a refused selection decided a request")
	}
}
