package review

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// errStopPick: the reviewer stopped picking (q); nothing is decided.
var errStopPick = errors.New("stopped picking")

const helpPick = `  y  accept this hunk               n (or x)  leave it out (it stays in the sandbox)
  s  split it: accept or leave out each changed line
  a  accept this hunk and the rest of this file's
  d  leave out this hunk and the rest of this file's
  e  edit this commit's message: a new subject, then k keeps the body
     shown, r replaces it, d drops it (what lands is what is shown)
  q  stop picking: back to the prompt, nothing decided
  ?  this help
`

// pickHunks walks the request file by file, hunk by hunk, as git add -p
// does, the flagged files first (model.Review.Order: the hunks that
// raised a flag are the first asked about), then the rest in the push's
// order, saying each commit as its files come; and returns what the
// reviewer accepted of each commit (commits with nothing accepted left
// out), once they have seen a summary of it and confirmed it. nil, nil:
// they stopped, or accepted nothing, or did not confirm; errBack: they
// went back to the list.
func (a *asker) pickHunks() ([]approval.Accepted, error) {
	t, r := a.t, a.r
	fmt.Fprintln(t, "  Picking hunks, file by file, as git add -p does, the flagged files first (? shows the keys).")
	sel := make([]approval.Accepted, len(r.Commits))
	for ci, c := range r.Commits {
		sel[ci].Commit = c.ID
		if len(c.Files) == 0 {
			a.commitHeading(ci)
			fmt.Fprintln(t, "  (it changes no file: nothing to pick)")
		}
	}
	last := -1
	for _, fr := range a.review().Order() {
		if a.m.Commits[fr.Commit].Base {
			continue // it lands whatever is picked
		}
		if ci := fr.Commit; ci != last {
			a.commitHeading(ci)
			last = ci
		}
		af, err := a.pickFile(&sel[fr.Commit], r.Commits[fr.Commit].Files[fr.File])
		if errors.Is(err, errStopPick) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if af != nil {
			sel[fr.Commit].Files = append(sel[fr.Commit].Files, *af)
		}
	}
	var out []approval.Accepted
	for ci, s := range sel {
		// Each commit's files as the commit has them, whatever order
		// they were asked in.
		slices.SortStableFunc(s.Files, func(x, y approval.AcceptedFile) int {
			return fileIndex(r.Commits[ci], x.Path) - fileIndex(r.Commits[ci], y.Path)
		})
		if len(s.Files) > 0 {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		fmt.Fprintln(t, "  You accepted nothing: to push nothing, [r]eject the push.")
		return nil, nil
	}
	ok, err := a.confirmPick(sel)
	if err != nil || !ok {
		return nil, err
	}
	return out, nil
}

// commitHeading says which commit the files that follow are of.
func (a *asker) commitHeading(ci int) {
	c := a.r.Commits[ci]
	fmt.Fprintf(a.t, "\n  %s %d of %d: %s \"%s\"\n", a.p.paint(ansiBold, "Commit"), ci+1, len(a.r.Commits),
		a.p.paint(ansiYellow, shortid.HashOr(c.ID, "(none)")), termsafe.Line(subject(c.Message)))
}

// fileIndex is the place of path among c's files.
func fileIndex(c approval.CommitInfo, path string) int {
	return slices.IndexFunc(c.Files, func(fd approval.FileDiff) bool { return fd.Path == path })
}

// pickFile asks about each hunk of one file of a commit, and returns what
// was accepted of it (nil: nothing). A file without hunks is accepted
// Whole; one with hunks names them all, even when every one is accepted
// (the server then takes the file whole: its mode, its creation or
// deletion with it), so the record names what was seen by content id.
func (a *asker) pickFile(acc *approval.Accepted, fd approval.FileDiff) (*approval.AcceptedFile, error) {
	t := a.t
	if shown, words := lineEndingFile(fd); shown != "" {
		io.WriteString(t, indent(colorDiff(shown, fd.Path, colorsOf(t)), "  "))
		key, err := a.askKey(acc, fmt.Sprintf("  Its line endings change (%s) in the same hunks as its edits: accept this file whole [y,n,e,q,?]? ", words))
		if err != nil || key != 'y' && key != 'a' {
			return nil, err
		}
		return &approval.AcceptedFile{Path: fd.Path, Whole: true}, nil
	}
	io.WriteString(t, indent(colorDiff(fd.Header, fd.Path, colorsOf(t)), "  "))
	if len(fd.Hunks) == 0 {
		what := "it has no lines to show: a mode change, or an empty file"
		if fd.Binary {
			what = "binary: the diff cannot show what it holds"
		}
		key, err := a.askKey(acc, fmt.Sprintf("  Accept this file whole (%s) [y,n,e,q,?]? ", what))
		if err != nil || key != 'y' && key != 'a' {
			return nil, err
		}
		return &approval.AcceptedFile{Path: fd.Path, Whole: true}, nil
	}
	af := &approval.AcceptedFile{Path: fd.Path}
	var rest rune // 'a' or 'd' once the reviewer decided the rest of the file
	for hi, h := range fd.Hunks {
		hunk := approval.AcceptedHunk{Index: hi, ID: approval.HunkID(h)}
		choice := rest
		if choice == 0 {
			io.WriteString(t, indent(colorDiff(h, fd.Path, colorsOf(t)), "  "))
			var err error
			if choice, hunk.Lines, err = a.askHunk(acc, h, fmt.Sprintf("  (%d/%d) Accept this hunk of %s [y,n,s,a,d,e,q,?]? ", hi+1, len(fd.Hunks), termsafe.Line(fd.Path))); err != nil {
				return nil, err
			}
		}
		switch choice {
		case 'a', 'd':
			rest = choice
		}
		if choice == 'y' || choice == 'a' || choice == 's' {
			af.Hunks = append(af.Hunks, hunk)
		}
	}
	if len(af.Hunks) == 0 {
		return nil, nil
	}
	return af, nil
}

// askHunk asks about one hunk until the reviewer decides it: y, n, a, d,
// or s with the lines accepted ('n' when they accepted none of them, 'y'
// when all).
func (a *asker) askHunk(acc *approval.Accepted, hunk, question string) (rune, []int, error) {
	for {
		key, err := a.askKey(acc, question)
		if err != nil || key != 's' {
			return key, nil, err
		}
		lines, err := a.splitLines(hunk)
		switch {
		case errors.Is(err, errStopPick):
			continue // back to the whole hunk's question
		case err != nil:
			return 0, nil, err
		case len(lines) == 0:
			return 'n', nil, nil
		case len(lines) == countChanged(hunk):
			return 'y', nil, nil
		}
		return 's', lines, nil
	}
}

// askKey reads the answer to question, handling the keys every question
// of the walk shares: e edits the commit's message, ? helps, q stops, l
// goes back to the list. It returns y, n, s, a or d.
func (a *asker) askKey(acc *approval.Accepted, question string) (rune, error) {
	t := a.t
	for {
		io.WriteString(t, question)
		key, err := t.ReadKey()
		if err != nil {
			return 0, err
		}
		switch key {
		case 'y', 'Y', 'n', 'N', 's', 'S', 'a', 'A', 'd', 'D':
			return toLower(key), nil
		case 'x', 'X': // the full-screen view's key for leaving out
			return 'n', nil
		case 'e', 'E':
			if err := a.editMessage(acc); err != nil {
				return 0, err
			}
		case 'q', 'Q':
			return 0, errStopPick
		case 'l', 'L':
			if a.opt.back {
				return 0, errBack
			}
			fmt.Fprintf(t, "  Unknown key %q.\n", key)
			io.WriteString(t, helpPick)
		case '?', 'h', 'H':
			io.WriteString(t, helpPick)
		default:
			fmt.Fprintf(t, "  Unknown key %q.\n", key)
			io.WriteString(t, helpPick)
		}
	}
}

func toLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// splitLines asks about each changed line of hunk and returns the ones
// accepted, numbered from 0 among the hunk's "+" and "-" lines.
// errStopPick: the reviewer went back to the hunk's question.
func (a *asker) splitLines(hunk string) ([]int, error) {
	t := a.t
	n, total := 0, countChanged(hunk)
	var accepted []int
	for _, l := range strings.Split(strings.TrimSuffix(hunk, "\n"), "\n") {
		if !changedLine(l) {
			continue
		}
		io.WriteString(t, indent(colorDiff(l+"\n", "", colorsOf(t)), "    "))
		for {
			fmt.Fprintf(t, "  line %d/%d: accept [y,n,q back to the hunk]? ", n+1, total)
			key, err := t.ReadKey()
			if err != nil {
				return nil, err
			}
			switch key {
			case 'y', 'Y':
				accepted = append(accepted, n)
			case 'n', 'N', 'x', 'X':
			case 'q', 'Q':
				return nil, errStopPick
			case 'l', 'L':
				if a.opt.back {
					return nil, errBack
				}
				fmt.Fprintf(t, "  Unknown key %q: y accepts the line, n leaves it out, q goes back to the whole hunk.\n", key)
				continue
			default:
				fmt.Fprintf(t, "  Unknown key %q: y accepts the line, n leaves it out, q goes back to the whole hunk.\n", key)
				continue
			}
			break
		}
		n++
	}
	return accepted, nil
}

// changedLine: a hunk's "+" or "-" line (not its "@@" header).
func changedLine(l string) bool { return strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") }

func countChanged(hunk string) int {
	n := 0
	for _, l := range strings.Split(hunk, "\n") {
		if changedLine(l) {
			n++
		}
	}
	return n
}

// editMessage reads a new message for the commit being picked: a new
// subject, and what becomes of the body, shown as it will be kept; what
// lands is the message the screen shows last ("This commit lands as").
func (a *asker) editMessage(acc *approval.Accepted) error {
	msg := acc.Message
	if msg == "" {
		for _, c := range a.r.Commits {
			if c.ID == acc.Commit {
				msg = c.Message
			}
		}
	}
	fmt.Fprintf(a.t, "  The message now:\n%s", indent(termsafe.Text(strings.TrimRight(msg, "\n")+"\n"), "    "))
	line, err := a.t.ReadLine("  New subject (one line; empty keeps the subject as it is): ")
	if err != nil {
		return err
	}
	subj, body := splitMessage(msg)
	if line = strings.TrimSpace(line); line != "" {
		subj = line
	}
	if body != "" {
		if body, err = a.askBody(body); err != nil {
			return err
		}
	}
	nu := subj + "\n"
	if body != "" {
		nu += "\n" + body + "\n"
	}
	if nu == msg {
		return nil
	}
	acc.Message = nu
	fmt.Fprintf(a.t, "  This commit lands as:\n%s", indent(termsafe.Text(nu), "    "))
	return nil
}

// askBody shows the body an edited message keeps, and asks whether to
// keep it, replace it (lines read until an empty one) or drop it.
func (a *asker) askBody(body string) (string, error) {
	fmt.Fprintf(a.t, "  Its body, kept unless you say otherwise:\n%s", indent(termsafe.Text(body+"\n"), "    | "))
	for {
		io.WriteString(a.t, "  The body: [k]eep it, [r]eplace it, [d]rop it? ")
		key, err := a.t.ReadKey()
		if err != nil {
			return "", err
		}
		switch key {
		case 'k', 'K', '\r', '\n':
			return body, nil
		case 'd', 'D':
			return "", nil
		case 'r', 'R':
			var lines []string
			for {
				l, err := a.t.ReadLine("  New body line (an empty line ends it): ")
				if err != nil {
					return "", err
				}
				if l = strings.TrimRight(l, " \t"); l == "" {
					break
				}
				lines = append(lines, l)
			}
			return strings.Join(lines, "\n"), nil
		case 'l', 'L':
			if a.opt.back {
				return "", errBack
			}
		}
		fmt.Fprintf(a.t, "  Unknown key %q: k keeps the body shown, r replaces it, d drops it.\n", key)
	}
}

// splitMessage is a message's subject and its body (after the blank line
// that ends the subject; "" when it has none).
func splitMessage(msg string) (subject, body string) {
	subject, body, _ = strings.Cut(strings.TrimRight(msg, "\n"), "\n")
	return subject, strings.Trim(body, "\n")
}

// indent puts prefix before each line of text.
func indent(text, prefix string) string {
	if text == "" {
		return ""
	}
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}
