package gitread

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/targets/internal/transfer"
)

// ListTree copies commit head and every tree it reaches into store, and
// notes every blob's size in src, listing the repository's objects (read
// as gitenv.Neutral reads them) in one `git ls-tree -r -t -l`: git
// inflates the trees and reads the sizes (C, its own pack index), and the
// trees are written again here from the listing, each checked against its
// id before it is stored. On an 11,000-file tree this is a third of
// walking the trees with go-git and asking the size of each blob.
//
// ok is false when the listing cannot be used as it is: a rebuilt tree
// that does not hash to its id (a tree git reads leniently: modes with
// leading zeros, entries out of order), a path longer than the workspace
// takes, or git failing. The caller then copies the objects one by one,
// which has its own checks for each of those cases.
func (src *Source) ListTree(ctx context.Context, head plumbing.Hash, store *staging.Store) (ok bool, err error) {
	// Through the source's own reader: the process that reads the
	// files' content later is started here, not one more beside it.
	_, raw, err := src.cat.Read(head, plumbing.CommitObject, store.Limit())
	if err != nil {
		return false, nil
	}
	if plumbing.ComputeHash(plumbing.CommitObject, raw) != head {
		return false, nil
	}
	if _, err := store.PutRaw(plumbing.CommitObject, raw); err != nil {
		return false, err
	}
	c, err := object.GetCommit(store, head)
	if err != nil {
		return false, nil
	}
	lt, ok, err := src.list(ctx, c.TreeHash)
	if !ok || err != nil {
		return false, err
	}
	for _, dir := range lt.order {
		data := lt.trees[dir].Bytes()
		if plumbing.ComputeHash(plumbing.TreeObject, data) != lt.want[dir] {
			return false, nil
		}
	}
	for _, dir := range lt.order {
		if _, err := store.PutRaw(plumbing.TreeObject, lt.trees[dir].Bytes()); err != nil {
			return false, fmt.Errorf("%w (tree at %q): %w; pull fewer paths, or raise the sandbox's limits", transfer.ErrTooLarge, transfer.OrRoot(dir), err)
		}
	}
	// What the tree check reads (links, .gitmodules and the like) is
	// held, as a copying fetch would hold it.
	for _, h := range lt.special {
		data, err := src.ReadBlob(h, store.Limit())
		if err != nil || plumbing.ComputeHash(plumbing.BlobObject, data) != h {
			return false, nil
		}
		if _, err := store.PutRaw(plumbing.BlobObject, data); err != nil {
			return false, fmt.Errorf("%w (blob %s): %w; pull fewer paths, or raise the sandbox's limits", transfer.ErrTooLarge, shortid.Hash(h), err)
		}
	}
	return true, nil
}

// listing is the trees of one ls-tree, written again from its records.
type listing struct {
	trees   map[string]*bytes.Buffer // each directory's tree, as listed
	want    map[string]plumbing.Hash // the id git listed it at
	order   []string                 // the directories, parents first
	special []plumbing.Hash          // the blobs the tree check reads
}

// list runs `git ls-tree` on tree and rebuilds its trees; ok is
// false when the listing cannot be used (see ListTree).
func (src *Source) list(ctx context.Context, tree plumbing.Hash) (lt *listing, ok bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	cmd, err := src.gitCtx(ctx, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", tree.String())
	if err != nil {
		cancel()
		return nil, false, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, false, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, false, nil
	}
	waited := false
	defer func() {
		cancel() // stops git when the listing is given up
		if !waited {
			cmd.Wait()
		}
	}()
	lt = &listing{trees: map[string]*bytes.Buffer{"": {}}, want: map[string]plumbing.Hash{"": tree}, order: []string{""}}
	r := bufio.NewReaderSize(out, 1<<16)
	for {
		rec, err := r.ReadSlice(0)
		if err == io.EOF && len(rec) == 0 {
			break
		}
		if err == bufio.ErrBufferFull || len(rec) > pathguard.MaxPathBytes+128 {
			return nil, false, nil // a path longer than anything the workspace takes
		}
		if err != nil || !lt.add(rec[:len(rec)-1], src) {
			return nil, false, nil
		}
	}
	waited = true
	if err := cmd.Wait(); err != nil {
		return nil, false, nil
	}
	return lt, true, nil
}

// add takes one record of the listing ("MODE TYPE ID SIZE\tPATH"): a tree
// becomes a directory to fill, a blob's size is noted in src. It returns
// false for a record it cannot use.
func (lt *listing) add(rec []byte, src *Source) bool {
	meta, p, found := bytes.Cut(rec, []byte{'\t'})
	f := strings.Fields(string(meta))
	if !found || len(f) != 4 || len(p) == 0 {
		return false
	}
	mode, err := strconv.ParseUint(f[0], 8, 32)
	if err != nil || len(f[2]) != 40 {
		return false
	}
	var id plumbing.Hash
	if _, err := hex.Decode(id[:], []byte(f[2])); err != nil {
		return false
	}
	name, dir := string(p), ""
	if i := bytes.LastIndexByte(p, '/'); i >= 0 {
		name, dir = string(p[i+1:]), string(p[:i])
	}
	parent := lt.trees[dir]
	if parent == nil {
		return false // git lists a tree before what is in it
	}
	parent.WriteString(strconv.FormatUint(mode, 8))
	parent.WriteByte(' ')
	parent.WriteString(name)
	parent.WriteByte(0)
	parent.Write(id[:])
	switch f[1] {
	case "tree":
		full := path.Join(dir, name)
		lt.trees[full], lt.want[full] = &bytes.Buffer{}, id
		lt.order = append(lt.order, full)
	case "blob":
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || size < 0 {
			return false
		}
		src.sizes.Store(id, size)
		if mode == 0o100644 || mode == 0o100755 {
			src.wt.note(id, path.Join(dir, name))
		}
		if staging.CheckReads(name, filemode.FileMode(mode)) {
			lt.special = append(lt.special, id)
		}
	}
	return true
}
