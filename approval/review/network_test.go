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
