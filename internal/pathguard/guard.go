package pathguard

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/termsafe"

	"golang.org/x/text/unicode/norm"
)

// Limits on names, as on common filesystems and as git accepts.
const (
	MaxPathBytes = 4096 // a whole path, in bytes
	MaxNameBytes = 255  // one path component, in bytes
)

// CheckPath is the path guard: every path a worker names passes through it
// before anything else happens. It accepts a slash-separated path relative to
// the workspace root and returns its components; it refuses, with an *Error
// naming the rule:
//
//   - empty paths, paths over MaxPathBytes and names over MaxNameBytes;
//   - invalid UTF-8, control characters (C0, DEL, C1) and invisible or
//     text-direction characters, which would let a name look like another
//     one in the reviewer's prompt;
//   - absolute paths, drive letters ("C:"), backslashes, and "..", "." and
//     empty segments: there is exactly one spelling of every path;
//   - ".git" at any depth in every disguise git itself refuses (any case,
//     "git~1", trailing dots and spaces, NTFS streams, code points HFS+
//     ignores);
//   - Windows reserved device names ("CON", "nul.txt", "COM1"...).
//
// The deny list (DenyList) is a separate, configurable layer on top.
func CheckPath(name string) ([]string, error) {
	if err := CheckChars(name); err != nil {
		return nil, err
	}
	if name[0] == '/' {
		return nil, Refuse(name, RuleAbsolute, ErrOutsideSandbox,
			"paths are relative to the workspace root; drop the leading slash: %q",
			suggest(strings.TrimLeft(name, "/")))
	}
	if hasDriveLetter(name) {
		return nil, Refuse(name, RuleDriveLetter, ErrOutsideSandbox,
			"drive letters name the host's disks, which the sandbox cannot reach; use a path relative to the workspace root")
	}
	comps := strings.Split(name, "/")
	// ".." is checked across the whole path first: a traversal attempt is
	// reported as one even when it also has other flaws.
	for _, c := range comps {
		if c == ".." {
			return nil, Refuse(name, RuleDotDot, ErrOutsideSandbox,
				`".." segments are not allowed; name the file from the workspace root, e.g. "docs/notes.md"`)
		}
	}
	for _, c := range comps {
		switch c {
		case ".":
			return nil, Refuse(name, RuleDot, ErrInvalidPath,
				`"." segments are not allowed; name the file from the workspace root without "./"`)
		case "":
			return nil, Refuse(name, RuleEmptySegment, ErrInvalidPath,
				"the path has an empty segment (a doubled or trailing slash); write it with single slashes between names")
		}
		if err := CheckName(name, c); err != nil {
			return nil, err
		}
	}
	return comps, nil
}

// CheckChars applies the rules that look at a path as a whole string.
func CheckChars(name string) *Error {
	if name == "" {
		return Refuse(name, RuleEmpty, ErrInvalidPath,
			`the path is empty; name a file relative to the workspace root, e.g. "README.md"`)
	}
	if len(name) > MaxPathBytes {
		return Refuse(Truncate(name), RulePathTooLong, ErrInvalidPath,
			"the path is %d bytes, more than the %d allowed; use a shorter path", len(name), MaxPathBytes)
	}
	ascii := true
	for i := 0; i < len(name); i++ {
		b := name[i]
		switch {
		case b >= utf8.RuneSelf:
			ascii = false
		case b < 0x20 || b == 0x7f:
			return controlRefusal(name, rune(b), i)
		case b == '\\':
			return backslashRefusal(name)
		}
	}
	if ascii {
		return nil
	}
	if !utf8.ValidString(name) {
		return Refuse(name, RuleInvalidUTF8, ErrInvalidPath, "the path is not valid UTF-8; use UTF-8 names")
	}
	for i, r := range name {
		if unicode.IsControl(r) {
			return controlRefusal(name, r, i)
		}
	}
	return nil
}

func controlRefusal(name string, r rune, at int) *Error {
	return Refuse(name, RuleControl, ErrInvalidPath,
		"the path contains control character U+%04X at byte %d; names may not contain control characters", r, at)
}

func backslashRefusal(name string) *Error {
	return Refuse(name, RuleBackslash, ErrInvalidPath,
		"backslashes are not separators here; use forward slashes: %q", suggest(strings.ReplaceAll(name, `\`, "/")))
}

// CheckName applies the rules for a single path component.
func CheckName(path, c string) *Error {
	if len(c) > MaxNameBytes {
		return Refuse(Truncate(path), RuleNameTooLong, ErrInvalidPath,
			"a name in the path is %d bytes, more than the %d allowed; use a shorter name", len(c), MaxNameBytes)
	}
	ascii := true
	for i := 0; i < len(c); i++ {
		if c[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	// An ASCII name can only read as .git if it starts with "." or "g", and
	// only be a device if it starts with one of their initials.
	if (!ascii || c[0] == '.' || c[0]|0x20 == 'g') && isGitDir(c) {
		return Refuse(path, RuleGitDir, ErrDenied,
			"%q is git's own directory or a disguise of it; the sandbox holds only your files, and git_stage/git_push manage history", c)
	}
	if strings.IndexByte("cpanlCPANL", c[0]) >= 0 && isReserved(c) {
		return Refuse(path, RuleReserved, ErrInvalidPath,
			"%q is a reserved device name on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9), where a checkout would break; choose another name", c)
	}
	if ascii {
		return nil
	}
	for _, r := range c {
		if isInvisible(r) {
			return Refuse(path, RuleInvisible, ErrInvalidPath,
				"the name %q contains U+%04X, an invisible or text-direction character that would disguise it in review; use visible characters only", c, r)
		}
	}
	return nil
}

// CheckLinkTarget applies the worker's symlink policy to a link's target text:
// relative, in the same clean alphabet as any path. "." and ".." segments are
// allowed here; where they lead is checked when the link is made and each
// time it is followed.
func CheckLinkTarget(link, target string) error {
	if target == "" {
		return Refuse(link, RuleSymlinkTarget, ErrInvalidPath, "the symlink target is empty; give a relative path to a file in the workspace")
	}
	if err := CheckChars(target); err != nil {
		err.Detail = "symlink target: " + err.Detail
		err.Path = link
		return err
	}
	if target[0] == '/' || hasDriveLetter(target) {
		return Refuse(link, RuleSymlinkTarget, ErrOutsideSandbox,
			"symlink target %q is absolute; a symlink must point to a relative path inside the workspace, e.g. %q", target, "../docs/README.md")
	}
	for _, c := range strings.Split(target, "/") {
		if c == "" || c == "." || c == ".." {
			continue
		}
		if err := CheckName(target, c); err != nil {
			err.Detail = "symlink target: " + err.Detail
			err.Path = link
			return err
		}
	}
	return nil
}

func hasDriveLetter(s string) bool {
	return len(s) >= 2 && s[1] == ':' && (s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z')
}

// isGitDir reports whether NTFS, HFS+ or a case-insensitive filesystem would
// open component c as ".git". It is deliberately broader than git's own
// is_ntfs_dotgit/is_hfs_dotgit: any short name "git~N", and case folding that
// also maps the dotless i.
func isGitDir(c string) bool {
	n := Canonical(c)
	if n == ".git" {
		return true
	}
	if rest, ok := strings.CutPrefix(n, "git~"); ok && rest != "" {
		return strings.Trim(rest, "0123456789") == ""
	}
	return false
}

// Canonical is how a name compares on the most forgiving filesystem a
// checkout may land on: NFC, without ignorable code points, case folded,
// without an NTFS stream suffix (":...") and without trailing dots and spaces.
func Canonical(c string) string {
	n := foldName(c)
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	return strings.TrimRight(n, ". ")
}

// foldName normalises a name for comparison: NFC, ignorable code points
// removed, simple case folding. Pure ASCII names take a fast path.
func foldName(c string) string {
	ascii := true
	upper := false
	for i := 0; i < len(c); i++ {
		b := c[i]
		if b >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= b && b <= 'Z' {
			upper = true
		}
	}
	if ascii {
		if !upper {
			return c
		}
		return strings.ToLower(c)
	}
	var b strings.Builder
	for _, r := range norm.NFC.String(c) {
		if isIgnorable(r) {
			continue
		}
		// ToLower(ToUpper(r)) also catches letters whose upper case is
		// ASCII, such as the dotless i (U+0131) and the long s (U+017F).
		b.WriteRune(unicode.ToLower(unicode.ToUpper(r)))
	}
	return b.String()
}

var reservedNames = []string{
	"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$",
	"COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "COM¹", "COM²", "COM³",
	"LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³",
}

// isReserved reports whether Windows treats c as a device: the part before
// the first dot or colon, without trailing spaces, is a device name.
func isReserved(c string) bool {
	base := c
	if i := strings.IndexAny(base, ".:"); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimRight(base, " ")
	if len(base) < 3 || len(base) > 7 {
		return false
	}
	for _, r := range reservedNames {
		if len(r) == len(base) && strings.EqualFold(r, base) {
			return true
		}
	}
	return false
}

func isIgnorable(r rune) bool { return termsafe.Ignorable(r) }

// isInvisible reports characters refused in names: ignorable code points,
// every format character (Cf: joiners, direction marks and overrides,
// interlinear annotation, tags...), and the line and paragraph separators,
// which break a name across lines. It is the same set the terminal
// sanitiser shows escaped.
func isInvisible(r rune) bool { return termsafe.Invisible(r) }

// suggest keeps suggestions in messages printable and short.
func suggest(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// Truncate shortens over-long paths before they are echoed in an error.
func Truncate(s string) string {
	if len(s) <= 120 {
		return s
	}
	cut := 120
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// CheckSymlink applies the part of the symlink policy that needs no tree:
// the link's name is a valid path and may be a symlink for git, and its
// target is relative, in the same alphabet as any path, and does not lead
// above the root from the link's directory. Staging re-checks every symlink
// it commits with it.
func CheckSymlink(link, target string) error {
	comps, err := CheckPath(link)
	if err != nil {
		return err
	}
	if name := comps[len(comps)-1]; IsGitSpecial(name) {
		return Refuse(link, RuleGitSpecialLink, ErrDenied,
			"%s cannot be a symlink: git refuses such trees; write it as a regular file", name)
	}
	if err := CheckLinkTarget(link, target); err != nil {
		return err
	}
	joined := path.Join(path.Dir(link), target)
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return Refuse(link, RuleSymlinkEscape, ErrOutsideSandbox,
			"symlink target %q leads above the workspace root from here; a symlink must point inside the workspace", target)
	}
	return nil
}

// gitSpecialNames may not be symlinks: git fsck rejects such trees.
var gitSpecialNames = map[string]bool{".gitmodules": true, ".gitattributes": true, ".gitignore": true, ".mailmap": true}

// IsGitSpecial reports whether name (one component) is a file git gives a
// meaning to (.gitmodules, .gitattributes, .gitignore, .mailmap), in any
// disguise, which therefore may not be a symlink.
func IsGitSpecial(name string) bool { return gitSpecialNames[Canonical(name)] }
