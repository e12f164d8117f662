package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

func ledgerPath(file string) (string, error) {
	if file != "" {
		return file, nil
	}
	state, err := broker.StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(state, "ledger.jsonl"), nil
}

func runLedger(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, "Usage: airlock ledger verify [--file F | --store nats://...] [--target T]...\n       airlock ledger show [-n N] [--file F | --store nats://...]\n\n"+
			"verify checks the ledger's hash chain and its anchors (exit 3 if it is broken, or ever lost records); show prints recent events.\n"+
			"--store reads a fleet's ledger in NATS JetStream (with --nats-prefix and the credentials serve's --store takes).\n")
		if len(args) == 0 {
			return &exitError{exitUsage, fmt.Errorf("ledger needs verify or show")}
		}
		return errHelp
	}
	switch args[0] {
	case "verify":
		return ledgerVerify(args[1:], stdout, stderr)
	case "show":
		return ledgerShow(args[1:], stdout, stderr)
	}
	return usageError("ledger %s: use verify or show", args[0])
}

// ledgerVerify is airlock ledger verify.
func ledgerVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock ledger verify", "airlock ledger verify [--file F | --store nats://...] [--target T]...",
		"Checks every record of the ledger: its hash, its link to the one before, the sequence; its anchor (a fleet's stream: its messages' sequence); every loss written down; and the head each target keeps of it.", stderr)
	file := fs.String("file", "", "the ledger file; default: the state directory's ledger.jsonl")
	var fleet fleetFlags
	fleet.register(fs)
	var against multiFlag
	fs.Var(&against, "target", "also check against the ledger's head this target keeps (local:PATH, local-bare:PATH, github:OWNER/REPO); repeatable")
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, id := range against {
		if !isTargetID(id) {
			return usageError("ledger verify: --target %q: write local:PATH, local-bare:PATH or github:OWNER/REPO", id)
		}
	}
	src, done, err := openLedgerSource("airlock ledger verify", *file, &fleet, stderr)
	if err != nil {
		return err
	}
	defer done()
	path := src.Path()
	rep, err := src.Verify()
	if errors.Is(err, ledger.ErrLedgerGone) {
		return &exitError{exitBroken, err}
	}
	if err != nil {
		return err
	}
	if rep.Torn != nil {
		fmt.Fprintf(stdout, "note: %v\n", rep.Torn)
	}
	if rep.Broken != nil {
		return &exitError{exitBroken, fmt.Errorf("%s: the chain is broken after %d good records: %v", path, rep.Records, rep.Broken)}
	}
	// A loss an append wrote down stays in the chain: every verify
	// reports it, however much was written since.
	for _, c := range rep.Cuts {
		fmt.Fprintf(stdout, "lost: %s\n", termsafe.Line(c.Error()))
	}
	recs, err := src.Records()
	if err != nil {
		return err
	}
	problems := checkTargets(path, recs, against, stdout)
	for _, p := range problems {
		fmt.Fprintf(stdout, "cut: %s\n", termsafe.Line(p))
	}
	var why []string
	switch len(rep.Cuts) {
	case 0:
	case 1:
		why = append(why, "1 loss")
	default:
		why = append(why, fmt.Sprintf("%d losses", len(rep.Cuts)))
	}
	if len(problems) > 0 {
		why = append(why, "a target keeps a record it no longer has (it was cut or rewritten after that push, whatever its anchor says)")
	}
	if len(why) > 0 {
		fresh := src.startAgain()
		if len(problems) > 0 {
			fresh += ", and delete the ref named above from each target that keeps one"
		}
		return &exitError{exitBroken, fmt.Errorf("%s: %d records chained, head %s, but the ledger is not whole: %s, listed above; "+
			"a loss stays reported for as long as this ledger is kept (to start a new ledger, %s)",
			path, rep.Records, shortid.Hex(rep.Head), strings.Join(why, "; "), fresh)}
	}
	fmt.Fprintf(stdout, "%s: %d records, chain intact; head %s\n", path, rep.Records, shortid.Hex(rep.Head))
	return nil
}

// ledgerShow is airlock ledger show.
func ledgerShow(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("airlock ledger show", "airlock ledger show [-n N] [--file F | --store nats://...]", "Prints the most recent events, oldest first.", stderr)
	n := fs.Int("n", 20, "how many events")
	file := fs.String("file", "", "the ledger file; default: the state directory's ledger.jsonl")
	var fleet fleetFlags
	fleet.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	src, done, err := openLedgerSource("airlock ledger show", *file, &fleet, stderr)
	if err != nil {
		return err
	}
	defer done()
	recs, err := src.Records()
	if err != nil {
		return err
	}
	// The words of a decision or a withdrawal depend on what it answers,
	// known from its request's record, shown or not.
	words := newRecordWords(recs)
	if len(recs) > *n {
		recs = recs[len(recs)-*n:]
	}
	// Records past a break are shown, but marked: nothing vouches
	// for them.
	var broken *ledger.Problem
	if rep, err := src.Verify(); err == nil && rep.Broken != nil {
		broken = rep.Broken
	}
	marked := false
	for _, r := range recs {
		if broken != nil && !marked && r.Seq >= broken.Seq {
			fmt.Fprintf(stdout, "---- the chain is broken here (%s); the records below are not verified ----\n", termsafe.Line(broken.Error()))
			marked = true
		}
		if marked {
			fmt.Fprint(stdout, "?? ")
		}
		// Records hold what workers and repositories wrote (paths,
		// reasons, errors): never raw on a terminal.
		fmt.Fprintln(stdout, termsafe.Line(words.describe(r)))
	}
	return nil
}

// warnLedger tells the operator at start what the ledger lost, as far as
// its anchor and its tail say (`airlock ledger verify` reads it all).
func warnLedger(stderr io.Writer, path string) {
	notes, err := ledger.Notices(path)
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: warning: the ledger %s could not be checked: %s\n", path, termsafe.Line(err.Error()))
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "airlock serve: warning: the ledger %s is not whole: %s; `airlock ledger verify` reports it\n", path, termsafe.Line(n))
	}
}

// describeRecord is one line per event, for people, when the request it
// answers is not at hand (see recordWords).
func describeRecord(r ledger.Record) string { return (&recordWords{}).describe(r) }

// describe is one line per event, for people: each described as what it
// is, a push or a command's asking for the network (ledgerwords.go).
func (w *recordWords) describe(r ledger.Record) string {
	var d map[string]any
	json.Unmarshal(r.Data, &d)
	get := func(k string) string {
		if v, ok := d[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return ""
	}
	head := fmt.Sprintf("%s  #%-4d %-10s", r.Time.Local().Format("2006-01-02 15:04:05"), r.Seq, r.Kind)
	switch r.Kind {
	case ledger.KindRequest:
		return head + " " + w.request(get, d)
	case ledger.KindDecision:
		return head + " " + w.decision(get, d)
	case ledger.KindPush:
		return head + " " + pushWords(get)
	case ledger.KindWithdrawal:
		if get("undone") != "" {
			// A reviewer's undo of their decision in its window: the
			// decision above stands in the ledger, and never lands.
			return fmt.Sprintf("%s %s  %s withdrawn: %s undid %s (key %s)", head, get("request"), w.what(get("request")), get("by"), undoneWords(get("undone")), get("key"))
		}
		return fmt.Sprintf("%s %s  %s withdrawn: %s", head, get("request"), w.what(get("request")), get("why"))
	case ledger.KindRefused:
		msg := fmt.Sprintf("%s %s !! %s decision refused (by %q, key %s, from %s): %s", head, get("request"), get("verdict"),
			get("by"), get("key"), get("from"), get("why"))
		if n := get("refusals"); n != "" && n != "1" {
			// Past the first few, the gate records a request's refusals
			// only at each doubling of their count.
			msg += fmt.Sprintf(" (refusal %s of this request)", n)
		}
		return msg
	case ledger.KindCut:
		if what, ok := ledger.DescribeCut(r); ok {
			return fmt.Sprintf("%s !! %s", head, what)
		}
	}
	return head + " " + string(r.Data)
}
