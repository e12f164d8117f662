package gitenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// A Neutral is a git directory of airlock's own, empty, through which git
// reads another repository's objects (GIT_OBJECT_DIRECTORY): git reads
// the object directory (its packs, loose objects, alternates) and nothing
// else of that repository, not its config, its hooks, its replace refs
// or its promisor remote. So no program that repository names can run,
// and git never fetches a missing object on its own (a fetch needs a
// promisor remote, and this directory has none): a read of a missing
// object says it is missing, on every git version.
type Neutral struct {
	dir     string // the git directory
	objects string // the repository's object directory
	own     bool   // dir is this Neutral's alone, removed by Close
}

// NewNeutral makes a Neutral reading the objects of the repository whose
// common git directory is common. Every Neutral of a process shares one
// directory (sharedDir), which git only reads.
func NewNeutral(common string) (*Neutral, error) {
	dir, err := sharedDir()
	if err != nil {
		return nil, err
	}
	return &Neutral{dir: dir, objects: filepath.Join(common, "objects")}, nil
}

// newPrivate is a Neutral with a directory of its own, for a git that
// writes its config (a fetch); Close removes it.
func newPrivate(objects string) (*Neutral, error) {
	dir, err := os.MkdirTemp("", "airlock-git-")
	if err != nil {
		return nil, err
	}
	if err := writeNeutral(dir); err != nil {
		_ = os.RemoveAll(dir) // a temporary directory: the error is what matters
		return nil, err
	}
	return &Neutral{dir: dir, objects: objects, own: true}, nil
}

var shared struct {
	once sync.Once
	dir  string
	err  error
}

// sharedDir is the git directory every Neutral of the process reads
// through: in the user's cache directory, where it stays for the next
// process (no temporary directory is left behind by one that is never
// closed), made or refreshed once per process; a temporary one where
// there is no cache directory.
func sharedDir() (string, error) {
	shared.once.Do(func() {
		if cache, err := os.UserCacheDir(); err == nil {
			dir := filepath.Join(cache, "airlock", "git-neutral")
			if err := os.MkdirAll(dir, 0o700); err == nil && onlyNeutral(dir) {
				if err := writeNeutral(dir); err == nil {
					shared.dir = dir
					return
				}
			}
		}
		shared.dir, shared.err = os.MkdirTemp("", "airlock-git-")
		if shared.err == nil {
			shared.err = writeNeutral(shared.dir)
		}
	})
	return shared.dir, shared.err
}

// onlyNeutral reports whether dir holds nothing but what writeNeutral
// writes (and its temporary files): a commondir, a hooks directory or
// anything else git might read there makes a process use a new
// temporary directory instead.
func onlyNeutral(dir string) bool {
	es, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range es {
		switch n := e.Name(); {
		case n == "HEAD" || n == "config" || strings.HasPrefix(n, "HEAD.tmp") || strings.HasPrefix(n, "config.tmp"):
		case (n == "objects" || n == "refs") && e.IsDir():
		default:
			return false
		}
	}
	return true
}

// writeNeutral makes dir an empty bare repository: objects, refs, a HEAD
// and a config of two lines (each written whole and renamed in, so a
// process reading them meanwhile sees one or the other).
func writeNeutral(dir string) error {
	for _, d := range []string{"objects", "refs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil && !os.IsExist(err) {
			return err
		}
	}
	files := map[string]string{
		"HEAD":   "ref: refs/heads/airlock\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
	}
	for name, data := range files {
		f, err := os.CreateTemp(dir, name+".tmp*")
		if err != nil {
			return err
		}
		_, err = f.WriteString(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), filepath.Join(dir, name))
		}
		if err != nil {
			_ = os.Remove(f.Name()) // a temporary file: the error is what matters
			return err
		}
	}
	return nil
}

// Close removes a private directory; a shared one stays.
func (n *Neutral) Close() error {
	if !n.own {
		return nil
	}
	return os.RemoveAll(n.dir)
}

// Command is git running args on the objects, with the configuration
// every git airlock runs has (Keys; the user's own files are read, no
// repository's).
func (n *Neutral) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, args...)...)
	cmd.Env = withConfig(n.env(), fixed(nil), false)
	cmd.Dir = n.dir
	detach(cmd) // the objects' info/alternates may be /dev/tty
	return cmd
}

// env is git's environment on the objects. Replace refs are never read
// (GIT_NO_REPLACE_OBJECTS): the directory is the user's cache, which any
// process of theirs can write, and a replacement would have the reviewer
// shown, and a push send, other objects than the ones named
// (TestNeutralIgnoresReplaceRefs). A graft file there makes the process
// use a directory of its own (onlyNeutral).
func (n *Neutral) env() []string {
	return append(Clean(), "GIT_DIR="+n.dir, "GIT_OBJECT_DIRECTORY="+n.objects, "GIT_NO_REPLACE_OBJECTS=1")
}

// FetchProtocols are the transports airlock's own fetch of missing
// objects may use: git's own. Never ext:: (any command), fd::, or a
// remote helper (a program named by the URL).
var FetchProtocols = []string{"file", "git", "ssh", "http", "https"}

// userNetwork are keys a fetch of airlock's leaves to the user's own
// config (Neutral reads no repository's): how ssh and credentials work
// for this user.
var userNetwork = map[string]bool{"core.sshCommand": true, "core.askPass": true, "credential.helper": true}

// ErrTransport: a promisor remote's URL needs a transport airlock does
// not run.
var ErrTransport = errors.New("the repository's promisor remote needs a transport airlock does not use")

// Fetch fetches the objects ids (one id a line) from url into the
// repository's object directory as a promisor pack, as git's own lazy
// fetch does (promisor-remote.c): no negotiation, no tags, no ref
// written, no submodules. url is the repository's promisor remote's, as
// its config says; git rewrites it by the user's url.*.insteadOf only,
// and uses only FetchProtocols. dir is where a relative path in url
// starts.
func (n *Neutral) Fetch(ctx context.Context, url, dir string, ids io.Reader) error {
	if err := Transport(url); err != nil {
		return err
	}
	// git fetch writes the remote's filter into the config: a directory
	// of this fetch's own.
	p, err := newPrivate(n.objects)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }() // a temporary directory: the fetch's outcome is what matters
	kv := fixed(userNetwork)
	for _, p := range FetchProtocols {
		kv = append(kv, [2]string{"protocol." + p + ".allow", "always"})
	}
	kv = append(kv,
		[2]string{"remote.airlock.url", url},
		[2]string{"remote.airlock.promisor", "true"},
		[2]string{"fetch.negotiationAlgorithm", "noop"})
	cmd := exec.CommandContext(ctx, "git", "--no-pager", "fetch", "airlock",
		"--upload-pack=git-upload-pack", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--filter=blob:none", "--stdin")
	cmd.Env = withConfig(p.env(), kv, true)
	cmd.Dir, cmd.Stdin = dir, ids
	detach(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("fetching missing objects from %s: %s", termsafe.Text(url), termsafe.Text(msg))
	}
	return nil
}

// Transport refuses a URL whose transport is not one of FetchProtocols,
// read as git reads it (transport.c): "helper::address" is a remote
// helper, "scheme://" a scheme, "host:path" ssh, anything else a path.
func Transport(url string) error {
	scheme := ""
	i := 0
	for i < len(url) && (isAlpha(url[i]) || i > 0 && (isDigit(url[i]) || strings.IndexByte("+.-", url[i]) >= 0)) {
		i++
	}
	switch {
	case strings.HasPrefix(url[i:], "::"):
		scheme = url[:i] + "::"
	case strings.HasPrefix(url[i:], "://"):
		scheme = strings.ToLower(url[:i])
		if scheme == "git+ssh" || scheme == "ssh+git" {
			scheme = "ssh"
		}
	default:
		return nil // a path (file) or host:path (ssh)
	}
	for _, p := range FetchProtocols {
		if scheme == p {
			return nil
		}
	}
	return fmt.Errorf("%w: %q is a %s URL; airlock fetches over %s only. Fetch the missing objects yourself "+
		"(git -C REPO fetch origin), or give the remote a URL of one of those", ErrTransport, termsafe.Text(url),
		strings.TrimSuffix(scheme, "::"), strings.Join(FetchProtocols, ", "))
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
