package ledgerhead

import (
	"errors"
	"strings"
	"testing"
)

// A ledger head's hashes come from a target, which is hostile, and
// ledger verify prints them: anything but 64 lower-case hex digits is not
// a head airlock wrote.
func TestParseLedgerHeadTakesOnlyHexHashes(t *testing.T) {
	hex := strings.Repeat("a1", 32)
	msg := func(hash, first string) string {
		return "airlock ledger head: record 3\n\nAirlock-Ledger-Seq: 3\nAirlock-Ledger-Hash: " + hash +
			"\nAirlock-Ledger-First: " + first + "\nAirlock-Ledger-Time: 2026-11-24T20:00:00Z\n"
	}
	if h, err := Parse(msg(hex, hex)); err != nil || h.Hash != hex {
		t.Fatalf("a head airlock writes: %+v %v", h, err)
	}
	escape := "\x1b[2J" + strings.Repeat("a", 60)
	for name, m := range map[string]string{
		"escape in the hash":  msg(escape, hex),
		"escape in the first": msg(hex, escape),
		"upper case":          msg(strings.ToUpper(hex), hex),
		"not hex":             msg(strings.Repeat("g", 64), hex),
		"short":               msg(hex[:63], hex),
	} {
		if _, err := Parse(m); !errors.Is(err, ErrNotHead) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
