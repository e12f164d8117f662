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

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// A reviewer's client over the socket cannot choose who it is in the
// ledger, nor which commit is granted: the ledger names the OS user of the
// connecting process, and the grant is the request's own commit.
func TestSocketDecisionIdentityAndCommit(t *testing.T) {
	l := approvaltest.NewLedger(t)
	g := approval.NewGate(l, approval.Policy{})
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
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(line), `"type":"request"`) {
			break
		}
	}
	fmt.Fprintf(c, `{"type":"decision","decision":{"request":%q,"verdict":"approve","by":"mallory","new":%q}}`+"\n", req.ID, approvaltest.Hash("evil").String())
	_, gr, err := wait(t, tk)
	if err != nil {
		t.Fatal(err)
	}
	if gr.New() != req.New {
		t.Errorf("granted %s, not the request's %s", gr.New(), req.New)
	}
	recs, _ := ledger.Records(l.Path())
	var d struct {
		By string `json:"by"`
	}
	json.Unmarshal(recs[len(recs)-1].Data, &d)
	me, _ := user.Current()
	if strings.Contains(d.By, "mallory") || !strings.HasPrefix(d.By, me.Username) {
		t.Errorf("the ledger names the decider %q, want the OS user %s", d.By, me.Username)
	}
}
