package review_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/gittest"
	"github.com/airlock-dev/airlock/internal/hunk"
	"github.com/airlock-dev/airlock/internal/ptytest"
)

func numberedLines(prefix string, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("%s line %d", prefix, i))
	}
	return out
}

// movedRequest is a real push, as git diff -M -C shows it: cmd/root.go
// renamed to cmd/command.go with two edits far apart, notes.txt turned
// from LF to CRLF with one real edit, and style.go with a line indented
// and one real edit. The request carries git's own diff, counts and
// hunks.
func movedRequest(t *testing.T) *approval.Request {
	t.Helper()
	dir := t.TempDir()
	// Fixed dates: the commits' ids are on the golden screens.
	env := append(gittest.Env(), "GIT_AUTHOR_DATE=2026-11-28T12:00:00Z", "GIT_COMMITTER_DATE=2026-11-28T12:00:00Z")
	root := numberedLines("root", 30)
	notes := numberedLines("note", 41)
	style := numberedLines("style", 10)
	gittest.InitRepo(t, env, dir, "base", map[string]string{
		"cmd/root.go": strings.Join(root, "\n") + "\n",
		"notes.txt":   strings.Join(notes, "\n") + "\n",
		"style.go":    strings.Join(style, "\n") + "\n",
	})
	root[2], root[24] = "root line three", "root line twenty-five"
	notes[19] = "the one real edit"
	style[1], style[7] = "\t"+style[1], "style line eight"
	write := func(p, content string) {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, env, dir, nil, "mv", "cmd/root.go", "cmd/command.go")
	write("cmd/command.go", strings.Join(root, "\n")+"\n")
	write("notes.txt", strings.Join(notes, "\r\n")+"\r\n")
	write("style.go", strings.Join(style, "\n")+"\n")
	gittest.Run(t, env, dir, nil, "add", "-A")
	gittest.Run(t, env, dir, nil, "commit", "-qm", "the push")
	rev := func(r string) plumbing.Hash {
		return plumbing.NewHash(strings.TrimSpace(gittest.Run(t, env, dir, nil, "rev-parse", r)))
	}
	diff := gittest.Run(t, env, dir, nil, "diff", "-M", "-C", "--no-color", "HEAD~1", "HEAD")
	r := &approval.Request{
		ID: "req-moved", Worker: "writer", Target: "local:/srv/project", Describe: "local:/srv/project",
		Ref: "refs/heads/feature", Old: rev("HEAD~1"), New: rev("HEAD"), Tree: rev("HEAD^{tree}"),
		Commits: []approval.CommitInfo{{ID: rev("HEAD"), Message: "the push\n"}}, Diff: diff, Pickable: true,
	}
	recs := strings.Split(gittest.Run(t, env, dir, nil, "diff", "-M", "-C", "--numstat", "-z", "HEAD~1", "HEAD"), "\x00")
	for i := 0; i < len(recs); i++ {
		fields := strings.SplitN(recs[i], "\t", 3)
		if len(fields) != 3 {
			continue
		}
		add, _ := strconv.Atoi(fields[0])
		del, _ := strconv.Atoi(fields[1])
		f := approval.FileChange{Path: fields[2], Op: change.Update, Added: add, Deleted: del}
		if f.Path == "" { // a rename: from, then to
			f.Op, f.From, f.Path = change.Rename, recs[i+1], recs[i+2]
			i += 2
			if _, after, ok := strings.Cut(diff, "similarity index "); ok {
				f.Similarity, _ = strconv.Atoi(strings.SplitN(after, "%", 2)[0])
			}
		}
		f.Size = int64(len(gittest.Run(t, env, dir, nil, "cat-file", "blob", "HEAD:"+f.Path)))
		r.Files = append(r.Files, f)
		r.Added += add
		r.Deleted += del
	}
	for _, sec := range strings.SplitAfter(diff, "\ndiff --git ") {
		if !strings.HasPrefix(sec, "diff --git ") {
			sec = "diff --git " + sec
		}
		sec = strings.TrimSuffix(sec, "diff --git ")
		header, hunks, err := hunk.Split(sec)
		if err != nil {
			t.Fatal(err)
		}
		path := strings.TrimPrefix(strings.Fields(strings.SplitN(header, "\n", 2)[0])[3], "b/")
		fd := approval.FileDiff{Path: path, Op: change.Update, Header: header, Hunks: hunks}
		if strings.Contains(header, "\nrename from ") {
			fd.Op, fd.From = change.Rename, "cmd/root.go"
		}
		r.Commits[0].Files = append(r.Commits[0].Files, fd)
	}
	if len(r.Files) != 3 || len(r.Commits[0].Files) != 3 {
		t.Fatalf("files %+v, commit files %d: the push is not what the test makes", r.Files, len(r.Commits[0].Files))
	}
	return r
}

// Issue 33: a rename read as a deletion and a creation of every line, and
// an LF -> CRLF file as every line changed. On screen now: the list of
// files says where the rename comes from; the full-screen view shows the
// rename's header as git prints it and its two edits; the CRLF file is
// one line "line endings: LF -> CRLF" and its one real edit; w hides a
// change of indentation and says so, and w again shows it.
func TestViewShowsARenameAndALineEndingChange(t *testing.T) {
	v := startView(t, movedRequest(t), 100, 40)
	v.golden("moved-prompt", "[?]help")
	v.press("d")
	v.golden("moved-rename", "rename to cmd/command.go")
	v.press("]")
	v.golden("moved-crlf", "line endings: LF -> CRLF")
	v.press("]")
	v.waitFor("-style line 2")
	v.press("w")
	v.golden("moved-space", "whitespace ignored: w shows it again")
	if strings.Contains(v.screen(), "-style line 2") {
		t.Error("with whitespace ignored, the indented line is still shown changed")
	}
	v.press("w")
	v.waitFor("-style line 2")
	v.press("q")
	v.waitFor("[?]help")
	v.reject()
	assertOnlyViewEscapes(t, v.output())
}

// A file whose line endings changed has its real edit in the same hunk
// as the line-ending change: the picker shows it as the view does and
// takes it whole or not at all, so that what lands is what was shown; the
// rename's hunks are picked one by one.
func TestPickALineEndingFileWhole(t *testing.T) {
	r := movedRequest(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "request.json"), filepath.Join(dir, "decision.json")
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPickChild$")
	cmd.Env = append(os.Environ(), "AIRLOCK_PICK_CHILD="+in, "AIRLOCK_PICK_OUT="+out, "PAGER=cat", "TERM=xterm", "COLUMNS=100", "LINES=40")
	p := ptytest.Start(t, cmd)
	scr := p.Screen
	const within = 10 * time.Second
	at := 0
	step := func(wait, keys string) {
		t.Helper()
		at = scr.WaitFor(t, at, wait, within)
		p.Press(t, keys)
	}
	step("[p]ick hunks", "p")
	step("(1/2) Accept this hunk of cmd/command.go", "y")
	step("(2/2) Accept this hunk of cmd/command.go", "n")
	step("line endings: LF -> CRLF", "")
	step("Its line endings change (LF -> CRLF) in the same hunks as its edits: accept this file whole", "y")
	step("Accept this hunk of style.go", "d")
	step("Push 1 commit?", "y")
	if code := p.Wait(t, within); code != 0 {
		t.Fatalf("the prompt exited %d", code)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var d approval.Decision
	if err := json.Unmarshal(got, &d); err != nil {
		t.Fatal(err)
	}
	rename := r.Commits[0].Files[0]
	want := []approval.Accepted{{Commit: r.Commits[0].ID, Files: []approval.AcceptedFile{
		{Path: "cmd/command.go", Hunks: []approval.AcceptedHunk{{Index: 0, ID: approval.HunkID(rename.Hunks[0])}}},
		{Path: "notes.txt", Whole: true}}}}
	if d.Verdict != approval.Pick || !reflect.DeepEqual(d.Accept, want) {
		t.Errorf("decision %+v\nwant accept %+v", d, want)
	}
	if err := approval.CheckAccept(r, d.Accept); err != nil {
		t.Errorf("the gate refuses the pick: %v", err)
	}
}

// At the line prompt (a terminal that cannot show a full screen pages
// the diff), the CRLF file is one line and its edit, and w makes the
// paged diff ignore whitespace: the indented line is gone, and a line
// says it is not shown.
func TestPromptWIgnoresWhitespaceInThePagedDiff(t *testing.T) {
	v := startView(t, movedRequest(t), 100, 40, "TERM=dumb")
	v.waitFor("[?]help")
	v.press("d")
	v.waitFor("line endings: LF -> CRLF")
	if !strings.Contains(v.output(), "+\tstyle line 2") {
		t.Fatal("shown with whitespace, the paged diff lacks the indented line")
	}
	v.press("w")
	v.waitFor("Whitespace is ignored in the diff (w shows it again)")
	at := len(v.output())
	v.press("d")
	v.waitFor("whitespace: 1 changed line not shown (w shows it)")
	if strings.Contains(v.output()[at:], "+\tstyle line 2") || !strings.Contains(v.output()[at:], "+style line eight") {
		t.Errorf("with whitespace ignored, the paged diff is:\n%s", v.output()[at:])
	}
	v.reject()
}
