package review

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/width"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// Terminal is what the reviewer's prompt talks through. The real one is a
// TTY (see NewTTY); tests script a fake.
type Terminal interface {
	io.Writer
	// ReadKey reads one keypress.
	ReadKey() (rune, error)
	// ReadLine shows prompt and reads a line of text.
	ReadLine(prompt string) (string, error)
	// Page shows long text, through the user's pager on a terminal.
	Page(text string) error
	// IsTerminal reports whether a person is there to answer.
	IsTerminal() bool
	// Color reports whether to use ANSI colours.
	Color() bool
}

// ErrNoTerminal: the prompt refuses to run where nobody can answer.
var ErrNoTerminal = errors.New("no terminal to ask a reviewer on: refusing to decide (run `airlock review` in a terminal, or set a policy)")

const (
	ansiReset  = "\x1b[m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiGreen  = "\x1b[32m"
	ansiCyan   = "\x1b[36m"
	ansiDim    = "\x1b[2m"
)

type painter bool

func (p painter) paint(code, s string) string {
	if !p || s == "" {
		return s
	}
	return code + s + ansiReset
}

// flagLabel is a flag's short name, for the line it concerns.
func flagLabel(f approval.Flag) string {
	switch f.Code {
	case approval.FlagProtectedRef:
		return "protected branch"
	case approval.FlagNewRef:
		return "new branch"
	case approval.FlagDeletions:
		return "deleted outside the changed directories"
	case approval.FlagCI:
		return "CI or hook file"
	case approval.FlagBinary:
		return "binary"
	case approval.FlagLarge:
		return "large"
	case approval.FlagExecutable:
		return "made executable"
	case approval.FlagSymlink:
		return "symlink"
	case approval.FlagSecret:
		return "looks like a secret"
	case approval.FlagAutorun:
		return "runs on its own"
	case approval.FlagTerminal:
		return "deceptive content"
	}
	return f.Code
}

func marker(s approval.Severity) string {
	switch s {
	case approval.High:
		return "!!"
	case approval.Medium:
		return "! "
	}
	return ". "
}

// Render writes the summary a reviewer sees first: risks, target, commits
// and files, and the keys. Every string in it that a worker or a
// repository supplied goes through termsafe first; the only escape
// sequences written are airlock's own colours.
func Render(w io.Writer, r *approval.Request, color bool) error { return RenderRows(w, r, color, 0) }

// RenderRows is Render for a terminal of rows lines of 80 columns (rows
// 0: no limit): the file list is shortened so that the risks and the keys
// are on the screen together, whatever the push holds.
func RenderRows(w io.Writer, r *approval.Request, color bool, rows int) error {
	return renderRows(w, r, color, screenSize{rows, 80}, false)
}

// screenSize is the terminal's, in character cells; rows 0 is no limit.
type screenSize struct{ rows, cols int }

// sizeOf is t's size, as far as it can say.
func sizeOf(t Terminal) screenSize {
	sz := screenSize{cols: 80}
	if rt, ok := t.(interface{ Rows() int }); ok {
		sz.rows = rt.Rows()
	}
	if ct, ok := t.(interface{ Cols() int }); ok && ct.Cols() > 0 {
		sz.cols = ct.Cols()
	}
	return sz
}

// renderRows is RenderRows, with the key back to the list when back.
func renderRows(w io.Writer, r *approval.Request, color bool, size screenSize, back bool) error {
	if r.Kind == approval.KindNetwork {
		return renderNetwork(w, r, color, back)
	}
	p := painter(color)
	line := termsafe.Line
	var b strings.Builder
	b.WriteString(p.paint(ansiBold, "git_push") + "\n")
	risks := groupFlags(r.Flags)
	if len(risks) > 0 {
		b.WriteString("  " + p.paint(ansiBold, "Risks:") + "\n")
		for _, f := range risks {
			code := ansiYellow
			if f.Severity == approval.High {
				code = ansiRed + ansiBold
			} else if f.Severity == approval.Low {
				code = ansiDim
			}
			b.WriteString("    " + p.paint(code, marker(f.Severity)+" "+line(f.Message)) + "\n")
		}
	}
	inline := func(path string) string {
		var labels []string
		sev := approval.Severity(0)
		for _, f := range r.Flags {
			if f.Path == path && (path != "" || f.Code == approval.FlagProtectedRef || f.Code == approval.FlagNewRef) {
				labels = append(labels, flagLabel(f))
				sev = max(sev, f.Severity)
			}
		}
		if len(labels) == 0 {
			return ""
		}
		code := ansiYellow
		if sev == approval.High {
			code = ansiRed + ansiBold
		}
		return "   " + p.paint(code, "! "+strings.Join(uniq(labels), ", "))
	}
	fmt.Fprintf(&b, "  Target: %s (branch: %s)%s\n", line(r.Describe), line(approval.ShortRef(r.Ref)), inline(""))
	if r.NewRef || r.Old.IsZero() {
		b.WriteString("  Base:   none: the branch is new\n")
	} else {
		fmt.Fprintf(&b, "  Base:   %s (the branch's current commit)\n", shortid.HashOr(r.Old, "(none)"))
	}
	switch n := len(r.Commits); {
	case n == 1:
		fmt.Fprintf(&b, "  Commit: %s \"%s\" (%s)\n", p.paint(ansiYellow, shortid.HashOr(r.Commits[0].ID, "(none)")), line(subject(r.Commits[0].Message)), r.Summary())
	default:
		fmt.Fprintf(&b, "  Commits: %d, %s..%s (%s)\n", n, shortid.HashOr(r.Commits[0].ID, "(none)"), shortid.HashOr(r.Commits[n-1].ID, "(none)"), r.Summary())
		for _, c := range r.Commits {
			fmt.Fprintf(&b, "    %s \"%s\"\n", p.paint(ansiYellow, shortid.HashOr(c.ID, "(none)")), line(subject(c.Message)))
		}
		b.WriteString("  Files:\n")
	}
	var lines []string
	for _, f := range r.Files {
		sign := f.Op.Sign()
		switch f.Op {
		case change.Create:
			sign = p.paint(ansiGreen, sign)
		case change.Delete:
			sign = p.paint(ansiRed, sign)
		}
		lines = append(lines, fmt.Sprintf("    %s %s (%s)%s\n", sign, line(f.Path), bytesize.Format(f.Size), inline(f.Path)))
	}
	more := 0
	if size.rows > 0 {
		// What is left of the screen after the lines above, the keys
		// and the line the reviewer types on. A line wider than the
		// terminal takes more than one row: counting lines alone would
		// scroll the risks off the top.
		room := size.rows - screenRows(b.String(), size.cols) - screenRows(keysLine(r, p, back), size.cols) - 2
		used, fit := 0, 0
		for i, l := range lines {
			need := screenRows(l, size.cols)
			if i < len(lines)-1 {
				need++ // the line that says how many more there are
			}
			if used+need > room {
				break
			}
			used += screenRows(l, size.cols)
			fit++
		}
		lines, more = lines[:fit], len(lines)-fit
	}
	for _, l := range lines {
		b.WriteString(l)
	}
	if more > 0 {
		fmt.Fprintf(&b, "    ... and %d more files: [d]iff shows them all\n", more)
	}
	b.WriteString("  " + keysLine(r, p, back) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// groupFlags keeps the risks list short: past three flags of one kind,
// the rest of that kind is one line naming their files, so a push of many
// files cannot push the other risks off the screen.
func groupFlags(flags []approval.Flag) []approval.Flag {
	count := map[string]int{}
	for _, f := range flags {
		count[f.Code]++
	}
	var out []approval.Flag
	shown := map[string]int{}
	var rest map[string][]string
	for _, f := range flags {
		switch n := shown[f.Code]; {
		case n < 3 || count[f.Code] == 4:
			out = append(out, f)
		case n == 3:
			out = append(out, approval.Flag{Code: f.Code, Severity: f.Severity})
			fallthrough
		default:
			if rest == nil {
				rest = map[string][]string{}
			}
			if f.Path != "" {
				rest[f.Code] = append(rest[f.Code], f.Path)
			}
		}
		shown[f.Code]++
	}
	for i, f := range out {
		if f.Message != "" {
			continue
		}
		msg := fmt.Sprintf("and %d more: %s", count[f.Code]-3, flagLabel(f))
		if paths := rest[f.Code]; len(paths) > 0 {
			const named = 4
			list := strings.Join(paths[:min(named, len(paths))], ", ")
			if len(paths) > named {
				list += fmt.Sprintf(" and %d others", len(paths)-named)
			}
			msg += " (" + list + ")"
		}
		out[i].Message = msg
	}
	return out
}

func keysLine(r *approval.Request, p painter, back bool) string {
	k := func(key, rest string) string { return "[" + p.paint(ansiBold, key) + "]" + rest }
	parts := []string{k("d", "iff"), k("a", "pprove"), k("r", "eject")}
	if r.Pickable {
		parts = append(parts, k("p", "ick files"))
	}
	if back {
		parts = append(parts, k("l", "ist"))
	}
	parts = append(parts, k("?", "help"))
	return strings.Join(parts, "  ")
}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func subject(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	return clip(line, 72)
}

const helpText = `  d  show the full diff (in your pager); then come back here
  a  approve: the push goes ahead exactly as shown
  r  reject: nothing is pushed; you may give a reason, which the worker is told
  p  pick files: push only the files you choose, in a new commit; the others
     stay in the sandbox, unstaged, and nothing is lost
  ?  this help
`

const helpBack = "  l  back to the list of waiting requests, deciding nothing\n"

// errBack: the reviewer went back to the list without deciding.
var errBack = errors.New("back to the list")

// Prompt shows r to a reviewer and returns their decision. It refuses to
// run without a terminal. Approving a push with high risks asks for a
// second, explicit yes.
func Prompt(t Terminal, r *approval.Request) (approval.Decision, error) { return prompt(t, r, false) }

// prompt is Prompt; with back, the key l goes back to the list (errBack).
func prompt(t Terminal, r *approval.Request, back bool) (approval.Decision, error) {
	if !t.IsTerminal() {
		return approval.Decision{}, ErrNoTerminal
	}
	if r.Kind == approval.KindNetwork {
		return promptNetwork(t, r, back)
	}
	p := painter(t.Color())
	if err := renderRows(t, r, t.Color(), sizeOf(t), back); err != nil {
		return approval.Decision{}, err
	}
	keys := func() string { return keysLine(r, p, back) }
	for {
		key, err := t.ReadKey()
		if err != nil {
			return approval.Decision{}, err
		}
		switch key {
		case 'a', 'A':
			if r.DiffTruncated {
				fmt.Fprintln(t, "  This push is too large to show whole, so it cannot be approved whole: [p]ick files to push fewer. "+keys())
				continue
			}
			if !confirmHigh(t, r, p) {
				fmt.Fprintln(t, "  Not approved. "+keys())
				continue
			}
			return approval.Decision{Request: r.ID, Verdict: approval.Approve, By: "reviewer"}, nil
		case 'r', 'R':
			reason, err := t.ReadLine("  Reason (optional; the worker is told): ")
			if err != nil {
				return approval.Decision{}, err
			}
			return approval.Decision{Request: r.ID, Verdict: approval.Reject, Reason: strings.TrimSpace(reason), By: "reviewer"}, nil
		case 'd', 'D':
			// Full screen where the terminal can (view.go), else the pager.
			if shown, err := viewDiff(t, r); err != nil {
				return approval.Decision{}, err
			} else if !shown {
				if err := t.Page(colorDiff(r.Diff, t.Color())); err != nil {
					fmt.Fprintf(t, "  Could not show the diff: %v\n", err)
				}
			}
			fmt.Fprintln(t, "  "+keys())
		case 'p', 'P':
			if !r.Pickable {
				fmt.Fprintln(t, "  Files cannot be picked for this push. "+keys())
				continue
			}
			paths, err := pickFiles(t, r)
			if err != nil {
				return approval.Decision{}, err
			}
			if paths == nil {
				fmt.Fprintln(t, "  "+keys())
				continue
			}
			if !confirmHigh(t, r, p) {
				fmt.Fprintln(t, "  Not approved. "+keys())
				continue
			}
			return approval.Decision{Request: r.ID, Verdict: approval.Pick, Paths: paths, By: "reviewer"}, nil
		case '?', 'h', 'H':
			io.WriteString(t, helpText)
			if back {
				io.WriteString(t, helpBack)
			}
			fmt.Fprintln(t, "  "+keys())
		case '\r', '\n', ' ':
		case 'l', 'L':
			if back {
				return approval.Decision{}, errBack
			}
			fallthrough
		default:
			fmt.Fprintf(t, "  Unknown key %q. Press ? for help.\n", key)
		}
	}
}

// confirmHigh asks again when the push has a high-severity risk.
func confirmHigh(t Terminal, r *approval.Request, p painter) bool {
	var high []string
	for _, f := range r.Flags {
		if f.Severity == approval.High {
			high = append(high, f.Message)
		}
	}
	if len(high) == 0 {
		return true
	}
	fmt.Fprintf(t, "  %s %s\n", p.paint(ansiRed+ansiBold, "High risk:"), termsafe.Line(strings.Join(high, "; ")))
	answer, err := t.ReadLine("  Type yes to approve anyway: ")
	return err == nil && strings.EqualFold(strings.TrimSpace(answer), "yes")
}

// pickFiles lists the files and reads the reviewer's choice ("1,3-4"). nil
// means they went back.
func pickFiles(t Terminal, r *approval.Request) ([]string, error) {
	for i, f := range r.Files {
		fmt.Fprintf(t, "  %3d  %s %s\n", i+1, f.Op.Sign(), termsafe.Line(f.Path))
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
