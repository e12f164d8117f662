package ledgerhead

import "testing"

// A fleet's ledger is keyed by its stream alone: every server of the
// fleet, whichever NATS servers it names, keeps one head in a target;
// another prefix is another ledger.
func TestAtKeysAFleetsLedgerByItsStream(t *testing.T) {
	a1, p1 := At("nats://10.0.0.1:4222,nats://10.0.0.2:4222 stream airlock_ledger")
	a2, p2 := At("tls://nats.example:4222 stream airlock_ledger")
	if Ref(a1, p1) != Ref(a2, p2) || a1 != "" || p1 != "nats stream airlock_ledger" {
		t.Fatalf("one fleet's ledger keyed %q %q and %q %q", a1, p1, a2, p2)
	}
	if h, p := At("nats://10.0.0.1:4222 stream other_ledger"); Ref(h, p) == Ref(a1, p1) {
		t.Fatal("two fleets' ledgers keyed alike")
	}
	if h, p := At("/var/lib/airlock/ledger.jsonl"); h == "" || p != "/var/lib/airlock/ledger.jsonl" || Ref(h, p) == Ref(a1, p1) {
		t.Fatalf("a file's ledger keyed %q %q", h, p)
	}
}
