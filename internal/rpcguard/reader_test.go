package rpcguard

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/heapwatch"
)

// Lines that pass come out whole and in order, however small the reads;
// the others are answered and never come out.
func TestReaderPassesAndRefuses(t *testing.T) {
	a := `{"jsonrpc":"2.0","method":"a"}`
	b := `{"jsonrpc":"2.0","id":2,"method":"b","params":{"s":"` + strings.Repeat("é", 300) + `"}}`
	last := `{"jsonrpc":"2.0","id":3,"method":"c"}` // no newline: the end of input
	in := strings.Join([]string{
		a,
		`{"jsonrpc":"2.0","id":7,"method":"big","params":{"s":"` + strings.Repeat("x", 5000) + `"}}`,
		"",
		"   ",
		`[{"jsonrpc":"2.0","id":8,"method":"x"}]`,
		b,
		`{"jsonrpc":"2.0","method":"bignotice","params":{"s":"` + strings.Repeat("y", 5000) + `"}}`,
		`{"params":{"s":"` + strings.Repeat("z", 5000) + `"},"jsonrpc":"2.0","method":"m","id":"late"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"nul\x00\"}",
		last,
	}, "\n")
	var answers bytes.Buffer
	var whys []string
	r := NewReader(strings.NewReader(in), &answers, small, func(why string) { whys = append(whys, why) })
	var got bytes.Buffer
	buf := make([]byte, 7)
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := a + "\n" + b + "\n" + last + "\n"; got.String() != want {
		t.Errorf("passed:\n%s\nwant:\n%s", got.String(), want)
	}
	lines := strings.Split(strings.TrimSpace(answers.String()), "\n")
	want := []string{`"id":7`, `"id":8`, `"id":"late"`, `"id":9`}
	if len(lines) != len(want) {
		t.Fatalf("answers:\n%s", answers.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) || !json.Valid([]byte(lines[i])) {
			t.Errorf("answer %d: %s, want %s", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[0], "larger than 4 KiB") || !strings.Contains(lines[0], "max_file_bytes") {
		t.Errorf("the answer to an oversized line does not say what was too big and what to do: %s", lines[0])
	}
	if len(whys) != 5 { // the notification is refused too, unanswered
		t.Errorf("the operator heard of %d refusals: %q", len(whys), whys)
	}
}

// stream is a message of n bytes made as it is read, then a line that
// passes: a test that holds no copy of what it sends.
type stream struct {
	head, tail string
	fill       byte
	n          int64 // fill bytes to come
	off        int
}

func (s *stream) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		switch {
		case s.off < len(s.head):
			c := copy(p[w:], s.head[s.off:])
			s.off += c
			w += c
		case s.n > 0:
			c := min(int64(len(p)-w), s.n)
			for i := range c {
				p[w+int(i)] = s.fill
			}
			s.n -= c
			w += int(c)
		case s.off-len(s.head) < len(s.tail):
			c := copy(p[w:], s.tail[s.off-len(s.head):])
			s.off += c
			w += c
		default:
			if w == 0 {
				return 0, io.EOF
			}
			return w, nil
		}
	}
	return w, nil
}

// Refusing the largest messages costs less than twice the line limit:
// a line over it is let go as it streams in, a deep one as soon as it
// is too deep; the next line still comes through.
func TestRefusalMemory(t *testing.T) {
	lim := ForMaxFile(10 << 20) // the default max_file_bytes: 61 MiB a line
	next := `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"
	for _, tc := range []struct {
		name string
		s    *stream
	}{
		{"a line twice the limit", &stream{
			head: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a","content":"`,
			fill: 'a', n: 2 * lim.MaxBytes, tail: `"}}}` + "\n" + next}},
		{"a line just over the limit", &stream{
			head: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a","content":"`,
			fill: 'a', n: lim.MaxBytes, tail: `"}}}` + "\n" + next}},
		{"nesting as deep as the limit is long", &stream{head: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":`,
			fill: '[', n: lim.MaxBytes, tail: "\n" + next}},
		{"a 5,000,000-element array", &stream{head: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":[0`,
			fill: ',', n: 0, tail: strings.Repeat(",0", 5_000_000) + "]}}\n" + next}},
	} {
		var answers bytes.Buffer
		r := NewReader(tc.s, &answers, lim, nil)
		var got []byte
		stop := heapwatch.Start()
		got, err := io.ReadAll(r)
		peak := stop()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != next {
			t.Errorf("%s: passed %.200q, want the next line", tc.name, got)
		}
		if !strings.Contains(answers.String(), `"id":1`) {
			t.Errorf("%s: answered %.300s", tc.name, answers.String())
		}
		t.Logf("%s: peak heap %s while refusing it (the line limit is %s)", tc.name, bytesize.Format(int64(peak.Heap)), lim)
		if peak.Heap >= uint64(2*lim.MaxBytes) {
			t.Errorf("%s: the heap rose by %s, over twice the line limit (%s)", tc.name, bytesize.Format(int64(peak.Heap)), lim)
		}
	}
}
