package diffview

import (
	"strconv"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/model"
)

// Outcome is what the reviewer decided in the view: nothing (Verdict
// ""), approve (the model's Decide makes it a pick when something is left
// out), or reject with Reason.
type Outcome struct {
	Verdict approval.Verdict
	Reason  string
}

// inputKind is what the text typed in the status row is for.
type inputKind int

const (
	inputComment inputKind = iota // a new comment (pending)
	inputEdit                     // comment pending.index's new text
	inputReason                   // the reason of a rejection
)

// pendingNote is the comment being typed: where it goes, or which one is
// edited.
type pendingNote struct {
	c     approval.Comment
	index int
}

// setHunk accepts (or leaves out) the hunk under the cursor; on a file's
// banner or header, every hunk of the file. The cursor goes on to the
// next hunk, as git add -p does.
func (v *diffView) setHunk(accept bool) {
	f, line := v.under()
	if f == nil {
		return
	}
	refs := v.fileHunks(f)
	what := "the file's hunks"
	switch {
	case v.ix.m.ByFile():
		what = "the file (this push is picked file by file)"
	case line >= 0 && v.ix.ref(line).hunk >= 0:
		refs, what = []model.Ref{v.ix.hunkRef(f, line)}, "the hunk"
	}
	for _, r := range refs {
		if err := v.ix.m.SetHunk(r, accept); err != nil {
			v.msg = err.Error()
			return
		}
	}
	v.msg = what + " left out"
	if accept {
		v.msg = what + " accepted"
	}
	v.findRow(true, v.isHunkStart)
}

// setLine accepts (or leaves out) the changed line under the cursor.
func (v *diffView) setLine(accept bool) {
	f, line := v.under()
	l, ok := model.Line{}, false
	if f != nil && line >= 0 {
		l, ok = v.ix.modelLine(f, line)
	}
	if !ok || l.Changed < 0 {
		v.msg = "+ and - take the changed line under the cursor; y and x the whole hunk"
		return
	}
	if err := v.ix.m.SetLine(v.ix.hunkRef(f, line), l.Changed, accept); err != nil {
		v.msg = err.Error()
		return
	}
	v.setCursor(v.cur + 1)
}

// startComment asks for the text of a comment on the line under the
// cursor, or on the range from the mark (v) to it; on a banner or a
// header, on the file.
func (v *diffView) startComment() {
	f, line := v.under()
	if f == nil {
		v.msg = "no line here to comment on"
		return
	}
	ref, from, to := v.ix.hunkRef(f, max(line, f.first)), -1, -1
	if line >= 0 && v.ix.ref(line).hunk >= 0 {
		from, to = int(v.ix.ref(line).line), int(v.ix.ref(line).line)
	} else {
		ref.Hunk = -1
	}
	if v.mark >= 0 {
		mf, ml := v.rowLine(v.mark)
		if mf != f || ml < 0 || line < 0 || v.ix.ref(ml).hunk != v.ix.ref(line).hunk || ref.Hunk < 0 {
			v.msg = model.ErrBadRange.Error()
			return
		}
		from = int(v.ix.ref(ml).line)
	}
	if ref.Hunk >= 0 {
		from, to = max(from, 0), max(to, 0) // a hunk's "@@" line: its first line
	}
	c, err := v.ix.m.CommentOn(ref, from, to)
	if err != nil {
		v.msg = err.Error()
		return
	}
	v.pending = pendingNote{c: c, index: -1}
	v.mode, v.inputOf, v.input = modeInput, inputComment, v.input[:0]
}

// handleInput takes a key of the text typed in the status row.
func (v *diffView) handleInput(k rune) (done bool) {
	switch k {
	case '\r', '\n':
		return v.enterInput()
	case keyEsc, 'c' - 'a' + 1, 'g' - 'a' + 1:
		v.mode, v.msg = modeDiff, "nothing added"
		switch v.inputOf {
		case inputEdit:
			v.mode, v.msg = modeComments, "not changed"
		case inputReason:
			v.msg = "not rejected"
		}
	case 0x7f, 0x08:
		v.input = dropRune(v.input)
	case 'u' - 'a' + 1:
		v.input = v.input[:0]
	default:
		if k >= ' ' && k != 0x7f {
			v.input = utf8.AppendRune(v.input, k)
		}
	}
	return false
}

func (v *diffView) enterInput() bool {
	text := string(v.input)
	switch v.inputOf {
	case inputReason:
		v.outcome = Outcome{Verdict: approval.Reject, Reason: text}
		return true
	case inputEdit:
		if err := v.ix.m.EditComment(v.pending.index, text); err != nil {
			v.msg = err.Error()
			return false
		}
		v.mode, v.msg = modeComments, "comment changed"
		return false
	}
	c := v.pending.c
	c.Text = text
	if _, err := v.ix.m.AddComment(c); err != nil {
		v.msg = err.Error()
		return false
	}
	v.mode, v.mark = modeDiff, -1
	v.msg = "comment added on " + quoteLine(model.Place(c)) + ": C lists the comments"
	return false
}

// approve decides for the push (or the selection); its errors (all left
// out) are said, and nothing is decided.
func (v *diffView) approve() bool {
	if _, err := v.ix.m.Decide(approval.Approve, ""); err != nil {
		v.msg = err.Error()
		return false
	}
	v.outcome = Outcome{Verdict: approval.Approve}
	return true
}

// handleComments takes a key of the comments list.
func (v *diffView) handleComments(k rune) {
	n := len(v.ix.m.Comments())
	switch k {
	case 'q', 'Q', keyEsc, 'C':
		v.mode = modeDiff
	case 'j', keyDown:
		v.csel = min(n-1, v.csel+1)
	case 'k', keyUp:
		v.csel = max(0, v.csel-1)
	case 'e', 'E':
		if n > 0 {
			v.pending = pendingNote{index: v.csel}
			v.mode, v.inputOf = modeInput, inputEdit
			v.input = append(v.input[:0], v.ix.m.Comments()[v.csel].Text...)
		}
	case 'd', 'D', 'x', 0x7f:
		if n > 0 {
			if err := v.ix.m.DeleteComment(v.csel); err != nil {
				v.msg = err.Error()
				return
			}
			v.csel = max(0, min(v.csel, n-2))
			v.msg = "comment deleted"
		}
	case '\r', '\n':
		if n == 0 {
			v.mode = modeDiff
			return
		}
		if row := v.rowOfComment(v.csel); row >= 0 {
			v.mode = modeDiff
			v.goTo(row)
		} else {
			v.msg = "that comment is on a file this view does not show"
		}
	case keyNone:
	default:
		v.msg = "unknown key " + quoteLine(string(k)) + ": j/k choose, e edits, d deletes, Enter goes to it, q back"
	}
}

// toggleViewed marks the file under the cursor viewed (or not); marked,
// the cursor goes on to the next file.
func (v *diffView) toggleViewed() {
	f, _ := v.under()
	if f == nil {
		return
	}
	now := !v.ix.m.Viewed(f.ref)
	v.ix.m.SetViewed(f.ref, now)
	if !now {
		v.msg = "marked not viewed"
		return
	}
	v.msg = "marked viewed"
	if k := v.placeOfFile(f); k+1 < len(v.ix.order) {
		v.jump(k + 1)
	}
}

// viewedCount is how many of the files shown are marked viewed.
func (v *diffView) viewedCount() int {
	n := 0
	for i := range v.ix.files {
		if v.ix.m.Viewed(v.ix.files[i].ref) {
			n++
		}
	}
	return n
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
