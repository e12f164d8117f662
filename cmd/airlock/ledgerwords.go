package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/internal/shortid"
)

// recordWords words the ledger's records as what they are: a push asked,
// approved, landed or withdrawn; a command's asking for the network, the
// network granted (and how far) or refused. A decision's or a
// withdrawal's record does not say what it answers, so the kind of each
// request is read from its own record.
type recordWords struct {
	kinds map[string]string // request id -> approval.KindPush or KindNetwork
}

func newRecordWords(recs []ledger.Record) *recordWords {
	w := &recordWords{kinds: map[string]string{}}
	for _, r := range recs {
		if r.Kind != ledger.KindRequest {
			continue
		}
		var q struct{ ID, Kind string }
		if json.Unmarshal(r.Data, &q) == nil && q.ID != "" {
			w.kinds[q.ID] = q.Kind
		}
	}
	return w
}

// kind is the kind of request id; ok false when its record was not read.
func (w *recordWords) kind(id string) (kind string, ok bool) {
	kind, ok = w.kinds[id]
	return kind, ok
}

// what names request id's kind in words.
func (w *recordWords) what(id string) string {
	switch k, ok := w.kind(id); {
	case !ok:
		return "the request"
	case k == approval.KindNetwork:
		return "the network request"
	}
	return "the push request"
}

func (w *recordWords) request(get func(string) string, d map[string]any) string {
	if get("kind") == approval.KindNetwork {
		dir := "/workspace"
		if get("dir") != "" {
			dir += "/" + get("dir")
		}
		why := get("reason")
		if strings.TrimSpace(why) == "" {
			why = "no reason given"
		}
		return fmt.Sprintf("%s  %s asks for the network to run %q in %s (%s)", get("id"), get("worker"), get("command"), dir, why)
	}
	files := 0
	if f, ok := d["files"].([]any); ok {
		files = len(f)
	}
	return fmt.Sprintf("%s  %s asks to push %s to %s (%s), %s", get("id"), get("worker"),
		shortid.Hex(get("new")), get("target"), strings.TrimPrefix(get("ref"), "refs/heads/"), count(files, "file"))
}

// decision words a verdict as what it does to what it answers.
func (w *recordWords) decision(get func(string) string, d map[string]any) string {
	reason := ""
	if rs := get("reason"); rs != "" {
		reason = fmt.Sprintf(" (%q)", rs)
	}
	id, by, verdict := get("request"), get("by"), approval.Verdict(get("verdict"))
	kind, known := w.kind(id)
	switch {
	case !known:
		return fmt.Sprintf("%s  %s by %s%s", id, verdict, by, reason)
	case kind == approval.KindNetwork && verdict == approval.Approve:
		return fmt.Sprintf("%s  network granted by %s, %s", id, by, scopeWords(get("scope")))
	case kind == approval.KindNetwork:
		return fmt.Sprintf("%s  network refused by %s%s", id, by, reason)
	case verdict == approval.Approve:
		return fmt.Sprintf("%s  push approved by %s%s", id, by, reason)
	case verdict == approval.Pick:
		what := "part of it"
		if p, ok := d["paths"].([]any); ok && len(p) > 0 {
			what = count(len(p), "picked file")
		} else if a, ok := d["accept"].([]any); ok {
			what = "picked hunks of " + count(len(a), "commit")
		}
		return fmt.Sprintf("%s  push approved in part by %s: %s%s", id, by, what, reason)
	}
	return fmt.Sprintf("%s  push rejected by %s%s", id, by, reason)
}

// scopeWords is how far a network grant reaches.
func scopeWords(scope string) string {
	switch scope {
	case approval.ScopeCommand:
		return "for this command in this directory, for the rest of the session"
	case approval.ScopeSession:
		return "for every run, for the rest of the session"
	}
	return "for this run only"
}

// pushWords words a push's outcome.
func pushWords(get func(string) string) string {
	where := fmt.Sprintf("%s to %s (%s)", shortid.Hex(get("new")), get("target"), strings.TrimPrefix(get("ref"), "refs/heads/"))
	var msg string
	switch get("result") {
	case "landing":
		msg = fmt.Sprintf("%s  landing %s", get("request"), where)
	case "pushed":
		msg = fmt.Sprintf("%s  pushed %s", get("request"), where)
	case "failed":
		msg = fmt.Sprintf("%s  push of %s failed", get("request"), where)
	default:
		msg = fmt.Sprintf("%s  %s %s", get("request"), get("result"), where)
	}
	if e := get("error"); e != "" {
		msg += ": " + e
	}
	if rc := get("recovered"); rc != "" {
		msg += " (after a restart: " + rc + ")"
	}
	return msg
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// undoneWords says what a reviewer's undo took back, by the verdict the
// withdrawal names: an approval before its push landed, a rejection
// before the worker was told.
func undoneWords(verdict string) string {
	switch approval.Verdict(verdict) {
	case approval.Approve:
		return "their approval before it landed"
	case approval.Reject:
		return "their rejection before the worker was told"
	}
	return fmt.Sprintf("their decision (%s) before it took effect", verdict)
}
