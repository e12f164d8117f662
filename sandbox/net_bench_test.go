package sandbox_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/sandbox/mirror"
)

// BenchmarkRunTrue measures what the network adds to a run's start:
// /bin/true with the network (its namespace, slirp4netns, the shut routes,
// the relay's listeners) against without it (a namespace with a loopback
// only, which is what a networked run cost before it had a stack: the
// same helper, in the host's namespace). "cold" starts every helper
// inline, as a server's first run of each kind does; "warm" pauses
// (off the clock) between runs, as a worker does, so that Run's prewarmed
// helper takes the start off the next run's path.
func BenchmarkRunTrue(b *testing.B) {
	if err := sandbox.Available(); err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o711) // the jail's user walks to the mirror
	}
	uid, gid := sandbox.HostUser()
	m, err := mirror.New(filepath.Join(dir, "mirrors"), uid, gid)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	lower, upper, work, root := m.Dirs()
	for _, cold := range []bool{true, false} {
		for _, network := range []bool{false, true} {
			name := map[bool]string{true: "cold", false: "warm"}[cold] + "/" + map[bool]string{true: "network", false: "none"}[network]
			b.Run(name, func(b *testing.B) {
				spec := sandbox.Spec{Argv: []string{"/bin/true"}, Lower: lower, Upper: upper, Work: work, Root: root, Network: network}
				for b.Loop() {
					b.StopTimer()
					if cold {
						sandbox.Shutdown()
					} else {
						time.Sleep(150 * time.Millisecond)
					}
					b.StartTimer()
					if code, err := sandbox.Run(context.Background(), spec, nil, io.Discard, io.Discard); err != nil || code != 0 {
						b.Fatalf("exit %d: %v", code, err)
					}
				}
			})
		}
	}
}
