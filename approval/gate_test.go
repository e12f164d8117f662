package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/gittest"
)

func kinds(t *testing.T, l *ledger.Ledger) []string {
	t.Helper()
	recs, err := ledger.Records(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		var d struct {
			Verdict string `json:"verdict"`
			By      string `json:"by"`
		}
		json.Unmarshal(r.Data, &d)
		out = append(out, strings.TrimRight(r.Kind+" "+d.Verdict+" "+d.By, " "))
	}
	return out
}

func wait(t *testing.T, tk *approval.Ticket) (approval.Decision, approval.Grant, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return tk.Wait(ctx)
}

func TestApproveMintsAnExactGrant(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	req := approvaltest.SampleRequest()
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := g.Pending(); len(p) != 1 || p[0].ID != req.ID {
		t.Fatalf("pending %v", p)
	}
	if _, err := g.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	d, gr, err := wait(t, tk)
	if err != nil || !d.Approved() || d.By != "reviewer" {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if err := gr.Check(req.Target, req.Ref, req.Old, req.New); err != nil {
		t.Errorf("the grant does not cover its own push: %v", err)
	}
	other := approvaltest.Hash("other")
	for name, err := range map[string]error{
		"target": gr.Check("local:/elsewhere", req.Ref, req.Old, req.New),
		"ref":    gr.Check(req.Target, "refs/heads/main", req.Old, req.New),
		"old":    gr.Check(req.Target, req.Ref, other, req.New),
		"new":    gr.Check(req.Target, req.Ref, req.Old, other),
	} {
		if !errors.Is(err, approval.ErrGrantMismatch) {
			t.Errorf("a grant checked against another %s: %v", name, err)
		}
	}
	if got := kinds(t, l); !reflect.DeepEqual(got, []string{"request", "decision approve reviewer"}) {
		t.Errorf("ledger %v", got)
	}
	data, _ := os.ReadFile(l.Path())
	if strings.Contains(string(data), "diff --git") {
		t.Error("the ledger holds the diff (and with it whatever the files contain)")
	}
}

// Only this package makes grants: the zero value grants nothing, and code
// elsewhere cannot set a grant's fields at all.
func TestGrantCannotBeForged(t *testing.T) {
	var zero approval.Grant
	if zero.Valid() || !errors.Is(zero.Check("", "", plumbing.ZeroHash, plumbing.ZeroHash), approval.ErrNoGrant) {
		t.Error("the zero Grant grants something")
	}
	goBin := filepath.Join(gittest.GoRoot(t), "bin", "go")
	for name, src := range map[string]string{
		"field":   "package forge\n\nimport \"github.com/airlock-dev/airlock/approval\"\n\nvar G = approval.Grant{g: nil}\n",
		"type":    "package forge\n\nimport \"github.com/airlock-dev/airlock/approval\"\n\nvar G = approval.grant{}\n",
		"convert": "package forge\n\nimport \"github.com/airlock-dev/airlock/approval\"\n\ntype fake struct{ g *struct{} }\n\nvar G = approval.Grant(fake{})\n",
	} {
		dir := filepath.Join("testdata", "forge-"+name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "forge.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(goBin, "build", "./"+dir).CombinedOutput()
		if err == nil {
			t.Errorf("%s: forging a grant compiled", name)
		} else if !strings.Contains(string(out), "forge.go") {
			t.Errorf("%s: the build failed for another reason:\n%s", name, out)
		}
	}
}

func TestRejectionIsRememberedForTheSession(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	req := approvaltest.SampleRequest()
	tk, _ := g.Submit(req, nil)
	g.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Reason: "no reports on Fridays"})
	_, gr, err := wait(t, tk)
	if !errors.Is(err, approval.ErrRejected) || !strings.Contains(err.Error(), "no reports on Fridays") || gr.Valid() {
		t.Fatalf("rejection: %v %v", err, gr)
	}
	// The same change (same target, ref and tree) on another parent is
	// refused at once, without asking.
	again := approvaltest.SampleRequest()
	again.Old, again.New = approvaltest.Hash("moved"), approvaltest.Hash("rebased")
	tk2, err := g.Submit(again, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Pending()) != 0 {
		t.Error("the repeated change was put to the reviewer again")
	}
	d, _, err := wait(t, tk2)
	if d.By != "repeat-denied" || !strings.Contains(err.Error(), "no reports on Fridays") {
		t.Errorf("repeat: %+v %v", d, err)
	}
	// A different change is asked about again.
	changed := approvaltest.SampleRequest()
	changed.Tree, changed.New = approvaltest.Hash("tree2"), approvaltest.Hash("new2")
	g.Submit(changed, nil)
	if len(g.Pending()) != 1 {
		t.Error("a changed push was refused without asking")
	}
	if got := kinds(t, l); !reflect.DeepEqual(got, []string{"request", "decision reject reviewer", "request", "decision reject repeat-denied", "request"}) {
		t.Errorf("ledger %v", got)
	}
}

func TestPolicies(t *testing.T) {
	l := approvaltest.NewLedger(t)
	never := approval.NewGate(l, approval.Policy{Mode: approval.ModeNever})
	tk, _ := never.Submit(approvaltest.SampleRequest(), nil)
	if d, _, err := wait(t, tk); !errors.Is(err, approval.ErrRejected) || d.By != "policy:never" || !strings.Contains(err.Error(), "review-only") {
		t.Errorf("never: %+v %v", d, err)
	}
	auto := approval.NewGate(l, approval.Policy{AutoApprove: []string{"local:/srv/project"}})
	tk, _ = auto.Submit(approvaltest.SampleRequest(), nil)
	if d, gr, err := wait(t, tk); err != nil || d.By != "policy:auto" || !gr.Valid() {
		t.Errorf("auto: %+v %v", d, err)
	}
	other := approvaltest.SampleRequest()
	other.Target = "github:acme/site"
	auto.Submit(other, nil)
	if len(auto.Pending()) != 1 {
		t.Error("auto-approval reached a target the operator did not name")
	}
}

// A push that times out stays pending; pushing it again waits on the same
// request instead of asking twice.
func TestPendingRequestIsReattached(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	tk, _ := g.Submit(approvaltest.SampleRequest(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, _, err := tk.Wait(ctx); !errors.Is(err, approval.ErrPending) {
		t.Fatalf("timeout: %v", err)
	}
	tk2, _ := g.Submit(approvaltest.SampleRequest(), nil)
	if tk2 != tk || len(g.Pending()) != 1 {
		t.Fatal("the same push made a second request")
	}
	g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Approve})
	if _, gr, err := wait(t, tk2); err != nil || !gr.Valid() {
		t.Errorf("re-attached wait: %v", err)
	}
}

func TestWithdraw(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	tk, _ := g.Submit(approvaltest.SampleRequest(), nil)
	if err := g.Withdraw(tk.Request().ID, "the client went away"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tk); !errors.Is(err, approval.ErrWithdrawn) {
		t.Errorf("wait after withdraw: %v", err)
	}
	if _, err := g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Approve}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("deciding a withdrawn request: %v", err)
	}
	if got := kinds(t, l); !reflect.DeepEqual(got, []string{"request", "withdrawal"}) {
		t.Errorf("ledger %v", got)
	}
}

func TestPickFiles(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	picked := approvaltest.Hash("picked")
	var got []string
	pick := picker(t, func(paths []string) (plumbing.Hash, error) {
		got = paths
		if paths[0] == "data.json" && len(paths) == 1 {
			return plumbing.ZeroHash, errors.New("data.json needs report.md")
		}
		return picked, nil
	})
	tk, _ := g.Submit(approvaltest.SampleRequest(), pick)
	id := tk.Request().ID
	for _, bad := range [][]string{nil, {"nope.txt"}, {"data.json"}} {
		if _, err := g.Resolve(approval.Decision{Request: id, Verdict: approval.Pick, Paths: bad}); err == nil {
			t.Errorf("pick %v accepted", bad)
		}
	}
	if len(g.Pending()) != 1 {
		t.Fatal("a refused pick decided the request")
	}
	if _, err := g.Resolve(approval.Decision{Request: id, Verdict: approval.Pick, Paths: []string{"report.md"}}); err != nil {
		t.Fatal(err)
	}
	d, gr, err := wait(t, tk)
	if err != nil || d.Verdict != approval.Pick || gr.New() != picked || !reflect.DeepEqual(got, []string{"report.md"}) {
		t.Errorf("pick: %+v grant new %s err %v", d, gr.New(), err)
	}
	// Without a pick function, picking is refused.
	req := approvaltest.SampleRequest()
	req.New = approvaltest.Hash("n2")
	tk, _ = g.Submit(req, nil)
	if _, err := g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Pick, Paths: []string{"report.md"}}); err == nil {
		t.Error("picked files on a request that cannot be picked")
	}
}

// If the decision cannot be written to the ledger, the push is refused.
func TestUnrecordableDecisionRefusesThePush(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
	tk, _ := g.Submit(approvaltest.SampleRequest(), nil)
	l.Close()
	g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Approve})
	if _, gr, err := wait(t, tk); err == nil || gr.Valid() {
		t.Errorf("approved without a ledger record: %v", err)
	}
}

// A decided ticket reports its decision even to a context that has ended.
func TestWaitPrefersTheDecision(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	tk, _ := g.Submit(approvaltest.SampleRequest(), nil)
	g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Approve})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 100; i++ {
		if _, gr, err := tk.Wait(ctx); err != nil || !gr.Valid() {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
}

// A decision names a verdict, a reason and paths: a commit it names is
// ignored, and the gate grants the commit it was asked about.
func TestDecisionCannotNameTheCommit(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	req := approvaltest.SampleRequest()
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Approve, New: approvaltest.Hash("something else")}); err != nil {
		t.Fatal(err)
	}
	_, gr, err := wait(t, tk)
	if err != nil || gr.New() != req.New {
		t.Fatalf("granted %v (%v), want %v", gr.New(), err, req.New)
	}

	big := approvaltest.SampleRequest()
	big.DiffTruncated = true
	if _, err := g.Submit(big, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(approval.Decision{Request: big.ID, Verdict: approval.Approve}); !errors.Is(err, approval.ErrCannotApproveWhole) {
		t.Errorf("approving a truncated request whole: %v", err)
	}
}

// A change a reviewer rejected stays rejected in a later session: a new
// gate on the same ledger refuses it at once, with the reason, even under
// a new commit id.
func TestRepeatDenyAcrossSessions(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g1 := approval.NewGate(l, approval.Policy{})
	req := approvaltest.SampleRequest()
	tk, _ := g1.Submit(req, nil)
	g1.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Reason: "no reports on Fridays"})
	wait(t, tk)

	g2 := approval.NewGate(l, approval.Policy{})
	again := approvaltest.SampleRequest()
	again.New = approvaltest.Hash("the same change, committed again")
	tk2, err := g2.Submit(again, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := wait(t, tk2)
	if d.Verdict != approval.Reject || d.By != "repeat-denied" || !strings.Contains(errString(err), "no reports on Fridays") {
		t.Errorf("the second session: %+v, %v", d, err)
	}
	// Another change on the same branch is asked about as usual.
	other := approvaltest.SampleRequest()
	other.Tree = approvaltest.Hash("another tree")
	if _, err := g2.Submit(other, nil); err != nil || len(g2.Pending()) != 1 {
		t.Errorf("a different change: %v, pending %d", err, len(g2.Pending()))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Pending requests are bounded: a worker cannot pile up pushes (each holds
// its diff) until memory runs out.
func TestPendingRequestsAreBounded(t *testing.T) {
	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	for i := 0; i < approval.MaxPending; i++ {
		r := approvaltest.SampleRequest()
		r.New = approvaltest.Hash(fmt.Sprint("commit ", i))
		if _, err := g.Submit(r, nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	r := approvaltest.SampleRequest()
	r.New = approvaltest.Hash("one too many")
	if _, err := g.Submit(r, nil); !errors.Is(err, approval.ErrTooManyPending) {
		t.Fatalf("request past the bound: %v", err)
	}
	// A push already pending re-attaches, bound or not.
	again := approvaltest.SampleRequest()
	again.New = approvaltest.Hash("commit 0")
	if _, err := g.Submit(again, nil); err != nil {
		t.Errorf("re-attaching: %v", err)
	}
	big := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{})
	huge := approvaltest.SampleRequest()
	huge.Diff = strings.Repeat("x", approval.MaxPendingBytes+1)
	if _, err := big.Submit(huge, nil); !errors.Is(err, approval.ErrTooManyPending) {
		t.Errorf("a request over the byte bound: %v", err)
	}
}

// A network request is asked whatever auto-approval says, is refused in
// review-only mode, mints no grant, keeps its scope, and a denied command
// is denied again at once.
func TestNetworkRequests(t *testing.T) {
	net := func() *approval.Request {
		return &approval.Request{Kind: approval.KindNetwork, Worker: "w", Command: "npm install", Reason: "deps"}
	}
	never := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{Mode: approval.ModeNever})
	tk, err := never.Submit(net(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tk); !errors.Is(err, approval.ErrRejected) {
		t.Errorf("review-only mode let the network through: %v", err)
	}

	g := approval.NewGate(approvaltest.NewLedger(t), approval.Policy{AutoApprove: []string{"network", "local:/srv/project"}})
	tk, err = g.Submit(net(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Pending()) != 1 {
		t.Fatal("auto-approval decided a network request")
	}
	if _, err := g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Approve, Scope: "forever"}); err == nil {
		t.Error("an unknown scope was accepted")
	}
	if _, err := g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Approve, Scope: approval.ScopeCommand}); err != nil {
		t.Fatal(err)
	}
	d, gr, err := wait(t, tk)
	if err != nil || d.Scope != approval.ScopeCommand || gr.Valid() {
		t.Errorf("approved: %+v, grant valid %v, %v", d, gr.Valid(), err)
	}

	other := net()
	other.Command = "curl evil.example"
	tk, _ = g.Submit(other, nil)
	g.Resolve(approval.Decision{Request: tk.Request().ID, Verdict: approval.Reject, Reason: "no"})
	again := net()
	again.Command = "curl evil.example"
	tk, err = g.Submit(again, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wait(t, tk); !errors.Is(err, approval.ErrRejected) || !strings.Contains(err.Error(), "already denied") {
		t.Errorf("a denied command asked again: %v", err)
	}
}

// A rebased push decided on the earlier approval: only when the reviewer
// approved the earlier request whole and the rebased one shows the same
// changes; its grant names the new commits exactly, and the ledger has
// its request and a decision by the earlier one before the grant exists.
func TestSubmitRebased(t *testing.T) {
	rebased := func(prev *approval.Request) *approval.Request {
		r := *prev
		r.ID, r.Old, r.New, r.Tree = "", approvaltest.Hash("moved"), approvaltest.Hash("rebased"), approvaltest.Hash("rebased tree")
		return &r
	}
	for _, c := range []struct {
		name   string
		decide approval.Decision
		change func(*approval.Request)
		covers bool
	}{
		{"approved, same changes", approval.Decision{Verdict: approval.Approve}, nil, true},
		{"approved, another diff", approval.Decision{Verdict: approval.Approve}, func(r *approval.Request) { r.Diff += "+one more line\n" }, false},
		{"approved, another file list", approval.Decision{Verdict: approval.Approve}, func(r *approval.Request) { r.Files = r.Files[:len(r.Files)-1] }, false},
		{"approved, another message", approval.Decision{Verdict: approval.Approve}, func(r *approval.Request) {
			r.Commits = []approval.CommitInfo{{ID: approvaltest.Hash("c"), Message: "something else"}}
		}, false},
		{"picked", approval.Decision{Verdict: approval.Pick}, nil, false},
		{"rejected", approval.Decision{Verdict: approval.Reject, Reason: "no"}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := approvaltest.NewLedger(t)
			g := approval.NewGate(l, approval.Policy{})
			first := approvaltest.SampleRequest()
			first.Pickable = true
			pick := picker(t, func([]string) (plumbing.Hash, error) { return approvaltest.Hash("picked"), nil })
			prev, err := g.Submit(first, pick)
			if err != nil {
				t.Fatal(err)
			}
			d := c.decide
			d.Request = first.ID
			if d.Verdict == approval.Pick {
				d.Paths = []string{first.Files[0].Path}
			}
			if _, err := g.Resolve(d); err != nil {
				t.Fatal(err)
			}
			again := rebased(first)
			if c.change != nil {
				c.change(again)
			}
			tk, err := g.SubmitRebased(again, prev, pick)
			if err != nil {
				t.Fatal(err)
			}
			if !c.covers {
				if p := g.Pending(); len(p) != 1 || p[0].ID != again.ID {
					t.Fatalf("not asked again: pending %v", p)
				}
				return
			}
			dec, gr, err := wait(t, tk)
			if err != nil || dec.By != "rebased:"+first.ID || len(g.Pending()) != 0 {
				t.Fatalf("decision %+v, %v; pending %d", dec, err, len(g.Pending()))
			}
			if err := gr.Check(again.Target, again.Ref, again.Old, again.New); err != nil {
				t.Errorf("the grant does not name the rebased push: %v", err)
			}
			if got := kinds(t, l); !reflect.DeepEqual(got[len(got)-2:], []string{"request", "decision approve rebased:" + first.ID}) {
				t.Errorf("the ledger: %v", got)
			}
		})
	}
}

// picker answers with made the picks the gate sends on the channel it
// returns, as a push's driver does, until the test ends.
func picker(t *testing.T, made func([]string) (plumbing.Hash, error)) chan *approval.PickAsk {
	ch, stop := make(chan *approval.PickAsk), make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case p := <-ch:
				p.Made(made(p.Paths))
			case <-stop:
				return
			}
		}
	}()
	return ch
}
