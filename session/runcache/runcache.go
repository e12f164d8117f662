package runcache

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultMaxBytes bounds a worker's cache unless the operator says
// otherwise: a large Go project's build and module caches (Kubernetes:
// about 4 GiB and 1.5 GiB) with room beside them for pip's, npm's or
// cargo's, while still a small part of a developer's disk.
const DefaultMaxBytes = 10 << 30

// TrimEvery is how often, at most, a cache is measured (a walk of every
// file in it) after a run.
const TrimEvery = time.Minute

// ErrBusy: a run of the worker is in flight, and the cache cannot be
// evicted from or cleared under it.
var ErrBusy = errors.New("a run of this worker is using its cache right now")

// ErrNoCache: no cache has that id.
var ErrNoCache = errors.New("no such cache")

// Meta says which worker a cache is for.
type Meta struct {
	ID         string    `json:"id"`
	Worker     string    `json:"worker"`
	WorkerKey  string    `json:"worker_key"`
	WorkerFile string    `json:"worker_file,omitempty"`
	Created    time.Time `json:"created"`
}

// ID is the name of the directory of the worker whose key is key.
func ID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// Cache is one worker's cache, open in this process. Its methods are safe
// for concurrent use; another process may have the same cache open.
type Cache struct {
	dir  string
	meta Meta
	max  int64

	mu       sync.Mutex
	held     int64 // what the cache held when last measured, plus what runs added since
	trimming bool
	closed   bool
	last     time.Time
	wg       sync.WaitGroup
	every    time.Duration
	stop     chan struct{} // closed by Close: a trim waiting to try again gives up
}

// Open opens (making it if need be) the cache of meta's worker under root
// (airlock's state directory, then "cache"), bounded by max bytes.
func Open(root string, meta Meta, max int64) (*Cache, error) {
	if meta.WorkerKey == "" {
		return nil, errors.New("runcache: a cache needs its worker's key")
	}
	if max <= 0 {
		return nil, fmt.Errorf("runcache: a bound of %d bytes: give a positive size", max)
	}
	meta.ID = ID(meta.WorkerKey)
	dir := filepath.Join(root, meta.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return nil, err
	}
	old, err := readMeta(dir)
	switch {
	case err == nil:
		meta.Created = old.Created
	case errors.Is(err, fs.ErrNotExist):
		meta.Created = time.Now().UTC()
	default:
		return nil, err
	}
	if old != meta {
		if err := writeMeta(dir, meta); err != nil {
			return nil, err
		}
	}
	return &Cache{dir: dir, meta: meta, max: max, every: TrimEvery, stop: make(chan struct{})}, nil
}

// Dir is the directory a run sees at ~/.cache.
func (c *Cache) Dir() string { return filepath.Join(c.dir, "home") }

// Meta says which worker the cache is for.
func (c *Cache) Meta() Meta { return c.meta }

// Max is the cache's bound in bytes.
func (c *Cache) Max() int64 { return c.max }

// Added records that a run added n bytes to the cache: once what it held
// when last measured and what runs added since pass the bound, the next
// trim is not put off (see TrimEvery).
func (c *Cache) Added(n int64) {
	c.mu.Lock()
	c.held += n
	if c.held > c.max {
		c.last = time.Time{}
	}
	c.mu.Unlock()
}

// Begin readies the cache for a run whose processes act as uid and gid on
// the host, and holds it against eviction until the returned end is
// called; end also measures the cache in the background (see TrimEvery)
// and evicts what is over the bound.
func (c *Cache) Begin(uid, gid int) (end func(), err error) {
	lock, err := os.OpenFile(filepath.Join(c.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockShared(lock); err != nil {
		lock.Close()
		return nil, err
	}
	if err := c.home(uid, gid); err != nil {
		lock.Close()
		return nil, err
	}
	now := time.Now()
	os.Chtimes(lock.Name(), now, now) // when the cache was last used, for airlock cache list
	return func() {
		lock.Close()
		c.trimLater()
	}, nil
}

// home makes the directory runs see, owned by the jail's user and open to
// no one else.
func (c *Cache) home(uid, gid int) error {
	p := c.Dir()
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if fi, err = os.Lstat(p); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; remove it (airlock cache clear)", p)
	}
	if o, g, ok := owner(fi); ok && (o != uid || g != gid) {
		if err := os.Lchown(p, uid, gid); err != nil {
			return fmt.Errorf("giving the cache %s to the run's user (uid %d): %w", p, uid, err)
		}
	}
	return os.Chmod(p, 0o700)
}

func (c *Cache) trimLater() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.trimming || time.Since(c.last) < c.every {
		return
	}
	c.trimming = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		// A run in flight (in this server or another of the worker)
		// keeps the cache from being trimmed: try again a little later,
		// a few times, rather than only after the next run.
		for wait := 100 * time.Millisecond; ; wait *= 2 {
			_, _, err := c.Trim()
			c.mu.Lock()
			if !errors.Is(err, ErrBusy) || c.closed || wait > 10*time.Second {
				c.trimming = false
				c.last = time.Now()
				if errors.Is(err, ErrBusy) {
					c.last = time.Time{} // after the next run, then
				}
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			select {
			case <-time.After(wait):
			case <-c.stop:
			}
		}
	}()
}

// Wait waits for the trim in flight, if any: one starts as a run ends
// (Begin's end), so after a run has answered, Wait returns once the cache
// was measured and, if it was over its bound, trimmed.
func (c *Cache) Wait() { c.wg.Wait() }

// Close waits for a trim in flight, and starts no more.
func (c *Cache) Close() {
	c.mu.Lock()
	if !c.closed && c.stop != nil {
		close(c.stop)
	}
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}

// Entry is one top-level entry of a cache's home: usually one tool's cache.
type Entry struct {
	Name  string
	Bytes int64     // on disk
	Files int       // regular files
	Used  time.Time // the newest access or change of a file in it
}

// Usage is what a cache holds, largest entry first.
type Usage struct {
	Bytes   int64
	Entries []Entry
}

// Trim measures the cache and, when it holds more than its bound, evicts
// whole entries, least recently used first, until it does not. It returns
// the usage after eviction and what was evicted; ErrBusy when the cache is
// over its bound but a run holds it.
func (c *Cache) Trim() (u Usage, evicted []Entry, err error) {
	defer func() {
		c.mu.Lock()
		c.held = u.Bytes
		c.mu.Unlock()
	}()
	u = measure(c.Dir())
	if u.Bytes <= c.max {
		return u, nil, nil
	}
	lock, err := tryExclusive(c.dir)
	if err != nil {
		return u, nil, err
	}
	lru := append([]Entry(nil), u.Entries...)
	sort.SliceStable(lru, func(i, j int) bool { return lru[i].Used.Before(lru[j].Used) })
	var trash []string
	for _, e := range lru {
		if u.Bytes <= c.max {
			break
		}
		t, err := c.toTrash(filepath.Join(c.Dir(), e.Name))
		if err != nil {
			break
		}
		trash = append(trash, t)
		evicted = append(evicted, e)
		u.Bytes -= e.Bytes
	}
	trash = append(trash, c.oldTrash(trash)...)
	lock.Close()
	for _, t := range trash {
		removeTree(t)
	}
	kept := u.Entries[:0]
	for _, e := range u.Entries {
		if !containsEntry(evicted, e.Name) {
			kept = append(kept, e)
		}
	}
	u.Entries = kept
	return u, evicted, nil
}

func containsEntry(es []Entry, name string) bool {
	for _, e := range es {
		if e.Name == name {
			return true
		}
	}
	return false
}

// toTrash moves p out of the runs' view at once; it is deleted later.
func (c *Cache) toTrash(p string) (string, error) {
	var b [6]byte
	rand.Read(b[:])
	t := filepath.Join(c.dir, "trash-"+hex.EncodeToString(b[:]))
	return t, os.Rename(p, t)
}

// oldTrash is what an earlier eviction left behind (a server killed while
// deleting), besides mine.
func (c *Cache) oldTrash(mine []string) []string {
	ents, _ := os.ReadDir(c.dir)
	var out []string
	for _, e := range ents {
		p := filepath.Join(c.dir, e.Name())
		if strings.HasPrefix(e.Name(), "trash-") && !containsString(mine, p) {
			out = append(out, p)
		}
	}
	return out
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// measure walks home without following symlinks.
func measure(home string) Usage {
	var u Usage
	ents, err := os.ReadDir(home)
	if err != nil {
		return u
	}
	for _, top := range ents {
		e := Entry{Name: top.Name()}
		filepath.WalkDir(filepath.Join(home, top.Name()), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			e.Bytes += diskBytes(fi)
			if fi.Mode().IsRegular() {
				e.Files++
				if t := usedAt(fi); t.After(e.Used) {
					e.Used = t
				}
			}
			return nil
		})
		u.Bytes += e.Bytes
		u.Entries = append(u.Entries, e)
	}
	sort.SliceStable(u.Entries, func(i, j int) bool { return u.Entries[i].Bytes > u.Entries[j].Bytes })
	return u
}

// removeTree deletes p, making read-only directories (Go's module cache
// makes them 0555) writable first; it never follows a symlink.
func removeTree(p string) error {
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
				os.Chmod(q, 0o700)
			}
		}
		return nil
	})
	return os.RemoveAll(p)
}

func tryExclusive(dir string) (*os.File, error) {
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := tryLockExclusive(lock); err != nil {
		lock.Close()
		return nil, ErrBusy
	}
	return lock, nil
}

func readMeta(dir string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, "meta.json"), err)
	}
	return m, nil
}

func writeMeta(dir string, m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(dir, "meta.json", append(b, '\n'))
}

// writeAtomic replaces dir/name with b: a reader sees the old file or the
// new one, whole.
func writeAtomic(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// Listed is a cache as airlock cache list shows it.
type Listed struct {
	Meta
	Path  string // the cache's directory
	Usage Usage
	Used  time.Time // when a run last began with it
	InUse bool      // a run holds it now
}

// List returns every cache under root, most recently used first.
func List(root string) ([]Listed, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		l, err := inspect(filepath.Join(root, e.Name()))
		if err != nil {
			continue // not a cache
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Used.After(out[j].Used) })
	return out, nil
}

// Lookup returns the cache id under root.
func Lookup(root, id string) (Listed, error) {
	if id == "" || strings.ContainsAny(id, "/\\") || strings.HasPrefix(id, ".") {
		return Listed{}, fmt.Errorf("%w: %q is not a cache id (see airlock cache list)", ErrNoCache, id)
	}
	l, err := inspect(filepath.Join(root, id))
	if errors.Is(err, fs.ErrNotExist) {
		return l, fmt.Errorf("%w: %s has no cache %s (see airlock cache list)", ErrNoCache, root, id)
	}
	return l, err
}

func inspect(dir string) (Listed, error) {
	m, err := readMeta(dir)
	if err != nil {
		return Listed{}, err
	}
	l := Listed{Meta: m, Path: dir, Usage: measure(filepath.Join(dir, "home"))}
	if fi, err := os.Stat(filepath.Join(dir, "lock")); err == nil {
		l.Used = fi.ModTime()
	}
	if lock, err := tryExclusive(dir); err == nil {
		lock.Close()
	} else if errors.Is(err, ErrBusy) {
		l.InUse = true
	}
	return l, nil
}

// Clear empties the cache id under root and returns how many bytes it
// held; ErrBusy while a run holds it.
func Clear(root, id string) (int64, error) {
	l, err := Lookup(root, id)
	if err != nil {
		return 0, err
	}
	lock, err := tryExclusive(l.Path)
	if err != nil {
		return 0, fmt.Errorf("cache %s of worker %q: %w; run airlock cache clear again once it ends", id, l.Worker, err)
	}
	c := &Cache{dir: l.Path}
	var trash []string
	if t, err := c.toTrash(c.Dir()); err == nil {
		trash = append(trash, t)
	} else if !errors.Is(err, fs.ErrNotExist) {
		lock.Close()
		return 0, err
	}
	trash = append(trash, c.oldTrash(trash)...)
	os.Remove(filepath.Join(l.Path, stampsFile))
	lock.Close()
	for _, t := range trash {
		if err := removeTree(t); err != nil {
			return 0, err
		}
	}
	return l.Usage.Bytes, nil
}

// Stamp records when the workspace file at a path last changed to the
// content it holds, as a run saw it (the modification time of the file a
// run read). A later server gives the same content at the same path the
// same time again: tools that key on times (go test's cached results of
// tests that open files, make) then see the file unchanged, as they would
// in a checkout that stayed on the disk. Changed content always gets a new
// time, so nothing looks older than it is.
type Stamp struct {
	ID   string `json:"id"` // the content's git blob id, in hex
	Size int64  `json:"size"`
	Time int64  `json:"time"` // Unix nanoseconds
}

const stampsFile = "stamps.json"

// Stamps returns the stamps a server saved last (see SaveStamps); none if
// there are none, or they cannot be read (new times are then always safe).
func (c *Cache) Stamps() map[string]Stamp {
	m := map[string]Stamp{}
	if b, err := os.ReadFile(filepath.Join(c.dir, stampsFile)); err == nil {
		if json.Unmarshal(b, &m) != nil {
			return map[string]Stamp{}
		}
	}
	return m
}

// SaveStamps replaces the saved stamps with m, atomically. It lives beside
// home, where no run can reach it.
func (c *Cache) SaveStamps(m map[string]Stamp) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeAtomic(c.dir, stampsFile, b)
}
