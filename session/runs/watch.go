package runs

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// watch reports progress and ends the run when what it holds outgrows
// the workspace's quota, in bytes or in files: the overlay's upper layer
// and the jail's scratch (/tmp, home, /dev/shm) are in memory too, and
// count together.
//
// The scratch is a tmpfs of the run's own, so what it holds is one statfs
// (report.Scratch). The upper layer is a directory of a tmpfs shared with
// others (the mirror's), and counting it walks everything the run wrote,
// which costs a run writing many files more than its writes (and takes a
// core from it), so the walk is the second check: the first is how much
// that filesystem grew since the run started, bytes and inodes, one
// statfs. What the run wrote there is at most that growth (since the
// start, or since the last walk plus what that walk counted); only when
// that passes the quota is the layer walked, and then not more often than
// twice the last walk took.
func (r *Runner) watch(ctx context.Context, upper string, report *sandbox.Report, cancel func(), killed chan<- string, progress Progress, timeout time.Duration) {
	lim := r.ws.Limits()
	quota := held{bytes: lim.MaxTotalBytes, files: int64(lim.MaxFiles)}
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	// base is the filesystem's use when the layer was last known to
	// hold counted (at the start, empty; then at each walk).
	base, statfs := fsUsed(upper)
	var counted held
	var nextWalk time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var scratch held
		if b, f, ok := report.Scratch(); ok {
			// The scratch's root and the directories the jail made are
			// not the run's.
			scratch = held{bytes: b, files: max(f-4, 0)}
		}
		now, known := fsUsed(upper)
		known = known && statfs
		// At most what was counted plus what the filesystem grew since.
		bound := counted.plus(held{bytes: now.bytes - base.bytes, files: now.files - base.files})
		if maybe := quota.over(scratch.plus(bound)); maybe != "" || !known {
			if over := quota.over(scratch); over != "" {
				r.kill(killed, cancel, over, quota)
				return
			}
			if time.Now().After(nextWalk) {
				t0 := time.Now()
				bytes := maybe != "files" || !known
				counted = dirHeld(upper, bytes)
				if !bytes {
					counted.bytes = bound.bytes // not counted: still at most that
				}
				base = now
				// A walk takes a core from the run: at most a third
				// of the time.
				nextWalk = time.Now().Add(2 * time.Since(t0))
				if over := quota.over(scratch.plus(counted)); over != "" {
					r.kill(killed, cancel, over, quota)
					return
				}
			}
		}
		if time.Since(last) >= 2*time.Second {
			last = time.Now()
			el := time.Since(start)
			progress(el.Seconds(), timeout.Seconds(), fmt.Sprintf("running (%s so far)", el.Round(time.Second)))
		}
	}
}

func (r *Runner) kill(killed chan<- string, cancel func(), over string, quota held) {
	if over == "files" {
		killed <- fmt.Sprintf("it made more than the workspace's %d-file quota (in the workspace, /tmp and its home together)", quota.files)
	} else {
		killed <- fmt.Sprintf("it wrote more than the workspace's %d-byte quota (in the workspace, /tmp and its home together)", quota.bytes)
	}
	cancel()
}

// held is what a run holds somewhere: bytes and files (inodes).
type held struct{ bytes, files int64 }

func (h held) plus(o held) held { return held{h.bytes + o.bytes, h.files + o.files} }

// over names what of h passes the quota q ("bytes", "files"), or is "".
func (q held) over(h held) string {
	switch {
	case h.bytes > q.bytes:
		return "bytes"
	case h.files > q.files:
		return "files"
	}
	return ""
}

// dirHeld counts what dir holds: its entries of every kind, and, with
// bytes, the bytes of its regular files (one lstat each: counting files
// alone reads the directories only).
func dirHeld(dir string, bytes bool) held {
	var n held
	// What cannot be read is not counted: the quota is checked again on
	// what comes in.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		n.files++
		if bytes && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n.bytes += fi.Size()
			}
		}
		return nil
	})
	return n
}
