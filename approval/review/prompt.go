package review

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/difftext"
	"github.com/airlock-dev/airlock/approval/review/model"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/change"
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
	case approval.FlagMessageHidden:
		return "message hides characters"
	case approval.FlagMessageTrailer:
		return "message claims a review"
	case approval.FlagMessageRuns:
		return "message runs code"
	case approval.FlagRejectedAgain:
		return "rejected commit"
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
	return renderRows(w, r, color, screenSize{rows, 80}, options{})
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

// renderRows is RenderRows, with what the review loop knows (opt).
func renderRows(w io.Writer, r *approval.Request, color bool, size screenSize, opt options) error {
	if r.Kind == approval.KindNetwork {
		return renderNetwork(w, r, color, opt.back)
	}
	p := painter(color)
	line := termsafe.Line
	var b strings.Builder
	b.WriteString(p.paint(ansiBold, "git_push") + "\n")
	renderSince(&b, r, p)
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
	fmt.Fprintf(&b, "  Target: %s (branch: %s)%s\n", line(r.Describe), line(approval.ShortRef(r.Ref)), inlineFlags(r, "", p))
	b.WriteString(baseLine(r, opt.moved))
	if opt.bodies == 0 {
		opt.bodies = bodyBudget(size)
	}
	renderCommits(&b, r, p, opt.bodies)
	label := len(landing(r)) > 1 // "Files:", when any fits under it
	if label {
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
		from := ""
		if f.FromBase {
			from = "   " + p.paint(ansiDim, "the base's")
		}
		lines = append(lines, fmt.Sprintf("    %s %s%s (%s)%s%s\n", sign, line(f.Path), movedWords(f), bytesize.Format(f.Size), from, inlineFlags(r, f.Path, p)))
	}
	keys := keysLine(r, p, opt)
	lines, more := fitLines(lines, size, opt.header+screenRows(b.String(), size.cols)+screenRows(keys, size.cols)+2)
	if label && len(lines) == 0 {
		s := b.String()
		b.Reset()
		b.WriteString(strings.TrimSuffix(s, "  Files:\n"))
	}
	for _, l := range lines {
		b.WriteString(l)
	}
	if more > 0 {
		fmt.Fprintf(&b, "    ... and %d more files: [d]iff shows them all\n", more)
	}
	b.WriteString("  " + keys + "\n")
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

// keysLine is the line of keys under the summary. It fits 80 columns:
// when its words do not fit with two spaces between them, it goes on two
// lines, broken between keys.
func keysLine(r *approval.Request, p painter, opt options) string {
	k := func(key, rest string) string { return "[" + p.paint(ansiBold, key) + "]" + rest }
	parts := []string{k("d", "iff"), k("a", "pprove"), k("r", "eject")}
	if r.Since != nil {
		parts = []string{k("d", "iff since"), k("f", "ull"), k("a", "pprove"), k("r", "eject")}
	}
	switch {
	case !r.Pickable:
	case r.Since != nil:
		parts = append(parts, k("p", "ick"))
	case model.HunkPickable(r):
		parts = append(parts, k("p", "ick hunks"))
	default:
		parts = append(parts, k("p", "ick files"))
	}
	if bodiesCut(r, cmp.Or(opt.bodies, maxBodyTotal)) {
		parts = append(parts, k("m", "essages"))
	}
	if opt.comments > 0 {
		parts = append(parts, k("c", fmt.Sprintf("omment (%d)", opt.comments)))
	} else {
		parts = append(parts, k("c", "omment"))
	}
	if opt.back {
		parts = append(parts, k("l", "ist"))
	}
	parts = append(parts, k("?", "help"))
	if s := strings.Join(parts, "  "); cellWidth(sgr.ReplaceAllString(s, "")) <= keyWidth-2 {
		return s
	}
	// Never cut by the terminal's edge: on two lines, between keys.
	return wrapParts(parts, " ", "  ", keyWidth)
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

const helpText = `  d  show the diff full screen (in your pager on a plain terminal); q comes back
  a  approve: the push goes ahead exactly as shown (with your comments, if any)
  r  reject: nothing is pushed; you may give a reason, which the worker is told;
     with comments, this asks the worker for those changes
  c  comment on a file and line (12, a range 12-14, old 12 for a deleted
     line), or in general, for the worker; the comments go with your decision
     (in the full-screen diff, c comments on the line under the cursor)
  m  show every commit that lands with its whole message (hidden characters
     escaped)
  w  ignore whitespace in the diff, or show it again (a change of line endings
     alone is always one line: "line endings: LF -> CRLF")
  ?  this help
`

const helpFiles = `  p  pick files: push only the files you choose, in a new commit; the others
     stay in the sandbox, unstaged, and nothing is lost
`

const helpHunks = `  p  pick hunks, file by file, as git add -p does, the flagged files first:
       y accept the hunk   n (or x) leave it out   s split it to lines (y/n each)
       a accept the rest of the file   d leave out the rest of the file
       e edit this commit's message   q stop picking   ? help
     a summary of what lands, and what stays in the sandbox, asks before it
     is sent; each commit with anything accepted lands with its own message
`

const helpSince = `  This request follows one you saw: d shows only what changed since then
  (the interdiff), f the full diff.
`

const helpBack = "  l  back to the list of waiting requests, deciding nothing (from any prompt)\n"

// errBack: the reviewer went back to the list without deciding.
var errBack = errors.New("back to the list")

// options are what the review loop knows beyond the request.
type options struct {
	back     bool // l goes back to the list
	header   int  // the rows printed above the summary (the request's header)
	bodies   int  // the commits' body lines the summary shows (bodyBudget); 0: as many as it may
	moved    bool // this reviewer approved another push to the request's target and ref since it was asked
	comments int  // how many comments the reviewer has written so far
}

// Prompt shows r to a reviewer and returns their decision. It refuses to
// run without a terminal. Approving a push with high risks asks for a
// second, explicit yes.
func Prompt(t Terminal, r *approval.Request) (approval.Decision, error) {
	return prompt(t, r, options{})
}

// asker is one request's prompt: the request, the terminal, and what the
// reviewer has said so far.
type asker struct {
	t        Terminal
	r        *approval.Request
	p        painter
	opt      options
	comments []approval.Comment
	m        *model.Review // what the full-screen view picks from (review)
	space    bool          // w: the paged diff ignores whitespace (space.go)
}

// prompt is Prompt; with opt.back, the key l goes back to the list
// (errBack), from the prompt and from every question under it.
func prompt(t Terminal, r *approval.Request, opt options) (approval.Decision, error) {
	if !t.IsTerminal() {
		return approval.Decision{}, ErrNoTerminal
	}
	if r.Kind == approval.KindNetwork {
		return promptNetwork(t, r, opt.back)
	}
	opt.bodies = bodyBudget(sizeOf(t))
	if err := renderRows(t, r, t.Color(), sizeOf(t), opt); err != nil {
		return approval.Decision{}, err
	}
	a := &asker{t: t, r: r, p: painter(t.Color()), opt: opt}
	for {
		key, err := t.ReadKey()
		if err != nil {
			return approval.Decision{}, err
		}
		d, done, err := a.key(key)
		if err != nil || done {
			return d, err
		}
	}
}

// keys is the line of keys, as it stands.
func (a *asker) keys() string {
	opt := a.opt
	opt.comments = len(a.comments)
	return keysLine(a.r, a.p, opt)
}

// decision is a reviewer's decision on the request, with their comments.
func (a *asker) decision(v approval.Verdict) approval.Decision {
	return approval.Decision{Request: a.r.ID, Verdict: v, Comments: a.comments, By: "reviewer"}
}

// key acts on one key at the prompt; done when it decided.
func (a *asker) key(key rune) (approval.Decision, bool, error) {
	t, r := a.t, a.r
	switch key {
	case 'a', 'A':
		if r.DiffTruncated {
			fmt.Fprintln(t, "  This push is too large to show whole, so it cannot be approved whole: [p]ick to push less. "+a.keys())
			return approval.Decision{}, false, nil
		}
		if ok, err := a.confirmHigh(r.Flags, "this push"); !ok {
			if err == nil {
				fmt.Fprintln(t, "  Not approved. "+a.keys())
			}
			return approval.Decision{}, false, err
		}
		return a.decision(approval.Approve), true, nil
	case 'r', 'R':
		return a.reject()
	case 'd':
		return a.showDiff(a.shownDiff(), r.Since != nil)
	case 'D', 'f', 'F':
		return a.showDiff(r.Diff, false)
	case 'p', 'P':
		return a.pick()
	case 'm', 'M':
		a.showMessages()
	case 'c', 'C':
		if err := a.comment(); err != nil {
			return approval.Decision{}, false, err
		}
		fmt.Fprintln(t, "  "+a.keys())
	case '?', 'h', 'H':
		a.help()
	case 'w', 'W':
		a.toggleSpace()
	case '\r', '\n', ' ':
	case 'l', 'L':
		if a.opt.back {
			return approval.Decision{}, false, errBack
		}
		fallthrough
	default:
		fmt.Fprintf(t, "  Unknown key %q. Press ? for help.\n", key)
	}
	return approval.Decision{}, false, nil
}

// shownDiff is what d shows: for a request that follows one the reviewer
// saw, what changed since; else the whole diff.
func (a *asker) shownDiff() string {
	if s := a.r.Since; s != nil {
		rejected := rejectedDiffs(s)
		if s.Interdiff == "" {
			return rejected + "Nothing changed in what the push carries since you saw request " + s.Request + ". Press f for the full diff.\n"
		}
		if rejected != "" {
			rejected += "What changed since request " + s.Request + ":\n\n"
		}
		return rejected + s.Interdiff
	}
	return a.r.Diff
}

// showDiff shows a diff full screen where the terminal can (view.go),
// where the reviewer may decide, else through the pager, and the keys
// after it. Only the view's errors (the terminal gone, the request
// withdrawn) end the prompt.
func (a *asker) showDiff(diff string, interdiff bool) (approval.Decision, bool, error) {
	shown, out, err := a.viewDiff(diff, interdiff)
	switch {
	case err != nil:
		return approval.Decision{}, false, err
	case out.Verdict != "":
		return a.decideInView(out)
	case !shown:
		if err := a.t.Page(colorDiff(difftext.Show(diff, difftext.Mode{IgnoreSpace: a.space}), "", colorsOf(a.t))); err != nil {
			fmt.Fprintf(a.t, "  Could not show the diff: %v\n", err)
		}
	}
	fmt.Fprintln(a.t, "  "+a.keys())
	return approval.Decision{}, false, nil
}

func (a *asker) help() {
	io.WriteString(a.t, helpText)
	switch {
	case model.HunkPickable(a.r):
		io.WriteString(a.t, helpHunks)
	case a.r.Pickable:
		io.WriteString(a.t, helpFiles)
	}
	if s := a.r.Since; s != nil {
		io.WriteString(a.t, helpSince)
		io.WriteString(a.t, commentList("Your comments then", s.Comments, 0))
	}
	if a.opt.back {
		io.WriteString(a.t, helpBack)
	}
	fmt.Fprintln(a.t, "  "+a.keys())
}

// reject asks for a reason; with comments, the rejection asks the worker
// for those changes.
func (a *asker) reject() (approval.Decision, bool, error) {
	ask := "  Reason (optional; the worker is told): "
	if n := len(a.comments); n > 0 {
		ask = fmt.Sprintf("  Asking for changes with your %s. Reason (optional; the worker is told): ", plural(n, "comment"))
	}
	reason, err := a.t.ReadLine(ask)
	if err != nil {
		return approval.Decision{}, false, err
	}
	d := a.decision(approval.Reject)
	d.Reason = strings.TrimSpace(reason)
	return d, true, nil
}

// pick lets the reviewer choose part of the push: hunk by hunk when the
// request carries each commit's files, else file by file.
func (a *asker) pick() (approval.Decision, bool, error) {
	t, r := a.t, a.r
	if !r.Pickable {
		fmt.Fprintln(t, "  Nothing can be picked from this push. "+a.keys())
		return approval.Decision{}, false, nil
	}
	d := a.decision(approval.Pick)
	if model.HunkPickable(r) {
		accept, err := a.pickHunks()
		if err != nil || accept == nil {
			if err == nil {
				fmt.Fprintln(t, "  Nothing picked. "+a.keys())
			}
			return approval.Decision{}, false, err
		}
		d.Accept = accept
	} else {
		paths, err := pickFiles(t, r, a.opt.back)
		if err != nil || paths == nil {
			if err == nil {
				fmt.Fprintln(t, "  "+a.keys())
			}
			return approval.Decision{}, false, err
		}
		d.Paths = paths
	}
	// Only what the pick lands asks for yes: a risky file left out is not.
	if ok, err := a.confirmHigh(approval.PickFlags(r, d.Paths, d.Accept), "what you picked"); !ok {
		if err == nil {
			fmt.Fprintln(t, "  Not approved. "+a.keys())
		}
		return approval.Decision{}, false, err
	}
	return d, true, nil
}

// confirmHigh asks again when flags (those true of what is approved:
// what, in words) hold a high-severity risk, naming each; l goes back to
// the list (errBack), and anything but yes does not approve.
func (a *asker) confirmHigh(flags []approval.Flag, what string) (bool, error) {
	var high []approval.Flag
	for _, f := range flags {
		if f.Severity == approval.High {
			high = append(high, f)
		}
	}
	if len(high) == 0 {
		return true, nil
	}
	fmt.Fprintf(a.t, "  %s, so approving it asks for yes:\n", a.p.paint(ansiRed+ansiBold, "High risk in "+what))
	for _, f := range high {
		fmt.Fprintf(a.t, "    !! %s\n", termsafe.Line(f.Message))
	}
	answer, err := a.t.ReadLine("  Type yes to approve anyway: ")
	answer = strings.TrimSpace(answer)
	switch {
	case err != nil:
		return false, err
	case a.opt.back && strings.EqualFold(answer, "l"):
		return false, errBack
	}
	return strings.EqualFold(answer, "yes"), nil
}
