package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/airlock-dev/airlock/session/journal"
	"github.com/airlock-dev/airlock/session/store"
)

// List lists the sessions under root, newest first, each as its summary
// last said (a server that died may have saved more since: its journal
// tells).
func (st Store) List() ([]store.Listed, error) {
	root := st.Root
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []store.Listed
	for _, e := range ents {
		if !e.IsDir() || checkID(e.Name()) != nil {
			continue
		}
		l, err := listOne(filepath.Join(root, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

func listOne(dir string) (store.Listed, error) {
	m, err := readMeta(dir)
	if err != nil {
		return store.Listed{}, err
	}
	l := store.Listed{Meta: m, Where: dir}
	if data, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		_ = json.Unmarshal(data, &l.Summary) // a summary cut by a crash counts nothing; the journal is the state
	} else {
		l.NoState = true
	}
	if f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0); err == nil {
		if tryLock(f) != nil {
			l.Running = true
		}
		f.Close()
	}
	fi, err := os.Stat(filepath.Join(dir, "journal"))
	if err == nil {
		l.Bytes = fi.Size()
	}
	return l, nil
}

// Remove deletes a session's directory; a running one is refused.
func (st Store) Remove(id string) error {
	d, err := st.OpenDir(id)
	if err != nil {
		return err
	}
	defer d.Unlock()
	return os.RemoveAll(d.Path)
}

// ReadMeta reads what session id under root records, without opening it
// (an HTTP server checks a token against it before reading a request).
func (st Store) ReadMeta(id string) (store.Meta, error) {
	root := st.Root
	if err := checkID(id); err != nil {
		return store.Meta{}, err
	}
	dir := filepath.Join(root, id)
	df, err := openOwnDir(dir) // a session directory swapped for a link is none
	if errors.Is(err, os.ErrNotExist) {
		return store.Meta{}, fmt.Errorf("%w: %s (see airlock sessions list): %w", store.ErrNoSession, id, err)
	}
	if err != nil {
		return store.Meta{}, err
	}
	df.Close()
	return readMeta(dir)
}

// ReadJournal reads session id's journal without changing it.
func (st Store) ReadJournal(id string, commit func(typ byte) bool, fn func(typ byte, payload []byte) error) error {
	if err := checkID(id); err != nil {
		return err
	}
	dir := filepath.Join(st.Root, id)
	df, err := openOwnDir(dir) // a session directory swapped for a link is none
	if err != nil {
		return err
	}
	df.Close()
	return journal.Read(filepath.Join(dir, "journal"), commit, fn)
}

// Listing lists session id alone (as List would).
func (st Store) Listing(id string) (store.Listed, error) {
	if err := checkID(id); err != nil {
		return store.Listed{}, err
	}
	return listOne(filepath.Join(st.Root, id))
}
