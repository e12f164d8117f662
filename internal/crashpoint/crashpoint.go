// Package crashpoint lets the kill tests stop a server at a named step,
// deterministically, as SIGKILL stops it: the tests of "one decision per
// request, across any crash" (cmd/airlock's decision_kill_e2e_test.go)
// kill `airlock serve` at each step between a reviewer's keypress and the
// landing, instead of at random offsets that may miss the window.
//
// The step is named by the environment variable AIRLOCK_TEST_CRASH_AT of
// the server's process, read once at start: the server kills itself
// (SIGKILL, where the platform has it) on reaching that step. Nothing a
// worker does reaches it: a worker sets no variable of the server's
// environment, and the runs it starts are other processes, in the jail,
// that pass no step. An operator who sets it gets a server that dies at
// that step, and a session that resumes as after any crash.
package crashpoint

import "os"

// The steps, in the order a push passes them.
const (
	// PickMade: a pick's commits are made, its decision not yet recorded.
	PickMade = "pick-made"
	// DecisionRecorded: the ledger holds the decision; the reviewer has
	// not been answered.
	DecisionRecorded = "decision-recorded"
	// ReviewerAnswered: the broker answered the reviewer.
	ReviewerAnswered = "reviewer-answered"
	// LandingRecorded: the ledger says "landing"; the session is not
	// saved yet.
	LandingRecorded = "landing-recorded"
	// LandingSaved: the session saved that it is landing; the target is
	// not touched yet.
	LandingSaved = "landing-saved"
	// TargetPushed: the target was pushed to; the ledger does not say
	// "pushed" yet.
	TargetPushed = "target-pushed"
	// UndoRecorded: the ledger holds a reviewer's undo of an approval in
	// its window; the push is not asked again yet (approval/undo.go).
	UndoRecorded = "undo-recorded"
)

// at is the step to die at, "" for none.
var at = os.Getenv("AIRLOCK_TEST_CRASH_AT")

// Hit kills this process when step is the one the environment names.
func Hit(step string) {
	if at == "" || at != step {
		return
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL: nothing after it runs
	}
	select {} // until the signal lands
}
