package natsconn

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &o
}

func TestCheck(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{nil, ""},
		{[]string{"--store", "nats://127.0.0.1:4222"}, ""},
		{[]string{"--store", "nats://a:4222,tls://b:4222", "--nats-replicas", "3"}, ""},
		{[]string{"--store", "nats://u:p@a:4222", "--nats-creds", file}, ""},
		{[]string{"--nats-creds", file}, "add --store"},
		{[]string{"--store", "http://a:4222"}, "not a NATS server's URL"},
		{[]string{"--store", "/var/lib/airlock"}, "not a NATS server's URL"},
		{[]string{"--store", "nats://a:4222/x"}, "--nats-prefix"},
		{[]string{"--store", "nats://a:4222", "--nats-cert", file}, "go together"},
		{[]string{"--store", "nats://a:4222", "--nats-ca", file + ".none"}, "--nats-ca"},
		{[]string{"--store", "nats://a:4222", "--nats-prefix", "a.b"}, "letters, digits"},
		{[]string{"--store", "nats://a:4222", "--nats-replicas", "-1"}, "1 to 5"},
		{[]string{"--store", "nats://a:4222", "--nats-replicas", "6"}, "1 to 5"},
	} {
		err := parse(t, c.args...).Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrBadStore)):
			t.Errorf("%q: got %v, want an ErrBadStore saying %q", c.args, err, c.want)
		}
	}
}

func TestWhereHidesSecrets(t *testing.T) {
	got := parse(t, "--store", "nats://u:secret@a:4222,nats://tok@b:4222").Where()
	if strings.Contains(got, "secret") || strings.Contains(got, "tok@") || !strings.Contains(got, "nats://a:4222") {
		t.Fatalf("Where() = %q", got)
	}
}

// TestConnectWithToken reaches a server that wants a token, given in the
// environment; without it the error says what to check.
func TestConnectWithToken(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Authorization: "s3cret", NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	defer s.Shutdown()
	o := parse(t, "--store", s.ClientURL())
	if _, err := o.Connect("t"); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("without the token: %v", err)
	}
	t.Setenv(EnvToken, "s3cret")
	nc, err := o.Connect("t")
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// TestCheckHidesSecrets: a --store refused for its form says why
// without the password or token in it (the error goes to stderr, and on
// to logs).
func TestCheckHidesSecrets(t *testing.T) {
	for _, store := range []string{
		"nats://u:secret@a:4222/x",
		"http://secret@a:4222",
		"nats://u:secret@",
		"nats://a:4222,nats://u:secret@b:4222/path",
		"nats://u:secret@a:4222\x7f",
		"nats://u:secret@[::1",
	} {
		err := parse(t, "--store", store).Check()
		if err == nil || !errors.Is(err, ErrBadStore) {
			t.Errorf("%q: %v, want an ErrBadStore", store, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error shows the secret: %v", store, err)
		}
	}
}

// TestCheckRefusesQueries: a query or fragment is no part of a NATS URL
// (nats.go ignores it, and Where would show it).
func TestCheckRefusesQueries(t *testing.T) {
	for _, store := range []string{"nats://a:4222?password=x", "nats://a:4222#x"} {
		if err := parse(t, "--store", store).Check(); !errors.Is(err, ErrBadStore) {
			t.Errorf("%q: %v, want an ErrBadStore", store, err)
		}
	}
}

// TestConnectedURLHidesTheToken: nats.Conn's ConnectedUrlRedacted keeps
// a token given as the URL's user; ConnectedURL does not.
func TestConnectedURLHidesTheToken(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Authorization: "s3cret", NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	defer s.Shutdown()
	o := parse(t, "--store", strings.Replace(s.ClientURL(), "nats://", "nats://s3cret@", 1))
	nc, err := o.Connect("t")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := ConnectedURL(nc); got != s.ClientURL() {
		t.Fatalf("ConnectedURL = %q, want %q", got, s.ClientURL())
	}
	nc.Close()
	if got := ConnectedURL(nc); got != "" {
		t.Fatalf("ConnectedURL of a closed connection = %q, want \"\"", got)
	}
}

// TestFlagsReachTheStoreWithoutSecrets: the flags shown to people name
// the servers, the prefix and the files, never a password or token.
func TestFlagsReachTheStoreWithoutSecrets(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "nats://u:secret@a:4222,nats://tok@b:4222"}, "--store nats://a:4222,nats://b:4222"},
		{[]string{"--store", "nats://a:4222", "--nats-prefix", "team"}, "--store nats://a:4222 --nats-prefix team"},
	} {
		o := parse(t, c.args...)
		if got := o.Flags(); got != c.want {
			t.Errorf("%q: Flags() = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestOpenToAnyone: a NATS without authorization lets in a client that
// gives nothing (and takes whatever credentials it is given); one that
// wants a token does not.
func TestOpenToAnyone(t *testing.T) {
	for _, c := range []struct {
		auth string
		want bool
	}{{"", true}, {"s3cret", false}} {
		s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Authorization: c.auth, NoLog: true, NoSigs: true})
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("nats-server did not start")
		}
		url := strings.Replace(s.ClientURL(), "nats://", "nats://s3cret@", 1)
		o := parse(t, "--store", url)
		if !o.HasCredentials() {
			t.Fatalf("%s: no credentials", url)
		}
		if got := o.OpenToAnyone(); got != c.want {
			t.Errorf("a NATS whose authorization is %q: OpenToAnyone %v, want %v", c.auth, got, c.want)
		}
		s.Shutdown()
	}
}
