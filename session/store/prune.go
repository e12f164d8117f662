package store

import (
	"errors"
	"time"
)

// Sweep removes the sessions of st that no server has open, whose
// work all left (pushed or discarded) or that never saved anything, and
// that were last changed before now-retention. It returns their ids.
func Sweep(st Store, retention time.Duration) []string {
	res, _ := Prune(st, PruneOptions{OlderThan: retention})
	var gone []string
	for _, l := range res.Removed {
		gone = append(gone, l.ID)
	}
	return gone
}

// PruneOptions say which sessions Prune removes.
type PruneOptions struct {
	// OlderThan: only sessions last changed (or, never changed, created)
	// at least this long ago.
	OlderThan time.Duration
	// Force removes sessions with work that has not left too (changes,
	// staged commits, pushes waiting). A session a running server has
	// open is never removed.
	Force bool
	// DryRun removes nothing, and says what it would remove.
	DryRun bool
}

// Pruned is what Prune did, each list newest first.
type Pruned struct {
	Removed []Listed // removed (with DryRun: would be)
	// Kept: old enough, but holding work that has not left (Force
	// removes them), or open in a running server.
	Unfinished, Running []Listed
	Recent              int // younger than OlderThan
	Failed              map[string]error
}

// Prune removes the sessions of st that o names.
func Prune(st Store, o PruneOptions) (Pruned, error) {
	list, err := st.List()
	if err != nil {
		return Pruned{}, err
	}
	res := Pruned{Failed: map[string]error{}}
	for _, l := range list {
		when := l.Updated
		if when.IsZero() {
			when = l.Created
		}
		switch {
		case time.Since(when) < o.OlderThan:
			res.Recent++
			continue
		case l.Running:
			res.Running = append(res.Running, l)
			continue
		case l.Unfinished() && !o.Force:
			res.Unfinished = append(res.Unfinished, l)
			continue
		}
		if !o.DryRun {
			if err := st.Remove(l.ID); err != nil {
				if errors.Is(err, ErrSessionBusy) {
					res.Running = append(res.Running, l)
				} else {
					res.Failed[l.ID] = err
				}
				continue
			}
		}
		res.Removed = append(res.Removed, l)
	}
	return res, nil
}
