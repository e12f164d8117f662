package rpcguard

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var small = Limits{MaxBytes: 4096, MaxDepth: 8, MaxValues: 20, MaxBatch: 3}

// scan runs a whole message through a checker, in pieces of n bytes.
func scan(lim Limits, msg string, n int) Verdict {
	c := newChecker(lim)
	for i := 0; i < len(msg); i += n {
		c.feed([]byte(msg[i:min(i+n, len(msg))]))
	}
	return c.finish()
}

func TestVerdicts(t *testing.T) {
	deep := func(n int) string {
		return `{"jsonrpc":"2.0","id":5,"method":"m","params":{"x":` + strings.Repeat("[", n-2) + strings.Repeat("]", n-2) + `}}`
	}
	for _, tc := range []struct {
		name, msg string
		method    string // passes with this method
		code      int    // refused with this code
		id        string // and answered for this id ("": not answered)
		why       string
	}{
		{name: "request", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, method: "tools/list"},
		{name: "notification", msg: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, method: "notifications/initialized"},
		{name: "response", msg: `{"jsonrpc":"2.0","id":"s1","result":{}}`},
		{name: "error response", msg: `{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no","data":[1]}}`},
		{name: "escaped key", msg: `{"jsonrpc":"2.0","\u0069d":3,"method":"ping"}`, method: "ping"},
		{name: "white space", msg: " \t{ \"jsonrpc\" : \"2.0\" , \"id\" : -7 , \"method\" : \"ping\" }\r\n", method: "ping"},
		{name: "string id", msg: `{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`, method: "ping"},
		{name: "depth at the limit", msg: deep(8), method: "m"},
		{name: "depth over", msg: deep(9), code: -32600, id: "5", why: "deeper than 8 levels"},
		{name: "depth over, id after", msg: `{"params":{"x":[[[[[[[[]]]]]]]]},"jsonrpc":"2.0","method":"m","id":"late"}`, code: -32600, id: "null", why: "deeper than 8"}, // the scan stops at the depth: an id after it is not known
		{name: "values over", msg: `{"jsonrpc":"2.0","id":6,"method":"m","params":{"x":[` + strings.Repeat("0,", 20) + `0]}}`, code: -32600, id: "6", why: "more than 20 values"},
		{name: "notification over", msg: `{"jsonrpc":"2.0","method":"m","params":{"x":[` + strings.Repeat("0,", 20) + `0]}}`, code: -32600},
		{name: "batch", msg: `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"two","method":"b"}]`,
			code: -32600, id: `[1,"two"]`, why: "batches are not supported"},
		{name: "batch of scalars", msg: `[1,2]`, code: -32600, id: `[null,null]`, why: "batches"},
		{name: "batch of notifications", msg: `[{"jsonrpc":"2.0","method":"n"}]`, code: -32600},
		{name: "empty batch", msg: `[]`, code: -32600, id: "null", why: "empty batch"},
		{name: "batch too long", msg: `[{},{},{},{}]`, code: -32600, id: "null", why: "more than 3 messages"},
		{name: "truncated", msg: `{"jsonrpc":"2.0","id":6,"meth`, code: -32700, id: "6", why: "ends inside a string"},
		{name: "truncated before the id", msg: `{"jsonrpc":"2.0","meth`, code: -32700, id: "null"},
		{name: "two values", msg: `{"jsonrpc":"2.0","id":1,"method":"a"} {}`, code: -32700, id: "1", why: "more than one JSON value"},
		{name: "NUL", msg: "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"a\x00\"}", code: -32700, id: "2", why: "control character byte 0x00"},
		{name: "NUL outside", msg: "{\"jsonrpc\":\"2.0\",\"id\":2\x00}", code: -32700, id: "2", why: "byte 0x00"},
		{name: "not UTF-8", msg: "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"a\",\"params\":{\"c\":\"\xff\"}}", code: -32700, id: "3", why: "not UTF-8 (0xFF)"},
		{name: "overlong UTF-8", msg: "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"\xc0\xaf\"}", code: -32700, id: "3", why: "not UTF-8"},
		{name: "surrogate in UTF-8", msg: "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"\xed\xa0\x80\"}", code: -32700, id: "3", why: "not UTF-8 (0xA0)"},
		{name: "null", msg: `null`, code: -32600, id: "null", why: "one JSON-RPC 2.0 object"},
		{name: "string", msg: `"hello"`, code: -32600, id: "null"},
		{name: "number", msg: `12`, code: -32600, id: "null"},
		{name: "no jsonrpc", msg: `{"id":3,"method":"a"}`, code: -32600, id: "3", why: `"jsonrpc" must be "2.0"`},
		{name: "object id", msg: `{"jsonrpc":"2.0","id":{},"method":"a"}`, code: -32600, id: "null", why: "the id must be"},
		{name: "fraction id", msg: `{"jsonrpc":"2.0","id":1.5,"method":"a"}`, code: -32600, id: "1.5", why: "the id must be"},
		{name: "huge id", msg: `{"jsonrpc":"2.0","id":12345678901234567890,"method":"a"}`, code: -32600, id: "12345678901234567890"},
		{name: "id past 2^53", msg: `{"jsonrpc":"2.0","id":9007199254740992,"method":"a"}`, code: -32600, id: "9007199254740992"},
		{name: "id at 2^53-1", msg: `{"jsonrpc":"2.0","id":-9007199254740991,"method":"a"}`, method: "a"},
		{name: "long id", msg: `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 5000) + `","method":"a"}`, code: -32600, id: "null"},
		{name: "duplicate id", msg: `{"jsonrpc":"2.0","id":1,"method":"a","id":2}`, code: -32600, id: "2", why: `"id" comes twice`},
		{name: "method not a string", msg: `{"jsonrpc":"2.0","id":4,"method":7}`, code: -32600, id: "4"},
		{name: "params not an object", msg: `{"jsonrpc":"2.0","id":5,"method":"a","params":[]}`, code: -32602, id: "5"},
		{name: "error of the wrong shape", msg: `{"jsonrpc":"2.0","id":7,"error":{"code":1.5,"message":"x"}}`, code: -32600},
		// The SDK's decoder fails on the first of a member that comes twice
		// (encoding/json keeps the last), which ended the session.
		{name: "error's code twice, the first wrong", msg: `{"jsonrpc":"2.0","id":7,"error":{"code":"x","code":1,"message":"m"}}`, code: -32600},
		{name: "error's message twice, the first wrong", msg: `{"jsonrpc":"2.0","id":7,"error":{"message":5,"message":"m","code":1}}`, code: -32600},
		{name: "error's code twice, one escaped", msg: `{"jsonrpc":"2.0","id":7,"error":{"\u0063ode":"x","code":1,"message":"m"}}`, code: -32600},
		{name: "error's code twice, both right", msg: `{"jsonrpc":"2.0","id":7,"error":{"code":1,"code":2,"message":"m"}}`, code: -32600},
		{name: "error not an object", msg: `{"jsonrpc":"2.0","id":7,"error":5}`, code: -32600},
		{name: "empty object", msg: `{}`, code: -32600, id: "null", why: `"jsonrpc" must be "2.0"`},
		{name: "neither, no id", msg: `{"jsonrpc":"2.0"}`, code: -32600, id: "null", why: "needs a method"},
		{name: "neither", msg: `{"jsonrpc":"2.0","id":8}`, code: -32600, id: "8", why: "needs a method"},
		{name: "big number", msg: `{"jsonrpc":"2.0","id":9,"method":"a","params":{"n":` + strings.Repeat("9", 3000) + `}}`, method: "a"},
		{name: "number then close", msg: `{"jsonrpc":"2.0","method":"a","id":10}`, method: "a"},
		{name: "leading zero", msg: `{"jsonrpc":"2.0","id":01,"method":"a"}`, code: -32700, id: "null", why: "leading zero"},
		{name: "trailing comma", msg: `{"jsonrpc":"2.0","id":11,"method":"a",}`, code: -32700, id: "11"},
		{name: "bad escape", msg: `{"jsonrpc":"2.0","id":12,"method":"\x"}`, code: -32700, id: "12", why: `invalid escape \x`},
	} {
		for _, n := range []int{1, 3, 1 << 20} {
			v := scan(small, tc.msg, n)
			if tc.code == 0 {
				if v.Refused || v.Method != tc.method {
					t.Errorf("%s (pieces of %d): %+v %s, want it passed with method %q", tc.name, n, v, v.Answer, tc.method)
				}
				continue
			}
			if !v.Refused {
				t.Errorf("%s (pieces of %d): passed, want code %d", tc.name, n, tc.code)
				continue
			}
			if !strings.Contains(v.Why, tc.why) {
				t.Errorf("%s: says %q, want %q in it", tc.name, v.Why, tc.why)
			}
			if tc.id == "" {
				if v.Answer != nil {
					t.Errorf("%s: answered %s; it must not be", tc.name, v.Answer)
				}
				continue
			}
			var answers []struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			a := v.Answer
			if !bytes.HasPrefix(a, []byte("[")) {
				a = append(append([]byte("["), a...), ']')
			}
			if err := json.Unmarshal(a, &answers); err != nil {
				t.Fatalf("%s: answer %s: %v", tc.name, v.Answer, err)
			}
			var ids []string
			for _, ans := range answers {
				ids = append(ids, string(ans.ID))
				if ans.JSONRPC != "2.0" || ans.Error.Message == "" || (ans.Error.Code != tc.code && !strings.Contains(tc.name, "batch")) {
					t.Errorf("%s: answer %s", tc.name, v.Answer)
				}
			}
			got := strings.Join(ids, ",")
			if bytes.HasPrefix(v.Answer, []byte("[")) {
				got = "[" + got + "]"
			}
			if got != tc.id {
				t.Errorf("%s (pieces of %d): answered for id %s, want %s", tc.name, n, got, tc.id)
			}
		}
	}
}

func TestBlank(t *testing.T) {
	for _, s := range []string{"", "\n", " \t\r\n"} {
		if v := scan(small, s, 1); !v.Blank {
			t.Errorf("%q: %+v, want blank", s, v)
		}
	}
}

// The scan agrees with encoding/json on what is JSON (and with
// unicode/utf8 on what is UTF-8), however the bytes are split.
func FuzzScanAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,true,false,null,"x\u00e9\n"]}`, `[]`, `{}`, `"\ud800"`, "\"\xe2\x82\xac\"", `-0.0E+1`, `{"a" 1}`, `[1,]`, `01`, `1.`, `"\q"`} {
		f.Add(s, uint8(3))
	}
	lim := Limits{MaxBytes: 1 << 30, MaxDepth: 1 << 20, MaxValues: 1 << 30, MaxBatch: 1 << 20}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		if strings.Count(s, "[")+strings.Count(s, "{") > 9000 {
			t.Skip() // encoding/json stops at 10000 levels
		}
		v := scan(lim, s, int(n)+1)
		want := json.Valid([]byte(s)) && utf8.ValidString(s)
		syntaxOK := !v.Refused || !strings.HasPrefix(v.Why, "parse error")
		if strings.Trim(s, " \t\r\n") == "" {
			want, syntaxOK = true, v.Blank
		}
		if syntaxOK != want {
			t.Fatalf("%q: scan says JSON %v (%s), encoding/json %v", s, syntaxOK, v.Why, want)
		}
	})
}

// A string is bounded by what it decodes to, however it is escaped: one
// that fits a file passes, one byte more is refused.
func TestStringBound(t *testing.T) {
	lim := Limits{MaxBytes: 1 << 20, MaxDepth: 10, MaxValues: 100, MaxBatch: 3, MaxString: 8}
	msg := func(s string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"w","params":{"c":` + s + `}}`
	}
	for _, tc := range []struct {
		s    string
		pass bool
	}{
		{`"12345678"`, true},
		{`"123456789"`, false},
		{`"\u00e9\u00e9\u00e9\u00e9"`, true},
		{`"\u00e9\u00e9\u00e9\u00e9a"`, false},
		{`"éééé"`, true},
		{`"éééé1"`, false},
		{`"\ud83d\ude00\ud83d\ude00"`, true},
		{`"\ud83d\ude00\ud83d\ude00\u0041"`, false},
		{`"\n\n\n\n\n\n\n\n"`, true},
		{`"\n\n\n\n\n\n\n\n\t"`, false},
		{`"漢字a\u0041"`, true},
		{`"漢字\u6f22"`, false},
	} {
		for _, n := range []int{1, 2, 1 << 20} {
			v := scan(lim, msg(tc.s), n)
			if v.Refused == tc.pass {
				t.Errorf("%s (pieces of %d): refused %v (%s), want %v", tc.s, n, v.Refused, v.Why, !tc.pass)
			}
			if v.Refused && !strings.Contains(v.Why, "a string longer than 8 B") {
				t.Errorf("%s: says %q", tc.s, v.Why)
			}
		}
	}
}

// BenchmarkScan reads messages of the shapes a worker sends: a large
// file's content (plain ASCII in one string, the fast path) and arguments
// dense with structure, numbers, escapes and UTF-8 (every byte through
// step).
func BenchmarkScan(b *testing.B) {
	lim := Limits{MaxBytes: 1 << 30, MaxDepth: 64, MaxValues: 1 << 30, MaxBatch: 8}
	dense := `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"edit","arguments":{"n":[` +
		strings.Repeat(`-12.5e+3,0,true,null,"a\u00e9\n\"é漢",{"k":[1,2,false]},`, 2000) + `1]}}}`
	plain := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.go","content":"` +
		strings.Repeat("package main // some code here\\n", 4000) + `"}}}`
	for _, bc := range []struct{ name, msg string }{{"dense", dense}, {"plain", plain}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.msg)))
			for i := 0; i < b.N; i++ {
				if v := scan(lim, bc.msg, 32<<10); v.Refused {
					b.Fatal(v.Why)
				}
			}
		})
	}
}
