package approval

import "github.com/airlock-dev/airlock/approval/ledger"

// Ledger is where the gate writes every request, decision, withdrawal and
// push before acting on it: the local file (*ledger.Ledger) or a fleet's
// stream in JetStream. Each record is chained to the one before; an
// Append that returns has made its record durable.
type Ledger interface {
	Append(kind string, data any) (ledger.Record, error)
	// Head and First are the chain's last and first records (zero when
	// it has none).
	Head() (ledger.Record, error)
	First() (ledger.Record, error)
	// Records reads the whole chain back, in order.
	Records() ([]ledger.Record, error)
	// Path says where the ledger is, for people.
	Path() string
}

var _ Ledger = (*ledger.Ledger)(nil)

// LedgerHead returns the ledger's last and first records and the
// ledger's path ("" when the gate has no ledger).
func (g *Gate) LedgerHead() (head, first ledger.Record, path string, err error) {
	if g.ledger == nil {
		return ledger.Record{}, ledger.Record{}, "", nil
	}
	if head, err = g.ledger.Head(); err == nil {
		first, err = g.ledger.First()
	}
	return head, first, g.ledger.Path(), err
}

// LedgerRecord returns the ledger's record number seq as the file holds
// it now (ok false when it holds none by that number).
func (g *Gate) LedgerRecord(seq uint64) (rec ledger.Record, ok bool, err error) {
	if g.ledger == nil {
		return ledger.Record{}, false, nil
	}
	// A fleet's stream finds a record at its number's place without
	// being read whole (natsledger.Ledger.Record); it is looked for
	// elsewhere only when not there.
	if r, ok := g.ledger.(interface {
		Record(seq uint64) (ledger.Record, bool, error)
	}); ok {
		if rec, ok, err := r.Record(seq); ok || err != nil {
			return rec, ok, err
		}
	}
	recs, err := g.ledger.Records()
	if err != nil {
		return ledger.Record{}, false, err
	}
	for _, r := range recs {
		if r.Seq == seq {
			return r, true, nil
		}
	}
	return ledger.Record{}, false, nil
}
