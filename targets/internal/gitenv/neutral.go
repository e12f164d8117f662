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
}

// NewNeutral makes a Neutral reading the objects of the repository whose
// common git directory is common. Close removes it.
func NewNeutral(common string) (*Neutral, error) {
	dir, err := os.MkdirTemp("", "airlock-git-")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"objects", "refs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	files := map[string]string{
		"HEAD":   "ref: refs/heads/airlock\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return &Neutral{dir: dir, objects: filepath.Join(common, "objects")}, nil
}

// Close removes the directory.
func (n *Neutral) Close() error { return os.RemoveAll(n.dir) }

// Command is git running args on the objects, with the configuration
// every git airlock runs has (Keys; the user's own files are read, no
// repository's).
func (n *Neutral) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, args...)...)
	cmd.Env = withConfig(n.env(), fixed(nil), false)
	cmd.Dir = n.dir
	return cmd
}

func (n *Neutral) env() []string {
	return append(Clean(), "GIT_DIR="+n.dir, "GIT_OBJECT_DIRECTORY="+n.objects)
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
	cmd.Env = withConfig(n.env(), kv, true)
	cmd.Dir, cmd.Stdin = dir, ids
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
