package main

import (
	"io"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/natstest"
)

// serve's fleet flags: what each refuses, and that --http leaves
// loopback only with --store (and a reachable --advertise).
func TestServeFleetFlags(t *testing.T) {
	ns := natstest.Server(t, natstest.Options{})
	url := ns.ClientURL()
	for _, tc := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{[]string{"--http", "127.0.0.1:0", "--advertise", "http://10.0.0.5:8787"}, "give it with --store and --http"},
		{[]string{"--store", url, "--advertise", "http://10.0.0.5:8787"}, "give it with --store and --http"},
		{[]string{"--store", url, "--http", "10.0.0.5:0", "--advertise", "10.0.0.5:8787"}, "give a URL such as"},
		{[]string{"--store", url, "--lease-ttl", "10ms"}, "give 100ms or more"},
		{[]string{"--store", url, "--http", "10.0.0.5:0", "--advertise", "http://10.0.0.5:8787", "--lease-ttl", "2s"}, ""},
	} {
		_, err := parseServe(append(tc.args, "--run", "off"), io.Discard)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	nc := natstest.Connect(t, url)
	for _, tc := range []struct {
		addr, advertise string
		fleet           bool
		want            string
	}{
		{"10.0.0.5:8787", "", false, "only a loopback address"},
		{"10.0.0.5:8787", "", true, ""},
		{"0.0.0.0:8787", "", true, "give --advertise"},
		{":8787", "", true, "give --advertise"},
		{"0.0.0.0:8787", "http://10.0.0.5:8787", true, ""},
	} {
		sv := &served{f: &serveFlags{httpAddr: tc.addr, move: moveFlags{advertise: tc.advertise}}}
		if tc.fleet {
			sv.nc = nc
		}
		err := sv.httpDoor()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--http %s --advertise %q (fleet %v): %v, want %q", tc.addr, tc.advertise, tc.fleet, err, tc.want)
		}
	}
}
