package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval/ledger/natsledger"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// Two airlock servers push at once to a fleet's ledger on a three-node
// cluster (--nats-replicas 3) while the node that leads the ledger's
// stream is stopped and started again: every push answered "pushed" has
// its request, decision and pushed records in the ledger, and the ledger is
// one chain (ledger verify --store exits 0).
func TestFleetLedgerNodeDownUnderTwoServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster and two servers")
	}
	c := natstest.StartCluster(t, 3)
	root := t.TempDir()
	env := isolatedEnv(t, root)
	repo, _ := runnerWorker(t, env, root)
	const servers, pushes = 2, 4
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		pushed  = map[string]bool{} // the commits answered "pushed"
		first   = make(chan struct{}, servers)
		stopped = make(chan struct{})
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := range servers {
		branch := fmt.Sprintf("fleet%d", i)
		mustGit(t, env, repo, "branch", branch)
		wf := filepath.Join(root, branch+".md")
		os.WriteFile(wf, []byte(fmt.Sprintf("---\nname: %s\ngit:\n  default_target: {type: local, path: %q, branch: %s}\n---\n", branch, repo, branch)), 0o644)
		cs, _ := serveMCP(t, ctx, isolatedEnv(t, t.TempDir()), root, wf, append([]string{"--store", c.URLs(), "--nats-replicas", "3", "--auto-approve", "default", "--ephemeral"}, fleetTrust(t, root)...)...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range pushes {
				if j == 1 {
					first <- struct{}{}
					<-stopped
				}
				content := fmt.Sprintf("%s %d\n", branch, j)
				text, err := callTool(ctx, cs, "write_file", map[string]any{"path": "notes.txt", "content": content})
				if err == nil {
					text, err = callTool(ctx, cs, "git_stage", map[string]any{"message": "Notes " + content})
				}
				if err == nil {
					text, err = callTool(ctx, cs, "git_push", map[string]any{})
				}
				if err != nil || !strings.Contains(text, "pushed") {
					t.Errorf("server %d, push %d: %v %s", i, j, err, text)
					continue
				}
				mu.Lock()
				pushed[branch+" "+itoa(uint64(j))] = true
				mu.Unlock()
			}
		}()
	}
	for range servers {
		<-first
	}
	// The stream's leader goes while both servers push.
	leader := ledgerStreamLeader(t, c)
	close(stopped)
	time.Sleep(100 * time.Millisecond)
	c.Stop(leader)
	time.Sleep(time.Second)
	c.Start(leader)
	wg.Wait()
	if len(pushed) != servers*pushes {
		t.Fatalf("%d pushes answered pushed, want %d", len(pushed), servers*pushes)
	}
	l, err := natsledger.Open(natstest.Connect(t, c.URLs()), natsledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Records()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range recs {
		if r.Kind != "push" || strings.Contains(string(r.Data), `"result":"pushed"`) {
			kinds[r.Kind]++
		}
	}
	if kinds["request"] != servers*pushes || kinds["decision"] != servers*pushes || kinds["push"] != servers*pushes {
		t.Fatalf("the ledger holds %v, want %d of each", kinds, servers*pushes)
	}
	out, errOut, code := runAirlock(t, env, root, "ledger", "verify", "--store", c.URLs())
	if code != 0 || !strings.Contains(out, itoa(uint64(len(recs)))+" records, chain intact") {
		t.Fatalf("verify --store exited %d:\n%s%s", code, out, errOut)
	}
}

func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("%s: %s", name, resultText(res))
	}
	return resultText(res), nil
}

// ledgerStreamLeader is the node that leads the fleet's ledger stream.
func ledgerStreamLeader(t *testing.T, c *natstest.Cluster) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for i, s := range c.Servers {
			if s != nil && s.JetStreamIsStreamLeader("$G", "airlock_ledger") {
				return i
			}
		}
	}
	t.Fatal("no node leads the ledger's stream")
	return 0
}
