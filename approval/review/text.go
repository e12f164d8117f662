package review

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/width"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/internal/diffview"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// pickFiles lists the files and reads the reviewer's choice ("1,3-4"). nil
// means they went back; with back, l goes back to the list (errBack).
func pickFiles(t Terminal, r *approval.Request, back bool) ([]string, error) {
	for i, f := range r.Files {
		fmt.Fprintf(t, "  %3d  %s %s%s\n", i+1, f.Op.Sign(), termsafe.Line(f.Path), movedWords(f))
	}
	for {
		line, err := t.ReadLine("  Files to push (e.g. 1,3-4; empty to go back): ")
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return nil, nil
		}
		if back && strings.EqualFold(line, "l") {
			return nil, errBack
		}
		idx, err := parseSelection(line, len(r.Files))
		if err != nil {
			fmt.Fprintf(t, "  %v\n", err)
			continue
		}
		paths := make([]string, len(idx))
		for i, n := range idx {
			paths[i] = r.Files[n-1].Path
		}
		return paths, nil
	}
}

// parseSelection reads "1,3-4" into sorted, distinct numbers in 1..n.
func parseSelection(s string, n int) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || a < 1 || b > n || a > b {
			return nil, fmt.Errorf("%q is not a file number or range between 1 and %d", part, n)
		}
		for i := a; i <= b; i++ {
			seen[i] = true
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out, nil
}

// colorDiff colours a unified diff as the full-screen view draws it
// (internal/diffview's Colorize): git's colours, the changed words of a
// removed line and the added line paired with it, and syntax colour by
// path's name (or each file's, for a whole diff) on colors (8 or 256; 0:
// none).
//
// The diff is a worker's and a repository's text: every fragment is
// sanitised, so that what reaches the pager (or the terminal, without
// one) holds no escape sequence but airlock's colours, and less -R cannot
// be told to hide lines.
func colorDiff(diff, path string, colors int) string {
	return diffview.Colorize(diff, path, colors)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// screenRows is how many rows of a terminal cols wide text takes: each
// line at least one, more when it is wider than the terminal. Escape
// sequences (airlock's own colours: nothing else reaches the terminal)
// take none; wide characters two cells, combining marks none.
func screenRows(text string, cols int) int {
	if cols <= 0 {
		cols = 80
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		w := cellWidth(sgr.ReplaceAllString(l, ""))
		n += max(1, (w+cols-1)/cols)
	}
	return n
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

func cellWidth(s string) int {
	w := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), r == '\u200b':
		case width.LookupRune(r).Kind() == width.EastAsianWide || width.LookupRune(r).Kind() == width.EastAsianFullwidth:
			w += 2
		default:
			w++
		}
	}
	return w
}
