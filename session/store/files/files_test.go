package files_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/session/store"
	"github.com/airlock-dev/airlock/session/store/files"
	"github.com/airlock-dev/airlock/session/store/storetest"
)

// TestStoreConformance runs the store suite over the local files.
func TestStoreConformance(t *testing.T) {
	storetest.Suite(t, func(t *testing.T) store.Store { return files.Store{Root: t.TempDir()} }, storetest.Options{
		CutTail: func(t *testing.T, st store.Store, id string, n int) {
			path := filepath.Join(st.(files.Store).Root, id, "journal")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()-int64(n)); err != nil {
				t.Fatal(err)
			}
		},
		Vanish: func(t *testing.T, st store.Store, id string) {
			if err := os.RemoveAll(filepath.Join(st.(files.Store).Root, id)); err != nil {
				t.Fatal(err)
			}
		},
	})
}
