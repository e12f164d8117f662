package review

import (
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// renderNetwork shows a command's request for the network.
func renderNetwork(w io.Writer, r *approval.Request, color, back bool) error {
	p := painter(color)
	dir := "/workspace"
	if r.Dir != "" {
		dir += "/" + r.Dir
	}
	reason := r.Reason
	if strings.TrimSpace(reason) == "" {
		reason = "(none given)"
	}
	var b strings.Builder
	b.WriteString(p.paint(ansiBold, "run: network access") + "\n")
	fmt.Fprintf(&b, "  Worker:  %s\n", termsafe.Line(r.Worker))
	fmt.Fprintf(&b, "  Command: %s\n", termsafe.Line(r.Command))
	fmt.Fprintf(&b, "  In:      %s\n", termsafe.Line(dir))
	fmt.Fprintf(&b, "  Why:     %s\n", termsafe.Line(reason))
	b.WriteString(networkReach(r))
	b.WriteString("  " + networkKeys(p, back) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// networkReach says exactly what an allowed run reaches: the internet
// through its own user-mode network stack, and the operator's pairs (each
// an IP address and a port, sanitised all the same), nothing else.
func networkReach(r *approval.Request) string {
	reach := "the internet, through a network stack of its own"
	if len(r.Reach) > 0 {
		pairs := make([]string, len(r.Reach))
		for i, hp := range r.Reach {
			pairs[i] = termsafe.Line(hp)
		}
		reach += ", and only " + strings.Join(pairs, ", ") + " (the operator's --run-allow-host)"
	}
	text := "Allowed, it reaches " + reach + "; never this machine or its loopback (airlock, NATS, other services), " +
		"the LAN or other private ranges, or the cloud metadata address. What it writes lands only in the sandbox."
	// Broken between words to fit 80 columns.
	return "  " + wrapParts(strings.Fields(text), " ", "  ", keyWidth) + "\n"
}

// networkKeys is the network prompt's keys, on as many lines as 80
// columns need, broken between keys.
func networkKeys(p painter, back bool) string {
	parts := []string{p.paint(ansiGreen+ansiBold, "[a]") + " allow once", p.paint(ansiGreen+ansiBold, "[c]") + " allow this command here for the session",
		p.paint(ansiYellow+ansiBold, "[s]") + " allow every run for the session", p.paint(ansiRed+ansiBold, "[r]") + " deny"}
	if back {
		parts = append(parts, p.paint(ansiBold, "[l]")+" back to the list")
	}
	return wrapParts(parts, "   ", "  ", keyWidth)
}

// promptNetwork asks a reviewer about a network request.
func promptNetwork(t Terminal, r *approval.Request, back bool) (approval.Decision, error) {
	p := painter(t.Color())
	keys := func() string { return networkKeys(p, back) }
	if err := renderNetwork(t, r, t.Color(), back); err != nil {
		return approval.Decision{}, err
	}
	approve := func(scope string) approval.Decision {
		return approval.Decision{Request: r.ID, Verdict: approval.Approve, Scope: scope, By: "reviewer"}
	}
	for {
		key, err := t.ReadKey()
		if err != nil {
			return approval.Decision{}, err
		}
		switch key {
		case 'a', 'A':
			return approve(approval.ScopeOnce), nil
		case 'c', 'C':
			return approve(approval.ScopeCommand), nil
		case 's', 'S':
			line, err := t.ReadLine("  Every run of this session gets the network. Type yes to allow: ")
			if err != nil {
				return approval.Decision{}, err
			}
			if strings.TrimSpace(line) == "yes" {
				return approve(approval.ScopeSession), nil
			}
			fmt.Fprintln(t, "  Not allowed. "+keys())
		case 'r', 'R':
			reason, err := t.ReadLine("  Reason (optional; the worker is told): ")
			if err != nil {
				return approval.Decision{}, err
			}
			return approval.Decision{Request: r.ID, Verdict: approval.Reject, Reason: strings.TrimSpace(reason), By: "reviewer"}, nil
		case '\r', '\n', ' ':
		case 'l', 'L':
			if back {
				return approval.Decision{}, errBack
			}
			fallthrough
		default:
			fmt.Fprintf(t, "  Unknown key %q. %s\n", key, keys())
		}
	}
}
