// Package difftext turns a unified diff, as git prints it, into the diff
// a reviewer reads: a file whose line endings changed (LF to CRLF, or
// back) shows that as one line, "line endings: LF -> CRLF", with its
// real edits as hunks, instead of every line removed and added again;
// and, in the mode that ignores whitespace (the review's w key), lines
// that differ only in whitespace are context, and a file changed only in
// whitespace says so.
//
// These are pure functions of the text, for any front-end over the
// review (the terminal's full-screen view and line prompt, a web page).
// They change what is shown, never what a pick applies: the hunks a
// reviewer accepts are the request's own. A file whose line endings
// changed has its edits in the same hunks as the line-ending change, so
// a front-end offers such a file whole or not at all (LineEndings says
// which files they are).
package difftext

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode is how a diff is shown.
type Mode struct {
	// IgnoreSpace shows lines that differ only in whitespace (spaces,
	// tabs, CR) as unchanged, as git diff -w does.
	IgnoreSpace bool
}

// context is git's default number of context lines around a change.
const context = 3

// Show is diff (one file's or many files' unified diff) as the reviewer
// reads it in mode m. A diff with no CR in it, shown with whitespace,
// comes back as it is, at the cost of one scan.
func Show(diff string, m Mode) string {
	if !m.IgnoreSpace && !strings.Contains(diff, "\r") {
		return diff
	}
	var b strings.Builder
	for _, sec := range sections(diff) {
		header, hunks := split(sec)
		h, hs := File(header, hunks, m)
		b.WriteString(h)
		for _, x := range hs {
			b.WriteString(x)
		}
	}
	return b.String()
}

// sections cuts a diff at its "diff --git" lines. Text before the first
// is a section of its own.
func sections(diff string) []string {
	var out []string
	start := 0
	for at := 0; at < len(diff); {
		end := strings.IndexByte(diff[at:], '\n')
		next := len(diff)
		if end >= 0 {
			next = at + end + 1
		}
		if at > start && strings.HasPrefix(diff[at:], "diff --git ") {
			out = append(out, diff[start:at])
			start = at
		}
		at = next
	}
	if start < len(diff) {
		out = append(out, diff[start:])
	}
	return out
}

// split cuts one file's diff into its header and its hunks, each hunk
// found by its header's line counts (a changed line that reads "@@"
// stays in its hunk). What does not parse as hunks stays in the header,
// shown as it is.
func split(sec string) (string, []string) {
	at := 0
	for at < len(sec) && !strings.HasPrefix(sec[at:], "@@ ") {
		end := strings.IndexByte(sec[at:], '\n')
		if end < 0 {
			return sec, nil
		}
		at += end + 1
	}
	header, rest := sec[:at], sec[at:]
	var hunks []string
	for rest != "" {
		h, err := parse(rest)
		if err != nil {
			return sec, nil
		}
		hunks = append(hunks, rest[:h.size])
		rest = rest[h.size:]
	}
	return header, hunks
}

// LineEndings is the line-ending change a file's hunks make, in words:
// "LF -> CRLF", "CRLF -> LF", or "" when no line only changes its ending.
func LineEndings(hunks []string) string {
	toCR, fromCR := 0, 0
	for _, text := range hunks {
		h, err := parse(text)
		if err != nil {
			continue
		}
		for _, e := range diffLines(h, Mode{}) {
			if e.kind != ' ' || e.old == e.new {
				continue
			}
			if strings.HasSuffix(e.new, "\r") {
				toCR++
			} else {
				fromCR++
			}
		}
	}
	return endingWords(toCR, fromCR)
}

func endingWords(toCR, fromCR int) string {
	switch {
	case toCR > 0 && fromCR > 0:
		return fmt.Sprintf("LF -> CRLF on %d lines, CRLF -> LF on %d", toCR, fromCR)
	case toCR > 0:
		return "LF -> CRLF"
	case fromCR > 0:
		return "CRLF -> LF"
	}
	return ""
}

// File is one file's diff (its header, as git prints it up to the first
// hunk, and its hunks) as shown in mode m: the header with a line that
// says what changed in line endings or whitespace alone, then the hunks
// of the edits that remain, three lines of context around each (where
// line endings changed, shown without their CRs: the line says so). A
// file with nothing of either comes back as it is.
func File(header string, hunks []string, m Mode) (string, []string) {
	var out []string
	toCR, fromCR, spaceOnly := 0, 0, 0
	changed := false
	for _, text := range hunks {
		h, err := parse(text)
		if err != nil {
			return header, hunks
		}
		es := diffLines(h, m)
		for _, e := range es {
			switch {
			case e.kind != ' ' || e.old == e.new:
			case strings.TrimSuffix(e.old, "\r") == strings.TrimSuffix(e.new, "\r") && strings.HasSuffix(e.new, "\r"):
				toCR++
			case strings.TrimSuffix(e.old, "\r") == strings.TrimSuffix(e.new, "\r"):
				fromCR++
			default:
				spaceOnly++
			}
		}
		if len(es) == len(h.lines) && !folded(es) {
			// Nothing in it is the same in this mode: shown as git
			// printed it.
			out = append(out, text)
			continue
		}
		changed = true
		out = append(out, regroup(h, es)...)
	}
	if !changed && toCR+fromCR+spaceOnly == 0 {
		return header, hunks
	}
	var note strings.Builder
	if w := endingWords(toCR, fromCR); w != "" {
		fmt.Fprintf(&note, "line endings: %s\n", w)
		// Said once, the CRs are not shown on every line again.
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], "\r\n", "\n")
		}
	}
	if spaceOnly > 0 {
		fmt.Fprintf(&note, "whitespace: %d changed %s not shown (w shows %s)\n", spaceOnly, plural(spaceOnly, "line", "lines"), plural(spaceOnly, "it", "them"))
	}
	if len(out) == 0 && len(hunks) > 0 {
		note.WriteString("no other change\n")
	}
	return header + note.String(), out
}

// folded reports whether es pairs any lines that differ as text.
func folded(es []edit) bool {
	for _, e := range es {
		if e.kind == ' ' && e.old != e.new {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// hunkText is one parsed hunk.
type hunkText struct {
	oldStart, newStart int
	fn                 string // what follows the header's second "@@"
	lines              []line
	size               int // bytes of the hunk in the text
}

// line is one line of a hunk: its kind (' ', '-', '+'), its text without
// the newline, and whether git marked it "\ No newline at end of file".
type line struct {
	kind    byte
	text    string
	noEOL   bool
	noEOLMk string
}

func parse(s string) (hunkText, error) {
	first, rest, ok := strings.Cut(s, "\n")
	if !ok || !strings.HasPrefix(first, "@@ -") {
		return hunkText{}, fmt.Errorf("not a hunk: %.40q", s)
	}
	var h hunkText
	old, tail, ok1 := strings.Cut(first[len("@@ -"):], " +")
	nu, fn, ok2 := strings.Cut(tail, " @@")
	os, oc, err1 := rng(old)
	ns, nc, err2 := rng(nu)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return hunkText{}, fmt.Errorf("not a hunk header: %q", first)
	}
	h.oldStart, h.newStart, h.fn = os, ns, fn
	h.size = len(first) + 1
	for oc > 0 || nc > 0 || strings.HasPrefix(rest, `\`) {
		l, after, ok := strings.Cut(rest, "\n")
		if !ok {
			return hunkText{}, fmt.Errorf("hunk %q ends early", first)
		}
		h.size += len(l) + 1
		rest = after
		switch {
		case strings.HasPrefix(l, `\`):
			if n := len(h.lines); n > 0 {
				h.lines[n-1].noEOL, h.lines[n-1].noEOLMk = true, l
			}
			continue
		case l == "" || l[0] == ' ':
			oc, nc = oc-1, nc-1
		case l[0] == '-':
			oc--
		case l[0] == '+':
			nc--
		default:
			return hunkText{}, fmt.Errorf("hunk %q: line %q", first, l)
		}
		if oc < 0 || nc < 0 {
			return hunkText{}, fmt.Errorf("hunk %q holds more lines than it counts", first)
		}
		kind, text := byte(' '), ""
		if l != "" {
			kind, text = l[0], l[1:]
		}
		h.lines = append(h.lines, line{kind: kind, text: text})
	}
	return h, nil
}

func rng(s string) (start, count int, err error) {
	a, b, ok := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	if !ok {
		return start, 1, nil
	}
	count, err = strconv.Atoi(b)
	return start, count, err
}

// edit is one line of a hunk re-diffed: kind ' ' pairs an old line with
// a new one that is the same in the mode (old and new may still differ
// in their ending or whitespace), '-' and '+' stand alone.
type edit struct {
	kind     byte
	old, new string
	noEOL    string // the "\ No newline" marker after a '-' or '+' line
	oldAt    int    // for ' ' and '-': its place on the hunk's old side
	newAt    int    // for ' ' and '+': on the new side
}

// maxCells bounds the re-diff of one hunk (old lines times new lines):
// past it the hunk is shown as git printed it.
const maxCells = 4 << 20

// diffLines re-diffs a hunk's old side against its new side, lines equal
// when they are the same in mode m: always when they differ only in a
// final CR (their line ending), and with IgnoreSpace when they differ
// only in whitespace. It pairs the longest common run of lines.
func diffLines(h hunkText, m Mode) []edit {
	var olds, news []line
	for _, l := range h.lines {
		if l.kind != '+' {
			olds = append(olds, l)
		}
		if l.kind != '-' {
			news = append(news, l)
		}
	}
	n, k := len(olds), len(news)
	if n*k > maxCells {
		return asIs(h)
	}
	// Each line's key in the mode, made once: the table compares them
	// n*k times.
	key := func(l line) string {
		if m.IgnoreSpace {
			return squeeze(l.text)
		}
		return strings.TrimSuffix(l.text, "\r")
	}
	okeys, nkeys := make([]string, n), make([]string, k)
	for i, l := range olds {
		okeys[i] = key(l)
	}
	for j, l := range news {
		nkeys[j] = key(l)
	}
	eqAt := func(i, j int) bool { return olds[i].noEOL == news[j].noEOL && okeys[i] == nkeys[j] }
	// lcs[i][j] is the longest common run of olds[i:] and news[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, k+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := k - 1; j >= 0; j-- {
			switch {
			case eqAt(i, j):
				lcs[i][j] = lcs[i+1][j+1] + 1
			case lcs[i+1][j] >= lcs[i][j+1]:
				lcs[i][j] = lcs[i+1][j]
			default:
				lcs[i][j] = lcs[i][j+1]
			}
		}
	}
	var out, adds []edit
	flush := func() { out, adds = append(out, adds...), adds[:0] }
	i, j := 0, 0
	for i < n || j < k {
		switch {
		case i < n && j < k && eqAt(i, j):
			flush()
			out = append(out, edit{kind: ' ', old: olds[i].text, new: news[j].text, oldAt: i, newAt: j})
			i, j = i+1, j+1
		case j < k && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			adds = append(adds, edit{kind: '+', new: news[j].text, noEOL: news[j].noEOLMk, newAt: j, oldAt: i})
			j++
		default:
			// Removed lines come before the added ones they sit with, as
			// git prints them.
			out = append(out, edit{kind: '-', old: olds[i].text, noEOL: olds[i].noEOLMk, oldAt: i, newAt: j})
			i++
		}
	}
	flush()
	return out
}

// asIs is a hunk's lines as edits, unchanged.
func asIs(h hunkText) []edit {
	var out []edit
	i, j := 0, 0
	for _, l := range h.lines {
		e := edit{kind: l.kind, oldAt: i, newAt: j}
		switch l.kind {
		case ' ':
			e.old, e.new = l.text, l.text
			i, j = i+1, j+1
		case '-':
			e.old, e.noEOL = l.text, l.noEOLMk
			i++
		case '+':
			e.new, e.noEOL = l.text, l.noEOLMk
			j++
		}
		out = append(out, e)
	}
	return out
}

// squeeze is s without whitespace, as git diff -w compares lines.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\v', '\f':
			return -1
		}
		return r
	}, s)
}

// regroup makes hunks of a re-diffed hunk's changes, each with up to
// three lines of context, as git groups them; none when nothing but
// context is left.
func regroup(h hunkText, es []edit) []string {
	var changes []int
	for i, e := range es {
		if e.kind != ' ' {
			changes = append(changes, i)
		}
	}
	var out []string
	for g := 0; g < len(changes); {
		first, last := changes[g], changes[g]
		for g++; g < len(changes) && changes[g]-last-1 <= 2*context; g++ {
			last = changes[g]
		}
		from, to := max(0, first-context), min(len(es), last+context+1)
		out = append(out, hunkOf(h, es[from:to]))
	}
	return out
}

// hunkOf writes the hunk of es, numbered from h's start.
func hunkOf(h hunkText, es []edit) string {
	var body strings.Builder
	oc, nc := 0, 0
	for _, e := range es {
		switch e.kind {
		case ' ':
			// The new side, as git diff -w and --ignore-cr-at-eol
			// show context.
			fmt.Fprintf(&body, " %s\n", e.new)
			oc, nc = oc+1, nc+1
		case '-':
			fmt.Fprintf(&body, "-%s\n", e.old)
			oc++
		case '+':
			fmt.Fprintf(&body, "+%s\n", e.new)
			nc++
		}
		if e.kind != ' ' && e.noEOL != "" {
			body.WriteString(e.noEOL + "\n")
		}
	}
	os, ns := h.oldStart+es[0].oldAt, h.newStart+es[0].newAt
	if oc == 0 {
		os--
	}
	if nc == 0 {
		ns--
	}
	return "@@ -" + span(os, oc) + " +" + span(ns, nc) + " @@" + funcName(h, es[0].oldAt) + "\n" + body.String()
}

// funcName is the hunk header's function context for a hunk starting at
// old line at of h, as git finds it: the last line before it, on the old
// side, that starts with a letter, '_' or '$' (git's default), cut to 80
// bytes and trailing space; before h's lines, what git found for h.
func funcName(h hunkText, at int) string {
	i := 0
	found := ""
	for _, l := range h.lines {
		if l.kind == '+' {
			continue
		}
		if i >= at {
			break
		}
		if t := l.text; t != "" && (isAlpha(t[0]) || t[0] == '_' || t[0] == '$') {
			found = t
		}
		i++
	}
	if found == "" {
		return h.fn
	}
	if len(found) > 80 {
		found = found[:80]
	}
	return " " + strings.TrimRight(found, " \t\r\n\v\f")
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func span(start, count int) string {
	if count == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}
