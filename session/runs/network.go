package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/approval"
)

// ErrNetworkPending: the reviewer has not answered a run's request for the
// network yet; calling run again with the same command waits on it.
var ErrNetworkPending = errors.New("the request for the network is still waiting for a reviewer")

// askNetwork gets the reviewer's leave for a run to use the network, and
// returns the scope it was given under. Every request and decision is in
// the ledger (the gate's) before the run starts.
func (r *Runner) askNetwork(ctx context.Context, key, command, line, dir, reason string, progress Progress) (string, error) {
	if r.netAll {
		return approval.ScopeSession, nil
	}
	if r.netCommands[key] {
		return approval.ScopeCommand, nil
	}
	if r.netPending == nil {
		r.netPending, r.netCommands = map[string]*approval.Ticket{}, map[string]bool{}
	}
	tk := r.netPending[key]
	if tk == nil {
		shown := command
		if shown == "" {
			shown = line
		}
		var err error
		tk, err = r.cfg.Gate.Submit(&approval.Request{Kind: approval.KindNetwork, Worker: r.cfg.Worker, Session: r.cfg.SessionID,
			Command: shown, Dir: dir, Reason: reason, Reach: r.reach()}, nil)
		if err != nil {
			return "", err
		}
		r.netPending[key] = tk
	}
	timer := time.NewTimer(r.cfg.Wait)
	defer timer.Stop()
	progress(0, r.cfg.Wait.Seconds(), "waiting for a reviewer to allow the network (airlock review)")
	select {
	case <-tk.Done():
	case <-timer.C:
		return "", fmt.Errorf("%w (request %s); call run again with the same command and network: true to keep waiting, or run it without the network",
			ErrNetworkPending, tk.Request().ID)
	case <-ctx.Done():
		delete(r.netPending, key)
		if err := r.cfg.Gate.Withdraw(tk.Request().ID, "the worker's client disconnected"); err != nil && !errors.Is(err, approval.ErrNotPending) {
			// Decided meanwhile is fine; a ledger that cannot take the
			// withdrawal leaves the request open for the reviewer.
			r.cfg.Session.Warn("the network request %s could not be withdrawn: %v", tk.Request().ID, err)
		}
		return "", ctx.Err()
	}
	delete(r.netPending, key)
	closed, cancel := context.WithCancel(context.Background())
	cancel()
	dec, _, err := tk.Wait(closed)
	if err != nil {
		// A denial carries its own advice for a run (approval's
		// networkRejection); a withdrawal or a ledger's failure does not.
		if errors.Is(err, approval.ErrNetworkDenied) {
			return "", err
		}
		return "", fmt.Errorf("the network for this run: %w; run it without network: true", err)
	}
	switch dec.Scope {
	case approval.ScopeSession:
		r.netAll = true
		return approval.ScopeSession, nil
	case approval.ScopeCommand:
		r.netCommands[key] = true
		return approval.ScopeCommand, nil
	}
	return "once", nil
}

// reach is what this runner's runs with the network reach besides the
// internet, as the reviewer is shown it.
func (r *Runner) reach() []string {
	var rs []string
	for _, ap := range r.opts.AllowHosts {
		rs = append(rs, ap.String())
	}
	return rs
}
