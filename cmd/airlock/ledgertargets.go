package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/targets"
	"github.com/airlock-dev/airlock/targets/gitdir"
)

// ledgerTargets are the targets whose kept heads verify checks: those
// named with --target, those the ledger's push records name, and the
// repository of the current directory (quietly, when it keeps none).
// explicit reports whether a missing head is worth a note.
func ledgerTargets(recs []ledger.Record, flags []string) (ids []string, explicit map[string]bool) {
	explicit = map[string]bool{}
	add := func(id string, loud bool) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		explicit[id] = explicit[id] || loud
	}
	for _, id := range flags {
		add(id, true)
	}
	for _, r := range recs {
		if r.Kind != ledger.KindPush {
			continue
		}
		var d struct{ Target, Result string }
		if json.Unmarshal(r.Data, &d) == nil && d.Result == "pushed" && isTargetID(d.Target) {
			add(d.Target, true)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if p, err := gitdir.ProbeLocal(wd); err == nil {
			id := "local:" + p.Path
			if p.Bare {
				id = "local-bare:" + p.Path
			}
			add(id, false)
		}
	}
	return ids, explicit
}

func isTargetID(id string) bool {
	_, _, ok := targets.SplitID(id)
	return ok
}

// checkTargets holds the ledger at path against the head each target keeps
// of it (the last record at its last push there): that record must be in
// the ledger with the same hash, or the ledger was cut or rewritten since,
// whatever its anchor says. It prints what it checked and returns the
// problems; a target it cannot reach is a note, not a problem.
func checkTargets(path string, recs []ledger.Record, flags []string, stdout io.Writer) []string {
	hashes := map[uint64]string{}
	var last uint64
	for _, r := range recs {
		hashes[r.Seq], last = r.Hash, r.Seq
	}
	host, abs := targets.LedgerAt(path)
	ids, explicit := ledgerTargets(recs, flags)
	var problems []string
	for _, id := range ids {
		shown := termsafe.Line(id)
		h, ok, err := readKeptHead(id, host, abs)
		switch {
		case errors.Is(err, targets.ErrNotLedgerHead):
			problems = append(problems, fmt.Sprintf("target %s holds something else than a ledger head under %s: %v", shown, targets.LedgerRef(host, abs), termsafe.Line(err.Error())))
		case err != nil:
			fmt.Fprintf(stdout, "note: could not check against %s: %s\n", shown, termsafe.Line(err.Error()))
		case !ok:
			if explicit[id] {
				fmt.Fprintf(stdout, "note: %s keeps no head of this ledger (no push has landed there since airlock keeps one)\n", shown)
			}
		case len(recs) > 0 && h.First != recs[0].Hash:
			problems = append(problems, fmt.Sprintf("the ledger was rewritten from its first record, or is not the one target %s knows: it keeps record %d (%s) of a ledger at this host and path whose first record is %s, but this ledger's first record is %s (a new ledger started here, or another machine of the same name keeping its ledger at the same path, reads so too; kept under %s)",
				shown, h.Seq, shortid.Hex(h.Hash), shortid.Hex(h.First), shortid.Hex(recs[0].Hash), targets.LedgerRef(host, abs)))
		case hashes[h.Seq] == h.Hash:
			fmt.Fprintf(stdout, "checked against %s: it keeps record %d (%s), which the ledger has\n", shown, h.Seq, shortid.Hex(h.Hash))
		default:
			have := fmt.Sprintf("the ledger ends at record %d", last)
			if got, ok := hashes[h.Seq]; ok {
				have = fmt.Sprintf("the ledger's record %d has hash %s", h.Seq, shortid.Hex(got))
			}
			problems = append(problems, fmt.Sprintf("the ledger was cut or rewritten: target %s records record %d with hash %s (kept %s under %s), but %s",
				shown, h.Seq, shortid.Hex(h.Hash), h.Time.UTC().Format(time.RFC3339), targets.LedgerRef(host, abs), have))
		}
	}
	return problems
}

func readKeptHead(id, host, path string) (targets.LedgerHead, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t, err := targets.OpenForLedger(ctx, id, targets.Environ().GitHub)
	if err != nil {
		return targets.LedgerHead{}, false, err
	}
	return t.ReadLedgerHead(ctx, host, path)
}
