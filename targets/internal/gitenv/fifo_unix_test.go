//go:build unix

package gitenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConfigReadWaitsOnNoFIFO: a repository's config includes a FIFO.
// Reading it (and so Command, which reads it first) fails, saying why,
// once configTimeout has passed, instead of waiting for a writer forever.
func TestConfigReadWaitsOnNoFIFO(t *testing.T) {
	old := configTimeout
	configTimeout = time.Second
	t.Cleanup(func() { configTimeout = old })
	repo := t.TempDir()
	cmd := exec.Command("git", "init", "-q", repo)
	cmd.Env = Clean()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := syscall.Mkfifo(filepath.Join(repo, ".git", "fifo.conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("[include]\n\tpath = fifo.conf\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Command(context.Background(), repo, "status")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("Command on a repository whose config includes a FIFO: %v; want %v naming a FIFO", err, ErrConfig)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Command waits on the FIFO the repository's config includes")
	}
}
