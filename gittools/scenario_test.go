package gittools_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/gittools"
	"github.com/airlock-dev/airlock/internal/mcptest"
	"github.com/airlock-dev/airlock/internal/scenario"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/worker"
)

// The scenario suite in process: a session made as airlock serve makes
// one, served by gittools.NewMCPServer over MCP's in-memory transport.
func TestScenarios(t *testing.T) { scenario.Run(t, inProcess{}) }

type inProcess struct{}

// inProcessClient is a client of a session in this process.
type inProcessClient struct {
	mcptest.Client
	s    scenario.Setup
	w    *worker.Worker
	gate *approval.Gate
	sess *session.Session
}

func (inProcess) Start(t *testing.T, s scenario.Setup) scenario.Client {
	w, err := worker.Load(s.WorkerFile)
	if err != nil {
		t.Fatal(err)
	}
	policy := approval.Policy{Mode: approval.ModeAsk}
	for _, a := range s.AutoApprove {
		id, err := w.ResolveTargetID(a)
		if err != nil {
			t.Fatal(err)
		}
		policy.AutoApprove = append(policy.AutoApprove, id)
	}
	l, err := ledger.Open(s.Ledger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c := &inProcessClient{Client: mcptest.Client{T: t}, s: s, w: w, gate: approval.NewGate(l, policy)}
	opts := c.options()
	if !s.Ephemeral {
		dir, err := session.CreateStateDir(s.Sessions(), session.Meta{Worker: w.Name, WorkerKey: "file:" + s.WorkerFile, WorkerFile: s.WorkerFile})
		if err != nil {
			t.Fatal(err)
		}
		opts.State = dir
	}
	if c.sess, err = session.New(context.Background(), w, opts); err != nil {
		t.Fatal(err)
	}
	c.connect()
	return c
}

func (c *inProcessClient) options() session.Options {
	return session.Options{Gate: c.gate, Timeout: 10 * time.Second}
}

// connect serves the session over MCP and connects a client to it.
func (c *inProcessClient) connect() {
	c.T.Cleanup(c.sess.Close)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := gittools.NewMCPServer(c.sess, "test").Connect(context.Background(), st, nil)
	if err != nil {
		c.T.Fatal(err)
	}
	c.T.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "scenario", Version: "1"}, nil)
	if c.CS, err = client.Connect(context.Background(), ct, nil); err != nil {
		c.T.Fatal(err)
	}
	c.T.Cleanup(func() { c.CS.Close() })
}

// Restart closes the session (a durable one is saved) and opens it again:
// resumed from its state directory, or new when it was in memory only.
func (c *inProcessClient) Restart(t *testing.T) scenario.Client {
	c.CS.Close()
	dir, durable := c.sess.Durable()
	c.sess.Close()
	next := &inProcessClient{Client: mcptest.Client{T: t}, s: c.s, w: c.w, gate: c.gate}
	opts := c.options()
	var err error
	if !durable {
		next.sess, err = session.New(context.Background(), c.w, opts)
	} else {
		if opts.State, err = session.OpenStateDir(c.s.Sessions(), dir.SessionID()); err != nil {
			t.Fatal(err)
		}
		next.sess, _, err = session.Resume(context.Background(), c.w, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	next.connect()
	return next
}
