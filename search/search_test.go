package search

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"regexp/syntax"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/memfs"
)

// refSearch is search_files as it was before the parallel search (files.go
// at 1597716: fs.WalkDir, a copy of each file, strings.Split, the regexp on
// every line), kept as the reference the new search must agree with. Two
// fixes the new search makes are made here too, each marked "fixed:".
func refSearch(ws *memfs.Workspace, a Query) (string, error) {
	// The arguments are checked as search_files checks them: the
	// reference is for what is found, not for the checks.
	q, err := a.query()
	if err != nil {
		return "", err
	}
	g, re, max, root := q.glob, q.re, q.max, q.root
	var out []string
	total := 0
	err = fs.WalkDir(ws.FS(), root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if root == "." {
			// fixed: TrimPrefix(p, ".") cut the dot off ".github/ci.yml",
			// so a glob of several segments missed dot-directories.
			rel = p
		}
		if !MatchGlob(g, rel, d.Name(), true) {
			return nil
		}
		data, err := ws.ReadFile(p)
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			return nil
		}
		lines := strings.Split(string(data), "\n")
		if lines[len(lines)-1] == "" {
			// fixed: the empty text after the last '\n' (or of an empty
			// file) is no line; read_file does not count it, and x* or ^$
			// reported it as one in every file.
			lines = lines[:len(lines)-1]
		}
		for i, line := range lines {
			if re.MatchString(line) {
				total++
				if len(out) < max {
					if len(line) > lineMax {
						line = line[:lineMax] + "..."
					}
					out = append(out, fmt.Sprintf("%s:%d: %s", p, i+1, line))
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if total == 0 {
		return "(no matches)", nil
	}
	res := strings.Join(out, "\n")
	if total > len(out) {
		res += fmt.Sprintf("\n[%d matches in all, %d shown; raise max_results (up to %d) or narrow path, glob or pattern]", total, len(out), MaxResults)
	}
	return res, nil
}

// searchFixture is a workspace of files that are hard to search right.
func searchFixture(t testing.TB) *memfs.Workspace {
	t.Helper()
	ws, err := memfs.New()
	if err != nil {
		t.Fatal(err)
	}
	var many strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&many, "alpha %d\n", i)
	}
	files := map[string]string{
		"a.txt":                    "alpha\nbeta\n\ngamma delta\nfunc main() {\n\tx := 1\n}\n",
		"crlf.txt":                 "one\r\ntwo alpha\r\n\r\nthree\r\n",
		"nonl.txt":                 "first\nlast alpha without newline",
		"empty.txt":                "",
		"newlines.txt":             "\n\n",
		"bin.dat":                  "text\x00more\nalpha\n",
		"huge.txt":                 strings.Repeat("word ", 2000) + "alpha\nend alpha\n",
		"many.txt":                 many.String(),
		"uni.txt":                  "Straße\nSTRASSE\nKelvin \u212a and k\nſtop STOP\nÉcole école\n日本語 text\n",
		"bad.txt":                  "\xff\xfe alpha \xc3\n\xef\xbf\xbd real replacement\nbroken \xe2\x82 end\n",
		".github/workflows/ci.yml": "name: ci\nalpha: yes\n",
		"dir/sub/x.go":             "package sub\n\nfunc Handler() {}\nfunc fooHandler(w int) {}\n",
		"dir/y.md":                 "# Alpha\nALPHA beta\n",
	}
	for p, c := range files {
		if err := ws.MkdirAll(parentDir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.Symlink("dir", "link"); err != nil {
		t.Fatal(err)
	}
	if err := ws.Symlink("x.go", "dir/sub/l.go"); err != nil {
		t.Fatal(err)
	}
	return ws
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

var trickyPatterns = []string{
	"alpha", "Alpha", "(?i)alpha", "^alpha", "alpha$", "^$", "^", "$", "x*", `\balpha\b`,
	`a\nb`, `\s`, `\s+$`, `[^a]`, `\S+\s\S+`, ".", "(?s).", "(?s)a.*b", `(?i)strasse`, `(?i)stra(ss|ß)e`,
	"(?i)kelvin", "(?i)k", "ſ", "(?i)s", "(?i)stop", "École", "(?i)école", `\x{FFFD}`, "\uFFFD", `\r$`,
	`two alpha\r`, `^\s*$`, `func \w+Handler\(`, "(?i)HANDLER", "alpha|beta", "alpha|x*", "(alpha)+",
	"(alpha){2}", "a{1,3}lpha", "(?m)^beta$", "(?U)a.*a", `\Aalpha`, `alpha\z`, "日本", "word word",
	"end alpha", `\pL+`, "(?i)ALPHA|gamma", "zzz-not-there", "()", "alpha|(?i)BETA", "[[:upper:]]{3}",
	`alpha \d+`, `(?i)alpha \d{3}$`, "foo|bar|baz", `\x00`, "text", "more",
}

var trickyArgs = []Query{
	{},
	{MaxResults: 5},
	{MaxResults: 1000},
	{MaxResults: 5000},
	{Path: "dir"},
	{Path: "link"},
	{Path: "link/sub"},
	{Path: "dir/sub/x.go"},
	{Path: "dir/sub/l.go"},
	{Glob: "*.txt"},
	{Glob: "**/*.go"},
	{Glob: ".github/**"},
	{Path: "dir", Glob: "sub/*.go"},
	{Path: "a.txt", Glob: "*.md"},
}

// The new search answers what the old one answered, for every pattern and
// every kind of path, glob and cap.
func TestSearchMatchesReference(t *testing.T) {
	ws := searchFixture(t)
	for _, pat := range trickyPatterns {
		for _, a := range trickyArgs {
			a.Pattern = pat
			compareSearch(t, ws, a)
		}
	}
}

// Over thousands of files (a hundred batches, more than the queue holds),
// with one goroutine and with several: the lines shown are the first in
// path order and the total counts every file, whichever batch finished
// first.
func TestSearchManyFiles(t *testing.T) {
	ws, _ := memfs.New()
	for i := range 6000 {
		content := fmt.Sprintf("file %d\nalpha %d\n", i, i%7)
		if i%3 == 0 {
			content += "beta\n"
		}
		ws.WriteFile(fmt.Sprintf("d%d/f%04d.txt", i%10, i), []byte(content), 0o644)
	}
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, a := range []Query{
			{Pattern: "alpha"}, {Pattern: "alpha 3", MaxResults: 1000}, {Pattern: "beta", MaxResults: 7},
			{Pattern: "^file 59", Path: "d9"}, {Pattern: "x*", MaxResults: 1}, {Pattern: "nothing"},
		} {
			compareSearch(t, ws, a)
		}
		runtime.GOMAXPROCS(old)
	}
}

// Paths and globs that fail, fail with the old errors.
func TestSearchErrorsMatchReference(t *testing.T) {
	ws := searchFixture(t)
	for _, a := range []Query{
		{Pattern: ""}, {Pattern: strings.Repeat("a", 1001)}, {Pattern: "a("}, {Pattern: "a", Glob: "d/[x"},
		{Pattern: "a", Path: "nope"}, {Pattern: "a", Path: "dir/"}, {Pattern: "a", Path: "./dir"},
		{Pattern: "a", Path: "/"}, {Pattern: "a", Path: "../x"}, {Pattern: "a", Path: ".env"},
		{Pattern: "a", Path: "a.txt/x"}, {Pattern: "a", Path: ".ssh/id_rsa"},
	} {
		compareSearch(t, ws, a)
	}
}

func compareSearch(t *testing.T, ws *memfs.Workspace, a Query) {
	t.Helper()
	want, wantErr := refSearch(ws, a)
	got, gotErr := Workspace(ws, a)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("%+v: error %v, want %v", a, gotErr, wantErr)
		return
	}
	if got != want {
		t.Errorf("%+v:\n got: %.2000q\nwant: %.2000q", a, got, want)
	}
}

// The two answers that changed on purpose, against the old code's.
func TestSearchFixes(t *testing.T) {
	ws, _ := memfs.New()
	ws.MkdirAll(".github", 0o755)
	ws.WriteFile(".github/ci.yml", []byte("on: push\n"), 0o644)
	ws.WriteFile("b.txt", []byte("one\n"), 0o644)
	ws.WriteFile("e.txt", nil, 0o644)
	for _, tt := range []struct {
		a    Query
		want string
	}{
		// Was "(no matches)": the glob was matched against "github/ci.yml".
		{Query{Pattern: "push", Glob: ".github/*.yml"}, ".github/ci.yml:1: on: push"},
		// Was also ".github/ci.yml:2: ", "b.txt:2: " and "e.txt:1: ".
		{Query{Pattern: "x*"}, ".github/ci.yml:1: on: push\nb.txt:1: one"},
		{Query{Pattern: "^$"}, "(no matches)"},
	} {
		if got, err := Workspace(ws, tt.a); err != nil || got != tt.want {
			t.Errorf("%+v = %q, %v; want %q", tt.a, got, err, tt.want)
		}
	}
}

// Files the deny list covers are searched no more than ReadDir lists
// them, even when they are in the tree (a resumed session whose deny list
// grew since).
func TestSearchDenied(t *testing.T) {
	ws, err := memfs.New(memfs.WithDeny("secret/", "*.tok"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := ws.Apply(nil, []memfs.Delta{
		{Path: "secret", Mode: fs.ModeDir | 0o755},
		{Path: "secret/a.txt", Mode: 0o644, Data: []byte("password\n")},
		{Path: "d", Mode: fs.ModeDir | 0o755},
		{Path: "d/.env", Mode: 0o644, Data: []byte("password=1\n")},
		{Path: "d/x.tok", Mode: 0o644, Data: []byte("password\n")},
		{Path: "d/ok.txt", Mode: 0o644, Data: []byte("password? no\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Restore(snap); err != nil {
		t.Fatal(err)
	}
	for _, a := range []Query{{Pattern: "password"}, {Pattern: "password", Path: "d"}, {Pattern: "password", Path: "secret"}} {
		compareSearch(t, ws, a)
	}
	if got, _ := Workspace(ws, Query{Pattern: "password"}); got != "d/ok.txt:1: password? no" {
		t.Errorf("search = %q", got)
	}
}

// Searches read a snapshot while writers change the workspace: each answer
// is one state or another, never a torn one (and the race detector sees
// no unguarded access).
func TestSearchWhileWriting(t *testing.T) {
	ws, _ := memfs.New()
	for i := range 50 {
		ws.WriteFile(fmt.Sprintf("f%02d.txt", i), []byte("gen 0\n"), 0o644)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gen := 1; ; gen++ {
			select {
			case <-stop:
				return
			default:
			}
			for i := range 50 {
				ws.WriteFile(fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprintf("gen %d\n", gen)), 0o644)
			}
		}
	}()
	for range 200 {
		if _, err := Workspace(ws, Query{Pattern: `gen \d+`, MaxResults: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestRequiredLiterals(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		want    string // literals, "/i" after a case-folded one; "" none
		exact   bool
	}{
		{"func main", "func main", true},
		{"(?i)handler", "handler/i", true},
		{"(?i)HANDLER", "handler/i", true},
		{"(?i)kelvin", "elvin/i", false}, // K, the Kelvin sign, is a k
		{"(?i)k", "", false},
		{"(?i)123", "123", true}, // no letters: an exact scan
		{`func \w+Handler\(`, "Handler(", false},
		{"alpha|beta", "alpha beta", true},
		{"alpha|(?i)BETA", "alpha beta/i", true},
		{"alpha|x*", "", false},
		{"x*", "", false},
		{`a\nb`, "a", false},
		{"\uFFFD", "", false},
		{"a\uFFFDbc", "bc", false},
		{"^foo", "foo", false},
		{"(foo)+", "foo", true},
		{"(foo){2}", "foo", false},
		{"(foo){1,3}", "foo", true},
		{"(foo)?bar", "bar", false},
		{"日本", "日本", true},
		{"(?i)école", "cole/i", false},
	} {
		tree, err := syntax.Parse(tt.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		lits, exact := required(tree)
		var names []string
		for _, l := range lits {
			n := string(l.s)
			if l.fold {
				n += "/i"
			}
			names = append(names, n)
		}
		if got := strings.Join(names, " "); got != tt.want || exact != tt.exact && got != "" {
			t.Errorf("required(%q) = %q %v, want %q %v", tt.pattern, got, exact, tt.want, tt.exact)
		}
	}
}

// A literal's index finds what a byte-by-byte comparison finds, exact
// and in any case, at every alignment and length, on text where its rare
// byte is rare and where it is everywhere (the dense fallback).
func TestLiteralIndex(t *testing.T) {
	naive := func(s, lit []byte, fold bool) int {
		for i := 0; i+len(lit) <= len(s); i++ {
			if bytes.Equal(s[i:i+len(lit)], lit) || fold && bytes.EqualFold(s[i:i+len(lit)], lit) {
				return i
			}
		}
		return -1
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("aAbBzZ@`[{_ \n\x80\xc1")
	for range 30000 {
		s := make([]byte, r.IntN(400))
		dense := r.IntN(2) == 0 // mostly one letter: past the fallback's threshold
		for i := range s {
			s[i] = alphabet[r.IntN(len(alphabet))]
			if dense && r.IntN(4) > 0 {
				s[i] = "aA"[r.IntN(2)]
			}
		}
		lit := make([]byte, 1+r.IntN(5))
		for i := range lit {
			lit[i] = alphabet[r.IntN(8)] // letters and the bytes next to them
		}
		fold := r.IntN(2) == 0
		l := newLiteral(lit, false)
		if fold {
			l = newLiteral(bytes.ToLower(lit), true)
		}
		if got, want := l.index(s), naive(s, lit, fold); got != want {
			t.Fatalf("index(%q, %q, fold %v) = %d, want %d", s, lit, fold, got, want)
		}
		if fold && l.fold {
			if got, want := indexFold(s, l.s, l.mask), naive(s, lit, true); got != want {
				t.Fatalf("indexFold(%q, %q) = %d, want %d", s, lit, got, want)
			}
		}
	}
}

// FuzzSearch holds the new search to the reference on any pattern and
// content. The seeds run with every go test.
func FuzzSearch(f *testing.F) {
	for _, p := range trickyPatterns {
		f.Add(p, "alpha\nbeta Alpha\r\n\nKelvin \u212a\n\xff alpha", 3)
	}
	f.Add(`\s`, "a\n\nb", 0)
	f.Add("a|b", "xa\nb\n", 1)
	f.Add("(?i)ab", "AB\nxaBy\n", 10)
	f.Add("$", "", 1)
	f.Fuzz(func(t *testing.T, pattern, content string, max int) {
		if len(content) > 1<<16 {
			return
		}
		ws, err := memfs.New()
		if err != nil {
			t.Fatal(err)
		}
		ws.WriteFile("a.txt", []byte(content), 0o644)
		ws.WriteFile("b/c.txt", []byte(strings.ReplaceAll(content, "\n", "\r\n")), 0o644)
		a := Query{Pattern: pattern, MaxResults: max % 1200}
		want, wantErr := refSearch(ws, a)
		got, gotErr := Workspace(ws, a)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || got != want {
			t.Errorf("%q on %q:\n got: %q %v\nwant: %q %v", pattern, content, got, gotErr, want, wantErr)
		}
	})
}
