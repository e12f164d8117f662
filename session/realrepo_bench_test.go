package session_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/memfs"
)

// tunedGit is glibc's malloc tuned for git (see DESIGN.md): on these
// machines plain git pays a page fault for every object it inflates.
const tunedGit = "GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.top_pad=268435456"

// BenchmarkReadGoSrc is issue 21's whole-repository read: every blob of
// the Go toolchain's src (committed and repacked with deep delta chains,
// git repack -adf --depth=250 --window=250), read through a session that
// pulled it lazily, one file after another as read_file reads them, and
// all at once as a run's mirror and a search stream them; the peer, in the
// same run, is `git cat-file --batch` over the same ids (plain and with
// glibc's malloc tuned). Each iteration's session is new, so nothing is
// cached: its pull is set-up, not measured.
func BenchmarkReadGoSrc(b *testing.B) {
	repo := gittest.GoSource(b)
	git(b, repo, "repack", "-adfq", "--depth=250", "--window=250")
	blobs := gittest.Blobs(b, repo, "main")
	ids := make([]string, len(blobs))
	for i, bl := range blobs {
		ids[i] = bl.ID
	}
	input := strings.Join(ids, "\n") + "\n"
	catFile := func(env []string) time.Duration {
		start := time.Now()
		cmd := exec.Command("git", "--git-dir="+repo, "cat-file", "--batch")
		cmd.Env = env
		cmd.Stdin = strings.NewReader(input)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, bufio.NewReaderSize(out, 1<<20))
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	limits := memfs.Limits{MaxTotalBytes: 2 << 30, MaxFileBytes: 64 << 20, MaxFiles: 100_000}
	var plain, tuned, oneByOne, stream time.Duration
	var bytes int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plain += catFile(os.Environ())
		tuned += catFile(append(os.Environ(), tunedGit))

		b.StopTimer()
		ws := newEnv(b, repo, config{limits: limits}).s.Workspace()
		files := workspaceFiles(ws)
		b.StartTimer()
		start := time.Now()
		for _, f := range files {
			data, err := ws.ReadFile(f.Path)
			if err != nil {
				b.Fatal(err)
			}
			bytes += int64(len(data))
		}
		oneByOne += time.Since(start)

		b.StopTimer()
		es := workspaceFiles(newEnv(b, repo, config{limits: limits}).s.Workspace())
		b.StartTimer()
		start = time.Now()
		err := memfs.LoadEach(context.Background(), es, false, func(_ memfs.Entry, _ []byte, err error) error { return err })
		if err != nil {
			b.Fatal(err)
		}
		stream += time.Since(start)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(float64(len(blobs)), "blobs")
	b.ReportMetric(float64(bytes)/float64(b.N)/(1<<20), "MiB")
	b.ReportMetric(ms(plain), "cat-file-ms")
	b.ReportMetric(ms(tuned), "cat-file-tuned-ms")
	b.ReportMetric(ms(oneByOne), "read_file-ms")
	b.ReportMetric(ms(stream), "stream-ms")
	b.ReportMetric(ms(oneByOne)/ms(tuned), "read_file/cat-file-tuned")
	b.ReportMetric(ms(stream)/ms(tuned), "stream/cat-file-tuned")
}
