package review_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
)

// queued is the Decider of a fleet's queue whose server is not running:
// the decision is kept, not yet recorded.
type queued struct{ got []approval.Decision }

func (q *queued) Decide(s approval.SignedDecision) (approval.Decision, error) {
	d := s.Decision
	q.got = append(q.got, d)
	return d, fmt.Errorf("%w: no running server has request %s now", broker.ErrQueued, d.Request)
}

// Requests a fleet's queue offers (broker.Reviewer.Offer) are listed by
// server with the host each runs on, sanitised as every server string is;
// a decision the queue keeps for a server not running is told as queued,
// and counts as this reviewer's decision.
func TestFleetRequestsOnScreen(t *testing.T) {
	const clear = "\x1b[2J\x1b[H"
	r := broker.NewReviewer(nil)
	defer r.Close()
	r.SetKey(approvaltest.ReviewerKey())
	q := &queued{}
	for i, host := range []string{"build-1" + clear, "build-2\u202Eevil"} {
		req := approvaltest.SampleRequest()
		req.ID, req.Worker, req.Session = fmt.Sprintf("req-00000000000%d", i+1), fmt.Sprintf("writer-%d", i+1), "s"
		info := broker.ServerInfo{PID: 7 + i, Worker: req.Worker, Host: host, Name: fmt.Sprintf("srv%d", i)}
		r.Offer("nats:"+info.Name, info, req, q)
	}
	s := &approvaltest.Script{TTY: true, Keys: []rune("a"), Lines: []string{"1"}}
	if err := review.Review(context.Background(), r, s, true); err != nil {
		t.Fatalf("%v\n%s", err, s.Out.String())
	}
	out := s.Out.String()
	assertOnlyOwnEscapes(t, out)
	for _, want := range []string{`Server pid 7 on "build-1`, `Server pid 8 on "build-2`, `, worker "writer-2"`,
		`from worker "writer-1"`, `(server pid 7 on "build-1`, "Queued: the decision is queued until a server offers the request again: no running server has request req-000000000001 now"} {
		if !strings.Contains(out, want) {
			t.Errorf("the reviewer did not see %q:\n%s", want, out)
		}
	}
	if len(q.got) != 1 || q.got[0].Request != "req-000000000001" || q.got[0].Verdict != approval.Approve {
		t.Errorf("decisions sent: %+v", q.got)
	}
	// Taken back by its source, a request is gone, with why.
	in := r.Pending()[1]
	if in.Server.Name != "srv1" {
		t.Fatalf("pending: %+v", r.Pending())
	}
	r.Take("nats:srv1", in.Request.ID, "it was decided by bob")
	select {
	case <-in.Gone():
	case <-time.After(5 * time.Second):
		t.Fatal("a request taken back is not gone")
	}
	if in.Why() != "it was decided by bob" || len(r.Pending()) != 1 {
		t.Errorf("after Take: %q, %d pending", in.Why(), len(r.Pending()))
	}
}

// refusing is a Decider whose server refuses with words it was given: a
// fleet's outcomes bucket holds what anyone who may write it wrote.
type refusing struct{}

func (refusing) Decide(approval.SignedDecision) (approval.Decision, error) {
	return approval.Decision{}, fmt.Errorf("refused by \x1b]0;owned\x07\x1b[2J\u202Eevil")
}

// A server's refusal reaches the reviewer's screen sanitised.
func TestRefusalOnScreenIsSanitised(t *testing.T) {
	r := broker.NewReviewer(nil)
	defer r.Close()
	r.SetKey(approvaltest.ReviewerKey())
	req := approvaltest.SampleRequest()
	r.Offer("nats:srv", broker.ServerInfo{PID: 7, Worker: req.Worker, Name: "srv"}, req, refusing{})
	s := &approvaltest.Script{TTY: true, Keys: []rune("a"), Lines: []string{"1"}}
	_ = review.Review(context.Background(), r, s, true) // the script runs out of keys after the refusal
	out := s.Out.String()
	if !strings.Contains(out, "Not recorded: refused by") {
		t.Fatalf("the refusal is not on the screen:\n%s", out)
	}
	assertOnlyOwnEscapes(t, out)
	if strings.Contains(out, "\u202E") {
		t.Errorf("the refusal's bidi override reached the screen:\n%q", out)
	}
}
