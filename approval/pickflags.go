package approval

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/change"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// PickFlags are the flags of r that are true of what a pick lands: paths
// for a pick by file, accept for one by hunk (as Decision.Paths and
// Accept). A flag about a file is kept when the pick lands a change to
// that file; when only some of the file's hunks or lines land, the flags
// of its content (a secret, deceptive characters) are kept only when the
// lines that land raise them. A flag about a commit's message is kept
// when that commit lands with the worker's message. The flag that the
// diff is too large to approve whole is the reason to pick, so it goes.
// The flags of the push as a whole (its branch, the base's commits) stay.
func PickFlags(r *Request, paths []string, accept []Accepted) []Flag {
	whole, added, withMessage, modeLands := pickLands(r, paths, accept)
	workers := map[string]bool{}
	for _, c := range r.Commits {
		workers[c.ID.String()] = true
	}
	var out []Flag
	for _, f := range r.Flags {
		switch {
		case f.Code == FlagTooLarge:
			continue
		case f.Commit != "":
			// A base commit's lands whatever is picked; a worker's only
			// when something of it lands, under the worker's message.
			if accept != nil && workers[f.Commit] && !withMessage[f.Commit] {
				continue
			}
		case f.Code == FlagExecutable && !whole[f.Path] && !modeLands[f.Path]:
			// A change taken in part keeps the file's mode (staging's
			// acceptFile, as git add -p asks a mode change apart): the
			// file lands, not executable.
			continue
		case f.Path != "":
			if !whole[f.Path] {
				lines, ok := added[f.Path]
				if !ok || !linesRaise(f, lines) {
					continue
				}
			}
		}
		out = append(out, f)
	}
	// A message the reviewer edited is checked as it lands: a body kept
	// may still hide what the subject no longer does.
	for _, a := range accept {
		if a.Message != "" {
			out = append(out, messageFlags(nil, []CommitInfo{{ID: a.Commit, Message: a.Message}})...)
		}
	}
	SortFlags(out)
	return out
}

// pickLands is what a pick lands: the files whose whole change lands,
// the lines added to the others (by path; present when any hunk of the
// file lands), the commits that land with the worker's own message, and
// the files whose new mode lands though not picked whole: every hunk of
// them taken whole (the commit's version lands as it is), or made by the
// commit (a new file is made with its mode).
func pickLands(r *Request, paths []string, accept []Accepted) (whole map[string]bool, added map[string][]string, withMessage, modeLands map[string]bool) {
	whole, added, withMessage, modeLands = map[string]bool{}, map[string][]string{}, map[string]bool{}, map[string]bool{}
	if accept == nil {
		for _, p := range paths {
			whole[p] = true
		}
		return
	}
	for _, a := range accept {
		var diffs []FileDiff
		for _, c := range r.Commits {
			if c.ID == a.Commit {
				diffs = c.Files
			}
		}
		lands := false
		for _, af := range a.Files {
			if af.Whole {
				whole[af.Path], lands = true, true
				continue
			}
			for _, fd := range diffs {
				if fd.Path != af.Path {
					continue
				}
				if len(af.Hunks) > 0 && (fd.Op == change.Create || allHunks(af.Hunks, fd.Hunks)) {
					modeLands[af.Path] = true
				}
				for _, h := range af.Hunks {
					if h.Index >= 0 && h.Index < len(fd.Hunks) {
						added[af.Path] = append(added[af.Path], addedLines(fd.Hunks[h.Index], h.Lines)...)
						lands = true
					}
				}
			}
		}
		if lands && a.Message == "" {
			withMessage[a.Commit.String()] = true
		}
	}
	return
}

// addedLines are the "+" lines of a hunk that land: all, or those of
// lines (numbered among the hunk's changed lines, as AcceptedHunk.Lines).
func addedLines(hunk string, lines []int) []string {
	keep := map[int]bool{}
	for _, i := range lines {
		keep[i] = true
	}
	var out []string
	n := 0
	for _, l := range strings.Split(hunk, "\n")[1:] {
		if !strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "-") {
			continue
		}
		if strings.HasPrefix(l, "+") && (lines == nil || keep[n]) {
			out = append(out, l[1:])
		}
		n++
	}
	return out
}

// linesRaise reports whether a flag about a file's content is true of
// the lines of it that land; a flag not about content (its mode, what
// the file is) is true whenever any of it lands.
func linesRaise(f Flag, lines []string) bool {
	text := []byte(strings.Join(lines, "\n"))
	switch f.Code {
	case FlagSecret:
		return len(findSecrets(nil, text)) > 0
	case FlagTerminal:
		return termsafe.Hazard(text) != "" || strings.ContainsRune(string(text), 0)
	}
	return true
}

// allHunks reports whether hunks take each of a file's hunks whole: every
// one named, with no lines or all its changed lines (as staging's
// acceptsAll).
func allHunks(hunks []AcceptedHunk, fileHunks []string) bool {
	seen := map[int]bool{}
	for _, h := range hunks {
		if h.Index < 0 || h.Index >= len(fileHunks) {
			continue
		}
		if len(h.Lines) != 0 {
			lines := map[int]bool{}
			for _, l := range h.Lines {
				lines[l] = true
			}
			for i := range changedLines(fileHunks[h.Index]) {
				if !lines[i] {
					return false
				}
			}
		}
		seen[h.Index] = true
	}
	return len(seen) == len(fileHunks)
}

// changedLines counts a hunk's "+" and "-" lines.
func changedLines(hunk string) int {
	n := 0
	for _, l := range strings.Split(hunk, "\n")[1:] {
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
			n++
		}
	}
	return n
}
