package natstest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options adjust a server started here.
type Options struct {
	// Dir holds the server's JetStream files: t.TempDir() when empty.
	// A server started again on the same Dir finds what it stored.
	Dir string
	// Port is the client port: any free one when zero.
	Port int
	// MaxPayload bounds a message: the server's default (1 MiB) when
	// zero. Tests set it small to make stores chunk their writes.
	MaxPayload int32
}

// Server starts a JetStream server in-process on 127.0.0.1, shut down
// when the test ends.
func Server(t testing.TB, o Options) *server.Server {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Port == 0 {
		o.Port = -1
	}
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: o.Port, JetStream: true, StoreDir: o.Dir,
		MaxPayload: o.MaxPayload, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	return s
}

func start(t testing.TB, s *server.Server) {
	t.Helper()
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("natstest: nats-server did not start in 10s")
	}
	t.Cleanup(s.Shutdown)
}

// Connect connects to url (one or several, comma-separated), closed when
// the test ends. It reconnects without end, quickly: a test that stops a
// server expects its clients to find another, or the same one back.
func Connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Cluster is several JetStream servers clustered on loopback.
type Cluster struct {
	t       testing.TB
	name    string
	opts    []*server.Options
	Servers []*server.Server // nil where a node is stopped
}

// StartCluster starts n clustered servers (n >= 3 for JetStream's
// replicated streams to survive one down) and waits until JetStream
// has a leader.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, name: clusterName, Servers: make([]*server.Server, n)}
	for _, nd := range clusterNodes(t, n) {
		c.opts = append(c.opts, nd.options())
	}
	for i := range n {
		c.Start(i)
	}
	c.WaitForLeader()
	waitPlacement(t, c.URLs(), n)
	return c
}

// waitPlacement waits up to 30 s until the cluster at urls places a
// stream on all n of its nodes: a leader is elected before every node is
// known to it as a peer, and a replicated stream made in between is
// refused ("no suitable peers for placement").
func waitPlacement(t testing.TB, urls string, n int) {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, last = js.CreateStream(ctx, jetstream.StreamConfig{Name: "natstest_ready", Subjects: []string{"natstest.ready"}, Replicas: n, Storage: jetstream.MemoryStorage})
		if last == nil {
			last = js.DeleteStream(ctx, "natstest_ready")
		}
		cancel()
		if last == nil {
			return
		}
	}
	t.Fatalf("natstest: the cluster placed no stream on its %d nodes in 30s: %v", n, last)
}

// URLs is every node's client URL, comma-separated, as clients take them.
func (c *Cluster) URLs() string {
	var u []string
	for _, o := range c.opts {
		u = append(u, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(u, ",")
}

// Stop shuts node i down and waits until it is down.
func (c *Cluster) Stop(i int) {
	if s := c.Servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.Servers[i] = nil
	}
}

// Start starts node i (again, on its files).
func (c *Cluster) Start(i int) {
	c.t.Helper()
	o := *c.opts[i]
	s, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatal(err)
	}
	start(c.t, s)
	c.Servers[i] = s
}

// WaitForLeader waits up to 30 s until a running node reports a
// JetStream meta leader.
func (c *Cluster) WaitForLeader() {
	c.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, s := range c.Servers {
			if s != nil && s.JetStreamIsLeader() {
				return
			}
		}
	}
	c.t.Fatal("natstest: the cluster elected no JetStream leader in 30s")
}

const clusterName = "airlock-test"

// clusterNodes are n nodes of a cluster on loopback, routed to each other.
func clusterNodes(t testing.TB, n int) []node {
	clientPorts, routePorts := freePorts(t, n), freePorts(t, n)
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var nodes []node
	for i := range n {
		nodes = append(nodes, node{
			Name: fmt.Sprintf("n%d", i), Port: clientPorts[i], Dir: t.TempDir(),
			ClusterName: clusterName, ClusterPort: routePorts[i], Routes: routes,
		})
	}
	return nodes
}

// freePorts finds n free TCP ports on loopback.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close() // only its port was wanted
	}
	return ports
}

// FromConfig starts one JetStream server in-process from a nats-server
// configuration file, read by nats-server's own parser (its accounts,
// users and permissions as written; variables from the environment), on
// 127.0.0.1 with a free port, a directory of the test's own and no
// cluster or monitoring port: a fleet's NATS as its operator configures
// it, on one node (which may keep as much as the file's accounts may).
func FromConfig(t testing.TB, file string) *server.Server {
	t.Helper()
	o, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("natstest: %s: %v", file, err)
	}
	o.Host, o.Port = "127.0.0.1", -1
	o.HTTPHost, o.HTTPPort = "", 0
	o.Cluster = server.ClusterOpts{}
	o.Routes, o.RoutesStr = nil, ""
	o.StoreDir = t.TempDir()
	// One node must hold what the file's accounts may keep across the
	// cluster (an account's limit counts every replica): a bound, never
	// an allocation.
	o.JetStreamMaxStore = 1 << 40
	o.NoLog, o.NoSigs = true, true
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatalf("natstest: %s: %v", file, err)
	}
	start(t, s)
	return s
}
