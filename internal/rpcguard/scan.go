package rpcguard

import (
	"encoding/json"
	"fmt"
)

// checker reads one message as it streams in, byte by byte, as a JSON
// parser would, keeping only its nesting (a bit a level) and the few
// top-level members a refusal or the SDK depends on. It never decodes the
// message: what it learns is enough to refuse it or to let it pass.
type checker struct {
	lim Limits
	st  state
	off int64 // bytes seen before the current feed

	depth  int
	stack  []uint64 // bit d set: level d+1 is an object
	values int

	inKey  bool   // the string being read is an object's key
	lit    string // the rest of true, false or null to come
	hex    int    // hex digits of a \u escape to come
	hexVal rune   // the code unit of the \u escape so far
	strLen int64  // the bytes the string being read decodes to so far
	utf    int    // continuation bytes of a UTF-8 sequence to come
	utfLo  byte   // the range the next continuation byte must be in
	utfHi  byte
	numEnd bool // the byte that ended a number is to be read again

	top  byte // the first byte of the message's value
	dead bool // a syntax error: nothing more can be learnt

	refusal *refusal // the first reason to refuse, nil while none

	// The members of the tracked object: the message's, or in a batch
	// the element's being read.
	key      []byte
	keyOver  bool
	keyOn    bool   // the key being read is the tracked object's
	member   member // the member whose value comes next
	capture  *[]byte
	capLimit int
	capDepth int // the depth of the tracked object
	m        members
	batch    []element // a batch's elements so far
	batchN   int       // how many elements, counted past MaxBatch too
}

type state uint8

const (
	stValue        state = iota // a value must come
	stValueOrClose              // after '[': a value or ']'
	stKeyOrClose                // after '{': a key or '}'
	stKey                       // after ',' in an object: a key
	stColon                     // after a key
	stAfter                     // after a value in a container: ',' or its close
	stDone                      // after the message's value: white space only
	stString
	stEscape
	stHex
	stUTF8
	stNumMinus // after '-'
	stNumZero  // after a leading 0
	stNumInt
	stNumDot
	stNumFrac
	stNumE
	stNumESign
	stNumExp
	stLiteral
)

type member uint8

const (
	mOther member = iota
	mJSONRPC
	mID
	mMethod
	mParams
	mResult
	mError
	nMembers
)

var memberNames = map[string]member{"jsonrpc": mJSONRPC, "id": mID, "method": mMethod, "params": mParams, "result": mResult, "error": mError}

// members are what is known of the tracked object's members: whether each
// came, its first byte, and for the small ones their raw JSON.
type members struct {
	seen  [nMembers]bool
	first [nMembers]byte
	raw   [nMembers][]byte
	over  [nMembers]bool // raw was cut at its limit
	done  [nMembers]bool // the value was read to its end
	dup   member         // a member that came twice (mOther: none)
}

// element is one message of a batch: whether it is an object, and its id.
type element struct {
	object bool
	hasID  bool
	id     []byte // nil: none usable
}

const (
	maxSmall = 4096  // id, method, jsonrpc
	maxError = 65536 // a response's error object
	maxKey   = 64    // longer keys are none of the members looked for
)

func newChecker(lim Limits) *checker { return &checker{lim: lim} }

// refusal is why a message is not passed on: a JSON-RPC error code and
// what to tell the client.
type refusal struct {
	code int
	msg  string
}

func (c *checker) refuse(code int, format string, args ...any) {
	if c.refusal == nil {
		c.refusal = &refusal{code: code, msg: fmt.Sprintf(format, args...)}
	}
}

// syntax stops the scan at a syntax error at byte pos: past it, nothing
// can be learnt (an id after it would be a guess).
func (c *checker) syntax(pos int64, format string, args ...any) {
	c.dead = true
	if c.refusal == nil {
		c.refusal = &refusal{code: -32700,
			msg: fmt.Sprintf("parse error at byte %d: %s; send one JSON-RPC 2.0 message, as UTF-8 JSON, per line (stdio) or per request (HTTP)", pos, fmt.Sprintf(format, args...))}
	}
}

// feed reads the next bytes of the message.
func (c *checker) feed(p []byte) {
	base := c.off
	c.off += int64(len(p))
	for i := 0; i < len(p) && !c.dead; i++ {
		if c.st == stString {
			// The common case, and the bulk of a large message: plain
			// ASCII inside a string.
			j := i
			for j < len(p) {
				if b := p[j]; b < 0x20 || b == '"' || b == '\\' || b >= 0x80 {
					break
				}
				j++
			}
			if j > i {
				c.keep(p[i:j])
				c.strGrow(int64(j-i), base+int64(j))
				i = j
				if i == len(p) {
					break
				}
			}
		}
		b := p[i]
		c.keep(p[i : i+1])
		c.step(b, base+int64(i))
		if c.numEnd {
			// A number ends at the first byte not its own, which is
			// then read again as what follows it.
			c.numEnd = false
			c.step(b, base+int64(i))
		}
	}
}

// keep adds bytes of the value being captured, and of a tracked key.
func (c *checker) keep(p []byte) {
	if c.capture != nil {
		if len(*c.capture)+len(p) <= c.capLimit {
			*c.capture = append(*c.capture, p...)
		} else {
			c.m.over[c.member] = true
		}
	}
	if c.keyOn && c.inString() {
		if len(c.key)+len(p) <= maxKey {
			c.key = append(c.key, p...)
		} else {
			c.keyOver = true
		}
	}
}

func (c *checker) inString() bool {
	return c.st == stString || c.st == stEscape || c.st == stHex || c.st == stUTF8
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// step reads one byte in the state the scan is in. The states come in
// four runs (see state), each read by its own function, so no one of them
// is long; a string's plain bytes do not come here (feed reads them).
func (c *checker) step(b byte, pos int64) {
	switch {
	case c.st <= stDone:
		c.stepStructure(b, pos)
	case c.st <= stUTF8:
		c.stepString(b, pos)
	case c.st == stLiteral:
		if b != c.lit[0] {
			c.syntax(pos, "%s in a literal (true, false or null)", show(b))
			return
		}
		if c.lit = c.lit[1:]; c.lit == "" {
			c.endValue()
		}
	default:
		c.stepNumber(b, pos)
	}
}

// stepStructure reads a byte between values: white space, a container's
// punctuation, or a value's first byte.
func (c *checker) stepStructure(b byte, pos int64) {
	switch c.st {
	case stValue, stValueOrClose:
		switch {
		case isSpace(b):
		case b == ']' && c.st == stValueOrClose:
			c.close()
		default:
			c.begin(b, pos)
		}
	case stKeyOrClose, stKey:
		switch {
		case isSpace(b):
		case b == '}' && c.st == stKeyOrClose:
			c.close()
		case b == '"':
			c.st, c.inKey, c.strLen = stString, true, 0
			c.keyOn = c.tracked()
			c.key, c.keyOver = c.key[:0], false
		default:
			c.syntax(pos, "%s where an object's key (a string) must be", show(b))
		}
	case stColon:
		switch {
		case isSpace(b):
		case b == ':':
			c.st = stValue
		default:
			c.syntax(pos, "%s where ':' must follow a key", show(b))
		}
	case stAfter:
		obj := c.object()
		switch {
		case isSpace(b):
		case b == ',' && obj:
			c.st = stKey
		case b == ',':
			c.st = stValue
		case b == '}' && obj, b == ']' && !obj:
			c.close()
		default:
			c.syntax(pos, "%s after a value, where ',' or %s must be", show(b), map[bool]string{true: "'}'", false: "']'"}[obj])
		}
	case stDone:
		if !isSpace(b) {
			c.syntax(pos, "%s after the message's end: more than one JSON value on a line", show(b))
		}
	}
}

// begin starts a value with its first byte.
func (c *checker) begin(b byte, pos int64) {
	if c.depth == 0 {
		c.top = b
	} else if c.values++; c.values > c.lim.MaxValues {
		c.refuse(-32600, "the message holds more than %d values (array elements and object members; the %dth is at byte %d): "+
			"nothing was done; send fewer at a time", c.lim.MaxValues, c.lim.MaxValues+1, pos)
	}
	if c.top == '[' && c.depth == 1 {
		c.element(b)
	}
	if c.depth > 0 && c.tracked() && c.object() {
		c.memberStart(b)
	}
	switch {
	case b == '{' || b == '[':
		c.push(b == '{', pos)
	case b == '"':
		c.st, c.inKey, c.strLen = stString, false, 0
	case b == '-':
		c.st = stNumMinus
	case b == '0':
		c.st = stNumZero
	case b >= '1' && b <= '9':
		c.st = stNumInt
	case b == 't':
		c.st, c.lit = stLiteral, "rue"
	case b == 'f':
		c.st, c.lit = stLiteral, "alse"
	case b == 'n':
		c.st, c.lit = stLiteral, "ull"
	default:
		c.syntax(pos, "%s where a value must be", show(b))
	}
}

func (c *checker) push(object bool, pos int64) {
	c.depth++
	if c.depth > c.lim.MaxDepth {
		c.refuse(-32600, "the message nests objects and arrays deeper than %d levels (at byte %d): nothing was done; send flatter arguments",
			c.lim.MaxDepth, pos)
		// The scan stops here: following the nesting further would cost
		// a bit a level however long the line, and an id is rarely
		// after the arguments.
		c.dead = true
		return
	}
	w, bit := (c.depth-1)/64, uint((c.depth-1)%64)
	for len(c.stack) <= w {
		c.stack = append(c.stack, 0)
	}
	if object {
		c.stack[w] |= 1 << bit
		c.st = stKeyOrClose
		if c.depth == 1 {
			c.capDepth = 1
		}
	} else {
		c.stack[w] &^= 1 << bit
		c.st = stValueOrClose
		if c.depth == 1 {
			c.capDepth = 2 // a batch: its elements are tracked
		}
	}
}

// object reports whether the innermost open container is an object.
func (c *checker) object() bool {
	d := c.depth - 1
	return d >= 0 && c.stack[d/64]&(1<<uint(d%64)) != 0
}

func (c *checker) close() {
	if c.top == '[' && c.depth == 2 {
		c.elementEnd()
	}
	c.depth--
	c.endValue()
}

// endValue moves on after a value ends.
func (c *checker) endValue() {
	if c.capture != nil && c.depth == c.capDepth {
		c.m.done[c.member] = true
		c.capture = nil
	}
	if c.depth == 0 {
		c.st = stDone
	} else {
		c.st = stAfter
	}
}

// endNumber ends a number; ended says a byte not its own ended it, which
// was kept with it and is to be read again.
func (c *checker) endNumber(ended bool) {
	if ended && c.capture != nil && c.depth == c.capDepth && len(*c.capture) > 0 && !c.m.over[c.member] {
		*c.capture = (*c.capture)[:len(*c.capture)-1]
	}
	c.endValue()
	c.numEnd = ended
}

func (c *checker) endString() {
	if !c.inKey {
		c.endValue()
		return
	}
	c.st, c.inKey = stColon, false
	c.member = mOther
	if c.keyOn {
		c.keyOn = false
		if !c.keyOver && len(c.key) > 0 {
			name := string(c.key[:len(c.key)-1]) // without its closing quote
			if json.Valid([]byte(`"` + name + `"`)) {
				// An escaped key names the same member as its plain form,
				// as the SDK decodes it.
				_ = json.Unmarshal([]byte(`"`+name+`"`), &name) // valid: checked above
			}
			c.member = memberNames[name]
		}
	}
}

// tracked reports whether the innermost object is the one whose members
// are looked for.
func (c *checker) tracked() bool { return c.depth == c.capDepth }

// memberStart notes the start of a tracked member's value.
func (c *checker) memberStart(b byte) {
	m := c.member
	if m == mOther {
		return
	}
	if c.m.seen[m] && c.m.dup == mOther {
		c.m.dup = m
	}
	c.m.seen[m], c.m.first[m] = true, b
	c.m.raw[m], c.m.over[m], c.m.done[m] = c.m.raw[m][:0], false, false
	switch m {
	case mJSONRPC, mID, mMethod:
		c.capLimit = maxSmall
	case mError:
		c.capLimit = maxError
	default:
		return
	}
	c.capture = &c.m.raw[m]
	*c.capture = append(*c.capture, b)
}

// element starts a batch's element.
func (c *checker) element(b byte) {
	c.batchN++
	c.m = members{}
	if c.batchN <= c.lim.MaxBatch {
		c.batch = append(c.batch, element{object: b == '{'})
	}
}

func (c *checker) elementEnd() {
	if c.batchN <= c.lim.MaxBatch && c.m.seen[mID] {
		e := &c.batch[len(c.batch)-1]
		e.hasID = true
		if c.m.done[mID] && !c.m.over[mID] {
			e.id = usableID(c.m.raw[mID])
		}
	}
}
