package broker_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// A process on the socket without the reviewer's key cannot decide: its
// forged decision ("approve by mallory") is refused, changes nothing and
// is recorded as refused. A signed decision cannot choose which commit is
// granted: the grant is the request's own commit.
func TestSocketForgedDecisionRefused(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{ReviewerKeys: approvaltest.ReviewerKeys})
	dir, err := os.MkdirTemp("", "al")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := broker.Listen(g, dir, broker.ServerInfo{PID: os.Getpid(), Worker: "w", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	req := approvaltest.SampleRequest()
	tk, err := g.Submit(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", b.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	var shown approval.Request
	readUntil := func(typ string) []byte {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(line), `"type":"`+typ+`"`) {
				return line
			}
		}
	}
	var m struct {
		Request approval.Request `json:"request"`
		Error   string           `json:"error"`
	}
	if err := json.Unmarshal(readUntil("request"), &m); err != nil {
		t.Fatal(err)
	}
	shown = m.Request
	// Unsigned, then signed by a key the server does not trust.
	fmt.Fprintf(c, `{"type":"decision","decision":{"request":%q,"verdict":"approve","by":"mallory","new":%q}}`+"\n", req.ID, approvaltest.Hash("evil").String())
	mallory, _ := nkeys.CreateUser()
	forged, err := approval.Sign(mallory, &shown, approval.Decision{Verdict: approval.Approve, By: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"type": "decision", "signed": forged})
	fmt.Fprintf(c, "%s\n", line)
	for range 2 {
		m.Error = ""
		if err := json.Unmarshal(readUntil("ack"), &m); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Error, "not signed by a reviewer this server trusts") {
			t.Fatalf("a forged decision was answered %q", m.Error)
		}
	}
	if len(g.Pending()) != 1 {
		t.Fatal("a forged decision decided the request")
	}
	// The reviewer's, signed, with a commit of its own choosing: the
	// grant is the request's commit.
	me, _ := user.Current()
	// A name other than the kernel's for this process is refused too.
	other, err := approval.Sign(approvaltest.ReviewerKey(), &shown, approval.Decision{Verdict: approval.Approve, By: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	line, _ = json.Marshal(map[string]any{"type": "decision", "signed": other})
	fmt.Fprintf(c, "%s\n", line)
	if err := json.Unmarshal(readUntil("ack"), &m); err != nil || !strings.Contains(m.Error, "not signed by a reviewer this server trusts") {
		t.Fatalf("a decision naming another reviewer: %q %v", m.Error, err)
	}
	good, err := approval.Sign(approvaltest.ReviewerKey(), &shown, approval.Decision{Verdict: approval.Approve,
		By: fmt.Sprintf("%s (pid %d)", me.Username, os.Getpid()), New: approvaltest.Hash("evil")})
	if err != nil {
		t.Fatal(err)
	}
	line, _ = json.Marshal(map[string]any{"type": "decision", "signed": good})
	fmt.Fprintf(c, "%s\n", line)
	_, gr, err := wait(t, tk)
	if err != nil {
		t.Fatal(err)
	}
	if gr.New() != req.New {
		t.Errorf("granted %s, not the request's %s", gr.New(), req.New)
	}
	recs, _ := ledger.Records(l.Path())
	refused := 0
	for _, rec := range recs {
		switch {
		case rec.Kind == ledger.KindRefused:
			refused++
		case rec.Kind == ledger.KindDecision && (strings.Contains(string(rec.Data), "mallory") || !strings.Contains(string(rec.Data), me.Username+" (pid ")):
			t.Fatalf("the ledger holds mallory's decision: %s", rec.Data)
		case rec.Kind == ledger.KindDecision && !strings.Contains(string(rec.Data), approvaltest.ReviewerKeys[0]):
			t.Fatalf("the decision record names no key: %s", rec.Data)
		}
	}
	if refused != 3 {
		t.Fatalf("%d refused records, want 3", refused)
	}
}
