package gitread

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/gitenv"
	"github.com/go-git/go-git/v5/plumbing"
)

// Source reads blobs from a local repository's object database in
// place, through git itself (catFile): the source of a lazy base
// (staging.BlobSource). Nothing is copied until a blob is read, and then
// only that blob.
type Source struct {
	common string // the repository's common git directory
	cat    *catFile
	wt     *worktreeFiles // a working tree's files, read first; nil for a bare repository
	sizes  sync.Map       // plumbing.Hash -> int64: blob sizes a fetch listed

	checkMu sync.Mutex
	check   *catProc // git cat-file --batch-check, for sizes and presence

	gitMu   sync.Mutex
	neutral *gitenv.Neutral // what every git of the source reads through, made at first use
	closed  bool
}

var (
	_ staging.BlobSource       = (*Source)(nil)
	_ staging.BlobStreamSource = (*Source)(nil)
)

// NewSource reads from the repository whose common git directory is
// common.
func NewSource(common string) *Source {
	r := &Source{common: common}
	r.cat = newCatFile(common, func(args ...string) (*exec.Cmd, error) { return r.gitCtx(context.Background(), args...) })
	return r
}

// gitCtx is git on the repository's objects, through a git directory of
// airlock's own (gitenv.Neutral): none of the repository's config is
// read, so no program it names runs, and git never fetches a missing
// object on its own.
func (r *Source) gitCtx(ctx context.Context, args ...string) (*exec.Cmd, error) {
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	if r.closed {
		return nil, errCatFileClosed
	}
	if r.neutral == nil {
		n, err := gitenv.NewNeutral(r.common)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", r.common, err)
		}
		r.neutral = n
	}
	return r.neutral.Command(ctx, args...), nil
}

// ReadWorktree makes the source read blobs from the files of the working
// tree at top first (see worktreeFiles), whose index git keeps in gitDir
// ("": none known). Called once, before the source is read.
func (r *Source) ReadWorktree(top, gitDir string) {
	r.wt = newWorktreeFiles(top, gitDir)
}

// WorktreeHashes counts the files the source took from the working tree
// after hashing them (the others git's index vouched for), or -1 when it
// reads none.
func (r *Source) WorktreeHashes() int64 {
	if r.wt == nil {
		return -1
	}
	return r.wt.hashed.Load()
}

// ReadBlob reads blob h whole, if its header declares at most max bytes
// and, when a fetch listed it, the size git listed: the repository may
// have changed since. The store checks the content against h.
func (r *Source) ReadBlob(h plumbing.Hash, max int64) ([]byte, error) {
	if n, ok := r.sizes.Load(h); ok {
		if n.(int64) <= max {
			if data, ok := r.wt.read(h, n.(int64)); ok {
				return data, nil
			}
		}
		max = min(max, n.(int64))
	}
	_, data, err := r.cat.Read(h, plumbing.BlobObject, max)
	if errors.Is(err, plumbing.ErrObjectNotFound) && r.fetchOne(h) {
		_, data, err = r.cat.Read(h, plumbing.BlobObject, max)
	}
	return data, err
}

// StreamBlobs reads the blobs ids one after another, in one pass of git
// per core, calling fn (from as many goroutines) with each one's content
// or why it could not be read. See staging.BlobStreamSource.
func (r *Source) StreamBlobs(ctx context.Context, ids []plumbing.Hash, max int64, keep bool, fn func(i int, data []byte, checked bool, err error) error) error {
	if r.wt != nil {
		// The working tree's files first, a goroutine per core; what
		// they do not hold goes to git.
		var err error
		if ids, fn, err = r.streamWorktree(ctx, ids, max, fn); err != nil || len(ids) == 0 {
			return err
		}
	}
	// What git gives is checked by the store.
	unchecked := func(i int, data []byte, err error) error { return fn(i, data, false, err) }
	n := min(cap(r.cat.idle), (len(ids)+streamChunk-1)/streamChunk)
	if n <= 1 {
		return r.cat.Each(ctx, ids, plumbing.BlobObject, max, keep, unchecked)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, n)
	for k := 0; k < n; k++ {
		// Interleaved runs of ids, so that each process reads its
		// share of every pack region the ids were listed in order of.
		go func() {
			var part []plumbing.Hash
			var at []int
			for i := k * streamChunk; i < len(ids); i += n * streamChunk {
				for j := i; j < min(i+streamChunk, len(ids)); j++ {
					part, at = append(part, ids[j]), append(at, j)
				}
			}
			err := r.cat.Each(ctx, part, plumbing.BlobObject, max, keep, func(i int, data []byte, err error) error {
				return unchecked(at[i], data, err)
			})
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var first error
	for k := 0; k < n; k++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// streamWorktree reads what it can of ids from the working tree, giving
// each to fn (checked: a file is taken only if it hashes to the id), and
// returns the rest, with fn made to answer for their
// indexes in ids.
func (r *Source) streamWorktree(ctx context.Context, ids []plumbing.Hash, max int64, fn func(int, []byte, bool, error) error) ([]plumbing.Hash, func(int, []byte, bool, error) error, error) {
	missed := make([]bool, len(ids))
	next := make(chan int)
	errs := make(chan error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range cap(errs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				n, ok := r.sizes.Load(ids[i])
				var data []byte
				if ok && n.(int64) <= max {
					data, ok = r.wt.read(ids[i], n.(int64))
				}
				if !ok {
					missed[i] = true
					continue
				}
				// read checked it against its id: the store need not.
				if err := fn(i, data, true, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range ids {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err != nil {
		return nil, nil, err
	}
	var rest []plumbing.Hash
	var at []int
	for i, m := range missed {
		if m {
			rest, at = append(rest, ids[i]), append(at, i)
		}
	}
	return rest, func(k int, data []byte, checked bool, err error) error { return fn(at[k], data, checked, err) }, nil
}

// streamChunk is how many ids in a row one process of a stream reads.
const streamChunk = 64

// BlobSize reads blob h's size from its header (for a delta, the delta's
// header: nothing is rebuilt).
func (r *Source) BlobSize(h plumbing.Hash) (int64, error) {
	if n, ok := r.sizes.Load(h); ok {
		return n.(int64), nil
	}
	hd, err := r.infoFetching(h)
	if err != nil {
		return 0, err
	}
	if hd.typ != plumbing.BlobObject {
		return 0, fmt.Errorf("object %s is a %s, not a blob", h, hd.typ)
	}
	return hd.size, nil
}

// HasBlob asks the repository whether it has blob h now (a fetch's
// listing of sizes says only that it had it).
func (r *Source) HasBlob(h plumbing.Hash) error {
	hd, err := r.infoFetching(h)
	if err == nil && hd.typ != plumbing.BlobObject {
		err = fmt.Errorf("object %s is a %s, not a blob", h, hd.typ)
	}
	return err
}

// infoFetching is info, for an object a partial clone may have to fetch
// first (see fetchOne).
func (r *Source) infoFetching(h plumbing.Hash) (header, error) {
	hd, err := r.info(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) && r.fetchOne(h) {
		hd, err = r.info(h)
	}
	return hd, err
}

// info asks git for object h's type and size, reading no content.
func (r *Source) info(h plumbing.Hash) (header, error) {
	r.checkMu.Lock()
	defer r.checkMu.Unlock()
	for try := 0; ; try++ {
		if r.check == nil {
			p, err := r.cat.start("--batch-check")
			if err != nil {
				return header{}, err
			}
			r.check = p
		}
		p := r.check
		hd, err := p.ask(h)
		if err == nil || errors.Is(err, plumbing.ErrObjectNotFound) {
			return hd, err
		}
		// The process died (or said something it should not have): a
		// new one answers, once.
		p.stop()
		r.check = nil
		if try > 0 {
			return header{}, err
		}
	}
}

// Close stops the source's git processes. Reads after it fail.
func (r *Source) Close() error {
	r.checkMu.Lock()
	if r.check != nil {
		r.check.stop()
		r.check = nil
	}
	r.checkMu.Unlock()
	r.cat.Close()
	r.wt.close()
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	r.closed = true
	if r.neutral != nil {
		return r.neutral.Close()
	}
	return nil
}
