package review_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/ptytest"
)

// Issue 33: a request that arrives while the reviewer reads another is
// announced without taking the screen. In a real terminal: at the
// prompt's keys, a line of its own at once, the request shown staying;
// while a reason is being typed, not in the middle of it but after the
// line is sent; in the full-screen view, in its status row, at once.
func TestNewRequestAnnouncedInPseudoTerminal(t *testing.T) {
	dir := socketDir(t)
	a := newServer(t, dir, 1001, "writer")
	first := a.submit(t, "writer", "sess", "", "first", "", nil)
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewListChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_REVIEW_CHILD="+dir, "PAGER=cat", "TERM=xterm")
	p := ptytest.Start(t, cmd)
	scr := p.Screen
	const within = 10 * time.Second
	at := scr.WaitFor(t, 0, "(branch: first)", within)
	at = scr.WaitFor(t, at, "[?]help", within)

	second := a.submit(t, "writer-two", "sess", "", "second", "", nil)
	at = scr.WaitFor(t, at, "New: request "+second.Request().ID+` from worker "writer-two" is waiting (1 in all besides this one; l lists them)`, within)
	if strings.Contains(scr.String()[at:], "requests are waiting") {
		t.Fatal("the new request took the screen: the list was shown")
	}

	// Typing a reason: the third request waits for the line.
	p.Press(t, "r")
	at = scr.WaitFor(t, at, "Reason (optional; the worker is told): ", within)
	p.Press(t, "lat")
	at = scr.WaitFor(t, at, "lat", within)
	third := a.submit(t, "writer-three", "sess", "", "third", "", nil)
	time.Sleep(500 * time.Millisecond) // the reviewer has it by now
	if s := scr.String()[at:]; strings.Contains(s, "New: request") {
		t.Fatalf("the announcement broke into the line being typed:\n%s", s)
	}
	p.Press(t, "er\r")
	at = scr.WaitFor(t, at, "New: request "+third.Request().ID+` from worker "writer-three"`, within)
	if s := scr.String(); !strings.Contains(s, "later\n  New: request "+third.Request().ID) {
		t.Errorf("not right after the line: %q", s[max(0, strings.Index(s, "Reason")):])
	}
	at = scr.WaitFor(t, at, "Rejected; the worker is told", within)
	if got := outcome(t, first); got != "rejected" {
		t.Fatalf("the first request was %s", got)
	}

	// The full-screen view: the status row says so.
	at = scr.WaitFor(t, at, "Review which?", within)
	p.Press(t, "\r")
	at = scr.WaitFor(t, at, "[?]help", within)
	p.Press(t, "d")
	at = scr.WaitFor(t, at, "q back", within)
	fourth := a.submit(t, "writer-four", "sess", "", "fourth", "", nil)
	at = scr.WaitFor(t, at, "[new: "+fourth.Request().ID+", 2 waiting]  file 1/", within)
	p.Press(t, "q")
	// Back at the prompt, the same request: deciding it decides it.
	at = scr.WaitFor(t, at, "[?]help", within)
	p.Press(t, "a")
	scr.WaitFor(t, at, "Approved; the push goes ahead.", within)
	if got := outcome(t, second); got != "approved" {
		t.Fatalf("the request shown when the others arrived was %s", got)
	}
	for _, tk := range []string{third.Request().ID, fourth.Request().ID} {
		if strings.Count(scr.String(), "New: request "+tk) == 0 {
			t.Errorf("%s was never announced", tk)
		}
	}
}
