package natsledger

import "github.com/nats-io/nats.go/jetstream"

// DropExpectedSequence makes l publish without the expected-last-sequence
// check: what the check prevents, shown by a test.
func DropExpectedSequence(l *Ledger) { l.noExpect = true }

// LoseAnswers makes l publish through lose, which may drop the answer
// (a lost ack) or not publish at all (a publish that never went out).
func LoseAnswers(l *Ledger, lose func(publish func() (*jetstream.PubAck, error)) (*jetstream.PubAck, error)) {
	l.lose = lose
}
