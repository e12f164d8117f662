package staging

import (
	"bytes"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// maxAttrLine is the longest .gitattributes line git accepts: fsck
// --strict refuses a line of 2048 bytes or more (newline excluded).
const maxAttrLine = 2047

// checkGitFile refuses the contents of git's own files that git fsck
// --strict rejects (measured against git 2.39): .gitmodules entries that
// could make a later clone run commands or write outside the repository,
// and .gitattributes lines too long to parse. It errs on the side of
// refusing: a .gitmodules it cannot judge is refused too.
func checkGitFile(p string, mode filemode.FileMode, data []byte) error {
	name := strings.ToLower(strings.TrimRight(path.Base(p), ". "))
	refuse := func(why string) error {
		return fmt.Errorf("stage %s: %w: %s; git fsck would reject the commit, so it cannot be staged", p, ErrRefusedContent, why)
	}
	switch name {
	case ".gitattributes":
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(line) > maxAttrLine {
				return refuse(fmt.Sprintf("line %d is %d bytes long; git parses .gitattributes lines of at most %d bytes", i+1, len(line), maxAttrLine))
			}
		}
	case ".gitmodules":
		if mode == filemode.Symlink {
			return refuse(".gitmodules is a symlink")
		}
		return checkGitmodules(data, refuse)
	}
	return nil
}

// checkGitmodules reads .gitmodules line by line, as git config does for
// this shape of file, and refuses the values git does: submodule names with
// ".." segments, url or path options that look like command-line flags,
// URLs hiding a line break, and update commands ("!cmd").
func checkGitmodules(data []byte, refuse func(string) error) error {
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		n := i + 1
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			start, end := strings.IndexByte(line, '"'), strings.LastIndexByte(line, '"')
			if start < 0 || end <= start {
				continue
			}
			sub := line[start+1 : end]
			for _, seg := range strings.FieldsFunc(sub, func(r rune) bool { return r == '/' || r == '\\' }) {
				if seg == ".." {
					return refuse(fmt.Sprintf("line %d: submodule name %q has a \"..\" segment", n, sub))
				}
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.Trim(strings.TrimSpace(value), `"`)
		switch key {
		case "url", "path":
			if strings.HasPrefix(value, "-") {
				return refuse(fmt.Sprintf("line %d: submodule %s %q starts with \"-\", which git would read as an option", n, key, value))
			}
			if key == "url" && hidesLineBreak(value) {
				return refuse(fmt.Sprintf("line %d: submodule url %q hides a line break", n, value))
			}
		case "update":
			if strings.HasPrefix(value, "!") {
				return refuse(fmt.Sprintf("line %d: submodule update %q runs a command", n, value))
			}
		}
	}
	return nil
}

func hidesLineBreak(v string) bool {
	if strings.ContainsAny(v, "\n\r") || strings.Contains(v, `\n`) || strings.Contains(v, `\r`) {
		return true
	}
	dec, err := url.PathUnescape(v)
	return err != nil || strings.ContainsAny(dec, "\n\r")
}
