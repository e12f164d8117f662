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
