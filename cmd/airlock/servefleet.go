package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/hub"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/natsstore"
)

// moveFlags are serve's flags for sessions that move between the
// servers of a fleet (with --store).
type moveFlags struct {
	advertise string
	leaseTTL  time.Duration
}

func (m *moveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.advertise, "advertise", "", "with --store and --http: the URL the other servers of the fleet reach this one at, http://HOST:PORT\n"+
		"(default http://ADDR of --http); a request for a session this server holds is forwarded here")
	fs.DurationVar(&m.leaseTTL, "lease-ttl", 0, "with --store: how long a server that stopped renewing a session's lease keeps it\n"+
		"(a server that finds the holder not answering takes it over at once); default: what the fleet's\n"+
		"bucket has, 10s for a new one; given, it changes the fleet's")
}

// check is the flags' usage error, if any.
func (m *moveFlags) check(f *serveFlags) error {
	if m.leaseTTL != 0 && m.leaseTTL < 100*time.Millisecond {
		return usageError("--lease-ttl %s: give 100ms or more (a lease is renewed every third of it)", m.leaseTTL)
	}
	if m.advertise != "" && (!f.fleet.nats.Enabled() || f.httpAddr == "") {
		return usageError("--advertise names this server to the other servers of a fleet: give it with --store and --http")
	}
	if m.advertise != "" && !strings.HasPrefix(m.advertise, "http://") && !strings.HasPrefix(m.advertise, "https://") {
		return usageError("--advertise %s: give a URL such as http://10.0.0.5:8787", m.advertise)
	}
	return nil
}

// sessionStore is where sessions are kept: the fleet's JetStream with
// --store, its leases in owner's name; else the state directory's
// sessions.
func (sv *served) sessionStore(owner string) (store.Store, error) {
	if sv.nc == nil {
		return session.Local(filepath.Join(sv.state, "sessions")), nil
	}
	o := sv.f.fleet.nats
	return natsstore.New(sv.nc, natsstore.Options{Prefix: o.Prefix, Replicas: o.Replicas, LeaseTTL: sv.f.move.leaseTTL, Owner: owner})
}

// httpDoor checks --http's address: loopback only, unless the server is
// one of a fleet (--store), which other machines reach (through a load
// balancer, or forwarded by another server); every request still needs
// a bearer token.
func (sv *served) httpDoor() error {
	if sv.nc == nil {
		return loopbackOnly(sv.f.httpAddr)
	}
	host, _, err := net.SplitHostPort(sv.f.httpAddr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); sv.f.move.advertise == "" && (host == "" || ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("the other servers of the fleet cannot reach this one at %q: give --advertise http://HOST:PORT, the address they reach it at", sv.f.httpAddr)
	}
	return nil
}

// advertised is the address this server's leases record.
func (sv *served) advertised(ln net.Listener) string {
	if sv.f.move.advertise != "" {
		return strings.TrimSuffix(sv.f.move.advertise, "/")
	}
	return fmt.Sprintf("http://%s", ln.Addr())
}

// stdioOwner names a stdio server in the leases it takes in a fleet's
// store: no address to forward to, but enough for a server started
// again on this machine (after a kill) to tell that the holder is gone,
// rather than wait out the lease's TTL: its host, the machine's boot,
// its pid and the pid namespace that pid is of (two containers on one
// machine may share its hostname and boot id, never their pids).
func stdioOwner() string {
	host, _ := os.Hostname()
	q := url.Values{"boot": {bootID()}}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		q.Set("pidns", ns)
	}
	return (&url.URL{Scheme: "stdio", Host: host, Path: fmt.Sprint("/", os.Getpid()), RawQuery: q.Encode()}).String()
}

// bootID tells this boot of this machine from any other ("" where the
// kernel does not say).
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// holders is a store that says who holds a session (natsstore).
type holders interface {
	store.Store
	hub.Holders
}

// breakDeadHolders breaks the leases of worker key's sessions whose
// holder was a stdio server of this machine, this boot, whose process is
// gone: a server killed and started again takes its session back at
// once. A holder elsewhere is left to its lease's TTL (a live one keeps
// it; fencing would stop one wrongly broken from writing).
func breakDeadHolders(st store.Store, key string, stderr io.Writer) {
	hs, ok := st.(holders)
	if !ok {
		return
	}
	list, err := hs.List()
	if err != nil {
		return // openSession lists again, and says why
	}
	me := stdioOwner()
	for _, l := range list {
		if !l.Running || l.WorkerKey != key {
			continue
		}
		owner, rev, held, err := hs.Holder(l.ID)
		if err != nil || !held || !deadHereStdio(owner, me) {
			continue
		}
		if err := hs.Break(l.ID, rev); err == nil {
			fmt.Fprintf(stderr, "airlock serve: session %s: its server (%s) is gone; took its lease over\n", l.ID, termsafe.Line(owner))
		}
	}
}

// deadHereStdio reports whether owner is a stdio server of the same
// machine, boot and pid namespace as me whose process is gone.
func deadHereStdio(owner, me string) bool {
	o, err1 := url.Parse(owner)
	m, err2 := url.Parse(me)
	if err1 != nil || err2 != nil || o.Scheme != "stdio" || o.Host != m.Host || m.Query().Get("boot") == "" {
		return false
	}
	for _, k := range []string{"boot", "pidns"} {
		if o.Query().Get(k) != m.Query().Get(k) {
			return false
		}
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(o.Path, "/"))
	return err == nil && pid > 0 && pid != os.Getpid() && !broker.Alive(pid)
}
