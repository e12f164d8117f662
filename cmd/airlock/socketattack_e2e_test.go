//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// TestSocketForgedDecisionRefused: a process of the server's own user
// that connects to a real airlock serve's socket but does not hold the
// reviewer's key sends "approve" for the waiting push, unsigned: it is
// answered that the decision is refused, the push does not land, and the
// server's ledger records the attempt (kind refused), with no decision.
func TestSocketForgedDecisionRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newQueueRig(t)
	d := startDurable(t, ctx, f.bin, f.env, f.serverRoot, "--worker", f.workerFile, "--timeout", "60s", "--ephemeral")
	d.w.ledger = filepath.Join(f.serverRoot, "state", "airlock", "ledger.jsonl")
	push := f.ask(d)
	socks, _ := filepath.Glob(filepath.Join(f.serverRoot, "run", "airlock", "server-*.sock"))
	if len(socks) != 1 {
		t.Fatalf("sockets: %v", socks)
	}
	c, err := net.Dial("unix", socks[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	var id string
	for id == "" {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Type, ID string }
		var req struct {
			Request struct{ ID string } `json:"request"`
		}
		if json.Unmarshal(line, &m) == nil && m.Type == "request" && json.Unmarshal(line, &req) == nil {
			id = req.Request.ID
		}
	}
	fmt.Fprintf(c, `{"type":"decision","decision":{"request":%q,"verdict":"approve","by":"mallory"}}`+"\n", id)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Type, Error string }
		if json.Unmarshal(line, &m) != nil || m.Type != "ack" {
			continue
		}
		if !strings.Contains(m.Error, "not signed by a reviewer this server trusts") || !strings.Contains(m.Error, "airlock review --print-key") {
			t.Fatalf("the forged decision was answered %q", m.Error)
		}
		break
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case res := <-push:
		t.Fatalf("the push returned on a forged decision: %+v", res)
	default:
	}
	if out, _ := gitOut(t, f.env, f.repo, "show", "agent:notes/fleet.md"); out != "" {
		t.Fatalf("a forged decision landed the push: %q", out)
	}
	recs, err := ledger.Records(d.w.ledger)
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, rec := range recs {
		switch rec.Kind {
		case ledger.KindRefused:
			refused = refused || strings.Contains(string(rec.Data), `named its reviewer \"mallory\"`) && strings.Contains(string(rec.Data), id)
		case ledger.KindDecision:
			t.Fatalf("the ledger holds a decision: %s", rec.Data)
		}
	}
	if !refused {
		t.Fatalf("the ledger does not record the forged decision as refused:\n%s", d.w.ledgerText())
	}
}
