package approval_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

func reviewerKey(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return kp, pub
}

// TestSignedDecisionCoversEveryField: a signed decision whose any field
// is changed after signing (verdict, selection, edited message, reason,
// comments, scope, reviewer, time, id, fingerprint, key) is refused.
func TestSignedDecisionCoversEveryField(t *testing.T) {
	kp, pub := reviewerKey(t)
	_, otherPub := reviewerKey(t)
	req := &approval.Request{ID: "req-1", Target: "local:/x", Ref: "refs/heads/main", New: plumbing.NewHash("1111111111111111111111111111111111111111"),
		Commits: []approval.CommitInfo{{ID: plumbing.NewHash("1111111111111111111111111111111111111111"), Message: "subject\n\nbody"}}}
	d := approval.Decision{Verdict: approval.Pick, Paths: []string{"a"}, Reason: "r", Comments: []approval.Comment{{Path: "a", Line: 1, Text: "c"}},
		Accept: []approval.Accepted{{Commit: req.New, Message: "edited", Files: []approval.AcceptedFile{{Path: "a", Whole: true}}}},
		Scope:  "", By: "alice", Time: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	s, err := approval.Sign(kp, req, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := approval.VerifyFor(s, []string{pub}, approval.Fingerprint(req)); err != nil {
		t.Fatalf("the decision as signed: %v", err)
	}
	cases := map[string]func(*approval.SignedDecision){
		"request":     func(s *approval.SignedDecision) { s.Decision.Request = "req-2" },
		"verdict":     func(s *approval.SignedDecision) { s.Decision.Verdict = approval.Approve },
		"paths":       func(s *approval.SignedDecision) { s.Decision.Paths = []string{"a", "b"} },
		"hunks":       func(s *approval.SignedDecision) { s.Decision.Accept[0].Files[0].Whole = false },
		"message":     func(s *approval.SignedDecision) { s.Decision.Accept[0].Message = "edited!" },
		"reason":      func(s *approval.SignedDecision) { s.Decision.Reason = "other" },
		"comments":    func(s *approval.SignedDecision) { s.Decision.Comments[0].Text = "d" },
		"scope":       func(s *approval.SignedDecision) { s.Decision.Scope = approval.ScopeSession },
		"by":          func(s *approval.SignedDecision) { s.Decision.By = "mallory" },
		"time":        func(s *approval.SignedDecision) { s.Decision.Time = s.Decision.Time.Add(time.Second) },
		"fingerprint": func(s *approval.SignedDecision) { s.Fingerprint = strings.Repeat("0", 64) },
		"key":         func(s *approval.SignedDecision) { s.Key = otherPub },
		"signature":   func(s *approval.SignedDecision) { s.Sig = s.Sig[:10] + "A" + s.Sig[11:] },
		"unsigned":    func(s *approval.SignedDecision) { s.Sig, s.Key = "", "" },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			// A deep copy: the cases change slices' elements.
			b, _ := json.Marshal(s)
			var c approval.SignedDecision
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			change(&c)
			if err := approval.VerifyFor(c, []string{pub, otherPub}, approval.Fingerprint(req)); err == nil {
				t.Fatalf("a decision with its %s changed after signing verified", name)
			}
		})
	}
	// The decision survives the JSON trip a socket or the queue gives it.
	b, _ := json.Marshal(s)
	var back approval.SignedDecision
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := approval.VerifyFor(back, []string{pub}, approval.Fingerprint(req)); err != nil {
		t.Fatalf("after JSON: %v", err)
	}
}

// TestFingerprintCoversTheRequest: every field a reviewer is shown
// changes the fingerprint (a commit's body included); the id and time do
// not; a string that is not UTF-8 fingerprints alike before and after JSON.
func TestFingerprintCoversTheRequest(t *testing.T) {
	base := func() *approval.Request {
		return &approval.Request{ID: "req-1", Time: time.Now(), Target: "local:/x", Ref: "refs/heads/main", Describe: "x",
			Commits: []approval.CommitInfo{{Message: "subject\n\nbody"}}, Diff: "diff \xff\n", Flags: []approval.Flag{{Path: "a", Severity: approval.Low}}}
	}
	fp := approval.Fingerprint(base())
	same := base()
	same.ID, same.Time = "req-2", time.Now().Add(time.Hour)
	if approval.Fingerprint(same) != fp {
		t.Fatal("the id or time changed the fingerprint")
	}
	b, _ := json.Marshal(base())
	var back approval.Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if approval.Fingerprint(&back) != fp {
		t.Fatal("the request's JSON fingerprints other than the request")
	}
	for name, change := range map[string]func(*approval.Request){
		"body":     func(r *approval.Request) { r.Commits[0].Message = "subject\n\nReviewed-by: someone" },
		"describe": func(r *approval.Request) { r.Describe = "y" },
		"diff":     func(r *approval.Request) { r.Diff = "diff\n" },
		"flags":    func(r *approval.Request) { r.Flags = nil },
		"since":    func(r *approval.Request) { r.Since = &approval.Since{Interdiff: "x"} },
		"command":  func(r *approval.Request) { r.Command = "pip install x" },
		"dir":      func(r *approval.Request) { r.Dir = "/w" },
	} {
		r := base()
		change(r)
		if approval.Fingerprint(r) == fp {
			t.Errorf("changing the request's %s kept its fingerprint", name)
		}
	}
}

// TestResolveSignedRefuses: the gate applies a decision only when signed
// by a trusted key over the request pending, and records every refusal.
func TestResolveSignedRefuses(t *testing.T) {
	kp, pub := reviewerKey(t)
	mallory, _ := reviewerKey(t)
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: []string{pub}})
	req := &approval.Request{Target: "local:/x", Ref: "refs/heads/main", New: plumbing.NewHash("1111111111111111111111111111111111111111")}
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := *req
	other.Diff = "something else"
	refused := []approval.SignedDecision{
		{Decision: approval.Decision{Request: req.ID, Verdict: approval.Approve, By: "mallory"}},
		signed(approval.Sign(mallory, req, approval.Decision{Verdict: approval.Approve, By: "mallory"})),
		signed(approval.Sign(kp, &other, approval.Decision{Verdict: approval.Approve, By: "alice"})),
	}
	for i, s := range refused {
		if _, err := g.ResolveSigned(s, "test"); !errors.Is(err, approval.ErrUnverified) {
			t.Fatalf("decision %d: %v, want ErrUnverified", i, err)
		}
	}
	if len(g.Pending()) != 1 {
		t.Fatal("a refused decision changed the request")
	}
	d, err := g.ResolveSigned(signed(approval.Sign(kp, req, approval.Decision{Verdict: approval.Approve, By: "alice"})), "test")
	if err != nil || !d.Approved() || d.Key != pub || d.Sig == "" {
		t.Fatalf("the reviewer's decision: %+v, %v", d, err)
	}
	if _, _, err := wait(t, tk); err != nil {
		t.Fatal(err)
	}
	recs, _ := l.Records()
	n := 0
	for _, r := range recs {
		switch r.Kind {
		case ledger.KindRefused:
			n++
		case ledger.KindDecision:
			if !strings.Contains(string(r.Data), pub) {
				t.Fatalf("the decision record has no key: %s", r.Data)
			}
		}
	}
	if n != len(refused) {
		t.Fatalf("%d refused records, want %d", n, len(refused))
	}
}

func signed(s approval.SignedDecision, err error) approval.SignedDecision {
	if err != nil {
		panic(err)
	}
	return s
}
