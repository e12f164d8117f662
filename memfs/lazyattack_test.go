package memfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/memfs"
)

// Lazy files under everything at once: readers, writers through handles
// (append, WriteAt, Truncate), renames, chmods, checkpoints and
// rollbacks, status and snapshots. Under -race nothing races, no read
// ever sees bytes that are neither the base's nor a writer's, and a
// rollback to a checkpoint taken before anything was read brings back
// the lazy base exactly: no change listed, every file lazy and intact.
func TestLazyFilesUnderConcurrentUse(t *testing.T) {
	const nfiles = 8
	var contents []string
	files := map[string]string{}
	for i := 0; i < nfiles; i++ {
		c := fmt.Sprintf("base content of file %d\n", i)
		contents = append(contents, c)
		files[fmt.Sprintf("d%d/f%d.txt", i%3, i)] = c
	}
	b, ids := newBlobs(contents...)
	w := lazySeed(t, b, ids, files)
	if _, err := w.Checkpoint("start"); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				p := paths[(g+i)%len(paths)]
				switch (g + i) % 9 {
				case 0:
					data, err := w.ReadFile(p)
					// A read sees the base, or a writer's bytes: the
					// base's prefix (a truncate may cut it shorter than
					// "base content"), or its own marks.
					base := []byte("base content")
					if err == nil && len(data) > 0 && !bytes.HasPrefix(data, base) && !bytes.HasPrefix(base, data) && !bytes.Contains(data, []byte("w")) && !bytes.HasPrefix(data, []byte{0}) {
						t.Errorf("%s reads %q", p, data)
					}
				case 1:
					if f, err := w.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
						f.Write([]byte("w\n"))
						f.Close()
					}
				case 2:
					if f, err := w.OpenFile(p, os.O_RDWR, 0); err == nil {
						f.WriteAt([]byte("w"), 3)
						io.ReadAll(f)
						f.Close()
					}
				case 3:
					if f, err := w.OpenFile(p, os.O_RDWR, 0); err == nil {
						f.Truncate(int64(5 + i%30))
						f.Close()
					}
				case 4:
					if w.Rename(p, p+".mv") == nil {
						w.Rename(p+".mv", p)
					}
				case 5:
					w.Chmod(p, os.FileMode(0o644|(i%2)*0o111))
				case 6:
					name := fmt.Sprintf("cp%d", g)
					if _, err := w.Checkpoint(name); err == nil && i%2 == 0 {
						w.Rollback(name)
					}
				case 7:
					w.Changes()
					s := w.Snapshot()
					if e, ok := s.Lookup(p); ok {
						e.Content()
						e.Same(e)
					}
				case 8:
					w.Edit(p, func(old []byte) ([]byte, error) { return append(bytes.Clone(old), "w"...), nil })
				}
			}
		}(g)
	}
	wg.Wait()
	if _, err := w.Rollback("start"); err != nil {
		t.Fatal(err)
	}
	if ch := w.Changes(); len(ch) != 0 {
		t.Fatalf("after a rollback to the start: %+v", ch)
	}
	s := w.Snapshot()
	for p, c := range files {
		e, ok := s.Lookup(p)
		if !ok || !e.Lazy() {
			t.Fatalf("%s is not the lazy base file again", p)
		}
		if got, err := w.ReadFile(p); err != nil || string(got) != c {
			t.Fatalf("%s: %q %v", p, got, err)
		}
	}
}

// Status is about what git would see. A lazy file written back with its
// own bytes, through any path (WriteFile, a handle, a truncate to its own
// size, an edit that changes nothing), is unchanged; one written with
// other bytes of the same size, or made executable, is modified; a
// permission change git does not record is no change.
func TestLazyStatusIsWhatGitSees(t *testing.T) {
	files := map[string]string{"a": "same bytes\n", "b": "same bytes\n", "c": "same bytes\n", "d": "same bytes\n", "e": "same bytes\n", "f": "same bytes\n"}
	b, ids := newBlobs("same bytes\n")
	w := lazySeed(t, b, ids, files)
	must(t, w.WriteFile("a", []byte("same bytes\n"), 0o644))
	f, err := w.OpenFile("b", os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("same"), 0)
	must(t, err)
	must(t, f.Truncate(int64(len("same bytes\n"))))
	f.Close()
	must(t, w.Edit("c", func(old []byte) ([]byte, error) { return old, nil }))
	must(t, w.Chmod("d", 0o600))
	must(t, w.Chmod("e", 0o755))
	must(t, w.WriteFile("f", []byte("SAME BYTES\n"), 0o644))
	got := map[string]change.Kind{}
	for _, c := range w.Changes() {
		got[c.Path] = c.Kind
	}
	if len(got) != 2 || got["e"] != change.Update || got["f"] != change.Update {
		t.Fatalf("changes: %v", got)
	}
	// And back: the executable bit cleared, the bytes restored.
	must(t, w.Chmod("e", 0o644))
	must(t, w.WriteFile("f", []byte("same bytes\n"), 0o644))
	if ch := w.Changes(); len(ch) != 0 {
		t.Fatalf("changed back, still listed: %+v", ch)
	}
}

// A lazy file whose content is gone can still be emptied through a
// handle (Truncate(0)), as O_TRUNC and WriteFile empty it, and then
// written: nothing of the old content is needed for either.
func TestLazyUnavailableFileTruncated(t *testing.T) {
	b, ids := newBlobs("alpha\n", "beta\n")
	w := lazySeed(t, b, ids, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"})
	b.fail = errors.New("repository gone")
	f, err := w.OpenFile("a.txt", os.O_RDWR, 0)
	must(t, err)
	must(t, f.Truncate(0))
	_, err = f.Write([]byte("new\n"))
	must(t, err)
	f.Close()
	if got, err := w.ReadFile("a.txt"); err != nil || string(got) != "new\n" {
		t.Fatalf("a: %q %v", got, err)
	}
	// A truncation that keeps some of the content still needs it.
	f, err = w.OpenFile("b.txt", os.O_RDWR, 0)
	must(t, err)
	if err := f.Truncate(2); !errors.Is(err, memfs.ErrUnavailable) {
		t.Fatalf("truncate to 2: %v", err)
	}
	f.Close()
}
