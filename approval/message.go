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

// hidden reports whether a message's line holds characters a terminal
// would not show as they are (termsafe escapes them: the summary shows
// them escaped either way), leaving out the ones ordinary messages are
// full of and that deceive nobody, measured on real histories: the
// carriage return of a line that ends CRLF (it moves the cursor back over
// nothing), and the emoji variation selector and zero-width joiner inside
// an emoji (a symbol's one selector, then a joiner to the next symbol, as
// in 🏳️‍🌈 or 🕵️‍♂️; a keycap's digit, # or * its one selector; a run of
// them is how text is smuggled).
func hidden(line string) bool {
	line = strings.TrimSuffix(line, "\r")
	// What may follow the last rune: a selector or a joiner after a
	// symbol (an emoji), a selector after a keycap's base, a joiner after
	// a symbol's selector, nothing else.
	selector, joiner := false, false
	for _, r := range line {
		switch {
		case r == '\t':
			selector, joiner = false, false
		case termsafe.Clean(string(r)):
			selector, joiner = r >= 0x2000 || strings.ContainsRune("0123456789#*", r), r >= 0x2000
		case (r == 0xFE0F || r == 0xFE0E) && selector:
			selector = false // one selector; a joiner may follow a symbol's
		case r == 0x200D && joiner:
			selector, joiner = false, false // the next rune must be a symbol to take more
		default:
			return true
		}
	}
	return false
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
		if hidden(line) {
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
// for the worker's, one per commit and kind, naming the first line it is
// about and how many more there are, so that one message cannot push the
// other risks off the screen. The base's commits (an empty target's) are
// the repository's history, not the worker's: their hidden characters and
// lines that run code are flagged, one flag per kind for all of them, and
// their trailers are not (a real history is full of genuine ones: 9,949
// in the 50,443 messages of four projects' histories measured).
func messageFlags(base, worker []CommitInfo) []Flag {
	var flags []Flag
	for _, c := range worker {
		byCode, order := findingsByCode(c.Message)
		for _, code := range order {
			fs := byCode[code]
			flags = append(flags, Flag{Code: code, Severity: messageSeverity(code), Commit: c.ID.String(),
				Message: fmt.Sprintf("commit %s's message, %s: %s", shortid.HashOr(c.ID, "(none)"), where(fs), fs[0].What)})
		}
	}
	type first struct {
		c     CommitInfo
		f     []MessageFinding
		count int
	}
	var order []string
	seen := map[string]*first{}
	for _, c := range base {
		byCode, codes := findingsByCode(c.Message)
		for _, code := range codes {
			if code == FlagMessageTrailer {
				continue
			}
			if seen[code] == nil {
				seen[code] = &first{c: c, f: byCode[code]}
				order = append(order, code)
			}
			seen[code].count++
		}
	}
	for _, code := range order {
		x := seen[code]
		more := ""
		if x.count > 1 {
			more = fmt.Sprintf(" (and %d more of the base's commits)", x.count-1)
		}
		flags = append(flags, Flag{Code: code, Severity: messageSeverity(code), Commit: x.c.ID.String(),
			Message: fmt.Sprintf("the base's commit %s's message, %s: %s%s", shortid.HashOr(x.c.ID, "(none)"), where(x.f), x.f[0].What, more)})
	}
	return flags
}

// findingsByCode is CheckMessage's findings by code, codes in the order
// they first appear.
func findingsByCode(msg string) (map[string][]MessageFinding, []string) {
	byCode := map[string][]MessageFinding{}
	var order []string
	for _, f := range CheckMessage(msg) {
		if len(byCode[f.Code]) == 0 {
			order = append(order, f.Code)
		}
		byCode[f.Code] = append(byCode[f.Code], f)
	}
	return byCode, order
}

// messageSeverity: hidden characters deceive the reader of the message,
// high as in a file; a claim or a command is for the reviewer to weigh.
func messageSeverity(code string) Severity {
	if code == FlagMessageHidden {
		return High
	}
	return Medium
}

// where names the first line of fs and how many more there are.
func where(fs []MessageFinding) string {
	w := "its subject"
	if fs[0].Line > 1 {
		w = fmt.Sprintf("line %d", fs[0].Line)
	}
	if len(fs) > 1 {
		w += fmt.Sprintf(" (and %d more lines)", len(fs)-1)
	}
	return w
}
