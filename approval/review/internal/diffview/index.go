package diffview

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// bigFile is the number of changed lines past which a file is shown
// collapsed until the reviewer opens it: review research finds defects
// caught up to about 400 lines a sitting, and GitHub stops loading a file
// there too.
const bigFile = 400

// diffIndex is a push's diff as the full-screen view reads it: the text
// as it is, the offset of every line, and each file's range of lines. It
// is built in one pass over the text and holds no copy of it, so a view
// of a 20,000-line push costs its lines' offsets and not a second diff.
type diffIndex struct {
	text  string
	lines []int      // lines[i] is where line i starts; lines[len-1] is len(text)
	files []diffFile // in the diff's order
	// order is the order files are shown in: high risk first, then
	// medium, then the rest in the diff's order.
	order        []int
	high, medium int // how many files of each lead the order
	added, dels  int
}

// diffFile is one "diff --git" section of the diff.
type diffFile struct {
	path        string // the worker's, as it is: sanitise before showing
	first, end  int    // its lines, [first, end)
	hunks       int    // its first hunk's line ("@@"): before it, the header
	added, dels int
	from        string // a rename's or copy's old path (sanitise before showing)
	sev         approval.Severity
	// marker, name and labels (its flags, by name) are for the banner
	// and the list, sanitised once.
	marker, name, labels string
}

func (f *diffFile) changed() int { return f.added + f.dels }
func (f *diffFile) big() bool    { return f.changed() > bigFile }

// newDiffIndex indexes r's diff and orders its files by r's flags.
func newDiffIndex(r *approval.Request, words Words) *diffIndex {
	ix := &diffIndex{text: r.Diff}
	text := r.Diff
	n := strings.Count(text, "\n") + 2
	ix.lines = make([]int, 0, n)
	var cur *diffFile
	inHunk := false
	for at := 0; at < len(text); {
		end := strings.IndexByte(text[at:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += at
		}
		line := text[at:end]
		no := len(ix.lines)
		ix.lines = append(ix.lines, at)
		switch {
		case strings.HasPrefix(line, "diff --git "):
			if cur != nil {
				cur.end = no
			}
			ix.files = append(ix.files, diffFile{path: diffPath(line), first: no, hunks: -1})
			cur, inHunk = &ix.files[len(ix.files)-1], false
		case cur == nil:
			// Text before the first file (none from airlock's own
			// diff): a section of its own, so that it is shown too.
			ix.files = append(ix.files, diffFile{path: "(before the first file)", first: no, hunks: -1})
			cur = &ix.files[len(ix.files)-1]
		case cur.hunks < 0 && movedLine(line, cur):
			// A rename's or copy's header names both paths (moved.go).
		case strings.HasPrefix(line, "@@"):
			if cur.hunks < 0 {
				cur.hunks = no
			}
			inHunk = true
		case inHunk && strings.HasPrefix(line, "+"):
			cur.added++
		case inHunk && strings.HasPrefix(line, "-"):
			cur.dels++
		}
		at = end + 1
	}
	ix.lines = append(ix.lines, len(text))
	if cur != nil {
		cur.end = len(ix.lines) - 1
	}
	ix.rank(r, words)
	return ix
}

// line is line i's text, without its newline.
func (ix *diffIndex) line(i int) string {
	s := ix.text[ix.lines[i]:ix.lines[i+1]]
	return strings.TrimSuffix(s, "\n")
}

// lineAt is the line that holds byte offset off.
func (ix *diffIndex) lineAt(off int) int {
	return sort.Search(len(ix.lines)-1, func(i int) bool { return ix.lines[i+1] > off })
}

// rank sets each file's severity from r's flags (the highest flag on its
// path) and orders the files risk first, the diff's order kept within a
// rank.
func (ix *diffIndex) rank(r *approval.Request, words Words) {
	sev := map[string]approval.Severity{}
	labels := map[string][]string{}
	for _, f := range r.Flags {
		if f.Path != "" && f.Severity > sev[f.Path] {
			sev[f.Path] = f.Severity
		}
		if l := words.Label(f); f.Path != "" && !slices.Contains(labels[f.Path], l) {
			labels[f.Path] = append(labels[f.Path], l)
		}
	}
	ix.order = make([]int, len(ix.files))
	for i := range ix.files {
		f := &ix.files[i]
		f.sev = sev[f.path]
		f.marker = "  "
		if f.sev != 0 {
			f.marker = words.Marker(f.sev)
		}
		f.name = termsafe.Line(f.path)
		if f.from != "" {
			f.name += " <- " + termsafe.Line(f.from)
		}
		if l := labels[f.path]; len(l) > 0 {
			f.labels = "! " + termsafe.Line(strings.Join(l, ", "))
		}
		ix.order[i] = i
		ix.added += f.added
		ix.dels += f.dels
		switch f.sev {
		case approval.High:
			ix.high++
		case approval.Medium:
			ix.medium++
		}
	}
	rankOf := func(s approval.Severity) int {
		switch s {
		case approval.High:
			return 0
		case approval.Medium:
			return 1
		}
		return 2
	}
	sort.SliceStable(ix.order, func(a, b int) bool {
		return rankOf(ix.files[ix.order[a]].sev) < rankOf(ix.files[ix.order[b]].sev)
	})
}

// diffPath is the path a "diff --git a/P b/P" line names. Both sides
// name the same path but in a rename or copy (whose "rename to" line
// then names it: movedLine), so the line is
// cut in the middle, whatever spaces or " b/" the name holds; a name git
// quoted (a control character, a byte outside ASCII) is unquoted.
func diffPath(line string) string {
	rest := strings.TrimPrefix(line, "diff --git ")
	side := rest
	if len(rest)%2 == 1 {
		side = rest[:len(rest)/2]
	}
	if strings.HasPrefix(side, `"`) {
		if u, err := strconv.Unquote(side); err == nil {
			side = u
		}
	}
	return strings.TrimPrefix(side, "a/")
}
