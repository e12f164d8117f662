package approval

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/airlock-dev/airlock/internal/shortid"
	"github.com/airlock-dev/airlock/internal/termsafe"
)

// The flag codes of a commit message's body (and subject): each names the
// commit and the line.
const (
	// FlagMessageHidden: a message holds bidi overrides, invisible or
	// control characters, which make what `git log` shows differ from
	// what is there.
	FlagMessageHidden = "message-hidden-characters"
	// FlagMessageTrailer: a message claims a review or a sign-off
	// (Reviewed-by:, Signed-off-by:, ...) that nobody gave through
	// airlock: the target's history would say it did.
	FlagMessageTrailer = "message-claims-review"
	// FlagMessageRuns: a message holds a line that runs code when pasted
	// (curl ... | sh, bash -c, python -c, ...), for whoever reads the
	// history later, a person or another agent.
	FlagMessageRuns = "message-runs-code"
)

// claimTrailer matches a trailer line that claims someone reviewed,
// approved, signed off or co-wrote the commit, as git's interpret-trailers
// reads one: a token, a colon, a value. Leading spaces are allowed, since
// a reader does not see them as different.
var claimTrailer = regexp.MustCompile(`(?i)^\s*(reviewed-by|signed-off-by|approved-by|co-authored-by|acked-by)\s*:\s*\S`)

// runsCode are lines that run code when pasted into a shell, each a
// command's own form, so that prose about curl or Python does not match:
// a download piped into an interpreter, a shell or interpreter given a
// program on its command line, an eval of a command's output, a
// PowerShell download-and-run. Measured on a real history (see
// docs/architecture.md): a pattern that fires on ordinary messages is one
// the reviewer learns to ignore.
var runsCode = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a download piped into a shell", regexp.MustCompile(`(?i)\b(curl|wget|fetch|iwr|invoke-webrequest|invoke-restmethod|irm)\s.*\|\s*(sudo\s+(-\S+\s+)*)?(env\s+)?(ba|z|k|da|fi|c|tc)?sh(\s|$)`)},
	{"a download piped into an interpreter", regexp.MustCompile(`(?i)\b(curl|wget|fetch|iwr|invoke-webrequest|invoke-restmethod|irm)\s.*\|\s*(sudo\s+(-\S+\s+)*)?(python[0-9.]*|perl|ruby|node|php|iex|invoke-expression|powershell|pwsh)(\s|$)`)},
	{"a shell running a download", regexp.MustCompile(`(?i)\b(ba|z|k|da)?sh\s+(-s\s+)?<\(\s*(curl|wget)\s`)},
	{"a shell given a program to run", regexp.MustCompile("(^|[\\s;&|(`$])(ba|z|k|da)?sh\\s+-c\\s+[\"'$]")},
	{"an interpreter given a program to run", regexp.MustCompile("(^|[\\s;&|(`$])(python[0-9.]*|perl|ruby|node|php)\\s+-(c|e|r|E)\\s+[\"']")},
	{"an eval of a command's output", regexp.MustCompile(`(^|[\s;&|(])eval\s+["']?\$\(`)},
	{"an encoded PowerShell command", regexp.MustCompile(`(?i)\b(powershell|pwsh)(\.exe)?\s.*\s-(e|enc|encodedcommand)\s+[A-Za-z0-9+/=]{16,}`)},
	{"a decoded payload piped into a shell", regexp.MustCompile(`(?i)\bbase64\s+(-d|--decode)\b.*\|\s*(sudo\s+)?(ba|z|k|da)?sh(\s|$)`)},
}

// MessageFinding is one thing a commit message's check found: on which
// line (from 1, the subject) and what.
type MessageFinding struct {
	Code string
	Line int
	What string
}

// CheckMessage reports what of msg a reviewer must not miss: hidden
// characters, trailers claiming a review or sign-off, lines that run
// code. At most one finding of each code per line.
func CheckMessage(msg string) []MessageFinding {
	var out []MessageFinding
	for i, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		if !termsafe.Clean(strings.ReplaceAll(line, "\t", " ")) {
			out = append(out, MessageFinding{FlagMessageHidden, i + 1, "hidden or control characters, shown escaped: " + clip(termsafe.Line(line), 100)})
		}
		if len(line) > 4096 {
			continue
		}
		if claimTrailer.MatchString(line) {
			out = append(out, MessageFinding{FlagMessageTrailer, i + 1, "a trailer claiming a review or sign-off: " + clip(termsafe.Line(strings.TrimSpace(line)), 100)})
		}
		for _, p := range runsCode {
			if p.re.MatchString(line) {
				out = append(out, MessageFinding{FlagMessageRuns, i + 1, p.what + ": " + clip(termsafe.Line(strings.TrimSpace(line)), 100)})
				break
			}
		}
	}
	return out
}

// messageFlags are the flags of the messages of every commit that lands:
// one per commit and kind, naming the first line it is about and how many
// more there are, so that one message cannot push the other risks off
// the screen.
func messageFlags(commits ...[]CommitInfo) []Flag {
	var flags []Flag
	for _, list := range commits {
		for _, c := range list {
			byCode := map[string][]MessageFinding{}
			var order []string
			for _, f := range CheckMessage(c.Message) {
				if len(byCode[f.Code]) == 0 {
					order = append(order, f.Code)
				}
				byCode[f.Code] = append(byCode[f.Code], f)
			}
			for _, code := range order {
				fs := byCode[code]
				sev := Medium
				if code == FlagMessageHidden {
					sev = High
				}
				where := "its subject"
				if fs[0].Line > 1 {
					where = fmt.Sprintf("line %d", fs[0].Line)
				}
				if len(fs) > 1 {
					where += fmt.Sprintf(" (and %d more lines)", len(fs)-1)
				}
				flags = append(flags, Flag{Code: code, Severity: sev, Commit: c.ID.String(),
					Message: fmt.Sprintf("commit %s's message, %s: %s", shortid.HashOr(c.ID, "(none)"), where, fs[0].What)})
			}
		}
	}
	return flags
}
