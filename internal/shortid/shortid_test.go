package shortid

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestHash(t *testing.T) {
	h := plumbing.NewHash("8ab686eafeb1f44702738c8b0f24f2567c36da6d")
	for _, c := range []struct {
		name string
		got  string
		want string
	}{
		{"Hash", Hash(h), "8ab686e"},
		{"Hash of zero", Hash(plumbing.ZeroHash), "0000000"},
		{"HashOr", HashOr(h, "(none)"), "8ab686e"},
		{"HashOr of zero", HashOr(plumbing.ZeroHash, "(none)"), "(none)"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestHex(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "none"},
		{"abc", "abc"},
		{"0123456789ab", "0123456789ab"},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "0123456789ab"},
	} {
		if got := Hex(c.in); got != c.want {
			t.Errorf("Hex(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
