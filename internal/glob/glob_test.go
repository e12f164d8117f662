package glob

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		whole, prefix bool
	}{
		{"*.go", "main.go", true, true},
		{"*.go", "cmd/main.go", false, false},
		{"cmd/*.go", "cmd/main.go", true, true},
		{"**/*.go", "main.go", true, true},
		{"**/*.go", "a/b/c/main.go", true, true},
		{"**/*.go", "a/b/c/main.c", false, false},
		{"a/**", "a", true, true},
		{"a/**", "a/b/c", true, true},
		{"a/**/c", "a/c", true, true},
		{"a/**/c", "a/b/x/c", true, true},
		{"a/**/c", "a/b/x/c/d", false, true},
		{".ssh", ".ssh/id_rsa", false, true},
		{"id_rsa*", "id_rsa.pub", true, true},
		{"*.pem", "x.pem", true, true},
		{"x[0-9]", "x7", true, true},
		{"x?", "xy", true, true},
		{"x?", "xyz", false, false},
		{"a*b**c", "aXbYc", true, true}, // "**" inside a segment is "*"
		{"**", "anything/at/all", true, true},
		{"**/**/**/x", "x", true, true},
		{"**/**/**/x", "a/b/c/d/x", true, true},
		{"**/**/**/x", "a/b/c/d/y", false, false},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pattern, err)
		}
		comps := strings.Split(tt.path, "/")
		if got := p.Match(comps); got != tt.whole {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pattern, tt.path, got, tt.whole)
		}
		if got := p.MatchPrefix(comps); got != tt.prefix {
			t.Errorf("%q.MatchPrefix(%q) = %v, want %v", tt.pattern, tt.path, got, tt.prefix)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, pat := range []string{"", "/", "a/[x", strings.Repeat("a", MaxLen+1), `x\`} {
		if _, err := Compile(pat); !errors.Is(err, ErrBadPattern) {
			t.Errorf("Compile(%.40q) = %v, want ErrBadPattern", pat, err)
		}
	}
}

func TestMatchName(t *testing.T) {
	p, _ := Compile("*.md")
	if !p.Single() || !p.MatchName("README.md") || p.MatchName("x.go") {
		t.Error("single-segment pattern")
	}
	q, _ := Compile("**/*.md")
	if q.Single() || q.MatchName("README.md") {
		t.Error(`"**/*.md" is not a single segment`)
	}
}

// naive is the backtracking matcher the table replaces: exponential on
// some patterns, obviously right on small ones.
func naive(segs, comps []string) bool {
	if len(segs) == 0 {
		return len(comps) == 0
	}
	if segs[0] == "**" {
		for k := 0; k <= len(comps); k++ {
			if naive(segs[1:], comps[k:]) {
				return true
			}
		}
		return false
	}
	if len(comps) == 0 {
		return false
	}
	ok, _ := path.Match(segs[0], comps[0])
	return ok && naive(segs[1:], comps[1:])
}

func TestAgainstNaive(t *testing.T) {
	segs := []string{"**", "a", "*", "b*", "?"}
	paths := [][]string{{}, {"a"}, {"b"}, {"a", "b"}, {"a", "a", "a"}, {"bb", "a", "c"}, {"x", "y", "a", "bz"}}
	// Every pattern of up to four segments from segs.
	var pats [][]string
	var gen func(cur []string)
	gen = func(cur []string) {
		if len(cur) > 0 {
			pats = append(pats, append([]string(nil), cur...))
		}
		if len(cur) == 4 {
			return
		}
		for _, s := range segs {
			gen(append(cur, s))
		}
	}
	gen(nil)
	for _, ps := range pats {
		p, err := CompileSegments(ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, comps := range paths {
			if got, want := p.Match(comps), naive(ps, comps); got != want {
				t.Errorf("%q.Match(%q) = %v, naive says %v", ps, comps, got, want)
			}
		}
	}
}

// TestManyStarsLinear is the hostile pattern from issue 10: hundreds of "**"
// against a deep path. Backtracking never returns; the table answers at once.
func TestManyStarsLinear(t *testing.T) {
	pat := strings.Repeat("**/a*/", 170) + "z"
	p, err := Compile(pat)
	if err != nil {
		t.Fatal(err)
	}
	comps := strings.Split(strings.Repeat("a/", 4000)+"b", "/")
	if p.Match(comps) || p.MatchPrefix(comps) {
		t.Error("matched a path without z")
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("**/*.go", "a/b.go")
	f.Add("a/**/b", "a/x/y/b")
	f.Fuzz(func(t *testing.T, pat, p string) {
		segs := strings.Split(pat, "/")
		if len(segs) > 6 || strings.Contains(pat, "//") || strings.HasPrefix(pat, "/") || strings.HasSuffix(pat, "/") {
			return
		}
		for _, s := range segs {
			if s != "**" && strings.Contains(s, "**") {
				return
			}
		}
		c, err := Compile(pat)
		if err != nil {
			return
		}
		comps := strings.Split(p, "/")
		if len(comps) > 8 {
			return
		}
		if got, want := c.Match(comps), naive(segs, comps); got != want {
			t.Errorf("%q.Match(%q) = %v, naive says %v", pat, p, got, want)
		}
	})
}
