package review

import (
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/internal/diffview"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// viewDiff shows diff, r's or (interdiff) what changed since the reviewer
// last saw it, full screen (internal/diffview)
// where the terminal can show one: a TTY whose TERM is not dumb and whose
// size is known. It reports false, having shown nothing, elsewhere; the
// prompt pages the diff then, as before. The view works on the asker's
// review (a.m: what is picked, the comments), and its viewed marks are
// kept in the reviewer's state.
func (a *asker) viewDiff(diff string, interdiff bool) (bool, diffview.Outcome, error) {
	ft, ok := a.t.(diffview.Terminal)
	if !ok || !ft.FullScreen() {
		return false, diffview.Outcome{}, nil
	}
	m, shown := a.review(), "Whole push"
	if interdiff {
		m = model.NewInterdiff(a.r, diff)
		shown = "Interdiff since request " + a.r.Since.Request
	} else if len(m.Commits) > 1 {
		shown = fmt.Sprintf("Whole push, %d commits", len(m.Commits))
	}
	if err := m.SetComments(a.comments); err != nil {
		return false, diffview.Outcome{}, err
	}
	path := viewedPath()
	loadViewed(path, m)
	spaced := func(ignore bool) *model.Review {
		if ignore {
			return model.NewIgnoringSpace(a.r, diff)
		}
		return m
	}
	ok, out, err := showReview(ft, m, diffview.Options{Shown: shown, Spaced: spaced, IgnoreSpace: a.space})
	a.comments = m.Comments()
	if serr := saveViewed(path, m, time.Now()); serr != nil && err == nil {
		fmt.Fprintf(a.t, "  Your viewed marks were not kept: %v\n", serr)
	}
	return ok, out, err
}

// showReview shows m full screen, flags in the prompt's own words.
func showReview(t diffview.Terminal, m *model.Review, o diffview.Options) (bool, diffview.Outcome, error) {
	o.Words = diffview.Words{Label: flagLabel, Marker: marker}
	if a, ok := t.(announcer); ok {
		o.Words.Notice = a.Noticed // a request that arrived meanwhile (notice.go)
	}
	return diffview.Show(t, m, o)
}

// review is the request's review model, made on first use.
func (a *asker) review() *model.Review {
	if a.m == nil {
		a.m = model.New(a.r)
	}
	return a.m
}

// decideInView makes the decision the reviewer took in the view: a
// rejection as it is; an approval of everything asks what the prompt's a
// asks (a high risk's yes); one of a selection shows what lands and what
// stays, as the line prompt's pick does, first. done false: not decided
// after all, back at the prompt.
func (a *asker) decideInView(out diffview.Outcome) (approval.Decision, bool, error) {
	d, err := a.review().Decide(out.Verdict, out.Reason)
	if err != nil {
		fmt.Fprintf(a.t, "  %v. %s\n", err, a.keys())
		return approval.Decision{}, false, nil
	}
	if d.Verdict == approval.Reject {
		return d, true, nil
	}
	if d.Verdict == approval.Approve && a.r.DiffTruncated {
		fmt.Fprintln(a.t, "  This push is too large to show whole, so it cannot be approved whole: leave out what you do not want (x), or [p]ick. "+a.keys())
		return approval.Decision{}, false, nil
	}
	if d.Accept != nil {
		ok, err := a.confirmPick(perCommit(a.r, d.Accept))
		if err != nil || !ok {
			if err == nil {
				fmt.Fprintln(a.t, "  Nothing picked. "+a.keys())
			}
			return approval.Decision{}, false, err
		}
	}
	flags, what := a.r.Flags, "this push"
	if d.Verdict == approval.Pick {
		// Only what the selection lands asks for yes.
		flags, what = approval.PickFlags(a.r, d.Paths, d.Accept), "what you picked"
	}
	if ok, err := a.confirmHigh(flags, what); !ok {
		if err == nil {
			fmt.Fprintln(a.t, "  Not approved. "+a.keys())
		}
		return approval.Decision{}, false, err
	}
	return d, true, nil
}

// perCommit is accept with an entry for each of r's commits, in order, as
// the pick's summary takes it.
func perCommit(r *approval.Request, accept []approval.Accepted) []approval.Accepted {
	out := make([]approval.Accepted, len(r.Commits))
	for i, c := range r.Commits {
		out[i].Commit = c.ID
		for _, acc := range accept {
			if acc.Commit == c.ID {
				out[i] = acc
			}
		}
	}
	return out
}
