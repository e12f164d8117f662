package natsconn

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// The environment variables that carry secrets (kept out of argv).
const (
	EnvUser     = "AIRLOCK_NATS_USER"
	EnvPassword = "AIRLOCK_NATS_PASSWORD"
	EnvToken    = "AIRLOCK_NATS_TOKEN"
)

// ErrBadStore: the --store value or a flag beside it is wrong.
var ErrBadStore = errors.New("bad --store")

// Options are where a fleet's state is and how to reach it.
type Options struct {
	// Store is "" (the local files) or nats://HOST:PORT (several,
	// comma-separated: a cluster's servers; tls:// also).
	Store string
	// Creds is a NATS credentials file (a user JWT and its nkey seed).
	Creds string
	// CA, Cert and Key are the TLS files: a CA that signs the servers'
	// certificates, and this client's certificate and key.
	CA, Cert, Key string
	// Prefix names the streams and buckets, so that several fleets share
	// one NATS: letters, digits, - and _.
	Prefix string
	// Replicas is how many servers keep each message: 3 in a cluster;
	// zero keeps what the fleet's streams have (1 for new ones), so that
	// a command run without the flag never scales a fleet down.
	Replicas int
}

// Register adds --store and the flags beside it to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Store, "store", "", "keep sessions, the review queue and the ledger in NATS JetStream at this URL\n"+
		"(nats://HOST:PORT, several comma-separated for a cluster; user:password@ or token@ in the URL, or\n"+
		"the environment's "+EnvUser+", "+EnvPassword+", "+EnvToken+"); default: this machine's files")
	fs.StringVar(&o.Creds, "nats-creds", "", "with --store: a NATS credentials file (user JWT and nkey seed)")
	fs.StringVar(&o.CA, "nats-ca", "", "with --store: the CA file that signs the NATS servers' TLS certificates")
	fs.StringVar(&o.Cert, "nats-cert", "", "with --store: this client's TLS certificate file (with --nats-key)")
	fs.StringVar(&o.Key, "nats-key", "", "with --store: this client's TLS key file (with --nats-cert)")
	fs.StringVar(&o.Prefix, "nats-prefix", "airlock", "with --store: the name the fleet's streams and buckets start with (letters, digits, - and _)")
	fs.IntVar(&o.Replicas, "nats-replicas", 0, "with --store: how many NATS servers keep each message (3 for a three-node cluster);\n"+
		"default: what the fleet's streams have, 1 for new ones")
}

// Enabled reports whether the state is in NATS.
func (o *Options) Enabled() bool { return o.Store != "" }

var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Check checks the options without connecting: a usage error names the
// flag and says what to write instead.
func (o *Options) Check() error {
	if !o.Enabled() {
		for name, v := range map[string]string{"--nats-creds": o.Creds, "--nats-ca": o.CA, "--nats-cert": o.Cert, "--nats-key": o.Key} {
			if v != "" {
				return fmt.Errorf("%w: %s is for a NATS store: add --store nats://HOST:PORT, or drop it", ErrBadStore, name)
			}
		}
		return nil
	}
	for _, u := range strings.Split(o.Store, ",") {
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil || p.Host == "" || (p.Scheme != "nats" && p.Scheme != "tls") {
			return fmt.Errorf("%w: %q is not a NATS server's URL: write nats://HOST:PORT (or tls://HOST:PORT), several comma-separated", ErrBadStore, hideUser(u))
		}
		if p.Path != "" && p.Path != "/" || p.RawQuery != "" || p.Fragment != "" {
			return fmt.Errorf("%w: %q has a path; a NATS URL is nats://HOST:PORT: use --nats-prefix to keep fleets apart", ErrBadStore, hideUser(u))
		}
	}
	if (o.Cert == "") != (o.Key == "") {
		return fmt.Errorf("%w: --nats-cert and --nats-key go together: give both, or neither", ErrBadStore)
	}
	for name, v := range map[string]string{"--nats-creds": o.Creds, "--nats-ca": o.CA, "--nats-cert": o.Cert, "--nats-key": o.Key} {
		if v == "" {
			continue
		}
		if _, err := os.Stat(v); err != nil {
			return fmt.Errorf("%w: %s %s: %v", ErrBadStore, name, v, err)
		}
	}
	if !prefixPattern.MatchString(o.Prefix) {
		return fmt.Errorf("%w: --nats-prefix %q: use only letters, digits, - and _", ErrBadStore, o.Prefix)
	}
	if o.Replicas < 0 || o.Replicas > 5 {
		return fmt.Errorf("%w: --nats-replicas %d: JetStream keeps 1 to 5 copies; use 3 for a three-node cluster", ErrBadStore, o.Replicas)
	}
	return nil
}

// hideUser is u, a --store URL that may not parse, with what comes
// before its last @ (user:password@ or token@) hidden: errors go to
// stderr, and on to logs.
func hideUser(u string) string {
	at := strings.LastIndex(u, "@")
	if at < 0 {
		return u
	}
	start := strings.Index(u, "://")
	if start < 0 || start > at {
		start = 0
	} else {
		start += len("://")
	}
	return u[:start] + "***" + u[at:]
}

// Where names the store for people: its URLs without any secret.
func (o *Options) Where() string {
	return o.publicURLs() + " (prefix " + o.Prefix + ")"
}

// publicURLs is --store's URLs, comma-separated, without their user
// parts (user:password@ or token@).
func (o *Options) publicURLs() string {
	return strings.Join(PublicURLs(strings.Split(o.Store, ",")), ",")
}

// PublicURLs is urls without their user parts (user:password@ or
// token@), for messages; a URL that does not parse is left out.
func PublicURLs(urls []string) []string {
	var out []string
	for _, u := range urls {
		if p, err := url.Parse(strings.TrimSpace(u)); err == nil {
			p.User = nil
			out = append(out, p.String())
		}
	}
	return out
}

// Flags are the flags that reach this store again, for a command shown
// to people: --store with its URLs without any secret (those stay in the
// environment), and the prefix and files when not the defaults.
func (o *Options) Flags() string {
	f := []string{"--store " + o.publicURLs()}
	if o.Prefix != "" && o.Prefix != "airlock" {
		f = append(f, "--nats-prefix "+o.Prefix)
	}
	for _, x := range []struct{ flag, v string }{{"--nats-creds", o.Creds}, {"--nats-ca", o.CA}, {"--nats-cert", o.Cert}, {"--nats-key", o.Key}} {
		if x.v != "" {
			f = append(f, x.flag+" "+x.v)
		}
	}
	return strings.Join(f, " ")
}

// HasCredentials reports whether these options give NATS any way to tell
// who connects: a credentials file (user JWT and nkey), a user or token in
// the environment or in a URL, or a TLS client certificate. A connection
// made without any is one anyone who reaches NATS can make.
func (o *Options) HasCredentials() bool {
	if o.Creds != "" || o.Cert != "" || os.Getenv(EnvUser) != "" || os.Getenv(EnvToken) != "" {
		return true
	}
	for _, u := range strings.Split(o.Store, ",") {
		if p, err := url.Parse(strings.TrimSpace(u)); err == nil && p.User != nil {
			return true
		}
	}
	return false
}

// OpenToAnyone reports whether NATS lets in a client that gives no
// credentials at all, whatever this one gives: a NATS without
// authorization takes any user, password or token it is sent, so
// HasCredentials alone proves nothing. It connects once as nobody (this
// client's CA, but neither its certificate nor any secret) and closes at
// once; a refusal, or no answer within 5 s, is false.
func (o *Options) OpenToAnyone() bool {
	opts := []nats.Option{nats.Name("airlock: a check that NATS asks for credentials"), nats.NoReconnect(),
		nats.Timeout(5 * time.Second)}
	if o.CA != "" {
		opts = append(opts, nats.RootCAs(o.CA))
	}
	nc, err := nats.Connect(o.publicURLs(), opts...)
	if err != nil {
		return false
	}
	nc.Close()
	return true
}

// Connect connects as name (shown in the server's connection list),
// reconnecting without end: a NATS node that dies is replaced by another
// of the cluster, or by itself when it comes back.
func (o *Options) Connect(name string) (*nats.Conn, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(10 * time.Second)}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if u, p := os.Getenv(EnvUser), os.Getenv(EnvPassword); u != "" {
		opts = append(opts, nats.UserInfo(u, p))
	}
	if tok := os.Getenv(EnvToken); tok != "" {
		opts = append(opts, nats.Token(tok))
	}
	if o.CA != "" {
		opts = append(opts, nats.RootCAs(o.CA))
	}
	if o.Cert != "" {
		opts = append(opts, nats.ClientCert(o.Cert, o.Key))
	}
	nc, err := nats.Connect(o.Store, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s: %w; check that the servers run and the credentials are right", o.Where(), err)
	}
	return nc, nil
}

// ConnectedURL names the server nc is connected to, without the URL's
// user part: nats.Conn's ConnectedUrlRedacted hides a password only, and
// a token given as nats://TOKEN@HOST is the user part. For messages;
// "" while not connected, as ConnectedUrlRedacted.
func ConnectedURL(nc *nats.Conn) string {
	u, err := url.Parse(nc.ConnectedUrl())
	if err != nil || u.Host == "" {
		return ""
	}
	u.User = nil
	return u.String()
}
