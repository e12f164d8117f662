package natsconn_test

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/natsconn"
)

// HasCredentials: any way NATS could tell who connects counts, and a bare
// URL does not.
func TestHasCredentials(t *testing.T) {
	for _, env := range []string{natsconn.EnvUser, natsconn.EnvPassword, natsconn.EnvToken} {
		t.Setenv(env, "")
	}
	for _, c := range []struct {
		o    natsconn.Options
		env  string
		want bool
	}{
		{natsconn.Options{Store: "nats://h:4222"}, "", false},
		{natsconn.Options{Store: "nats://h:4222,nats://g:4222"}, "", false},
		{natsconn.Options{Store: "nats://h:4222", Creds: "x.creds"}, "", true},
		{natsconn.Options{Store: "nats://h:4222", Cert: "c", Key: "k"}, "", true},
		{natsconn.Options{Store: "nats://h:4222,nats://u:p@g:4222"}, "", true},
		{natsconn.Options{Store: "nats://tok@h:4222"}, "", true},
		{natsconn.Options{Store: "nats://h:4222"}, natsconn.EnvUser, true},
		{natsconn.Options{Store: "nats://h:4222"}, natsconn.EnvToken, true},
		{natsconn.Options{Store: "nats://h:4222"}, natsconn.EnvPassword, false}, // a password alone names no one
	} {
		if c.env != "" {
			t.Setenv(c.env, "v")
		}
		if got := c.o.HasCredentials(); got != c.want {
			t.Errorf("%+v with %s set: %v, want %v", c.o, c.env, got, c.want)
		}
		if c.env != "" {
			t.Setenv(c.env, "")
		}
	}
}
