package gitdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// ErrNotRepository: a path is in no git repository.
var ErrNotRepository = errors.New("not a git repository")

// Probe is what a local repository's own files say about it, read
// without running git: where it is, which kind it is, and which branch its
// HEAD names. A worker's repositories are probed when airlock starts, so
// that a wrong path or branch is refused there, not at the first push; a
// git process would cost more than the start it checks.
type Probe struct {
	// Path is the repository as a target names it: the top of its working
	// tree, or the git directory of a bare one.
	Path string
	// GitDir is its git directory (for a linked worktree, the worktree's
	// own).
	GitDir string
	Bare   bool
	// Head is the branch HEAD names ("refs/heads/main"), also when it has
	// no commit yet; "" when HEAD is detached.
	Head string
	// Detached is the commit a detached HEAD is at.
	Detached plumbing.Hash
}

// ProbeLocal finds the repository path is in, as git does from a
// directory: the nearest directory at or above path with a .git (a
// directory, or a file naming one), or that is a git directory itself (a
// bare repository). Its errors wrap fs.ErrNotExist (no such path) or
// ErrNotRepository.
func ProbeLocal(path string) (*Probe, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is a file, not a repository's directory", ErrNotRepository, abs)
	}
	for d := abs; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		if fi, err := os.Stat(dotgit); err == nil {
			gitDir := dotgit
			if !fi.IsDir() {
				if gitDir, err = readGitFile(dotgit); err != nil {
					return nil, err
				}
			}
			if isGitDir(gitDir) {
				if err := regularFiles(gitDir); err != nil {
					return nil, err
				}
				return ProbeHead(&Probe{Path: d, GitDir: gitDir})
			}
		}
		if isGitDir(d) {
			if filepath.Base(d) == ".git" {
				return nil, fmt.Errorf("%w: %s is the git directory of %s", ErrNotRepository, d, filepath.Dir(d))
			}
			if err := regularFiles(d); err != nil {
				return nil, err
			}
			return ProbeHead(&Probe{Path: d, GitDir: d, Bare: true})
		}
		if filepath.Dir(d) == d {
			return nil, fmt.Errorf("%w: neither %s nor a directory above it has a .git", ErrNotRepository, abs)
		}
	}
}

// ErrSpecialFile: a file git reads in a git directory is a FIFO, a
// device or a directory.
var ErrSpecialFile = errors.New("a git directory's file is not a regular file")

// regularFiles refuses a git directory whose HEAD or config (its own, or
// its common directory's) is not a regular file once symlinks are
// followed: a FIFO there has every reader, airlock's own (this probe,
// go-git) and git's, wait for a writer forever, and a link to a terminal
// reads what is typed there (TestOpenWaitsOnNoFIFO).
func regularFiles(gitDir string) error {
	paths := []string{filepath.Join(gitDir, "HEAD"), filepath.Join(gitDir, "config")}
	if common, ok := CommonDir(gitDir); ok && common != gitDir {
		paths = append(paths, filepath.Join(common, "config"))
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().IsRegular() {
			continue // none (git says what that means), or a file
		}
		return fmt.Errorf("%w: %s is a %s, which git and airlock would wait on or read from a terminal; "+
			"remove it, then run git init in the repository, which writes a missing HEAD or config again "+
			"(and check the branch HEAD names)",
			ErrSpecialFile, p, kind(fi.Mode()))
	}
	return nil
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// readGitFile follows a .git file ("gitdir: PATH"), as a linked worktree
// or a submodule has.
func readGitFile(name string) (string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok || dir == "" {
		return "", fmt.Errorf("%w: %s does not name a git directory (\"gitdir: PATH\")", ErrNotRepository, name)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(name), dir)
	}
	return filepath.Clean(dir), nil
}

// isGitDir is git's own test of a git directory: a HEAD, and objects and
// refs directories (in the common directory, for a linked worktree).
func isGitDir(d string) bool {
	if fi, err := os.Lstat(filepath.Join(d, "HEAD")); err != nil || fi.IsDir() {
		return false
	}
	common := d
	if data, err := os.ReadFile(filepath.Join(d, "commondir")); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(d, c)
		}
		common = c
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(common, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// ProbeHead reads HEAD in p.GitDir into p: a symbolic ref names the branch (born or not), a
// commit id is a detached HEAD.
func ProbeHead(p *Probe) (*Probe, error) {
	data, err := os.ReadFile(filepath.Join(p.GitDir, "HEAD"))
	if err != nil {
		return nil, err
	}
	head := strings.TrimSpace(string(data))
	if ref, ok := strings.CutPrefix(head, "ref: "); ok {
		p.Head = strings.TrimSpace(ref)
		return p, nil
	}
	if plumbing.IsHash(head) {
		p.Detached = plumbing.NewHash(head)
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s/HEAD holds neither a ref nor a commit id", ErrNotRepository, p.GitDir)
}

// ID is the target id of the repository ("local:/path", "local-bare:/path").
func (p *Probe) ID() string {
	if p.Bare {
		return "local-bare:" + p.Path
	}
	return "local:" + p.Path
}

// Heads reads refs as Head does (go-git, from the repository's files):
// the commit each holds, zero for one that does not exist.
func (p *Probe) Heads(refs ...string) ([]plumbing.Hash, error) {
	r, err := p.open()
	if err != nil {
		return nil, err
	}
	var heads []plumbing.Hash
	for _, ref := range refs {
		got, err := r.Reference(plumbing.ReferenceName(ref), true)
		switch {
		case errors.Is(err, plumbing.ErrReferenceNotFound):
			heads = append(heads, plumbing.ZeroHash)
		case err != nil:
			return nil, fmt.Errorf("reading %s of %s: %w", ref, p.Path, err)
		default:
			heads = append(heads, got.Hash())
		}
	}
	return heads, nil
}

// BranchNames lists the repository's branches, sorted: for an error that
// says which there are.
func (p *Probe) BranchNames() ([]string, error) {
	r, err := p.open()
	if err != nil {
		return nil, err
	}
	it, err := r.Branches()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var all []string
	err = it.ForEach(func(ref *plumbing.Reference) error {
		all = append(all, ref.Name().Short())
		return nil
	})
	sort.Strings(all)
	return all, err
}

func (p *Probe) open() (*git.Repository, error) {
	r, err := git.PlainOpenWithOptions(p.Path, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("reading the refs of %s: %w", p.Path, err)
	}
	return r, nil
}
