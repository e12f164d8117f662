package session

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/targets"
)

// excludeFile is where a repository's own exclude file was found, for the
// base it was found for, and its content as last read.
type excludeFile struct {
	key  string // specKey of the base
	path string // "" when there is none
	// The content, and the file's size, time and identity when it was
	// read: a status only reads it again when they changed.
	data []byte
	stat os.FileInfo
}

// maxExclude bounds the exclude file read: git reads up to 100 MB, but a
// real one is a few lines.
const maxExclude = 1 << 20

// exclude is the content of the exclude file (info/exclude) of the local
// repository r's base was pulled from, which git applies after every
// .gitignore: as git reads it for every status, a change to it applies at
// once (read again when its size, time or identity changed). Where it is
// is found once for each base. A base from GitHub, or none, has none. The
// area calls it with Session.mu held (it guards r.base and r.excl).
func (r *repo) exclude() []byte {
	spec := r.base
	if spec == nil || !spec.Local() {
		return nil
	}
	if key := spec.ID(); r.excl.key != key {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		path, _ := targets.ExcludeFile(ctx, spec.Path)
		cancel()
		r.excl = excludeFile{key: key, path: path}
	}
	if r.excl.path == "" {
		return nil
	}
	fi, err := os.Stat(r.excl.path)
	if err != nil {
		r.excl.data, r.excl.stat = nil, nil
		return nil
	}
	if old := r.excl.stat; old != nil && os.SameFile(old, fi) && old.Size() == fi.Size() && old.ModTime().Equal(fi.ModTime()) {
		return r.excl.data
	}
	r.excl.data, r.excl.stat = readExclude(r.excl.path), fi
	return r.excl.data
}

// readExclude reads an exclude file, nil when it cannot or it is larger
// than maxExclude.
func readExclude(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxExclude+1))
	if err != nil || len(data) > maxExclude {
		return nil
	}
	return data
}

// dropIgnored takes out of a run's lists of workspace paths those git
// ignores: untracked, and excluded by the ignore rules of their
// repository. They are in the workspace, as in a working tree, but they
// are not changes to stage (git status does not list them). It returns
// how many it took out.
func (s *Session) dropIgnored(lists ...*[]string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	type at struct{ list, i int }
	rels, where := map[*repo][]string{}, map[*repo][]at{}
	for li, l := range lists {
		for i, p := range *l {
			r := s.repoOf(p)
			if r == nil || p == r.name {
				continue
			}
			rels[r] = append(rels[r], strings.TrimPrefix(p, r.path("")+"/"))
			where[r] = append(where[r], at{li, i})
		}
	}
	drop := make([]map[int]bool, len(lists))
	n := 0
	for r, ps := range rels {
		for k, ignored := range r.area.Ignored(ps) {
			if ignored {
				w := where[r][k]
				if drop[w.list] == nil {
					drop[w.list] = map[int]bool{}
				}
				drop[w.list][w.i] = true
				n++
			}
		}
	}
	for li, l := range lists {
		if drop[li] == nil {
			continue
		}
		kept := (*l)[:0]
		for i, p := range *l {
			if !drop[li][i] {
				kept = append(kept, p)
			}
		}
		*l = kept
	}
	return n
}
