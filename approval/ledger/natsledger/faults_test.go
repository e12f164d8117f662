package natsledger_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/ledger"
	"github.com/airlock-dev/airlock/approval/ledger/ledgertest"
	"github.com/airlock-dev/airlock/approval/ledger/natsledger"
	"github.com/airlock-dev/airlock/internal/natstest"
)

// Servers on their own connections appending at once (4 x 50): every
// acknowledged record is in the stream once, in one chain.
func TestConcurrentServersNeverFork(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	s := newStore(t, srv)
	const servers, each = 4, 50
	ls := make([]approval.Ledger, servers)
	for i := range ls {
		ls[i] = s.open(t)
	}
	acked := ledgertest.ConcurrentAppends(t, ls, each, nil, nil)
	recs, err := s.open(t).Records()
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.AllOnce(t, recs, acked)
	if len(recs) != servers*each {
		t.Fatalf("%d records, want %d", len(recs), servers*each)
	}
	if rep := s.Verify(t); !rep.OK() || rep.Records != servers*each {
		t.Fatalf("verify: %d records, broken %v", rep.Records, rep.Broken)
	}
}

// A publish whose answer was lost is tried again: the record is in the
// stream once, whether the first publish reached it or not.
func TestLostAnswersNeitherDuplicateNorFork(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	for _, c := range []struct {
		name string
		lose func(publish func() (*jetstream.PubAck, error)) (*jetstream.PubAck, error)
	}{
		{"the ack lost", func(publish func() (*jetstream.PubAck, error)) (*jetstream.PubAck, error) {
			if _, err := publish(); err != nil {
				return nil, err
			}
			return nil, nats.ErrTimeout
		}},
		{"the publish lost", func(func() (*jetstream.PubAck, error)) (*jetstream.PubAck, error) {
			return nil, nats.ErrTimeout
		}},
		{"published twice, the first ack lost", func(publish func() (*jetstream.PubAck, error)) (*jetstream.PubAck, error) {
			if _, err := publish(); err != nil {
				return nil, err
			}
			return publish() // its Nats-Msg-Id makes it a duplicate
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, srv)
			l, other := s.open(t), s.open(t)
			appendN(t, other, 2)
			lost := 0
			natsledger.LoseAnswers(l, func(publish func() (*jetstream.PubAck, error)) (*jetstream.PubAck, error) {
				if lost++; lost <= 2 {
					return c.lose(publish)
				}
				return publish()
			})
			recs := appendN(t, l, 2)
			natsledger.LoseAnswers(l, nil)
			recs = append(recs, appendN(t, other, 1)...)
			all, err := other.Records()
			if err != nil {
				t.Fatal(err)
			}
			acked := map[string]bool{}
			for _, r := range recs {
				acked[r.Hash] = true
			}
			ledgertest.AllOnce(t, all, acked)
			if rep := s.Verify(t); !rep.OK() || rep.Records != 5 {
				t.Fatalf("verify: %d records, broken %v", rep.Records, rep.Broken)
			}
		})
	}
}

// The stream refuses to delete or purge: no client of the API removes a
// record.
func TestNoRecordRemovedThroughTheAPI(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	s := newStore(t, srv)
	appendN(t, s.open(t), 3)
	js, st := rawStream(t, s)
	ctx := context.Background()
	if err := st.DeleteMsg(ctx, 2); err == nil {
		t.Error("a record was deleted")
	}
	if err := st.SecureDeleteMsg(ctx, 2); err == nil {
		t.Error("a record was erased")
	}
	if err := st.Purge(ctx); err == nil {
		t.Error("the stream was purged")
	}
	cfg := st.CachedInfo().Config
	cfg.DenyDelete, cfg.DenyPurge = false, false
	if _, err := js.UpdateStream(ctx, cfg); err == nil {
		t.Error("the stream's denials were lifted")
	}
	if rep := s.Verify(t); !rep.OK() || rep.Records != 3 {
		t.Fatalf("verify: %d records, broken %v", rep.Records, rep.Broken)
	}
}

func rawStream(t *testing.T, s natsStore) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js, err := jetstream.New(natstest.Connect(t, s.url))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), s.prefix+"_ledger")
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// What is published to the ledger's subject by something else than
// airlock is caught by Verify; the servers go on appending.
func TestTamperingCaught(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{})
	for _, c := range []struct {
		name string
		// forge returns the message published, given the records there.
		forge  func(recs []ledger.Record) []byte
		kind   string
		broken uint64 // the message Verify stops at
	}{
		{"a record out of the chain", func(recs []ledger.Record) []byte {
			rec, _ := ledger.Next(recs[0], ledger.KindDecision, map[string]string{"verdict": "approved"}, time.Now())
			return mustJSON(t, rec)
		}, "reordered", 4},
		{"a record well made after the head", func(recs []ledger.Record) []byte {
			rec, _ := ledger.Next(recs[2], ledger.KindDecision, map[string]string{"verdict": "approved"}, time.Now())
			return mustJSON(t, rec) // record 4, well made: the servers chain after it
		}, "", 0},
		{"a cut record skipping numbers", func(recs []ledger.Record) []byte {
			// As a file's append writes it after records 4 and 5 were
			// lost: a chain that holds, but not at the stream's numbers.
			data := map[string]any{"lost_from": 4, "lost_to": 5, "anchor": map[string]any{"seq": 5, "hash": "x"}, "head_seq": 3, "head_hash": recs[2].Hash}
			rec, _ := ledger.Next(ledger.Record{Seq: 5, Hash: recs[2].Hash}, ledger.KindCut, data, time.Now())
			return mustJSON(t, rec)
		}, "misplaced", 4},
		{"a record edited", func(recs []ledger.Record) []byte {
			rec, _ := ledger.Next(recs[2], ledger.KindDecision, map[string]string{"verdict": "denied"}, time.Now())
			rec.Data = json.RawMessage(`{"verdict":"approved"}`)
			return mustJSON(t, rec)
		}, "edited", 4},
		{"something not a record", func([]ledger.Record) []byte { return []byte("hello") }, "malformed", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, srv)
			l := s.open(t)
			recs := appendN(t, l, 3)
			js, _ := rawStream(t, s)
			if _, err := js.Publish(context.Background(), s.prefix+".ledger", c.forge(recs)); err != nil {
				t.Fatal(err)
			}
			appendN(t, l, 2)
			rep := s.Verify(t)
			if c.kind == "" {
				// Nothing tells it from the servers' own: what
				// keeps it out is NATS's permissions on the subject.
				if !rep.OK() || rep.Records != 6 {
					t.Fatalf("verify: %d records, broken %v", rep.Records, rep.Broken)
				}
				return
			}
			if rep.Broken == nil || rep.Broken.Kind != c.kind || rep.Broken.Line != int(c.broken) || rep.Records != int(c.broken)-1 {
				t.Fatalf("verify: %d records, broken %v; want %s at message %d", rep.Records, rep.Broken, c.kind, c.broken)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A record more than a message may hold is refused at once, saying
// what to raise; nothing is added, and the next record goes on.
func TestRecordTooLargeForAMessage(t *testing.T) {
	srv := natstest.Server(t, natstest.Options{MaxPayload: 8 << 10})
	s := newStore(t, srv)
	l := s.open(t)
	appendN(t, l, 1)
	began := time.Now()
	_, err := l.Append(ledger.KindRequest, map[string]string{"files": strings.Repeat("x", 16<<10)})
	if err == nil || !strings.Contains(err.Error(), "Raise max_payload") || time.Since(began) > 2*time.Second {
		t.Fatalf("a record too large: %v after %v", err, time.Since(began))
	}
	appendN(t, l, 1)
	if rep := s.Verify(t); !rep.OK() || rep.Records != 2 {
		t.Fatalf("verify: %d records, broken %v", rep.Records, rep.Broken)
	}
}
