package push

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
)

// binaryCopies sets CopyOf on each file of binary content whose exact
// bytes (its blob) the target's tree before the push (oldTree) already
// holds, at any path: a copy of the repository's own logo is nothing new,
// and the reviewer is not asked to judge it as if it were. The tree is
// walked only when the push carries binary content.
func (b *Book) binaryCopies(files []approval.FileChange, oldTree plumbing.Hash, nu map[string]plumbing.Hash) {
	if oldTree.IsZero() {
		return
	}
	want := map[plumbing.Hash][]int{}
	for i, f := range files {
		h := nu[f.Path]
		if h.IsZero() || f.Op == change.Delete || f.NewMode == filemode.Symlink {
			continue
		}
		if !f.Binary {
			data, err := b.cfg.Store.ReadBlob(h)
			if err != nil {
				continue
			}
			if kind, _ := approval.BinaryKind(f.Path, data); kind == "" {
				continue
			}
		}
		want[h] = append(want[h], i)
	}
	if len(want) == 0 {
		return
	}
	t, err := object.GetTree(b.cfg.Store, oldTree)
	if err != nil {
		return // unread, no file is a copy: each is judged as new
	}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for len(want) > 0 {
		name, e, err := w.Next()
		if err != nil {
			return // io.EOF, or a tree unread: what is not found is new
		}
		if !e.Mode.IsFile() || e.Mode == filemode.Symlink {
			continue
		}
		for _, i := range want[e.Hash] {
			files[i].CopyOf = name
		}
		delete(want, e.Hash)
	}
}
