package fleet_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/internal/natsconn"
)

// The example's three NATS servers, as compose.yaml names them; each
// file's routes name these hosts.
var nodes = []string{"nats-1", "nats-2", "nats-3"}

const password = "fleet-test-password"

// loadConfigs parses each node's file with nats-server's own parser, as
// the server in the container does, with the password compose.yaml gives
// it in the environment.
func loadConfigs(t *testing.T, dir string) []*server.Options {
	t.Helper()
	t.Setenv("AIRLOCK_NATS_PASSWORD", password)
	t.Setenv("AIRLOCK_NATS_SERVER_PASSWORD", password+"-server")
	t.Setenv("AIRLOCK_NATS_REVIEWER_PASSWORD", password+"-reviewer")
	var out []*server.Options
	for _, n := range nodes {
		o, err := server.ProcessConfigFile(filepath.Join(dir, n+".conf"))
		if err != nil {
			t.Fatalf("%s.conf: %v", n, err)
		}
		out = append(out, o)
	}
	return out
}

// TestConfigsSayWhatTheDocsSay checks what docs/fleet.md tells of the
// files: the ports, JetStream's directory and sizes, one cluster whose
// routes reach all three nodes, one account for airlock with its
// password from the environment.
func TestConfigsSayWhatTheDocsSay(t *testing.T) {
	// The guide shows one file: the others differ only in the name.
	var first string
	for i, n := range nodes {
		b, err := os.ReadFile(filepath.Join("nats", n+".conf"))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("server_name: "+n+"\n", "server_name: nats-N\n", "# "+n+":", "# nats-N:").Replace(string(b))
		if i == 0 {
			first = text
		} else if text != first {
			t.Errorf("%s.conf differs from nats-1.conf in more than its name", n)
		}
	}
	for i, o := range loadConfigs(t, "nats") {
		n := nodes[i]
		for _, c := range []struct {
			what      string
			got, want any
		}{
			{"server_name", o.ServerName, n},
			{"client port", o.Port, 4222},
			{"monitoring port", o.HTTPPort, 8222},
			{"jetstream", o.JetStream, true},
			{"store_dir", o.StoreDir, "/data/jetstream"},
			{"max_file_store", o.JetStreamMaxStore, int64(20 << 30)},
			{"max_memory_store", o.JetStreamMaxMemory, int64(512 << 20)},
			{"cluster name", o.Cluster.Name, "airlock"},
			{"cluster port", o.Cluster.Port, 6222},
			{"users", len(o.Users), 3},
		} {
			if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
				t.Errorf("%s.conf: %s is %v, want %v", n, c.what, c.got, c.want)
			}
		}
		var hosts []string
		for _, r := range o.Routes {
			if r.Port() != "6222" {
				t.Errorf("%s.conf: route %s: want port 6222", n, r)
			}
			hosts = append(hosts, r.Hostname())
		}
		if slices.Sort(hosts); !slices.Equal(hosts, nodes) {
			t.Errorf("%s.conf: routes reach %v, want all of %v", n, hosts, nodes)
		}
		if len(o.Users) == 3 {
			u := o.Users[0]
			if u.Username != "airlock" || u.Password != password || u.Account == nil || u.Account.Name != "AIRLOCK" {
				t.Errorf("%s.conf: the user is %q in %v, want airlock in AIRLOCK with $AIRLOCK_NATS_PASSWORD", n, u.Username, u.Account)
			}
		}
	}
}

// TestExampleClusterStartsAndKeepsR3 starts the three nodes from the
// example's own files, with only the host names, ports and directories
// made this machine's, and uses them as airlock does (natsconn, with the
// user and password from the environment): JetStream elects a leader, an
// R3 stream takes writes, and keeps taking them with its leader's node
// down; the account's limit is the file's.
func TestExampleClusterStartsAndKeepsR3(t *testing.T) {
	servers, js, co := startExample(t, "nats")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ai, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ai.Limits.MaxStore != 30<<30 || ai.Limits.MaxMemory != 256<<20 {
		t.Errorf("the AIRLOCK account's limits are %d bytes on disk, %d in memory; the files say 30GB and 256MB", ai.Limits.MaxStore, ai.Limits.MaxMemory)
	}

	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "airlock_example", Subjects: []string{"airlock.example.>"},
		Storage: jetstream.FileStorage, Replicas: co.Replicas})
	if err != nil {
		t.Fatal(err)
	}
	publish(ctx, t, js, 0, 10)
	info := waitReplicas(ctx, t, st, 2)
	leader := slices.IndexFunc(servers, func(s *server.Server) bool { return s.Name() == info.Cluster.Leader })
	if leader < 0 {
		t.Fatalf("the stream's leader %q is none of the nodes", info.Cluster.Leader)
	}
	servers[leader].Shutdown()
	servers[leader].WaitForShutdown()
	down := time.Now()
	publish(ctx, t, js, 10, 11)
	t.Logf("the first write after the stream leader's node died was acknowledged %v later", time.Since(down).Round(time.Millisecond))
	publish(ctx, t, js, 11, 20)
	info = waitReplicas(ctx, t, st, 1)
	if info.State.Msgs != 20 || info.Cluster.Leader == nodes[leader] {
		t.Fatalf("with %s down: %d messages, leader %q; want 20 and another leader", nodes[leader], info.State.Msgs, info.Cluster.Leader)
	}
	for seq := uint64(1); seq <= 20; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d after the leader died: %v", seq, err)
		}
		if want := fmt.Sprint("call ", seq-1); string(m.Data) != want {
			t.Fatalf("message %d after the leader died is %q, want %q", seq, m.Data, want)
		}
	}
}

// startExample starts the three nodes from the files in dir, with only
// the host names, ports and directories made this machine's, and connects
// to them as airlock does (natsconn, with the user and password in the
// environment).
func startExample(t *testing.T, dir string) ([]*server.Server, jetstream.JetStream, natsconn.Options) {
	t.Helper()
	opts := loadConfigs(t, dir)
	clientPorts, routePorts := freePorts(t, len(nodes)), freePorts(t, len(nodes))
	for i, o := range opts {
		o.Host, o.Port = "127.0.0.1", clientPorts[i]
		o.HTTPHost, o.HTTPPort = "127.0.0.1", server.RANDOM_PORT
		o.Cluster.Host, o.Cluster.Port = "127.0.0.1", routePorts[i]
		o.StoreDir = t.TempDir()
		o.NoLog, o.NoSigs = true, true
		for _, r := range o.Routes {
			k := slices.Index(nodes, r.Hostname())
			r.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(routePorts[k]))
		}
	}
	servers := make([]*server.Server, len(nodes))
	for i, o := range opts {
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatalf("%s: %v", nodes[i], err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("%s did not start", nodes[i])
		}
		servers[i] = s
	}
	waitHealthy(t, servers)

	var urls []string
	for _, p := range clientPorts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	t.Setenv(natsconn.EnvUser, "airlock")
	t.Setenv(natsconn.EnvPassword, password)
	co := natsconn.Options{Store: strings.Join(urls, ","), Prefix: "airlock", Replicas: 3}
	nc, err := co.Connect("fleet example test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return servers, js, co
}

// publish publishes calls from..to-1, each acknowledged: retried while a
// new leader is elected, with a message id so that a retry of a message
// stored whose acknowledgement was lost is not stored twice.
func publish(ctx context.Context, t *testing.T, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		for {
			// While no leader answers a publish waits for its context:
			// each try waits a while, not the whole test's time.
			try, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := js.Publish(try, fmt.Sprintf("airlock.example.%d", i), []byte(fmt.Sprint("call ", i)),
				jetstream.WithMsgID(fmt.Sprint("call-", i)))
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("publishing call %d: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitReplicas waits until the stream has a leader and n current
// replicas besides it.
func waitReplicas(ctx context.Context, t *testing.T, st jetstream.Stream, n int) *jetstream.StreamInfo {
	t.Helper()
	for {
		info, err := st.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
			current := 0
			for _, r := range info.Cluster.Replicas {
				if r.Current && !r.Offline {
					current++
				}
			}
			if current >= n {
				return info
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the stream has no leader with %d current replicas: %v %+v", n, err, info)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitHealthy waits until every node's /healthz (compose.yaml's health
// check) answers 200: JetStream is up and current with its cluster.
func waitHealthy(t *testing.T, servers []*server.Server) {
	t.Helper()
	for i, s := range servers {
		u := url.URL{Scheme: "http", Host: s.MonitorAddr().String(), Path: "/healthz"}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := http.Get(u.String())
			if err == nil {
				_ = resp.Body.Close() // only the status matters
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s did not answer 200 in 30s: %v %v", nodes[i], u.String(), err, resp)
			}
		}
	}
}

// freePorts finds n free TCP ports on loopback.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// TestLimitsRefuseWritesAndKeepTheRest is what docs/fleet.md says of the
// example's limits, with its files but each limit made 4 MiB: past it a
// write is refused with an error, and every write acknowledged before it
// is still there. The account's max_file counts every replica (an R3
// stream's bytes three times), but each server knows the others' usage
// only from their reports (about once a second), so a burst is refused
// once the data is between a third of the limit and all of it; a server's
// max_file_store counts its own copy.
func TestLimitsRefuseWritesAndKeepTheRest(t *testing.T) {
	for _, c := range []struct {
		limit, small, refusal string
		least                 uint64 // the stream's bytes at the refusal, at least
		replicasCounted       bool
	}{
		{"max_file: 30GB", "max_file: 4MB", "resource limits exceeded for account", 4<<20/3 - 64<<10, true},
		{"max_file_store: 20GB", "max_file_store: 4MB", "insufficient resources", 3 << 20, false},
	} {
		t.Run(strings.TrimSuffix(strings.Fields(c.limit)[0], ":"), func(t *testing.T) {
			js, st := startLimited(t, c.limit, c.small)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			record := make([]byte, 64<<10)
			acked := 0
			var refused error
			for acked < 200 {
				if _, err := js.Publish(ctx, "airlock.ledger", record); err != nil {
					refused = err
					break
				}
				acked++
			}
			if refused == nil {
				t.Fatalf("%d records of 64 KiB (%d MiB, R3) were all taken with %s", acked, acked/16, c.small)
			}
			info, err := st.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("refused after %d records (%d bytes in the stream): %v", acked, info.State.Bytes, refused)
			if info.State.Msgs != uint64(acked) {
				t.Fatalf("%d records acknowledged, %d in the stream", acked, info.State.Msgs)
			}
			if info.State.Bytes > 4<<20+64<<10 || info.State.Bytes < c.least {
				t.Fatalf("the stream holds %d bytes when %s refuses a write: want %d to 4 MiB", info.State.Bytes, c.small, c.least)
			}
			if !strings.Contains(refused.Error(), c.refusal) {
				t.Fatalf("the refusal says %q; docs/fleet.md quotes %q", refused, c.refusal)
			}
			if c.replicasCounted {
				waitAccountCountsReplicas(ctx, t, js, info.State.Bytes)
			}
			if _, err := js.Publish(ctx, "airlock.ledger", record); err == nil {
				t.Fatal("a write past the limit was taken at the second try")
			}
		})
	}
}

// startLimited starts the example's cluster with limit replaced by small
// in every node's file, and an R3 stream on it.
func startLimited(t *testing.T, limit, small string) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	dir := t.TempDir()
	for _, n := range nodes {
		b, err := os.ReadFile(filepath.Join("nats", n+".conf"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), limit) {
			t.Fatalf("%s.conf has no %q", n, limit)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".conf"), []byte(strings.Replace(string(b), limit, small, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, js, co := startExample(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "airlock_ledger", Subjects: []string{"airlock.ledger"},
		Storage: jetstream.FileStorage, Replicas: co.Replicas})
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// waitAccountCountsReplicas waits until the account's usage, once the
// servers' reports are in, is every copy of a stream of size bytes.
func waitAccountCountsReplicas(ctx context.Context, t *testing.T, js jetstream.JetStream, size uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ai, err := js.AccountInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ai.Store >= 3*size {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the account's usage is %d bytes for a stream of %d, R3: want every copy counted", ai.Store, size)
		}
	}
}
