package gitenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// ErrConfig: git could not read a repository's configuration.
var ErrConfig = errors.New("cannot read the repository's git configuration")

// Command is git running args in the repository at dir (a working tree
// or a git directory), with Clean's environment and a configuration of
// airlock's: every key of Keys, and each sub-named one the repository's
// config (its includes read) gives a value, set to its safe value, so no
// program a repository's config names runs. Reading that config runs
// nothing: `git config` runs no hook, filter or helper.
//
// git runs in a session of its own, without our terminal (detach).
//
// The config is read just before git runs: a key the repository gains in
// between is not overridden, but no command airlock runs on a target
// consults a sub-named key (see Keys); the list is a second wall.
func Command(ctx context.Context, dir string, args ...string) (*exec.Cmd, error) {
	listed, err := listConfig(ctx, dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager", "-C", dir}, args...)...)
	cmd.Env = withConfig(Clean(), append(fixed(nil), overrides(listed)...), false)
	detach(cmd)
	return cmd, nil
}

// listConfig returns the keys of the effective config of the repository
// at dir (the user's files, the repository's and what they include).
func listConfig(ctx context.Context, dir string) ([]string, error) {
	kv, err := ReadConfig(ctx, dir)
	keys := make([]string, len(kv))
	for i, p := range kv {
		keys[i] = p[0]
	}
	return keys, err
}

// configTimeout bounds a read of a repository's config, which takes
// milliseconds: a FIFO it includes has git wait for a writer forever
// (TestConfigReadWaitsOnNoFIFO). A Command whose listing fails runs no
// git.
var configTimeout = 30 * time.Second

// ReadConfig returns the effective config of the repository at dir (a
// working tree or a git directory), key and value, in git's order: the
// user's files, the repository's, what they include. `git config` runs
// no program the config names.
func ReadConfig(ctx context.Context, dir string) ([][2]string, error) {
	ctx, cancel := context.WithTimeout(ctx, configTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "--no-pager", "-C", dir, "config", "--list", "-z")
	cmd.Env = withConfig(Clean(), fixed(nil), false)
	detach(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if ctx.Err() != nil {
			msg = fmt.Sprintf("git config took over %s (%s): does the config, or a file it includes, name a FIFO?", configTimeout, msg)
		}
		return nil, fmt.Errorf("%w in %s: %s", ErrConfig, dir, termsafe.Text(msg))
	}
	var kv [][2]string
	for _, e := range bytes.Split(out, []byte{0}) {
		if k, v, _ := bytes.Cut(e, []byte{'\n'}); len(k) > 0 {
			kv = append(kv, [2]string{string(k), string(v)})
		}
	}
	return kv, nil
}

// overrides gives each listed key that a sub-named key of Keys matches
// its safe value, and so every key of Keys under the same section and
// sub-name (a filter's three commands, a hook's command, events and
// switch), each once.
func overrides(listed []string) [][2]string {
	var kv [][2]string
	seen := map[string]bool{}
	for _, key := range listed {
		for _, k := range Keys {
			if k.How != Set || !strings.Contains(k.Name, ".*.") || !Match(k.Name, key) {
				continue
			}
			section, _, sub := cutKey(key)
			for _, sib := range Keys {
				ss, name, _ := cutKey(sib.Name)
				if sib.How != Set || !strings.Contains(sib.Name, ".*.") || !strings.EqualFold(ss, section) {
					continue
				}
				full := section + "." + sub + "." + name
				if !seen[full] {
					seen[full] = true
					kv = append(kv, [2]string{full, sib.Value})
				}
			}
		}
		for _, k := range Keys {
			if k.How == Set && strings.Count(k.Name, ".") == 1 && strings.HasSuffix(k.Name, ".*") && Match(k.Name, key) && !seen[key] {
				seen[key] = true
				kv = append(kv, [2]string{key, k.Value})
			}
		}
	}
	return kv
}

// Match reports whether config key (as git lists it: section and name in
// any case, a sub-name as written) is one pattern names: "a.*.c" is any
// sub-name of section a's c, "a.*" any name of section a without one,
// anything else the key itself.
func Match(pattern, key string) bool {
	ps, pv, _ := cutKey(pattern)
	ks, kv, ksub := cutKey(key)
	if !strings.EqualFold(ps, ks) {
		return false
	}
	switch {
	case strings.Count(pattern, ".") == 1 && pv == "*":
		return ksub == "" && strings.Count(key, ".") == 1
	case strings.Contains(pattern, ".*."):
		return strings.Count(key, ".") >= 2 && strings.EqualFold(pv, kv)
	}
	return strings.EqualFold(pattern, key)
}

// cutKey splits key into its section, its name and the sub-name between
// them ("" when there is none).
func cutKey(key string) (section, name, sub string) {
	section, rest, _ := strings.Cut(key, ".")
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return section, rest, ""
	}
	return section, rest[i+1:], rest[:i]
}
