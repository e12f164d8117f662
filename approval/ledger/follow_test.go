package ledger_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval/ledger"
)

// A ledger removed or replaced under running servers: what they append
// afterwards lands in the file at the ledger's path, with every record
// they held before, and nothing of it is taken for a cut.
func TestLedgerRemovedUnderItsServers(t *testing.T) {
	for _, c := range []struct {
		name    string
		servers int
		remove  func(t *testing.T, state, path string)
	}{
		{"the ledger file removed", 1, func(t *testing.T, _, path string) { rm(t, path) }},
		{"the ledger and its anchor removed", 1, func(t *testing.T, _, path string) { rm(t, path); rm(t, ledger.AnchorPath(path)) }},
		{"the state directory removed", 1, func(t *testing.T, state, _ string) { rm(t, state) }},
		{"the state directory removed under three servers", 3, func(t *testing.T, state, _ string) { rm(t, state) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			path := filepath.Join(state, "ledger.jsonl")
			var ls []*ledger.Ledger
			for range c.servers {
				l, err := ledger.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				ls = append(ls, l)
			}
			for _, l := range ls {
				appendN(t, l, 2)
			}
			c.remove(t, state, path)
			for range 2 {
				for _, l := range ls {
					appendN(t, l, 1)
				}
			}
			rep := verify(t, path)
			if want := 4 * c.servers; rep.Records != want || !rep.OK() || rep.Torn != nil {
				t.Fatalf("after the removal the ledger holds %d records (want %d), broken %v, cuts %v, torn %v", rep.Records, want, rep.Broken, rep.Cuts, rep.Torn)
			}
			if a, ok, err := ledger.ReadAnchor(path); err != nil || !ok || a.Seq != uint64(4*c.servers) {
				t.Fatalf("anchor %+v %v %v", a, ok, err)
			}
			// A server started now opens it as it is.
			l, err := ledger.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			appendN(t, l, 1)
			if rep := verify(t, path); rep.Records != 4*c.servers+1 || !rep.OK() {
				t.Fatalf("a new server's record: %d records, broken %v, cuts %v", rep.Records, rep.Broken, rep.Cuts)
			}
		})
	}
}

// A ledger replaced under a server by another file (a copy restored, one
// another server wrote again) is the ledger from then on: the server
// appends to it, not to the file it held.
func TestLedgerReplacedUnderItsServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 3)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".restored"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 2)
	if rep := verify(t, path); rep.Records != 5 || !rep.OK() {
		t.Fatalf("the file at the path holds %d records, broken %v, cuts %v", rep.Records, rep.Broken, rep.Cuts)
	}
}

// A link put where the ledger was is not written through: the append
// fails saying what to do, and doing it works.
func TestLedgerLinkInItsPlaceIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.jsonl")
	l, err := ledger.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 2)
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(elsewhere, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rm(t, path)
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(ledger.KindRequest, map[string]any{"n": "through the link"})
	if err == nil || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("an append through a link: %v", err)
	}
	if b, _ := os.ReadFile(elsewhere); string(b) != "keep\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	rm(t, path)
	appendN(t, l, 1)
	if rep := verify(t, path); rep.Records != 3 || !rep.OK() {
		t.Fatalf("after the link was moved aside: %d records, broken %v, cuts %v", rep.Records, rep.Broken, rep.Cuts)
	}
}

func rm(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}
