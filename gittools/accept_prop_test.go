package gittools_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/staging"
	"github.com/airlock-dev/airlock/worker"
)

// The property the review promises: what lands is exactly what the
// reviewer accepted. Random pushes of 1 to 3 commits over a few files
// (edits, creations, deletions, files without a final newline, CRLF,
// lines repeated so that a hunk could fit in several places, a commit
// changing what an earlier one made) are answered with random selections
// of hunks and lines through the real gate; each landed commit's tree
// must be what git apply --cached of exactly the selected hunk texts
// (the request's, cut with hunk.Select) makes, commit by commit, or the
// accept must be refused with ErrHunkDepends, change nothing, and git
// apply must refuse too. AIRLOCK_LONG_TESTS runs 150 seeds;
// AIRLOCK_ACCEPT_SEED=n starts at seed n (alone, without the former).
func TestAcceptMatchesGitApply(t *testing.T) {
	runs, seed := 15, int64(1)
	if os.Getenv("AIRLOCK_LONG_TESTS") != "" {
		runs = 150
	}
	if s := os.Getenv("AIRLOCK_ACCEPT_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		must(t, err)
		seed = n
		if os.Getenv("AIRLOCK_LONG_TESTS") == "" {
			runs = 1
		}
	}
	outcomes := map[string]int{}
	for i := 0; i < runs; i++ {
		s := seed + int64(i)
		t.Run(fmt.Sprintf("seed%d", s), func(t *testing.T) { outcomes[acceptProperty(t, rand.New(rand.NewSource(s)), nil)]++ })
	}
	t.Logf("outcomes: %v", outcomes)
}

// The same property on real files: three of the Go toolchain's own
// sources, hundreds of lines of tabs, comments and braces each, edited at
// a few places per commit, so that a push has many hunks far apart and
// git's context is real code, not an alphabet of eight lines.
func TestAcceptMatchesGitApplyOnRealFiles(t *testing.T) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("no Go toolchain source: ", err)
	}
	goroot := strings.TrimSpace(string(out))
	var real []propFile
	for _, p := range []string{"strings/strings.go", "bytes/buffer.go", "sort/sort.go"} {
		data, err := os.ReadFile(filepath.Join(goroot, "src", filepath.FromSlash(p)))
		if err != nil {
			t.Skipf("the Go toolchain's source is not here: %v", err)
		}
		real = append(real, propFile{lines: strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")})
	}
	outcomes := map[string]int{}
	for s := int64(1); s <= 5; s++ {
		t.Run(fmt.Sprintf("seed%d", s), func(t *testing.T) { outcomes[acceptProperty(t, rand.New(rand.NewSource(s)), real)]++ })
	}
	t.Logf("outcomes: %v", outcomes)
}

// propLines is the alphabet a file's lines are drawn from: few, so that
// lines repeat and a hunk's context fits in more than one place.
var propLines = []string{"a", "b", "c", "}", "", "return nil", "@@ -1 +1 @@", "x"}

// propFile is a file's content as lines (each without its ending), its
// line ending, and whether its last line has one.
type propFile struct {
	lines []string
	crlf  bool
	noEOL bool
}

func (f propFile) String() string {
	end := "\n"
	if f.crlf {
		end = "\r\n"
	}
	var b strings.Builder
	for i, l := range f.lines {
		b.WriteString(l)
		if i < len(f.lines)-1 || !f.noEOL {
			b.WriteString(end)
		}
	}
	return b.String()
}

func randLines(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = propLines[r.Intn(len(propLines))]
	}
	return out
}

// mutate edits f at one to three places: lines replaced, inserted or
// removed, and now and then its final newline taken or given.
func mutate(r *rand.Rand, f propFile) propFile {
	lines := append([]string(nil), f.lines...)
	for k := 1 + r.Intn(3); k > 0; k-- {
		at := r.Intn(len(lines) + 1)
		switch r.Intn(3) {
		case 0:
			lines = append(lines[:at], append(randLines(r, 1+r.Intn(3)), lines[at:]...)...)
		case 1:
			if at < len(lines) {
				lines = append(lines[:at], lines[min(len(lines), at+1+r.Intn(2)):]...)
			}
		default:
			if at < len(lines) {
				lines[at] = propLines[r.Intn(len(propLines))] + "!"
			}
		}
	}
	if len(lines) == 0 {
		lines = randLines(r, 2)
	}
	f.lines = lines
	if r.Intn(5) == 0 {
		f.noEOL = !f.noEOL
	}
	return f
}

// pendingRequest waits for the gate's one pending request.
func pendingRequest(t *testing.T, h *harness) *approval.Request {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if p := h.gate.Pending(); len(p) == 1 {
			return p[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("no request came")
		}
	}
}

// acceptProperty runs one push and selection; real, when not nil, are the
// three files the repository starts with (else they are drawn at random).
func acceptProperty(t *testing.T, r *rand.Rand, real []propFile) string {
	files := map[string]propFile{}
	seed := map[string]string{}
	for i := 0; i < 3; i++ {
		f := propFile{lines: randLines(r, 4+r.Intn(12)), crlf: i == 2, noEOL: r.Intn(3) == 0}
		if real != nil {
			f = real[i]
		} else if i == 1 {
			// A block repeated: a hunk's context fits every few lines,
			// and its place decides where it lands.
			f.lines = nil
			for n := 12 + r.Intn(20); n > 0; n-- {
				f.lines = append(f.lines, propLines[n%3])
			}
		}
		name := fmt.Sprintf("f%d.txt", i)
		files[name], seed[name] = f, f.String()
	}
	src := t.TempDir()
	gittest.InitRepo(t, gittest.Env(), src, "init", seed)
	bare := filepath.Join(t.TempDir(), "project.git")
	git(t, src, "clone", "-q", "--bare", src, bare)
	w := &worker.Worker{
		Name: "tester", Author: worker.Person{Name: "Tester", Email: "tester@example.com"},
		DefaultTarget: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}, Targets: map[string]*worker.TargetSpec{},
		AutoPull: []worker.PullSpec{{Path: ".", Source: &worker.TargetSpec{Type: "local-bare", Path: bare, Branch: "main"}}},
	}
	h := openSession(t, w, approval.Policy{}, nil)
	var script []string
	for c, n := 0, 1+r.Intn(3); c < n; c++ {
		for i := 0; i < 4; i++ {
			name := fmt.Sprintf("f%d.txt", i)
			f, ok := files[name]
			switch {
			case !ok && r.Intn(3) == 0:
				f = propFile{lines: randLines(r, 1+r.Intn(6)), noEOL: r.Intn(3) == 0}
			case ok && r.Intn(8) == 0:
				h.call("delete_file", map[string]any{"path": name})
				delete(files, name)
				script = append(script, fmt.Sprintf("commit %d: delete %s", c, name))
				continue
			case ok && r.Intn(3) > 0:
				f = mutate(r, f)
			default:
				continue
			}
			files[name] = f
			h.call("write_file", map[string]any{"path": name, "content": f.String()})
			script = append(script, fmt.Sprintf("commit %d: write %s %q", c, name, f.String()))
		}
		if _, err := h.try("git_stage", map[string]any{"message": fmt.Sprintf("commit %d", c)}); err != nil {
			script = append(script, fmt.Sprintf("commit %d: nothing to stage", c))
		}
	}
	if !strings.Contains(h.call("git_status", nil), "staged (oldest first)") {
		return "nothing staged"
	}
	type answer struct {
		out string
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, err := h.try("git_push", nil)
		done <- answer{out, err}
	}()
	req := pendingRequest(t, h)
	if !req.Pickable || len(req.Commits[0].Files) == 0 {
		_, err := h.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Reason: "not pickable"})
		must(t, err)
		<-done
		return "not pickable"
	}
	sel := randomAccept(r, req)
	t.Logf("push:\n%s\nselection: %s", strings.Join(script, "\n"), describeAccept(sel))
	oracle, quirk, oerr := applySelection(t, src, req, sel)
	before := h.call("git_status", nil)
	_, err := h.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Pick, Accept: sel})
	if err != nil {
		if !errors.Is(err, staging.ErrHunkDepends) {
			t.Fatalf("Resolve: %v (git apply: %v)", err, oerr)
		}
		if oerr == nil && !quirk {
			t.Errorf("the accept was refused (%v), but git apply takes the selection", err)
		}
		if len(h.gate.Pending()) != 1 {
			t.Error("the refused selection decided the request")
		}
		if now := h.call("git_status", nil); now != before {
			t.Errorf("the refused selection changed the sandbox:\n%s\nwas\n%s", now, before)
		}
		_, err = h.gate.Resolve(approval.Decision{Request: req.ID, Verdict: approval.Reject, Reason: "refused"})
		must(t, err)
		<-done
		if oerr == nil {
			return "refused where git apply matches a '\\ No newline' line"
		}
		return "refused, as git apply refuses"
	}
	a := <-done
	must(t, a.err)
	if oerr != nil {
		t.Fatalf("the accept landed, but git apply refuses the selection: %v", oerr)
	}
	landed := strings.Fields(git(t, bare, "log", "--reverse", "--format=%T", "main~"+strconv.Itoa(len(oracle))+"..main"))
	if initTree := strings.TrimSpace(git(t, bare, "rev-parse", "main~"+strconv.Itoa(len(oracle))+"^{tree}")); initTree != strings.TrimSpace(git(t, src, "rev-parse", "HEAD^{tree}")) {
		t.Fatalf("the target holds %s commits, git apply made %d", strings.TrimSpace(git(t, bare, "rev-list", "--count", "main")), len(oracle))
	}
	for i := range oracle {
		if landed[i] != oracle[i] {
			t.Errorf("landed commit %d: tree %s, git apply makes %s:\nlanded:\n%s\ngit apply:\n%s", i, landed[i], oracle[i],
				lsTree(t, bare, landed[i]), lsTree(t, src, oracle[i]))
		}
	}
	return fmt.Sprintf("landed %d", len(oracle))
}

func lsTree(t *testing.T, dir, tree string) string {
	return git(t, dir, "ls-tree", "-r", "--format=%(objectname) %(path)", tree)
}

// randomAccept picks, commit by commit, files whole or hunks, some cut to
// lines, always at least one hunk.
func randomAccept(r *rand.Rand, req *approval.Request) []approval.Accepted {
	var out []approval.Accepted
	for _, c := range req.Commits {
		if r.Intn(5) == 0 {
			continue
		}
		a := approval.Accepted{Commit: c.ID}
		for _, f := range c.Files {
			if r.Intn(4) == 0 {
				continue
			}
			if len(f.Hunks) == 0 || r.Intn(5) == 0 {
				a.Files = append(a.Files, approval.AcceptedFile{Path: f.Path, Whole: true})
				continue
			}
			af := approval.AcceptedFile{Path: f.Path}
			for i, text := range f.Hunks {
				if r.Intn(3) == 0 {
					continue
				}
				ah := approval.AcceptedHunk{Index: i, ID: approval.HunkID(text)}
				changed, _ := hunk.Changed(text)
				if r.Intn(3) == 0 {
					for n := range changed {
						if r.Intn(2) == 0 {
							ah.Lines = append(ah.Lines, n)
						}
					}
				}
				af.Hunks = append(af.Hunks, ah)
			}
			if len(af.Hunks) > 0 {
				a.Files = append(a.Files, af)
			}
		}
		if len(a.Files) > 0 {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		c := req.Commits[len(req.Commits)-1]
		f := c.Files[0]
		af := approval.AcceptedFile{Path: f.Path, Whole: true}
		if len(f.Hunks) > 0 {
			af = approval.AcceptedFile{Path: f.Path, Hunks: []approval.AcceptedHunk{{Index: 0, ID: approval.HunkID(f.Hunks[0])}}}
		}
		out = append(out, approval.Accepted{Commit: c.ID, Files: []approval.AcceptedFile{af}})
	}
	return out
}

func describeAccept(sel []approval.Accepted) string {
	var b strings.Builder
	for _, a := range sel {
		fmt.Fprintf(&b, "\n  %s:", a.Commit.String()[:7])
		for _, f := range a.Files {
			if f.Whole {
				fmt.Fprintf(&b, " %s whole;", f.Path)
				continue
			}
			fmt.Fprintf(&b, " %s", f.Path)
			for _, h := range f.Hunks {
				fmt.Fprintf(&b, " #%d%v", h.Index, h.Lines)
			}
			b.WriteString(";")
		}
	}
	return b.String()
}

// applySelection applies the selection to a fresh clone of src's init
// with git apply --cached, commit by commit, and lists the trees of the
// commits it makes (a commit whose selection changes nothing makes none).
// A file's patch is the request's header and exactly the selected hunk
// texts, in the file's order, their new-side starts rewritten as git add
// -p writes them (git apply starts looking for a hunk at its new-side
// start: with an earlier hunk left out, the bare text would land off
// where it was shown in a file whose lines repeat; see
// TestAcceptPlacesAHunkWhereItWasShown); a deletion cut to some of its lines keeps
// the lines left out, so its header says the file is modified instead.
//
// quirk reports a context line the file ends without a newline in a
// selected hunk: git apply compares a hunk's old lines as one buffer
// whose last line lacks its newline, so it matches that line followed by
// more (a CRLF file keeps its "\r\n" after it); airlock matches lines
// whole and refuses, so there it may refuse where git applies.
func applySelection(t *testing.T, src string, req *approval.Request, sel []approval.Accepted) (trees []string, quirk bool, err error) {
	dir := t.TempDir()
	git(t, dir, "clone", "-q", src, ".")
	bySel := map[string]approval.Accepted{}
	for _, a := range sel {
		bySel[a.Commit.String()] = a
	}
	prev := strings.TrimSpace(git(t, dir, "write-tree"))
	for _, c := range req.Commits {
		a, ok := bySel[c.ID.String()]
		if !ok {
			continue
		}
		var patch strings.Builder
		for _, fd := range c.Files {
			for _, af := range a.Files {
				if af.Path == fd.Path {
					patch.WriteString(filePatch(t, fd, af))
				}
			}
		}
		quirk = quirk || strings.Contains(patch.String(), "\n \n\\ No newline") || contextNoEOL.MatchString(patch.String())
		pf := filepath.Join(t.TempDir(), "p.diff")
		must(t, os.WriteFile(pf, []byte(patch.String()), 0o644))
		cmd := exec.Command("git", "apply", "--cached", pf)
		cmd.Dir, cmd.Env = dir, gittest.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, quirk, fmt.Errorf("git apply of commit %q: %v: %s\n%s", c.Message, err, out, patch.String())
		}
		tree := strings.TrimSpace(git(t, dir, "write-tree"))
		if tree != prev {
			trees = append(trees, tree)
			prev = tree
		}
	}
	return trees, quirk, nil
}

var contextNoEOL = regexp.MustCompile(`(?m)^ .*\n\\ No newline`)

func filePatch(t *testing.T, fd approval.FileDiff, af approval.AcceptedFile) string {
	if af.Whole {
		return fd.Header + strings.Join(fd.Hunks, "")
	}
	var texts []string
	for _, ah := range af.Hunks {
		text := fd.Hunks[ah.Index]
		if len(ah.Lines) > 0 {
			var err error
			text, err = hunk.Select(text, ah.Lines)
			must(t, err)
		}
		texts = append(texts, text)
	}
	texts = addPHeaders(texts)
	header := fd.Header
	if strings.Contains(header, "\ndeleted file mode ") && strings.Join(texts, "") != strings.Join(fd.Hunks, "") {
		header = strings.Replace(header, "+++ /dev/null\n", "+++ b/"+fd.Path+"\n", 1)
		before, _, _ := strings.Cut(header, "\ndeleted file mode ")
		_, after, _ := strings.Cut(header, "\nindex ")
		idx, rest, _ := strings.Cut(after, "\n")
		mode := ""
		if _, m, ok := strings.Cut(header, "\ndeleted file mode "); ok {
			mode, _, _ = strings.Cut(m, "\n")
		}
		idx, _, _ = strings.Cut(idx, " ")
		header = before + "\nindex " + idx + " " + mode + "\n" + rest
	}
	return header + strings.Join(texts, "")
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// addPHeaders gives each hunk the new-side start git add -p gives it:
// its old start moved by what the hunks before it add and remove.
func addPHeaders(texts []string) []string {
	out := make([]string, len(texts))
	delta := 0
	for i, text := range texts {
		m := hunkHeader.FindStringSubmatch(text)
		count := func(s string) int {
			if s == "" {
				return 1
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		oldStart, _ := strconv.Atoi(m[1])
		oldCount, newCount := count(m[2]), count(m[4])
		newStart := oldStart + delta
		switch {
		case oldCount == 0 && newCount > 0:
			newStart++
		case oldCount > 0 && newCount == 0:
			newStart--
		}
		rng := func(start, n int) string {
			if n == 1 {
				return strconv.Itoa(start)
			}
			return strconv.Itoa(start) + "," + strconv.Itoa(n)
		}
		out[i] = "@@ -" + rng(oldStart, oldCount) + " +" + rng(newStart, newCount) + " @@" + text[len(m[0]):]
		delta += newCount - oldCount
	}
	return out
}
