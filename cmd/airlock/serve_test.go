package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8787": true, "[::1]:8787": true, "localhost:0": true,
		"0.0.0.0:8787": false, ":8787": false, "192.168.1.5:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if err := loopbackOnly(addr); (err == nil) != ok {
			t.Errorf("%s: %v, want accepted %v", addr, err, ok)
		}
	}
}

// TestDeadServersTokenFilesGo: the token file of an HTTP server that is
// gone (killed: it never removed it) is removed by the next one; a
// running server's stays.
func TestDeadServersTokenFilesGo(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, fmt.Sprintf("http-%d.token", dead.Process.Pid))
	running := filepath.Join(dir, "http-1.token") // init runs
	for _, f := range []string{gone, running} {
		if err := os.WriteFile(f, []byte("t\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := writeHTTPToken(dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the dead server's token file is still there: %v", err)
	}
	for _, f := range []string{running, mine} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// serve --protect names branches a push to asks for yes; a pattern that
// is not one is refused with what to write instead.
func TestServeProtectFlag(t *testing.T) {
	f, err := parseServe([]string{"--protect", "main", "--protect", "release/*", "--run", "off"}, io.Discard)
	if err != nil || !reflect.DeepEqual([]string(f.protect), []string{"main", "release/*"}) {
		t.Fatalf("--protect main --protect release/*: %v, %q", err, f.protect)
	}
	for arg, want := range map[string]string{
		"refs/heads/main": `name the branch itself, "main"`,
		"release/[":       "is not a branch pattern",
		"":                "protects nothing",
	} {
		if _, err := parseServe([]string{"--protect", arg, "--run", "off"}, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--protect %q: %v, want %q", arg, err, want)
		}
	}
}

// serve --undo-window out of its range is refused with the range, and the
// example it gives is taken.
func TestServeUndoWindowAdvice(t *testing.T) {
	for _, arg := range []string{"-1s", "2m"} {
		_, err := parseServe([]string{"--undo-window", arg, "--run", "off"}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "from 0 (no undo) to 1m0s, such as 5s") {
			t.Errorf("--undo-window %s: %v, want the range and an example", arg, err)
		}
	}
	for _, arg := range []string{"5s", "0", "1m"} {
		if _, err := parseServe([]string{"--undo-window", arg, "--run", "off"}, io.Discard); err != nil {
			t.Errorf("--undo-window %s, as the advice says: %v", arg, err)
		}
	}
}
