package gitignore

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/gittest"
)

func TestWildmatch(t *testing.T) {
	cases := []struct {
		pattern, text string
		want          bool
	}{
		{"foo", "foo", true},
		{"foo", "fo", false},
		{"f?o", "fxo", true},
		{"f?o", "f/o", false},
		{"*", "abc", true},
		{"*", "a/b", false},
		{"*", "", true},
		{"*c", "abc", true},
		{"*c", "a/c", false},
		{"*/c", "a/c", true},
		{"a*", "a/b", false},
		{"**", "a/b/c", true},
		{"**/c", "c", true},
		{"**/c", "a/b/c", true},
		{"**/c", "xc", false}, // "**/" matches nothing only with its slash
		{"a/**/b", "a/xb", false},
		{"a/**", "a/b/c", true},
		{"a/**", "a", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "ab", false},
		{"a**b", "axb", true},
		{"a**b", "a/b", false},
		{"**b", "a/b", false},
		{"***/c", "x/y/c", true},
		{"a/**\\/b", "a/x/b", true},
		{"a/**\\/b", "a/b", false},
		{"[abc]", "b", true},
		{"[abc]", "d", false},
		{"[!abc]", "d", true},
		{"[^abc]", "a", false},
		{"[a-c]x", "bx", true},
		{"[c-a]x", "bx", false},
		{"[]]", "]", true},
		{"[!]]", "a", true},
		{"[!]]", "]", false},
		{"[a-]", "-", true},
		{"[-a]", "-", true},
		{"[[:alpha:]]", "Q", true},
		{"[[:alpha:]]", "1", false},
		{"[[:digit:][:upper:]]", "7", true},
		{"[[:xdigit:]]", "f", true},
		{"[[:punct:]]", "!", true},
		{"[[:space:]]", " ", true},
		{"[[:foo:]]", "f", false},
		{"[[:]", "[", true},
		{"[[:]", ":", true},
		{"[abc", "a", false},
		{"[/]", "/", false},
		{"[!a]", "/", false},
		{"a\\", "a", false},
		{"a\\", "a\\", false},
		{"\\*", "*", true},
		{"\\*", "x", false},
		{"\\[a]", "[a]", true},
		{"?", "é", false}, // one byte, not one character
		{"??", "é", true},
		{"*.pyc", "x.pyc", true},
		{"*.pyc", "d/x.pyc", false},
		{"*/x", "d/x", true},
	}
	for _, c := range cases {
		w := compileWild(c.pattern)
		if got := w.match(c.text); got != c.want {
			t.Errorf("wildmatch %q %q = %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	data := "\xef\xbb\xbf# comment\n\n*.o  \r\nfoo\\ \n\\#bar\n\\!baz\n!keep\ndir/\n/top\n  \n\\\nnul\x00x\n#\n!\n/\nlast"
	var got []string
	for _, p := range Parse([]byte(data)) {
		got = append(got, fmt.Sprintf("%d:%s neg=%v dir=%v base=%v body=%q", p.Line, p.Text, p.negative, p.dirOnly, p.base, p.body))
	}
	want := []string{
		`3:*.o neg=false dir=false base=true body="*.o"`,
		`4:foo\  neg=false dir=false base=true body="foo\\ "`,
		`5:\#bar neg=false dir=false base=true body="\\#bar"`,
		`6:\!baz neg=false dir=false base=true body="\\!baz"`,
		`7:!keep neg=true dir=false base=true body="keep"`,
		`8:dir/ neg=false dir=true base=true body="dir"`,
		`9:/top neg=false dir=false base=false body="top"`,
		`11:\ neg=false dir=false base=true body="\\"`,
		`12:nul neg=false dir=false base=true body="nul"`,
		`16:last neg=false dir=false base=true body="last"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Parse:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// goldenPaths are the untracked files every case of TestAgainstGit has
// below its directory.
var goldenPaths = []string{
	"a", "b", "ab", "abc", "a.pyc", "keep.pyc", "a.log", "x.txt", "1", "Ab", "]", "]x", "!a", "#a",
	"a ", "a*", "sp ace", "foo.o", "foox/y", "foo/bar", "foo/baz/qux",
	"dir/a", "dir/b", "dir/keep", "dir/a.log", "dir/sub/a", "dir/sub/keep", "dir/sub/x.txt", "dir/sub/deep/a",
	"x/dir/a", "x/a", "x/y/a", "x/y/z/b", "m/b", "m/x/b", "m/x/y/b", "m/b.txt", "mb",
	"z/dir/sub/a", "d/x", "dd/sub/a", "q/sub/x", "build/out.o", "build/gen/x.go", "src/__pycache__/m.cpython-311.pyc",
	"src/m.py", ".pytest_cache/v/cache/nodeids", "node_modules/pkg/index.js", "über/a", "é",
}

// goldenCases are .gitignore files (path within the case's directory ->
// content).
var goldenCases = []map[string]string{}

// combined are generated cases, too many for a tree of files each.
var combined = []map[string]string{}

func init() {
	single := []string{
		"*.pyc", "a", "/a", "a/", "/a/", "dir", "dir/", "dir/a", "/dir/a", "dir/*", "dir/**", "**/a", "**/dir/a",
		"dir/**/a", "**", "*", "/*", "*/", "?", "a?c", "[ab]*", "[!a]*", "[^a]*", "[a-c]x", "[]]", "[!]]x",
		"[[:alpha:]]*", "[[:digit:]]", "[[:upper:]]*", "[[:foo:]]", "[abc", "foo\\", "\\!a", "\\#a", "#a", "!a",
		"a\\ ", "a  ", "a\\*", "*.o ", "foo**", "/foo**", "dir/s**", "**foo", "a**c", "***/a", "dir/***", "**/",
		"foo/**/", "d*/", "*/sub", "*/sub/", "/**/a", "m/**/b", "m/**", "m/*/b", "m/**/*.txt", "x/**/b",
		"[[:alpha:]", "dir\\/a", "sp ace", "sp\\ ace", "*.[ch]", "?/x", "*/x", "*/*/a", "**/sub/**", "sub",
		"/sub", "deep/", "__pycache__/", ".pytest_cache/", "/node_modules", "build/", "build/*", "!build/",
		"*.py[cod]", "über", "é", "?", "[é]", "\xc3?", "a\r", "*.log\t", "x/y/",
	}
	// And combinations, compared with git check-ignore: an anchor, a
	// name, what follows, alone and with a negation after.
	for _, pre := range []string{"", "/", "**/", "dir/", "*/", "x/**/", "m/*/"} {
		for _, name := range []string{"a", "a*", "*a", "?", "[a-d]*", "**", "sub", "y", "b", "*.txt"} {
			for _, post := range []string{"", "/", "/**", "/*"} {
				p := pre + name + post
				combined = append(combined, map[string]string{".gitignore": p},
					map[string]string{".gitignore": p + "\n!a\n!dir/sub/keep\n!m/x/"})
			}
		}
	}
	for _, p := range single {
		goldenCases = append(goldenCases, map[string]string{".gitignore": p + "\n"})
	}
	multi := []string{
		"*.pyc\n!keep.pyc",
		"!keep.pyc\n*.pyc",
		"dir/\n!dir/keep",
		"dir/*\n!dir/keep",
		"dir/**\n!dir/keep",
		"dir/**\n!dir/sub/\n",
		"dir/**\n!dir/**/\n!dir/sub/keep",
		"/*\n!/dir",
		"/*\n!/dir/\n/dir/*\n!/dir/keep",
		"*\n!*/\n!*.txt",
		"*\n!*.txt",
		"a\n!a",
		"!a\na",
		"build\n!build/",
		"build/\n!build/gen/",
		"m/\n!m/b",
		"x\n!x/a",
		"*.log\n!dir/*.log",
		"*.log\n!/dir/a.log",
		"**/sub\n!dir/sub",
		"\\!a\n!\\!a",
		"foo/*\n!foo/baz\nfoo/baz/*",
	}
	for _, m := range multi {
		goldenCases = append(goldenCases, map[string]string{".gitignore": m + "\n"})
	}
	nested := []map[string]string{
		{".gitignore": "*.log", "dir/.gitignore": "!a.log"},
		{".gitignore": "!a.log", "dir/.gitignore": "*.log"},
		{".gitignore": "dir/", "dir/.gitignore": "!a\n!keep"},
		{"dir/.gitignore": "/a"},
		{"dir/.gitignore": "sub/a\n/keep"},
		{"dir/.gitignore": "a"},
		{".gitignore": "dir/sub/", "dir/.gitignore": "!sub/"},
		{".gitignore": "sub/", "dir/.gitignore": "!sub/"},
		{".gitignore": "!sub/", "dir/.gitignore": "sub/"},
		{".gitignore": "*", "dir/.gitignore": "!*"},
		{".gitignore": "*\n!dir/", "dir/.gitignore": "!*"},
		{".gitignore": "/*\n!/dir/", "dir/.gitignore": "*\n!sub/", "dir/sub/.gitignore": "!keep"},
		{"dir/sub/.gitignore": "*", "dir/.gitignore": "!sub/keep"},
		{"dir/sub/.gitignore": "/deep/\n!a", ".gitignore": "a"},
		{"x/.gitignore": "**/b", "x/y/.gitignore": "!z/"},
		{"m/x/.gitignore": "/b\ny/", "m/.gitignore": "!x/y/b"},
	}
	goldenCases = append(goldenCases, nested...)
}

// loaderOf is a Loader over a map of .gitignore files by directory.
func loaderOf(files map[string]string) (Loader, *[]string) {
	var loaded []string
	return func(dir string) []Pattern {
		loaded = append(loaded, dir)
		c, ok := files[dir]
		if !ok {
			return nil
		}
		return Parse([]byte(c))
	}, &loaded
}

// gitIgnored runs git status in repo and returns the paths it lists as
// ignored, each file on its own (--untracked-files=all).
func gitIgnored(t *testing.T, repo string) map[string]bool {
	t.Helper()
	out := gittest.Git(t, repo, "-c", "core.excludesFile=/dev/null", "-c", "core.quotePath=false",
		"status", "--porcelain", "-z", "--ignored", "--untracked-files=all")
	got := map[string]bool{}
	for _, e := range strings.Split(out, "\x00") {
		if strings.HasPrefix(e, "!! ") {
			got[e[3:]] = true
		}
	}
	return got
}

func writeFile(t *testing.T, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func needGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// casesRepo writes cases into one repository, case i in directory
// c<i>/: its .gitignore files, and every path of goldenPaths when files
// is true. It returns the repository and a checker for each case.
func casesRepo(t *testing.T, cases []map[string]string, files bool) (string, []*Checker) {
	repo := t.TempDir()
	gittest.Git(t, repo, "init", "-q")
	var checkers []*Checker
	for i, c := range cases {
		ignores := map[string]string{}
		for p, content := range c {
			full := caseDir(i) + "/" + p
			writeFile(t, repo, full, content)
			dir, _ := split(full)
			ignores[dir] = content
		}
		if files {
			for _, p := range goldenPaths {
				writeFile(t, repo, caseDir(i)+"/"+p, "x")
			}
		}
		load, _ := loaderOf(ignores)
		checkers = append(checkers, NewChecker(load, nil))
	}
	return repo, checkers
}

func caseDir(i int) string { return fmt.Sprintf("c%03d", i) }

// casePaths are the paths of case c: goldenPaths and its .gitignore files.
func casePaths(c map[string]string) []string {
	paths := append([]string{}, goldenPaths...)
	for p := range c {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// gitCheckIgnore asks git check-ignore which of paths it ignores.
func gitCheckIgnore(t *testing.T, repo string, paths []string) map[string]bool {
	t.Helper()
	cmd := exec.Command("git", "-c", "core.excludesFile=/dev/null", "check-ignore", "--no-index", "--stdin", "-z", "-v", "-n")
	cmd.Dir, cmd.Env = repo, gittest.Env()
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git check-ignore: %v", err)
	}
	// Four fields a path: source, line, pattern, path.
	f := strings.Split(string(out), "\x00")
	got := map[string]bool{}
	for i := 0; i+3 < len(f); i += 4 {
		if f[i] != "" && !strings.HasPrefix(f[i+2], "!") {
			got[f[i+3]] = true
		}
	}
	return got
}

// TestAgainstGitStatus checks every case's patterns on every path of
// goldenPaths against git status of the same tree: each case is a
// directory of one repository, with its .gitignore files and every path.
// git check-ignore, the oracle of TestAgainstGitCheckIgnore, must say the
// same as git status here.
func TestAgainstGitStatus(t *testing.T) {
	needGit(t)
	repo, checkers := casesRepo(t, goldenCases, true)
	ignored := gitIgnored(t, repo)
	var all []string
	for i, c := range goldenCases {
		for _, p := range casePaths(c) {
			all = append(all, caseDir(i)+"/"+p)
		}
	}
	byCheckIgnore := gitCheckIgnore(t, repo, all)
	compared := 0
	for i, c := range goldenCases {
		for _, p := range casePaths(c) {
			full := caseDir(i) + "/" + p
			compared++
			if got, want := checkers[i].Ignored(full, false), ignored[full]; got != want {
				t.Errorf("case %q: %s: ignored %v, git status says %v", c, p, got, want)
			}
			if byCheckIgnore[full] != ignored[full] {
				t.Errorf("case %q: %s: git check-ignore says %v, git status %v", c, p, byCheckIgnore[full], ignored[full])
			}
		}
	}
	t.Logf("%d cases, %d paths compared with git status", len(goldenCases), compared)
}

// TestAgainstGitCheckIgnore checks the generated cases against git
// check-ignore, which needs only the .gitignore files on disk.
func TestAgainstGitCheckIgnore(t *testing.T) {
	needGit(t)
	repo, checkers := casesRepo(t, combined, false)
	var all []string
	for i, c := range combined {
		for _, p := range casePaths(c) {
			all = append(all, caseDir(i)+"/"+p)
		}
	}
	ignored := gitCheckIgnore(t, repo, all)
	for i, c := range combined {
		for _, p := range casePaths(c) {
			full := caseDir(i) + "/" + p
			if got, want := checkers[i].Ignored(full, false), ignored[full]; got != want {
				t.Errorf("case %q: %s: ignored %v, git check-ignore says %v", c, p, got, want)
			}
		}
	}
	t.Logf("%d cases, %d paths compared with git check-ignore", len(combined), len(all))
}

// TestExcludeAgainstGit checks info/exclude and its precedence below every
// .gitignore, one repository a case.
func TestExcludeAgainstGit(t *testing.T) {
	needGit(t)
	cases := []struct {
		exclude string
		files   map[string]string
	}{
		{"*.log", nil},
		{"*.log", map[string]string{".gitignore": "!a.log"}},
		{"!x.txt", map[string]string{".gitignore": "*.txt"}},
		{"dir/", map[string]string{"dir/.gitignore": "!a"}},
		{"dir/", map[string]string{".gitignore": "!dir/"}},
		{"/a\nm/**/b", map[string]string{"dir/.gitignore": "!a"}},
		{"*\n!*/", map[string]string{".gitignore": "!*.txt"}},
	}
	for _, c := range cases {
		repo := t.TempDir()
		gittest.Git(t, repo, "init", "-q")
		writeFile(t, repo, ".git/info/exclude", c.exclude)
		for p, content := range c.files {
			writeFile(t, repo, p, content)
		}
		for _, p := range goldenPaths {
			writeFile(t, repo, p, "x")
		}
		ignored := gitIgnored(t, repo)
		files := map[string]string{}
		for p, content := range c.files {
			dir, _ := split(p)
			files[dir] = content
		}
		load, _ := loaderOf(files)
		ch := NewChecker(load, Parse([]byte(c.exclude)))
		for _, p := range goldenPaths {
			if got, want := ch.Ignored(p, false), ignored[p]; got != want {
				t.Errorf("exclude %q, files %v: %s: ignored %v, git says %v", c.exclude, c.files, p, got, want)
			}
		}
	}
}

// TestReadsOnlyAlongPaths: a check reads the .gitignore files of the
// directories on the path's way, and none inside an excluded directory.
func TestReadsOnlyAlongPaths(t *testing.T) {
	load, loaded := loaderOf(map[string]string{"": "build/\n", "build": "!x", "src": "*.o"})
	c := NewChecker(load, nil)
	if !c.Ignored("build/x", false) {
		t.Error("build/x is not ignored: a negation inside an excluded directory re-included it")
	}
	if !c.Ignored("src/a/b.o", false) || c.Ignored("src/a/b.c", false) {
		t.Error("src's .gitignore was not applied below it")
	}
	c.Ignored("src/a/c.o", false)
	if got, want := strings.Join(*loaded, ","), ",src,src/a"; got != want {
		t.Errorf("loaded %q, want %q (each once, never build)", got, want)
	}
}

// TestNoBacktracking: a pattern that makes a backtracking matcher take
// exponential time is linear here.
func TestNoBacktracking(t *testing.T) {
	p := strings.Repeat("*a", 40) + "b"
	text := strings.Repeat("a", 4000)
	w := compileWild(p)
	if w.match(text) {
		t.Fatal("matched")
	}
	long := compileWild(strings.Repeat("a*", 100) + "b")
	if long.match(strings.Repeat("a", 4000)) || !long.match(strings.Repeat("a", 200)+"b") {
		t.Fatal("wrong answer for a pattern of more than 64 tokens")
	}
}

func BenchmarkChecker(b *testing.B) {
	files := map[string]string{"": "*.pyc\n__pycache__/\n.pytest_cache/\nnode_modules/\n/build\n*.log\n!important.log\n", "src": "*.tmp\n"}
	var paths []string
	for i := 0; i < 1000; i++ {
		paths = append(paths, fmt.Sprintf("src/pkg%d/mod%d.py", i%50, i), fmt.Sprintf("src/pkg%d/__pycache__/mod%d.pyc", i%50, i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		load, _ := loaderOf(files)
		c := NewChecker(load, nil)
		for _, p := range paths {
			c.Ignored(p, false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/path")
}

// A hostile file's size bounds what it costs: past maxPatterns patterns
// and maxPatternLen bytes a line, nothing more is read.
func TestHostileFileIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.Repeat("*", maxPatternLen+1) + "\n")
	for i := 0; i < maxPatterns+10; i++ {
		b.WriteString("*a*a*a*a*a*a*a*a*a*b\n")
	}
	b.WriteString("late\n")
	ps := Parse([]byte(b.String()))
	if len(ps) != maxPatterns {
		t.Fatalf("%d patterns read, want %d", len(ps), maxPatterns)
	}
	if ps[0].Line != 2 {
		t.Errorf("the over-long first line was read: first pattern from line %d", ps[0].Line)
	}
	c := NewChecker(func(string) []Pattern { return ps }, nil)
	if c.Ignored("late", false) || c.Ignored(strings.Repeat("a", 200), false) {
		t.Error("matched what no pattern read matches")
	}
}

// backtrack matches tokens against text by trying every way: slow, and
// obviously the tokens' meaning, for checking the bit-parallel engine.
func backtrack(toks []token, text string) bool {
	if len(toks) == 0 {
		return text == ""
	}
	t, rest := toks[0], toks[1:]
	switch t.kind {
	case tokFork:
		return backtrack(rest, text) || backtrack(rest[2:], text)
	case tokStar, tokStarAll:
		for i := 0; i <= len(text); i++ {
			if backtrack(rest, text[i:]) {
				return true
			}
			if i < len(text) && t.kind == tokStar && text[i] == '/' {
				return false
			}
		}
		return false
	}
	if text == "" {
		return false
	}
	c := text[0]
	ok := t.kind == tokByte && c == t.b || t.kind == tokAny && c != '/' || t.kind == tokSet && t.set.has(c)
	return ok && backtrack(rest, text[1:])
}

// The bit-parallel engine, one word or several, says what backtracking
// says, on random patterns and texts.
func TestEngineAgainstBacktracking(t *testing.T) {
	pieces := []string{"a", "b", "/", "*", "?", "[ab]", "[!a]", "**", "**/", "/**", "\\*", "a*b"}
	texts := []string{"", "a", "b", "ab", "a/b", "aa/b/ab", "/a", "a/", "b/a/b/a", "*", "ba/ab/b", "a/b/c/d", "aaab"}
	rnd := uint64(1)
	next := func(n int) int {
		rnd = rnd*6364136223846793005 + 1442695040888963407
		return int(rnd>>33) % n
	}
	pad := strings.Repeat("x", 70) + "/"
	for i := 0; i < 3000; i++ {
		var p strings.Builder
		for j := next(6) + 1; j > 0; j-- {
			p.WriteString(pieces[next(len(pieces))])
		}
		w, wide := compileWild(p.String()), compileWild(pad+p.String())
		if w.never || w.isLit || w.noSlash || len(wide.nfa.anyByte) < 2 {
			continue
		}
		for _, text := range texts {
			want := backtrack(w.toks, text)
			if got := w.nfa.match(text); got != want {
				t.Fatalf("pattern %q, text %q: engine %v, backtracking %v", p.String(), text, got, want)
			}
			if got := wide.nfa.match(pad + text); got != want {
				t.Fatalf("pattern %q, text %q, on several words: engine %v, backtracking %v", pad+p.String(), pad+text, got, want)
			}
		}
	}
}
