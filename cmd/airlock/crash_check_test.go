//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
)

// crashHolders names the processes that have path open.
func crashHolders(path string) string {
	var out []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			pid := strings.Split(fd, "/")[2]
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			stat, _ := os.ReadFile("/proc/" + pid + "/stat")
			out = append(out, fmt.Sprintf("pid %s (%s) %q", pid, stat, strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return strings.Join(out, "; ")
}

// crashDiff shows the lines only one side has.
func crashDiff(want, got []string) string {
	count := map[string]int{}
	for _, l := range want {
		count[l]++
	}
	for _, l := range got {
		count[l]--
	}
	var b strings.Builder
	n := 0
	for _, l := range want {
		if count[l] > 0 && n < 40 {
			fmt.Fprintf(&b, "  - %s\n", l)
			n++
		}
	}
	for _, l := range got {
		if count[l] < 0 && n < 40 {
			fmt.Fprintf(&b, "  + %s\n", l)
			n++
		}
	}
	if n == 0 {
		// The same lines in another order.
		return fmt.Sprintf("  (in another order)\n  reference: %q\n  durable:   %q", want, got)
	}
	return b.String()
}

func crashSameLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// finished reports whether the reference holds no work that has not left:
// airlock serve resumes only a session that does.
func (r *crashRig) finished() bool {
	st := r.ref.s.Status()
	return len(st.Staged) == 0 && len(st.Unstaged) == 0
}

var crashWaiting = regexp.MustCompile(`pushes waiting for a reviewer again: ([^(]+) \(`)

// crashGoesAhead finds the pushes a restart took up on the decision the
// ledger held (never offered again).
var crashGoesAhead = regexp.MustCompile(`The request (req-[0-9a-f]+) to push \S+ was decided by .* before the restart: it goes ahead`)

// settle waits until the pushes a restart offered again (which the policy
// approves at once), or took up on their decision, have ended: the
// durable session is then at rest.
func (r *crashRig) settle() {
	var ids []string
	for _, m := range crashGoesAhead.FindAllStringSubmatch(r.srv.instructions, -1) {
		ids = append(ids, m[1])
	}
	if m := crashWaiting.FindStringSubmatch(r.srv.instructions); m != nil {
		waiting := strings.Split(strings.TrimSpace(m[1]), ", ")
		r.stats.reoffered += len(waiting)
		if r.auto {
			ids = append(ids, waiting...)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for !r.ended(id) {
			if time.Now().After(deadline) {
				r.fail("the push of request %s, offered again after the restart, never ended", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// ended reports whether the ledger's last word on request id ends it.
func (r *crashRig) ended(id string) bool {
	recs, err := ledger.Records(r.ledgerPath)
	if err != nil {
		r.fail("reading the ledger: %v", err)
	}
	done := false
	for _, rec := range recs {
		var d struct{ ID, Request, Result string }
		json.Unmarshal(rec.Data, &d)
		switch {
		case rec.Kind == ledger.KindRequest && d.ID == id:
			done = false
		case rec.Kind == ledger.KindPush && d.Request == id && d.Result != "landing",
			rec.Kind == ledger.KindWithdrawal && d.Request == id:
			done = true
		case rec.Kind == ledger.KindDecision && d.Request == id:
			var dec struct{ Verdict string }
			json.Unmarshal(rec.Data, &dec)
			done = dec.Verdict == string(approval.Reject)
		}
	}
	return done
}

// checkLedger verifies the ledger's chain and holds its pushes against the
// target: every push recorded as pushed is on the branch, every one
// recorded as failed (and not pushed later) is not, and none is still
// landing.
func (r *crashRig) checkLedger() {
	r.t.Helper()
	rep, err := ledger.Verify(r.ledgerPath)
	if os.IsNotExist(err) {
		return // nothing asked yet
	}
	if err != nil || !rep.OK() {
		r.fail("the ledger does not verify: %v %+v", err, rep.Broken)
	}
	recs, err := ledger.Records(r.ledgerPath)
	if err != nil {
		r.fail("reading the ledger: %v", err)
	}
	onBranch := map[string]bool{}
	for _, h := range strings.Fields(mustGit(r.t, r.env, r.bare, "rev-list", "main")) {
		onBranch[h] = true
	}
	type push struct{ Request, New, Result, Recovered string }
	last := map[string]push{} // by request
	at := map[string]int{}    // where each request's last record is
	var pushed []string       // commits recorded as pushed, in order
	var pushedAt []int        // and where
	var order []string
	for i, rec := range recs {
		if rec.Kind != ledger.KindPush {
			continue
		}
		var p push
		if err := json.Unmarshal(rec.Data, &p); err != nil {
			r.fail("a push record: %v: %s", err, rec.Data)
		}
		if _, ok := last[p.Request]; !ok {
			order = append(order, p.Request)
		}
		last[p.Request], at[p.Request] = p, i
		if p.Result == "pushed" {
			pushed, pushedAt = append(pushed, p.New), append(pushedAt, i)
		}
		if rec.Seq > r.checked && p.Recovered != "" {
			switch p.Result {
			case "pushed":
				r.stats.landedCut++
			case "failed":
				r.stats.failedCut++
			}
		}
		if rec.Seq > r.checked {
			r.checked = rec.Seq
		}
	}
	for _, id := range order {
		p := last[id]
		switch p.Result {
		case "landing":
			r.fail("request %s (commit %s) is still landing in the ledger after the restart:\n%s", id, p.New, crashLedgerText(recs))
		case "pushed":
			if !onBranch[p.New] {
				r.fail("the ledger says request %s pushed %s, but main does not have it", id, p.New)
			}
		case "failed":
			// On the branch only if a later push carried it (itself, or a
			// commit staged on top of it).
			carried := false
			for j := len(pushed) - 1; j >= 0 && pushedAt[j] > at[id] && !carried; j-- {
				_, err := gitOut(r.t, r.env, r.bare, "merge-base", "--is-ancestor", p.New, pushed[j])
				carried = err == nil
			}
			if onBranch[p.New] && !carried {
				r.fail("the ledger says request %s failed to push %s (%s), but main has it and no later push carried it:\n%s", id, p.New, p.Recovered, crashLedgerText(recs))
			}
		}
	}
}

func crashLedgerText(recs []ledger.Record) string {
	var b strings.Builder
	for _, rec := range recs {
		if rec.Kind == ledger.KindPush || rec.Kind == ledger.KindWithdrawal {
			fmt.Fprintf(&b, "  %d %s %s\n", rec.Seq, rec.Kind, rec.Data)
		} else {
			var d struct{ ID, Request, Verdict, By, New string }
			json.Unmarshal(rec.Data, &d)
			fmt.Fprintf(&b, "  %d %s %s%s %s %s %s\n", rec.Seq, rec.Kind, d.ID, d.Request, d.Verdict, d.By, d.New)
		}
	}
	return b.String()
}

// killCycle makes op's call (none: nil) on the durable server, kills the
// server after delay, restarts it and checks what it resumed.
func (r *crashRig) killCycle(op *crashOp, delay time.Duration) {
	r.t.Helper()
	r.stats.kills++
	type answer struct {
		out   string
		isErr bool
		err   error
	}
	done := make(chan answer, 1)
	what := "no call"
	if op != nil {
		what = op.String()
		args := crashArgsFor(*op, r.durableStatus)
		go func() {
			out, isErr, err := r.srv.call(op.name, args)
			done <- answer{out, isErr, err}
		}()
		r.stats.byOp[op.name]++
	} else {
		r.stats.idle++
	}
	time.Sleep(delay)
	r.kill()
	var ans answer
	if op != nil {
		ans = <-done
	}
	answered := op != nil && ans.err == nil
	r.note(fmt.Sprintf("%s, killed after %s (answered: %v)", what, delay, answered))
	if answered {
		r.stats.answered++
		refOut, refErr := r.applyRef(*op)
		if ans.isErr != refErr || r.normal(ans.out) != r.normal(refOut) {
			r.fail("%s: the durable session answered (error %v)\n%s\nthe reference (error %v)\n%s", *op, ans.isErr, ans.out, refErr, refOut)
		}
	}
	if op != nil && op.name == "git_push" {
		r.stats.pushKills++
	}

	r.start()
	r.settle()
	got := r.durableState()
	// The durable session is the reference, or the reference with the
	// call in flight applied whole.
	if r.matches(got) {
		if op != nil && !answered {
			r.stats.notApplied++
		}
	} else if op != nil && !answered {
		wasFinished := r.finished()
		refOut, refErr := r.applyRef(*op)
		if !r.matches(got) {
			r.fail("after the kill during %s, the durable session is neither the reference nor the reference after that call (finished before: %v, after: %v; the reference answered it (error %v): %s)%s; against the latter:\n%s",
				*op, wasFinished, r.finished(), refErr, refOut, r.which(), crashDiff(r.refState(), got))
		}
		r.stats.applied++
		if op.name == "git_push" {
			r.stats.pushApplied++
		}
		r.note("  (the call in flight had been applied)")
	} else {
		r.fail("after the kill (%s), the durable session differs from the reference%s:\n%s", what, r.which(), crashDiff(r.refState(), got))
	}
	r.stats.compared++
	r.checkLedger()
}

// which says when the server did not resume the session it had.
func (r *crashRig) which() string {
	if r.srv.id == r.sessionID {
		return ""
	}
	list, _, _ := runAirlock(r.t, r.env, r.root, "sessions", "list")
	sum, _ := os.ReadFile(filepath.Join(r.root, "state", "airlock", "sessions", r.sessionID, "summary.json"))
	return fmt.Sprintf(" (airlock serve started a new session, %s, instead of resuming %s; airlock sessions list:\n%s\nthe summary of %[2]s:\n%s)", r.srv.id, r.sessionID, list, sum)
}

// matches compares the durable session's state with the reference's.
// When the server started a new session, the one before must have been
// finished, and the reference starts afresh too.
func (r *crashRig) matches(got []string) bool {
	if r.srv.id == r.sessionID {
		return crashSameLines(r.refState(), got)
	}
	if !r.finished() {
		return false
	}
	old := r.ref.s
	r.ref.s = r.newRefSession()
	if crashSameLines(r.refState(), got) {
		old.Close()
		r.sessionID = r.srv.id
		r.stats.newSessions++
		r.note("  (a new session started: the one before was finished)")
		return true
	}
	r.ref.s.Close()
	r.ref.s = old
	return false
}
