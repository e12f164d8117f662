package rpcguard

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Verdict is what the scan of one message decided.
type Verdict struct {
	// Blank: the line held only white space; it is skipped.
	Blank bool
	// Refused: the message is not passed on. Answer, when not nil, is
	// what to answer (a JSON-RPC error, or an array of them for a batch,
	// without a newline); a notification or a response is not answered.
	Refused bool
	Answer  []byte
	// Why is the refusal's message, Code its JSON-RPC error code.
	Why  string
	Code int
	// TooLarge: refused for its size (HTTP answers 413).
	TooLarge bool
	// Method is the method of a message that passes ("" for a response).
	Method string
}

// maxSafeInt is the largest integer id the SDK hands back as it came: it
// reads an id as a float64 and answers it as an int64.
const maxSafeInt = 1<<53 - 1

// finish decides on the message once it has ended.
func (c *checker) finish() Verdict {
	if !c.dead {
		switch c.st {
		case stNumZero, stNumInt, stNumFrac, stNumExp:
			c.endNumber(false)
		}
		switch {
		case c.st == stValue && c.depth == 0 && c.top == 0:
			return Verdict{Blank: true}
		case c.st != stDone:
			c.syntax(c.off, "the line ends inside %s, before the JSON value does", c.inside())
		}
	}
	if c.refusal == nil {
		c.envelope()
	}
	if c.refusal == nil {
		var method string
		// A method that is not a string stays "": the SDK answers it.
		_ = json.Unmarshal(c.m.raw[mMethod], &method)
		return Verdict{Method: method}
	}
	return Verdict{Refused: true, Answer: c.answer(), Why: c.refusal.msg, Code: c.refusal.code}
}

// Reply is what to answer a refused message with where every message
// gets an answer (an HTTP request): its Answer, or an error without an id
// for a notification or a response.
func (v Verdict) Reply() []byte {
	if v.Answer != nil {
		return v.Answer
	}
	return errorLine(nil, v.Code, v.Why)
}

// inside says what a truncated message was in the middle of.
func (c *checker) inside() string {
	switch {
	case c.inString():
		return "a string"
	case c.st >= stNumMinus && c.st <= stNumExp:
		return "a number"
	case c.st == stLiteral:
		return "a literal"
	case c.depth > 0 && c.object():
		return "an object"
	case c.depth > 0:
		return "an array"
	}
	return "the message"
}

// envelope checks what the SDK requires of a message it decodes; anything
// else would end its session.
func (c *checker) envelope() {
	switch c.top {
	case '{':
	case '[':
		switch {
		case c.batchN == 0:
			c.refuse(-32600, "invalid request: an empty batch; send each JSON-RPC message on its own line (stdio) or in its own request (HTTP)")
		case c.batchN > c.lim.MaxBatch:
			c.refuse(-32600, "invalid request: a batch of more than %d messages, and batches are not supported: "+
				"send each JSON-RPC message on its own line (stdio) or in its own request (HTTP)", c.lim.MaxBatch)
		default:
			c.refuse(-32600, "invalid request: batches are not supported: send each JSON-RPC message on its own line (stdio) or in its own request (HTTP)")
		}
		return
	default:
		c.refuse(-32600, "invalid request: a message must be one JSON-RPC 2.0 object")
		return
	}
	m := &c.m
	if m.dup != mOther {
		c.refuse(-32600, "invalid request: the member %q comes twice; send it once", memberName(m.dup))
		return
	}
	var version string
	if !m.seen[mJSONRPC] || m.over[mJSONRPC] || json.Unmarshal(m.raw[mJSONRPC], &version) != nil || version != "2.0" {
		c.refuse(-32600, `invalid request: "jsonrpc" must be "2.0"`)
		return
	}
	if m.seen[mID] && !validID(m.raw[mID], m.over[mID]) {
		c.refuse(-32600, "invalid request: the id must be a string of at most %d bytes or an integer from -%d to %d", maxSmall, maxSafeInt, maxSafeInt)
		return
	}
	switch {
	case m.seen[mMethod]:
		var method string
		switch {
		case m.over[mMethod]:
			c.refuse(-32600, "invalid request: the method is longer than %d bytes", maxSmall)
		case json.Unmarshal(m.raw[mMethod], &method) != nil || method == "":
			c.refuse(-32600, "invalid request: the method must be a non-empty string")
		case m.seen[mParams] && m.first[mParams] != '{':
			c.refuse(-32602, "invalid params: params must be an object")
		}
	case (m.seen[mResult] || m.seen[mError]) && m.seen[mID]:
		// A response to a request of the server's.
		switch {
		case m.over[mError]:
			c.refuse(-32600, "invalid response: the error object is larger than %d bytes", maxError)
		case m.seen[mError] && !validError(m.raw[mError]):
			c.refuse(-32600, `invalid response: an error must be an object with an integer "code" and a string "message"`)
		}
	default:
		c.refuse(-32600, "invalid request: a message needs a method (a request or notification) or a result or error with an id (a response)")
	}
}

func memberName(m member) string {
	for k, v := range memberNames {
		if v == m {
			return k
		}
	}
	return "?"
}

// validID reports whether the SDK takes an id as it came and answers it
// with the same: a string, or an integer a float64 holds exactly.
func validID(raw []byte, over bool) bool {
	if over || len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		return true
	}
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || len(digits) > 16 || (digits[0] == '0' && len(raw) > 1) {
		return false // -0 and leading zeros included: not the same on the way back
	}
	for _, d := range digits {
		if d < '0' || d > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	return err == nil && n <= maxSafeInt
}

// validError reports whether the SDK decodes a response's error member.
// Every member is checked where it comes, not only the last of a name:
// the SDK's decoder (segmentio's) stops at the first value of the wrong
// type, where encoding/json would keep the last, and that failure ends
// the session. A member that comes twice is refused whatever its values.
func validError(raw []byte) bool {
	if string(raw) == "null" {
		return true
	}
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the '{'
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok || seen[key] {
			return false
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return false
		}
		switch key {
		case "code":
			if _, err := strconv.ParseInt(string(val), 10, 64); err != nil {
				return false
			}
		case "message":
			var s string
			if len(val) == 0 || val[0] != '"' || json.Unmarshal(val, &s) != nil {
				return false
			}
		}
	}
	return true
}

// usableID is an id to answer with: the client's own, when it is a
// string or a number, even one the SDK would not take back intact;
// nil for anything else.
func usableID(raw []byte) []byte {
	if len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return bytes.Clone(raw)
	}
	return nil
}

// answer is the error to answer a refused message with; nil when nothing
// is answered (a notification, a response).
func (c *checker) answer() []byte {
	msg := c.refusal.msg
	if c.top == '[' {
		return c.batchAnswer(msg)
	}
	m := &c.m
	var id []byte
	switch {
	case c.top != '{':
	case m.seen[mID] && m.done[mID] && !m.over[mID]:
		id = usableID(m.raw[mID])
	case m.seen[mID]:
	case !c.dead && (m.seen[mMethod] || m.seen[mResult] || m.seen[mError]):
		return nil // a notification, or a response without an id: nothing to answer
	}
	if c.top == '{' && !c.dead && !m.seen[mMethod] && (m.seen[mResult] || m.seen[mError]) {
		return nil // a response is never answered
	}
	return errorLine(id, c.refusal.code, msg)
}

func (c *checker) batchAnswer(msg string) []byte {
	if c.dead || c.batchN == 0 || c.batchN > c.lim.MaxBatch {
		// Not a list of messages whose ids are known: one answer.
		return errorLine(nil, c.refusal.code, msg)
	}
	var out [][]byte
	for _, e := range c.batch {
		if e.object && !e.hasID {
			continue // a notification
		}
		out = append(out, errorLine(e.id, c.refusal.code, msg))
	}
	if len(out) == 0 {
		return nil
	}
	return append(append([]byte("["), bytes.Join(out, []byte(","))...), ']')
}

// errorLine is a JSON-RPC error response for id (null when nil).
func errorLine(id []byte, code int, msg string) []byte {
	if id == nil {
		id = []byte("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg}})
	if err != nil { // an id that is not JSON cannot come from the scan
		return errorLine(nil, code, msg)
	}
	return b
}
