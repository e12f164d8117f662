package review

import (
	"bufio"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/width"

	"github.com/airlock-dev/airlock/approval"
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

// colorDiff colours a plain unified diff the way git does for its common
// lines.
//
// The diff is a worker's and a repository's text: it is sanitised first, so
// that what reaches the pager (or the terminal, without one) holds no
// escape sequence but airlock's colours, and less -R cannot be told to hide
// lines.
func colorDiff(diff string, color bool) string {
	diff = termsafe.Text(diff)
	if !color {
		return diff
	}
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(diff))
	sc.Buffer(nil, 64<<20)
	inHeader := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "diff --git "):
			inHeader = true
			b.WriteString(ansiBold + line + ansiReset)
		case inHeader && !strings.HasPrefix(line, "@@") && !strings.HasPrefix(line, "Binary files"):
			b.WriteString(ansiBold + line + ansiReset)
		case strings.HasPrefix(line, "@@"):
			inHeader = false
			if end := strings.Index(line[2:], "@@"); end >= 0 {
				b.WriteString(ansiCyan + line[:end+4] + ansiReset + line[end+4:])
			} else {
				b.WriteString(line)
			}
		case strings.HasPrefix(line, "+"):
			b.WriteString(ansiGreen + line + ansiReset)
		case strings.HasPrefix(line, "-"):
			b.WriteString(ansiRed + line + ansiReset)
		default:
			inHeader = false
			b.WriteString(line)
		}
		b.WriteByte('\n')
	}
	return b.String()
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
