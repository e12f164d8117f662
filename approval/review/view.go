package review

import (
	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/internal/diffview"
)

// viewDiff shows diff, r's or its interdiff, full screen (internal/diffview) where the
// terminal can show one: a TTY whose TERM is not dumb and whose size is
// known. It reports false, having shown nothing, elsewhere; the prompt
// pages the diff then, as before. The view speaks of flags in the
// prompt's own words.
func viewDiff(t Terminal, r *approval.Request, diff string) (bool, error) {
	ft, ok := t.(diffview.Terminal)
	if !ok {
		return false, nil
	}
	shown := *r
	shown.Diff = diff
	words := diffview.Words{Label: flagLabel, Marker: marker}
	if a, ok := t.(announcer); ok {
		words.Notice = a.Noticed // a request that arrived meanwhile (notice.go)
	}
	return diffview.Show(ft, &shown, words)
}
