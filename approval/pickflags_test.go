package approval_test

import (
	"reflect"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
)

// After a pick, only the flags true of what it lands ask for anything: a
// high-risk file left out, a hunk with a secret left out, a hostile
// message replaced, are not; the branch is; an edited message is checked
// as it lands.
func TestPickFlags(t *testing.T) {
	c1 := plumbing.NewHash("1111111111111111111111111111111111111111")
	hunkPlain := "@@ -1,2 +1,2 @@\n a\n-b\n+b changed\n"
	hunkSecret := "@@ -9,2 +9,3 @@\n x\n+ok line\n+password = hunter22xyz\n"
	r := &approval.Request{
		Ref: "refs/heads/main",
		Commits: []approval.CommitInfo{{ID: c1, Message: "Add\u202e things\n", Files: []approval.FileDiff{
			{Path: "app.ini", Op: change.Update, Hunks: []string{hunkPlain, hunkSecret}},
			{Path: "evil.sh", Op: change.Create, Hunks: []string{"@@ -0,0 +1 @@\n+echo \u202e\n"}},
		}}},
		Flags: []approval.Flag{
			{Code: approval.FlagProtectedRef, Severity: approval.High, Message: "pushes to protected branch main"},
			{Code: approval.FlagTooLarge, Severity: approval.High, Message: "too large"},
			{Code: approval.FlagMessageHidden, Severity: approval.High, Commit: c1.String(), Message: "hidden"},
			{Code: approval.FlagSecret, Severity: approval.High, Path: "app.ini", Message: "secret"},
			{Code: approval.FlagTerminal, Severity: approval.High, Path: "evil.sh", Message: "bidi"},
			{Code: approval.FlagBinary, Severity: approval.Low, Path: "logo.png", Message: "binary"},
		},
	}
	hunks := func(ids ...int) []approval.AcceptedHunk {
		var out []approval.AcceptedHunk
		for _, i := range ids {
			out = append(out, approval.AcceptedHunk{Index: i})
		}
		return out
	}
	pick := func(msg string, files ...approval.AcceptedFile) []approval.Accepted {
		return []approval.Accepted{{Commit: c1, Message: msg, Files: files}}
	}
	cases := []struct {
		name   string
		paths  []string
		accept []approval.Accepted
		want   []string
	}{
		{name: "files, the risky ones left out", paths: []string{"README.md"},
			want: []string{"high protected-ref ", "high message-hidden-characters "}},
		{name: "files, the risky one picked", paths: []string{"evil.sh", "logo.png"},
			want: []string{"high protected-ref ", "high message-hidden-characters ", "high deceptive-content evil.sh", "low binary logo.png"}},
		{name: "the hunk without the secret", accept: pick("", approval.AcceptedFile{Path: "app.ini", Hunks: hunks(0)}),
			want: []string{"high protected-ref ", "high message-hidden-characters "}},
		{name: "the hunk with the secret", accept: pick("", approval.AcceptedFile{Path: "app.ini", Hunks: hunks(1)}),
			want: []string{"high protected-ref ", "high message-hidden-characters ", "high secret app.ini"}},
		{name: "the secret's line left out", accept: pick("", approval.AcceptedFile{Path: "app.ini", Hunks: []approval.AcceptedHunk{{Index: 1, Lines: []int{0}}}}),
			want: []string{"high protected-ref ", "high message-hidden-characters "}},
		{name: "the message replaced", accept: pick("Add things\n", approval.AcceptedFile{Path: "app.ini", Hunks: hunks(0)}),
			want: []string{"high protected-ref "}},
		{name: "a hostile message written in", accept: pick("Add\u202e\n", approval.AcceptedFile{Path: "app.ini", Hunks: hunks(0)}),
			want: []string{"high protected-ref ", "high message-hidden-characters "}},
		{name: "the deceptive file whole", accept: pick("Add things\n", approval.AcceptedFile{Path: "evil.sh", Whole: true}),
			want: []string{"high protected-ref ", "high deceptive-content evil.sh"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := codes(approval.PickFlags(r, c.paths, c.accept)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("flags %q, want %q", got, c.want)
			}
		})
	}
}

// A change taken in part keeps the file's mode (staging's acceptFile):
// "makes x executable" is true of a pick only when the file's whole
// change lands, every hunk of it whole, or the file is new (made with its
// mode whatever part of it lands).
func TestPickFlagsExecutable(t *testing.T) {
	c1 := plumbing.NewHash("1111111111111111111111111111111111111111")
	h := []string{"@@ -1 +1 @@\n-a\n+b\n", "@@ -9 +9 @@\n-c\n+d\n"}
	r := &approval.Request{
		Commits: []approval.CommitInfo{{ID: c1, Message: "Run\n", Files: []approval.FileDiff{
			{Path: "run.sh", From: "tool.txt", Op: change.Rename, Hunks: h},
			{Path: "new.sh", Op: change.Create, Hunks: []string{"@@ -0,0 +1,2 @@\n+a\n+b\n"}},
		}}},
		Flags: []approval.Flag{
			{Code: approval.FlagExecutable, Severity: approval.Medium, Path: "run.sh", Message: "makes run.sh executable"},
			{Code: approval.FlagExecutable, Severity: approval.Medium, Path: "new.sh", Message: "makes new.sh executable"},
		},
	}
	for _, c := range []struct {
		name string
		file approval.AcceptedFile
		want []string
	}{
		{"one hunk of two", approval.AcceptedFile{Path: "run.sh", Hunks: []approval.AcceptedHunk{{Index: 1}}}, nil},
		{"a line of each", approval.AcceptedFile{Path: "run.sh", Hunks: []approval.AcceptedHunk{{Index: 0, Lines: []int{1}}, {Index: 1}}}, nil},
		{"every line of each", approval.AcceptedFile{Path: "run.sh", Hunks: []approval.AcceptedHunk{{Index: 0, Lines: []int{0, 1}}, {Index: 1}}}, []string{"medium executable run.sh"}},
		{"every hunk", approval.AcceptedFile{Path: "run.sh", Hunks: []approval.AcceptedHunk{{Index: 0}, {Index: 1}}}, []string{"medium executable run.sh"}},
		{"whole", approval.AcceptedFile{Path: "run.sh", Whole: true}, []string{"medium executable run.sh"}},
		{"a line of a new file", approval.AcceptedFile{Path: "new.sh", Hunks: []approval.AcceptedHunk{{Index: 0, Lines: []int{0}}}}, []string{"medium executable new.sh"}},
	} {
		got := codes(approval.PickFlags(r, nil, []approval.Accepted{{Commit: c1, Files: []approval.AcceptedFile{c.file}}}))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: flags %q, want %q", c.name, got, c.want)
		}
	}
}

// A commit's added line is flagged when the push's last version of the
// file no longer holds it (it lands in history only), not when the last
// version holds it (the final diff's checks see it there).
func TestHistoryFlags(t *testing.T) {
	c1 := plumbing.NewHash("1111111111111111111111111111111111111111")
	key := "aws_key = AKIAIOSFODNN7EXAMPLE"
	r := &approval.Request{
		Ref:     "refs/heads/feature",
		Commits: []approval.CommitInfo{{ID: c1, Message: "Add\n", Files: []approval.FileDiff{{Path: "app.env", Op: change.Create, Hunks: []string{"@@ -0,0 +1 @@\n+" + key + "\n"}}}}},
		Files:   []approval.FileChange{{Path: "README.md", Op: change.Update}},
	}
	for _, c := range []struct {
		name  string
		final map[string]string
		want  []string
	}{
		{"removed later", map[string]string{"README.md": "r\n"}, []string{"high secret app.env"}},
		{"changed later", map[string]string{"README.md": "r\n", "app.env": "aws_key = none\n"}, []string{"high secret app.env"}},
		{"still there", map[string]string{"README.md": "r\n", "app.env": key + "\n"}, nil},
	} {
		if got := codes(approval.Assess(r, approval.Rules{}, files(nil, c.final))); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: flags %q, want %q", c.name, got, c.want)
		}
	}
}
