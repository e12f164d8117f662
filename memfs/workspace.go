package memfs

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/memfs/internal/tree"
	"github.com/benbjohnson/immutable"
)

// Limits bound what a workspace may hold. A zero field takes its default.
type Limits struct {
	MaxFileBytes   int64 // one file's content; default 10 MiB
	MaxTotalBytes  int64 // all content, including what checkpoints keep; default 512 MiB
	MaxFiles       int   // files and symlinks, including versions checkpoints keep; default 100,000
	MaxDirs        int   // directories, likewise; default 100,000
	MaxCheckpoints int   // checkpoints on the stack; default 100
}

// DefaultLimits returns the limits a workspace has unless configured.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:   10 << 20,
		MaxTotalBytes:  512 << 20,
		MaxFiles:       100_000,
		MaxDirs:        100_000,
		MaxCheckpoints: 100,
	}
}

func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	if l.MaxFileBytes == 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxTotalBytes == 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxFiles == 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxDirs == 0 {
		l.MaxDirs = d.MaxDirs
	}
	if l.MaxCheckpoints == 0 {
		l.MaxCheckpoints = d.MaxCheckpoints
	}
	if l.MaxFileBytes < 0 || l.MaxTotalBytes < 0 || l.MaxFiles < 0 || l.MaxDirs < 0 || l.MaxCheckpoints < 0 {
		return l, fmt.Errorf("memfs: limits must not be negative: %+v", l)
	}
	return l, nil
}

// Option configures a Workspace.
type Option func(*config)

type config struct {
	limits Limits
	deny   []string
	now    func() time.Time
	keptBy string
}

// WithKeptBy names, for quota errors, what the snapshots passed to SetBase
// as keep are and how to let them go ("staged commits: discard ..."), so
// that the error's advice is one that frees memory.
func WithKeptBy(what string) Option { return func(c *config) { c.keptBy = what } }

// WithLimits sets the quotas; zero fields keep their defaults.
func WithLimits(l Limits) Option { return func(c *config) { c.limits = l } }

// WithDeny adds deny patterns to the defaults (see pathguard.DenyList).
func WithDeny(patterns ...string) Option {
	return func(c *config) { c.deny = append(c.deny, patterns...) }
}

// WithClock sets the clock for modification and checkpoint times.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// Workspace is the worker's filesystem: in memory, safe for concurrent use,
// with one path guard in front of everything a worker names. See the package
// documentation for the whole contract.
type Workspace struct {
	limits Limits
	deny   *pathguard.DenyList
	now    func() time.Time

	mu       sync.RWMutex
	cur      state // the live tree
	base     state // what the workspace was seeded with
	cps      []checkpoint
	cpIndex  map[string]int // checkpoint name -> index in cps
	gen      uint64         // versions older than gen are frozen
	nextIno  atomic.Uint64
	txnSeq   atomic.Uint64
	tempSeq  atomic.Uint64
	retained []*tree.Node // roots kept by the caller (see SetBase), counted in the held tally
	keptBy   string       // what retained snapshots are, for quota errors
	bases    uint64       // how many times SetBase ran: checkpoints compare it (see Rollback)
	// subs are the workspace's parts in use (see Sub), by directory,
	// with what each keeps; retained then holds those, grafted.
	subs map[string]*subKeep
	// heldMemo is the last count of what the roots hold (heldParts).
	heldMemo *heldMemo
}

// state is one version of the whole workspace.
type state struct {
	root  *tree.Node
	dirty dirtySet // paths touched since the base
	usage tree.Tally
}

// dirtySet is a persistent set of paths, so that a checkpoint shares it.
type dirtySet = *immutable.SortedMap[string, struct{}]

var emptyDirty = immutable.NewSortedMap[string, struct{}](tree.NameComparer{})

// New returns an empty workspace. Its base is the empty tree.
func New(opts ...Option) (*Workspace, error) {
	c := config{now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	limits, err := c.limits.withDefaults()
	if err != nil {
		return nil, err
	}
	deny, err := pathguard.NewDenyList(c.deny...)
	if err != nil {
		return nil, fmt.Errorf("memfs: %w", err)
	}
	w := &Workspace{limits: limits, deny: deny, now: c.now, gen: 1, cpIndex: make(map[string]int), keptBy: c.keptBy}
	if w.keptBy == "" {
		w.keptBy = "snapshots kept for the workspace's owner"
	}
	root := &tree.Node{Kind: tree.KindDir, Perm: 0o755, Mtime: w.now(), Ino: w.nextIno.Add(1), Gen: w.gen, Kids: tree.EmptyKids}
	w.cur = state{root: root, dirty: emptyDirty}
	w.base = w.cur
	w.freeze()
	return w, nil
}

// freeze makes every version that exists now immutable: later changes copy.
// It is what makes a checkpoint or a base cost O(1).
func (w *Workspace) freeze() { w.gen++ }

// Limits returns the workspace's quotas.
func (w *Workspace) Limits() Limits { return w.limits }

// Deny returns the workspace's deny list.
func (w *Workspace) Deny() *pathguard.DenyList { return w.deny }

// Usage returns what the live tree holds, and what the workspace holds in
// all (the live tree plus versions only the base or checkpoints keep). The
// quotas apply to the second.
func (w *Workspace) Usage() (live, held Usage) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cur.usage.Live, w.cur.usage.Held
}

// ExactUsage is Usage counted from scratch, in time proportional to
// everything held. Usage's held tally may overcount, never undercount;
// this is what it bounds.
func (w *Workspace) ExactUsage() (live, held Usage) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return tree.CountUnique(w.cur.root), tree.CountUnique(w.roots(w.cur.root)...)
}
