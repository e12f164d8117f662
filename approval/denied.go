package approval

import (
	"encoding/json"
	"strings"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/go-git/go-git/v5/plumbing"
)

// loadDenied rebuilds, from the ledger, the changes reviewers rejected:
// a change rejected in an earlier session stays rejected (same target,
// branch and tree: commit ids differ from session to session, trees do
// not), with the reviewer's reason. It also loads the ids decided
// (noteLocked): a decision in the ledger is final.
func (g *Gate) loadDenied() {
	if g.ledger == nil {
		return
	}
	recs, err := g.ledger.Records()
	if err != nil {
		return
	}
	fps := map[string]fingerprint{}
	for _, r := range recs {
		g.noteLocked(r)
		switch r.Kind {
		case ledger.KindRequest:
			var q struct {
				ID     string `json:"id"`
				Target string `json:"target"`
				Ref    string `json:"ref"`
				Tree   string `json:"tree"`
			}
			if json.Unmarshal(r.Data, &q) == nil && q.ID != "" {
				fps[q.ID] = fingerprint{q.Target, q.Ref, plumbing.NewHash(q.Tree)}
			}
		case ledger.KindDecision:
			var d struct {
				Request string  `json:"request"`
				Verdict Verdict `json:"verdict"`
				Reason  string  `json:"reason"`
				By      string  `json:"by"`
			}
			if json.Unmarshal(r.Data, &d) != nil {
				continue
			}
			fp, ok := fps[d.Request]
			switch {
			case !ok:
			case d.Verdict == Reject && !strings.HasPrefix(d.By, "policy:"):
				g.denied[fp] = d.Reason
			case d.Verdict == Approve || d.Verdict == Pick:
				delete(g.denied, fp)
			}
		case ledger.KindWithdrawal:
			// A rejection its reviewer undid (undo.go) is none.
			if id, v := g.noteUndoLocked(r); v == Reject {
				if fp, ok := fps[id]; ok {
					delete(g.denied, fp)
				}
			}
		}
	}
}
