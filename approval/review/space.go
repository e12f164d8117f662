package review

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/review/difftext"
	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// toggleSpace is the prompt's w key: the diff d shows ignores whitespace,
// or shows it again: paged, and full screen, where the view opens so
// (diffview.Options.IgnoreSpace) and has its own w.
func (a *asker) toggleSpace() {
	a.space = !a.space
	what := "Whitespace is shown in the diff again"
	if a.space {
		what = "Whitespace is ignored in the diff (w shows it again)"
	}
	fmt.Fprintf(a.t, "  %s. %s\n", what, a.keys())
}

// lineEndingFile is, for a file of a commit whose hunks change line
// endings, the hunks as the reviewer reads them (difftext: "line endings:
// LF -> CRLF", then the real edits) and the change in words. Its edits
// sit in the same hunks as the line-ending change, so such a file is
// accepted whole or left out: what lands is then what was shown.
func lineEndingFile(fd approval.FileDiff) (shown, words string) {
	words = difftext.LineEndings(fd.Hunks)
	if words == "" {
		return "", ""
	}
	header, hunks := difftext.File(fd.Header, fd.Hunks, difftext.Mode{})
	return header + strings.Join(hunks, ""), termsafe.Line(words)
}

// movedWords says where a renamed or copied file comes from, as the list
// of files shows it after its path: " <- renamed from old, 95% same".
func movedWords(f approval.FileChange) string {
	verb := ""
	switch f.Op {
	case change.Rename:
		verb = "renamed"
	case change.Copy:
		verb = "copied"
	default:
		return ""
	}
	return fmt.Sprintf(" <- %s from %s, %d%% same", verb, termsafe.Line(f.From), f.Similarity)
}
