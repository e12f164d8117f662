package linediff

import (
	"bufio"
	"strconv"
	"unicode/utf8"
)

// ANSI sequences of git's default colours.
const (
	colorReset   = "\x1b[m"
	colorFrag    = "\x1b[36m" // hunk header
	colorOld     = "\x1b[31m" // removed line
	colorNew     = "\x1b[32m" // added line
	colorWSError = "\x1b[41m" // whitespace error on an added line
)

const noNewline = "\\ No newline at end of file"

// printer writes hunks. Write errors are sticky in the bufio.Writer and
// reported by its Flush.
type printer struct {
	w     *bufio.Writer
	a, b  file
	ctx   int
	color bool

	// Function-name search cache: lines before fnFrom were already searched
	// and the nearest function line before fnFrom is fnLine (-1: none).
	fnFrom, fnLine int

	// Blank lines added at the end of the file (git's blank-at-eof
	// whitespace error): an added blank line is flagged when preLine is at
	// least eofOld and its own (1-based) number at least eofNew. eofOld is
	// 0 when nothing is flagged.
	eofOld, eofNew int
	preLine        int // git's current old line number in the hunk
}

func (p *printer) print(changes []Change) {
	p.fnLine = -1
	if p.color {
		pre := trailingBlank(p.a.data)
		post := trailingBlank(p.b.data)
		if post > pre {
			p.eofOld = p.a.n - pre + 1
			p.eofNew = p.b.n - post
		}
	}
	na := p.a.n
	for i := 0; i < len(changes); {
		j := i
		for j+1 < len(changes) && changes[j+1].OldStart-(changes[j].OldStart+changes[j].OldLines) <= 2*p.ctx {
			j++
		}
		first, last := changes[i], changes[j]
		pre := min(p.ctx, first.OldStart)
		oldEnd := last.OldStart + last.OldLines
		post := min(p.ctx, na-oldEnd)
		oldStart, newStart := first.OldStart-pre, first.NewStart-pre
		oldEnd += post
		newEnd := last.NewStart + last.NewLines + post
		p.header(oldStart, oldEnd-oldStart, newStart, newEnd-newStart)
		// git numbers old lines from the start shown in the header, which
		// for an empty range is the line before it.
		p.preLine = oldStart + 1
		if oldEnd == oldStart {
			p.preLine = oldStart
		}

		ai := oldStart
		for _, c := range changes[i : j+1] {
			for ; ai < c.OldStart; ai++ {
				p.context(ai)
			}
			for k := c.OldStart; k < c.OldStart+c.OldLines; k++ {
				p.removed(k)
			}
			for k := c.NewStart; k < c.NewStart+c.NewLines; k++ {
				p.added(k)
			}
			ai = c.OldStart + c.OldLines
		}
		for ; ai < oldEnd; ai++ {
			p.context(ai)
		}
		i = j + 1
	}
}

func (p *printer) header(os, oc, ns, nc int) {
	w := p.w
	if p.color {
		w.WriteString(colorFrag)
	}
	w.WriteString("@@ -")
	writeRange(w, os, oc)
	w.WriteString(" +")
	writeRange(w, ns, nc)
	w.WriteString(" @@")
	if p.color {
		w.WriteString(colorReset)
	}
	if fn := p.funcname(os); fn != nil {
		w.WriteByte(' ')
		if p.color {
			w.WriteString(colorReset)
		}
		w.Write(fn)
		if p.color {
			w.WriteString(colorReset)
		}
	}
	w.WriteByte('\n')
}

// writeRange writes "start,count" of a hunk side in git's form: start is
// 1-based, ",1" is left out, and an empty range names the line before it.
func writeRange(w *bufio.Writer, start, count int) {
	var buf [48]byte
	b := buf[:0]
	switch count {
	case 0:
		b = strconv.AppendInt(b, int64(start), 10)
		b = append(b, ",0"...)
	case 1:
		b = strconv.AppendInt(b, int64(start+1), 10)
	default:
		b = strconv.AppendInt(b, int64(start+1), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(count), 10)
	}
	w.Write(b)
}

// funcname returns the function-name text for a hunk whose old side starts
// at line start: the nearest line before it that starts with an ASCII
// letter, '_' or '$', cut to 80 bytes, stripped of trailing whitespace and
// cut before its first invalid UTF-8 sequence. nil if there is none.
func (p *printer) funcname(start int) []byte {
	if start < p.fnFrom {
		// Hunks come in order; this cannot happen, but stay correct.
		p.fnFrom, p.fnLine = 0, -1
	}
	found := -1
	for i := start - 1; i >= p.fnFrom; i-- {
		if isFuncLine(p.a.line(i)) {
			found = i
			break
		}
	}
	if found < 0 {
		found = p.fnLine
	}
	p.fnFrom, p.fnLine = start, found
	if found < 0 {
		return nil
	}
	return funcText(p.a.line(found))
}

func isFuncLine(l []byte) bool {
	if len(l) == 0 {
		return false
	}
	c := l[0]
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

const funcnameMax = 80

func funcText(l []byte) []byte {
	if len(l) > funcnameMax {
		l = l[:funcnameMax]
	}
	for len(l) > 0 && isSpace(l[len(l)-1]) {
		l = l[:len(l)-1]
	}
	for i := 0; i < len(l); {
		r, size := utf8.DecodeRune(l[i:])
		if r == utf8.RuneError && size <= 1 || r == 0xFFFE || r == 0xFFFF {
			return l[:i]
		}
		i += size
	}
	return l
}

// body returns line i of f without its '\n', and whether it had one.
func body(f *file, i int) ([]byte, bool) {
	l := f.line(i)
	if n := len(l); n > 0 && l[n-1] == '\n' {
		return l[:n-1], true
	}
	return l, false
}

// plainLine writes a line in one colour (possibly none); like git, a final
// '\r' goes after the colour reset.
func (p *printer) plainLine(color string, sign byte, l []byte, nl bool) {
	w := p.w
	if !p.color {
		w.WriteByte(sign)
		w.Write(l)
	} else {
		cr := len(l) > 0 && l[len(l)-1] == '\r'
		if cr {
			l = l[:len(l)-1]
		}
		w.WriteString(color)
		w.WriteByte(sign)
		w.Write(l)
		w.WriteString(colorReset)
		if cr {
			w.WriteByte('\r')
		}
	}
	p.endLine(nl)
}

func (p *printer) endLine(nl bool) {
	p.w.WriteByte('\n')
	if !nl {
		p.w.WriteString(noNewline)
		if p.color {
			p.w.WriteString(colorReset)
		}
		p.w.WriteByte('\n')
	}
}

func (p *printer) context(i int) {
	p.preLine++
	l, nl := body(&p.a, i)
	p.plainLine("", ' ', l, nl)
}

func (p *printer) removed(i int) {
	p.preLine++
	l, nl := body(&p.a, i)
	p.plainLine(colorOld, '-', l, nl)
}

func (p *printer) added(i int) {
	l, nl := body(&p.b, i)
	if !p.color {
		p.plainLine("", '+', l, nl)
		return
	}
	if p.eofOld > 0 && p.preLine >= p.eofOld && i+1 >= p.eofNew && isBlank(l) {
		p.plainLine(colorWSError, '+', l, nl)
		return
	}
	w := p.w
	w.WriteString(colorNew)
	w.WriteByte('+')
	w.WriteString(colorReset)
	// Trailing whitespace (blank-at-eol).
	trail := len(l)
	for trail > 0 && isSpace(l[trail-1]) {
		trail--
	}
	// Leading spaces and tabs up to the last tab of the indentation: the
	// spaces there are before a tab (space-before-tab); the tabs are
	// written without colour.
	lastTab := -1
	for i := 0; i < trail; i++ {
		if c := l[i]; c == '\t' {
			lastTab = i
		} else if c != ' ' {
			break
		}
	}
	for i := 0; i <= lastTab; {
		j := i
		for j <= lastTab && l[j] == l[i] {
			j++
		}
		if l[i] == ' ' {
			w.WriteString(colorWSError)
			w.Write(l[i:j])
			w.WriteString(colorReset)
		} else {
			w.Write(l[i:j])
		}
		i = j
	}
	if lastTab+1 < trail {
		w.WriteString(colorNew)
		w.Write(l[lastTab+1 : trail])
		w.WriteString(colorReset)
	}
	if trail < len(l) {
		w.WriteString(colorWSError)
		w.Write(l[trail:])
		w.WriteString(colorReset)
	}
	p.endLine(nl)
}

// trailingBlank counts whitespace-only lines at the end of data the way
// git does for blank-at-eof, quirks included (determined by comparison
// with git): the scan goes back line by line from the end and stops, before
// looking at it, at a line that starts within the first two bytes of data.
func trailingBlank(data []byte) int {
	p := len(data) - 1 // last byte of the line being looked at
	if p >= 0 && data[p] == '\n' {
		p--
	}
	n := 0
	for p > 0 {
		e := p
		for e >= 0 && data[e] != '\n' {
			e--
		}
		if !isBlank(data[e+1 : p+1]) {
			break
		}
		n++
		p = e - 1
	}
	return n
}

func isBlank(l []byte) bool {
	for _, c := range l {
		if !isSpace(c) {
			return false
		}
	}
	return true
}
