package natsstore

import (
	"context"
	"fmt"
)

// rollback deletes the messages after the last one this holder's
// journal wrote, when they are its own: chunks of a batch whose publish
// failed part way, or a message that landed though its acknowledgement
// was lost. They are its own while the gen entry is still the one it
// wrote: another holder writes that entry before its fence. undone says
// whether anything was deleted; mine, whether the subject's last message
// is now the last this holder wrote (not so when its messages were
// removed under it).
func (j *natsJournal) rollback(ctx context.Context) (undone, mine bool, err error) {
	st, subj := j.l.st, j.l.st.subject(j.l.id, j.gen)
	for {
		last, err := st.lastSeq(ctx, subj)
		if err != nil {
			return undone, false, err
		}
		if last <= j.last {
			return undone, last == j.last, nil
		}
		// The entry is read after the last sequence: a fence published
		// before that read follows a move of the entry before it.
		_, rev, err := st.readGen(ctx, j.l.id)
		if err != nil {
			return undone, false, err
		}
		if rev != j.genRev {
			return undone, false, fmt.Errorf("natsstore: session %s: %w", j.l.id, ErrFenced)
		}
		if err := st.stream.DeleteMsg(ctx, last); err != nil {
			return undone, false, fmt.Errorf("natsstore: session %s: taking back what a failed write left: %w", j.l.id, err)
		}
		undone = true
	}
}
