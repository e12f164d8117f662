package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// viewedFileName is the file in the reviewer's state directory that keeps
// their "viewed" marks: each file's change (model.File.Key: the target,
// the path and the change) with when it was marked, so that the same
// change in a later request of the push is still marked.
const viewedFileName = "viewed.json"

// viewedKeep is how long a mark is kept: a change not seen again in that
// time is forgotten, so the file does not grow for ever.
const viewedKeep = 90 * 24 * time.Hour

// viewedPath is the marks' file; "" when there is no state directory.
func viewedPath() string {
	dir, err := broker.StateDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, viewedFileName)
}

// loadViewed marks m's files the reviewer marked viewed before. A file
// that cannot be read marks nothing: the marks are a help, not a record.
func loadViewed(path string, m *model.Review) {
	marks, _ := readViewed(path)
	keys := make(map[string]bool, len(marks))
	for k := range marks {
		keys[k] = true
	}
	m.LoadViewed(keys)
}

func readViewed(path string) (map[string]int64, error) {
	marks := map[string]int64{}
	if path == "" {
		return marks, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return marks, nil
	}
	if err != nil {
		return marks, err
	}
	if err := json.Unmarshal(data, &marks); err != nil {
		return map[string]int64{}, fmt.Errorf("%s is not a file of viewed marks (%w): move it away and mark the files again", path, err)
	}
	return marks, nil
}

// saveViewed keeps m's marks: those set now, and none for a file of m
// shown and not marked; the others' as they were, less the old ones.
func saveViewed(path string, m *model.Review, now time.Time) error {
	if path == "" {
		return nil
	}
	marks, err := readViewed(path)
	if err != nil {
		return err
	}
	for _, k := range m.Keys() {
		delete(marks, k)
	}
	for _, k := range m.ViewedKeys() {
		marks[k] = now.Unix()
	}
	for k, at := range marks {
		if now.Sub(time.Unix(at, 0)) > viewedKeep {
			delete(marks, k)
		}
	}
	data, err := json.Marshal(marks)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
