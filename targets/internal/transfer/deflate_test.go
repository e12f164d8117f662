package transfer

import (
	"bytes"
	"compress/zlib"
	"io"
	"math/rand"
	"strings"
	"testing"
)

// Every stream packDeflater writes inflates, with zlib's checks, to what
// it was given, whatever came before it through the same deflater.
func TestPackDeflaterRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	random := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	padded := make([]byte, 2048)
	copy(padded, "file 17\n")
	text := []byte(strings.Repeat("func (z *packDeflater) compress(out *bytes.Buffer, data []byte) {\n\tz.out = out\n}\n", 500))
	var inputs [][]byte
	inputs = append(inputs, nil, []byte("x"), []byte("abc"), []byte("abcd"), []byte("aaaaaaaa"), padded, text,
		make([]byte, 70000), random(10), random(100_000), append(random(40_000), random(40_000)...))
	for n := 0; n < 600; n += 7 {
		inputs = append(inputs, bytes.Repeat([]byte{byte(n)}, n))
	}
	// Long matches at every distance class, up to the window's end.
	for _, d := range []int{1, 2, 3, 4, 5, 100, 257, 1000, 4097, 20000, 32767, 32768, 32769, 40000} {
		b := random(d)
		inputs = append(inputs, append(b, b[:min(d, 600)]...))
	}
	// Small alphabets: many short matches and literals.
	for _, k := range []int{2, 3, 5, 20} {
		b := make([]byte, 50_000)
		for i := range b {
			b[i] = byte('a' + rng.Intn(k))
		}
		inputs = append(inputs, b)
	}
	var z packDeflater
	for round := 0; round < 2; round++ {
		for i, in := range inputs {
			checkDeflate(t, &z, in, i)
		}
	}
}

func checkDeflate(t *testing.T, z *packDeflater, in []byte, i int) {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("prefix") // a stream is appended, not written from the start
	z.compress(&out, in)
	r, err := zlib.NewReader(bytes.NewReader(out.Bytes()[6:]))
	if err != nil {
		t.Fatalf("input %d (%d bytes): %v", i, len(in), err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("input %d (%d bytes): %v", i, len(in), err)
	}
	if !bytes.Equal(got, in) {
		t.Fatalf("input %d (%d bytes): inflated to %d different bytes", i, len(in), len(got))
	}
	if max := 6 + 2 + len(in) + 5*max(1, (len(in)+65534)/65535) + 4; out.Len() > max {
		t.Fatalf("input %d (%d bytes): %d bytes out, more than stored blocks take (%d)", i, len(in), out.Len(), max)
	}
}

func FuzzPackDeflater(f *testing.F) {
	f.Add([]byte("file 1\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), []byte("abcabcabcabc"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var z packDeflater
		checkDeflate(t, &z, a, 0)
		checkDeflate(t, &z, b, 1)
		checkDeflate(t, &z, append(a, b...), 2)
	})
}
