package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/memfs"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets"
)

// Recovered is what a resumed session found in its state directory.
type Recovered struct {
	ID          string
	Saved       time.Time // when the last call was saved
	Changed     []memfs.Change
	Staged      []*staging.Commit
	Checkpoints []string
	// Waiting lists the pushes offered to reviewers again, by request id.
	Waiting []string
	// Ended says what became of pushes a crash interrupted while they
	// were landing: found on their branch (pushed) or not (failed).
	Ended []string
}

// Text is the recovery as the worker is told it.
func (r *Recovered) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "This session (%s) was resumed after airlock restarted; nothing the sandbox answered before is lost. ", r.ID)
	fmt.Fprintf(&b, "%d file(s) changed and not staged", len(r.Changed))
	if len(r.Changed) > 0 {
		var ps []string
		for i, c := range r.Changed {
			if i == 10 {
				ps = append(ps, fmt.Sprintf("and %d more", len(r.Changed)-10))
				break
			}
			ps = append(ps, c.Path)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(ps, ", "))
	}
	fmt.Fprintf(&b, "; %d staged commit(s)", len(r.Staged))
	if len(r.Staged) > 0 {
		var ids []string
		for _, c := range r.Staged {
			ids = append(ids, shortid.Hash(c.ID))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(ids, ", "))
	}
	fmt.Fprintf(&b, "; %d checkpoint(s)", len(r.Checkpoints))
	if len(r.Waiting) > 0 {
		fmt.Fprintf(&b, "; pushes waiting for a reviewer again: %s (git_push the same commit to wait for the answer)", strings.Join(r.Waiting, ", "))
	}
	b.WriteString(".")
	for _, e := range r.Ended {
		b.WriteString(" " + e)
	}
	b.WriteString(" Call git_status for the details.")
	return b.String()
}

// attachSources opens the blob sources keys name (newest first) and adds
// them to store; it returns a sentence for each one that cannot be opened.
func attachSources(ctx context.Context, store *staging.Store, keys []string) []string {
	var notes []string
	for i := len(keys) - 1; i >= 0; i-- {
		src, err := targets.OpenSourceWith(ctx, keys[i], targets.Environ().GitHub)
		if err != nil {
			// Said to the operator (stderr) and the worker (the
			// instructions): each has a way out.
			store.SourceUnopened(keys[i], err)
			notes = append(notes, fmt.Sprintf("Files of the base not read before the restart cannot be read now (%v): restore that repository and restart airlock serve (a fleet of servers: mount it at the same path on every server, or use a GitHub target), or git_pull the files from a target that has them.", err))
			continue
		}
		store.AddSource(keys[i], src)
	}
	return notes
}
