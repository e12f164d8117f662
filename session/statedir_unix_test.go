//go:build unix

package session_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/session/store/files"
)

// TestKilledServersLockHeldAMoment: a server killed while it started a
// process leaves its session's lock with that child until the child execs.
// A restart in that moment still finds the session as its worker's latest
// unfinished one; a lock held for good is another server's.
func TestKilledServersLockHeldAMoment(t *testing.T) {
	bare := repo(t, true, map[string]string{"a.txt": "a\n"})
	d := newDurable(t, bare, approval.Policy{}, nil)
	must(t, d.s.Workspace().WriteFile("x.txt", []byte("x"), 0o644))
	must(t, d.s.Save())
	session.Crash(d.s)
	d.l.Close()
	d.s = nil
	child, err := os.Open(filepath.Join(d.root, d.id, "lock")) // the child's copy of the file
	must(t, err)
	defer child.Close()
	must(t, syscall.Flock(int(child.Fd()), syscall.LOCK_EX))
	fd := int(child.Fd())
	// The child execs once the restart has found the lock held.
	var execd atomic.Bool
	files.SetBusyHook(func() {
		if execd.CompareAndSwap(false, true) {
			syscall.Flock(fd, syscall.LOCK_UN)
		}
	})
	dir, _, err := session.LatestUnfinished(session.Local(d.root), "test", session.Binding{})
	files.SetBusyHook(nil)
	must(t, err)
	if !execd.Load() {
		t.Fatal("the restart never found the lock held")
	}
	if dir == nil || dir.SessionID() != d.id {
		t.Fatalf("a restart passed over the session a killed server's child held a moment: %+v", dir)
	}
	other, err := os.Open(filepath.Join(d.root, d.id, "lock")) // another server, for good
	must(t, err)
	defer other.Close()
	dir.Unlock()
	must(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX))
	if dir, _, err := session.LatestUnfinished(session.Local(d.root), "test", session.Binding{}); err != nil || dir != nil {
		t.Fatalf("found a session another server has open: %+v %v", dir, err)
	}
}
