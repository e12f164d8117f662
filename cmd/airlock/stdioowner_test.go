package main

import (
	"net/url"
	"os/exec"
	"strconv"
	"testing"
)

// TestStdioOwnerOfAnotherPIDNamespace: two containers on one machine
// share its hostname (host networking) and its boot id, not their pids:
// a stdio server's pid that is not running here may be running in the
// other container. Its lease is not broken as a dead one's.
func TestStdioOwnerOfAnotherPIDNamespace(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid // gone here
	me := stdioOwner()
	u, err := url.Parse(me)
	if err != nil {
		t.Fatal(err)
	}
	if u.Query().Get("boot") == "" {
		t.Skip("this kernel gives no boot id: stdio owners are never broken here")
	}
	u.Path = "/" + strconv.Itoa(dead)
	if !deadHereStdio(u.String(), me) {
		t.Fatalf("%s: a gone stdio server of this machine's, not taken as dead (me %s)", u, me)
	}
	q := u.Query()
	q.Set("pidns", "pid:[1]")
	u.RawQuery = q.Encode()
	if deadHereStdio(u.String(), me) {
		t.Fatalf("%s: a stdio server of another pid namespace taken as dead (me %s): its live lease would be broken", u, me)
	}
}
