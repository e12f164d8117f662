// Package reviewkey keeps a reviewer's signing key (an nkeys user key,
// ed25519) in a file of the reviewer's own, and reads the public keys a
// server trusts (serve --reviewer-key).
//
// The key's file holds the seed ("SU…") and nothing else. It is created
// with mode 0600 on first use, never read or written through a symlink,
// and refused when it is open to the group or others or is another
// user's: whoever reads it decides pushes.
package reviewkey

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nats-io/nkeys"
)

// FileName is the key's file in airlock's state directory.
const FileName = "reviewer.nk"

// maxFile bounds what is read of a key's file or a file of keys.
const maxFile = 1 << 20

// Load reads the key at path, checked.
func Load(path string) (nkeys.KeyPair, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0) // a FIFO never blocks
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("the reviewer's key %s is a symlink; airlock reads a key only from a file of its own: replace the link with the file", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch st, ok := fi.Sys().(*syscall.Stat_t); {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("the reviewer's key %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("the reviewer's key %s is open to other users (mode %v), so anyone of them may decide pushes: make it private (chmod 600 %s), or make a new key if it may have been read", path, fi.Mode().Perm(), path)
	case ok && int(st.Uid) != os.Getuid():
		return nil, fmt.Errorf("the reviewer's key %s belongs to another user; use a key of your own", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile))
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err == nil {
		if pub, perr := kp.PublicKey(); perr != nil || !nkeys.IsValidPublicUserKey(pub) {
			err = errors.New("not a user key")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the reviewer's key %s is not an nkeys user seed (SU…: %v); remove it to have airlock review make a new one", path, err)
	}
	return kp, nil
}

// LoadOrCreate is Load, or when path does not exist a new key written
// there (its directory made private if missing); created says which.
func LoadOrCreate(path string) (kp nkeys.KeyPair, created bool, err error) {
	kp, err = Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return kp, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	kp, err = nkeys.CreateUser()
	if err != nil {
		return nil, false, err
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, false, err
	}
	// Written whole to a file of its own, then linked into place: a
	// process that finds the key (a server and a reviewer started at
	// once) never reads half of one, and link never follows a symlink
	// at path.
	f, err := os.CreateTemp(filepath.Dir(path), ".reviewer-*.nk") // mode 0600
	if err != nil {
		return nil, false, fmt.Errorf("making the reviewer's key: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }() // linked into place, or never: gone either way
	_, werr := f.Write(append(seed, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Link(f.Name(), path)
	}
	if errors.Is(werr, fs.ErrExist) {
		// Another process made it meanwhile (or a link is there, which
		// Load refuses): its key is the one.
		kp, err = Load(path)
		return kp, false, err
	}
	if werr != nil {
		return nil, false, fmt.Errorf("making the reviewer's key: %w", werr)
	}
	return kp, true, nil
}

// Public is kp's public key.
func Public(kp nkeys.KeyPair) string {
	pub, _ := kp.PublicKey() // a key Load or LoadOrCreate returned has one
	return pub
}

// Trusted reads --reviewer-key's values: each a reviewer's public key
// (U…), or a file of them (one a line; blank lines and # comments
// skipped) that only this user or root may write.
func Trusted(values []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(k, where string) error {
		if strings.HasPrefix(k, "S") {
			// Never echoed: a seed is the reviewer's secret.
			return fmt.Errorf("--reviewer-key: %sa seed (S…), the reviewer's secret, not its public key: give the public key (airlock review --print-key shows it), and make a new key if the seed was shared", where)
		}
		if !nkeys.IsValidPublicUserKey(k) {
			what := "is not"
			if where == "" {
				what = "is neither a file of keys nor"
			}
			return fmt.Errorf("--reviewer-key: %s%.60q %s a reviewer's public key (U…, 56 characters: airlock review --print-key shows it)", where, k, what)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
		return nil
	}
	for _, v := range values {
		// A public key is a key, never the name of a file: a file named
		// so in the working directory is anyone's who may write there.
		if _, err := os.Stat(v); nkeys.IsValidPublicUserKey(v) || err != nil && !strings.Contains(v, "/") {
			// Not a file: a key (or a mistake add words).
			if err := add(v, ""); err != nil {
				return nil, err
			}
			continue
		}
		if err := readKeys(v, add); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readKeys adds each key of the file of keys at path, which only its
// owner (this user, or root) may change: whoever may write it, or
// replace it in its directory, chooses who decides pushes.
func readKeys(path string, add func(k, where string) error) error {
	// Non-blocking: a FIFO would stop the start until someone wrote to
	// it; it is refused as not a regular file instead.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("--reviewer-key %s: give a public key (U…) or a file of them: %w", path, err)
	}
	defer f.Close()
	if err := checkKeysFile(path, f); err != nil {
		return err
	}
	sc := bufio.NewScanner(io.LimitReader(f, maxFile))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := add(line, fmt.Sprintf("%s line %d: ", path, n)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--reviewer-key %s: %w", path, err)
	}
	return nil
}

// checkKeysFile refuses a file of keys (f, open at path) that another
// user may write or own, or whose directory another user may write
// without the sticky bit (and so swap the file for theirs).
func checkKeysFile(path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("--reviewer-key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("--reviewer-key %s is not a regular file: give a file of public keys, one a line", path)
	}
	if readOnlyMount(f) {
		// A read-only bind mount (examples/fleet's ./reviewers): its
		// owner is the host's, and only the host changes it.
		fi = ownerless{fi}
	}
	if err := ownedSafely(path, "file", fi, 0); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--reviewer-key %s: %w", path, err)
	}
	return ownedSafely(dir, "directory of "+path, di, os.ModeSticky)
}

// ownerless is a FileInfo whose owner is not checked.
type ownerless struct{ os.FileInfo }

func (ownerless) Sys() any { return nil }

// ownedSafely refuses fi (of the file or directory at path, what) when a
// user other than this one and root owns it or may write it; a
// directory with the sticky bit (exempt) may be open to all, as /tmp is.
func ownedSafely(path, what string, fi os.FileInfo, exempt os.FileMode) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("--reviewer-key: the %s %s belongs to another user (uid %d), who could change whom this server trusts: keep the keys in a file and directory of your own or root's", what, path, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && (exempt == 0 || fi.Mode()&exempt == 0) {
		return fmt.Errorf("--reviewer-key: the %s %s may be written by other users (mode %v), who could add their own key: chmod go-w %s", what, path, fi.Mode().Perm(), path)
	}
	return nil
}
