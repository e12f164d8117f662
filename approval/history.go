package approval

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// historyFlags are the flags of what a worker's commit adds that the
// push's final diff does not show: each commit lands as its own, so a key
// one commit adds and a later one removes is in the target's history,
// though no file of the push holds it. The checks of text (secrets,
// deceptive characters) are run on the lines each commit adds (its hunks,
// as the reviewer picks from them) that the path's final content (final)
// does not hold, as the checks of the final diff see those; a path they
// already flag for a kind is not flagged again for it. The flag names the path, so a
// pick that lands the commit's lines keeps it (PickFlags) and one that
// leaves them out drops it. A commit whose diffs were too large to carry
// has no hunks here: its content is checked only as the final diff shows.
func historyFlags(commits []CommitInfo, flagged []Flag, final Content) []Flag {
	have := map[string]bool{}
	for _, f := range flagged {
		have[f.Code+"\x00"+f.Path] = true
	}
	var out []Flag
	add := func(code, p, format string, args ...any) {
		have[code+"\x00"+p] = true
		out = append(out, Flag{Code: code, Severity: High, Path: p, Message: fmt.Sprintf(format, args...)})
	}
	for _, c := range commits {
		for _, fd := range c.Files {
			data, _ := final(fd.Path, true)
			kept := map[string]bool{}
			for _, l := range strings.Split(string(data), "\n") {
				kept[l] = true
			}
			var added []string
			for _, h := range fd.Hunks {
				for _, l := range addedLines(h, nil) {
					if !kept[l] {
						added = append(added, l)
					}
				}
			}
			if len(added) == 0 {
				continue
			}
			text := []byte(strings.Join(added, "\n"))
			if !have[FlagSecret+"\x00"+fd.Path] {
				if s := findSecrets(nil, text); len(s) > 0 {
					add(FlagSecret, fd.Path, "commit %s adds to %s a line that looks like %s, gone from the push's last version: each commit lands in the target's history as it is",
						shortid.Hash(c.ID), fd.Path, s[0].what)
				}
			}
			if !have[FlagTerminal+"\x00"+fd.Path] {
				if h := termsafe.Hazard(text); h != "" {
					add(FlagTerminal, fd.Path, "commit %s adds to %s %s, gone from the push's last version: each commit lands in the target's history as it is; it is shown escaped",
						shortid.Hash(c.ID), fd.Path, h)
				}
			}
		}
	}
	return out
}
