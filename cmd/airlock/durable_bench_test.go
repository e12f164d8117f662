package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkResume10k is the time from starting airlock serve to the first
// answered read_file, for a saved session of a 10,000-file repository
// (resumed from its journal) against a fresh --ephemeral session of the
// same worker (its auto_pull reads the repository), in the same run. The
// goal: resuming is faster.
func BenchmarkResume10k(b *testing.B) {
	requireGit(b)
	bin := airlockBinary(b)
	root := b.TempDir()
	env := isolatedEnv(b, root)
	repo := filepath.Join(root, "big")
	for i := 0; i < 10000; i++ {
		p := filepath.Join(repo, fmt.Sprintf("pkg%02d", i%40), fmt.Sprintf("sub%d", i%9), fmt.Sprintf("f%05d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("%d %s\n", i, strings.Repeat("z", 2000))), 0o644)
	}
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# big\n"), 0o644)
	mustGit(b, env, repo, "init", "-q", "-b", "main")
	mustGit(b, env, repo, "add", "-A")
	mustGit(b, env, repo, "-c", "gc.auto=0", "commit", "-qm", "ten thousand files")
	mustGit(b, env, repo, "repack", "-adq")
	workerFile := filepath.Join(root, "w.md")
	os.WriteFile(workerFile, []byte(fmt.Sprintf("---\nname: big\ngit:\n  default_target: {type: local, path: %q, branch: work}\n  auto_pull: [{path: ., source: {type: local, path: %q, branch: main}}]\n---\n", repo, repo)), 0o644)

	// firstRead starts a server and returns how long until read_file
	// answered; the server is then stopped cleanly (its session saved).
	firstRead := func(write bool, args ...string) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.Command(bin, append([]string{"serve", "--worker", workerFile, "--run", "off"}, args...)...)
		cmd.Env, cmd.Dir = env, root
		start := time.Now()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "pkg07/sub7/f00007.txt"}})
		took := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("read_file: %v %v", err, res)
		}
		if write {
			// Unfinished work, so that the next start resumes it.
			cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "NOTES.md", "content": "wip\n"}})
		}
		cs.Close()
		return took
	}
	firstRead(true) // the session to resume
	var resume, fresh time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resume += firstRead(false)
		fresh += firstRead(false, "--ephemeral")
	}
	b.StopTimer()
	r, f := resume.Seconds()*1e3/float64(b.N), fresh.Seconds()*1e3/float64(b.N)
	b.ReportMetric(r, "resume-ms")
	b.ReportMetric(f, "fresh-auto-pull-ms")
	b.ReportMetric(r/f, "resume/fresh")
}
