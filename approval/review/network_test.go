package review_test

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
	"github.com/airlock-dev/airlock/approval/review"
)

// A network request shows the command, its directory and the worker's
// reason, sanitised, through a terminal emulator; each key gives its scope.
func TestNetworkPrompt(t *testing.T) {
	req := &approval.Request{ID: "req-1", Kind: approval.KindNetwork, Worker: "builder",
		Command: "npm install\x1b[2J\x1b[Hnothing to see", Dir: "web", Reason: "fetch the dependencies\u202e"}
	tests := []struct {
		keys  string
		lines []string
		want  approval.Decision
	}{
		{"a", nil, approval.Decision{Verdict: approval.Approve, Scope: approval.ScopeOnce}},
		{"c", nil, approval.Decision{Verdict: approval.Approve, Scope: approval.ScopeCommand}},
		{"ss", []string{"no", "yes"}, approval.Decision{Verdict: approval.Approve, Scope: approval.ScopeSession}},
		{"r", []string{"not today"}, approval.Decision{Verdict: approval.Reject, Reason: "not today"}},
	}
	for _, tt := range tests {
		s := &approvaltest.Script{Keys: []rune(tt.keys), Lines: tt.lines, TTY: true, ColorOn: true}
		d, err := review.Prompt(s, req)
		if err != nil {
			t.Fatalf("%s: %v", tt.keys, err)
		}
		if d.Verdict != tt.want.Verdict || d.Scope != tt.want.Scope || d.Reason != tt.want.Reason || d.Request != "req-1" {
			t.Errorf("keys %q: %+v, want %+v", tt.keys, d, tt.want)
		}
		out := s.Out.String()
		assertOnlyOwnEscapes(t, out)
		scr := screen(t, out)
		for _, want := range []string{"run: network access", "Worker:  builder", "Command: npm install^[[2J^[[Hnothing to see", "In:      /workspace/web", "<U+202E>"} {
			if !strings.Contains(scr, want) {
				t.Errorf("keys %q: the screen lacks %q:\n%s", tt.keys, want, scr)
			}
		}
	}
}

// The network prompt says exactly what an allowed run reaches: the
// internet through a stack of its own, the operator's pairs (sanitised),
// and never this machine, its loopback, the LAN or the metadata address;
// not, as it once did, "the network as this machine does".
func TestNetworkPromptSaysWhatTheRunReaches(t *testing.T) {
	for _, tc := range []struct {
		reach []string
		want  []string
	}{
		{nil, []string{"reaches the internet, through a network stack of its own;"}},
		{[]string{"127.0.0.1:5000", "192.168.1.10:443\x1b[2J"}, []string{"and only 127.0.0.1:5000, 192.168.1.10:443^[[2J (the operator's --run-allow-host)"}},
	} {
		req := &approval.Request{ID: "req-1", Kind: approval.KindNetwork, Worker: "builder", Command: "pip install x", Reach: tc.reach}
		s := &approvaltest.Script{Keys: []rune("a"), TTY: true}
		if _, err := review.Prompt(s, req); err != nil {
			t.Fatal(err)
		}
		assertOnlyOwnEscapes(t, s.Out.String())
		scr := strings.Join(strings.Fields(screen(t, s.Out.String())), " ")
		want := append(tc.want, "never this machine or its loopback (airlock, NATS, other services), the LAN or other private ranges, or the cloud metadata address",
			"allow this command here for the session")
		for _, w := range want {
			if !strings.Contains(scr, w) {
				t.Errorf("reach %q: the screen lacks %q:\n%s", tc.reach, w, scr)
			}
		}
		if strings.Contains(scr, "as this machine does") {
			t.Errorf("the prompt still says the run reaches the network as this machine does:\n%s", scr)
		}
	}
}
