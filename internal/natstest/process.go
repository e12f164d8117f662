package natstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// nodeEnv carries a child's node (JSON) to the test binary run again as
// a NATS server (Main).
const nodeEnv = "AIRLOCK_NATSTEST_NODE"

// node is what a server started here is: the options a child process
// needs, in a form that travels as JSON.
type node struct {
	Name        string   `json:"name,omitempty"`
	Port        int      `json:"port"`
	Dir         string   `json:"dir"`
	MaxPayload  int32    `json:"max_payload,omitempty"`
	ClusterName string   `json:"cluster_name,omitempty"`
	ClusterPort int      `json:"cluster_port,omitempty"`
	Routes      []string `json:"routes,omitempty"`
}

func (n node) options() *server.Options {
	o := &server.Options{
		ServerName: n.Name, Host: "127.0.0.1", Port: n.Port, JetStream: true, StoreDir: n.Dir,
		MaxPayload: n.MaxPayload, NoLog: true, NoSigs: true,
	}
	if n.ClusterName != "" {
		o.Cluster = server.ClusterOpts{Name: n.ClusterName, Host: "127.0.0.1", Port: n.ClusterPort}
		o.Routes = server.RoutesFromStr(strings.Join(n.Routes, ","))
	}
	return o
}

// Main runs a package's tests (call it from TestMain), or, in a child
// that a Process started, a NATS server that runs until it is killed or
// its standard input closes (its test binary ended).
func Main(m *testing.M) {
	if cfg := os.Getenv(nodeEnv); cfg != "" {
		os.Exit(runNode(cfg))
	}
	os.Exit(m.Run())
}

func runNode(cfg string) int {
	var n node
	if err := json.Unmarshal([]byte(cfg), &n); err != nil {
		fmt.Fprintln(os.Stderr, "natstest:", err)
		return 2
	}
	s, err := server.NewServer(n.options())
	if err != nil {
		fmt.Fprintln(os.Stderr, "natstest:", err)
		return 2
	}
	go s.Start()
	// A node started again on its files, on a loaded machine, can be
	// slow to recover them.
	if !s.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(os.Stderr, "natstest: nats-server did not start in 30s")
		return 2
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	s.Shutdown()
	return 0
}

// Proc is a NATS server running in a child process (the test binary
// again, through Main), so that a test can kill it with SIGKILL: nothing
// of it is shut down in order, as when a machine dies.
type Proc struct {
	t     testing.TB
	n     node
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// Process starts a server in a child process; the package's TestMain
// must call Main. It is killed when the test ends.
func Process(t testing.TB, o Options) *Proc {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Port == 0 {
		o.Port = freePorts(t, 1)[0]
	}
	p := &Proc{t: t, n: node{Port: o.Port, Dir: o.Dir, MaxPayload: o.MaxPayload}}
	p.Start()
	return p
}

// URL is the server's client URL.
func (p *Proc) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.n.Port) }

// Start starts the server's process (again, on its files), and waits
// until it takes connections.
func (p *Proc) Start() {
	p.t.Helper()
	cfg, err := json.Marshal(p.n)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nodeEnv+"="+string(cfg))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("natstest: starting a nats-server process: %v", err)
	}
	p.cmd, p.stdin = cmd, stdin
	p.t.Cleanup(p.Kill)
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line == "ready\n"
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if !ok {
			p.t.Fatalf("natstest: the nats-server process did not start (does the package's TestMain call natstest.Main?)")
		}
	case <-time.After(40 * time.Second):
		p.t.Fatal("natstest: the nats-server process did not start in 40s")
	}
}

// Kill kills the server's process with SIGKILL and waits for it.
func (p *Proc) Kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill() // it may have ended: Wait says nothing either way that matters
	_ = p.cmd.Wait()
	_ = p.stdin.Close()
	p.cmd = nil
}

// ProcCluster is a cluster of servers each in its own process.
type ProcCluster struct {
	Procs []*Proc
}

// StartProcessCluster starts n clustered servers in child processes
// and waits until JetStream has a leader.
func StartProcessCluster(t testing.TB, n int) *ProcCluster {
	t.Helper()
	c := &ProcCluster{}
	for _, nd := range clusterNodes(t, n) {
		p := &Proc{t: t, n: nd}
		c.Procs = append(c.Procs, p)
	}
	for _, p := range c.Procs {
		p.Start()
	}
	c.WaitForLeader()
	waitPlacement(t, c.URLs(), n)
	return c
}

// URLs is every node's client URL, comma-separated.
func (c *ProcCluster) URLs() string {
	var u []string
	for _, p := range c.Procs {
		u = append(u, p.URL())
	}
	return strings.Join(u, ",")
}

// Kill kills node i with SIGKILL; Start starts it again on its files.
func (c *ProcCluster) Kill(i int)  { c.Procs[i].Kill() }
func (c *ProcCluster) Start(i int) { c.Procs[i].Start() }

// WaitForLeader waits up to 30 s until JetStream answers through the
// running nodes (it has a meta leader).
func (c *ProcCluster) WaitForLeader() {
	t := c.Procs[0].t
	t.Helper()
	var urls []string
	for _, p := range c.Procs {
		if p.cmd != nil {
			urls = append(urls, p.URL())
		}
	}
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
	}
	t.Fatalf("natstest: the cluster elected no JetStream leader in 30s: %v", err)
}
